//! keel's own folder is its owner's only, whatever the umask (issue 34:
//! session logs and the undo store were world-readable under umask 022):
//! the real `keel exec`, started with umask 022 and a KEEL_HOME another
//! user could enter, leaves the folder 0700 and the session log 0600.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::canary::stderr;
use super::support::{Sandbox, scripted_model};
use super::wire::{Step, Wire};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test]
async fn keel_home_and_its_session_logs_are_owner_only_under_umask_022() {
    let sandbox = Sandbox::new();
    let keel_home = sandbox.home.join("keel");
    std::fs::create_dir(&keel_home).unwrap();
    std::fs::set_permissions(&keel_home, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    // The real binary started by a shell whose umask lets others read.
    let output = std::process::Command::new("sh")
        .args(["-c", "umask 022 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_keel")])
        .args(["exec", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "go"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &keel_home)
        .current_dir(&sandbox.repo)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(mode(&keel_home), 0o700, "KEEL_HOME");
    let sessions = keel_home.join("sessions");
    assert_eq!(mode(&sessions), 0o700, "the sessions folder");
    let logs: Vec<_> = std::fs::read_dir(&sessions)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    assert!(!logs.is_empty(), "a session log was written");
    for log in logs {
        assert_eq!(mode(&log.path()), 0o600, "{}", log.path().display());
    }
}
