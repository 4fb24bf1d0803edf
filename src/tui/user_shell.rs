//! `!cmd`: run a command yourself (Claude Code's `!`, Codex's `!`). A
//! one-line prompt starting with `!` is not sent to the model: the driver
//! hands the command to the session (`Op::UserShell`,
//! `Session::run_user_shell`), which judges it like a `shell` call and
//! runs it in the session's sandbox; its output shows in a shell cell and
//! reaches the model with the next request, as a user message (logged).
//!
//! Invariants: pure (the driver does the rest); refused while a turn runs
//! (the session takes one operation at a time; the line is given back);
//! a command policy forbids is said and runs nowhere; the UI is "running"
//! from the moment it is sent until [`finished`] is handed its outcome.

use super::app::{App, Command};
use super::keys::start_running;
use super::transcript::{CellKind, Level, ToolCell};
use crate::protocol::tool_facts::names;
use crate::protocol::{ToolCall, ToolMeta};

/// The cell id of the `!cmd` that is running.
const CELL_ID: &str = "user-shell";

/// Whether the typed line is a `!cmd` (one line, something after the `!`).
pub fn is_shell(line: &str) -> bool {
    line.starts_with('!') && !line.contains('\n') && !line[1..].trim().is_empty()
}

/// Starts the typed `!cmd`.
pub fn start(app: &mut App, line: &str) -> Vec<Command> {
    let command = line[1..].trim().to_owned();
    if app.status.running {
        app.editor.insert(line);
        app.hint = Some("!command waits for the running turn; Esc stops it".to_owned());
        return Vec::new();
    }
    app.scroll = 0;
    start_running(app, "your command");
    app.transcript.push(CellKind::User(format!("!{command}")));
    let call = ToolCall {
        call_id: CELL_ID.to_owned(),
        name: names::SHELL.to_owned(),
        arguments: serde_json::json!({ "command": command }).to_string(),
        item_id: None,
        provider_data: None,
    };
    app.transcript.push(CellKind::Tool(ToolCell::running(&call)));
    vec![Command::UserShell(command)]
}

/// The session's answer: the output in the cell, or why it did not run.
pub fn finished(app: &mut App, outcome: Result<crate::runtime::UserShell, String>) {
    use crate::runtime::UserShell;
    app.status.running = false;
    app.status.activity.clear();
    match outcome {
        Ok(UserShell::Ran { output, is_error, exit_code }) => {
            let meta = ToolMeta::command(exit_code, None);
            app.transcript.update_tool(CELL_ID, |cell| cell.finish(&output, is_error, &meta));
            app.notice(Level::Info, "the output goes to the model with your next message");
        }
        Ok(UserShell::Refused { reason }) => {
            app.transcript.update_tool(CELL_ID, |cell| {
                cell.finish(&reason, true, &ToolMeta::new());
            });
            app.notice(Level::Warning, format!("not run: {reason}"));
        }
        Err(error) => {
            app.transcript.update_tool(CELL_ID, |cell| {
                cell.finish(&error, true, &ToolMeta::new());
            });
            app.notice(Level::Error, format!("the command could not run: {error}"));
        }
    }
    // A later `!cmd` gets a cell of its own.
    app.transcript.update_tool(CELL_ID, |cell| cell.call_id = "user-shell-done".to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::runtime::UserShell;
    use crate::tui::Theme;
    use crate::tui::view_tests::render;

    #[test]
    fn a_bang_line_runs_the_command_and_shows_its_output() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.editor.insert("!git status --short");
        let commands = super::super::keys::submit(&mut app);
        assert_eq!(commands, [Command::UserShell("git status --short".into())]);
        assert!(app.status.running);
        let output = "exit code: 0\n M src/lib.rs\n?? notes.txt\n".to_owned();
        finished(&mut app, Ok(UserShell::Ran { output, is_error: false, exit_code: Some(0) }));
        assert!(!app.status.running);
        app.editor.insert("!rm -rf /");
        super::super::keys::submit(&mut app);
        let reason = "hard deny: deletes the filesystem root".to_owned();
        finished(&mut app, Ok(UserShell::Refused { reason }));
        insta::assert_snapshot!("user_shell_cells", render(&app, 80, 20));
    }

    #[test]
    fn only_one_line_with_a_command_counts_and_a_running_turn_refuses_it() {
        assert!(is_shell("!ls"));
        assert!(!is_shell("!"));
        assert!(!is_shell("! "));
        assert!(!is_shell("!ls\nmore"));
        assert!(!is_shell("ls !x"));
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.status.running = true;
        assert_eq!(start(&mut app, "!ls"), []);
        assert_eq!(app.editor.text(), "!ls");
    }
}
