//! The slash commands about the session itself, with their peers'
//! meanings: `/clear` and `/new` (a fresh session; the old one stays in
//! its log, resumable), `/cost` (what was spent, against the limits),
//! `/status` (model, provider, mode, sandbox, network, phase, context,
//! session id and log) and `/init` (write or update AGENTS.md from a look
//! at the repository, as a normal turn with a built-in prompt).
//!
//! Invariants: pure, like `slash.rs`; what is shown comes from the status
//! line's own facts (`app::Status`) and the session's start event
//! ([`SessionFacts`]), so `/status` never says more than keel knows:
//! a fact not known yet reads "not known yet".

use super::app::{App, Command};
use super::keys::start_running;
use super::transcript::{CellKind, Level};

/// What the session said about itself when it started (and the driver
/// added from its settings).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFacts {
    pub session_id: String,
    pub log_path: String,
    pub workspace_root: String,
    /// The sandbox's network mode (`off`, `allowlist`, `on`).
    pub network: String,
}

/// The prompt `/init` sends (the user's words after it are added).
pub const INIT_PROMPT: &str = "Write or update AGENTS.md at the workspace root: the guide a new \
engineer or coding agent reads first. Look at the repository before writing: its layout, the \
build, test and lint commands (read the manifests and CI files), the code style, and anything \
surprising. If AGENTS.md (or CLAUDE.md) exists, keep what is still true, fix what is not and add \
what is missing; do not duplicate README.md. Keep it short and concrete: commands in code \
blocks, one line per rule.";

/// `/clear`, `/new`: a new session replaces this one on screen (the
/// driver ends this one and names it on the new screen).
pub fn new_session(_app: &mut App) -> Vec<Command> {
    vec![Command::OpenSession(None)]
}

/// `/cost`: spend so far, by whom, against the limits.
pub fn cost(app: &mut App) -> Vec<Command> {
    let status = &app.status;
    let mut usage = status.usage;
    usage.add(&status.subagent_usage);
    let spent = if status.unpriced {
        "not known (a model without prices served part of it)".to_owned()
    } else {
        format!("${:.4}", status.spent_usd + status.subagent_cost)
    };
    let mut lines = vec![
        format!("spent {spent}"),
        format!(
            "tokens: {} in ({} from the cache, {} written to it) · {} out",
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.cache_write_tokens,
            usage.output_tokens
        ),
    ];
    if status.subagent_usage.input_tokens + status.subagent_usage.output_tokens > 0 {
        lines.push(format!(
            "of which subagents: {} in · {} out · ${:.4}",
            status.subagent_usage.input_tokens,
            status.subagent_usage.output_tokens,
            status.subagent_cost
        ));
    }
    lines.push(limits_line(&status.limits));
    app.notice(Level::Info, lines.join("\n"));
    Vec::new()
}

fn limits_line(limits: &crate::agent::SpendLimits) -> String {
    let cost = limits.max_cost_usd.map(|usd| format!("${usd:.2}"));
    let tokens = limits.max_tokens.map(|tokens| format!("{tokens} tokens"));
    match (cost, tokens) {
        (None, None) => "limits: none (--max-cost, --max-tokens or [limits] set them)".to_owned(),
        (cost, tokens) => {
            let set: Vec<String> = [cost, tokens].into_iter().flatten().collect();
            format!("limits: {}", set.join(" · "))
        }
    }
}

/// `/status`: what this session runs with.
pub fn status(app: &mut App) -> Vec<Command> {
    let status = &app.status;
    let facts = &app.facts;
    let known =
        |text: &str| if text.is_empty() { "not known yet".to_owned() } else { text.to_owned() };
    let sandbox =
        status.sandbox.map_or_else(|| "not known yet".to_owned(), |s| s.as_str().to_owned());
    let context = status
        .context_percent
        .map_or_else(|| "not known yet".to_owned(), |percent| format!("{percent}% of the window"));
    let lines = [
        format!("model {} · provider {}", known(&status.model), known(&status.provider)),
        format!("mode {}: {}", status.mode.as_str(), super::keys::mode_meaning(status.mode)),
        format!("sandbox {sandbox} · network {}", known(&facts.network)),
        format!("phase {} · context {context}", known(&status.phase)),
        format!("workspace {}", known(&facts.workspace_root)),
        format!("session {} · log {}", known(&facts.session_id), known(&facts.log_path)),
    ];
    app.notice(Level::Info, lines.join("\n"));
    Vec::new()
}

/// `/init [words]`: a normal turn with the built-in prompt.
pub fn init(app: &mut App, words: &str) -> Vec<Command> {
    let prompt =
        if words.is_empty() { INIT_PROMPT.to_owned() } else { format!("{INIT_PROMPT}\n\n{words}") };
    app.scroll = 0;
    start_running(app, "thinking");
    app.transcript.push(CellKind::User(format!("/init {words}").trim_end().to_owned()));
    vec![Command::Submit(prompt)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tui::Theme;
    use crate::tui::view_tests::render;

    fn app() -> App {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.status.model = "mock-model".into();
        app.status.provider = "openai-chat".into();
        app.status.sandbox = Some(crate::runtime::SandboxState::On);
        app.status.usage.input_tokens = 1200;
        app.status.usage.output_tokens = 300;
        app.status.spent_usd = 0.0123;
        app.facts = SessionFacts {
            session_id: "s-1".into(),
            log_path: "/home/u/.keel/sessions/s-1.jsonl".into(),
            workspace_root: "/work/repo".into(),
            network: "off".into(),
        };
        app
    }

    #[test]
    fn status_and_cost_say_what_the_session_runs_with() {
        let mut app = app();
        super::super::slash::run(&mut app, "/status");
        super::super::slash::run(&mut app, "/cost");
        insta::assert_snapshot!("slash_status_and_cost", render(&app, 90, 22));
    }

    #[test]
    fn clear_and_new_open_a_fresh_session() {
        for command in ["/clear", "/new"] {
            let mut app = app();
            assert_eq!(super::super::slash::run(&mut app, command), [Command::OpenSession(None)]);
        }
    }

    #[test]
    fn init_is_a_turn_with_the_built_in_prompt() {
        let mut app = app();
        let commands = super::super::slash::run(&mut app, "/init mention the benches");
        let [Command::Submit(prompt)] = commands.as_slice() else { panic!("{commands:?}") };
        assert!(prompt.starts_with("Write or update AGENTS.md"));
        assert!(prompt.ends_with("mention the benches"));
        assert!(app.status.running);
    }
}
