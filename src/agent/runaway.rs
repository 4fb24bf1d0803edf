//! Runaway detection: a model that repeats one call with the
//! same result, or keeps failing with one tool, is told so once (a note
//! appended to that result) and, if it goes on, its turn ends `stuck`.
//!
//! Two patterns, both per turn and counted once per model response (a
//! response that asks for the same call nine times at once is one
//! repetition: the loop guarded against is the model asking again after
//! it saw the result):
//! - **repeated**: the same call (tool name and arguments) returned the
//!   same result (text and error flag) in `repeated_calls` responses
//!   (default 3); denied calls count too (a model retrying a refused
//!   command);
//! - **failing**: calls of one tool failed in `failing_calls` responses in
//!   a row (default 5), with no call succeeding between them.
//!
//! After its note a pattern that shows again in a later response (the
//! same call and result once more; the tool failing again) ends the turn.
//!
//! Invariants: pure and deterministic, so `rebuild` reaches the same state
//! by observing the logged results (the note is recorded in the result's
//! meta and stripped before observing); the state holds one hash per
//! distinct call and result, never the texts.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use crate::protocol::{ToolCall, ToolMeta, ToolResult};

use super::limits::RunawayLimits;

/// What a turn has seen so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunawayState {
    /// Per (call, result) fingerprint: in how many responses it was seen
    /// this turn, and the step that last counted.
    seen: BTreeMap<u64, (u32, u32)>,
    /// The tool failing in a row, if one is.
    failing: Option<Failing>,
    /// Patterns already pointed out to the model this turn.
    noted: BTreeSet<u64>,
}

/// A tool whose calls failed in `responses` responses in a row, the last
/// counted at `step`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failing {
    tool: String,
    responses: u32,
    step: u32,
}

/// Which pattern was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunawayKind {
    Repeated,
    Failing,
}

impl RunawayKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Repeated => "repeated",
            Self::Failing => "failing",
        }
    }
}

/// What to do about one result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunawayVerdict {
    Fine,
    /// Append `text` to the result (the model reads it once).
    Note {
        kind: RunawayKind,
        count: u32,
        text: String,
    },
    /// Append `text` and end the turn `stuck`.
    Stop {
        kind: RunawayKind,
        count: u32,
        text: String,
    },
}

/// Whether the call ran (a denied call only counts as a repeat).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ran {
    Yes,
    Denied,
}

impl RunawayState {
    /// Observes one result of `call`, asked for by the model response of
    /// `step` (the result as the tool gave it, before any note).
    pub fn observe(
        &mut self,
        limits: &RunawayLimits,
        step: u32,
        call: &ToolCall,
        result: &ToolResult,
        ran: Ran,
    ) -> RunawayVerdict {
        let failing = match ran {
            Ran::Yes => self.observe_failure(limits, step, call, result),
            Ran::Denied => RunawayVerdict::Fine,
        };
        let repeated = self.observe_repeat(limits, step, call, result);
        // A stop wins; of two notes the repeat says more.
        match (repeated, failing) {
            (stop @ RunawayVerdict::Stop { .. }, _) | (_, stop @ RunawayVerdict::Stop { .. }) => {
                stop
            }
            (note @ RunawayVerdict::Note { .. }, _) | (_, note @ RunawayVerdict::Note { .. }) => {
                note
            }
            (RunawayVerdict::Fine, RunawayVerdict::Fine) => RunawayVerdict::Fine,
        }
    }

    fn observe_repeat(
        &mut self,
        limits: &RunawayLimits,
        step: u32,
        call: &ToolCall,
        result: &ToolResult,
    ) -> RunawayVerdict {
        let Some(threshold) = limits.repeated_calls else { return RunawayVerdict::Fine };
        let key =
            fingerprint(&("repeat", &call.name, &call.arguments, &result.output, result.is_error));
        let (count, counted_at) = self.seen.entry(key).or_insert((0, 0));
        if *count > 0 && *counted_at == step {
            return RunawayVerdict::Fine;
        }
        *count += 1;
        *counted_at = step;
        let count = *count;
        if count < threshold {
            return RunawayVerdict::Fine;
        }
        let kind = RunawayKind::Repeated;
        if self.noted.insert(key) {
            let text = format!(
                "\n\n[keel] This exact call has now returned this exact result {count} times in \
                 this turn; calling it again will not change it. Change your approach (other \
                 arguments, another tool, a fix first) or stop and tell the user what blocks \
                 you. If you repeat it once more, keel ends the turn."
            );
            return RunawayVerdict::Note { kind, count, text };
        }
        let text = format!(
            "\n\n[keel] The turn was stopped: this call returned the same result {count} times, \
             after keel pointed it out."
        );
        RunawayVerdict::Stop { kind, count, text }
    }

    fn observe_failure(
        &mut self,
        limits: &RunawayLimits,
        step: u32,
        call: &ToolCall,
        result: &ToolResult,
    ) -> RunawayVerdict {
        if !result.is_error {
            self.failing = None;
            return RunawayVerdict::Fine;
        }
        let count = match self.failing.as_mut() {
            Some(failing) if failing.tool == call.name && failing.step == step => {
                return RunawayVerdict::Fine;
            }
            Some(failing) if failing.tool == call.name => {
                failing.responses += 1;
                failing.step = step;
                failing.responses
            }
            Some(_) | None => {
                self.failing = Some(Failing { tool: call.name.clone(), responses: 1, step });
                1
            }
        };
        let Some(threshold) = limits.failing_calls else { return RunawayVerdict::Fine };
        if count < threshold {
            return RunawayVerdict::Fine;
        }
        let kind = RunawayKind::Failing;
        let tool = &call.name;
        if self.noted.insert(fingerprint(&("failing", tool))) {
            let text = format!(
                "\n\n[keel] `{tool}` has now failed {count} times in a row. Read the errors, \
                 change your approach, or stop and tell the user what blocks you. If the next \
                 `{tool}` call fails too, keel ends the turn."
            );
            return RunawayVerdict::Note { kind, count, text };
        }
        let text = format!(
            "\n\n[keel] The turn was stopped: `{tool}` failed {count} times in a row, after \
             keel pointed it out."
        );
        RunawayVerdict::Stop { kind, count, text }
    }
}

fn fingerprint(value: &impl Hash) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// The result the model reads and its meta for a note or stop: `text`
/// appended, and `meta.runaway` = `{kind, count, action, note}` so the
/// log says why (and `rebuild` can take the note off again).
pub fn annotate(
    mut result: ToolResult,
    mut meta: ToolMeta,
    verdict: &RunawayVerdict,
) -> (ToolResult, ToolMeta) {
    let (kind, count, text, action) = match verdict {
        RunawayVerdict::Fine => return (result, meta),
        RunawayVerdict::Note { kind, count, text } => (kind, count, text, "noted"),
        RunawayVerdict::Stop { kind, count, text } => (kind, count, text, "stopped"),
    };
    result.output.push_str(text);
    meta.set_runaway(kind.as_str(), *count, action, text);
    (result, meta)
}

/// A logged result as the tool gave it: the runaway note recorded in its
/// meta taken off again.
pub fn without_note(result: &ToolResult, meta: &ToolMeta) -> ToolResult {
    match meta.runaway_note() {
        Some(note) => {
            let output = result.output.strip_suffix(note).unwrap_or(&result.output);
            ToolResult { output: output.to_owned(), ..result.clone() }
        }
        None => result.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: args.into(),
            item_id: None,
            provider_data: None,
        }
    }

    fn ok(text: &str) -> ToolResult {
        ToolResult::ok("c", text)
    }

    fn kinds(verdicts: &[RunawayVerdict]) -> Vec<&'static str> {
        verdicts
            .iter()
            .map(|v| match v {
                RunawayVerdict::Fine => "fine",
                RunawayVerdict::Note { .. } => "note",
                RunawayVerdict::Stop { .. } => "stop",
            })
            .collect()
    }

    #[test]
    fn the_third_identical_call_and_result_is_noted_and_the_fourth_stops() {
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let read = call("read_file", r#"{"path":"a"}"#);
        let verdicts: Vec<_> =
            (1..5).map(|step| state.observe(&limits, step, &read, &ok("same"), Ran::Yes)).collect();
        assert_eq!(kinds(&verdicts), ["fine", "fine", "note", "stop"]);
    }

    #[test]
    fn a_different_result_or_argument_is_not_a_repeat() {
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let date = call("shell", r#"{"command":"date"}"#);
        let verdicts: Vec<_> = (0..6)
            .map(|n| state.observe(&limits, n, &date, &ok(&format!("line {n}")), Ran::Yes))
            .collect();
        assert_eq!(kinds(&verdicts), ["fine"; 6], "the same call, a new result each time");
        let verdicts: Vec<_> = (0..6)
            .map(|n| {
                let read = call("read_file", &format!(r#"{{"path":"f{n}"}}"#));
                state.observe(&limits, 10 + n, &read, &ok("x"), Ran::Yes)
            })
            .collect();
        assert_eq!(kinds(&verdicts), ["fine"; 6], "a new call each time");
    }

    #[test]
    fn consecutive_failures_of_one_tool_are_noted_then_stop() {
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let verdicts: Vec<_> = (0..6)
            .map(|n| {
                let shell = call("shell", &format!(r#"{{"command":"try {n}"}}"#));
                let failed = ToolResult::error("c", format!("exit code: 1 ({n})"));
                state.observe(&limits, n, &shell, &failed, Ran::Yes)
            })
            .collect();
        assert_eq!(kinds(&verdicts), ["fine", "fine", "fine", "fine", "note", "stop"]);
        let RunawayVerdict::Note { text, .. } = &verdicts[4] else { panic!() };
        assert!(text.contains("`shell` has now failed 5 times in a row"), "{text}");
    }

    #[test]
    fn a_success_in_between_breaks_the_streak() {
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let mut verdicts = Vec::new();
        for n in 0..12 {
            let shell = call("shell", &format!(r#"{{"command":"t{n}"}}"#));
            let failed = ToolResult::error("c", format!("failed {n}"));
            verdicts.push(state.observe(&limits, n, &shell, &failed, Ran::Yes));
            if n % 4 == 3 {
                let edit = call("edit_file", &format!(r#"{{"path":"f{n}"}}"#));
                verdicts.push(state.observe(&limits, n, &edit, &ok("ok"), Ran::Yes));
            }
        }
        assert!(verdicts.iter().all(|v| *v == RunawayVerdict::Fine), "{verdicts:?}");
    }

    #[test]
    fn repeats_within_one_response_count_once() {
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let read = call("read_file", r#"{"path":"a"}"#);
        let failed = ToolResult::error("c", "no such file");
        let mut observe = |step| state.observe(&limits, step, &read, &failed, Ran::Yes);
        let first: Vec<_> = [1, 1, 1, 1, 1, 1, 1, 1, 1, 2].into_iter().map(&mut observe).collect();
        assert_eq!(kinds(&first), ["fine"; 10], "nine at once, then once more: two responses");
        assert_eq!(kinds(&[observe(3)]), ["note"]);
        let same_response: Vec<_> = [3, 3, 3].into_iter().map(&mut observe).collect();
        assert_eq!(kinds(&same_response), ["fine"; 3], "no stop before the model read the note");
        assert_eq!(kinds(&[observe(4)]), ["stop"]);
    }

    #[test]
    fn denied_calls_count_as_repeats_only_and_guards_can_be_off() {
        let off = RunawayLimits { repeated_calls: None, failing_calls: None };
        let mut state = RunawayState::default();
        let denied = ToolResult::error("c", "not run: forbidden");
        for step in 0..10 {
            let verdict = state.observe(&off, step, &call("shell", "{}"), &denied, Ran::Yes);
            assert_eq!(verdict, RunawayVerdict::Fine, "off");
        }
        let limits = RunawayLimits::default();
        let mut state = RunawayState::default();
        let verdicts: Vec<_> = (0..6)
            .map(|n| {
                let shell = call("shell", &format!(r#"{{"command":"rm {n}"}}"#));
                state.observe(&limits, n, &shell, &denied, Ran::Denied)
            })
            .collect();
        assert_eq!(kinds(&verdicts), ["fine"; 6], "refusals are not the tool failing");
    }

    #[test]
    fn a_note_round_trips_through_the_meta() {
        let verdict = RunawayVerdict::Note {
            kind: RunawayKind::Repeated,
            count: 3,
            text: "\n\n[keel] note".into(),
        };
        let original = ok("output");
        let (shown, meta) = annotate(original.clone(), ToolMeta::command(Some(0), None), &verdict);
        assert_eq!(shown.output, "output\n\n[keel] note");
        assert_eq!(meta["runaway"]["action"], "noted");
        assert_eq!(meta["exit_code"], 0);
        assert_eq!(without_note(&shown, &meta), original);
        let (_, meta) = annotate(original, ToolMeta::new(), &verdict);
        assert_eq!(meta["runaway"]["kind"], "repeated");
    }
}
