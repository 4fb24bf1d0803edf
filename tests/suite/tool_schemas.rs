//! A lint over every tool schema a session offers (the built-in tools and
//! the harness tools): what the model reads about arguments must be true
//! and acceptable to every provider keel speaks to.
//!
//! - optional fields are not in `required` (issue 23.6: `grep`'s `mode`);
//! - every parameter, nested ones too, has a description, but for the few
//!   whose name says all there is (`path`, `command`…: a description there
//!   would be billed on every request and tell the model nothing);
//! - 1-based parameters (`offset`, `depth`, `limit`, `timeout_ms`) have
//!   `minimum: 1`; no integer says `minimum: 0` where 0 means nothing;
//! - a limit a description states ("at most 10") is the schema's
//!   `maximum` (or `maxItems`), so the model is told it where schemas
//!   are read and a value past it is refused there, not only noted;
//! - names match `^[a-zA-Z0-9_-]{1,64}$` (OpenAI and Anthropic), and
//!   descriptions stay within 1024 characters (the strictest limit among
//!   the APIs: OpenAI's Assistants tools), parameters' within 1024 too.

use serde_json::Value;

use keel::agent::{harness_specs, shipped_rules};
use keel::protocol::ToolSpec;
use keel::tools::ToolRegistry;

/// The strictest description limit among the providers.
const DESCRIPTION_LIMIT: usize = 1024;

/// Parameters whose name says what they are: a string, or an enum of
/// self-explaining values.
const SELF_EXPLAINING: [&str; 5] = ["path", "command", "pattern", "new_string", "status"];

/// Parameters that count from 1.
const ONE_BASED: [&str; 4] = ["offset", "depth", "limit", "timeout_ms"];

fn every_spec() -> Vec<ToolSpec> {
    let mut specs = ToolRegistry::builtin().specs();
    specs.extend(harness_specs(&shipped_rules()));
    specs
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The N of "at most N" in `description`, if it states one.
fn stated_limit(description: &str) -> Option<u64> {
    let (_, rest) = description.split_once("at most ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Lints one object schema at `at` (`tool.field.…`), recursing into
/// object items and nested objects.
fn lint_object(at: &str, schema: &Value, problems: &mut Vec<String>) {
    let properties = schema["properties"].as_object().cloned().unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in &required {
        if !properties.contains_key(*name) {
            problems.push(format!("{at}: requires `{name}`, which it does not define"));
        }
    }
    for (name, property) in &properties {
        let here = format!("{at}.{name}");
        let description = property["description"].as_str().unwrap_or("");
        let self_explaining = SELF_EXPLAINING.contains(&name.as_str())
            && property["type"] == "string"
            && property.get("default").is_none();
        if description.trim().is_empty() && !self_explaining {
            problems.push(format!("{here}: no description"));
        }
        if description.chars().count() > DESCRIPTION_LIMIT {
            problems.push(format!("{here}: description longer than {DESCRIPTION_LIMIT}"));
        }
        let says_optional = ["default", "optional"]
            .iter()
            .any(|mark| description.to_ascii_lowercase().contains(mark))
            || property.get("default").is_some();
        if says_optional && required.contains(&name.as_str()) {
            problems.push(format!("{here}: optional (has a default) but required"));
        }
        if property["type"] == "integer" {
            let minimum = property["minimum"].as_i64();
            if ONE_BASED.contains(&name.as_str()) && minimum != Some(1) {
                problems.push(format!("{here}: 1-based but minimum is {minimum:?}"));
            }
        }
        if let Some(stated) = stated_limit(description) {
            let bound = property.get("maximum").or_else(|| property.get("maxItems"));
            if bound.and_then(Value::as_u64) != Some(stated) {
                problems.push(format!("{here}: says at most {stated}, schema bound {bound:?}"));
            }
        }
        if property["type"] == "object" {
            lint_object(&here, property, problems);
        }
        if property["type"] == "array" && property["items"]["type"] == "object" {
            lint_object(&format!("{here}[]"), &property["items"], problems);
        }
    }
}

#[test]
fn every_tool_schema_is_true_and_within_every_providers_limits() {
    let mut problems = Vec::new();
    for spec in every_spec() {
        if !valid_name(&spec.name) {
            problems.push(format!("{}: invalid tool name", spec.name));
        }
        let length = spec.description.chars().count();
        if length > DESCRIPTION_LIMIT {
            problems.push(format!("{}: description is {length} characters", spec.name));
        }
        if spec.parameters["type"] != "object" {
            problems.push(format!("{}: parameters are not an object schema", spec.name));
        }
        lint_object(&spec.name, &spec.parameters, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn grep_mode_is_optional() {
    let grep = every_spec().into_iter().find(|spec| spec.name == "grep").unwrap();
    let required = grep.parameters["required"].as_array().cloned().unwrap_or_default();
    assert_eq!(required, [Value::from("pattern")], "{}", grep.parameters);
}

#[test]
fn set_phase_names_the_phases_of_a_projects_own_rules() {
    let rules = keel::plan::PhaseRules::parse(
        "start = \"triage\"\n[phases.triage]\npurpose = \"t\"\ntools = [\"read\"]\n\
         next = [\"fix\"]\n[phases.fix]\npurpose = \"f\"\ntools = [\"write\"]\nnext = []\n",
    )
    .unwrap();
    let specs = harness_specs(&rules);
    let set_phase = specs.iter().find(|spec| spec.name == "set_phase").unwrap();
    for default_phase in ["orient", "explore", "verify", "deliver"] {
        assert!(!set_phase.description.contains(default_phase), "{}", set_phase.description);
    }
    let phases = &set_phase.parameters["properties"]["phase"]["enum"];
    assert_eq!(phases, &serde_json::json!(["fix", "triage"]));
}

/// What `set_phase` says the harness checks reads as sentences: each gate
/// names its phase and what it needs (it once read "deliver a check
/// passed after your last change").
#[test]
fn set_phase_says_what_each_gate_needs() {
    let rules = keel::plan::PhaseRules::parse(
        "start = \"fix\"\n[phases.fix]\npurpose = \"f\"\ntools = [\"write\"]\nnext = [\"ship\"]\n\
         [phases.ship]\npurpose = \"s\"\ntools = []\nnext = []\nrequires = [\"verified_after_last_change\"]\n\
         checks = [\"make lint\"]\n",
    )
    .unwrap();
    let specs = harness_specs(&rules);
    let set_phase = specs.iter().find(|spec| spec.name == "set_phase").unwrap();
    let description = &set_phase.description;
    assert!(
        description.contains("ship needs a check that passed after your last change"),
        "{description}"
    );
    assert!(description.contains("ship needs `make lint` passing"), "{description}");
}
