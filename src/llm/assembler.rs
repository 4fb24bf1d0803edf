//! The protocol-neutral face of the three stream reducers: one enum that
//! takes decoded SSE events and yields [`StreamEvent`]s and, at the end, a
//! [`ModelResponse`]. The JSON accessors the reducers share are in
//! `json.rs` (so no reducer imports this dispatcher).
//!
//! Invariants: pure (no I/O, clock or randomness), so a recorded stream
//! always reduces to the same result; a response exists only once the
//! protocol's completion event was seen, otherwise `finish` reports
//! [`LlmError::StreamCut`].

use super::ProviderKind;
use super::anthropic::AnthropicAssembler;
use super::error::LlmError;
use super::openai_chat::ChatAssembler;
use super::openai_responses::ResponsesAssembler;
use super::sse::SseEvent;
use crate::protocol::{ModelResponse, StreamEvent};

/// A stream reducer for one provider protocol.
#[derive(Debug)]
pub(crate) enum Assembler {
    Responses(ResponsesAssembler),
    Chat(ChatAssembler),
    Anthropic(AnthropicAssembler),
}

impl Assembler {
    pub fn new(kind: ProviderKind) -> Self {
        match kind {
            ProviderKind::OpenAiResponses => Assembler::Responses(ResponsesAssembler::default()),
            ProviderKind::OpenAiChat => Assembler::Chat(ChatAssembler::default()),
            ProviderKind::Anthropic => Assembler::Anthropic(AnthropicAssembler::default()),
        }
    }

    /// Reduces one event; an `Err` ends the stream (provider error events,
    /// malformed data).
    pub fn feed(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        // Proxies send `data:` with nothing (or blanks) as a heartbeat.
        if event.data.trim().is_empty() {
            return Ok(());
        }
        match self {
            Assembler::Responses(inner) => inner.feed(event, emit),
            Assembler::Chat(inner) => inner.feed(event, emit),
            Assembler::Anthropic(inner) => inner.feed(event, emit),
        }
    }

    /// Feeds a batch of decoded events until one completes the stream
    /// (returns `true`) or fails. `at_eof` marks the events the decoder
    /// flushed when the body ended: one whose data does not parse was cut
    /// mid-line, so it ends the feeding and `finish` reports the cut (a
    /// retryable error) instead of a malformed stream.
    pub fn feed_events(
        &mut self,
        events: impl IntoIterator<Item = SseEvent>,
        at_eof: bool,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<bool, LlmError> {
        for event in events {
            match self.feed(&event, emit) {
                Ok(()) if self.is_complete() => return Ok(true),
                Ok(()) => {}
                Err(LlmError::MalformedStream { .. }) if at_eof => return Ok(false),
                Err(err) => return Err(err),
            }
        }
        Ok(false)
    }

    /// True once the completion event arrived; nothing after it matters.
    pub fn is_complete(&self) -> bool {
        match self {
            Assembler::Responses(inner) => inner.is_complete(),
            Assembler::Chat(inner) => inner.is_complete(),
            Assembler::Anthropic(inner) => inner.is_complete(),
        }
    }

    /// The response in an unstreamed body (`"stream": false`), usage
    /// clamped; `None` for the protocols whose unstreamed answer keel does
    /// not read (only Chat Completions is read).
    pub fn unstreamed(
        kind: ProviderKind,
        body: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Option<Result<ModelResponse, LlmError>> {
        match kind {
            ProviderKind::OpenAiChat => Some(
                super::openai_chat::unstreamed_response(body, emit)
                    .map(|response| ModelResponse { usage: response.usage.clamped(), ..response }),
            ),
            ProviderKind::OpenAiResponses | ProviderKind::Anthropic => None,
        }
    }

    /// The assembled response, or [`LlmError::StreamCut`] when the stream
    /// ended before its completion event. The server's usage figures are
    /// clamped ([`crate::protocol::Usage::clamped`]): they are untrusted input.
    pub fn finish(self) -> Result<ModelResponse, LlmError> {
        let response = match self {
            Assembler::Responses(inner) => inner.finish(),
            Assembler::Chat(inner) => inner.finish(),
            Assembler::Anthropic(inner) => inner.finish(),
        }?;
        Ok(ModelResponse { usage: response.usage.clamped(), ..response })
    }
}
