//! Concurrency proven with a barrier, not timed: read-only calls of one
//! response are all in flight at once (up to the batch's limit), mutating
//! calls never overlap and run in call order. Batches come from the real `agent::schedule` and run
//! through [`run_batch`], the function the driver calls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Barrier;

use super::*;
use crate::agent::{Batch, schedule};
use crate::policy::Decision;
use crate::protocol::{ToolClass, ToolOutput};
use crate::tools::testutil::TestWorkspace;
use crate::tools::{BoxFuture, Tool, ToolError};

/// Waits until `parties` calls have reached the barrier.
struct Rendezvous(Arc<Barrier>);

impl Tool for Rendezvous {
    fn name(&self) -> &'static str {
        "rendezvous"
    }
    fn description(&self) -> &'static str {
        "waits at a barrier"
    }
    fn parameters(&self) -> Value {
        serde_json::json!({ "type": "object", "properties": {}, "required": [] })
    }
    fn class(&self) -> ToolClass {
        ToolClass::ReadOnly
    }
    fn run<'a>(
        &'a self,
        _: Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            self.0.wait().await;
            Ok(ToolOutput::new("met", crate::protocol::ToolMeta::new()))
        })
    }
}

/// Records its call order and how many calls were in flight at once; yields
/// to the scheduler in the middle so an overlap would show.
#[derive(Default)]
struct Recorder {
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    order: Mutex<Vec<String>>,
}

/// A recording tool: `writer` (mutating) or `reader` (read-only).
struct Writer(Arc<Recorder>, ToolClass);

impl Tool for Writer {
    fn name(&self) -> &'static str {
        match self.1 {
            ToolClass::Mutating => "writer",
            ToolClass::ReadOnly => "reader",
        }
    }
    fn description(&self) -> &'static str {
        "records its order"
    }
    fn parameters(&self) -> Value {
        serde_json::json!({ "type": "object", "properties": {}, "required": [] })
    }
    fn class(&self) -> ToolClass {
        self.1
    }
    fn run<'a>(
        &'a self,
        args: Value,
        _: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let now = self.0.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.0.most_in_flight.fetch_max(now, Ordering::SeqCst);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            let id = args["id"].as_str().unwrap_or_default().to_owned();
            self.0.order.lock().unwrap().push(id);
            self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolOutput::new("wrote", crate::protocol::ToolMeta::new()))
        })
    }
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: format!(r#"{{"id":"{id}"}}"#),
        item_id: None,
        provider_data: None,
    }
}

/// Schedules `calls` as the loop does (all allowed) and runs every batch in
/// order through [`run_batch`]; returns the results in call order.
async fn run_response(
    registry: &ToolRegistry,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
) -> Vec<ToolResult> {
    let judged = calls
        .into_iter()
        .map(|call| {
            let class = registry.class_of(&call.name);
            (call, class, Decision::Allow)
        })
        .collect();
    let mut results = Vec::new();
    for batch in schedule(judged) {
        let Batch::Run { calls, concurrent } = batch else { panic!("all calls are allowed") };
        let mode = BatchMode::from_concurrent(concurrent, 8);
        results.extend(run_batch(registry, &calls, mode, ctx).await.into_iter().map(|(r, _)| r));
    }
    results
}

#[tokio::test]
async fn eight_read_only_calls_are_in_flight_at_once() {
    let ws = TestWorkspace::new();
    // Nine parties: the eight calls and this test. The barrier only opens
    // once all eight calls wait at it, which a sequential run never reaches.
    let barrier = Arc::new(Barrier::new(9));
    let registry = ToolRegistry::with_tools(vec![Box::new(Rendezvous(barrier.clone()))]);
    let calls: Vec<ToolCall> = (0..8).map(|i| call(&format!("r{i}"), "rendezvous")).collect();
    let run = run_response(&registry, calls, &ws.ctx);
    let (results, _) =
        tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(run, barrier.wait()) })
            .await
            .expect("the eight calls never met at the barrier: they did not run concurrently");
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"]);
    assert!(results.iter().all(|r| !r.is_error && r.output == "met"));
}

#[tokio::test]
async fn mutating_calls_never_overlap_and_keep_call_order() {
    let ws = TestWorkspace::new();
    let recorder = Arc::new(Recorder::default());
    let registry =
        ToolRegistry::with_tools(vec![Box::new(Writer(recorder.clone(), ToolClass::Mutating))]);
    let ids = ["w0", "w1", "w2", "w3", "w4", "w5"];
    let calls = ids.iter().map(|id| call(id, "writer")).collect();
    let results = run_response(&registry, calls, &ws.ctx).await;
    assert_eq!(recorder.most_in_flight.load(Ordering::SeqCst), 1);
    assert_eq!(*recorder.order.lock().unwrap(), ids);
    assert_eq!(results.len(), ids.len());
}

#[tokio::test]
async fn a_write_between_reads_splits_them_and_keeps_its_place() {
    let ws = TestWorkspace::new();
    let recorder = Arc::new(Recorder::default());
    // Two readers, a writer, two readers: each pair must meet (concurrent)
    // and the writer runs between them.
    let first = Arc::new(Barrier::new(2));
    let registry = ToolRegistry::with_tools(vec![
        Box::new(Rendezvous(first)),
        Box::new(Writer(recorder.clone(), ToolClass::Mutating)),
    ]);
    let calls = vec![
        call("r0", "rendezvous"),
        call("r1", "rendezvous"),
        call("w", "writer"),
        call("r2", "rendezvous"),
        call("r3", "rendezvous"),
    ];
    let results =
        tokio::time::timeout(Duration::from_secs(20), run_response(&registry, calls, &ws.ctx))
            .await
            .expect("reads around the write did not run concurrently");
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids, ["r0", "r1", "w", "r2", "r3"]);
    assert_eq!(*recorder.order.lock().unwrap(), ["w"]);
}

#[tokio::test]
async fn a_concurrent_batch_keeps_to_its_limit_and_to_call_order() {
    let ws = TestWorkspace::new();
    let recorder = Arc::new(Recorder::default());
    let registry =
        ToolRegistry::with_tools(vec![Box::new(Writer(recorder.clone(), ToolClass::ReadOnly))]);
    let calls: Vec<ToolCall> = (0..6).map(|i| call(&format!("r{i}"), "reader")).collect();
    let results = run_batch(&registry, &calls, BatchMode::Concurrent { limit: 2 }, &ws.ctx).await;
    assert_eq!(recorder.most_in_flight.load(Ordering::SeqCst), 2);
    let ids: Vec<&str> = results.iter().map(|(r, _)| r.call_id.as_str()).collect();
    assert_eq!(ids, ["r0", "r1", "r2", "r3", "r4", "r5"]);
}
