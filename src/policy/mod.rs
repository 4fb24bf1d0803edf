//! Policy: decides, for every tool call, whether it runs, asks, or is
//! forbidden, and explains why. Pure: no I/O, no clock. Reading rules files
//! and writing "always" rules is `config::rules`' job; this module parses
//! their text.
//!
//! Decision order (DESIGN §4, see [`engine`]): hard deny → project trust →
//! rules (strictest of all matching rules wins) → mode → session allowlist
//! → default (ask).
//!
//! Files: [`syntax`] (the Starlark subset of `.rules`), [`rules`] (compiled
//! rules and matching), [`shell`] + [`command`] + [`unwrap`] +
//! [`wrappers`] + [`git`] + [`interp`] (what a bash script runs, wrappers
//! stripped, nested shells, git's and interpreters' commands read),
//! [`words`] (quotes, globs, braces), [`builtin`] + [`destroy`] (hard deny,
//! destruction by meaning), [`readonly`] (the read-only list), [`secrets`]
//! (secret file names), [`paths`] + [`links`] (home, workspace, protected
//! and critical paths, symlinks as facts), [`workdir`] (`cd` through a
//! script), [`amend`] ("allow always"), [`engine`] (the order),
//! [`script_verdict`] (a shell script's verdict), [`patch`] (`apply_patch`),
//! [`facts`] (the paths a call names, for the caller to resolve),
//! [`tool_rules`] (MCP tools, `tool_rule`), [`web_rules`] (`web_fetch`
//! hosts, `web_rule`), [`egress`] (what may send data out after untrusted
//! content entered the conversation), [`network`] (`[sandbox] network`
//! and `allowed_domains`: what keel's proxy and `policy check --net` judge).

pub mod amend;
pub mod builtin;
pub mod command;
pub mod content_reads;
pub mod destroy;
pub mod egress;
pub mod engine;
pub mod facts;
pub mod git;
pub mod git_write;
pub mod interp;
pub mod links;
pub mod network;
pub mod patch;
pub mod paths;
pub mod program_source;
pub mod readonly;
mod rule_args;
pub mod rules;
pub mod script_verdict;
pub mod secret_places;
pub mod secrets;
pub mod shell;
pub mod syntax;
pub mod tool_rules;
pub mod unwrap;
pub mod web_rules;
pub mod words;
pub mod workdir;
pub mod wrappers;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use crate::protocol::ApprovalMode;
pub use engine::{CallFacts, Policy, Verdict, evaluate, evaluate_described, evaluate_script};
pub use facts::path_queries;
pub use links::PathLinks;
pub use paths::{PathContext, protected_paths_in_words};
pub use rules::{Access, Origin, RuleDecision, RuleMatch, RuleSet, RulesError, Source};

/// The built-in rules, compiled in.
pub const DEFAULT_RULES: &str = include_str!("../../rules/default.rules");
/// How the built-in rules are named in matches and errors.
pub const DEFAULT_RULES_NAME: &str = "<builtin>/default.rules";

/// The verdict on one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allow,
    /// Run only if the user approves.
    Prompt {
        reason: String,
    },
    Forbidden {
        reason: String,
    },
}

/// How far a "yes" reaches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ApprovalScope {
    /// This call only.
    #[default]
    Once,
    /// Every command starting with this prefix, now and (persisted as a
    /// rule by the driver) in later sessions.
    AlwaysPrefix(Vec<String>),
    /// Writes to this workspace-relative file, for this session.
    SessionFile(String),
    /// Every call of this MCP tool, now and (persisted as a `tool_rule` by
    /// the driver) in later sessions.
    AlwaysTool(String),
}

/// What the user allowed for this session ("always" answers and per-file
/// edit approvals). "Always" prefixes are also persisted as rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    pub prefixes: BTreeSet<Vec<String>>,
    /// Workspace-relative paths file tools may write without asking.
    pub files: BTreeSet<String>,
    /// MCP tools that run without asking: a name, or a whole server's
    /// tools (`mcp__docs__*`, a command's `allowed-tools: mcp__docs`).
    pub tools: BTreeSet<String>,
    /// Commands allowed exactly as written, no more words (a command's
    /// `allowed-tools: Bash(git status)`).
    pub commands: BTreeSet<Vec<String>>,
}

impl Allowlist {
    /// Remembers an approval's scope.
    pub fn extend(&mut self, scope: ApprovalScope) {
        match scope {
            ApprovalScope::Once => {}
            ApprovalScope::AlwaysPrefix(prefix) => {
                self.prefixes.insert(prefix);
            }
            ApprovalScope::SessionFile(path) => {
                self.files.insert(path);
            }
            ApprovalScope::AlwaysTool(tool) => {
                self.tools.insert(tool);
            }
        }
    }

    /// Forgets an approval's scope (the user removed an "always" answer);
    /// whether it was there.
    pub fn remove(&mut self, scope: &ApprovalScope) -> bool {
        match scope {
            ApprovalScope::Once => false,
            ApprovalScope::AlwaysPrefix(prefix) => self.prefixes.remove(prefix),
            ApprovalScope::SessionFile(path) => self.files.remove(path),
            ApprovalScope::AlwaysTool(tool) => self.tools.remove(tool),
        }
    }

    /// Whether an allowed prefix or exact command covers `argv`.
    pub fn allows(&self, argv: &[String]) -> bool {
        self.prefixes.iter().any(|prefix| argv.starts_with(prefix)) || self.commands.contains(argv)
    }

    /// Whether the MCP tool `tool` runs without asking.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.tools.iter().any(|allowed| crate::protocol::entry_names(allowed, tool))
    }

    /// This allowlist with `other`'s entries added (a turn's pre-approvals
    /// on top of the session's answers).
    pub fn joined(&self, other: &Allowlist) -> Allowlist {
        let mut joined = self.clone();
        joined.prefixes.extend(other.prefixes.iter().cloned());
        joined.files.extend(other.files.iter().cloned());
        joined.tools.extend(other.tools.iter().cloned());
        joined.commands.extend(other.commands.iter().cloned());
        joined
    }
}

/// The built-in rules as a [`RuleSet`].
pub fn default_rules() -> Result<RuleSet, RulesError> {
    let mut rules = RuleSet::default();
    rules.load(DEFAULT_RULES_NAME, DEFAULT_RULES, Origin::Builtin)?;
    Ok(rules)
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod unseen_code_tests;
