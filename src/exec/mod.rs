//! `keel exec`: one headless turn for scripts and CI. Progress goes to
//! stderr and the final message to stdout, or, with `--json`, one JSON event
//! per line on stdout ending in exactly one `result` line.
//!
//! The workflow's say in the result: `unverified` (exit 0) when files
//! changed after the last passing verification, `plan_ready` (exit 0)
//! under `--plan-only` (a `--plan-only` run that submitted no plan
//! failed). A run in which calls were declined for want of an approval
//! is `needs_approval` (exit 3), whatever the model claims: `completed`
//! means the work the model did was allowed to happen.
//! The loop's limits: `budget_exceeded` (exit 4) when the next request
//! would cross `--max-cost`/`--max-tokens`, `stuck` (exit 5) when the
//! model kept repeating itself after keel said so. A task prompt a local
//! server answered without one tool call is `no_tool_call` (exit 0, a
//! warning naming the usual cause; `tool_use.rs`).
//!
//! The prompt's `@path` mentions are attached as the TUI attaches them
//! (`runtime/mentions.rs`: files, folder listings, images; a secret or
//! outside path refused with a warning).
//!
//! Invariants: the process always exits; nothing here asks the user (what
//! would ask is declined with a tool result that says how to allow it;
//! only a question of the model's may be answered by a script);
//! the `result` line is written whatever happened after argument parsing.
//!
//! Files: the human and JSONL printers behind `EventSink` (`human.rs`, `json.rs`, whose closing
//! status is `ExecStatus`; the `--json` stream is documented in README with its `schema_version`);
//! `json_items.rs` keeps the stream's items paired (ids, every start completed once, a cut message
//! completed with its text and `status`); `run_headless` is one turn without printing, shared with
//! `keel mcp-server`; `contract.rs` is the `--json` stream's published schema (`schemas/`);
//! `answer.rs` holds a run to `--output-schema` (asks again, then `schema_invalid`, exit 1);
//! `progress.rs` the waiting indicator of the human form (a terminal, or `--progress`);
//! `stdin_answers.rs` answers `ask_user` from stdin under `--answer-from-stdin` (else nobody
//! answers: the model is told to decide or stop, the `result` lists the question).

mod answer;
pub mod contract;
mod human;
mod json;
mod json_items;
mod progress;
mod result_gate;
mod stdin_answers;
mod stream_input;
mod tool_use;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use crate::agent::{PlanReview, rejection_text};
use crate::config::Settings;
use crate::display::for_terminal;
use crate::plan::PlanStatus;
use crate::policy::ApprovalMode;
use crate::protocol::answer_shape::AnswerShape;
use crate::protocol::{RewindScope, TurnOutcome, Usage};
use crate::runtime::{
    DeclinedCall, EventSink, NonInteractiveApprover, RewindFailure, RewindTarget, RuntimeError,
    Session, SessionOptions, TurnSummary,
};

pub use crate::exit::ExitStatus;
pub use human::HumanPrinter;
pub use json::{ExecStatus, JsonPrinter, ResultLine, SCHEMA_VERSION};
pub use result_gate::{write_result, write_result_if_missing};

/// What the user asked `keel exec` to do.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The task; `None` only when resuming (then the open turn is finished
    /// and nothing new is asked).
    pub prompt: Option<String>,
    /// Continue the session logged at this path instead of starting one.
    pub resume: Option<PathBuf>,
    pub json: bool,
    pub last_message_file: Option<PathBuf>,
    /// `--mode` and friends; `None`: ask for a new session, the logged
    /// mode for a resumed one.
    pub approval: Option<ApprovalMode>,
    /// `--plan-only` / `--approve-plan` (`--reject-plan` stops after the
    /// revision, as `--plan-only`): a plan is required, reviewed so.
    pub plan_review: Option<PlanReview>,
    /// `resume ID --reject-plan FEEDBACK`: the waiting plan is rejected.
    pub reject_plan: Option<String>,
    /// `resume ID --rewind-to N` / `--undo-rewind`: done before PROMPT.
    pub rewind: Option<(RewindTarget, RewindScope)>,
    /// `--input-stream`: more prompts come on stdin (`stream_input.rs`).
    pub input_stream: bool,
    /// `--answer-from-stdin`: the model's `ask_user` questions are
    /// answered from stdin, a line each (`stdin_answers.rs`).
    pub answer_from_stdin: bool,
    /// `--progress`: the waiting indicator even when stderr is not a
    /// terminal (`progress.rs`).
    pub progress: bool,
    /// `--output-schema FILE`: the JSON Schema the final answer must
    /// follow (`answer.rs`).
    pub output_schema: Option<AnswerShape>,
    pub cwd: PathBuf,
    pub date: String,
    /// `--image` files, prepared, attached to `prompt`.
    pub images: Vec<crate::protocol::ImagePart>,
}

/// Runs one turn and reports it; returns the exit status.
pub async fn run(
    settings: &Settings,
    options: ExecOptions,
    cancel: CancellationToken,
) -> ExitStatus {
    let sink: Box<dyn EventSink> = if options.json {
        Box::new(JsonPrinter::stdout())
    } else if options.progress || std::io::stderr().is_terminal() {
        Box::new(progress::ProgressPrinter::new(HumanPrinter::stderr()))
    } else {
        Box::new(HumanPrinter::stderr())
    };
    let Headless { status, line, shown_error } =
        run_headless(settings, &options, sink, &cancel).await;
    if let (Some(path), Some(text)) = (&options.last_message_file, &line.final_text) {
        if let Err(error) = std::fs::write(path, text) {
            let mut line = line;
            line.status = ExecStatus::Failed;
            line.error =
                Some(format!("cannot write the last message to {}: {error}", path.display()));
            report(&line, options.json, None);
            return ExitStatus::Failed;
        }
    }
    let mut human_line = line.clone();
    if !options.json && human_line.error.is_some() && human_line.error == shown_error {
        human_line.error = None;
    }
    report(if options.json { &line } else { &human_line }, options.json, Some(status));
    status
}

/// How a headless run ended: its exit status, its `result` line, and the
/// turn's own error when the sink was already shown it.
pub struct Headless {
    pub status: ExitStatus,
    pub line: ResultLine,
    pub shown_error: Option<String>,
}

/// Runs one headless turn (or finishes a resumed one) with `sink` seeing
/// its events; writes nothing itself. `keel exec` reports the result,
/// `keel mcp-server` returns it to its client.
pub async fn run_headless(
    settings: &Settings,
    options: &ExecOptions,
    sink: Box<dyn EventSink>,
    cancel: &CancellationToken,
) -> Headless {
    let failed =
        |line: ResultLine| Headless { status: ExitStatus::Failed, line, shown_error: None };
    let session_options = SessionOptions {
        approval: options.approval.unwrap_or(ApprovalMode::Ask),
        cwd: options.cwd.clone(),
        date: options.date.clone(),
        headless: true,
        script_answers: options.answer_from_stdin,
    };
    // Other terminals may watch the run (`keel attach ID`): they see its
    // events; its approvals stay this run's (declined, or answered from
    // stdin) and it takes no typed input from them.
    let host = crate::runtime::AttachHost::new();
    let sink = host.sink(sink);
    let approver: Box<dyn crate::runtime::Approver> = if options.answer_from_stdin {
        Box::new(stdin_answers::StdinAnswers::new())
    } else {
        Box::new(NonInteractiveApprover)
    };
    let opened = match &options.resume {
        Some(path) => Session::resume(settings, path, session_options, sink, approver),
        None => Session::start(settings, session_options, sink, approver),
    };
    let mut session = match opened {
        Ok(session) => session,
        Err(error) => {
            let status = match error {
                RuntimeError::UnpricedCostLimit { .. }
                | RuntimeError::UnpricedModelSwitch { .. } => ExitStatus::Usage,
                RuntimeError::Log(_)
                | RuntimeError::Client(_)
                | RuntimeError::Stalled
                | RuntimeError::AmbiguousLog { .. }
                | RuntimeError::PromptTooLarge(_)
                | RuntimeError::CommandTooLarge { .. } => ExitStatus::Failed,
            };
            let line = usage_marked(status, ResultLine::failure(error.to_string()));
            return Headless { status, line, shown_error: None };
        }
    };
    let log_path = session.log_path().to_owned();
    let listening = host.listen(&settings.keel_home, session.id(), log_path, None).ok();
    if let (Some(mode), Some(_)) = (options.approval, &options.resume) {
        session.set_approval_mode(mode);
    }
    if let Some(review) = options.plan_review {
        session.set_plan_review(review);
    }
    if let Some((target, scope)) = options.rewind
        && let Err(error) = session.rewind(target, scope).await
    {
        let status = match error {
            RewindFailure::Target(_) => ExitStatus::Usage,
            RewindFailure::Log(_)
            | RewindFailure::Checkpoint(_)
            | RewindFailure::NoCheckpoints
            | RewindFailure::Record(_) => ExitStatus::Failed,
        };
        let mut line = usage_marked(status, ResultLine::failure(format!("cannot rewind: {error}")));
        line.session_id = Some(session.id().to_owned());
        line.log_path = Some(session.log_path().to_owned());
        return Headless { status, line, shown_error: None };
    }
    // The model was checked before the session opened; a resumed log may
    // still name another one.
    if let Err(refused) = session.attach_images(options.images.clone()) {
        let mut line = usage_marked(ExitStatus::Usage, ResultLine::failure(refused.to_string()));
        line.session_id = Some(session.id().to_owned());
        return Headless { status: ExitStatus::Usage, line, shown_error: None };
    }
    let shape = options.output_schema.as_ref();
    session.set_answer_schema(shape.map(|shape| shape.schema().clone()));
    let prompt = match review_waiting_plan(&mut session, options) {
        Ok(prompt) => prompt,
        Err(message) => {
            let mut line = ResultLine::failure(message);
            line.session_id = Some(session.id().to_owned());
            line.log_path = Some(session.log_path().to_owned());
            return failed(line);
        }
    };
    if let Some(message) = prompt.as_deref().and_then(|prompt| session.unknown_slash(prompt)) {
        let mut line = usage_marked(ExitStatus::Usage, ResultLine::failure(message));
        line.session_id = Some(session.id().to_owned());
        return Headless { status: ExitStatus::Usage, line, shown_error: None };
    }
    // `@path` mentions, as the TUI attaches them (`runtime/mentions.rs`).
    let prompt = prompt.map(|prompt| session.attach_prompt_mentions(prompt));
    let reader = options.input_stream.then(|| {
        let refused = (!session.takes_images()).then(|| {
            crate::runtime::ImagesRefused { model: session.model().to_owned() }.to_string()
        });
        let context = stream_input::ImageContext { cwd: options.cwd.clone(), refused };
        stream_input::spawn(session.input_sender(), context)
    });
    let summary = run_turns(&mut session, prompt, shape, cancel).await;
    if let Some(listening) = listening {
        // Attachers see the run's last lines before keel exits.
        listening.close().await;
    }
    if let Some(reader) = reader {
        // Stdin may still be open after a failed turn: stop reading it.
        reader.abort();
    }
    // A turn's own error was shown as it happened (`RuntimeEvent::Error`).
    let shown_error =
        summary.as_ref().ok().and_then(Option::as_ref).and_then(|summary| summary.error.clone());
    // Resumed with no prompt and no open turn: a last turn that completed
    // (a crash after its end, a script asking again) is reported as it
    // ended; an interrupted or failed one is not continued, and that is
    // said, not hidden behind exit 0.
    let idle_after = match &summary {
        // A rewind without a prompt did what was asked.
        Ok(None) if options.rewind.is_some() => None,
        Ok(None) => Some(last_turn_status(&session)).filter(|status| status != "completed"),
        Ok(Some(_)) | Err(_) => None,
    };
    let (status, line) = match (summary, idle_after) {
        (Ok(None), Some(last_status)) => {
            let mut line = ResultLine::failure(format!(
                "nothing to continue: the last turn of session {id} is {last_status}, not open; \
                 pass a PROMPT to go on (keel exec resume {id} \"…\")",
                id = session.id(),
            ));
            line.session_id = Some(session.id().to_owned());
            line.log_path = Some(session.log_path().to_owned());
            (ExitStatus::Usage, line)
        }
        (Ok(summary), _) => {
            let summary = summary.unwrap_or_else(|| TurnSummary {
                outcome: TurnOutcome::Completed,
                final_text: session.last_assistant_text(),
                usage: Usage::default(),
                error: None,
                declined: Vec::new(),
                tool_calls: 0,
            });
            let (name, final_text) = workflow_status(&session, options, &summary);
            let toolless = settings
                .provider
                .profile
                .local_server
                .filter(|_| name == ExecStatus::Completed && summary.tool_calls == 0)
                .filter(|_| options.prompt.as_deref().is_some_and(tool_use::asks_for_work));
            let name = if toolless.is_some() { ExecStatus::NoToolCall } else { name };
            let status = name.exit_status();
            let error = summary.error.clone().or_else(|| match summary.outcome {
                TurnOutcome::MaxSteps => Some(format!(
                    "stopped at the step limit of {}; raise it with -c max_steps=N",
                    settings.limits.max_steps
                )),
                TurnOutcome::BudgetExceeded => Some(budget_error(&session)),
                TurnOutcome::Stuck => Some(
                    "stopped: the model kept repeating itself after keel pointed it out (the \
                     last tool result says how); limits.repeated_calls and limits.failing_calls \
                     set the guards, 0 turns one off"
                        .to_owned(),
                ),
                TurnOutcome::Cut => Some(
                    "the model's answer was cut off at the output limit (the server said \
                     `length`/`max_tokens`): the final text is incomplete; a larger server \
                     context or a smaller request leaves it more room"
                        .to_owned(),
                ),
                TurnOutcome::Completed if toolless.is_some() => {
                    toolless.map(tool_use::no_tool_call_warning)
                }
                TurnOutcome::Completed if name == ExecStatus::Failed => Some(
                    "no plan was submitted: --plan-only stops at a plan, and the model \
                     answered without one (its answer is the final text)"
                        .to_owned(),
                ),
                TurnOutcome::Completed | TurnOutcome::Failed | TurnOutcome::Interrupted => None,
            });
            let line = ResultLine {
                status: name,
                declined: summary.declined.clone(),
                final_text,
                usage: session.session_usage(),
                session_id: Some(session.id().to_owned()),
                log_path: Some(session.log_path().to_owned()),
                error,
                cost_usd: session.cost_usd(),
                context_percent: session.context_percent(),
                plan_path: session
                    .workflow()
                    .plan
                    .as_ref()
                    .map(|plan| plan.path.clone())
                    .filter(|path| !path.is_empty()),
                tasks: session.tasks().to_vec(),
                spend: Some(session.spend_status()),
                verification: (name == ExecStatus::Unverified)
                    .then(|| session.workflow().verification_status()),
                unanswered: session.unanswered().to_vec(),
                structured_output: None,
            };
            match shape.map(|shape| answer::settle(shape, line.clone())) {
                Some(shaped) => (shaped.status.exit_status(), shaped),
                None => (status, line),
            }
        }
        (Err(error), _) => {
            // A command's model refused under a cost limit: as at start.
            let status = if matches!(error, RuntimeError::UnpricedModelSwitch { .. }) {
                ExitStatus::Usage
            } else {
                ExitStatus::Failed
            };
            let mut line = ResultLine::failure(error.to_string());
            line.session_id = Some(session.id().to_owned());
            line.log_path = Some(session.log_path().to_owned());
            (status, line)
        }
    };
    Headless { status, line: usage_marked(status, line), shown_error }
}

/// A run that exits 2 (usage) says so in its `result` status too.
fn usage_marked(status: ExitStatus, line: ResultLine) -> ResultLine {
    match status {
        ExitStatus::Usage => ResultLine { status: ExecStatus::UsageError, ..line },
        _ => line,
    }
}

/// How the session's last turn ended, as `keel sessions` says it
/// (`completed`, `interrupted`, `failed`, `max_steps`, `empty`).
fn last_turn_status(session: &Session) -> String {
    crate::session::summarize(session.log_path()).map_or_else(|_| "unknown".into(), |s| s.status)
}

/// `keel exec resume ID --approve-plan` / `--reject-plan FEEDBACK`: the
/// plan a `--plan-only` run left for review is answered (recorded), and
/// the model is told so in the prompt of the next turn, before any prompt
/// the user gave. Returns that prompt.
fn review_waiting_plan(
    session: &mut Session,
    options: &ExecOptions,
) -> Result<Option<String>, String> {
    let prompt = options.prompt.clone();
    if options.resume.is_none() {
        return Ok(prompt);
    }
    let note = if let Some(feedback) = &options.reject_plan {
        match session.reject_submitted_plan(feedback) {
            Ok(true) => rejection_text(feedback),
            Ok(false) => return Err("there is no plan waiting for review in this session".into()),
            Err(error) => return Err(error.to_string()),
        }
    } else if options.plan_review == Some(PlanReview::Approve) {
        match session.approve_submitted_plan() {
            Ok(true) => {
                "The plan is approved. Implement it, verify the change, then deliver.".to_owned()
            }
            Ok(false) => return Ok(prompt),
            Err(error) => return Err(error.to_string()),
        }
    } else {
        return Ok(prompt);
    };
    Ok(Some(match prompt {
        Some(prompt) => format!("{note}\n\n{prompt}"),
        None => note,
    }))
}

/// Finishes a resumed turn left open, then the inputs a crash left
/// undelivered, then runs `prompt` if there is one, then what comes on
/// `--input-stream` until its EOF; records the end of the session. Stops
/// after a turn that did not complete. `None`: nothing ran (no open turn,
/// no prompt, no input). Calls declined in any turn are all reported.
async fn run_turns(
    session: &mut Session,
    prompt: Option<String>,
    shape: Option<&AnswerShape>,
    cancel: &CancellationToken,
) -> Result<Option<TurnSummary>, RuntimeError> {
    let mut last = session.continue_turn(cancel).await?;
    let mut going = ok(&last, cancel) && run_queue(session, &mut last, cancel).await?;
    if let (Some(prompt), true) = (prompt, going) {
        let mut summary = session.run_turn(answer::prompt_with(shape, prompt), cancel).await?;
        if let Some(shape) = shape {
            summary = answer::ask_until_shaped(session, shape, summary, cancel).await?;
        }
        going = then(&mut last, summary, cancel) && run_queue(session, &mut last, cancel).await?;
    }
    while going && session.next_input().await? {
        going = run_queue(session, &mut last, cancel).await?;
    }
    session.end("exec finished").await?;
    Ok(last)
}

/// Runs the turns of the inputs waiting, oldest first; whether the run
/// goes on (every one completed).
async fn run_queue(
    session: &mut Session,
    last: &mut Option<TurnSummary>,
    cancel: &CancellationToken,
) -> Result<bool, RuntimeError> {
    while let Some(summary) = session.run_queued(cancel).await? {
        if !then(last, summary, cancel) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `summary` becomes the last turn's, keeping the calls declined before;
/// whether the run goes on.
fn then(
    last: &mut Option<TurnSummary>,
    mut summary: TurnSummary,
    cancel: &CancellationToken,
) -> bool {
    let earlier: Vec<DeclinedCall> = last.take().map(|s| s.declined).unwrap_or_default();
    summary.declined.splice(0..0, earlier);
    *last = Some(summary);
    ok(last, cancel)
}

fn ok(last: &Option<TurnSummary>, cancel: &CancellationToken) -> bool {
    !cancel.is_cancelled() && last.as_ref().is_none_or(|s| s.outcome == TurnOutcome::Completed)
}

/// The `result` status and final text, with the workflow's say: a
/// submitted plan under `--plan-only` is `plan_ready` (the plan is the
/// final text), no plan there is `failed`; a completed turn with calls
/// declined for want of an approval is `needs_approval`; one whose
/// changes were never verified after the last change is `unverified`.
fn workflow_status(
    session: &Session,
    options: &ExecOptions,
    summary: &TurnSummary,
) -> (ExecStatus, Option<String>) {
    let flow = session.workflow();
    let final_text = summary.final_text.clone();
    if summary.outcome != TurnOutcome::Completed {
        return (ExecStatus::of_turn(summary.outcome), final_text);
    }
    match &flow.plan {
        Some(plan)
            if options.plan_review == Some(PlanReview::StopAfterSubmit)
                && plan.status == PlanStatus::Submitted =>
        {
            return (ExecStatus::PlanReady, Some(plan.text.clone()));
        }
        Some(_) | None => {}
    }
    if !summary.declined.is_empty() {
        return (ExecStatus::NeedsApproval, final_text);
    }
    if options.plan_review == Some(PlanReview::StopAfterSubmit) {
        return (ExecStatus::Failed, final_text);
    }
    if flow.delivers_unverified() {
        return (ExecStatus::Unverified, final_text);
    }
    (ExecStatus::of_turn(summary.outcome), final_text)
}

/// Why a `budget_exceeded` run stopped and how to go on.
fn budget_error(session: &Session) -> String {
    let spend = session.spend_status();
    let mut spent = Vec::new();
    if let Some(max) = spend.limits.max_cost_usd {
        let used = spend.spent_usd.map_or_else(|| "?".to_owned(), crate::agent::usd);
        spent.push(format!("{used} of the {} cost limit", crate::agent::usd(max)));
    }
    if let Some(max) = spend.limits.max_tokens {
        spent.push(format!("{} of the {max} token limit", spend.spent_tokens));
    }
    format!(
        "stopped before a model request that would have crossed the session's limit ({} spent); \
         go on with a higher one: keel exec resume {} --max-cost USD (or --max-tokens N) \
         \"PROMPT\"",
        spent.join(", "),
        session.id()
    )
}

/// Writes the closing output: the `result` line in JSON mode; otherwise the
/// final text on stdout and any error on stderr.
fn report(line: &ResultLine, json: bool, status: Option<ExitStatus>) {
    if json {
        write_result(line);
        return;
    }
    let mut stderr = std::io::stderr().lock();
    if let Some(error) = &line.error {
        // `no_tool_call` is a guess from the prompt's words, not a failure.
        let label = if line.status == ExecStatus::NoToolCall { "warning" } else { "error" };
        let _ = writeln!(stderr, "{label}: {}", for_terminal(error));
    }
    if status == Some(ExitStatus::Interrupted) {
        let _ = writeln!(stderr, "interrupted");
    }
    for question in &line.unanswered {
        let _ = writeln!(stderr, "unanswered question (ask_user): {}", for_terminal(question));
    }
    match line.status {
        ExecStatus::Unverified => {
            let why = line.verification.as_deref().unwrap_or("no check ran after the last change");
            let _ =
                writeln!(stderr, "unverified: files changed after the last passing check; {why}");
        }
        ExecStatus::PlanReady => {
            let saved = line.plan_path.as_deref().unwrap_or("the session log");
            let _ = writeln!(
                stderr,
                "plan ready for review (saved in {saved}); continue with \
                `keel exec resume {id} --approve-plan`, or revise it with \
                `keel exec resume {id} --reject-plan FEEDBACK`",
                id = line.session_id.as_deref().unwrap_or("ID")
            );
        }
        ExecStatus::NeedsApproval => {
            for text in needs_approval_lines(&line.declined) {
                let _ = writeln!(stderr, "{}", for_terminal(&text));
            }
        }
        ExecStatus::Completed
        | ExecStatus::Failed
        | ExecStatus::Interrupted
        | ExecStatus::BudgetExceeded
        | ExecStatus::Stuck
        | ExecStatus::UsageError
        | ExecStatus::Cut
        | ExecStatus::NoToolCall
        | ExecStatus::SchemaInvalid => {}
    }
    let limits = line.spend.map(|spend| spend.limits).unwrap_or_default();
    match (line.cost_usd.filter(|_| line.usage.total_tokens() > 0), limits.max_cost_usd) {
        (Some(cost), Some(max)) => {
            let _ = writeln!(stderr, "cost: ${cost:.4} of {} (limit)", crate::agent::usd(max));
        }
        (Some(cost), None) => {
            let _ = writeln!(stderr, "cost: ${cost:.4}");
        }
        (None, _) => {}
    }
    if let (Some(max), Some(spend)) = (limits.max_tokens, line.spend) {
        let _ = writeln!(stderr, "tokens: {} of {max} (limit)", spend.spent_tokens);
    }
    if let Some(text) = &line.final_text {
        let mut stdout = std::io::stdout().lock();
        // A terminal acts on control sequences; a pipe or file gets the
        // model's text exactly (it is data there, and -o writes it raw).
        let text = if stdout.is_terminal() { for_terminal(text) } else { text.into() };
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }
}

/// The closing lines of a `needs_approval` run: how many calls were not
/// run, each with what allows it, in full (never cut), and the one flag
/// that allows them all when there is one.
pub fn needs_approval_lines(declined: &[DeclinedCall]) -> Vec<String> {
    let mut lines = vec![format!(
        "needs approval: {} call(s) the model wanted were not run (this run cannot ask); \
         the answer below may claim otherwise",
        declined.len()
    )];
    for entry in declined {
        // Every argument, in full: the flag allows exactly what is listed.
        let text = crate::display::approval_text(&entry.call);
        let name = crate::display::escape_visibly(&entry.call.name);
        lines.push(format!("  {name}: allow with {}", entry.allow_with));
        lines.extend(text.split('\n').map(|line| format!("    {line}")));
    }
    let flags: Vec<&str> = declined
        .iter()
        .map(|entry| entry.allow_with.split(',').next().unwrap_or("").trim())
        .collect();
    let all_one = flags
        .first()
        .filter(|first| first.starts_with("--") && flags.iter().all(|flag| flag == *first));
    if let Some(flag) = all_one {
        lines.push(format!("rerun with {flag} to allow them"));
    }
    lines
}

/// JSON shape of usage in exec output.
pub(crate) fn usage_json(usage: &Usage) -> serde_json::Value {
    serde_json::json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "cache_hit_rate": usage.cache_hit_rate().map(|rate| (rate * 1000.0).round() / 1000.0),
        "reasoning_tokens": usage.reasoning_tokens,
        "total_tokens": usage.total_tokens(),
    })
}

/// Writes one JSON value as a line on stdout (for `keel tool`).
pub fn write_json_line(value: &serde_json::Value) {
    json::write_line(&mut std::io::stdout().lock(), value);
}
