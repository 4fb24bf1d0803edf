//! A session's window learnt from the server it talks to (issue 33): once
//! per process, before the session opens, a server on this machine is
//! asked how large a window it runs the model with
//! (`llm::probe_window`), and the settings take the smaller of that and
//! the window keel knew (configured or the model table): a server holds
//! no more than it runs with, and a user who asked for less keeps less.
//! The figure then drives everything a window does (compaction, the output
//! limit, the prompt check, the window profile) for the whole session.
//!
//! Invariants: only when the profile says to probe (`ServerProfile::probe_window`:
//! loopback hosts only); said once as a warning line, with where the figure
//! came from; a probe that learns nothing changes nothing and says nothing.

use crate::config::Settings;
use crate::llm::{PROBE_TIMEOUT, ServerWindow, probe_window};

/// Asks the server for its window when the profile says so, and applies
/// what it says to `settings` (the notice goes to `settings.warnings`).
pub async fn learn_window(settings: &mut Settings) -> Option<ServerWindow> {
    if !settings.provider.profile.probe_window {
        return None;
    }
    let window = probe_window(&settings.provider, &settings.model, PROBE_TIMEOUT).await?;
    apply(settings, &window);
    Some(window)
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
