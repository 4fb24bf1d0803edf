//! `keel tool NAME 'JSON' [--mode MODE] [--yes]`: one tool outside the
//! loop, its result envelope as JSON on stdout.
//!
//! Invariants: the call is judged by `policy::evaluate` exactly as a
//! session would judge it in `--mode` (default ask), with the same rules
//! files and project trust, with the symlinks on its paths resolved
//! (`runtime::gather_links`), and by keel's native hooks
//! (`protect_secrets`); a forbidden call never runs; a call needing
//! approval runs only with `--yes` (there is nobody to ask); shell commands
//! run confined by the same sandbox as a session's. Settings load without
//! a model provider or API key.
//!
//! Envelope: `{"ok", "output", "error", "meta"}`; a refused call has
//! `meta.kind = "denied"`, `meta.decision` and `meta.matched_rules`, and
//! exits 1 like a failed tool.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{CliError, ExitStatus, ModelArgs, ToolArgs, policy_cmd};
use crate::config::{CliOverrides, Environment, LocalSettings, load_local};
use crate::exec;
use crate::hooks::{HookBus, HookEvent, HookPayload, guard};
use crate::policy::{Allowlist, ApprovalMode, CallFacts, Decision, PathContext, Policy, evaluate};
use crate::protocol::tool_facts::names;
use crate::protocol::{ResultKind, ToolCall, ToolMeta, ToolResult};
use crate::runtime::{confine_commands, gather_links, mark_sandbox_violation};
use crate::sandbox::{self, CommandJail};
use crate::tools::{FileStates, ToolContext, ToolRegistry};

pub(super) async fn run(model: &ModelArgs, args: ToolArgs) -> Result<ExitStatus, CliError> {
    let mode = match ApprovalMode::parse(&args.mode) {
        Some(mode) => mode,
        None => {
            return Err(CliError::usage(format!(
                "unknown mode `{}`; use ask, auto, plan, explore or yolo",
                args.mode
            )));
        }
    };
    let env = Environment::from_process()?;
    let cli = CliOverrides { set: model.set.clone(), ..CliOverrides::default() };
    let settings = load_local(&env, &cli)?;
    warn(&settings.warnings);
    let registry = ToolRegistry::builtin();
    let call = ToolCall {
        call_id: "cli".to_owned(),
        name: args.name,
        arguments: args.arguments,
        item_id: None,
        provider_data: None,
    };
    sandbox::protect_own_environ();
    let mut policy = build_policy(&settings, &env, mode);
    let jail = if call.name == names::SHELL {
        let confined =
            confine_commands(&settings.sandbox, &settings.env_filter, &settings.workspace_root);
        policy.sandboxed = confined.sandboxed;
        warn(&confined.warning.into_iter().collect::<Vec<_>>());
        confined.jail
    } else {
        CommandJail::unconfined(settings.env_filter.clone())
    };
    let facts = CallFacts {
        tool: &call.name,
        class: registry.class_of(&call.name),
        arguments: &call.arguments,
    };
    policy.paths.links = gather_links(&policy, facts);
    let mut verdict = evaluate(&policy, &Allowlist::default(), facts);
    verdict.decision = native_hooks(&settings, &policy, &call, verdict.decision);
    let refusal = match &verdict.decision {
        Decision::Allow => None,
        Decision::Prompt { .. } if args.yes => None,
        Decision::Prompt { reason } => Some(format!(
            "needs approval: {reason}; nobody can be asked here, pass --yes to run it"
        )),
        Decision::Forbidden { reason } => Some(format!("forbidden: {reason}")),
    };
    if let Some(error) = refusal {
        let report = policy_cmd::check_json(&verdict.decision, &verdict.matched);
        let meta = ToolMeta::new()
            .with_kind(ResultKind::Denied)
            .with("decision", report["decision"].clone())
            .with("matched_rules", report["matched_rules"].clone());
        exec::write_json_line(&json!({"ok": false, "output": null, "meta": meta, "error": error}));
        return Ok(ExitStatus::Failed);
    }
    // One-shot: no session has read anything, so read-before-write is off.
    let ctx = ToolContext::new(
        settings.workspace_root.clone(),
        env.cwd.clone(),
        CancellationToken::new(),
    )
    .with_files(Arc::new(FileStates::unchecked()))
    .with_web(Arc::new(crate::web::WebAccess {
        rules: settings.rules.web_rules.clone(),
        project_trusted: settings.project_trusted,
        hosts: settings.sandbox.hosts.clone(),
        net_log: jail.net_log().clone(),
    }))
    .with_jail(Arc::new(jail));
    let (mut result, mut meta) = registry.run_call(&call, &ctx).await;
    if policy.sandboxed {
        mark_sandbox_violation(&call.name, &mut result, &mut meta, &ctx.jail);
    }
    let failed = result.is_error;
    exec::write_json_line(&envelope(result, meta));
    Ok(if failed { ExitStatus::Failed } else { ExitStatus::Done })
}

/// keel's native PreToolUse hooks (`protect_secrets`), as a session runs
/// them: they can only tighten the decision.
fn native_hooks(
    settings: &LocalSettings,
    policy: &Policy,
    call: &ToolCall,
    decision: Decision,
) -> Decision {
    let payload = HookPayload {
        cwd: policy.paths.cwd.display().to_string(),
        permission_mode: policy.mode,
        tool_name: Some(call.name.clone()),
        tool_input: serde_json::from_str(&call.arguments).ok(),
        path_links: policy.paths.links.clone(),
        ..HookPayload::default()
    };
    let bus = HookBus::default().with_natives(settings.native_hooks.iter().cloned());
    let (verdict, _) = bus.dispatch_natives(HookEvent::PreToolUse, &payload, Some(&call.name));
    guard(decision, &verdict).decision
}

fn build_policy(settings: &LocalSettings, env: &Environment, mode: ApprovalMode) -> Policy {
    let paths =
        PathContext::new(settings.home.clone(), settings.workspace_root.clone(), env.cwd.clone());
    let paths = PathContext { secrets: settings.secret_places.clone(), ..paths };
    let mut policy = Policy::new(settings.rules.clone(), mode, paths);
    policy.project_trusted = settings.project_trusted;
    policy
}

fn envelope(result: ToolResult, meta: ToolMeta) -> Value {
    let (output, error) = if result.is_error {
        (Value::Null, Value::from(result.output))
    } else {
        (Value::from(result.output), Value::Null)
    };
    json!({"ok": error.is_null(), "output": output, "meta": meta, "error": error})
}

/// Config warnings go to stderr: stdout is the envelope alone.
fn warn(warnings: &[String]) {
    let mut err = std::io::stderr().lock();
    for warning in warnings {
        let _ = writeln!(err, "keel: {warning}");
    }
}
