//! The first request a session would send, built exactly as a session
//! builds it but without opening a log, running hooks or calling the
//! model (`keel debug prompt`).
//!
//! Invariant: the same assembly as [`Session::start`](super::Session)
//! (tools, prefix, workflow setup, environment, sandbox probe, the loop's
//! first step), so what it prints is what the model would read; only
//! SessionStart hooks are skipped (they run commands), and their context
//! would be announced after the instructions, not inside them; the
//! `prompt_cache_key` (the session id) is [`PREVIEW_CACHE_KEY`]; spend
//! limits are not applied (nothing is sent).

use crate::agent::{Effect, Input, LoopState, Opening, SpendLimits, step};
use crate::config::Settings;
use crate::llm::LlmClient;
use crate::protocol::ModelRequest;

use super::assembly::{discover_context, environment, loop_config, session_tools, workflow_setup};
use super::sandboxing::setup_sandbox;
use super::{RuntimeError, SessionOptions};

/// Stands in for the session id a real session sends as
/// `prompt_cache_key` (where the provider takes one).
pub const PREVIEW_CACHE_KEY: &str = "<session id>";

/// The first request for `prompt`, and the JSON body the provider in
/// `settings` would receive; plus any warnings (sandbox, skills, memory).
pub fn first_request(
    settings: &Settings,
    options: &SessionOptions,
    prompt: &str,
) -> Result<(ModelRequest, serde_json::Value, Vec<String>), RuntimeError> {
    // A session sends its id as the cache key; there is none yet.
    let llm = LlmClient::new(settings.provider.clone())
        .map_err(RuntimeError::Client)?
        .with_cache_key(PREVIEW_CACHE_KEY);
    let found = discover_context(settings, &options.cwd);
    let tools = session_tools(settings, &found, 0);
    let mut config = loop_config(settings, options, &tools, &found);
    // Printing a request spends nothing: a spend limit the first request
    // would cross must not stop it from being shown.
    config.limits.spend = SpendLimits::default();
    let opening = Opening {
        workflow: Some(workflow_setup(settings, &found)),
        environment: environment(
            settings,
            &options.cwd,
            &options.date,
            options.headless,
            options.script_answers,
        ),
        allowlist: Default::default(),
    };
    let mut state = LoopState::open(config, opening);
    // Every line, not the start's summary: this is where the user looks.
    let mut warnings = found.details.clone();
    // The jail itself is not needed: nothing runs.
    let (_jail, sandbox_warning) = setup_sandbox(settings, state.config_mut());
    warnings.extend(sandbox_warning);
    let effects = step(&mut state, Input::UserTurn { text: prompt.to_owned(), images: Vec::new() });
    let request = effects
        .into_iter()
        .find_map(|effect| match effect {
            Effect::CallModel(request) => Some(request),
            Effect::Record(_)
            | Effect::AskApproval { .. }
            | Effect::AskUser { .. }
            | Effect::PersistRule { .. }
            | Effect::SavePlan { .. }
            | Effect::RunBatch { .. }
            | Effect::ConfirmCall { .. }
            | Effect::CheckCalls { .. }
            | Effect::Warn(_)
            | Effect::RerunUnsandboxed { .. }
            | Effect::RunPostToolHooks { .. }
            | Effect::Summarize { .. }
            | Effect::Compacted { .. }
            | Effect::AskRaiseLimit(_)
            | Effect::TurnEnded { .. } => None,
        })
        .ok_or(RuntimeError::Stalled)?;
    let body = llm.request_body(&request);
    Ok((request, body, warnings))
}
