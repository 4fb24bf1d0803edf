//! Snapshot and `update` tests of what the workflow, sessions and trust
//! add to the TUI: the status line (phase, context, cost, sandbox), the
//! plan review driven by a `submit_plan` approval, the tasks panel fed by
//! `WorkflowChanged`, slash commands and the popup with skills, the resume
//! picker and the trust question. Helpers are `view_tests`'.

use crossterm::event::KeyCode;

use super::app::{App, ApprovalReply, Command, Msg, update};
use super::picker::{PickerRow, PickerView, TrustView};
use super::transcript::{CellKind, Level};
use super::view_tests::{app, call, key, render, runtime, start_turn, type_text};
use crate::policy::ApprovalMode;
use crate::protocol::{Item, ModelResponse, StopReason, TurnOutcome, Usage};
use crate::runtime::{RuntimeEvent, SandboxState};
use crate::tasks::{Task, TaskStatus};

const PLAN: &str = "# Rename the parser\n\n## Steps\n\n1. edit `src/a.rs`\n2. update callers\n\n## Verification\n\n`cargo test`\n";
const PLAN_PATH: &str = "/repo/.keel/plans/s-1-r1.md";

fn workflow(app: &mut App, phase: &str, tasks: Vec<Task>) {
    runtime(
        app,
        RuntimeEvent::WorkflowChanged {
            phase: phase.into(),
            plan_path: Some(PLAN_PATH.into()),
            plan_status: Some("submitted".into()),
            tasks,
        },
    );
}

fn task(id: &str, text: &str, status: TaskStatus) -> Task {
    Task { id: id.into(), text: text.into(), status }
}

fn texts(app: &App) -> Vec<String> {
    app.transcript
        .cells()
        .iter()
        .filter_map(|cell| match cell.kind() {
            CellKind::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// A session on a priced model, in the implement phase, sandbox unavailable.
fn priced_app() -> App {
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    runtime(
        &mut app,
        RuntimeEvent::SessionStarted {
            limits: crate::agent::SpendLimits::default(),
            session_id: "s-1".into(),
            log_path: "/tmp/s-1.jsonl".into(),
            provider: "openai".into(),
            model: "gpt-4o".into(),
            workspace_root: "/repo".into(),
            sandbox: SandboxState::Unavailable,
            mode: ApprovalMode::Ask,
            pricing: crate::context::Pricing::for_model("gpt-4o"),
        },
    );
    workflow(&mut app, "implement", Vec::new());
    start_turn(&mut app, "rename it");
    let usage = Usage { input_tokens: 32_000, output_tokens: 1_000, ..Usage::default() };
    let items = vec![Item::Assistant { text: "On it.".into() }];
    let response =
        ModelResponse { items, usage, stop_reason: StopReason::EndTurn, response_id: None };
    runtime(&mut app, RuntimeEvent::ModelResponse(response));
    update(&mut app, Msg::Tick(std::time::Duration::from_secs(12)));
    app
}

#[test]
fn status_line_with_phase_context_cost_and_sandbox() {
    let app = priced_app();
    let screen = render(&app, 110, 3);
    // 32 000 of gpt-4o's 128 000 tokens; $2.50/M in + $10/M out.
    for part in ["implement", "ctx 25%", "↑32000 ↓1000", "$0.0900", "sandbox unavailable"] {
        assert!(screen.contains(part), "{part} missing:\n{screen}");
    }
    insta::assert_snapshot!("status_line_workflow", screen);
    // Narrow: tokens and cost go first; phase, mode, sandbox and spinner stay.
    let narrow = render(&app, 64, 3);
    assert!(narrow.contains("sandbox unavailable") && narrow.contains("⠋"), "{narrow}");
    assert!(!narrow.contains("↑32000"), "{narrow}");
    insta::assert_snapshot!("status_line_workflow_narrow", narrow);
}

/// Review O1: after `/model`, what was spent keeps the prices it was
/// charged at; only responses from the new model cost its prices.
#[test]
fn a_model_switch_prices_only_what_follows_it() {
    let mut app = priced_app();
    assert_eq!(
        slash(&mut app, "/model claude-opus-4"),
        [Command::SetModel("claude-opus-4".into())]
    );
    assert_eq!(app.status.model, "gpt-4o", "the runtime says when the switch is done");
    let pricing = crate::context::Pricing::for_model("claude-opus-4");
    runtime(&mut app, RuntimeEvent::ModelChanged { model: "claude-opus-4".into(), pricing });
    let usage = Usage { input_tokens: 32_000, output_tokens: 1_000, ..Usage::default() };
    let items = vec![Item::Assistant { text: "Done.".into() }];
    let response =
        ModelResponse { items, usage, stop_reason: StopReason::EndTurn, response_id: None };
    runtime(&mut app, RuntimeEvent::ModelResponse(response));
    let screen = render(&app, 120, 3);
    // $0.09 at gpt-4o's prices, then 32 000 × $15 + 1 000 × $75 per million.
    assert!(screen.contains("$0.6450") && screen.contains("claude-opus-4"), "{screen}");
}

#[test]
fn status_line_shows_the_cache_hit_rate_and_the_cached_cost() {
    let mut app = priced_app();
    let usage = Usage {
        input_tokens: 32_000,
        cached_input_tokens: 32_000,
        output_tokens: 1_000,
        ..Usage::default()
    };
    let items = vec![Item::Assistant { text: "Again.".into() }];
    let response =
        ModelResponse { items, usage, stop_reason: StopReason::EndTurn, response_id: None };
    runtime(&mut app, RuntimeEvent::ModelResponse(response));
    let screen = render(&app, 120, 3);
    // 64 000 in, 32 000 of them from the cache; each response charged
    // alone: (32 000 × $2.50 + 1 000 × $10) + (32 000 × $1.25 + 1 000 ×
    // $10), per million.
    for part in ["cache 50%", "$0.1400"] {
        assert!(screen.contains(part), "{part} missing:\n{screen}");
    }
}

#[test]
fn mode_changes_from_the_runtime_show_once_above_the_input() {
    let mut app = app();
    runtime(&mut app, RuntimeEvent::ModeChanged { mode: ApprovalMode::Auto });
    assert_eq!(app.status.mode, ApprovalMode::Auto);
    assert!(app.hint.as_deref().is_some_and(|h| h.starts_with("mode auto")), "{:?}", app.hint);
    assert!(!texts(&app).iter().any(|t| t.starts_with("mode")), "{:?}", texts(&app));
}

fn plan_review_app() -> App {
    let mut app = app();
    app.status.mode = ApprovalMode::Plan;
    start_turn(&mut app, "rename the parser");
    workflow(&mut app, "plan", Vec::new());
    let plan = call("p1", "submit_plan", serde_json::json!({ "plan_markdown": PLAN }));
    let reason = format!("review this plan:\n\n{PLAN}");
    update(&mut app, Msg::ApprovalRequested { call: plan, reason });
    app
}

#[test]
fn a_submitted_plan_opens_the_review() {
    let app = plan_review_app();
    assert!(app.approval.is_none(), "a plan is reviewed, not approved like a command");
    let plan = app.plan.as_ref().unwrap();
    assert_eq!(plan.title, "Rename the parser");
    assert_eq!(plan.path.as_deref(), Some(PLAN_PATH));
    insta::assert_snapshot!("plan_review_of_a_submitted_plan", render(&app, 80, 24));
}

#[test]
fn plan_review_approves_then_ask_or_auto() {
    let mut app = plan_review_app();
    let commands = update(&mut app, key(KeyCode::Char('A')));
    let auto = ApprovalReply::PlanApproved { mode: ApprovalMode::Auto, note: None };
    assert_eq!(commands, [Command::Answer(auto)]);
    assert!(app.plan.is_none());
    let mut app = plan_review_app();
    let commands = update(&mut app, key(KeyCode::Char('a')));
    let ask = ApprovalReply::PlanApproved { mode: ApprovalMode::Ask, note: None };
    assert_eq!(commands, [Command::Answer(ask)]);
}

#[test]
fn plan_review_rejects_with_feedback_for_the_model() {
    let mut app = plan_review_app();
    update(&mut app, key(KeyCode::Char('r')));
    type_text(&mut app, "keep parse as an alias");
    let commands = update(&mut app, key(KeyCode::Enter));
    let reply = ApprovalReply::Deny(Some("keep parse as an alias".into()));
    assert_eq!(commands, [Command::Answer(reply)]);
    assert!(app.status.running, "the turn goes on: the model revises the plan");
}

#[test]
fn plan_review_edit_then_approve_tells_the_model_to_reread_the_file() {
    let mut app = plan_review_app();
    let commands = update(&mut app, key(KeyCode::Char('e')));
    let edit = Command::EditPlan { path: Some(PLAN_PATH.into()), text: PLAN.into() };
    assert_eq!(commands, [edit]);
    assert!(app.plan.is_some(), "the review stays open while the editor runs");
    let edited =
        PLAN.replace("2. update callers\n", "2. update callers\n3. keep `parse` as an alias\n");
    update(&mut app, Msg::PlanEdited(edited));
    insta::assert_snapshot!("plan_review_after_edit", render(&app, 80, 24));
    let commands = update(&mut app, key(KeyCode::Char('A')));
    let [Command::Answer(ApprovalReply::PlanApproved { mode, note: Some(note) })] =
        commands.as_slice()
    else {
        panic!("{commands:?}")
    };
    assert_eq!(*mode, ApprovalMode::Auto);
    assert!(note.contains("edited the plan") && note.contains(PLAN_PATH), "{note}");
}

#[test]
fn plan_review_esc_stops_the_turn() {
    let mut app = plan_review_app();
    assert_eq!(update(&mut app, key(KeyCode::Esc)), [Command::Interrupt]);
    assert!(app.plan.is_none());
}

#[test]
fn tasks_panel_follows_todo_write() {
    let mut app = app();
    let tasks = vec![
        task("1", "read the parser", TaskStatus::Completed),
        task("2", "rename parse", TaskStatus::InProgress),
        task("3", "run the tests", TaskStatus::Pending),
    ];
    workflow(&mut app, "implement", tasks);
    insta::assert_snapshot!("tasks_panel_from_the_workflow", render(&app, 60, 16));
    type_text(&mut app, "/tasks");
    update(&mut app, key(KeyCode::Enter));
    assert!(!render(&app, 60, 16).contains("Tasks 1/3"), "/tasks hides the panel");
}

fn with_skills(app: &mut App) {
    let skills = [("review", "review the current diff"), ("release", "cut a release")];
    let skills = skills.iter().map(|(n, d)| ((*n).to_owned(), (*d).to_owned())).collect();
    update(app, Msg::SkillsListed(skills));
}

#[test]
fn slash_popup_lists_skills() {
    let mut app = app();
    with_skills(&mut app);
    type_text(&mut app, "/re");
    insta::assert_snapshot!("slash_popup_with_skills", render(&app, 60, 12));
    let mut app = self::app();
    with_skills(&mut app);
    type_text(&mut app, "/review src/a.rs");
    let commands = update(&mut app, key(KeyCode::Enter));
    let skill = Command::Skill { name: "review".into(), args: "src/a.rs".into() };
    assert_eq!(commands, [skill]);
    assert!(app.status.running);
}

fn slash(app: &mut App, line: &str) -> Vec<Command> {
    type_text(app, line);
    update(app, key(KeyCode::Enter))
}

#[test]
fn slash_commands() {
    let mut app = app();
    assert_eq!(slash(&mut app, "/plan"), [Command::SetMode(ApprovalMode::Plan)]);
    assert_eq!(slash(&mut app, "/mode explore"), [Command::SetMode(ApprovalMode::Explore)]);
    assert_eq!(slash(&mut app, "/mode auto"), [Command::SetMode(ApprovalMode::Auto)]);
    assert!(slash(&mut app, "/mode fast").is_empty());
    assert_eq!(slash(&mut app, "/diff"), [Command::Diff]);
    assert_eq!(slash(&mut app, "/undo"), [Command::Undo]);
    assert!(slash(&mut app, "/model").is_empty());
    assert_eq!(slash(&mut app, "/resume"), [Command::SwitchSession]);
    assert!(slash(&mut app, "/skills").is_empty());
    assert!(slash(&mut app, "/nope").is_empty());
    let notices = texts(&app);
    assert!(notices.iter().any(|t| t.starts_with("unknown mode `fast`")));
    assert!(notices.iter().any(|t| t.starts_with("model mock-model · provider openai-chat")));
    assert!(notices.iter().any(|t| t.starts_with("no skills found")));
    assert!(notices.iter().any(|t| t.starts_with("unknown command /nope")));
    assert_eq!(
        slash(&mut app, "/compact the parser work"),
        [Command::Compact { focus: Some("the parser work".into()) }]
    );
    assert!(app.status.running, "compaction shows as running");
    assert!(slash(&mut app, "/undo").is_empty(), "session commands wait for the turn");
    assert_eq!(app.editor.text(), "/undo", "the line is given back");
    update(&mut app, Msg::CompactFinished(Ok(false)));
    assert!(!app.status.running);
    assert!(texts(&app).iter().any(|t| t == "nothing to compact"));
}

#[test]
fn diff_output_becomes_a_diff_cell() {
    let mut app = app();
    let diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n fn main() {\n-    old();\n+    new();\n";
    update(&mut app, Msg::DiffReady(diff.into()));
    insta::assert_snapshot!("slash_diff", render(&app, 60, 12));
    update(&mut app, Msg::DiffReady(String::new()));
    assert!(texts(&app).iter().any(|t| t.starts_with("no uncommitted changes")));
}

fn picker() -> PickerView {
    let row = |id: &str, started: &str, status: &str, prompt: &str| PickerRow {
        path: format!("/home/u/.keel/sessions/{id}.jsonl").into(),
        started: started.into(),
        status: status.into(),
        first_prompt: prompt.into(),
    };
    PickerView {
        rows: vec![
            row("c", "2026-11-29 21:40", "open", "fix the flaky parser test"),
            row("b", "2026-11-28 09:12", "completed", "rename parse to parse_header"),
            row("a", "2026-11-20 17:03", "interrupted", "add a --json flag to sessions"),
        ],
        selected: 0,
        over_session: false,
    }
}

#[test]
fn resume_picker() {
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    app.picker = Some(picker());
    update(&mut app, key(KeyCode::Down));
    insta::assert_snapshot!("resume_picker", render(&app, 80, 10));
    let commands = update(&mut app, key(KeyCode::Enter));
    let chosen = std::path::PathBuf::from("/home/u/.keel/sessions/b.jsonl");
    assert_eq!(commands, [Command::OpenSession(Some(chosen))]);
    assert!(app.picker.is_none());
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    app.picker = Some(picker());
    assert_eq!(update(&mut app, key(KeyCode::Char('n'))), [Command::OpenSession(None)]);
    app.picker = Some(picker());
    assert_eq!(update(&mut app, key(KeyCode::Esc)), [Command::Quit]);
    assert_eq!(update(&mut app, super::view_tests::ctrl('c')), [Command::Quit]);
}

fn trust_app() -> App {
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    let found = vec![".keel/rules/".to_owned(), "hooks".to_owned()];
    app.trust = Some(TrustView { root: "/work/project".into(), found });
    app
}

#[test]
fn trust_prompt() {
    let mut app = trust_app();
    insta::assert_snapshot!("trust_prompt", render(&app, 80, 16));
    assert!(update(&mut app, key(KeyCode::Char('x'))).is_empty(), "only y or n answer");
    assert_eq!(update(&mut app, key(KeyCode::Char('y'))), [Command::Trust(true)]);
    assert!(app.trust.is_none());
    let mut app = trust_app();
    assert_eq!(update(&mut app, key(KeyCode::Char('n'))), [Command::Trust(false)]);
}

#[test]
fn new_views_survive_tiny_areas() {
    let mut apps = vec![priced_app(), plan_review_app(), trust_app()];
    let mut with_picker = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    with_picker.picker = Some(picker());
    apps.push(with_picker);
    let mut empty_picker = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    empty_picker.picker = Some(PickerView::default());
    apps.push(empty_picker);
    for app in &apps {
        for width in 0..16 {
            for height in 0..8 {
                render(app, width, height);
            }
        }
    }
    insta::assert_snapshot!("plan_review_tiny", render(&plan_review_app(), 10, 3));
}

#[test]
fn a_turn_ending_closes_the_plan_review() {
    let mut app = plan_review_app();
    runtime(
        &mut app,
        RuntimeEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::Interrupted,
            final_text: None,
            usage: Usage::default(),
            unverified: None,
        },
    );
    assert!(app.plan.is_none() && !app.status.running);
    update(&mut app, Msg::Notice(Level::Info, "x".into()));
}

#[test]
fn a_resumed_conversation_is_shown() {
    let mut app = app();
    let ls = call("c1", "shell", serde_json::json!({ "command": "ls" }));
    let items = vec![
        Item::user("what is here?"),
        Item::ToolCall(ls),
        Item::ToolResult(crate::protocol::ToolResult {
            call_id: "c1".into(),
            output: "Cargo.toml\nsrc\n".into(),
            is_error: false,
            images: Vec::new(),
        }),
        Item::ToolCall(call("c2", "shell", serde_json::json!({ "command": "cat f1.txt" }))),
        Item::ToolResult(crate::protocol::ToolResult {
            call_id: "c2".into(),
            output: "exit code: 1\n--- stderr ---\ncat: f1.txt: No such file\n".into(),
            is_error: false,
            images: Vec::new(),
        }),
        Item::Assistant { text: "A Rust **crate**.".into() },
    ];
    let usage = Usage { input_tokens: 900, output_tokens: 40, ..Usage::default() };
    update(&mut app, Msg::History(items, usage, Some(0.0)));
    let screen = render(&app, 60, 18);
    assert!(
        screen.contains("✗ shell cat f1.txt  exit 1"),
        "the log's exit code is read back:\n{screen}"
    );
    insta::assert_snapshot!("resumed_history", screen);
}

#[test]
fn ctrl_o_expands_the_latest_cut_output_then_all_then_none() {
    let mut app = app();
    start_turn(&mut app, "two long outputs");
    let long = (1..=8).map(|n| format!("line {n}")).collect::<Vec<_>>().join("\n");
    for id in ["old", "new"] {
        let shell = call(id, "shell", serde_json::json!({ "command": format!("seq {id}") }));
        let result = crate::protocol::ToolResult {
            call_id: id.into(),
            output: long.replace("line", id),
            is_error: false,
            images: Vec::new(),
        };
        runtime(
            &mut app,
            RuntimeEvent::ToolCallFinished {
                call: shell,
                result,
                meta: crate::protocol::ToolMeta::new(),
            },
        );
    }
    let screen = |app: &App| render(app, 60, 40);
    assert!(!screen(&app).contains("old 8") && !screen(&app).contains("new 8"));
    update(&mut app, super::view_tests::ctrl('o'));
    assert!(screen(&app).contains("new 8") && !screen(&app).contains("old 8"), "the latest only");
    update(&mut app, super::view_tests::ctrl('o'));
    assert!(screen(&app).contains("new 8") && screen(&app).contains("old 8"), "then all");
    update(&mut app, super::view_tests::ctrl('o'));
    assert!(!screen(&app).contains("new 8") && !screen(&app).contains("old 8"), "then none");
}

#[test]
fn a_compaction_lowers_the_context_shown() {
    let mut app = priced_app();
    assert_eq!(app.status.context_percent, Some(25));
    let compacted = RuntimeEvent::Compacted {
        reason: "manual".into(),
        tokens_before: 32_000,
        tokens_after: 6_400,
    };
    runtime(&mut app, RuntimeEvent::Compacting { trigger: "manual".into() });
    assert_eq!(app.status.activity, "compacting", "the spinner says why it waits");
    runtime(&mut app, compacted);
    assert_eq!(app.status.context_percent, Some(5));
    assert!(render(&app, 110, 3).contains("ctx 5%"));
}

#[test]
fn configured_prices_and_window_price_a_model_keel_does_not_know() {
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    let pricing = crate::context::Pricing {
        context_window: Some(10_000),
        input_price: Some(1_000.0),
        cached_input_price: None,
        cache_write_price: None,
        output_price: Some(2_000.0),
    };
    runtime(
        &mut app,
        RuntimeEvent::SessionStarted {
            limits: crate::agent::SpendLimits::default(),
            session_id: "s-1".into(),
            log_path: "/tmp/s-1.jsonl".into(),
            provider: "openai-chat".into(),
            model: "local-qwen".into(),
            workspace_root: "/repo".into(),
            sandbox: SandboxState::On,
            mode: ApprovalMode::Ask,
            pricing,
        },
    );
    let usage = Usage { input_tokens: 2_500, output_tokens: 500, ..Usage::default() };
    let response = ModelResponse {
        items: vec![Item::Assistant { text: "hi".into() }],
        usage,
        stop_reason: StopReason::EndTurn,
        response_id: None,
    };
    runtime(&mut app, RuntimeEvent::ModelResponse(response));
    assert_eq!(app.status.context_percent, Some(25));
    // 2 500 × $1 000 + 500 × $2 000 per million tokens.
    let line = render(&app, 110, 3);
    assert!(line.contains("ctx 25%") && line.contains("$3.50"), "{line}");
}
