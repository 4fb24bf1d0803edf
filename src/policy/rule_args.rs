//! Checking the keyword arguments of one call in a rules file and turning
//! them into rule parts: `prefix_rule` patterns, decisions, justifications
//! and `match`/`not_match` examples; `path_rule`; `host_executable`;
//! `network_rule` (validated only). Every error is an [`ArgError`]: a
//! sentence, and the argument it is about (its name's line and column),
//! which [`super::rules::RulesError::Invalid`] prefixes with
//! `file:line:column: invalid rule:` (the call's position when no one
//! argument is at fault).

use globset::Glob;

use super::rules::{Access, PathRule, RuleDecision, Source};
use super::syntax::{Arg, Value};

/// Why a call's arguments are not a rule, and which argument (line and
/// column of its name) when one is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ArgError {
    pub(super) message: String,
    pub(super) at: Option<(usize, usize)>,
}

impl ArgError {
    fn at(arg: (usize, usize)) -> impl FnOnce(String) -> Self {
        move |message| Self { message, at: Some(arg) }
    }
}

impl From<String> for ArgError {
    fn from(message: String) -> Self {
        Self { message, at: None }
    }
}

impl From<&str> for ArgError {
    fn from(message: &str) -> Self {
        Self::from(message.to_owned())
    }
}

fn position(arg: &Arg) -> (usize, usize) {
    (arg.line, arg.column)
}

/// The arguments of one `prefix_rule`, checked.
pub(super) struct PrefixSpec {
    pub(super) pattern: Vec<Vec<String>>,
    pub(super) decision: RuleDecision,
    pub(super) justification: Option<String>,
    /// Examples, whether each must match, and where its argument is.
    pub(super) examples: Vec<(Vec<String>, bool, (usize, usize))>,
}

impl PrefixSpec {
    pub(super) fn from_args(args: Vec<Arg>) -> Result<Self, ArgError> {
        let mut spec = PrefixSpec {
            pattern: Vec::new(),
            decision: RuleDecision::Allow,
            justification: None,
            examples: Vec::new(),
        };
        for arg in args {
            let at = position(&arg);
            let located = ArgError::at(at);
            match arg.name.as_str() {
                "pattern" => spec.pattern = pattern(arg.value).map_err(located)?,
                "decision" => spec.decision = decision(arg.value).map_err(located)?,
                "justification" => {
                    spec.justification = Some(justification(arg.value).map_err(located)?);
                }
                "match" | "not_match" => {
                    let must = arg.name == "match";
                    for example in examples(arg.value, &arg.name).map_err(located)? {
                        spec.examples.push((example, must, at));
                    }
                }
                other => return Err(located(format!("prefix_rule has no argument `{other}`"))),
            }
        }
        if spec.pattern.is_empty() {
            return Err("prefix_rule needs a non-empty `pattern`".into());
        }
        Ok(spec)
    }
}

fn pattern(value: Value) -> Result<Vec<Vec<String>>, String> {
    let Value::List(items) = value else { return Err("pattern must be a list".to_owned()) };
    items
        .into_iter()
        .map(|item| match item {
            Value::Str(token) => Ok(vec![token]),
            Value::List(alternatives) => {
                let alternatives = strings(alternatives, "pattern alternatives")?;
                if alternatives.is_empty() {
                    Err("a pattern's list of alternatives cannot be empty".to_owned())
                } else {
                    Ok(alternatives)
                }
            }
            Value::Bool(_) => {
                Err("pattern elements must be strings or lists of strings".to_owned())
            }
        })
        .collect()
}

fn strings(values: Vec<Value>, what: &str) -> Result<Vec<String>, String> {
    values
        .into_iter()
        .map(|value| match value {
            Value::Str(text) => Ok(text),
            Value::List(_) | Value::Bool(_) => Err(format!("{what} must be strings")),
        })
        .collect()
}

pub(super) fn string(value: Value, what: &str) -> Result<String, String> {
    match value {
        Value::Str(text) => Ok(text),
        Value::List(_) | Value::Bool(_) => Err(format!("{what} must be a string")),
    }
}

pub(super) fn decision(value: Value) -> Result<RuleDecision, String> {
    let text = string(value, "decision")?;
    RuleDecision::parse(&text).ok_or_else(|| {
        format!("unknown decision {text:?}; use \"allow\", \"prompt\" or \"forbidden\"")
    })
}

pub(super) fn justification(value: Value) -> Result<String, String> {
    let text = string(value, "justification")?;
    if text.trim().is_empty() {
        return Err("justification cannot be empty".to_owned());
    }
    Ok(text.trim().to_owned())
}

/// `match`/`not_match`: argv lists or strings split with shell quoting.
fn examples(value: Value, name: &str) -> Result<Vec<Vec<String>>, String> {
    let Value::List(items) = value else { return Err(format!("{name} must be a list")) };
    items
        .into_iter()
        .map(|item| match item {
            Value::List(tokens) => strings(tokens, name),
            Value::Str(line) => {
                shlex::split(&line).ok_or_else(|| format!("cannot split {name} example {line:?}"))
            }
            Value::Bool(_) => Err(format!("{name} examples must be lists or strings")),
        })
        .collect()
}

pub(super) fn path_rule(args: Vec<Arg>, source: &Source) -> Result<PathRule, ArgError> {
    let (mut glob, mut access, mut rule_decision, mut why) =
        (None, Access::Write, RuleDecision::Prompt, None);
    for arg in args {
        let at = position(&arg);
        let located = ArgError::at(at);
        match arg.name.as_str() {
            "glob" => {
                let text = string(arg.value, "glob").map_err(located)?;
                let matcher = Glob::new(&text)
                    .map_err(|error| ArgError::at(at)(format!("bad glob {text:?}: {error}")))?;
                glob = Some((text, matcher));
            }
            "access" => {
                access = match string(arg.value, "access").map_err(ArgError::at(at))?.as_str() {
                    "read" => Access::Read,
                    "write" => Access::Write,
                    other => {
                        return Err(located(format!(
                            "unknown access {other:?}; use \"read\" or \"write\""
                        )));
                    }
                }
            }
            "decision" => rule_decision = decision(arg.value).map_err(located)?,
            "justification" => why = Some(justification(arg.value).map_err(located)?),
            other => return Err(located(format!("path_rule has no argument `{other}`"))),
        }
    }
    let (glob, matcher) = glob.ok_or("path_rule needs a `glob`")?;
    Ok(PathRule {
        matcher: matcher.compile_matcher(),
        glob,
        access,
        decision: rule_decision,
        justification: why,
        source: source.clone(),
    })
}

pub(super) fn host_executable(args: Vec<Arg>) -> Result<(String, Vec<String>), ArgError> {
    let (mut name, mut paths) = (None, Vec::new());
    for arg in args {
        let located = ArgError::at(position(&arg));
        match (arg.name.as_str(), arg.value) {
            ("name", value) => name = Some(string(value, "host_executable name").map_err(located)?),
            ("paths", Value::List(values)) => {
                paths = strings(values, "host_executable paths").map_err(located)?;
            }
            (other, _) => {
                return Err(located(format!(
                    "host_executable has no argument `{other}` of that type"
                )));
            }
        }
    }
    let name = name.ok_or("host_executable needs a `name`")?;
    if name.is_empty() || name.contains('/') {
        return Err(
            format!("host_executable name must be a bare executable name, not {name:?}").into()
        );
    }
    for path in &paths {
        if !path.starts_with('/') {
            return Err(format!("host_executable paths must be absolute, not {path:?}").into());
        }
        if path.rsplit('/').next() != Some(name.as_str()) {
            return Err(format!("host_executable path {path:?} must have basename `{name}`").into());
        }
    }
    Ok((name, paths))
}

/// Accepted for compatibility and validated; keel has no network rules yet.
pub(super) fn network_rule(args: Vec<Arg>) -> Result<(), ArgError> {
    for arg in args {
        let at = position(&arg);
        let value = string(arg.value, &arg.name).map_err(ArgError::at(at))?;
        match arg.name.as_str() {
            "host" if value.contains('*') => {
                return Err(ArgError::at(at)(format!(
                    "network_rule host {value:?}: wildcards are not allowed"
                )));
            }
            "decision" => {
                decision(Value::Str(value)).map_err(ArgError::at(at))?;
            }
            "host" | "protocol" | "justification" => {}
            other => {
                return Err(ArgError::at(at)(format!("network_rule has no argument `{other}`")));
            }
        }
    }
    Ok(())
}
