//! What a session runs with, for the TUI's `/permissions`, `/agents`,
//! `/hooks` and `/memory`: the rules in force with where each was written
//! (`file:line`) and the "always" answers of this session, the agent
//! types it may start, the hooks it runs and the memory notes it lists to
//! the model, each with its source.
//!
//! Invariants: plain data read from the session's own state (the loop's
//! policy and allowlist, the catalog, the settings' hooks, the memory the
//! tools load; the "always" lines of `.keel/rules/local.rules`, read
//! again each time), so it never says more than the session uses;
//! built-in rules are counted, not listed (keel's shipped defaults).

use crate::config::agents::AgentSource;
use crate::config::rules::{local_always_rules, local_rules_path};
use crate::hooks::HookSource;
use crate::policy::ApprovalScope;
use crate::policy::rules::{Origin, Source};

use super::Session;

/// One rule in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleLine {
    /// `allow`, `prompt`, `forbidden`.
    pub decision: String,
    /// What it matches: a command prefix, `path GLOB (access)`, `tool
    /// NAME`, `web HOST`.
    pub pattern: String,
    /// `file:line`.
    pub at: String,
    /// `user` or `project`.
    pub origin: String,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookLine {
    pub event: String,
    pub matcher: Option<String>,
    pub command: String,
    /// Its source's name (a file).
    pub source: String,
    /// Supplied by the repository (runs once the project is trusted).
    pub project: bool,
}

/// One "always" answer, as `/permissions` lists it (and removes it:
/// `Session::remove_always`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysAnswer {
    /// What it allows: a command prefix, `write PATH`, `tool NAME`.
    pub text: String,
    /// `file:line` of its rule in the project's `local.rules`; `None`: this
    /// session's only (gone when it ends).
    pub at: Option<String>,
    /// Given in this session (in its allowlist).
    pub this_session: bool,
    pub scope: ApprovalScope,
}

impl AlwaysAnswer {
    fn new(scope: ApprovalScope, at: Option<String>, this_session: bool) -> Self {
        let text = match &scope {
            ApprovalScope::AlwaysPrefix(prefix) => prefix.join(" "),
            ApprovalScope::SessionFile(path) => format!("write {path}"),
            ApprovalScope::AlwaysTool(tool) => format!("tool {tool}"),
            ApprovalScope::Once => String::new(),
        };
        Self { text, at, this_session, scope }
    }
}

/// What a session runs with (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InForce {
    pub rules: Vec<RuleLine>,
    /// keel's shipped rules in force (not listed).
    pub builtin_rules: usize,
    /// The "always" answers in force: those kept in `.keel/rules/local.rules`
    /// (by line), then this session's others (files, prefixes not kept).
    pub always: Vec<AlwaysAnswer>,
    /// (name, description, source).
    pub agents: Vec<(String, String, String)>,
    pub hooks: Vec<HookLine>,
    /// (name, description, path).
    pub memory: Vec<(String, String, String)>,
}

impl Session {
    /// What this session runs with now.
    pub fn in_force(&self) -> InForce {
        let mut found = InForce::default();
        let rules = &self.state.config().policy.rules;
        let mut add = |decision: &str, pattern: String, source: &Source| {
            if source.origin == Origin::Builtin {
                found.builtin_rules += 1;
                return;
            }
            let origin = if source.origin == Origin::Project { "project" } else { "user" };
            found.rules.push(RuleLine {
                decision: decision.to_owned(),
                pattern,
                at: format!("{}:{}", source.file, source.line),
                origin: origin.to_owned(),
            });
        };
        for rule in &rules.prefix_rules {
            let words: Vec<String> = rule.pattern.iter().map(|alts| alts.join("|")).collect();
            add(rule.decision.as_str(), words.join(" "), &rule.source);
        }
        for rule in &rules.path_rules {
            let pattern = format!("path {} ({:?})", rule.glob, rule.access).to_lowercase();
            add(rule.decision.as_str(), pattern, &rule.source);
        }
        for rule in &rules.tool_rules {
            add(rule.decision.as_str(), format!("tool {}", rule.pattern), &rule.source);
        }
        for rule in &rules.web_rules {
            let host = match &rule.pattern {
                crate::policy::network::DomainPattern::Exact(host) => host.clone(),
                crate::policy::network::DomainPattern::Suffix(suffix) => format!("*.{suffix}"),
            };
            add(rule.decision.as_str(), format!("web {host}"), &rule.source);
        }
        found.always = self.always_answers();
        for agent in &self.subagents.catalog.agents {
            let source = match &agent.source {
                AgentSource::BuiltIn => "built in".to_owned(),
                AgentSource::File(path) => path.display().to_string(),
            };
            found.agents.push((agent.name.clone(), agent.description.clone(), source));
        }
        for config in &self.settings.hooks {
            let project = matches!(config.source, HookSource::Project { .. });
            for (event, groups) in &config.events {
                for (_, group) in groups {
                    for hook in &group.hooks {
                        found.hooks.push(HookLine {
                            event: event.name().to_owned(),
                            matcher: group.matcher.clone(),
                            command: hook.command.clone(),
                            source: config.source.name().to_owned(),
                            project,
                        });
                    }
                }
            }
        }
        for note in self.tools.memory().iter() {
            let path = note.path.display().to_string();
            found.memory.push((note.meta.name.clone(), note.meta.description.clone(), path));
        }
        found
    }

    /// The "always" answers kept in `local.rules` (an unreadable file lists
    /// none of its own), then the allowlist's others.
    fn always_answers(&self) -> Vec<AlwaysAnswer> {
        let allowlist = self.state.allowlist();
        let path = local_rules_path(&self.workspace_root);
        let kept = local_always_rules(&self.workspace_root).unwrap_or_default();
        let mut answers: Vec<AlwaysAnswer> = kept
            .into_iter()
            .map(|(line, scope)| {
                let at = format!("{}:{line}", path.display());
                AlwaysAnswer::new(scope, Some(at), false)
            })
            .collect();
        let given = allowlist
            .prefixes
            .iter()
            .cloned()
            .map(ApprovalScope::AlwaysPrefix)
            .chain(allowlist.files.iter().cloned().map(ApprovalScope::SessionFile))
            .chain(allowlist.tools.iter().cloned().map(ApprovalScope::AlwaysTool));
        for scope in given {
            match answers.iter_mut().find(|answer| answer.scope == scope) {
                Some(answer) => answer.this_session = true,
                None => answers.push(AlwaysAnswer::new(scope, None, true)),
            }
        }
        answers
    }
}
