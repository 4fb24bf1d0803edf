//! [`run_batch`]: runs one batch of tool calls the way the runtime does,
//! concurrently (read-only batches) or one after another in call order.
//!
//! Invariants: results come back in call order whatever order the calls
//! finished in; a concurrent batch polls all its calls at once (so eight
//! read-only calls are in flight together), a sequential batch starts a
//! call only after the previous one has finished. Which calls may share a
//! concurrent batch is decided by `agent::schedule`, not here.

use futures_util::future::join_all;
use serde_json::Value;

use super::{ToolContext, ToolRegistry};
use crate::protocol::{ToolCall, ToolResult};

/// Whether a batch's calls may run at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMode {
    Concurrent,
    Sequential,
}

impl BatchMode {
    /// The mode for `agent::Effect::RunBatch`'s `concurrent` flag.
    pub fn from_concurrent(concurrent: bool) -> Self {
        if concurrent { Self::Concurrent } else { Self::Sequential }
    }
}

/// Runs `calls` and returns their results with metadata, in call order.
pub async fn run_batch(
    registry: &ToolRegistry,
    calls: &[ToolCall],
    mode: BatchMode,
    ctx: &ToolContext,
) -> Vec<(ToolResult, Value)> {
    match mode {
        BatchMode::Concurrent => {
            join_all(calls.iter().map(|call| registry.run_call(call, ctx))).await
        }
        BatchMode::Sequential => {
            let mut results = Vec::with_capacity(calls.len());
            for call in calls {
                results.push(registry.run_call(call, ctx).await);
            }
            results
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
