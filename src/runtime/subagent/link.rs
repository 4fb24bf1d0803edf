//! How children talk to their parent while a batch with `agent` calls
//! runs: each child's events go up a channel and reach the parent's front
//! end wrapped as [`RuntimeEvent::Subagent`] (a grandchild's wrapped twice),
//! and its approval requests go to the parent's own [`Approver`] (the TUI
//! asks the user, `exec` declines), one at a time.
//!
//! Invariants: the parent keeps polling its batch while it forwards events
//! and while an approval is pending, so one child's question never stalls
//! its siblings; every approval request gets an answer (a parent that is
//! gone declines); a child's events reach the front end before the
//! parent's result for its call; results come back in call order.

use std::future::Future;

use futures_util::future::join_all;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::policy::ApprovalScope;
use crate::protocol::{ToolCall, ToolMeta, ToolResult};
use crate::tools::{AGENT_TOOL, BoxFuture, ToolContext};

use super::Links;
use super::run::ChildOutcome;
use crate::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeError, RuntimeEvent, Session};

/// One of a child's events, for the parent's `agent` call `call_id`.
pub(in crate::runtime) struct Uplink {
    call_id: String,
    event: RuntimeEvent,
}

/// A child's approval request, answered on `reply`.
pub(in crate::runtime) struct ApprovalRequest {
    call: ToolCall,
    reason: String,
    /// Asked anew ([`Approver::ask_anew`]), "always" offered or not.
    anew: Option<bool>,
    reply: oneshot::Sender<ApprovalAnswer>,
}

/// A child's event sink: forwards to the parent (its token budget,
/// `[agents] max_tokens`, is one of its loop's spend limits, checked before
/// each request).
pub(in crate::runtime) struct LinkSink {
    call_id: String,
    events: UnboundedSender<Uplink>,
}

impl LinkSink {
    pub(in crate::runtime) fn new(call_id: String, events: UnboundedSender<Uplink>) -> Self {
        Self { call_id, events }
    }
}

impl EventSink for LinkSink {
    fn emit(&mut self, event: RuntimeEvent) {
        // A closed channel: the parent's batch is over; nothing to show.
        let _ = self.events.send(Uplink { call_id: self.call_id.clone(), event });
    }
}

/// A child's approver: the parent's approver answers.
pub(in crate::runtime) struct LinkApprover {
    asks: UnboundedSender<ApprovalRequest>,
    can_ask: bool,
    agent: String,
}

impl LinkApprover {
    pub(in crate::runtime) fn new(
        asks: UnboundedSender<ApprovalRequest>,
        can_ask: bool,
        agent: String,
    ) -> Self {
        Self { asks, can_ask, agent }
    }

    /// Sends the question to the parent's approver.
    async fn forward(
        &mut self,
        call: &ToolCall,
        reason: &str,
        anew: Option<bool>,
    ) -> ApprovalAnswer {
        let (reply, answer) = oneshot::channel();
        let reason = format!("{reason} (asked by the {} subagent)", self.agent);
        let request = ApprovalRequest { call: call.clone(), reason, anew, reply };
        let declined = || ApprovalAnswer {
            approved: false,
            note: Some("the session that started this subagent has ended".to_owned()),
            scope: ApprovalScope::Once,
        };
        if self.asks.send(request).is_err() {
            return declined();
        }
        answer.await.unwrap_or_else(|_| declined())
    }
}

impl Approver for LinkApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.forward(call, reason, None))
    }

    fn ask_anew<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
        always: bool,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.forward(call, reason, Some(always)))
    }

    fn can_ask(&self) -> bool {
        self.can_ask
    }
}

/// One call of a batch with children.
enum Slot {
    Answered((ToolResult, ToolMeta)),
    Tool(ToolCall),
    Child(Box<super::Child>),
}

/// What one call of the batch came to.
enum Ran {
    Tool((ToolResult, ToolMeta)),
    Child(Box<ChildOutcome>),
}

impl Session {
    /// Runs a batch that has `agent` calls: each opens its child session
    /// first (its log linked from this one), then the batch runs as any
    /// (children side by side when read-only, concurrent batches), while
    /// this session forwards the children's events and approval requests.
    pub(in crate::runtime) async fn run_batch_with_subagents(
        &mut self,
        calls: &[ToolCall],
        concurrent: bool,
        ctx: &ToolContext,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ToolResult, ToolMeta)>, RuntimeError> {
        let (events, mut inbox) = mpsc::unbounded_channel();
        let (asks, ask_inbox) = mpsc::unbounded_channel();
        let links = Links { events, asks };
        let mut slots = Vec::with_capacity(calls.len());
        // Serial batches hold one call: only side by side are there several.
        let siblings = calls.iter().filter(|call| call.name == AGENT_TOOL).count();
        for call in calls {
            if call.name != AGENT_TOOL {
                slots.push(Slot::Tool(call.clone()));
                continue;
            }
            match self.open_child(call, siblings, &links, cancel)? {
                Ok(child) => slots.push(Slot::Child(Box::new(child))),
                Err(answer) => slots.push(Slot::Answered(answer)),
            }
        }
        // The children hold the only senders: the inbox closes with them.
        drop(links);
        // Mutating batches have one call: its file bookkeeping wraps it.
        let touched = match (concurrent, calls) {
            (false, [call]) => Some(self.before_mutation(call)?),
            _ => None,
        };
        let tools = &self.tools;
        let work = async {
            let runs = slots.into_iter().map(|slot| async move {
                match slot {
                    Slot::Answered(answer) => Ran::Tool(answer),
                    Slot::Tool(call) => Ran::Tool(tools.run_call(&call, ctx).await),
                    Slot::Child(child) => Ran::Child(Box::new(guarded(*child).await)),
                }
            });
            if concurrent {
                join_all(runs).await
            } else {
                let mut done = Vec::new();
                for run in runs {
                    done.push(run.await);
                }
                done
            }
        };
        let ran = serve(&mut self.sink, &mut self.approver, &mut inbox, ask_inbox, work).await;
        let mut results = Vec::with_capacity(ran.len());
        for ran in ran {
            match ran {
                Ran::Tool(answer) => results.push(answer),
                Ran::Child(mut outcome) => {
                    self.note_child_outcome(&mut outcome)?;
                    results.push((outcome.result, outcome.meta));
                }
            }
        }
        if let (Some(touched), [call], [(_, meta)]) = (touched, calls, results.as_mut_slice()) {
            let observed = self.after_mutation(call, touched)?;
            observed.add_to(meta);
        }
        Ok(results)
    }
}

/// Runs a child with panics caught: a bug in keel while a subagent works
/// is the call's error result (and an `internal_error` line), as a
/// panicking tool's is, never the end of the parent's session.
pub(in crate::runtime) async fn guarded(child: super::Child) -> ChildOutcome {
    let (call, session_id) = (child.call.clone(), child.session.id().to_owned());
    match crate::support::panic_guard::Guarded::new(child.run()).await {
        Ok(outcome) => outcome,
        Err(panic) => ChildOutcome {
            result: ToolResult::error(&call.call_id, format!("the subagent failed: keel {panic}")),
            meta: ToolMeta::new()
                .with_kind(crate::protocol::ResultKind::Internal)
                .with("session_id", session_id.clone()),
            call,
            session_id,
            outcome: crate::protocol::TurnOutcome::Failed,
            usage: crate::protocol::Usage::default(),
            cost_usd: None,
            estimated: crate::agent::Unreported::default(),
            declined: Vec::new(),
        },
    }
}

/// Polls `work` to its end while forwarding children's events to `sink`
/// and their approval requests to `approver`, one at a time; then the
/// events still queued.
pub(in crate::runtime) async fn serve<T>(
    sink: &mut Box<dyn EventSink>,
    approver: &mut Box<dyn Approver>,
    inbox: &mut UnboundedReceiver<Uplink>,
    mut asks: UnboundedReceiver<ApprovalRequest>,
    work: impl Future<Output = T>,
) -> T {
    let desk = async move {
        while let Some(request) = asks.recv().await {
            let answer = match request.anew {
                None => approver.decide(&request.call, &request.reason).await,
                Some(always) => approver.ask_anew(&request.call, &request.reason, always).await,
            };
            let _ = request.reply.send(answer);
        }
    };
    tokio::pin!(work);
    tokio::pin!(desk);
    let mut desk_open = true;
    let done = loop {
        tokio::select! {
            biased;
            Some(Uplink { call_id, event }) = inbox.recv() => {
                sink.emit(RuntimeEvent::Subagent { call_id, event: Box::new(event) });
            }
            () = &mut desk, if desk_open => desk_open = false,
            done = &mut work => break done,
        }
    };
    while let Ok(Uplink { call_id, event }) = inbox.try_recv() {
        sink.emit(RuntimeEvent::Subagent { call_id, event: Box::new(event) });
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it was asked and says yes.
    struct Recording(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Approver for Recording {
        fn decide<'a>(
            &'a mut self,
            call: &'a ToolCall,
            reason: &'a str,
        ) -> BoxFuture<'a, ApprovalAnswer> {
            self.0.lock().unwrap().push(format!("{}: {reason}", call.name));
            Box::pin(async {
                ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once }
            })
        }
    }

    struct Collect(std::sync::Arc<std::sync::Mutex<Vec<RuntimeEvent>>>);

    impl EventSink for Collect {
        fn emit(&mut self, event: RuntimeEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    fn shell() -> ToolCall {
        ToolCall {
            call_id: "c1".into(),
            name: "shell".into(),
            arguments: r#"{"command":"cargo test"}"#.into(),
            item_id: None,
            provider_data: None,
        }
    }

    #[tokio::test]
    async fn a_childs_question_reaches_the_parents_approver_while_a_sibling_keeps_working() {
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut approver: Box<dyn Approver> = Box::new(Recording(asked.clone()));
        let mut sink: Box<dyn EventSink> = Box::new(Collect(shown.clone()));
        let (events, mut inbox) = mpsc::unbounded_channel();
        let (asks, ask_inbox) = mpsc::unbounded_channel();
        let mut child_approver = LinkApprover::new(asks, true, "verify".into());
        let mut child_sink = LinkSink::new("agent-1".into(), events.clone());
        let mut sibling = LinkSink::new("agent-2".into(), events);
        let (sibling_done, sibling_waits) = oneshot::channel::<()>();
        let work = async move {
            // The sibling goes on (and finishes) while the question is open.
            let asking = async {
                let answer = child_approver.decide(&shell(), "runs the tests").await;
                child_sink.emit(RuntimeEvent::Warning { message: "asked".into() });
                answer
            };
            let working = async {
                sibling.emit(RuntimeEvent::Warning { message: "still working".into() });
                let _ = sibling_done.send(());
            };
            let (answer, ()) = tokio::join!(asking, working);
            answer
        };
        let answer = serve(&mut sink, &mut approver, &mut inbox, ask_inbox, work).await;
        assert!(answer.approved);
        assert!(sibling_waits.await.is_ok());
        assert_eq!(
            *asked.lock().unwrap(),
            ["shell: runs the tests (asked by the verify subagent)"]
        );
        let wrapped: Vec<String> = shown
            .lock()
            .unwrap()
            .iter()
            .map(|event| match event {
                RuntimeEvent::Subagent { call_id, event } => format!("{call_id}: {event:?}"),
                other => format!("unwrapped {other:?}"),
            })
            .collect();
        assert_eq!(wrapped.len(), 2, "{wrapped:?}");
        assert!(wrapped.iter().any(|w| w.starts_with("agent-2: Warning")), "{wrapped:?}");
        assert!(wrapped.iter().any(|w| w.starts_with("agent-1: Warning")), "{wrapped:?}");
    }

    #[tokio::test]
    async fn a_question_after_the_parent_is_gone_is_declined() {
        let (asks, ask_inbox) = mpsc::unbounded_channel();
        drop(ask_inbox);
        let mut approver = LinkApprover::new(asks, false, "explore".into());
        let answer = approver.decide(&shell(), "why").await;
        assert!(!answer.approved);
        assert!(!approver.can_ask(), "a headless parent's child cannot ask either");
    }
}
