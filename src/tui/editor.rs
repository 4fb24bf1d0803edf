//! The user's editor for plan review ("edit in `$EDITOR`"): the one child
//! process keel starts outside `sandbox/`, because it must own the
//! terminal (inherited stdin/stdout, no capture, no timeout) while the TUI
//! is suspended. It runs as the user, not as the model, so no sandbox.
//!
//! Invariants: the caller has suspended the TUI (`TerminalGuard::suspend`)
//! and stopped reading terminal events before [`edit`], and resumes after;
//! the editor command is `$VISUAL`, else `$EDITOR`, else `vi`, read by the
//! shell (so `EDITOR="code --wait"` works) with the file as one argument.

use std::path::Path;

/// Runs the editor on `file` and waits for it; `Err` says why in words.
pub async fn edit(file: &Path, env: &crate::sandbox::EnvFilter) -> Result<(), String> {
    // Like every child, it starts from keel's environment minus credentials.
    let status = tokio::process::Command::new("sh")
        .env_clear()
        .envs(crate::sandbox::filtered_env(env))
        .arg("-c")
        .arg(r#"${VISUAL:-${EDITOR:-vi}} "$1""#)
        .arg("keel-edit")
        .arg(file)
        .status()
        .await
        .map_err(|error| format!("cannot start the editor ($VISUAL/$EDITOR): {error}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the editor exited with {status}; the plan is unchanged"))
    }
}

/// The file's text after editing.
pub fn read(file: &Path) -> Result<String, String> {
    std::fs::read_to_string(file)
        .map_err(|error| format!("cannot read the edited plan {}: {error}", file.display()))
}
