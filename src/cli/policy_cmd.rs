//! `keel policy check [--rules FILE]… [--json] -- CMD ARGS…`, `keel policy
//! check --net HOST` (what keel's network proxy would do with HOST, and
//! why) and `keel trust`.
//!
//! `policy check` judges one command the way the agent would in ask mode
//! (wrappers and `bash -c` unwrapped, hard deny, rules, read-only list) and
//! prints the decision with every matching rule. With `--rules` only those
//! files are loaded (as `codex execpolicy check` does); without, every file
//! keel loads for this project. JSON contract (DESIGN §4):
//! `{"decision": "allow"|"prompt"|"forbidden", "reason": …, "matched_rules":
//! [{"source": "file:line", "pattern": […], "decision": …, "justification": …}]}`.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::{CliError, Context, ExitStatus};
use crate::config::{CliOverrides, Environment, find_workspace_root, load_local, rules};
use crate::policy::{
    Allowlist, ApprovalMode, Decision, Origin, PathContext, Policy, RuleMatch, RuleSet,
    evaluate_script, shell::analyze_argv,
};

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub command: PolicyCommand,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the decision for a command and every rule that matched it.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Load only these rules files (repeatable) instead of keel's.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Instead of a command: whether a sandboxed command may reach HOST
    /// (`[sandbox] network` and `allowed_domains`, as keel's proxy judges).
    #[arg(long, value_name = "HOST", conflicts_with = "command")]
    pub net: Option<String>,
    /// The command and its arguments (`--` first when they start with `-`).
    #[arg(
        required_unless_present = "net",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<String>,
}

pub(super) fn run(args: PolicyArgs) -> Result<ExitStatus, CliError> {
    match args.command {
        PolicyCommand::Check(check) => run_check(check),
    }
}

/// The rules files of a session in `root`, no `--rules`.
fn rule_places<'a>(
    env: &'a Environment,
    root: &'a std::path::Path,
    home: &'a std::path::Path,
    codex_home: &'a std::path::Path,
) -> rules::RulePlaces<'a> {
    // A config keel cannot read stops the session itself; here it only
    // means the default.
    let import = crate::config::read_layers(env, &crate::config::CliOverrides::default())
        .map_or(true, |layers| layers.merged.import_setup.unwrap_or(true));
    rules::RulePlaces {
        keel_home: &env.keel_home,
        codex_home,
        home,
        workspace_root: root,
        extra: &[],
        import,
    }
}

fn run_check(args: CheckArgs) -> Result<ExitStatus, CliError> {
    if let Some(host) = &args.net {
        return check_net(host, args.json);
    }
    let env = Environment::from_process()?;
    let workspace_root = find_workspace_root(&env.cwd);
    let (home, codex_home) = (env.user_home(), env.codex_home());
    let rule_set = if args.rules.is_empty() {
        rules::load_rules(&rule_places(&env, &workspace_root, &home, &codex_home))?.rules
    } else {
        let mut set = RuleSet::default();
        for path in &args.rules {
            rules::load_file(&mut set, path, Origin::User)?;
        }
        set
    };
    let home = env.var("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
    let paths = PathContext::new(home, workspace_root.clone(), env.cwd.clone());
    let mut policy = Policy::new(rule_set, ApprovalMode::Ask, paths);
    policy.project_trusted = rules::is_trusted(&env.keel_home, &workspace_root)?;
    let verdict = evaluate_script(&policy, &Allowlist::default(), &analyze_argv(&args.command));
    let report = check_json(&verdict.decision, &verdict.matched);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{report}").context("cannot write to stdout")?;
    } else {
        writeln!(
            out,
            "{}: {}",
            report["decision"].as_str().unwrap_or_default(),
            report["reason"].as_str().unwrap_or_default()
        )
        .context("cannot write to stdout")?;
        for rule in &verdict.matched {
            let why = rule.justification.as_deref().unwrap_or("");
            writeln!(
                out,
                "  {}  {}  {}  {why}",
                rule.source,
                rule.to_json()["pattern"],
                rule.decision.as_str()
            )
            .context("cannot write to stdout")?;
        }
    }
    Ok(ExitStatus::Done)
}

/// `--net HOST`: the proxy's verdict for `host` under this folder's
/// settings: `{"host", "network", "decision": "allow"|"deny", "reason"}`.
fn check_net(host: &str, json: bool) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let settings = load_local(&env, &CliOverrides::default())?;
    let allowlist = &settings.sandbox.network;
    let verdict = allowlist.judge(host);
    let decision = if verdict.allowed { "allow" } else { "deny" };
    let mut out = std::io::stdout().lock();
    if json {
        let report = json!({
            "host": host,
            "network": allowlist.mode.as_str(),
            "decision": decision,
            "reason": verdict.reason,
        });
        writeln!(out, "{report}").context("cannot write to stdout")?;
    } else {
        writeln!(out, "{decision}: {}", verdict.reason).context("cannot write to stdout")?;
    }
    Ok(ExitStatus::Done)
}

/// The JSON report for a decision and its matches.
pub fn check_json(decision: &Decision, matched: &[RuleMatch]) -> Value {
    let (name, reason) = match decision {
        Decision::Allow => ("allow", allow_reason(matched)),
        Decision::Prompt { reason } => ("prompt", reason.clone()),
        Decision::Forbidden { reason } => ("forbidden", reason.clone()),
    };
    let rules: Vec<Value> = matched.iter().map(RuleMatch::to_json).collect();
    json!({ "decision": name, "reason": reason, "matched_rules": rules })
}

/// Why a command is allowed: the allow rules that matched, else (ask mode
/// allows nothing else) keel's built-in list of read-only commands.
fn allow_reason(matched: &[RuleMatch]) -> String {
    let sources: Vec<String> = matched
        .iter()
        .filter(|rule| rule.decision.as_str() == "allow")
        .map(|rule| rule.source.to_string())
        .collect();
    if sources.is_empty() {
        "a known read-only command (keel's built-in list)".to_owned()
    } else {
        format!("allowed by the rule at {}", sources.join(", "))
    }
}

/// `keel trust`: records the current project as trusted.
pub(super) fn trust() -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let root = find_workspace_root(&env.cwd);
    let path = rules::trust_project(&env.keel_home, &root)?;
    writeln!(
        std::io::stdout().lock(),
        "trusted {}: its rules' allows and its config now apply, and its MCP servers as they are \
         now (recorded in {})",
        root.display(),
        path.display()
    )
    .context("cannot write to stdout")?;
    // Trusting cannot make a broken rules file work: say so now, not at
    // the next start.
    let (home, codex_home) = (env.user_home(), env.codex_home());
    if let Err(error) = rules::load_rules(&rule_places(&env, &root, &home, &codex_home)) {
        let _ =
            writeln!(std::io::stderr().lock(), "warning: keel will not start here yet: {error}");
    }
    Ok(ExitStatus::Done)
}
