//! The items of the `--json` stream (README "`keel exec --json`"): which
//! are open, their ids, and the `item_started` / `item_completed` lines.
//!
//! Invariant (the contract scripts pair on): every `item_started` is
//! followed by exactly one `item_completed` with the same `item.id`, and
//! every `item_completed` follows its `item_started`. Ids are `item_N`,
//! unique over the whole stream (subagents included), so pairing needs no
//! other key. A message or reasoning cut before the model's response
//! completes with the text streamed so far and `status` `interrupted`
//! (the user stopped the turn) or `failed` (the request failed or is
//! retried, when its text comes again in a new item). A call that never
//! ran (declined, refused, or answered by a resumed session) starts right
//! before it completes.

use serde_json::{Value, json};

use crate::protocol::{Item, ReasoningItem, ToolCall, ToolMeta, ToolResult};

/// How an agent message or reasoning item ended (its `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    /// The model's response holds it in full.
    Completed,
    /// The user stopped the turn while it streamed.
    Interrupted,
    /// The request failed (or is retried) while it streamed.
    Failed,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
        }
    }
}

/// What an open item is, within its source.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Message,
    Reasoning,
    Call(String),
}

#[derive(Debug)]
struct OpenItem {
    /// `""` for this session, else the chain of `agent` call ids
    /// (`outer/inner`) its subagent runs for.
    source: String,
    kind: Kind,
    id: String,
    /// A call's item as it started; a message's or reasoning's text
    /// streamed so far.
    started: Value,
    text: String,
}

/// The open items of a stream, in the order they started.
#[derive(Debug, Default)]
pub(super) struct Items {
    next_id: u64,
    open: Vec<OpenItem>,
}

fn started_line(item: &Value) -> Value {
    json!({"type": "item_started", "item": item})
}

fn completed_line(item: Value) -> Value {
    json!({"type": "item_completed", "item": item})
}

/// Whether `source` is `scope` or one of its subagents (`""`: all).
fn within(source: &str, scope: &str) -> bool {
    scope.is_empty()
        || source == scope
        || source.strip_prefix(scope).is_some_and(|rest| rest.starts_with('/'))
}

impl Items {
    fn mint(&mut self) -> String {
        let id = format!("item_{}", self.next_id);
        self.next_id += 1;
        id
    }

    fn position(&self, source: &str, kind: &Kind) -> Option<usize> {
        self.open.iter().position(|open| open.source == source && open.kind == *kind)
    }

    /// Streamed text (`reasoning` false) or reasoning of `source`: starts
    /// its item on the first piece that is not empty.
    pub(super) fn delta(&mut self, source: &str, reasoning: bool, delta: &str) -> Option<Value> {
        let kind = if reasoning { Kind::Reasoning } else { Kind::Message };
        if let Some(index) = self.position(source, &kind) {
            self.open[index].text.push_str(delta);
            return None;
        }
        if delta.is_empty() {
            return None;
        }
        let id = self.mint();
        let name = if reasoning { "reasoning" } else { "agent_message" };
        let started = json!({"id": id, "type": name});
        let line = started_line(&started);
        self.open.push(OpenItem {
            source: source.to_owned(),
            kind,
            id,
            started,
            text: delta.to_owned(),
        });
        Some(line)
    }

    /// A complete model response of `source`: each message and reasoning
    /// completes (the streamed item it was, or one started now), and
    /// whatever streamed without a place in it completes as it streamed.
    pub(super) fn response(&mut self, source: &str, items: &[Item]) -> Vec<Value> {
        let mut out = Vec::new();
        for item in items {
            let (kind, name, text) = match item {
                Item::Assistant { text } => (Kind::Message, "agent_message", text.clone()),
                Item::Reasoning(reasoning) => {
                    (Kind::Reasoning, "reasoning", reasoning_text(reasoning))
                }
                // Tool calls are items when they start and finish.
                Item::ToolCall(_)
                | Item::ToolResult(_)
                | Item::User { .. }
                | Item::Context { .. } => {
                    continue;
                }
            };
            let id = match self.position(source, &kind) {
                Some(index) => self.open.remove(index).id,
                None => {
                    let id = self.mint();
                    out.push(started_line(&json!({"id": id, "type": name})));
                    id
                }
            };
            out.push(completed_line(
                json!({"id": id, "type": name, "text": text, "status": "completed"}),
            ));
        }
        out.extend(self.close_streams(source, Ending::Completed));
        out
    }

    /// Completes the message and reasoning `source` is streaming, with
    /// their text so far: the response they were part of will not come.
    pub(super) fn close_streams(&mut self, source: &str, ending: Ending) -> Vec<Value> {
        let mut out = Vec::new();
        let mut index = 0;
        while index < self.open.len() {
            let open = &self.open[index];
            if open.source == source && !is_call(open) {
                let open = self.open.remove(index);
                out.push(stream_completed(open, ending));
            } else {
                index += 1;
            }
        }
        out
    }

    /// A call of `source` starts.
    pub(super) fn call_started(&mut self, source: &str, call: &ToolCall) -> Value {
        let id = self.mint();
        let started = call_json(&id, call);
        let line = started_line(&started);
        self.open.push(OpenItem {
            source: source.to_owned(),
            kind: Kind::Call(call.call_id.clone()),
            id,
            started,
            text: String::new(),
        });
        line
    }

    /// A call of `source` has its result. One that never started here
    /// (declined, refused, answered by a resumed session) starts now. An
    /// `agent` call's subagent is over: anything it left open completes.
    pub(super) fn call_finished(
        &mut self,
        source: &str,
        call: &ToolCall,
        result: &ToolResult,
        meta: &ToolMeta,
    ) -> Vec<Value> {
        let mut out = self.close_within(&subagent_source(source, &call.call_id), Ending::Failed);
        let kind = Kind::Call(call.call_id.clone());
        let mut item = match self.position(source, &kind) {
            Some(index) => self.open.remove(index).started,
            None => {
                let id = self.mint();
                let started = call_json(&id, call);
                out.push(started_line(&started));
                started
            }
        };
        item["output"] = json!(result.output);
        item["is_error"] = json!(result.is_error);
        item["meta"] = meta.to_value();
        out.push(completed_line(item));
        out
    }

    /// Completes every item open in `scope` and its subagents (`""`: all),
    /// latest first: the turn they belong to is over.
    pub(super) fn close_within(&mut self, scope: &str, ending: Ending) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(index) = self.open.iter().rposition(|open| within(&open.source, scope)) {
            let open = self.open.remove(index);
            out.push(if is_call(&open) {
                let mut item = open.started;
                item["output"] = json!("keel stopped before this call was answered");
                item["is_error"] = json!(true);
                item["meta"] = json!({});
                completed_line(item)
            } else {
                stream_completed(open, ending)
            });
        }
        out
    }
}

fn is_call(open: &OpenItem) -> bool {
    matches!(open.kind, Kind::Call(_))
}

fn stream_completed(open: OpenItem, ending: Ending) -> Value {
    let mut item = open.started;
    item["text"] = json!(open.text);
    item["status"] = json!(ending.as_str());
    completed_line(item)
}

/// The source of the subagent an `agent` call `call_id` of `source` runs.
pub(super) fn subagent_source(source: &str, call_id: &str) -> String {
    if source.is_empty() { call_id.to_owned() } else { format!("{source}/{call_id}") }
}

fn call_json(id: &str, call: &ToolCall) -> Value {
    json!({"id": id, "type": "tool_call", "call_id": call.call_id, "name": call.name,
        "arguments": call.arguments})
}

fn reasoning_text(reasoning: &ReasoningItem) -> String {
    match reasoning {
        ReasoningItem::OpenAi { summary, .. } => summary.join("\n"),
        ReasoningItem::AnthropicThinking { thinking, .. } => thinking.clone(),
        ReasoningItem::AnthropicRedacted { .. } => String::new(),
        ReasoningItem::Chat { text, .. } => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: "shell".into(),
            arguments: "{}".into(),
            item_id: None,
            provider_data: None,
        }
    }

    fn finished(items: &mut Items, source: &str, id: &str) -> Vec<Value> {
        let result = ToolResult {
            call_id: id.into(),
            output: "o".into(),
            is_error: false,
            images: Vec::new(),
        };
        items.call_finished(source, &call(id), &result, &ToolMeta::new())
    }

    /// Each id starts once, then completes once, in that order.
    fn assert_paired(lines: &[Value]) {
        let mut open = std::collections::BTreeSet::new();
        let mut done = std::collections::BTreeSet::new();
        for line in lines {
            let id = line["item"]["id"].as_str().unwrap().to_owned();
            match line["type"].as_str() {
                Some("item_started") => assert!(open.insert(id.clone()) && !done.contains(&id)),
                Some("item_completed") => assert!(open.remove(&id) && done.insert(id)),
                other => panic!("{other:?}"),
            }
        }
        assert!(open.is_empty(), "never completed: {open:?}");
    }

    #[test]
    fn an_interrupted_message_completes_with_what_streamed() {
        let mut items = Items::default();
        assert!(items.delta("", false, "").is_none(), "nothing streamed yet");
        let mut lines: Vec<Value> = items.delta("", false, "Hel").into_iter().collect();
        assert!(items.delta("", false, "lo").is_none(), "one start per message");
        lines.extend(items.close_within("", Ending::Interrupted));
        assert_paired(&lines);
        assert_eq!(
            lines[1]["item"],
            json!({"id": "item_0", "type": "agent_message", "text": "Hello",
                "status": "interrupted"})
        );
    }

    #[test]
    fn a_call_that_never_ran_starts_right_before_it_completes() {
        let mut items = Items::default();
        let lines = finished(&mut items, "", "c1");
        assert_paired(&lines);
        assert_eq!(lines[0]["item"]["call_id"], "c1");
        assert_eq!(lines[1]["item"]["output"], "o");
    }

    #[test]
    fn a_retried_message_fails_and_its_text_comes_again_as_a_new_item() {
        let mut items = Items::default();
        let mut lines: Vec<Value> = items.delta("", false, "half").into_iter().collect();
        lines.extend(items.close_streams("", Ending::Failed));
        lines.extend(items.delta("", true, "think"));
        lines.extend(items.delta("", false, "whole"));
        let response = [
            Item::Reasoning(ReasoningItem::Chat {
                text: "think".into(),
                field: String::new(),
                provider_data: serde_json::Map::new(),
            }),
            Item::Assistant { text: "whole".into() },
        ];
        lines.extend(items.response("", &response));
        assert_paired(&lines);
        assert_eq!(lines[1]["item"]["status"], "failed");
        assert_eq!(lines[1]["item"]["text"], "half");
        let texts: Vec<&Value> = lines.iter().map(|l| &l["item"]["text"]).collect();
        assert_eq!(texts[4..], [&json!("think"), &json!("whole")]);
    }

    #[test]
    fn a_subagents_open_items_complete_when_its_call_does() {
        let mut items = Items::default();
        let mut lines = vec![items.call_started("", &call("agent"))];
        lines.extend(items.delta("agent", false, "sub"));
        lines.push(items.call_started("agent", &call("c1")));
        // The same call id in another source is another item.
        lines.push(items.call_started("", &call("c1")));
        lines.extend(finished(&mut items, "", "c1"));
        lines.extend(finished(&mut items, "", "agent"));
        assert_paired(&lines);
        let ids: Vec<&str> = lines.iter().map(|l| l["item"]["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["item_0", "item_1", "item_2", "item_3", "item_3", "item_2", "item_1", "item_0"]
        );
    }

    #[test]
    fn a_response_without_streaming_starts_its_items() {
        let mut items = Items::default();
        let lines = items.response("", &[Item::Assistant { text: "hi".into() }]);
        assert_paired(&lines);
        assert_eq!(lines[1]["item"]["status"], "completed");
    }
}
