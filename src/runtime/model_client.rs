//! The session's model client: the provider connection (one prompt-cache
//! key per session) and how full the context was at the latest request
//! (the model in use is the loop's, `LoopConfig::model`, which each
//! request names). A turn's request is streamed to the front end and its
//! outcome becomes the loop's next `Input`: the response, an overflow (the
//! loop compacts and asks again), a failure, or an interrupt. A local
//! model's calls written as text are taken as its calls where unambiguous
//! (`llm::text_tool_calls`), with a warning saying so.
//!
//! Invariant: the token encoder is warmed (built on a blocking thread) at
//! most once, once the context is past half the compaction threshold, so
//! the count the threshold check needs later never stalls a step.

use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::llm::{LlmClient, LlmError};
use crate::protocol::{ModelRequest, ModelResponse, StreamEvent};

use super::{EventSink, RuntimeEvent};

pub(super) struct ModelClient {
    llm: LlmClient,
    /// Input tokens of the latest model request: how full the context is.
    last_input_tokens: u64,
    /// The token encoder is being built in the background.
    encoder_warming: bool,
    /// The JSON Schema a turn's final answer must follow
    /// (`--output-schema`): sent with each turn's request, not with a
    /// compaction summary's.
    answer_schema: Option<serde_json::Value>,
}

/// What the loop needs to know about the context window to decide when to
/// warm the encoder: the window and the compaction threshold.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    pub(super) tokens: Option<u64>,
    pub(super) compact_threshold: f64,
}

impl ModelClient {
    /// `session_id` keeps a session's requests on one prompt cache.
    pub(super) fn new(llm: LlmClient, session_id: &str) -> Self {
        Self {
            llm: llm.with_cache_key(session_id.to_owned()),
            last_input_tokens: 0,
            encoder_warming: false,
            answer_schema: None,
        }
    }

    pub(super) fn set_answer_schema(&mut self, schema: Option<serde_json::Value>) {
        self.answer_schema = schema;
    }

    /// The provider connection, for a subagent's own client (which keys
    /// its prompt cache by its own session).
    pub(super) fn connection(&self) -> &LlmClient {
        &self.llm
    }

    pub(super) fn last_input_tokens(&self) -> u64 {
        self.last_input_tokens
    }

    /// Streams `request` without showing its text (a compaction summary);
    /// retries are told through `on_event`.
    pub(super) async fn stream_quietly(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, LlmError> {
        self.llm.stream(request, on_event, cancel).await
    }

    /// Asks the model for the turn's next step, streaming to `sink`; the
    /// outcome as the loop's next input.
    pub(super) async fn call(
        &mut self,
        request: &ModelRequest,
        sink: &mut Box<dyn EventSink>,
        window: Window,
        cancel: &CancellationToken,
    ) -> Input {
        let mut forward = |event| sink.emit(stream_event(event));
        let answer = self.answer_schema.as_ref();
        match self.llm.stream_shaped(request, answer, &mut forward, cancel).await {
            Ok(response) => {
                let response = self.calls_from_text(request, response, sink);
                self.last_input_tokens = response.usage.input_tokens;
                if should_warm(window, self.last_input_tokens, self.encoder_warming) {
                    self.encoder_warming = true;
                    tokio::task::spawn_blocking(crate::context::tokens::warm_up);
                }
                sink.emit(RuntimeEvent::ModelResponse(response.clone()));
                Input::ModelResponded(response)
            }
            Err(LlmError::Cancelled) => Input::Interrupted,
            // What an overflow leads to (elide, summarize, give up) and what
            // a failure is called is `step`'s to say: it words the warning,
            // and the driver shows the `model_error` it records.
            Err(failure)
                if matches!(failure.last_attempt(), LlmError::ContextLengthExceeded { .. }) =>
            {
                Input::ContextOverflow { message: failure.to_string() }
            }
            Err(failure) => Input::ModelFailed { message: failure.to_string() },
        }
    }
}

impl ModelClient {
    /// `response` with the calls a local model wrote as text, when they
    /// are unambiguous (`llm::recover_text_calls`), said in a warning;
    /// never for a cloud provider or an answer held to a schema.
    fn calls_from_text(
        &self,
        request: &ModelRequest,
        response: ModelResponse,
        sink: &mut Box<dyn EventSink>,
    ) -> ModelResponse {
        if self.llm.config().profile.local_server.is_none() || self.answer_schema.is_some() {
            return response;
        }
        let Some(recovered) = crate::llm::recover_text_calls(&request.tools, &response) else {
            return response;
        };
        sink.emit(RuntimeEvent::Warning {
            message: format!(
                "the model wrote its tool call as text ({}), not as a tool call: keel runs {} as \
                 if called (the server may not pass tools to the model)",
                recovered.form.describe(),
                recovered.names.join(", ")
            ),
        });
        recovered.response
    }
}

/// Whether to start building the token encoder: the window is known, the
/// context is past half the compaction threshold, and it is not being
/// built already.
fn should_warm(window: Window, last_input_tokens: u64, warming: bool) -> bool {
    let Some(tokens) = window.tokens else { return false };
    let limit = tokens as f64 * window.compact_threshold;
    !warming && (last_input_tokens as f64) >= limit / 2.0
}

/// What the front ends hear about a streamed event: retries are events of
/// their own, the rest streams as it came.
fn stream_event(event: StreamEvent) -> RuntimeEvent {
    match event {
        StreamEvent::Retrying { attempt, max_attempts, reason, delay_ms } => {
            RuntimeEvent::Retrying {
                attempt,
                max_attempts,
                reason,
                delay: std::time::Duration::from_millis(delay_ms),
            }
        }
        StreamEvent::TextDelta { .. }
        | StreamEvent::ReasoningDelta { .. }
        | StreamEvent::ToolCallStarted { .. }
        | StreamEvent::ToolCallArgumentsDelta { .. } => RuntimeEvent::Stream(event),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(tokens: Option<u64>) -> Window {
        Window { tokens, compact_threshold: 0.8 }
    }

    #[test]
    fn the_encoder_is_warmed_once_past_half_the_threshold_and_only_with_a_window() {
        // 100k window at 0.8: compaction at 80k, warm from 40k.
        assert!(!should_warm(window(Some(100_000)), 39_999, false));
        assert!(should_warm(window(Some(100_000)), 40_000, false));
        assert!(!should_warm(window(Some(100_000)), 90_000, true), "already warming");
        assert!(!should_warm(window(None), 1_000_000, false), "no window, no threshold");
    }

    #[test]
    fn retries_are_their_own_event_and_text_streams_through() {
        let retry = StreamEvent::Retrying {
            attempt: 2,
            max_attempts: 5,
            reason: "429".into(),
            delay_ms: 1500,
        };
        let RuntimeEvent::Retrying { attempt: 2, delay, .. } = stream_event(retry) else {
            panic!("a retry is announced as such")
        };
        assert_eq!(delay, std::time::Duration::from_millis(1500));
        let text = StreamEvent::TextDelta { delta: "hi".into() };
        assert!(matches!(stream_event(text), RuntimeEvent::Stream(_)));
    }
}
