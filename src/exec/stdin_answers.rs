//! `keel exec --answer-from-stdin`: a script answers the model's `ask_user`
//! questions, one stdin line per question.
//!
//! Each question is printed on stderr (its choices numbered), so a script
//! sees what it answers; the next stdin line is the answer: a choice's
//! number or its text (the choice, as the model wrote it), or the script's
//! own words. A blank line or stdin's EOF is no answer: the model reads
//! that no one can answer (`agent::NO_ANSWER`) and the `result` lists the
//! question, as without the flag. What was answered is said on stderr and
//! recorded as the call's result in the log (`agent/ask_user.rs`).
//! Approvals are not questions: they are declined as in any headless run.
//!
//! Invariants: stdin is read only here, one line per question and only
//! while one waits (the flag refuses a prompt from stdin and
//! `--input-stream`, `cli/exec_cmd.rs`); once stdin ended, every later
//! question is unanswered without reading.

use std::io::Write;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use crate::display::for_terminal;
use crate::protocol::ToolCall;
use crate::runtime::{ApprovalAnswer, Approver, NonInteractiveApprover};

/// Declines approvals like [`NonInteractiveApprover`]; answers questions
/// from stdin.
pub(super) struct StdinAnswers {
    /// `None` once stdin ended (or failed).
    lines: Option<Lines<BufReader<Stdin>>>,
}

impl StdinAnswers {
    pub(super) fn new() -> Self {
        Self { lines: Some(BufReader::new(tokio::io::stdin()).lines()) }
    }

    async fn next_line(&mut self) -> Option<String> {
        let lines = self.lines.as_mut()?;
        match lines.next_line().await {
            Ok(Some(line)) => Some(line),
            Ok(None) => {
                self.lines = None;
                None
            }
            Err(error) => {
                let _ = writeln!(std::io::stderr().lock(), "keel: cannot read stdin: {error}");
                self.lines = None;
                None
            }
        }
    }
}

/// The answer a stdin `line` gives to a question with `choices`: the
/// choice it numbers or names, else its own words; `None` when blank.
pub(super) fn answer_of(line: &str, choices: &[String]) -> Option<String> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let numbered =
        line.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| choices.get(i));
    let named = || choices.iter().find(|choice| choice.trim().eq_ignore_ascii_case(line));
    Some(numbered.or_else(named).cloned().unwrap_or_else(|| line.to_owned()))
}

/// The question as a script reads it on stderr.
fn question_text(question: &str, choices: &[String]) -> String {
    let mut text = format!("question (ask_user): {}\n", for_terminal(question));
    for (n, choice) in choices.iter().enumerate() {
        text.push_str(&format!("  {}. {}\n", n + 1, for_terminal(choice)));
    }
    let how =
        if choices.is_empty() { "an answer" } else { "a choice's number or text, or an answer" };
    text.push_str(&format!(
        "answer on stdin: one line ({how}); a blank line or EOF answers nothing"
    ));
    text
}

impl Approver for StdinAnswers {
    fn can_ask(&self) -> bool {
        false
    }

    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move { NonInteractiveApprover.decide(call, reason).await })
    }

    fn ask_user<'a>(
        &'a mut self,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let _ = writeln!(std::io::stderr().lock(), "{}", question_text(question, choices));
            let answer = self.next_line().await.and_then(|line| answer_of(&line, choices));
            let said = match &answer {
                Some(text) => format!("answered (ask_user): {}", for_terminal(text)),
                None if self.lines.is_none() => "no answer (ask_user): stdin is closed".to_owned(),
                None => "no answer (ask_user): a blank line".to_owned(),
            };
            let _ = writeln!(std::io::stderr().lock(), "{said}");
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choices() -> Vec<String> {
        vec!["SQLite".into(), "Postgres".into()]
    }

    #[test]
    fn a_number_or_a_name_picks_the_choice_and_anything_else_is_the_answer() {
        assert_eq!(answer_of("2\n", &choices()).as_deref(), Some("Postgres"));
        assert_eq!(answer_of(" sqlite ", &choices()).as_deref(), Some("SQLite"));
        assert_eq!(answer_of("3", &choices()).as_deref(), Some("3"), "no third choice");
        assert_eq!(answer_of("use MySQL", &choices()).as_deref(), Some("use MySQL"));
        assert_eq!(answer_of("   ", &choices()), None);
        assert_eq!(answer_of("1", &[]).as_deref(), Some("1"));
    }

    #[test]
    fn the_question_shows_its_choices_numbered() {
        let text = question_text("Which database?", &choices());
        assert!(
            text.starts_with("question (ask_user): Which database?\n  1. SQLite\n  2. Postgres\n")
        );
    }
}
