//! `keel exec --output-schema FILE`: the run's final answer must validate
//! against a script's JSON Schema (issue 40).
//!
//! The prompt asks for the shape ([`AnswerShape::instruction`]), each
//! turn's request asks natively where the protocol can
//! (`Session::set_answer_schema`, `llm/`), and the answer is checked here
//! with the pure check of `protocol::answer_shape`. An answer that misses
//! is answered with a new turn whose prompt lists the violations, while
//! the turn completed and fewer than [`MAX_ANSWER_ATTEMPTS`] answers were
//! given (each turn has the step limit, the spend limits hold across
//! them). The `result` then carries the JSON (`final_text`, compact, and
//! `structured_output`), or ends `schema_invalid` (exit 1) with what was
//! wrong.
//!
//! Invariants: a run is `completed` (or `unverified`, `no_tool_call`) with
//! `--output-schema` only when its final text parsed and validated; other
//! endings (failed, declined, interrupted, a plan) are reported as they
//! are, unchecked, since there was no final answer to check.

use tokio_util::sync::CancellationToken;

use crate::protocol::TurnOutcome;
use crate::protocol::answer_shape::{AnswerShape, MAX_ANSWER_ATTEMPTS};
use crate::runtime::{RuntimeError, Session, TurnSummary};

use super::{ExecStatus, ResultLine};

/// The turn's prompt with the shape's instruction after it.
pub(super) fn prompt_with(shape: Option<&AnswerShape>, prompt: String) -> String {
    match shape {
        Some(shape) => format!("{prompt}\n\n{}", shape.instruction()),
        None => prompt,
    }
}

/// Asks again while the last turn completed with an answer that misses
/// the shape and attempts remain; the last turn's summary (calls declined
/// in any of them included).
pub(super) async fn ask_until_shaped(
    session: &mut Session,
    shape: &AnswerShape,
    mut summary: TurnSummary,
    cancel: &CancellationToken,
) -> Result<TurnSummary, RuntimeError> {
    let mut attempts = 1;
    while attempts < MAX_ANSWER_ATTEMPTS
        && summary.outcome == TurnOutcome::Completed
        && summary.declined.is_empty()
    {
        let text = summary.final_text.as_deref().unwrap_or_default();
        let Err(miss) = shape.check(text) else { break };
        let prompt = shape.retry_prompt(&miss);
        summary = session.run_turn(prompt, cancel).await?;
        attempts += 1;
    }
    Ok(summary)
}

/// The `result` line with the shape's say: the validated JSON, or
/// `schema_invalid` and why, for a run that ended with a final answer.
pub(super) fn settle(shape: &AnswerShape, mut line: ResultLine) -> ResultLine {
    match line.status {
        ExecStatus::Completed | ExecStatus::Unverified | ExecStatus::NoToolCall => {}
        ExecStatus::Failed
        | ExecStatus::Interrupted
        | ExecStatus::PlanReady
        | ExecStatus::NeedsApproval
        | ExecStatus::BudgetExceeded
        | ExecStatus::Stuck
        | ExecStatus::UsageError
        | ExecStatus::Cut
        | ExecStatus::SchemaInvalid => return line,
    }
    match shape.check(line.final_text.as_deref().unwrap_or_default()) {
        Ok(value) => {
            line.final_text = Some(value.to_string());
            line.structured_output = Some(value);
        }
        Err(miss) => {
            line.status = ExecStatus::SchemaInvalid;
            line.error = Some(format!(
                "the final answer does not have the shape --output-schema asks for after \
                 {MAX_ANSWER_ATTEMPTS} answers: {miss}"
            ));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> AnswerShape {
        AnswerShape::parse(r#"{"type":"object","required":["n"]}"#).unwrap()
    }

    fn line(status: ExecStatus, text: &str) -> ResultLine {
        let mut line = ResultLine::failure(String::new());
        line.error = None;
        line.status = status;
        line.final_text = Some(text.to_owned());
        line
    }

    #[test]
    fn a_shaped_answer_is_the_json_and_a_miss_is_schema_invalid() {
        let done = settle(&shape(), line(ExecStatus::Completed, "```json\n{\"n\": 1}\n```"));
        assert_eq!(done.status, ExecStatus::Completed);
        assert_eq!(done.final_text.as_deref(), Some("{\"n\":1}"));
        assert_eq!(done.structured_output, Some(serde_json::json!({"n": 1})));
        let missed = settle(&shape(), line(ExecStatus::Unverified, "{}"));
        assert_eq!(missed.status, ExecStatus::SchemaInvalid);
        assert!(missed.error.unwrap().contains("missing required field \"n\""));
    }

    #[test]
    fn a_run_without_a_final_answer_ends_as_it_ended() {
        let failed = settle(&shape(), line(ExecStatus::Failed, "{}"));
        assert_eq!((failed.status, failed.structured_output), (ExecStatus::Failed, None));
    }
}
