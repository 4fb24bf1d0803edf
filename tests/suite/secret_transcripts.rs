//! Secret-safe transcripts (issue 38), end to end through the real
//! binary: a program the model runs reads `.env` and prints it, another
//! prints a token keel was started with; the model's requests, every byte
//! keel wrote under KEEL_HOME, the `--json` stream, the TUI's screen and
//! an export show `[redacted: NAME]` and never the values.

use std::path::Path;

use serde_json::json;

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::tui_tmux::{Pane, shell_quote};
use super::wire::{Step, Wire, call};

/// In `.env`: read by the model's program, never named to keel.
const DOTENV_VALUE: &str = "dotenv-canary-7f3a9c1e";
/// In keel's environment as `GITHUB_TOKEN`; a file of the repo holds it too.
const TOKEN_VALUE: &str = "ghtoken-canary-5512ab90";

fn seeded() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write(".env", &format!("# local\nDEPLOY_TOKEN={DOTENV_VALUE}\nDEBUG=1\n"));
    sandbox.write("data/creds.txt", &format!("token: {TOKEN_VALUE}\n"));
    sandbox
}

/// The calls that print both values: `.env` through python (a name
/// keel's secret hook cannot see in the program text), the token by `cat`.
fn printing_steps() -> Vec<Step> {
    vec![
        Step::Calls {
            text: None,
            calls: vec![call(
                "shell",
                json!({"command": "python3 -c 'print(open(\".e\" + \"nv\").read())'"}),
            )],
        },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "cat data/creds.txt"}))],
        },
        Step::Answer("Printed both.".into()),
    ]
}

/// Every file under `dir`, as bytes, with its path.
fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            every_file(&path, out);
        } else if kind.is_file() {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap_or_default()));
        }
    }
}

fn assert_no_value(bytes: &[u8], who: &str) {
    let text = String::from_utf8_lossy(bytes);
    for value in [DOTENV_VALUE, TOKEN_VALUE] {
        assert!(!text.contains(value), "{value} reached {who}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printed_secrets_reach_no_request_log_stream_or_export() {
    let sandbox = seeded();
    let server = scripted_model(Wire::Chat, &printing_steps()).await;
    let out = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json", "--full-auto", "print them"])
        .env("GITHUB_TOKEN", TOKEN_VALUE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_no_value(&out.stdout, "the --json stream");
    assert_no_value(&out.stderr, "stderr");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    let sent = bodies[2].to_string();
    assert!(sent.contains("[redacted: .env:DEPLOY_TOKEN]"), "{sent}");
    assert!(sent.contains("token: [redacted: GITHUB_TOKEN]"), "{sent}");
    assert!(sent.contains("DEBUG=1"), "the rest of the output stays: {sent}");
    for body in &bodies {
        assert_no_value(body.to_string().as_bytes(), "a model request");
    }

    let log = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    assert!(log.contains("[redacted: GITHUB_TOKEN]"), "{log}");
    let id = json_lines(&out.stdout).last().unwrap()["session_id"].as_str().unwrap().to_owned();
    for format in ["md", "html", "json", "atif"] {
        let file = sandbox.repo.join(format!("export.{format}"));
        let exported = sandbox
            .keel()
            .args(["export", &id, "--format", format, "-o"])
            .arg(&file)
            .env("GITHUB_TOKEN", TOKEN_VALUE)
            .output()
            .unwrap();
        assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("[redacted: GITHUB_TOKEN]"), "{format}: {text}");
        assert_no_value(text.as_bytes(), &format!("the {format} export"));
    }

    let mut files = Vec::new();
    every_file(&sandbox.home, &mut files);
    assert!(files.len() > 1, "{files:?}");
    for (path, bytes) in &files {
        assert_no_value(bytes, path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_shows_the_name_never_the_value() {
    let sandbox = seeded();
    let server = scripted_model(Wire::Chat, &printing_steps()).await;
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let command = format!(
        "env -i PATH={} HOME={} KEEL_HOME={} TERM=xterm-256color GITHUB_TOKEN={TOKEN_VALUE} {} \
         --provider openai-chat --base-url {} --model m --full-auto 'print them'",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&keel.display().to_string()),
        shell_quote(&format!("{}/v1", server.uri())),
    );
    let pane = Pane::start(&sandbox.repo, &command);
    let screen = pane.wait_for(&["Printed both.", "[redacted: GITHUB_TOKEN]"]);
    assert!(screen.contains("[redacted: .env:DEPLOY_TOKEN]"), "{screen}");
    assert_no_value(screen.as_bytes(), "the screen");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = std::fs::read(sandbox.only_log_path()).unwrap();
    assert_no_value(&log, "the TUI session's log");
}
