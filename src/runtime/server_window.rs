//! A session's window learnt from the server it talks to (issue 33): once
//! per process, before the session opens, a server on this machine is
//! asked how large a window it runs the model with
//! (`llm::probe_window`), and the settings take the smaller of that and
//! the window keel knew (configured or the model table): a server holds
//! no more than it runs with, and a user who asked for less keeps less.
//! The figure then drives everything a window does (compaction, the output
//! limit, the prompt check, the window profile) for the whole session.
//!
//! At the same time its tokenizer is asked to count a fixed sample, keel's
//! core rules and built-in tool schemas ([`calibration_sample`], at most
//! 16 KiB: `llm::count_tokens`), which keel also counts; the ratio is the
//! session's `Settings::token_scale` (`context::tokens::TokenScale`), so
//! the compaction threshold, the summary's budgets and the prompt check's
//! figures are in the server's tokens. The sample does not depend on the
//! project, so a resume against the same server learns the same scale.
//!
//! Invariants: only when the profile says to probe (`ServerProfile::probe_window`:
//! loopback hosts only); each figure said once as a warning line, with
//! where it came from; a probe that learns nothing (no endpoint, an error,
//! a timeout, an implausible count) changes nothing and says nothing.

use crate::config::Settings;
use crate::context::tokens::{TokenScale, count};
use crate::llm::{
    PROBE_TIMEOUT, ServerTokenCount, ServerWindow, TOKENIZE_TIMEOUT, bounded_sample, count_tokens,
    probe_window,
};

/// Asks the server for its window and for a token count when the profile
/// says so, and applies what it says to `settings` (the notices go to
/// `settings.warnings`).
pub async fn learn_window(settings: &mut Settings) -> Option<ServerWindow> {
    if !settings.provider.profile.probe_window {
        return None;
    }
    let sample = calibration_sample(settings);
    let reference = {
        let sample = sample.clone();
        tokio::task::spawn_blocking(move || count(&sample))
    };
    let (window, counted, reference) = tokio::join!(
        probe_window(&settings.provider, &settings.model, PROBE_TIMEOUT),
        count_tokens(&settings.provider, &settings.model, &sample, TOKENIZE_TIMEOUT),
        reference,
    );
    if let Some(window) = &window {
        apply(settings, window);
    }
    if let (Some(counted), Ok(reference)) = (counted, reference) {
        apply_count(settings, sample.len(), reference, counted);
    }
    window
}

/// The text the server's tokenizer is asked to count: keel's full core
/// rules and every built-in tool's name, description and schema, as
/// requests carry them, bounded. Fixed for a keel build and `max_steps`.
pub fn calibration_sample(settings: &Settings) -> String {
    let mut sample = crate::prompts::core_prompt(settings.limits.max_steps);
    for spec in crate::tools::ToolRegistry::builtin().specs() {
        sample.push('\n');
        sample.push_str(&spec.name);
        sample.push('\n');
        sample.push_str(&spec.description);
        sample.push('\n');
        sample.push_str(&spec.parameters.to_string());
    }
    bounded_sample(&sample).to_owned()
}

/// `settings` counting tokens as the server does, when its count of a
/// `bytes`-byte sample (keel's estimate: `reference`) is plausible, with
/// the notice.
pub fn apply_count(
    settings: &mut Settings,
    bytes: usize,
    reference: u64,
    counted: ServerTokenCount,
) {
    let Some(scale) = TokenScale::from_counts(counted.tokens, reference) else { return };
    settings.token_scale = scale;
    settings.warnings.push(format!(
        "the server's tokenizer ({from}) counts {server} tokens in keel's {bytes}-byte \
         instructions sample where keel estimates {reference} ({per_token:.1} bytes a token): \
         keel counts this session's tokens as the server does (x{ratio:.2})",
        from = counted.source.describe(),
        server = counted.tokens,
        per_token = bytes as f64 / counted.tokens as f64,
        ratio = scale.ratio(),
    ));
}

/// `settings` within `window`, with the notice (and Ollama's truncation
/// warning) added to its warnings.
pub fn apply(settings: &mut Settings, window: &ServerWindow) {
    let known = settings.context_window;
    let tokens = known.map_or(window.tokens, |known| known.min(window.tokens));
    settings.context_window = Some(tokens);
    settings.pricing.context_window = Some(tokens);
    let kept = match known {
        Some(known) if known < window.tokens => {
            format!("; keel keeps to the {known} tokens configured")
        }
        Some(_) | None => String::new(),
    };
    settings.warnings.push(format!(
        "the server runs {model} with a {server}-token context window ({from}){kept}: keel \
         compacts and bounds answers by it",
        model = settings.model,
        server = window.tokens,
        from = window.source.describe(),
    ));
    settings.warnings.extend(window.truncation_warning(&settings.model));
}
