//! [`run_batch`]: runs one batch of tool calls the way the runtime does,
//! concurrently (read-only batches) or one after another in call order.
//!
//! Invariants: results come back in call order whatever order the calls
//! finished in; a concurrent batch has up to its limit of calls in flight
//! at once (so eight read-only calls under a limit of eight are all in
//! flight together), each with the context's cancellation, so cancelling
//! ends every running call; a sequential batch starts a call only after
//! the previous one has finished. Which calls may share a concurrent batch
//! is decided by `agent::schedule`, not here.

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use super::{ToolContext, ToolRegistry};
use crate::protocol::{ToolCall, ToolMeta, ToolResult};

/// Whether a batch's calls may run at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    /// At most `limit` calls in flight at once (at least one).
    Concurrent {
        limit: usize,
    },
    Sequential,
}

impl BatchMode {
    /// The mode for `agent::Effect::RunBatch`'s `concurrent` flag, with the
    /// session's bound on calls in flight (`[shell] max_parallel`).
    pub fn from_concurrent(concurrent: bool, limit: usize) -> Self {
        if concurrent { Self::Concurrent { limit } } else { Self::Sequential }
    }
}

/// Runs `calls` and returns their results with metadata, in call order.
pub async fn run_batch(
    registry: &ToolRegistry,
    calls: &[ToolCall],
    mode: BatchMode,
    ctx: &ToolContext,
) -> Vec<(ToolResult, ToolMeta)> {
    match mode {
        BatchMode::Concurrent { limit } => run_bounded(registry, calls, limit.max(1), ctx).await,
        BatchMode::Sequential => {
            let mut results = Vec::with_capacity(calls.len());
            for call in calls {
                results.push(registry.run_call(call, ctx).await);
            }
            results
        }
    }
}

/// Runs `calls` with at most `limit` in flight, starting the next one as
/// soon as any running one ends (a slow first call holds up no other);
/// results in call order.
async fn run_bounded(
    registry: &ToolRegistry,
    calls: &[ToolCall],
    limit: usize,
    ctx: &ToolContext,
) -> Vec<(ToolResult, ToolMeta)> {
    let mut slots: Vec<Option<(ToolResult, ToolMeta)>> = vec![None; calls.len()];
    let mut waiting = calls.iter().enumerate();
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < limit {
            let Some((index, call)) = waiting.next() else { break };
            running.push(async move { (index, registry.run_call(call, ctx).await) });
        }
        let Some((index, result)) = running.next().await else { break };
        slots[index] = Some(result);
    }
    slots.into_iter().flatten().collect()
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
