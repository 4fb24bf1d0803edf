//! Each provider's published prompt-caching rules, applied to the request
//! bodies a client sent, and the bill they make next to the ideal one
//! (every request reads all of the previous one from the cache).
//!
//! - OpenAI (Responses and Chat Completions): automatic; a request reads
//!   the longest prefix it shares with an earlier request to the same
//!   model, counted in 128-token steps from 1024 tokens; cached input is
//!   billed at 0.1.
//! - Anthropic Messages: only at `cache_control` breakpoints (at most 4 per
//!   request). A breakpoint reads the longest earlier-written prefix ending
//!   at it or at one of the 20 blocks before it; the prefix up to each
//!   breakpoint is written (from 1024 tokens). Reads are billed at 0.1,
//!   writes at 1.25, the rest at 1.
//!
//! Prefixes are compared block by block (`canon.rs`); tokens are counted
//! with o200k (`keel::context::tokens`), the same for every client.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use super::canon::{Block, Protocol, blocks, shared_prefix};

/// Cached input is billed at this share of the input price.
pub const READ_PRICE: f64 = 0.1;
/// Anthropic cache writes (5-minute TTL) cost this share.
pub const WRITE_PRICE: f64 = 1.25;
/// Shortest prefix either provider caches, in tokens.
const MIN_CACHED: u64 = 1024;
/// OpenAI caches in steps of this many tokens.
const OPENAI_STEP: u64 = 128;
/// How far back from a breakpoint Anthropic looks for an earlier entry.
const LOOKBACK_BLOCKS: usize = 20;

/// What a sequence of requests cost, in input-token units.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bill {
    pub requests: usize,
    /// Input tokens sent, all requests together.
    pub input: u64,
    pub read: u64,
    pub written: u64,
    pub billed: f64,
    /// The bill if every request read all of the previous one.
    pub ideal: f64,
    /// Requests with more than 4 breakpoints (Anthropic rejects them).
    pub over_breakpoints: usize,
}

impl Bill {
    pub fn ratio(&self) -> f64 {
        if self.input == 0 { 0.0 } else { self.billed / self.input as f64 }
    }

    pub fn ideal_ratio(&self) -> f64 {
        if self.input == 0 { 0.0 } else { self.ideal / self.input as f64 }
    }
}

/// One request as the cache sees it.
struct Seen {
    model: String,
    /// Cumulative tokens after each block (`tokens[0]` is 0).
    tokens: Vec<u64>,
    /// Hash of the prefix ending after each block (`hashes[0]` empty).
    hashes: Vec<u64>,
    blocks: Vec<Block>,
}

fn seen(protocol: Protocol, body: &Value, count: &dyn Fn(&str) -> u64) -> Seen {
    let blocks = blocks(protocol, body);
    let mut tokens = vec![0];
    let mut hashes = vec![0];
    for block in &blocks {
        tokens.push(tokens.last().copied().unwrap_or(0) + count(&block.text));
        let mut hasher = DefaultHasher::new();
        hashes.last().copied().unwrap_or(0).hash(&mut hasher);
        block.text.hash(&mut hasher);
        hashes.push(hasher.finish());
    }
    let model = body["model"].as_str().unwrap_or("").to_owned();
    Seen { model, tokens, hashes, blocks }
}

fn openai_cached(shared_tokens: u64) -> u64 {
    if shared_tokens < MIN_CACHED { 0 } else { shared_tokens / OPENAI_STEP * OPENAI_STEP }
}

/// The bill of `bodies` (in the order they were sent) under `protocol`'s
/// caching rules.
pub fn bill(protocol: Protocol, bodies: &[Value], count: &dyn Fn(&str) -> u64) -> Bill {
    let requests: Vec<Seen> = bodies.iter().map(|body| seen(protocol, body, count)).collect();
    let mut out = Bill { requests: requests.len(), ..Bill::default() };
    // Anthropic: prefixes written so far, by model and prefix hash.
    let mut written: HashMap<(String, u64), u64> = HashMap::new();
    for (n, request) in requests.iter().enumerate() {
        let total = request.tokens.last().copied().unwrap_or(0);
        out.input += total;
        let previous = n.checked_sub(1).map(|p| &requests[p]);
        let previous_total = previous.map_or(0, |p| p.tokens.last().copied().unwrap_or(0));
        let (read, write) = match protocol {
            Protocol::Responses | Protocol::Chat => {
                let shared = requests[..n]
                    .iter()
                    .filter(|earlier| earlier.model == request.model)
                    .map(|earlier| request.tokens[shared_prefix(&earlier.blocks, &request.blocks)])
                    .max()
                    .unwrap_or(0);
                let ideal_read = openai_cached(previous_total.min(total));
                out.ideal += (total - ideal_read) as f64 + READ_PRICE * ideal_read as f64;
                (openai_cached(shared), 0)
            }
            Protocol::Anthropic => {
                let ideal_read =
                    if previous_total >= MIN_CACHED { previous_total.min(total) } else { 0 };
                let ideal_write = if total >= MIN_CACHED { total - ideal_read } else { 0 };
                out.ideal += (total - ideal_read - ideal_write) as f64
                    + READ_PRICE * ideal_read as f64
                    + WRITE_PRICE * ideal_write as f64;
                anthropic(request, &mut written, &mut out.over_breakpoints)
            }
        };
        out.read += read;
        out.written += write;
        out.billed +=
            (total - read - write) as f64 + READ_PRICE * read as f64 + WRITE_PRICE * write as f64;
    }
    out
}

/// Tokens read and written by one Anthropic request.
fn anthropic(
    request: &Seen,
    written: &mut HashMap<(String, u64), u64>,
    over_breakpoints: &mut usize,
) -> (u64, u64) {
    let breakpoints: Vec<usize> = request
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, block)| block.breakpoint)
        .map(|(at, _)| at + 1)
        .collect();
    if breakpoints.len() > 4 {
        *over_breakpoints += 1;
    }
    let key = |end: usize| (request.model.clone(), request.hashes[end]);
    let mut read = 0;
    for &end in &breakpoints {
        let earliest = end.saturating_sub(LOOKBACK_BLOCKS).max(1);
        if let Some(hit) = (earliest..=end).rev().find(|&at| written.contains_key(&key(at))) {
            read = read.max(request.tokens[hit]);
        }
    }
    let mut write_end = read;
    for &end in &breakpoints {
        let tokens = request.tokens[end];
        if tokens >= MIN_CACHED && tokens > read {
            written.insert(key(end), tokens);
            write_end = write_end.max(tokens);
        }
    }
    (read, write_end - read)
}
