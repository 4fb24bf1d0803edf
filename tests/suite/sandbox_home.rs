//! A home folder that holds the workspace (keel started in `~`, or a CI
//! container's home under `/tmp`): the home is writable there, so its
//! start-up files, git config and key folders are kept read-only one by
//! one, and one that does not exist yet cannot be kept by a mount. A
//! command that creates one must not leave it behind for the user's next
//! shell or git (issue 34), and keel's removal must follow no link the
//! command planted on the way. As root and as `nobody` (their home
//! theirs).

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::jail_fixture::{KEEL, User, as_root_and_nobody, command_as, require};

as_root_and_nobody! {
    start_up_files_and_git_config_a_command_creates_in_the_home_are_removed;
    a_link_planted_above_a_protected_home_path_is_removed_and_never_followed;
}

/// Runs `script` with `keel tool shell` in `home/ws` as `user`, `HOME` = `home`.
fn shell_in_home(user: User, home: &Path, script: &str) -> String {
    let ws = home.join("ws");
    let args = json!({"command": script, "timeout_ms": 60_000});
    let output = command_as(user, KEEL)
        .args(["tool", "shell", &args.to_string(), "--mode", "auto", "--yes"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KEEL_HOME", home.join(".keel"))
        .current_dir(&ws)
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!("keel did not answer: {}", String::from_utf8_lossy(&output.stderr))
    });
    format!("{}\n{}", envelope["output"].as_str().unwrap_or_default(), envelope["error"])
}

/// `user`'s home in `/tmp` holding a workspace.
fn home_holding_a_workspace(user: User) -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let init = Command::new("git").args(["init", "-q"]).current_dir(&ws).status().unwrap();
    assert!(init.success());
    let owner = format!("{0}:{0}", user.uid());
    let chown = Command::new("chown").args(["-R", &owner]).arg(dir.path()).status().unwrap();
    assert!(chown.success());
    dir
}

fn start_up_files_and_git_config_a_command_creates_in_the_home_are_removed(user: User) {
    require(user);
    let home = home_holding_a_workspace(user);
    let text = shell_in_home(
        user,
        home.path(),
        "echo 'touch /tmp/pwned' > ~/.profile; mkdir -p ~/.config/git && \
         echo '[core] pager = evil' > ~/.config/git/config; mkdir -p ~/.ssh && \
         echo key > ~/.ssh/authorized_keys; echo work > ~/ws/result.txt; echo done",
    );
    for planted in [".profile", ".config/git", ".ssh"] {
        assert!(!home.path().join(planted).exists(), "{planted} left behind: {text}");
    }
    assert!(text.contains("keel: removed"), "{text}");
    assert!(text.contains(".profile"), "the removal names the file: {text}");
    assert_eq!(std::fs::read_to_string(home.path().join("ws/result.txt")).unwrap(), "work\n");
}

fn a_link_planted_above_a_protected_home_path_is_removed_and_never_followed(user: User) {
    require(user);
    let home = home_holding_a_workspace(user);
    let precious = home.path().join("ws/precious");
    std::fs::create_dir_all(precious.join("git")).unwrap();
    std::fs::write(precious.join("git/notes"), "a day of work").unwrap();
    let text = shell_in_home(user, home.path(), "ln -s ~/ws/precious ~/.config && echo linked");
    assert!(std::fs::symlink_metadata(home.path().join(".config")).is_err(), "{text}");
    assert_eq!(std::fs::read_to_string(precious.join("git/notes")).unwrap(), "a day of work");
}
