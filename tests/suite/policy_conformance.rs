//! `../shared/conformance/execpolicy`: every case of `cases.jsonl`,
//! `load_errors.jsonl` and `amend.jsonl`, and every data file. Each table
//! test runs all rows and fails listing the ids of the rows that failed.

use std::path::{Path, PathBuf};

use keel::policy::amend::append_rule;
use keel::policy::shell::analyze_argv;
use keel::policy::{
    Allowlist, ApprovalMode, Decision, Origin, PathContext, Policy, RuleDecision, RuleMatch,
    RuleSet, evaluate_script,
};
use serde_json::Value;

/// The execpolicy corpus, or `None` (the test is skipped) in a clone without
/// the shared corpus: see `src/shared_corpus.rs`.
fn corpus() -> Option<PathBuf> {
    super::shared_corpus::locate("conformance/execpolicy")
}

fn rows(dir: &Path, file: &str) -> Vec<Value> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("conformance file {} is missing: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect()
}

fn load(case: &Value) -> Result<RuleSet, String> {
    let mut rules = RuleSet::default();
    match case.get("rules_files").and_then(Value::as_array) {
        Some(files) => {
            for file in files {
                let name = file["name"].as_str().unwrap();
                rules
                    .load(name, file["text"].as_str().unwrap(), Origin::User)
                    .map_err(|e| e.to_string())?;
            }
        }
        None => {
            let text = case["rules"].as_str().unwrap();
            rules.load("policy.rules", text, Origin::User).map_err(|e| e.to_string())?;
        }
    }
    Ok(rules)
}

fn decision_name(matches: &[RuleMatch]) -> &'static str {
    matches.iter().map(|m| m.decision).max().map_or("no-match", RuleDecision::as_str)
}

/// Checks one case; `Err` says what differed.
fn check_case(case: &Value) -> Result<(), String> {
    let rules = load(case)?;
    let resolve =
        case.pointer("/options/resolve_host_executables").and_then(Value::as_bool).unwrap_or(false);
    let commands: Vec<Vec<String>> = if case["layer"] == "agent" {
        agent_commands(case)?
    } else if let Some(list) = case.get("commands") {
        list.as_array().unwrap().iter().map(strings).collect()
    } else {
        vec![strings(&case["command"])]
    };
    let matches: Vec<RuleMatch> =
        commands.iter().flat_map(|argv| rules.matches(argv, resolve)).collect();
    let mut got = decision_name(&matches);
    // Agent layer: a script is allowed only if every command is; one
    // command no rule covers sends the whole script to the fallback.
    let unmatched = commands.iter().any(|argv| rules.matches(argv, resolve).is_empty());
    if case["layer"] == "agent" && got == "allow" && unmatched {
        got = "no-match";
    }
    let expected = case["expected"].as_str().unwrap();
    if got != expected {
        return Err(format!("decision {got}, expected {expected}"));
    }
    if let Some(prefixes) = case.get("matched_prefixes") {
        let want: Vec<Vec<String>> = prefixes.as_array().unwrap().iter().map(strings).collect();
        let have: Vec<Vec<String>> = matches.iter().map(|m| m.matched_prefix.clone()).collect();
        if want != have {
            return Err(format!("matched prefixes {have:?}, expected {want:?}"));
        }
    }
    if let Some(want) = case.get("justification").and_then(Value::as_str) {
        let strictest =
            matches.iter().max_by_key(|m| m.decision).and_then(|m| m.justification.clone());
        if strictest.as_deref() != Some(want) {
            return Err(format!("justification {strictest:?}, expected {want:?}"));
        }
    }
    if let Some(want) = case.get("resolved_program").and_then(Value::as_str) {
        if !matches.iter().all(|m| m.resolved_program.as_deref() == Some(want)) {
            return Err(format!("resolved program differs from {want}"));
        }
    }
    if let Some(per) = case.get("expected_per_command").and_then(Value::as_object) {
        for argv in &commands {
            let want = per[&argv[0]].as_str().unwrap();
            let have = decision_name(&rules.matches(argv, resolve));
            if want != have {
                return Err(format!("{argv:?}: {have}, expected {want}"));
            }
        }
    }
    check_agent_text(case, rules)
}

/// Agent-layer cases: keel's own unwrapping must produce the commands
/// upstream's agent extracted from `bash -lc`.
fn agent_commands(case: &Value) -> Result<Vec<Vec<String>>, String> {
    let argv = strings(&case["command"]);
    let script = analyze_argv(&argv);
    let got: Vec<Vec<String>> = script.commands.into_iter().map(|c| c.argv).collect();
    if let Some(want) = case.get("commands_after_unwrap") {
        let want: Vec<Vec<String>> = want.as_array().unwrap().iter().map(strings).collect();
        if want != got {
            return Err(format!("unwrapped {got:?}, expected {want:?}"));
        }
    }
    Ok(got)
}

/// The reason keel gives the model carries upstream's wording.
fn check_agent_text(case: &Value, rules: RuleSet) -> Result<(), String> {
    let wanted = case.get("agent_reason").or_else(|| case.get("agent_output_contains"));
    let Some(wanted) = wanted.and_then(Value::as_str) else { return Ok(()) };
    let paths = PathContext::new("/home/u", "/home/u/ws", "/home/u/ws");
    let policy = Policy::new(rules, ApprovalMode::Ask, paths);
    let argv = match case.get("shell_command_string").and_then(Value::as_str) {
        Some(script) => vec!["bash".to_owned(), "-c".to_owned(), script.to_owned()],
        None => strings(&case["command"]),
    };
    let verdict = evaluate_script(&policy, &Allowlist::default(), &analyze_argv(&argv));
    let reason = match verdict.decision {
        Decision::Allow => String::new(),
        Decision::Prompt { reason } | Decision::Forbidden { reason } => reason,
    };
    // Upstream quotes the outer `bash -lc '…'`; keel names the command
    // inside. The verdict text after the quoted command must agree.
    let tail = wanted.rsplit_once("` ").map_or(wanted, |(_, tail)| tail);
    if reason.contains(tail) { Ok(()) } else { Err(format!("reason {reason:?} lacks {tail:?}")) }
}

fn report(failures: Vec<String>, total: usize) {
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_evaluation_case_passes() {
    let Some(corpus) = corpus() else { return };
    let cases = rows(&corpus, "cases.jsonl");
    assert!(cases.len() >= 54, "expected the full suite, found {}", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| check_case(case).err().map(|e| format!("{}: {e}", case["id"])))
        .collect();
    report(failures, cases.len());
}

#[test]
fn every_load_error_case_is_rejected_with_its_message() {
    let Some(corpus) = corpus() else { return };
    let cases = rows(&corpus, "load_errors.jsonl");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let wanted = case["error_contains"].as_str().unwrap();
            match RuleSet::default().load(
                "bad.rules",
                case["rules"].as_str().unwrap(),
                Origin::User,
            ) {
                Ok(()) => Some(format!("{}: loaded", case["id"])),
                Err(e)
                    if e.to_string().contains(wanted)
                        && e.to_string().starts_with("bad.rules:") =>
                {
                    None
                }
                Err(e) => {
                    Some(format!("{}: error {e:?} lacks {wanted:?} or the file:line", case["id"]))
                }
            }
        })
        .collect();
    report(failures, cases.len());
}

#[test]
fn every_amend_case_passes() {
    let Some(corpus) = corpus() else { return };
    let cases = rows(&corpus, "amend.jsonl");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let prefix = strings(&case["prefix"]);
            let mut text = case["existing_file"].as_str().map(str::to_owned);
            let mut error = None;
            for _ in 0..case.get("append_times").and_then(Value::as_u64).unwrap_or(1) {
                match append_rule(text.as_deref(), &prefix) {
                    Ok(next) => text = Some(next),
                    Err(e) => error = Some(e.to_string()),
                }
            }
            let ok = match (case.get("expected_file"), case.get("expected_error")) {
                (Some(want), _) => text.as_deref() == want.as_str() && error.is_none(),
                (None, Some(want)) => {
                    error.as_deref().is_some_and(|e| e.contains(want.as_str().unwrap()))
                }
                (None, None) => false,
            };
            (!ok).then(|| format!("{}: got {text:?} / {error:?}", case["id"]))
        })
        .collect();
    report(failures, cases.len());
}

#[test]
fn upstream_policy_files_load_unchanged() {
    let Some(corpus) = corpus() else { return };
    for name in ["data/example.codexpolicy", "data/development.rules"] {
        let text = std::fs::read_to_string(corpus.join(name)).unwrap();
        let mut rules = RuleSet::default();
        rules.load(name, &text, Origin::User).unwrap_or_else(|e| panic!("{e}"));
        assert!(!rules.prefix_rules.is_empty(), "{name}");
    }
    let dev = std::fs::read_to_string(corpus.join("data/development.rules")).unwrap();
    let mut rules = RuleSet::default();
    rules.load("development.rules", &dev, Origin::User).unwrap();
    let argv: Vec<String> = ["cargo", "clippy", "--all"].map(str::to_owned).to_vec();
    assert_eq!(decision_name(&rules.matches(&argv, false)), "allow");
}

#[test]
fn legacy_define_program_policy_is_refused_with_file_and_line() {
    let Some(corpus) = corpus() else { return };
    let text = std::fs::read_to_string(corpus.join("data/legacy/default.policy")).unwrap();
    let error =
        RuleSet::default().load("default.policy", &text, Origin::User).unwrap_err().to_string();
    assert!(error.starts_with("default.policy:"), "{error}");
}

#[test]
fn cli_json_cases_match_keel_policy_check() {
    let Some(corpus) = corpus() else { return };
    for case in rows(&corpus, "cases.jsonl").iter().filter(|c| c.get("expected_cli_json").is_some())
    {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("policy.rules");
        std::fs::write(&file, case["rules"].as_str().unwrap()).unwrap();
        let output = assert_cmd::Command::cargo_bin("keel")
            .unwrap()
            .current_dir(dir.path())
            .env_clear()
            .env("HOME", dir.path())
            .env("KEEL_HOME", dir.path().join(".keel"))
            .args(["policy", "check", "--json", "--rules"])
            .arg(&file)
            .arg("--")
            .args(strings(&case["command"]))
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let got: Value = serde_json::from_slice(&output.stdout).unwrap();
        let want = &case["expected_cli_json"];
        assert_eq!(got["decision"], want["decision"], "{}", case["id"]);
        let want_rules = want["matchedRules"].as_array().unwrap();
        let got_rules = got["matched_rules"].as_array().unwrap();
        assert_eq!(got_rules.len(), want_rules.len(), "{}", case["id"]);
        for (g, w) in got_rules.iter().zip(want_rules) {
            let w = &w["prefixRuleMatch"];
            assert_eq!(g["matched_prefix"], w["matchedPrefix"], "{}", case["id"]);
            assert_eq!(g["decision"], w["decision"], "{}", case["id"]);
            assert_eq!(g["justification"], w.get("justification").cloned().unwrap_or(Value::Null));
            assert!(g["source"].as_str().unwrap().ends_with("policy.rules:2"), "{g}");
        }
    }
}
