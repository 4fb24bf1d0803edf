//! Hook configuration: Claude Code's `hooks` shape (event → groups of
//! `{matcher, hooks: [{type, command, if?, timeout?}]}`), read from keel's
//! TOML or from a `.claude/settings.json`, and the matching of a group's
//! `matcher` and a hook's `if` rule against one tool call.
//!
//! Invariant: what keel cannot run is skipped, never fatal, and said:
//! an event keel does not fire (Claude Code's newer `PermissionRequest`,
//! `Setup`, `WorktreeCreate`, …) and a hook whose `type` is not `command`
//! (`prompt`, `agent`, `http`) land in [`HooksConfig::skipped`], which the
//! loader turns into one warning per source. In keel's own TOML a name that
//! is no Claude Code event either stays an error: it is a typo, and a guard
//! hook dropped by a typo would be worse than a refusal to start.

use std::collections::BTreeMap;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;

use super::{HookConfigError, HookEvent};
use crate::protocol::ToolInfo;
use crate::protocol::tool_facts;
use crate::sandbox::wildcard;

/// Default time a hook may run before its process group is killed.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The Claude Code name of a keel tool, if it has one (matchers and `if`
/// rules accept either name; the table is `protocol::tool_facts`).
pub fn claude_alias(tool: &str) -> Option<&'static str> {
    tool_facts::builtin(tool).and_then(ToolInfo::claude_name)
}

fn keel_name(tool: &str) -> &str {
    tool_facts::by_claude_name(tool).map_or(tool, |info| info.name)
}

/// Where a configuration came from; decides the tool naming its commands
/// see and whether it needs a trusted project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookSource {
    /// `~/.keel/config.toml` or `~/.claude/settings.json`: the user's own.
    User { name: String, claude: bool },
    /// Supplied by the repository: runs only once the project is trusted.
    Project { name: String, claude: bool },
}

impl HookSource {
    pub fn name(&self) -> &str {
        match self {
            HookSource::User { name, .. } | HookSource::Project { name, .. } => name,
        }
    }

    pub fn is_claude(&self) -> bool {
        match self {
            HookSource::User { claude, .. } | HookSource::Project { claude, .. } => *claude,
        }
    }
}

/// One command hook.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CommandHook {
    #[serde(rename = "type", default = "command_type")]
    pub kind: String,
    pub command: String,
    /// Permission-rule filter such as `Bash(git push *--force*)`.
    #[serde(rename = "if", default)]
    pub if_rule: Option<String>,
    /// Seconds.
    #[serde(default)]
    pub timeout: Option<u64>,
}

fn command_type() -> String {
    "command".to_owned()
}

impl CommandHook {
    pub fn timeout(&self) -> Duration {
        self.timeout.map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_secs)
    }
}

/// A matcher and the hooks it guards.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HookGroup {
    #[serde(default)]
    pub matcher: Option<String>,
    pub hooks: Vec<CommandHook>,
}

/// A group as written: its hooks not yet sorted into the command hooks
/// keel runs and the kinds it skips.
#[derive(Deserialize)]
struct RawGroup {
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    hooks: Vec<serde_json::Value>,
}

/// Events Claude Code fires that keel does not: skipped with a warning in
/// any source (keel's TOML included), not refused as typos.
pub const CLAUDE_ONLY_EVENTS: [&str; 15] = [
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "WorktreeCreate",
    "WorktreeRemove",
    "TeammateIdle",
    "TaskCompleted",
    "ConfigChange",
    "InstructionsLoaded",
    "PostCompact",
    "PostToolBatch",
    "StopFailure",
    "Elicitation",
    "ElicitationResult",
    "UserPromptExpansion",
];

/// What a source configured that keel does not run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Event name → how many hooks it held.
    pub events: BTreeMap<String, usize>,
    /// Hook `type` → how many hooks of it.
    pub types: BTreeMap<String, usize>,
}

impl Skipped {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.types.is_empty()
    }

    /// One line naming everything skipped, e.g. "events `Setup` (1 hook);
    /// hook types `prompt` (2 hooks)".
    pub fn describe(&self) -> String {
        let list = |map: &BTreeMap<String, usize>| {
            map.iter()
                .map(|(name, n)| format!("`{name}` ({n} hook{})", if *n == 1 { "" } else { "s" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.events.is_empty() {
            parts.push(format!("events keel does not fire: {}", list(&self.events)));
        }
        if !self.types.is_empty() {
            parts.push(format!("hook types keel does not run: {}", list(&self.types)));
        }
        parts.join("; ")
    }
}

/// Parsed hooks of one source.
#[derive(Debug, Clone)]
pub struct HooksConfig {
    pub source: HookSource,
    pub events: BTreeMap<HookEvent, Vec<(Option<Regex>, HookGroup)>>,
    /// What was configured but is not run (said once, at start).
    pub skipped: Skipped,
}

impl HooksConfig {
    /// Reads the `hooks` object (Claude's shape) of a settings file or the
    /// `[hooks]` table of keel's config, both already parsed to JSON.
    pub fn from_json(
        source: HookSource,
        hooks: &serde_json::Value,
    ) -> Result<Self, HookConfigError> {
        let parse_error = |message: String| HookConfigError::Parse {
            source_name: source.name().to_owned(),
            message,
        };
        let raw: BTreeMap<String, Vec<RawGroup>> =
            serde_json::from_value(hooks.clone()).map_err(|e| parse_error(e.to_string()))?;
        let mut events = BTreeMap::new();
        let mut skipped = Skipped::default();
        for (name, groups) in raw {
            let Some(event) = HookEvent::from_name(&name) else {
                if !source.is_claude() && !CLAUDE_ONLY_EVENTS.contains(&name.as_str()) {
                    let valid: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
                    return Err(parse_error(format!(
                        "unknown hook event `{name}`; use one of: {}",
                        valid.join(", ")
                    )));
                }
                let count = groups.iter().map(|group| group.hooks.len()).sum();
                skipped.events.insert(name, count);
                continue;
            };
            let mut compiled = Vec::with_capacity(groups.len());
            for RawGroup { matcher, hooks } in groups {
                let regex = compile_matcher(&source, matcher.as_deref())?;
                let mut commands = Vec::with_capacity(hooks.len());
                for hook in hooks {
                    let kind = hook.get("type").and_then(serde_json::Value::as_str);
                    match kind {
                        None | Some("command") => commands.push(
                            serde_json::from_value::<CommandHook>(hook)
                                .map_err(|e| parse_error(format!("`{name}` hook: {e}")))?,
                        ),
                        Some(other) => *skipped.types.entry(other.to_owned()).or_default() += 1,
                    }
                }
                compiled.push((regex, HookGroup { matcher, hooks: commands }));
            }
            events.insert(event, compiled);
        }
        Ok(Self { source, events, skipped })
    }

    /// The hooks to run for `event`, where `subject` is the tool name for
    /// tool events and the matcher target for others (e.g. the
    /// SessionStart source), and `primary` the argument `if` rules test.
    pub fn matching<'a>(
        &'a self,
        event: HookEvent,
        subject: Option<&str>,
        primary: Option<&str>,
    ) -> Vec<&'a CommandHook> {
        let Some(groups) = self.events.get(&event) else { return Vec::new() };
        groups
            .iter()
            .filter(|(regex, _)| matcher_accepts(regex.as_ref(), subject))
            .flat_map(|(_, group)| group.hooks.iter())
            .filter(|hook| hook.kind == "command")
            .filter(|hook| match &hook.if_rule {
                None => true,
                Some(rule) => {
                    IfRule::parse(rule).is_some_and(|rule| rule.accepts(subject, primary))
                }
            })
            .collect()
    }
}

fn compile_matcher(
    source: &HookSource,
    matcher: Option<&str>,
) -> Result<Option<Regex>, HookConfigError> {
    match matcher.map(str::trim) {
        None | Some("") | Some("*") => Ok(None),
        Some(pattern) => Regex::new(&format!("^(?:{pattern})$")).map(Some).map_err(|error| {
            HookConfigError::Matcher {
                source_name: source.name().to_owned(),
                matcher: pattern.to_owned(),
                message: error.to_string(),
            }
        }),
    }
}

/// A matcher accepts a tool by its keel name or its Claude alias.
fn matcher_accepts(regex: Option<&Regex>, subject: Option<&str>) -> bool {
    let Some(regex) = regex else { return true };
    let Some(subject) = subject else { return false };
    let keel = keel_name(subject);
    regex.is_match(subject)
        || regex.is_match(keel)
        || claude_alias(keel).is_some_and(|c| regex.is_match(c))
}

/// A permission-rule filter `Tool(pattern)`: the tool (either naming) and a
/// `*` wildcard pattern over the call's primary argument (the command for
/// shell, the path for file tools). `Tool` alone matches any call of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfRule {
    pub tool: String,
    pub pattern: Option<String>,
}

impl IfRule {
    pub fn parse(rule: &str) -> Option<Self> {
        let rule = rule.trim();
        match rule.split_once('(') {
            None => Some(Self { tool: rule.to_owned(), pattern: None }),
            Some((tool, rest)) => {
                let pattern = rest.strip_suffix(')')?;
                Some(Self { tool: tool.trim().to_owned(), pattern: Some(pattern.to_owned()) })
            }
        }
    }

    pub fn accepts(&self, tool: Option<&str>, primary: Option<&str>) -> bool {
        let Some(tool) = tool else { return false };
        if keel_name(&self.tool) != keel_name(tool) {
            return false;
        }
        match (&self.pattern, primary) {
            (None, _) => true,
            (Some(pattern), Some(value)) => wildcard(pattern, value),
            (Some(_), None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_rules_accept_either_tool_naming() {
        let rule = IfRule::parse("Write(.env*)").unwrap();
        assert!(rule.accepts(Some("write_file"), Some(".env")));
        assert!(rule.accepts(Some("Write"), Some(".env.prod")));
        assert!(!rule.accepts(Some("edit_file"), Some(".env")));
        assert_eq!(IfRule::parse("Bash(unclosed"), None);
    }

    #[test]
    fn matchers_are_anchored_alternations_over_both_names() {
        let hooks = serde_json::json!({"PreToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "a"}]},
            {"matcher": "shell", "hooks": [{"type": "command", "command": "b"}]},
            {"hooks": [{"type": "command", "command": "c"}]}
        ]});
        let source = HookSource::User { name: "test".into(), claude: true };
        let config = HooksConfig::from_json(source, &hooks).unwrap();
        let commands = |tool: &str| -> Vec<String> {
            config
                .matching(HookEvent::PreToolUse, Some(tool), None)
                .iter()
                .map(|h| h.command.clone())
                .collect()
        };
        assert_eq!(commands("write_file"), ["a", "c"]);
        assert_eq!(commands("Bash"), ["b", "c"]);
        assert_eq!(commands("read_file"), ["c"]);
    }

    #[test]
    fn unknown_event_and_bad_matcher_are_clear_errors() {
        let source = || HookSource::User { name: "cfg".into(), claude: false };
        let bad_event = serde_json::json!({"BeforeLunch": []});
        let message = HooksConfig::from_json(source(), &bad_event).unwrap_err().to_string();
        assert!(message.contains("BeforeLunch"), "{message}");
        let bad_matcher = serde_json::json!({"PreToolUse": [{"matcher": "(", "hooks": []}]});
        let message = HooksConfig::from_json(source(), &bad_matcher).unwrap_err().to_string();
        assert!(message.contains("matcher"), "{message}");
    }

    /// A published hook file with `WorktreeCreate`/`WorktreeRemove`
    /// (davila7/claude-code-templates) and Claude Code's documented
    /// `prompt`/`agent` hooks: skipped and named, the command hooks kept.
    #[test]
    fn newer_claude_events_and_prompt_or_agent_hooks_are_skipped_and_named() {
        let text = include_str!("../../tests/fixtures/claude/hooks/worktree-ghostty.json");
        let published: serde_json::Value = serde_json::from_str(text).unwrap();
        let claude = || HookSource::Project { name: ".claude/settings.json".into(), claude: true };
        let config = HooksConfig::from_json(claude(), &published["hooks"]).unwrap();
        assert!(config.events.is_empty());
        let skipped = config.skipped.describe();
        assert_eq!(
            skipped,
            "events keel does not fire: `WorktreeCreate` (1 hook), `WorktreeRemove` (1 hook)"
        );
        let mixed = serde_json::json!({
            "PermissionRequest": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}],
            "Stop": [{"hooks": [
                {"type": "prompt", "prompt": "Is the work complete? $ARGUMENTS"},
                {"type": "agent", "prompt": "Verify the tests pass", "timeout": 120},
                {"type": "command", "command": "./check.sh"}
            ]}]
        });
        let config = HooksConfig::from_json(claude(), &mixed).unwrap();
        assert_eq!(
            config.skipped.describe(),
            "events keel does not fire: `PermissionRequest` (1 hook); \
             hook types keel does not run: `agent` (1 hook), `prompt` (1 hook)"
        );
        let commands: Vec<&str> = config
            .matching(HookEvent::Stop, None, None)
            .iter()
            .map(|hook| hook.command.as_str())
            .collect();
        assert_eq!(commands, ["./check.sh"], "command hooks still run");
        // keel's own TOML: a Claude-only event is skipped, a typo refused.
        let keel = || HookSource::User { name: "config.toml".into(), claude: false };
        let setup = serde_json::json!({"Setup": [{"hooks": [{"command": "true"}]}]});
        assert!(
            HooksConfig::from_json(keel(), &setup).unwrap().skipped.events.contains_key("Setup")
        );
        let typo = serde_json::json!({"PreToolUs": []});
        assert!(HooksConfig::from_json(keel(), &typo).is_err());
    }
}
