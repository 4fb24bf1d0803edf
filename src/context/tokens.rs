//! Token estimates with tiktoken's `o200k_base` encoding (the GPT-4o/GPT-5
//! family; for other providers' models it is an estimate, which is all the
//! threshold needs: provider-reported usage is the truth when present).
//!
//! A local model's tokenizer can count quite differently (issue 33): when
//! the server on this machine has a tokenizer endpoint, the runtime counts
//! a fixed sample there once per session and the [`TokenScale`] between
//! the two counts turns every estimate into the server's tokens
//! (`runtime::server_window`). It is a plain value in the loop's config,
//! fixed for the session; without one the scale is 1.
//!
//! Invariants: the encoder is built once per process, on first use
//! ([`warm_up`] lets a caller build it off the hot path); no I/O; texts
//! too short to matter are never tokenized (a token is at least one byte,
//! so `bytes` bounds the count from above, see [`upper_bound`]; this holds
//! for any tokenizer, so a scale never changes the bound).

use tiktoken_rs::CoreBPE;

use crate::protocol::strict_schema::StrictDialect;
use crate::protocol::{Item, ModelRequest, ReasoningItem, sent_schemas};

/// Tokens a message costs besides its text (role, separators), as in
/// OpenAI's published counting recipe.
pub const PER_ITEM_OVERHEAD: u64 = 4;

/// How many tokens a server's tokenizer counts for each `o200k_base`
/// token, from one sample counted by both: `server / reference`, applied
/// in integers so a figure is the same on every machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenScale {
    server: u64,
    reference: u64,
}

impl Default for TokenScale {
    fn default() -> Self {
        Self::IDENTITY
    }
}

impl TokenScale {
    /// No server count: estimates are `o200k_base`'s.
    pub const IDENTITY: Self = Self { server: 1, reference: 1 };
    /// Ratios past this either way are taken for a broken endpoint (no
    /// real tokenizer is four times finer or coarser than `o200k_base`).
    const MAX_RATIO: u64 = 4;

    /// The scale from a sample the server counted `server` tokens and
    /// `o200k_base` `reference` tokens; `None` for an empty count or a
    /// ratio past [`Self::MAX_RATIO`] either way.
    pub fn from_counts(server: u64, reference: u64) -> Option<Self> {
        let plausible = server > 0
            && reference > 0
            && server <= reference.saturating_mul(Self::MAX_RATIO)
            && reference <= server.saturating_mul(Self::MAX_RATIO);
        plausible.then_some(Self { server, reference })
    }

    /// `tokens` estimated by `o200k_base` as the server counts them
    /// (rounded to the nearest token).
    pub fn apply(self, tokens: u64) -> u64 {
        Self::scaled(tokens, self.server, self.reference)
    }

    /// A budget in the server's tokens as `o200k_base` tokens (what the
    /// pure estimators compare against).
    pub fn to_reference(self, tokens: u64) -> u64 {
        Self::scaled(tokens, self.reference, self.server)
    }

    /// Server tokens per `o200k_base` token, for messages.
    pub fn ratio(self) -> f64 {
        self.server as f64 / self.reference as f64
    }

    fn scaled(tokens: u64, times: u64, over: u64) -> u64 {
        let value =
            (u128::from(tokens) * u128::from(times) + u128::from(over / 2)) / u128::from(over);
        u64::try_from(value).unwrap_or(u64::MAX)
    }
}

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
/// The tools count as sent under `strict` (`LoopConfig::strict_tools`).
pub fn upper_bound(request: &ModelRequest, strict: Option<StrictDialect>) -> u64 {
    let items: usize = request.items.iter().map(item_bytes).sum();
    let tools: usize = sent_schemas(&request.tools, strict)
        .iter()
        .map(|(tool, schema)| tool.name.len() + tool.description.len() + schema.to_string().len())
        .sum();
    let overhead = PER_ITEM_OVERHEAD * request.items.len() as u64;
    (request.instructions.len() + items + tools) as u64 + overhead
}

/// The estimated input tokens of `request`: instructions, tool schemas (as
/// sent under `strict`, `LoopConfig::strict_tools`: the strict forms are
/// larger) and every item, each item with its overhead.
pub fn estimate_request(request: &ModelRequest, strict: Option<StrictDialect>) -> u64 {
    let tools: u64 = sent_schemas(&request.tools, strict)
        .iter()
        .map(|(tool, schema)| {
            count(&tool.name) + count(&tool.description) + count(&schema.to_string())
        })
        .sum();
    count(&request.instructions) + tools + estimate_items(&request.items)
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
    fn a_scale_turns_estimates_into_the_server_s_tokens_and_back() {
        assert_eq!(TokenScale::IDENTITY.apply(1234), 1234);
        let finer = TokenScale::from_counts(6000, 3750).unwrap();
        assert_eq!(finer.apply(3750), 6000);
        assert_eq!(finer.apply(1000), 1600);
        assert_eq!(finer.to_reference(1600), 1000);
        assert!((finer.ratio() - 1.6).abs() < 1e-9);
        assert_eq!(TokenScale::from_counts(0, 100), None, "no count");
        assert_eq!(TokenScale::from_counts(100, 0), None);
        assert_eq!(TokenScale::from_counts(401, 100), None, "a broken endpoint");
        assert_eq!(TokenScale::from_counts(100, 401), None);
        assert!(TokenScale::from_counts(400, 100).is_some());
        assert_eq!(TokenScale::default(), TokenScale::IDENTITY);
        assert_eq!(finer.apply(u64::MAX), u64::MAX, "saturates");
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
        assert!(upper_bound(&request, None) >= estimate_request(&request, None));
    }
}
