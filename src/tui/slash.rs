//! Slash commands typed at the prompt: what each does to the model and
//! which [`Command`] it hands the driver. The popup's list is
//! `input::SLASH_COMMANDS` plus one entry per skill.
//!
//! Invariants: pure (like `update`); a command that needs the session
//! (`/compact`, `/undo`, `/diff`, `/<skill>`) is refused while a turn
//! runs, since the session task takes one operation at a time (the typed
//! line is given back); anything that cannot work says so in a notice
//! instead of failing silently.

use crate::policy::ApprovalMode;

use super::app::{App, Command};
use super::keys::{next_mode, start_running};
use super::transcript::{CellKind, Level};

pub const HELP: &str = "Enter send · Shift/Alt/Ctrl+Enter, Ctrl+J, \\+Enter newline · Up/Down history · \
Ctrl+R search it · Tab complete\n\
Approvals: y/1 yes · a/2 always · n/3 no · ←/→ and Enter choose\n\
While a turn runs: Enter queues the text for after it · Tab steers the turn (after its tool batch)\n\
Shift+Tab cycle mode (ask → auto → plan → yolo, which asks first) · Esc/Ctrl+C stop the turn\n\
Ctrl+C twice or Ctrl+D quit · ? this help (on an empty prompt)\n\
Ctrl+O expand the latest tool output (again: all, again: none) · PageUp/PageDown scroll\n\
/help /mode [ask|auto|plan|explore|yolo] /plan /compact [focus] /tasks /diff /undo\n\
/rewind [N|undo] (Esc Esc) /fork [N] /resume /skills /mcp /ps /model [name] /quit · /clear or /new a fresh session\n\
/cost /status /context /config /permissions [remove N] /agents /hooks /memory [N]\n\
!command runs it yourself · /init [words] write or update AGENTS.md\n\
/<command> [words] runs a custom command (.keel/commands, .claude/commands, ~/.codex/prompts)\n\
/<skill> [words] a skill · /mcp__SERVER__PROMPT [words] sends an MCP server's prompt";

/// Runs the slash command `line` (already trimmed, starting with `/`).
pub fn run(app: &mut App, line: &str) -> Vec<Command> {
    let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let needs_session = !matches!(
        name,
        "/quit"
            | "/exit"
            | "/help"
            | "/mode"
            | "/plan"
            | "/tasks"
            | "/model"
            | "/skills"
            | "/resume"
            | "/mcp"
            | "/ps"
            | "/cost"
            | "/status"
            | "/context"
            | "/config"
            | "/permissions"
            | "/agents"
            | "/hooks"
            | "/memory"
    );
    if needs_session && app.status.running {
        app.editor.insert(line);
        app.hint = Some(format!("{name} waits for the running turn; Esc stops it"));
        return Vec::new();
    }
    match name {
        "/quit" | "/exit" => vec![Command::Quit],
        "/help" => notice(app, Level::Info, HELP),
        "/mode" => set_mode(app, rest),
        "/plan" => set_mode(app, "plan"),
        "/tasks" => toggle_tasks(app),
        "/model" if rest.is_empty() => {
            let text = format!(
                "model {} · provider {} (/model NAME switches the model; --provider at start \
                 changes the provider)",
                or_unknown(&app.status.model),
                or_unknown(&app.status.provider)
            );
            notice(app, Level::Info, text)
        }
        "/model" => {
            // The status line follows the runtime's `ModelChanged` (a
            // switch can be refused, and prices come from the session).
            let when = if app.status.running { "the next turn" } else { "the next request" };
            app.notice(Level::Info, format!("model {rest} from {when} (recorded in the log)"));
            vec![Command::SetModel(rest.to_owned())]
        }
        "/skills" => list_skills(app),
        "/resume" if app.status.running => {
            app.hint = Some("/resume waits for the running turn; Esc stops it".to_owned());
            Vec::new()
        }
        "/resume" => vec![Command::SwitchSession],
        "/diff" => vec![Command::Diff],
        "/compact" => {
            let focus = (!rest.is_empty()).then(|| rest.to_owned());
            start_running(app, "compacting");
            vec![Command::Compact { focus }]
        }
        "/undo" => vec![Command::Undo],
        "/mcp" => super::mcp_view::show(app),
        "/rewind" | "/fork" => super::rewind_view::slash(app, name, rest),
        "/clear" | "/new" => super::slash_session::new_session(app),
        "/cost" => super::slash_session::cost(app),
        "/status" => super::slash_session::status(app),
        "/init" => super::slash_session::init(app, rest),
        "/ps" => super::processes_view::show(app),
        "/context" | "/config" | "/permissions" | "/agents" | "/hooks" | "/memory" => {
            super::slash_info::run(app, name, rest)
        }
        other if other.starts_with("/mcp__") => super::mcp_view::run_prompt(app, line),
        other if is_command(app, other) => run_command(app, line),
        other => run_skill(app, other, rest, line),
    }
}

/// A custom command (`.keel/commands`, `.claude/commands`, …) named so.
fn is_command(app: &App, name: &str) -> bool {
    let name = name.trim_start_matches('/');
    let name = name.strip_prefix("prompts:").unwrap_or(name);
    app.editor.commands.iter().any(|(known, _, _)| known == name)
}

/// Sends the typed line: the session expands it (`runtime::custom_commands`),
/// as `keel exec "/name args"` does.
fn run_command(app: &mut App, line: &str) -> Vec<Command> {
    app.scroll = 0;
    start_running(app, "thinking");
    app.transcript.push(CellKind::User(line.to_owned()));
    vec![Command::Submit(line.to_owned())]
}

fn notice(app: &mut App, level: Level, text: impl Into<String>) -> Vec<Command> {
    app.notice(level, text);
    Vec::new()
}

fn or_unknown(text: &str) -> &str {
    if text.is_empty() { "(not known yet)" } else { text }
}

fn set_mode(app: &mut App, word: &str) -> Vec<Command> {
    let mode = match word {
        "" => next_mode(app.status.mode),
        "full-auto" => ApprovalMode::Auto,
        other => match ApprovalMode::parse(other) {
            Some(mode) => mode,
            None => {
                let text = format!("unknown mode `{other}`; use ask, auto, plan, explore or yolo");
                return notice(app, Level::Warning, text);
            }
        },
    };
    super::keys::set_mode(app, mode)
}

fn toggle_tasks(app: &mut App) -> Vec<Command> {
    app.show_tasks = !app.show_tasks;
    if app.tasks.is_empty() {
        return notice(app, Level::Info, "no tasks yet (the model keeps them with todo_write)");
    }
    Vec::new()
}

fn list_skills(app: &mut App) -> Vec<Command> {
    if app.editor.skills.is_empty() {
        return notice(app, Level::Info, "no skills found (.keel/skills, ~/.keel/skills)");
    }
    let lines: Vec<String> =
        app.editor.skills.iter().map(|(name, about)| format!("/{name}  {about}")).collect();
    notice(app, Level::Info, format!("skills:\n{}", lines.join("\n")))
}

fn run_skill(app: &mut App, name: &str, args: &str, line: &str) -> Vec<Command> {
    let skill = name.trim_start_matches('/');
    if !app.editor.skills.iter().any(|(known, _)| known == skill) {
        let text = format!(
            "unknown command {name}; /help lists commands, /skills the skills, typing / the \
             custom commands"
        );
        return notice(app, Level::Warning, text);
    }
    app.scroll = 0;
    start_running(app, "thinking");
    app.transcript.push(CellKind::User(line.to_owned()));
    vec![Command::Skill { name: skill.to_owned(), args: args.to_owned() }]
}
