//! The jail as a whole: which layers this kernel offers (printed, as root
//! and as `nobody`), fork bombs of several shapes stay bounded and leave
//! nothing behind, and a scripted model's `workdir: ".git"` (the repro of
//! issue 13) cannot write into `.git` through `keel exec`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use keel::sandbox::jail::layers::Layers;
use keel::sandbox::jail::privileges::PidLimit;
use keel::sandbox::landlock::{Confinement, Enforcement, NetworkMode, SandboxMode};
use keel::sandbox::netproxy::Bridges;
use keel::sandbox::{CommandOutput, CommandSpec};
use tokio_util::sync::CancellationToken;

use super::jail_fixture::{Fixture, KEEL, NOBODY, PYTHON, User, note, processes_named, require};

/// The bound the fork-bomb tests use (the default is far higher).
const MAX_PIDS: u32 = 512;

fn confinement(workspace: &Path) -> Confinement {
    Confinement {
        launcher: KEEL.into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![workspace.to_owned()],
        extra_roots: Vec::new(),
        read_only: Vec::new(),
        network: NetworkMode::Off,
        bridges: Bridges::default(),
        required: true,
        protect_vcs: true,
        git_write: false,
        max_pids: MAX_PIDS,
        shared_network: None,
        hidden: Vec::new(),
    }
}

/// The probe's report for `user`, printed for the test log.
fn layers(fixture: &Fixture) -> Layers {
    let args = confinement(&fixture.ws).launcher_args(&["--probe".into()]);
    let mut command = match fixture.user {
        User::Root => Command::new(KEEL),
        User::Nobody => {
            let mut command = Command::new(NOBODY[0]);
            command.args(&NOBODY[1..]).arg(KEEL);
            command
        }
    };
    let output = command.args(args).current_dir(&fixture.ws).output().unwrap();
    let layers: Layers = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    let json = serde_json::to_string(&layers).unwrap();
    note(&format!("layers offered to {:?}: {json}; missing: {:?}", fixture.user, layers.gaps()));
    layers
}

fn kernel_at_least(wanted: (u32, u32)) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    keel::sandbox::jail::privileges::kernel_version(&release).is_some_and(|v| v >= wanted)
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn the_kernel_offers_every_layer_to_root_and_to_nobody() {
    for user in [User::Root, User::Nobody] {
        require(user);
        let fixture = Fixture::new(user, false);
        let layers = layers(&fixture);
        assert_ne!(layers.landlock, Enforcement::None);
        assert!(layers.namespaces.mount && layers.namespaces.pid, "{layers:?}");
        assert!(layers.fresh_proc && layers.new_session && layers.seccomp, "{layers:?}");
        assert!(layers.mounts.system_read_only, "{:?}", layers.mounts.left_writable);
        assert_eq!(layers.namespaces.user, user == User::Nobody);
        if kernel_at_least((6, 14)) {
            assert_eq!(layers.pid_limit, PidLimit::Namespace(MAX_PIDS));
        }
        if kernel_at_least((6, 12)) {
            assert!(layers.landlock_scopes);
        }
    }
}

async fn run_confined(workspace: &Path, script: &str, timeout: Duration) -> CommandOutput {
    let spec = CommandSpec::script(script, workspace)
        .with_timeout(timeout)
        .confined(&confinement(workspace));
    keel::sandbox::run(&spec, &CancellationToken::new()).await.unwrap()
}

/// Runs a fork bomb as root (the user `RLIMIT_NPROC` never bounds) and
/// checks it ended by the timeout at the latest and left nothing behind.
async fn bomb(shape: &str) -> CommandOutput {
    require(User::Root);
    let fixture = Fixture::new(User::Root, false);
    let script = format!(": bomb-{}; {shape}", fixture.marker);
    let started = Instant::now();
    let out = run_confined(&fixture.ws, &script, Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
    // On a timeout keel's kill ladder may escalate to SIGKILL before the
    // kernel has finished killing a namespace of hundreds of processes:
    // they are dying (SIGKILLed), so wait for that, bounded (generously:
    // on a loaded machine reaping hundreds of processes took over 10 s).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut survivors = processes_named(&format!("bomb-{}", fixture.marker));
    while !survivors.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        survivors = processes_named(&format!("bomb-{}", fixture.marker));
    }
    assert!(survivors.is_empty(), "{} bomb processes survived", survivors.len());
    out
}

/// The count a bomb shape printed on stdout.
fn printed_count(out: &CommandOutput) -> u32 {
    let text = out.stdout.text();
    text.lines().last().and_then(|line| line.trim().parse().ok()).unwrap_or_else(|| {
        panic!("no count printed: {text} {}", out.stderr.text());
    })
}

#[tokio::test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
async fn fork_bomb_classic_is_bounded() {
    bomb(":(){ :|:& };:").await;
}

#[tokio::test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
async fn fork_bomb_background_loop_is_bounded() {
    bomb("while true; do sleep 1000 & done").await;
}

#[tokio::test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
async fn fork_bomb_python_forks_are_counted() {
    let shape = format!(
        "{PYTHON} -c \"import os, time\nn = 0\ntry:\n  while True:\n    if os.fork() == 0:\n      time.sleep(1000)\n    n += 1\nexcept OSError:\n  print(n)\""
    );
    let out = bomb(&shape).await;
    assert!(printed_count(&out) < MAX_PIDS, "{}", out.stdout.text());
}

#[tokio::test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
async fn thread_bomb_is_counted() {
    let shape = format!(
        "{PYTHON} -c \"import threading, time\nn = 0\ntry:\n  while True:\n    threading.Thread(target=time.sleep, args=(1000,), daemon=True).start()\n    n += 1\nexcept RuntimeError:\n  print(n)\""
    );
    let out = bomb(&shape).await;
    assert!(printed_count(&out) < MAX_PIDS, "{}", out.stdout.text());
}

#[tokio::test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
async fn exponential_python_bomb_is_bounded() {
    bomb(&format!(
        "{PYTHON} -c \"import os\nwhile True:\n  try: os.fork()\n  except OSError: pass\""
    ))
    .await;
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn an_unprivileged_fork_bomb_is_bounded_too() {
    require(User::Nobody);
    let fixture = Fixture::new(User::Nobody, false);
    let script = format!(
        "{PYTHON} -c \"import os, time\nn = 0\ntry:\n  while True:\n    if os.fork() == 0:\n      time.sleep(1000)\n    n += 1\nexcept OSError:\n  print(n)\""
    );
    let launcher =
        confinement(&fixture.ws).launcher_args(&["bash".into(), "-c".into(), script.into()]);
    let output = Command::new("timeout")
        .args(["60"])
        .args(NOBODY)
        .arg(KEEL)
        .args(launcher)
        .current_dir(&fixture.ws)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let count: u32 = text.trim().parse().unwrap_or_else(|_| panic!("{text} {output:?}"));
    assert!(count < MAX_PIDS, "{count}");
}

/// What the jail's `/dev` holds and whether a host device outside it
/// opens, as `user` (the probe that made a loop device opened
/// `/dev/loop-control`).
fn dev_view(user: User) -> String {
    require(user);
    let fixture = Fixture::new(user, false);
    let script = "ls -A /dev | sort | tr '\\n' ' '; echo; \
        for d in loop-control kmsg mem sda vda; do [ -e /dev/$d ] && echo \"present $d\"; done; \
        echo x > /dev/null && head -c 4 /dev/urandom | wc -c; \
        touch /dev/planted 2>/dev/null && echo planted; true";
    let mut command = match user {
        User::Root => Command::new(KEEL),
        User::Nobody => {
            let mut command = Command::new(NOBODY[0]);
            command.args(&NOBODY[1..]).arg(KEEL);
            command
        }
    };
    let launcher =
        confinement(&fixture.ws).launcher_args(&["bash".into(), "-c".into(), script.into()]);
    let output = command.args(launcher).current_dir(&fixture.ws).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    note(&format!("/dev as {user:?}: {text} {}", String::from_utf8_lossy(&output.stderr)));
    text
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn the_jail_has_a_minimal_dev_as_root_and_as_nobody() {
    for user in [User::Root, User::Nobody] {
        let text = dev_view(user);
        let listing = text.lines().next().unwrap_or_default();
        assert_eq!(
            listing.trim(),
            "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero",
            "{user:?}: {text}"
        );
        assert!(!text.contains("present"), "{user:?}: {text}");
        assert!(
            text.lines().any(|line| line.trim() == "4"),
            "{user:?}: null and urandom work: {text}"
        );
        assert!(!text.contains("planted"), "{user:?}: /dev is read-only: {text}");
    }
}

/// Through `workdir: .git`, as root and as `nobody`.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn a_model_cannot_write_git_through_workdir_as_root_and_nobody() {
    for user in [User::Root, User::Nobody] {
        require(user);
        let fixture = Fixture::new(user, false);
        let config_before = std::fs::read_to_string(fixture.ws.join(".git/config")).unwrap();
        // Policy asks about this in every mode (`policy_escapes.rs`); `--yes`
        // plays the user approving it, and the jail must still hold.
        let outcome =
            fixture.shell("echo '[core]' >> config; echo fsmonitor = evil >> config", Some(".git"));
        let config_after = std::fs::read_to_string(fixture.ws.join(".git/config")).unwrap();
        assert_eq!(config_after, config_before, "{user:?}");
        let envelope = &outcome.envelope;
        assert_eq!(envelope["meta"]["kind"], "sandbox_violation", "{user:?}: {envelope}");
        assert!(envelope.to_string().contains("Read-only file system"), "{user:?}: {envelope}");
    }
}

/// Credential stores are covered inside the jail, as root and as
/// `nobody`: code keel cannot read (`python3 -c open(…)`), a `cd` into
/// the folder, a file store and a `[secrets] paths` entry all read
/// nothing, while the rest of the home stays readable.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn credential_stores_are_hidden_from_commands_as_root_and_nobody() {
    for user in [User::Root, User::Nobody] {
        require(user);
        let fixture = Fixture::configured(user, false, "[secrets]\npaths = [\"~/vault\"]\n");
        let canary = "aws-canary-51c0";
        for (path, text) in [
            (".aws/credentials", canary),
            (".npmrc", canary),
            ("vault/token", canary),
            ("notes.txt", "plain notes"),
        ] {
            let path = fixture.home.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let home = fixture.home.display();
        for script in [
            format!("{PYTHON} -c \"print(open('{home}/.aws/credentials').read())\""),
            "cd ~/.aws && cat credentials".to_owned(),
            "cat ~/.npmrc".to_owned(),
            "cat ~/vault/token".to_owned(),
            "grep -r . ~ 2>/dev/null".to_owned(),
        ] {
            let outcome = fixture.shell(&script, None);
            assert!(!outcome.text.contains(canary), "{user:?}: {script}: {}", outcome.text);
        }
        let plain = fixture.shell("cat ~/notes.txt", None);
        assert!(plain.text.contains("plain notes"), "{user:?}: {}", plain.text);
    }
}

/// A background command started with `pty` has the terminal as its stdin
/// and as its controlling terminal inside the jail, as root and as
/// `nobody` (a user namespace), and the jail's `/dev/pts` stays private.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn a_command_on_a_terminal_has_it_as_its_controlling_one_as_root_and_nobody() {
    for user in [User::Root, User::Nobody] {
        require(user);
        let fixture = Fixture::new(user, false);
        let outcome = fixture.shell_on_terminal(
            "test -t 0 && echo stdin-tty; (exec 3</dev/tty) && echo has-ctty; \
             stty size; ls /dev/pts | tr '\\n' ' '",
        );
        let text = &outcome.text;
        // The private `/dev/pts` holds no terminal: the host's stays unseen.
        assert!(text.contains("stdin-tty\nhas-ctty\n40 120\nptmx\n"), "{user:?}: {text}");
        assert_eq!(outcome.envelope["meta"]["background"]["status"], "exited", "{user:?}: {text}");
    }
}
