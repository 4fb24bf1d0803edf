//! OpenAI Responses API (`POST {base}/responses`): the reducer of its event
//! stream (the request body is `responses_request`'s).
//!
//! Invariants: output items are kept in `output_index` order;
//! servers that omit `output_index` and ids (llama.cpp) have their events
//! matched by item id, then by position and type, so one item is never
//! counted twice. `output_item.done` values win over accumulated deltas
//! (they are equal on a healthy stream). A `response.completed` whose
//! `output` is the only copy of the output is used as the output.
//! Built-in tool items (web search, apply_patch, local shell) are not ours
//! to run and are skipped: we only offer `function` tools.

use serde_json::Value;

use super::classify::{ErrorBody, classify_stream_error, error_from_json};
use super::error::LlmError;
use super::json::{at, event_type, parse_data, str_at, u64_at};
use super::sse::SseEvent;
use crate::protocol::{
    Item, ModelResponse, ReasoningItem, StopReason, StreamEvent, ToolCall, Usage,
};

/// One output item while it streams in.
#[derive(Debug)]
enum Output {
    Message {
        id: String,
        text: String,
    },
    Reasoning {
        id: String,
        summary: Vec<String>,
        content: Vec<String>,
        encrypted: Option<String>,
    },
    Call {
        item_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
    /// Built-in tool items and anything new: displayed by nobody, skipped.
    Other,
}

/// The kind of item an event refers to when it names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Reasoning,
    Call,
    Other,
}

impl Output {
    fn from_item(item: &Value) -> Self {
        let text = |key: &str| text_of(item, key);
        match str_at(item, &["type"]) {
            Some("message") => Output::Message { id: text("id"), text: message_text(item) },
            Some("reasoning") => Output::Reasoning {
                id: text("id"),
                summary: texts(item.get("summary")),
                content: texts(item.get("content")),
                encrypted: str_at(item, &["encrypted_content"])
                    .filter(|blob| !blob.is_empty())
                    .map(str::to_owned),
            },
            Some("function_call") => Output::Call {
                item_id: text("id"),
                call_id: text("call_id"),
                name: text("name"),
                arguments: text("arguments"),
            },
            other => {
                tracing::debug!(item_type = ?other, "skipping a responses output item");
                Output::Other
            }
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Output::Message { .. } => Kind::Message,
            Output::Reasoning { .. } => Kind::Reasoning,
            Output::Call { .. } => Kind::Call,
            Output::Other => Kind::Other,
        }
    }

    /// Whether `id` names this item (its id, or a call's `call_id`, which
    /// llama.cpp uses as the `item_id` of argument deltas).
    fn has_id(&self, id: &str) -> bool {
        match self {
            Output::Message { id: own, .. } | Output::Reasoning { id: own, .. } => own == id,
            Output::Call { item_id, call_id, .. } => item_id == id || call_id == id,
            Output::Other => false,
        }
    }

    fn ids(&self) -> Vec<&str> {
        let ids: Vec<&str> = match self {
            Output::Message { id, .. } | Output::Reasoning { id, .. } => vec![id],
            Output::Call { item_id, call_id, .. } => vec![item_id, call_id],
            Output::Other => Vec::new(),
        };
        ids.into_iter().filter(|id| !id.is_empty()).collect()
    }

    /// This (final) item, with the streamed value where it has none.
    fn keeping_streamed(self, streamed: Output) -> Output {
        let or = |value: String, old: String| if value.is_empty() { old } else { value };
        match (self, streamed) {
            (Output::Message { id, text }, Output::Message { id: old_id, text: old }) => {
                Output::Message { id: or(id, old_id), text: or(text, old) }
            }
            (
                Output::Reasoning { id, summary, content, encrypted },
                Output::Reasoning { summary: old_summary, content: old_content, .. },
            ) => Output::Reasoning {
                id,
                summary: if summary.is_empty() { old_summary } else { summary },
                content: if content.is_empty() { old_content } else { content },
                encrypted,
            },
            (
                Output::Call { item_id, call_id, name, arguments },
                Output::Call {
                    item_id: old_item,
                    call_id: old_call,
                    name: old_name,
                    arguments: old,
                },
            ) => Output::Call {
                item_id: or(item_id, old_item),
                call_id: or(call_id, old_call),
                name: or(name, old_name),
                arguments: or(arguments, old),
            },
            (new, _) => new,
        }
    }
}

fn text_of(value: &Value, key: &str) -> String {
    str_at(value, &[key]).unwrap_or_default().to_owned()
}

/// The `text` of every part of a `summary` or `content` array.
fn texts(parts: Option<&Value>) -> Vec<String> {
    let parts = parts.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts.iter().map(|part| text_of(part, "text")).collect()
}

/// All `output_text` (and `refusal`) parts of a message item, joined.
fn message_text(item: &Value) -> String {
    let parts = item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    parts
        .iter()
        .filter_map(|part| str_at(part, &["text"]).or_else(|| str_at(part, &["refusal"])))
        .collect()
}

/// One output item and where it belongs.
#[derive(Debug)]
struct Slot {
    /// `output_index` when the server sent one.
    index: Option<u64>,
    output: Output,
    /// `output_item.done` arrived for it.
    done: bool,
}

/// How the response ended, once it did.
#[derive(Debug)]
enum Outcome {
    Completed,
    Incomplete(Option<String>),
}

/// Reduces a Responses event stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesAssembler {
    slots: Vec<Slot>,
    response_id: Option<String>,
    usage: Usage,
    outcome: Option<Outcome>,
    refused: bool,
}

impl ResponsesAssembler {
    pub fn feed(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        let data = parse_data(event)?;
        let index = data.get("output_index").and_then(Value::as_u64);
        let item_id = str_at(&data, &["item_id"]);
        let delta = str_at(&data, &["delta"]).unwrap_or_default();
        match event_type(event, &data) {
            "response.created" | "response.in_progress" => self.note_response(&data),
            "response.output_item.added" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                self.put_item(index, item, false, emit);
            }
            "response.output_item.done" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                self.put_item(index, item, true, emit);
            }
            "response.output_text.delta" => self.push_text(index, item_id, delta, emit),
            "response.refusal.delta" => {
                self.refused = true;
                self.push_text(index, item_id, delta, emit);
            }
            "response.output_text.done" => {
                let done = str_at(&data, &["text"]).unwrap_or_default();
                if let Some(Output::Message { text, .. }) = self.find(index, item_id, Kind::Message)
                {
                    if text.is_empty() {
                        done.clone_into(text);
                    }
                }
            }
            "response.function_call_arguments.delta" => {
                self.push_arguments(index, item_id, delta, emit);
            }
            "response.function_call_arguments.done" => {
                if let Some(Output::Call { arguments, .. }) = self.find(index, item_id, Kind::Call)
                {
                    if let Some(done) = str_at(&data, &["arguments"]) {
                        done.clone_into(arguments);
                    }
                }
            }
            "response.reasoning_summary_text.delta" => {
                let slot = u64_at(&data, &["summary_index"]) as usize;
                self.push_reasoning(index, item_id, slot, delta, Part::Summary, false);
                emit(StreamEvent::ReasoningDelta { delta: delta.to_owned() });
            }
            "response.reasoning_summary_text.done" => {
                let slot = u64_at(&data, &["summary_index"]) as usize;
                let text = str_at(&data, &["text"]).unwrap_or_default();
                self.push_reasoning(index, item_id, slot, text, Part::Summary, true);
            }
            "response.reasoning_text.delta" => {
                let slot = u64_at(&data, &["content_index"]) as usize;
                self.push_reasoning(index, item_id, slot, delta, Part::Content, false);
                emit(StreamEvent::ReasoningDelta { delta: delta.to_owned() });
            }
            "response.completed" => self.end(&data, Outcome::Completed, emit),
            "response.incomplete" => {
                let reason = str_at(&data, &["response", "incomplete_details", "reason"]);
                self.end(&data, Outcome::Incomplete(reason.map(str::to_owned)), emit);
            }
            "response.failed" => return Err(failure(at(&data, &["response", "error"]))),
            "error" => return Err(failure(Some(&data))),
            _ => {}
        }
        Ok(())
    }

    pub fn is_complete(&self) -> bool {
        self.outcome.is_some()
    }

    pub fn finish(self) -> Result<ModelResponse, LlmError> {
        let Some(outcome) = self.outcome else {
            return Err(LlmError::StreamCut { expected: "response.completed" });
        };
        let mut slots: Vec<(u64, Slot)> = self
            .slots
            .into_iter()
            .enumerate()
            .map(|(position, slot)| (slot.index.unwrap_or(position as u64), slot))
            .collect();
        slots.sort_by_key(|(order, _)| *order);
        let mut items = Vec::with_capacity(slots.len());
        for (_, slot) in slots {
            match slot.output {
                Output::Message { text, .. } => items.push(Item::Assistant { text }),
                Output::Reasoning { id, summary, content, encrypted } => {
                    items.push(Item::Reasoning(ReasoningItem::OpenAi {
                        id,
                        summary,
                        encrypted_content: encrypted,
                        content,
                    }));
                }
                Output::Call { item_id, call_id, name, arguments } => {
                    let item_id = (!item_id.is_empty() && item_id != call_id).then_some(item_id);
                    items.push(Item::ToolCall(ToolCall {
                        call_id,
                        name,
                        arguments,
                        item_id,
                        provider_data: None,
                    }));
                }
                Output::Other => {}
            }
        }
        let has_calls = items.iter().any(|item| matches!(item, Item::ToolCall(_)));
        let stop_reason = match outcome {
            Outcome::Incomplete(reason) => match reason.as_deref() {
                Some("content_filter") => StopReason::Refusal,
                Some("max_output_tokens") | None => StopReason::MaxTokens,
                Some(other) => StopReason::Other(other.to_owned()),
            },
            Outcome::Completed if has_calls => StopReason::ToolUse,
            Outcome::Completed if self.refused => StopReason::Refusal,
            Outcome::Completed => StopReason::EndTurn,
        };
        Ok(ModelResponse { items, usage: self.usage, stop_reason, response_id: self.response_id })
    }

    fn note_response(&mut self, data: &Value) {
        if let Some(id) = str_at(data, &["response", "id"]) {
            self.response_id = Some(id.to_owned());
        }
    }

    fn end(&mut self, data: &Value, outcome: Outcome, emit: &mut dyn FnMut(StreamEvent)) {
        self.note_response(data);
        if let Some(usage) = at(data, &["response", "usage"]).filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: u64_at(usage, &["input_tokens"]),
                output_tokens: u64_at(usage, &["output_tokens"]),
                cached_input_tokens: u64_at(usage, &["input_tokens_details", "cached_tokens"]),
                reasoning_tokens: u64_at(usage, &["output_tokens_details", "reasoning_tokens"]),
                cache_write_tokens: 0,
            };
        }
        // A server that streams no item events (or none we could keep)
        // still lists the output here: it is the only copy.
        if self.slots.iter().all(|slot| matches!(slot.output, Output::Other)) {
            let output = at(data, &["response", "output"]).and_then(Value::as_array);
            for (position, item) in output.into_iter().flatten().enumerate() {
                self.put_item(Some(position as u64), item, true, emit);
                if let Some(Slot { output: Output::Message { text, .. }, .. }) = self.slots.last() {
                    emit(StreamEvent::TextDelta { delta: text.clone() });
                }
            }
        }
        self.outcome = Some(outcome);
    }

    /// Where an event about an item belongs: the slot at its
    /// `output_index`, else the one its ids name, else (servers that send
    /// neither) the first unfinished one of its kind.
    fn position(&self, index: Option<u64>, ids: &[&str], kind: Kind, done: bool) -> Option<usize> {
        if let Some(index) = index {
            return self.slots.iter().position(|slot| slot.index == Some(index));
        }
        if let Some(found) =
            self.slots.iter().position(|slot| ids.iter().any(|id| slot.output.has_id(id)))
        {
            return Some(found);
        }
        let unnamed = |slot: &Slot| slot.output.ids().is_empty() || ids.is_empty();
        let open = |slot: &&Slot| !slot.done && slot.output.kind() == kind && unnamed(slot);
        match done {
            true => self.slots.iter().position(|slot| open(&slot)),
            // A delta continues the latest open item of its kind.
            false => self.slots.iter().rposition(|slot| open(&slot)),
        }
    }

    fn find(
        &mut self,
        index: Option<u64>,
        item_id: Option<&str>,
        kind: Kind,
    ) -> Option<&mut Output> {
        let ids: Vec<&str> = item_id.into_iter().collect();
        let position = self.position(index, &ids, kind, false)?;
        self.slots.get_mut(position).map(|slot| &mut slot.output)
    }

    /// `output_item.added` creates the item; `.done` replaces it, keeping
    /// streamed values the final item lacks.
    fn put_item(
        &mut self,
        index: Option<u64>,
        item: &Value,
        done: bool,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        let new = Output::from_item(item);
        let ids: Vec<String> = new.ids().into_iter().map(str::to_owned).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        match self.position(index, &ids, new.kind(), true) {
            Some(position) => {
                let slot = &mut self.slots[position];
                let streamed = std::mem::replace(&mut slot.output, Output::Other);
                slot.output = new.keeping_streamed(streamed);
                slot.done |= done;
            }
            None => {
                if let Output::Call { call_id, name, .. } = &new {
                    let event = StreamEvent::ToolCallStarted {
                        call_id: call_id.clone(),
                        name: name.clone(),
                    };
                    emit(event);
                }
                self.slots.push(Slot { index, output: new, done });
            }
        }
    }

    fn push_text(
        &mut self,
        index: Option<u64>,
        item_id: Option<&str>,
        delta: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        // Only text that lands in a message is shown, so the deltas always
        // add up to the response's text.
        if self.find(index, item_id, Kind::Message).is_none() {
            let id = item_id.unwrap_or_default().to_owned();
            self.slots.push(Slot {
                index,
                output: Output::Message { id, text: String::new() },
                done: false,
            });
        }
        if let Some(Output::Message { text, .. }) = self.find(index, item_id, Kind::Message) {
            text.push_str(delta);
            emit(StreamEvent::TextDelta { delta: delta.to_owned() });
        }
    }

    fn push_arguments(
        &mut self,
        index: Option<u64>,
        item_id: Option<&str>,
        delta: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        if let Some(Output::Call { call_id, arguments, .. }) = self.find(index, item_id, Kind::Call)
        {
            arguments.push_str(delta);
            emit(StreamEvent::ToolCallArgumentsDelta {
                call_id: call_id.clone(),
                delta: delta.to_owned(),
            });
        }
    }

    fn push_reasoning(
        &mut self,
        index: Option<u64>,
        item_id: Option<&str>,
        slot: usize,
        text: &str,
        part: Part,
        replace: bool,
    ) {
        let Some(Output::Reasoning { summary, content, .. }) =
            self.find(index, item_id, Kind::Reasoning)
        else {
            return;
        };
        let parts = match part {
            Part::Summary => summary,
            Part::Content => content,
        };
        // Indexes come from the server: grow only one slot at a time.
        if slot > parts.len() {
            return;
        }
        if slot == parts.len() {
            parts.push(String::new());
        }
        if let Some(existing) = parts.get_mut(slot) {
            if replace {
                text.clone_into(existing);
            } else {
                existing.push_str(text);
            }
        }
    }
}

/// Which text of a reasoning item an event adds to.
#[derive(Debug, Clone, Copy)]
enum Part {
    Summary,
    Content,
}

/// The error of an `error` event or of `response.failed`.
fn failure(error: Option<&Value>) -> LlmError {
    let body = error.and_then(error_from_json).unwrap_or_else(|| ErrorBody {
        message: "the response failed without an error message".to_owned(),
        ..ErrorBody::default()
    });
    classify_stream_error(body)
}
