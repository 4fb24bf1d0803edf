//! Compiled rules: Codex-compatible `prefix_rule`s and `host_executable`
//! allow-lists, plus keel's `path_rule` for file tools, and matching a
//! command against them.
//!
//! Semantics (Codex's, checked by `tests/suite/policy_conformance.rs`):
//! tokens match positionally from argv[0]; a pattern element may be a list
//! of alternatives; a list in first position expands into one rule per
//! program; `decision` defaults to `allow`; every matching rule is
//! reported, in load order; `match`/`not_match` examples are checked when
//! the rule loads. Invariant: loading never panics, and every error names
//! the file, line and column of the offending argument (of the call when
//! no one argument is at fault).

use std::collections::BTreeMap;

use globset::GlobMatcher;

use super::rule_args::{ArgError, PrefixSpec, host_executable, network_rule, path_rule};
use super::syntax::{self, Arg, Call};

/// A rule's verdict, ordered by strictness (`Forbidden` is the strictest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleDecision {
    Allow,
    Prompt,
    Forbidden,
}

impl RuleDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleDecision::Allow => "allow",
            RuleDecision::Prompt => "prompt",
            RuleDecision::Forbidden => "forbidden",
        }
    }

    pub(super) fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(RuleDecision::Allow),
            "prompt" => Some(RuleDecision::Prompt),
            "forbidden" => Some(RuleDecision::Forbidden),
            _ => None,
        }
    }
}

/// Who supplied a rules file; project allows need the project's trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Compiled into keel (`rules/default.rules`).
    Builtin,
    /// `~/.keel/rules/`, `--rules FILE`, and the user's "always" answers.
    User,
    /// The repository's `.keel/rules/`.
    Project,
}

/// Where a rule was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub file: String,
    pub line: usize,
    pub origin: Origin,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Line 0: a rule translated from another agent's setting, whose
        // `file` already says where (no line of a rules file to point at).
        if self.line == 0 {
            return write!(f, "{}", self.file);
        }
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One `prefix_rule` (after first-token expansion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixRule {
    /// Per position, the accepted tokens.
    pub pattern: Vec<Vec<String>>,
    pub decision: RuleDecision,
    pub justification: Option<String>,
    pub source: Source,
    /// Matches only a command of exactly the pattern's length (an imported
    /// Claude Code `Bash(make test)`, which allows that command alone);
    /// a `prefix_rule` is never exact.
    pub exact: bool,
}

impl PrefixRule {
    fn matches(&self, argv: &[String]) -> bool {
        let length_fits = if self.exact {
            argv.len() == self.pattern.len()
        } else {
            argv.len() >= self.pattern.len()
        };
        length_fits
            && self.pattern.iter().zip(argv).all(|(alts, token)| alts.iter().any(|a| a == token))
    }
}

/// What a file tool does to a path (the tool facts' own type).
pub use crate::protocol::Access;

/// keel's `path_rule(glob = "**/.env*", access = "write", decision = "prompt")`.
#[derive(Debug, Clone)]
pub struct PathRule {
    pub glob: String,
    pub(super) matcher: GlobMatcher,
    pub access: Access,
    pub decision: RuleDecision,
    pub justification: Option<String>,
    pub source: Source,
}

impl PartialEq for PathRule {
    fn eq(&self, other: &Self) -> bool {
        self.glob == other.glob
            && self.access == other.access
            && self.decision == other.decision
            && self.justification == other.justification
            && self.source == other.source
    }
}

/// One rule that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMatch {
    pub source: Source,
    pub pattern: Vec<Vec<String>>,
    /// The first `pattern.len()` tokens of the command (or the path).
    pub matched_prefix: Vec<String>,
    pub decision: RuleDecision,
    pub justification: Option<String>,
    /// The absolute program whose basename was matched, when the
    /// host-executable fallback was used.
    pub resolved_program: Option<String>,
}

impl RuleMatch {
    /// The one JSON shape of a matched rule: `keel policy check --json`,
    /// `policy_decision` log lines and a hook rewrite's re-judgement. A
    /// pattern position with alternatives is a list, a single one a string.
    pub fn to_json(&self) -> serde_json::Value {
        let pattern: Vec<serde_json::Value> = self
            .pattern
            .iter()
            .map(|alternatives| match alternatives.as_slice() {
                [single] => serde_json::Value::from(single.clone()),
                _ => serde_json::Value::from(alternatives.clone()),
            })
            .collect();
        let mut json = serde_json::json!({
            "source": self.source.to_string(),
            "pattern": pattern,
            "matched_prefix": self.matched_prefix,
            "decision": self.decision.as_str(),
            "justification": self.justification,
        });
        if let (Some(program), Some(object)) = (&self.resolved_program, json.as_object_mut()) {
            object.insert("resolved_program".to_owned(), serde_json::Value::from(program.clone()));
        }
        json
    }
}

/// Why a rules file did not load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("{file}:{line}:{column}: syntax error: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },
    #[error(
        "{file}:{line}:{column}: unknown function `{name}`; rules files may call prefix_rule, \
         path_rule, tool_rule, web_rule, host_executable and network_rule"
    )]
    UnknownFunction { file: String, line: usize, column: usize, name: String },
    #[error("{file}:{line}:{column}: invalid rule: {reason}")]
    Invalid { file: String, line: usize, column: usize, reason: String },
    #[error(
        "{file}:{line}:{column}: the rule's `match` example {example:?} does not match its pattern"
    )]
    ExampleNotMatched { file: String, line: usize, column: usize, example: String },
    #[error(
        "{file}:{line}:{column}: the rule's `not_match` example {example:?} matches its pattern"
    )]
    ExampleMatched { file: String, line: usize, column: usize, example: String },
}

/// Every rule loaded so far, in load order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleSet {
    pub prefix_rules: Vec<PrefixRule>,
    pub path_rules: Vec<PathRule>,
    /// Program name → absolute paths allowed to use its rules.
    pub host_executables: BTreeMap<String, Vec<String>>,
    /// `tool_rule`s for MCP tools (`super::tool_rules`).
    pub tool_rules: Vec<super::tool_rules::ToolRule>,
    /// `web_rule`s for `web_fetch` hosts (`super::web_rules`).
    pub web_rules: Vec<super::web_rules::WebRule>,
}

impl RuleSet {
    /// Parses `text` (named `file` in errors) and adds its rules. On error
    /// nothing from this file is added.
    pub fn load(&mut self, file: &str, text: &str, origin: Origin) -> Result<(), RulesError> {
        let calls = syntax::parse(text).map_err(|error| RulesError::Syntax {
            file: file.to_owned(),
            line: error.line,
            column: error.column,
            message: error.message,
        })?;
        let mut staged = RuleSet::default();
        for call in calls {
            let source = Source { file: file.to_owned(), line: call.line, origin };
            staged.add_call(call, source)?;
        }
        self.extend(staged);
        Ok(())
    }

    /// Adds the rules of `text` as [`RuleSet::load`] does, each labelled
    /// `label` with no line (a setting of another agent, translated:
    /// `~/.claude/settings.json permissions.allow "Bash(make test)"`).
    pub fn load_labelled(
        &mut self,
        label: &str,
        text: &str,
        origin: Origin,
    ) -> Result<(), RulesError> {
        let mut staged = RuleSet::default();
        staged.load(label, text, origin)?;
        for source in staged.sources_mut() {
            source.line = 0;
        }
        self.extend(staged);
        Ok(())
    }

    /// Adds a rule matching exactly `argv` (see [`PrefixRule::exact`]).
    pub fn add_exact_command(
        &mut self,
        argv: Vec<String>,
        decision: RuleDecision,
        label: &str,
        origin: Origin,
    ) {
        let pattern = argv.into_iter().map(|word| vec![word]).collect();
        let source = Source { file: label.to_owned(), line: 0, origin };
        self.prefix_rules.push(PrefixRule {
            pattern,
            decision,
            justification: None,
            source,
            exact: true,
        });
    }

    fn sources_mut(&mut self) -> impl Iterator<Item = &mut Source> {
        let prefix = self.prefix_rules.iter_mut().map(|rule| &mut rule.source);
        let path = self.path_rules.iter_mut().map(|rule| &mut rule.source);
        let tool = self.tool_rules.iter_mut().map(|rule| &mut rule.source);
        let web = self.web_rules.iter_mut().map(|rule| &mut rule.source);
        prefix.chain(path).chain(tool).chain(web)
    }

    fn extend(&mut self, staged: RuleSet) {
        self.prefix_rules.extend(staged.prefix_rules);
        self.path_rules.extend(staged.path_rules);
        self.host_executables.extend(staged.host_executables);
        self.tool_rules.extend(staged.tool_rules);
        self.web_rules.extend(staged.web_rules);
    }

    /// Drops the allow rules of `file` that an "always" answer for
    /// `scope` wrote (the one-token-per-position `prefix_rule`, the
    /// `tool_rule` naming the tool): the user removed it. Others stay.
    pub fn remove_always(&mut self, file: &str, scope: &super::ApprovalScope) {
        let written_by = |source: &Source, decision: RuleDecision| {
            source.file == file && decision == RuleDecision::Allow
        };
        match scope {
            super::ApprovalScope::AlwaysPrefix(prefix) => self.prefix_rules.retain(|rule| {
                let same = rule.pattern.len() == prefix.len()
                    && rule
                        .pattern
                        .iter()
                        .zip(prefix)
                        .all(|(alts, word)| alts.as_slice() == std::slice::from_ref(word));
                !(same && written_by(&rule.source, rule.decision))
            }),
            super::ApprovalScope::AlwaysTool(tool) => self
                .tool_rules
                .retain(|rule| !(&rule.pattern == tool && written_by(&rule.source, rule.decision))),
            super::ApprovalScope::Once | super::ApprovalScope::SessionFile(_) => {}
        }
    }

    fn add_call(&mut self, call: Call, source: Source) -> Result<(), RulesError> {
        let at = (call.line, call.column);
        let located = |error: ArgError| invalid(&source, at, error);
        match call.name.as_str() {
            "prefix_rule" => self.add_prefix_rule(call.args, &source, at),
            "path_rule" => {
                let rule = path_rule(call.args, &source).map_err(located)?;
                self.path_rules.push(rule);
                Ok(())
            }
            "host_executable" => {
                let (name, paths) = host_executable(call.args).map_err(located)?;
                self.host_executables.insert(name, paths);
                Ok(())
            }
            "network_rule" => network_rule(call.args).map_err(located),
            "tool_rule" => {
                let rule = super::tool_rules::tool_rule(call.args, &source).map_err(located)?;
                self.tool_rules.push(rule);
                Ok(())
            }
            "web_rule" => {
                let rule = super::web_rules::web_rule(call.args, &source).map_err(located)?;
                self.web_rules.push(rule);
                Ok(())
            }
            _ => Err(RulesError::UnknownFunction {
                file: source.file.clone(),
                line: call.line,
                column: call.column,
                name: call.name,
            }),
        }
    }

    fn add_prefix_rule(
        &mut self,
        args: Vec<Arg>,
        source: &Source,
        call_at: (usize, usize),
    ) -> Result<(), RulesError> {
        let spec = PrefixSpec::from_args(args).map_err(|error| invalid(source, call_at, error))?;
        let rules: Vec<PrefixRule> = spec.pattern[0]
            .iter()
            .map(|program| {
                let mut pattern = spec.pattern.clone();
                pattern[0] = vec![program.clone()];
                PrefixRule {
                    pattern,
                    decision: spec.decision,
                    justification: spec.justification.clone(),
                    source: source.clone(),
                    exact: false,
                }
            })
            .collect();
        for (example, should_match, (line, column)) in spec.examples {
            let matched = rules.iter().any(|rule| rule.matches(&example));
            let shown = example.join(" ");
            let file = source.file.clone();
            match (should_match, matched) {
                (true, false) => {
                    return Err(RulesError::ExampleNotMatched {
                        file,
                        line,
                        column,
                        example: shown,
                    });
                }
                (false, true) => {
                    return Err(RulesError::ExampleMatched { file, line, column, example: shown });
                }
                (true, true) | (false, false) => {}
            }
        }
        self.prefix_rules.extend(rules);
        Ok(())
    }

    /// Every prefix rule matching `argv`, in load order. With
    /// `resolve_host` an absolute program that matches no rule exactly
    /// falls back to the rules for its basename, if its `host_executable`
    /// list (when there is one) names the path.
    pub fn matches(&self, argv: &[String], resolve_host: bool) -> Vec<RuleMatch> {
        let exact = self.matches_exact(argv, None);
        if !exact.is_empty() || !resolve_host {
            return exact;
        }
        let Some(program) = argv.first().filter(|p| p.starts_with('/')) else { return exact };
        let Some(base) = program.rsplit('/').next().filter(|b| !b.is_empty()) else {
            return exact;
        };
        let listed = self.host_executables.get(base);
        if listed.is_some_and(|paths| !paths.iter().any(|path| path == program)) {
            return exact;
        }
        let mut renamed = argv.to_vec();
        renamed[0] = base.to_owned();
        self.matches_exact(&renamed, Some(program))
    }

    fn matches_exact(&self, argv: &[String], resolved: Option<&String>) -> Vec<RuleMatch> {
        self.prefix_rules
            .iter()
            .filter(|rule| rule.matches(argv))
            .map(|rule| RuleMatch {
                source: rule.source.clone(),
                pattern: rule.pattern.clone(),
                matched_prefix: argv[..rule.pattern.len()].to_vec(),
                decision: rule.decision,
                justification: rule.justification.clone(),
                resolved_program: resolved.cloned(),
            })
            .collect()
    }

    /// Every path rule for `access` whose glob matches `path` (relative to
    /// the workspace root, `/`-separated).
    pub fn path_matches(&self, path: &str, access: Access) -> Vec<RuleMatch> {
        self.path_rules
            .iter()
            .filter(|rule| rule.access == access && rule.matcher.is_match(path))
            .map(|rule| RuleMatch {
                source: rule.source.clone(),
                pattern: vec![vec![rule.glob.clone()]],
                matched_prefix: vec![path.to_owned()],
                decision: rule.decision,
                justification: rule.justification.clone(),
                resolved_program: None,
            })
            .collect()
    }
}

/// An invalid rule, at its faulty argument or else at the call.
fn invalid(source: &Source, call_at: (usize, usize), error: ArgError) -> RulesError {
    let (line, column) = error.at.unwrap_or(call_at);
    RulesError::Invalid { file: source.file.clone(), line, column, reason: error.message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn failing_match_example_names_file_and_line() {
        let mut rules = RuleSet::default();
        let text = "\n\nprefix_rule(pattern = [\"git\", \"status\"], match = [\"git log\"])";
        let error = rules.load("x.rules", text, Origin::User).unwrap_err();
        assert!(error.to_string().starts_with("x.rules:3:"), "{error}");
        assert!(rules.prefix_rules.is_empty());
    }

    #[test]
    fn path_rules_match_globs_per_access() {
        let mut rules = RuleSet::default();
        rules
            .load("p.rules", "path_rule(glob = \"**/.env*\", access = \"write\")", Origin::User)
            .unwrap();
        assert_eq!(rules.path_matches("a/.env.local", Access::Write).len(), 1);
        assert!(rules.path_matches("a/.env.local", Access::Read).is_empty());
        assert!(rules.path_matches("src/main.rs", Access::Write).is_empty());
    }

    #[test]
    fn errors_point_at_the_argument_at_fault() {
        let text = "prefix_rule(\n    pattern = [\"ls\"],\n    decision = \"nope\",\n)\n";
        let error = RuleSet::default().load("r.rules", text, Origin::User).unwrap_err();
        assert!(
            error.to_string().starts_with("r.rules:3:5: invalid rule: unknown decision"),
            "{error}"
        );
        let text = "prefix_rule(pattern = [\"git\"],\n  not_match = [\"git log\"])";
        let error = RuleSet::default().load("r.rules", text, Origin::User).unwrap_err();
        assert!(error.to_string().starts_with("r.rules:2:3: the rule's `not_match`"), "{error}");
        // Nothing to point at but the call.
        let error =
            RuleSet::default().load("r.rules", "\n  prefix_rule()", Origin::User).unwrap_err();
        assert!(
            error.to_string().starts_with("r.rules:2:3: invalid rule: prefix_rule needs"),
            "{error}"
        );
        let text = "path_rule(\r  glob = \"[\",\r)";
        let error = RuleSet::default().load("r.rules", text, Origin::User).unwrap_err();
        assert!(error.to_string().starts_with("r.rules:2:3: invalid rule: bad glob"), "{error}");
    }

    #[test]
    fn unknown_function_is_an_error() {
        let error = RuleSet::default().load("f", "define_program(x = \"y\")", Origin::User);
        assert!(matches!(error, Err(RulesError::UnknownFunction { line: 1, .. })));
        assert!(RuleSet::default().matches(&argv("ls"), true).is_empty());
    }
}
