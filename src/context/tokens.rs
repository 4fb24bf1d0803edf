//! Token estimates with tiktoken's `o200k_base` encoding (the GPT-4o/GPT-5
//! family; for other providers' models it is an estimate, which is all the
//! threshold needs: provider-reported usage is the truth when present).
//!
//! Invariants: the encoder is built once per process, on first use
//! ([`warm_up`] lets a caller build it off the hot path); no I/O; texts
//! too short to matter are never tokenized (a token is at least one byte,
//! so `bytes` bounds the count from above, see [`upper_bound`]).

use tiktoken_rs::CoreBPE;

use crate::protocol::{Item, ModelRequest, ReasoningItem, ToolSpec};

/// Tokens a message costs besides its text (role, separators), as in
/// OpenAI's published counting recipe.
pub const PER_ITEM_OVERHEAD: u64 = 4;

fn encoder() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

/// Builds the encoder now (it takes tens of milliseconds), so the first
/// estimate a request needs does not pay for it.
pub fn warm_up() {
    let _ = encoder();
}

/// The exact token count of `text` under `o200k_base`.
pub fn count(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    encoder().encode_ordinary(text).len() as u64
}

/// A bound no tokenization of `items` can exceed (see [`upper_bound`]).
pub fn items_upper_bound(items: &[Item]) -> u64 {
    items.iter().map(|item| item_bytes(item) as u64 + PER_ITEM_OVERHEAD).sum()
}

/// A bound no tokenization can exceed: every token covers at least one
/// byte. Used to skip counting when even the bound is under a threshold.
pub fn upper_bound(request: &ModelRequest) -> u64 {
    let items: usize = request.items.iter().map(item_bytes).sum();
    let tools: usize = request.tools.iter().map(tool_bytes).sum();
    let overhead = PER_ITEM_OVERHEAD * request.items.len() as u64;
    (request.instructions.len() + items + tools) as u64 + overhead
}

/// The estimated input tokens of `request`: instructions, tool schemas and
/// every item, each item with its overhead.
pub fn estimate_request(request: &ModelRequest) -> u64 {
    count(&request.instructions)
        + request.tools.iter().map(estimate_tool).sum::<u64>()
        + estimate_items(&request.items)
}

/// The estimated tokens of `items` (per item, so a caller can add items
/// to an earlier figure without counting the rest again).
pub fn estimate_items(items: &[Item]) -> u64 {
    items.iter().map(estimate_item).sum()
}

pub fn estimate_item(item: &Item) -> u64 {
    let text_tokens = match item {
        Item::User { text, images } => count(text) + images.iter().map(image_tokens).sum::<u64>(),
        Item::Assistant { text } | Item::Context { text, .. } => count(text),
        Item::ToolCall(call) => {
            count(&call.name)
                + count(&call.arguments)
                + call.provider_data.as_ref().map_or(0, |data| provider_data_bytes(data) as u64 / 4)
        }
        Item::ToolResult(result) => {
            count(&result.output) + result.images.iter().map(image_tokens).sum::<u64>()
        }
        Item::Reasoning(reasoning) => reasoning_tokens(reasoning),
    };
    text_tokens + PER_ITEM_OVERHEAD
}

/// An image's tokens as Anthropic counts them (width × height / 750, its
/// documented estimate; OpenAI's tiles come out close), at least 85.
pub fn image_tokens(image: &crate::protocol::ImagePart) -> u64 {
    (u64::from(image.width) * u64::from(image.height) / 750).max(85)
}

fn estimate_tool(tool: &ToolSpec) -> u64 {
    count(&tool.name) + count(&tool.description) + count(&tool.parameters.to_string())
}

/// Visible text counts; opaque blobs (encrypted reasoning, signatures,
/// redacted thinking) stand in at a quarter of their bytes (the provider
/// reports the truth afterwards).
fn reasoning_tokens(reasoning: &ReasoningItem) -> u64 {
    match reasoning {
        ReasoningItem::OpenAi { summary, encrypted_content, content, .. } => {
            summary.iter().chain(content).map(|text| count(text)).sum::<u64>()
                + encrypted_content.as_ref().map_or(0, |blob| blob.len() as u64 / 4)
        }
        ReasoningItem::AnthropicThinking { thinking, signature } => {
            count(thinking) + signature.as_ref().map_or(0, |blob| blob.len() as u64 / 4)
        }
        ReasoningItem::AnthropicRedacted { data } => data.len() as u64 / 4,
        ReasoningItem::Chat { text, provider_data, .. } => {
            count(text) + provider_data_bytes(provider_data) as u64 / 4
        }
    }
}

fn provider_data_bytes(data: &serde_json::Map<String, serde_json::Value>) -> usize {
    if data.is_empty() { 0 } else { serde_json::Value::Object(data.clone()).to_string().len() }
}

fn item_bytes(item: &Item) -> usize {
    match item {
        Item::User { text, .. } | Item::Assistant { text } | Item::Context { text, .. } => {
            text.len()
        }
        Item::ToolCall(call) => {
            call.name.len()
                + call.arguments.len()
                + call.provider_data.as_ref().map_or(0, provider_data_bytes)
        }
        Item::ToolResult(result) => result.output.len(),
        Item::Reasoning(ReasoningItem::OpenAi { summary, encrypted_content, content, .. }) => {
            summary.iter().chain(content).map(String::len).sum::<usize>()
                + encrypted_content.as_ref().map_or(0, String::len)
        }
        Item::Reasoning(ReasoningItem::AnthropicThinking { thinking, signature }) => {
            thinking.len() + signature.as_ref().map_or(0, String::len)
        }
        Item::Reasoning(ReasoningItem::AnthropicRedacted { data }) => data.len(),
        Item::Reasoning(ReasoningItem::Chat { text, provider_data, .. }) => {
            text.len() + provider_data_bytes(provider_data)
        }
    }
}

fn tool_bytes(tool: &ToolSpec) -> usize {
    tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolResult};

    /// Mixed prose and code, as a session's history holds: source files
    /// and markdown, cut into pieces of 30 lines and interleaved.
    fn mixed_corpus() -> Vec<String> {
        let code = [include_str!("../agent/step.rs"), include_str!("../policy/shell.rs")];
        let prose = [include_str!("../../AGENTS.md"), include_str!("../../README.md")];
        let chunks = |text: &str| -> Vec<String> {
            text.lines().collect::<Vec<_>>().chunks(30).map(|lines| lines.join("\n")).collect()
        };
        let code: Vec<String> = code.iter().flat_map(|text| chunks(text)).collect();
        let prose: Vec<String> = prose.iter().flat_map(|text| chunks(text)).collect();
        let mut pieces = Vec::new();
        for index in 0..code.len().max(prose.len()) {
            pieces.extend(code.get(index).cloned());
            pieces.extend(prose.get(index).cloned());
        }
        pieces
    }

    #[test]
    fn per_item_estimates_are_within_two_percent_of_the_exact_count() {
        let pieces = mixed_corpus();
        let items: Vec<Item> = pieces
            .iter()
            .enumerate()
            .map(|(index, text)| match index % 3 {
                0 => Item::user(text.clone()),
                1 => Item::ToolResult(ToolResult::ok(format!("c{index}"), text.clone())),
                _ => Item::Assistant { text: text.clone() },
            })
            .collect();
        let exact = count(&pieces.join("\n"));
        let estimate = estimate_items(&items) - PER_ITEM_OVERHEAD * items.len() as u64;
        let error = (estimate as f64 - exact as f64).abs() / exact as f64;
        assert!(exact > 5_000, "the corpus is big enough to mean something: {exact}");
        assert!(error < 0.02, "estimate {estimate} vs exact {exact}: {:.2}% off", error * 100.0);
    }

    #[test]
    fn known_strings_count_as_tiktoken_does() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert!(count("fn main() { println!(\"hi\"); }") > 5);
    }

    #[test]
    fn the_byte_bound_is_never_below_the_estimate() {
        let request = ModelRequest {
            model: "m".into(),
            instructions: "You are keel. ünïcödé ✓".into(),
            items: vec![
                Item::user("fix the parser"),
                Item::ToolCall(ToolCall {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    arguments: r#"{"path":"src/lib.rs"}"#.into(),
                    item_id: None,
                    provider_data: None,
                }),
                Item::ToolResult(ToolResult::ok("c1", "pub fn parse() {}\n".repeat(50))),
            ],
            tools: Vec::new(),
            max_output_tokens: None,
        };
        assert!(upper_bound(&request) >= estimate_request(&request));
    }
}
