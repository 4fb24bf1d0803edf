//! Adversarial corpus, secrets in keel's own process (issue 13): nothing
//! keel starts (the model's commands, hooks, its own git, the editor) gets
//! the API keys or other credentials keel was started with, whether named
//! `*_API_KEY`, plain `API_KEY`/`TOKEN`/`DATABASE_URL`, `*_KEY`, or hidden
//! in a URL's password; keel's git gets no `GIT_*` of the caller either;
//! and a command cannot read them back from keel's `/proc/PID/environ`.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::canary::{exec_in, stderr, write_then_answer};
use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire};

/// Credentials, each with a value the test can look for.
const SECRETS: [(&str, &str); 10] = [
    ("OPENAI_API_KEY", "sk-canary-openai"),
    ("ANTHROPIC_API_KEY", "sk-canary-anthropic"),
    ("API_KEY", "canary-plain-api-key"),
    ("TOKEN", "canary-plain-token"),
    ("DATABASE_URL", "postgres://app:canary-db-pw@db/prod"),
    ("STRIPE_KEY", "canary-stripe-key"),
    ("SENTRY_DSN", "https://canary-dsn@sentry.example/1"),
    ("UPSTREAM", "https://bot:canary-url-password@git.example/r.git"),
    ("GITHUB_TOKEN", "canary-ghp"),
    ("DB_PASSWORD", "canary-hunter2"),
];

fn with_secrets(command: &mut assert_cmd::Command) {
    for (name, value) in SECRETS {
        command.env(name, value);
    }
    command.env("KEEL_HARMLESS", "visible");
}

fn assert_no_secret(text: &str, who: &str) {
    for (name, value) in SECRETS {
        let secret = value.rsplit(':').next().unwrap_or(value);
        assert!(!text.contains(value) && !text.contains(secret), "{name} reached {who}: {text}");
    }
}

#[test]
fn the_models_commands_get_no_credential_of_any_naming() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.keel();
    with_secrets(&mut command);
    let out = command.args(["tool", "shell", r#"{"command":"env"}"#]).output().unwrap();
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("KEEL_HARMLESS=visible"), "{output}");
    assert_no_secret(output, "a shell command");
}

#[test]
fn env_keep_still_passes_what_the_user_names() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.join("config.toml"), "[shell]\nenv_keep = [\"UPSTREAM\"]\n")
        .unwrap();
    let mut command = sandbox.keel();
    with_secrets(&mut command);
    let out = command.args(["tool", "shell", r#"{"command":"env"}"#]).output().unwrap();
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("UPSTREAM=https://bot:canary-url-password@"), "{output}");
    assert!(!output.contains("canary-db-pw"), "{output}");
}

#[tokio::test]
async fn hooks_get_no_credentials() {
    let sandbox = Sandbox::new();
    let dump = sandbox.repo.join("hook-env.txt");
    std::fs::write(
        sandbox.home.join("config.toml"),
        format!(
            "[[hooks.SessionStart]]\nhooks = [{{ type = \"command\", command = \"env > {}\" }}]\n",
            dump.display()
        ),
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let mut command = sandbox.keel();
    with_secrets(&mut command);
    let output =
        command.arg("exec").args(Model::chat(&server).flags()).args(["go"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let env = std::fs::read_to_string(&dump).expect("the hook ran");
    assert!(env.contains("KEEL_HARMLESS=visible"), "{env}");
    assert_no_secret(&env, "a hook");
}

/// A `git` first on `PATH` that records its environment and runs the real
/// one: what keel's own git runs (summary, checkpoints) were given.
fn git_shim(dir: &std::path::Path, dump: &std::path::Path) -> String {
    let real = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap();
    let shim = dir.join("git");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nenv >> {}\necho --- >> {}\nexec {real} \"$@\"\n",
            dump.display(),
            dump.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

#[tokio::test]
async fn keels_own_git_gets_neither_credentials_nor_the_callers_git_variables() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let shims = tempfile::tempdir().unwrap();
    let dump = shims.path().join("git-env.txt");
    let path = git_shim(shims.path(), &dump);
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.extend([
        ("PATH", path.as_str()),
        ("GIT_DIR", "/nonexistent/elsewhere.git"),
        ("GIT_EXTERNAL_DIFF", "touch /nonexistent/x"),
        ("GIT_SSH_COMMAND", "touch /nonexistent/y"),
    ]);
    let output = exec_in(&sandbox, &sandbox.repo.clone(), &write_then_answer(), &env, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen = std::fs::read_to_string(&dump).expect("keel ran git");
    let runs = seen.matches("---").count();
    assert!(runs >= 4, "summary and checkpoint runs expected, saw {runs}:\n{seen}");
    assert_no_secret(&seen, "keel's git");
    for line in seen.lines().filter(|line| line.starts_with("GIT_")) {
        let name = line.split('=').next().unwrap_or_default();
        assert!(
            !matches!(name, "GIT_DIR" | "GIT_EXTERNAL_DIFF" | "GIT_SSH_COMMAND"),
            "the caller's {name} reached keel's git"
        );
    }
    assert!(seen.contains("GIT_CONFIG_NOSYSTEM=1") && seen.contains("GIT_CONFIG_GLOBAL=/dev/null"));
}

/// Runs `keel tool shell` as an unprivileged user (dropping root with
/// `setpriv` when needed) so the kernel's own rules for `/proc` apply.
/// Fails the test when it cannot.
fn run_unprivileged(sandbox: &Sandbox, command: &str) -> Value {
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let root = sandbox.repo.parent().unwrap();
    let is_root = rustix::process::geteuid().is_root();
    if is_root {
        for dir in [root, sandbox.repo.as_path(), sandbox.home.as_path()] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let ok = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(root)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cannot hand the test folders to nobody (chown)");
    }
    let mut cmd = if is_root {
        let mut cmd = std::process::Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(&keel);
        cmd
    } else {
        std::process::Command::new(&keel)
    };
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo);
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    let args = json!({ "command": command }).to_string();
    let out = cmd
        .args(["tool", "shell", &args, "--yes"])
        .output()
        .unwrap_or_else(|error| panic!("cannot run keel unprivileged ({cmd:?}): {error}"));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no envelope: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_command_cannot_read_the_keys_back_from_keels_proc_environ() {
    let sandbox = Sandbox::new();
    // Every process the command can see, keel (its parent) included.
    let script = "echo parent=$(cat /proc/$PPID/comm); \
                  for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>&1; echo end";
    let envelope = run_unprivileged(&sandbox, script);
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("end"), "{envelope}");
    assert_no_secret(output, "a /proc/*/environ of keel");
}
