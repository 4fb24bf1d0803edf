//! The slash commands that show what a session runs with, with their
//! peers' meanings: `/context` (what fills the context window, per part
//! of the latest request), `/config` (every configured key with the layer
//! it came from, secrets hidden), `/permissions` (the rules in force with
//! `file:line`, and the "always" answers, numbered; `/permissions remove
//! N` sends the N-th to the session to take back), `/agents` (agent
//! types with their source), `/hooks` (hooks in force with their source)
//! and `/memory` (the memory notes listed to the model; `/memory N` opens
//! note N in `$EDITOR`).
//!
//! Invariants: pure; the facts come from the session (`InForce`, sent by
//! the bridge after every operation, so a list is as of the last turn's
//! end), the config module (`config::config_sources`, read when the
//! session opened) and the spend ledger of the session's log
//! (`context::ledger`, read by the driver on `/context`), never from a
//! guess: a fact not known yet says so. Every shown text goes through the
//! transcript's terminal-safe wrapping like any notice.

use crate::config::ConfigValue;
use crate::context::ledger::{Ledger, RequestKind, Source};
use crate::runtime::InForce;

use super::app::{App, Command};
use super::transcript::Level;

/// What the info commands read (kept in [`App::info`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionInfo {
    /// As of the last operation's end; `None` before the session opened.
    pub in_force: Option<InForce>,
    pub config: Vec<ConfigValue>,
}

/// `/context /config /permissions /agents /hooks /memory [N]`.
pub fn run(app: &mut App, name: &str, rest: &str) -> Vec<Command> {
    if name == "/context" {
        return vec![Command::ShowContext];
    }
    if name == "/config" {
        let text = config_text(&app.info.config);
        app.notice(Level::Info, text);
        return Vec::new();
    }
    let Some(in_force) = app.info.in_force.clone() else {
        app.notice(Level::Info, format!("{name}: the session has not opened yet"));
        return Vec::new();
    };
    let text = match name {
        "/permissions" if rest.is_empty() => permissions_text(&in_force),
        "/permissions" => return remove_always(app, &in_force, rest),
        "/agents" => agents_text(&in_force),
        "/hooks" => hooks_text(&in_force),
        _ if rest.is_empty() => memory_text(&in_force),
        _ => return open_memory(app, &in_force, rest),
    };
    app.notice(Level::Info, text);
    Vec::new()
}

/// `/permissions remove N`: the N-th "always" answer listed, removed by the
/// session (after the running turn: it changes the policy in force).
fn remove_always(app: &mut App, in_force: &InForce, rest: &str) -> Vec<Command> {
    let chosen = rest
        .strip_prefix("remove")
        .map(str::trim)
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| in_force.always.get(n.checked_sub(1)?));
    let Some(answer) = chosen else {
        let text = format!(
            "/permissions {rest}: say `/permissions remove N` with N from the \"always\" list \
             ({} in force)",
            in_force.always.len()
        );
        app.notice(Level::Warning, text);
        return Vec::new();
    };
    if app.status.running {
        app.editor.insert(&format!("/permissions {rest}"));
        app.hint = Some("/permissions remove waits for the running turn; Esc stops it".into());
        return Vec::new();
    }
    vec![Command::RemoveAlways(answer.scope.clone())]
}

fn open_memory(app: &mut App, in_force: &InForce, rest: &str) -> Vec<Command> {
    let chosen = rest.parse::<usize>().ok().and_then(|n| in_force.memory.get(n.checked_sub(1)?));
    match chosen {
        Some((_, _, path)) => vec![Command::EditFile(path.into())],
        None => {
            let text = format!(
                "/memory {rest}: no such note; /memory lists them ({} in force)",
                in_force.memory.len()
            );
            app.notice(Level::Warning, text);
            Vec::new()
        }
    }
}

/// `/config`.
pub fn config_text(values: &[ConfigValue]) -> String {
    if values.is_empty() {
        return "config: nothing set; keel runs on its defaults, flags and environment \
                ($KEEL_HOME/config.toml, .keel/config.toml, -c key=value)"
            .to_owned();
    }
    let width = values.iter().map(|v| v.key.chars().count()).max().unwrap_or(0).min(32);
    let mut lines = vec!["config (the last source wins; secrets hidden):".to_owned()];
    for value in values {
        let line = format!("  {:<width$} = {}  ← {}", value.key, value.value, value.source);
        match &value.ignored {
            Some(why) => lines.push(format!("{line} ({why})")),
            None => lines.push(line),
        }
    }
    lines.join("\n")
}

/// `/permissions`.
pub fn permissions_text(in_force: &InForce) -> String {
    let mut lines = vec![format!(
        "rules in force (and {} of keel's built-in rules, `keel policy check` explains a \
         command):",
        in_force.builtin_rules
    )];
    if in_force.rules.is_empty() {
        lines.push("  none of your own (~/.keel/rules, .keel/rules, --rules)".to_owned());
    }
    for rule in &in_force.rules {
        lines.push(format!(
            "  {:<9} {}  {} ({})",
            rule.decision, rule.pattern, rule.at, rule.origin
        ));
    }
    if in_force.always.is_empty() {
        lines.push("\"always\" answers: none".to_owned());
        return lines.join("\n");
    }
    lines.push(
        "\"always\" answers (/permissions remove N takes one back at once; the next such call \
         asks again):"
            .to_owned(),
    );
    for (n, answer) in in_force.always.iter().enumerate() {
        let kept = match (&answer.at, answer.this_session) {
            (Some(at), true) => format!("{at} (kept for the project; given in this session)"),
            (Some(at), false) => format!("{at} (kept for the project)"),
            (None, _) => "this session only".to_owned(),
        };
        lines.push(format!("  {}. {}  {kept}", n + 1, answer.text));
    }
    lines.join("\n")
}

/// `/agents`.
pub fn agents_text(in_force: &InForce) -> String {
    if in_force.agents.is_empty() {
        return "agent types: none (the `agent` tool is not offered)".to_owned();
    }
    let mut lines = vec!["agent types the model may start (`agent` tool):".to_owned()];
    for (name, description, source) in &in_force.agents {
        lines.push(format!("  {name}  {description}  ← {source}"));
    }
    lines.join("\n")
}

/// `/hooks`.
pub fn hooks_text(in_force: &InForce) -> String {
    if in_force.hooks.is_empty() {
        return "hooks: none ([hooks] in config.toml, Claude Code's settings.json)".to_owned();
    }
    let mut lines = vec!["hooks in force:".to_owned()];
    for hook in &in_force.hooks {
        let matcher = hook.matcher.as_deref().map_or(String::new(), |m| format!(" [{m}]"));
        let project = if hook.project { " (project)" } else { "" };
        lines.push(format!(
            "  {}{matcher}  {}  ← {}{project}",
            hook.event, hook.command, hook.source
        ));
    }
    lines.join("\n")
}

/// `/memory`.
pub fn memory_text(in_force: &InForce) -> String {
    if in_force.memory.is_empty() {
        return "memory: no notes (#text saves one; ~/.keel/memory, .keel/memory)".to_owned();
    }
    let mut lines = vec!["memory notes listed to the model (/memory N opens one):".to_owned()];
    for (n, (name, description, path)) in in_force.memory.iter().enumerate() {
        lines.push(format!("  {}. {name}: {description}  ← {path}", n + 1));
    }
    lines.join("\n")
}

/// `/context`: the latest request's input, per part, from the ledger of
/// the session's log; `window`: the model's context window, if known.
pub fn context_text(ledger: &Ledger, window: Option<u64>) -> String {
    let Some(request) =
        ledger.requests.iter().rev().find(|request| request.kind == RequestKind::Response)
    else {
        return "context: no request yet (it holds the instructions, the tools and your \
                first prompt once one is sent)"
            .to_owned();
    };
    let parts: Vec<_> = request.parts.iter().filter(|part| part.source != Source::Output).collect();
    let summed: u64 = parts.iter().map(|part| part.share.input_tokens).sum();
    let input = if summed > 0 { summed } else { request.usage.input_tokens };
    let of_window = window.filter(|window| *window > 0).map_or(String::new(), |window| {
        format!(" of {window} ({:.0}%)", input as f64 * 100.0 / window as f64)
    });
    let mut lines = vec![format!(
        "context of the latest request (turn {}): {input} tokens{of_window}",
        request.turn
    )];
    let width = parts.iter().map(|part| part.label.chars().count()).max().unwrap_or(0);
    for part in parts {
        let tokens = part.share.input_tokens;
        let share = if input > 0 { tokens as f64 * 100.0 / input as f64 } else { 0.0 };
        lines.push(format!("  {:<width$}  {tokens:>8}  {share:>5.1}%", part.label));
    }
    lines.push(
        "shares are estimated from each part's size (the provider reports only the total); \
         /compact frees the history"
            .to_owned(),
    );
    lines.join("\n")
}
