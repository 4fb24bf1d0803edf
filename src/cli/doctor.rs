//! `keel doctor [--json]`: what the configured server does, asked of it
//! (issue 33), and what keel will do about each finding: the protocol and
//! the models it lists, the context window it runs with (asked only of a
//! server on this machine; else the model table's), whether a tiny request
//! offering one tool comes back with a native call, a call written as text
//! or none, whether it reports token usage, and whether its answer
//! streamed; and the Claude Code plugins installed (`keel plugin add`),
//! each with its version and source, and those that did not load; and the
//! user's setup keel picked up, Claude Code's and Codex's files included,
//! with what it left out and why (`doctor_setup`). `--json`
//! prints the same as one object (for scripts and tests).
//!
//! Invariants: one model request at most (64 output tokens), no session,
//! no log, no tool run; the exit status is 0 when the round trip got an
//! answer, 1 when it failed (the reason printed).

use std::io::Write;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::doctor_setup::SetupReport;
use super::{CliError, ExitStatus, ModelArgs};
use crate::config::{self, Environment, Settings};
use crate::context::window::{SMALL_WINDOW, WindowProfile};
use crate::llm::{LlmClient, PROBE_TIMEOUT, list_models, probe_window, recover_text_calls};
use crate::protocol::{Item, ModelRequest, ModelResponse, StreamEvent, ToolSpec};

/// `keel doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The tool the round trip offers.
const PROBE_TOOL: &str = "add_numbers";
/// How long the round trip may take: a small local model on a CPU may
/// need a while for its first token.
const ROUND_TRIP_TIMEOUT: Duration = Duration::from_secs(120);

/// How the model answered a request offering one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum ToolSupport {
    /// A native call of the tool.
    Native,
    /// The call written in the answer's text.
    Text,
    /// An answer without a call.
    None,
    /// No answer at all.
    Failed,
}

/// What `keel doctor` found.
#[derive(Debug, Serialize)]
struct Findings {
    protocol: &'static str,
    base_url: String,
    model: String,
    local: bool,
    models: Option<Vec<String>>,
    window: Option<u64>,
    window_source: Option<&'static str>,
    tools: ToolSupport,
    usage_reported: Option<bool>,
    streamed: Option<bool>,
    error: Option<String>,
    /// One line per finding: what keel will do about it.
    actions: Vec<String>,
    /// Installed plugins (`keel plugin add`): name → version, source, folder.
    plugins: std::collections::BTreeMap<String, String>,
    /// Installed plugins that did not load, and why.
    plugin_problems: Vec<String>,
    /// The user's setup keel picked up (its own, Claude Code's, Codex's)
    /// and what it left out (`doctor_setup`).
    setup: SetupReport,
}

pub(super) async fn run(model: &ModelArgs, args: &DoctorArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let settings = config::load(&env, &model.overrides())?;
    let findings = diagnose(&settings).await;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string(&findings)?)?;
    } else {
        for line in human(&findings) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(if findings.tools == ToolSupport::Failed { ExitStatus::Failed } else { ExitStatus::Done })
}

async fn diagnose(settings: &Settings) -> Findings {
    let provider = &settings.provider;
    let local = provider.profile.local_server.is_some();
    let models = list_models(provider, PROBE_TIMEOUT).await.ok();
    let probed = match local {
        true => probe_window(provider, &settings.model, PROBE_TIMEOUT).await,
        false => None,
    };
    let window = probed.map(|w| w.tokens).or(settings.context_window);
    let (round_trip, streamed) = round_trip(settings).await;
    let mut findings = Findings {
        protocol: provider.kind.cli_name(),
        base_url: provider.base_url.clone(),
        model: settings.model.clone(),
        local,
        models,
        window,
        window_source: probed
            .map(|w| w.source.describe())
            .or_else(|| settings.context_window.map(|_| "the configuration or keel's model table")),
        tools: ToolSupport::Failed,
        usage_reported: None,
        streamed: None,
        error: None,
        actions: Vec::new(),
        plugins: settings.plugins.summary(),
        plugin_problems: settings.plugins.problems.clone(),
        setup: SetupReport::of(settings, &instructions(settings)),
    };
    match round_trip {
        Ok(response) => {
            findings.tools = support_of(&response);
            findings.usage_reported = Some(response.usage.input_tokens > 0);
            findings.streamed = Some(streamed);
        }
        Err(error) => findings.error = Some(error),
    }
    findings.actions =
        actions(settings, &findings, probed.and_then(|w| w.truncation_warning(&settings.model)));
    findings
}

/// The instruction files a session started here would read.
fn instructions(settings: &Settings) -> Vec<config::InstructionFile> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| settings.workspace_root.clone());
    let places = config::InstructionPlaces {
        keel_home: &settings.keel_home,
        home: &settings.home,
        codex_home: &settings.codex_home,
        workspace_root: &settings.workspace_root,
        trusted: settings.project_trusted,
        import: settings.import_setup,
    };
    config::discover_instructions(&places, &cwd)
}

/// One request offering [`PROBE_TOOL`]; whether any piece of the answer
/// arrived before its end (it streamed).
async fn round_trip(settings: &Settings) -> (Result<ModelResponse, String>, bool) {
    let mut provider = settings.provider.clone();
    provider.retry.max_retries = 0;
    provider.request_timeout = ROUND_TRIP_TIMEOUT;
    let client = match LlmClient::new(provider) {
        Ok(client) => client,
        Err(error) => return (Err(error.to_string()), false),
    };
    let request = ModelRequest {
        model: settings.model.clone(),
        instructions: "You are a calculator. Answer by calling the tool.".to_owned(),
        items: vec![Item::user(format!("Use `{PROBE_TOOL}` to add 2 and 3."))],
        tools: vec![probe_tool()],
        max_output_tokens: Some(64),
    };
    let mut pieces = 0_usize;
    let mut on_event = |event: StreamEvent| match event {
        StreamEvent::TextDelta { .. }
        | StreamEvent::ReasoningDelta { .. }
        | StreamEvent::ToolCallStarted { .. }
        | StreamEvent::ToolCallArgumentsDelta { .. } => pieces += 1,
        StreamEvent::Retrying { .. } => {}
    };
    let outcome = client.stream(&request, &mut on_event, &CancellationToken::new()).await;
    (outcome.map_err(|error| error.to_string()), pieces > 0)
}

fn probe_tool() -> ToolSpec {
    ToolSpec {
        name: PROBE_TOOL.to_owned(),
        description: "Adds two numbers.".to_owned(),
        parameters: json!({"type": "object", "properties": {"a": {"type": "number"},
            "b": {"type": "number"}}, "required": ["a", "b"]}),
    }
}

fn support_of(response: &ModelResponse) -> ToolSupport {
    if response.tool_calls().any(|call| call.name == PROBE_TOOL) {
        return ToolSupport::Native;
    }
    match recover_text_calls(&[probe_tool()], response) {
        Some(_) => ToolSupport::Text,
        None => ToolSupport::None,
    }
}

/// What keel will do about each finding, one line each.
fn actions(settings: &Settings, findings: &Findings, truncation: Option<String>) -> Vec<String> {
    let mut actions = Vec::new();
    match findings.window {
        Some(window) => {
            let profile = match WindowProfile::for_window(Some(window)) {
                WindowProfile::Compact => {
                    format!(
                        "a window of {SMALL_WINDOW} tokens or fewer: keel offers 6 tools and short instructions"
                    )
                }
                WindowProfile::Full => "keel offers every tool".to_owned(),
            };
            let output = crate::context::models::output_limit(
                &settings.model,
                settings.provider.profile.max_output_tokens,
                Some(window),
            );
            let output = output.map_or_else(String::new, |limit| {
                format!("; answers are bounded to {limit} tokens")
            });
            actions.push(format!(
                "window {window} tokens: keel compacts past {} tokens{output}; {profile}",
                (window as f64 * settings.compact_threshold) as u64
            ));
        }
        None => actions.push(
            "window unknown: keel compacts only when the server says a request is too long \
             (set -c context.window=N, or -c provider.probe=true for a local server on another \
             port)"
                .to_owned(),
        ),
    }
    actions.extend(truncation);
    let advice = settings.provider.profile.local_server.map(|server| server.tool_advice());
    actions.push(match findings.tools {
        ToolSupport::Native => "tools: the model called the tool: keel works as usual".to_owned(),
        ToolSupport::Text => "tools: the model wrote the call as text: keel runs such calls \
            when they are unambiguous, with a warning"
            .to_owned(),
        ToolSupport::None => format!(
            "tools: the model answered without calling the tool: a change request will end \
             `no_tool_call`; {}",
            advice.unwrap_or("the server may not pass tools to the model")
        ),
        ToolSupport::Failed => {
            format!("the request failed: {}", findings.error.as_deref().unwrap_or("no answer"))
        }
    });
    if findings.usage_reported == Some(false) {
        actions.push(
            "usage: the server reports no token usage: keel estimates tokens itself and shows \
             no cost"
                .to_owned(),
        );
    }
    if findings.streamed == Some(false) {
        actions.push(
            "streaming: the answer came whole: nothing shows until it is done (if streams end \
             empty, set -c provider.stream=false)"
                .to_owned(),
        );
    }
    actions
}

/// The findings as lines for a person.
fn human(findings: &Findings) -> Vec<String> {
    let yes_no = |value: Option<bool>| match value {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    };
    let mut lines = vec![
        format!(
            "protocol: {} at {} (model {})",
            findings.protocol, findings.base_url, findings.model
        ),
        match &findings.models {
            Some(models) if models.is_empty() => "models: the server lists none".to_owned(),
            Some(models) => format!("models: {}", models.join(", ")),
            None => "models: no list (GET /models failed)".to_owned(),
        },
        match (findings.window, findings.window_source) {
            (Some(window), Some(source)) => format!("window: {window} tokens ({source})"),
            (Some(window), None) => format!("window: {window} tokens"),
            (None, _) => "window: unknown".to_owned(),
        },
        format!(
            "tool call: {}",
            serde_json::to_value(findings.tools)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default()
        ),
        format!("usage reported: {}", yes_no(findings.usage_reported)),
        format!("streamed: {}", yes_no(findings.streamed)),
    ];
    if findings.plugins.is_empty() {
        lines.push("plugins: none installed".to_owned());
    }
    lines.extend(findings.plugins.iter().map(|(name, about)| format!("plugin {name}: {about}")));
    lines.extend(findings.plugin_problems.iter().map(|problem| format!("plugins: {problem}")));
    lines.extend(findings.setup.human());
    lines.extend(findings.actions.iter().map(|action| format!("→ {action}")));
    lines
}
