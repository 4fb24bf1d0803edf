//! Snapshot tests of what the user sees (ratatui `TestBackend` + insta),
//! tiny-area no-panic tests, and the key flows of `update`.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use super::app::{App, ApprovalReply, Command, Msg, update};
use super::panels::{PlanView, TaskItem, TaskState};
use super::theme::Theme;
use super::view::view;
use crate::policy::ApprovalMode;
use crate::protocol::{
    Item, ModelResponse, StopReason, StreamEvent, ToolCall, ToolClass, ToolMeta, ToolResult,
    TurnOutcome, Usage,
};
use crate::runtime::RuntimeEvent;

pub(super) fn render(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view(app, frame)).unwrap();
    if width == 0 || height == 0 {
        // TestBackend cannot print an empty buffer.
        return String::new();
    }
    format!("{}", terminal.backend())
}

fn draw(app: &App, width: u16, height: u16) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| view(app, frame)).unwrap();
    terminal.backend().clone()
}

pub(super) fn app() -> App {
    let mut app = App::new(Theme::new(true), ApprovalMode::Ask);
    runtime(
        &mut app,
        RuntimeEvent::SessionStarted {
            limits: crate::agent::SpendLimits::default(),
            session_id: "s-1".into(),
            log_path: "/tmp/s-1.jsonl".into(),
            provider: "openai-chat".into(),
            model: "mock-model".into(),
            workspace_root: "/repo".into(),
            sandbox: crate::runtime::SandboxState::On,
            mode: ApprovalMode::Ask,
            pricing: crate::context::Pricing::for_model("mock-model"),
        },
    );
    app
}

pub(super) fn runtime(app: &mut App, event: RuntimeEvent) {
    update(app, Msg::Runtime(event));
}

pub(super) fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub(super) fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub(super) fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        update(app, key(KeyCode::Char(c)));
    }
}

pub(super) fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
        item_id: None,
        provider_data: None,
    }
}

pub(super) fn start_turn(app: &mut App, prompt: &str) {
    type_text(app, prompt);
    let commands = update(app, key(KeyCode::Enter));
    assert_eq!(commands, [Command::Submit(prompt.into())]);
    runtime(app, RuntimeEvent::TurnStarted { turn: 1 });
}

fn stream(app: &mut App, text: &str) {
    // Uneven pieces, as models stream them.
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(7) {
        let delta: String = piece.iter().collect();
        runtime(app, RuntimeEvent::Stream(StreamEvent::TextDelta { delta }));
    }
}

fn respond(app: &mut App, text: &str, calls: &[ToolCall]) {
    let mut items = vec![Item::Assistant { text: text.into() }];
    items.extend(calls.iter().cloned().map(Item::ToolCall));
    let usage = Usage { input_tokens: 1200, output_tokens: 340, ..Usage::default() };
    let response =
        ModelResponse { items, usage, stop_reason: StopReason::EndTurn, response_id: None };
    runtime(app, RuntimeEvent::ModelResponse(response));
}

fn finish_tool(app: &mut App, call: &ToolCall, output: &str, is_error: bool, exit: Option<i64>) {
    let meta = exit.map_or_else(ToolMeta::new, |code| ToolMeta::command(Some(code), None));
    let result = ToolResult {
        call_id: call.call_id.clone(),
        output: output.into(),
        is_error,
        images: Vec::new(),
    };
    runtime(app, RuntimeEvent::ToolCallFinished { call: call.clone(), result, meta });
}

const MARKDOWN: &str = "## Plan\n\nI will **fix** the `parse` function:\n\n\
1. read `src/lib.rs`\n2. change the loop\n\n```rust\nfn parse(s: &str) -> u32 {\n    s.len() as u32\n}\n```\n\n\
> quoted note\n\nand a long line that has to wrap because the terminal is narrow enough to need it.";

#[test]
fn transcript_with_streamed_markdown_and_code() {
    let mut app = app();
    start_turn(&mut app, "fix the parser");
    stream(&mut app, MARKDOWN);
    insta::assert_snapshot!("streaming", render(&app, 60, 30));
    respond(&mut app, MARKDOWN, &[]);
    runtime(
        &mut app,
        RuntimeEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::Completed,
            final_text: None,
            usage: Usage::default(),
            unverified: None,
        },
    );
    insta::assert_snapshot!("finished", render(&app, 60, 30));
}

#[test]
fn a_turn_delivered_without_a_passing_check_says_unverified_and_why() {
    let mut app = app();
    start_turn(&mut app, "add a function");
    respond(&mut app, "Done.", &[]);
    runtime(
        &mut app,
        RuntimeEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::Completed,
            final_text: Some("Done.".into()),
            usage: Usage::default(),
            unverified: Some("no check ran after the last change".into()),
        },
    );
    insta::assert_snapshot!("unverified", render(&app, 80, 12));
}

#[test]
fn a_half_streamed_code_block_renders_as_code() {
    let mut app = app();
    start_turn(&mut app, "show me");
    stream(&mut app, "Here:\n\n```sh\ncargo build --rel");
    insta::assert_snapshot!(render(&app, 40, 12));
}

fn tool_cells() -> App {
    let mut app = app();
    start_turn(&mut app, "run the tests");
    let ok = call("c1", "shell", serde_json::json!({"command": "cargo test"}));
    let failed = call("c2", "shell", serde_json::json!({"command": "false"}));
    let read = call("c4", "read_file", serde_json::json!({"path": "calc.py"}));
    let running = call("c3", "read_file", serde_json::json!({"path": "src/lib.rs"}));
    let calls = [ok.clone(), failed.clone(), read.clone(), running.clone()];
    respond(&mut app, "Running them.", &calls);
    for c in &calls {
        let class = if c.name == "shell" { ToolClass::Mutating } else { ToolClass::ReadOnly };
        runtime(&mut app, RuntimeEvent::ToolCallStarted { call: c.clone(), class });
    }
    // Shaped as the shell tool writes them: a non-zero exit is a result,
    // not a tool error, and must still show as a failure.
    let tests = (1..=9).map(|n| format!("test t{n} ... ok")).collect::<Vec<_>>().join("\n");
    finish_tool(&mut app, &ok, &format!("exit code: 0\n--- stdout ---\n{tests}\n"), false, Some(0));
    let failure = "exit code: 1\n--- stdout ---\nchecking\n--- stderr ---\nerror[E0425]: cannot find \
                   value `x`\nerror: could not compile\n";
    finish_tool(&mut app, &failed, failure, false, Some(1));
    finish_tool(&mut app, &read, "     1\tdef add(a, b):\n     2\t    return a + b\n", false, None);
    update(&mut app, Msg::Tick(Duration::from_millis(3400)));
    app
}

#[test]
fn tool_call_cells() {
    let app = tool_cells();
    insta::assert_snapshot!("collapsed", render(&app, 60, 22));
}

#[test]
fn parallel_reads_run_together_each_with_a_spinner() {
    let mut app = app();
    start_turn(&mut app, "look around");
    let calls: Vec<ToolCall> = (1..=4)
        .map(|n| {
            let command = format!("sleep 1 && cat f{n}.txt");
            call(&format!("c{n}"), "shell", serde_json::json!({ "command": command }))
        })
        .collect();
    respond(&mut app, "Reading the four files.", &calls);
    for c in &calls {
        let class = ToolClass::ReadOnly;
        runtime(&mut app, RuntimeEvent::ToolCallStarted { call: c.clone(), class });
    }
    update(&mut app, Msg::Tick(Duration::from_millis(700)));
    insta::assert_snapshot!("parallel_running", render(&app, 60, 14));
    // Results arrive in call order once the batch is over; the cells not
    // answered yet keep turning.
    finish_tool(&mut app, &calls[0], "exit code: 0\n--- stdout ---\none\n", false, Some(0));
    update(&mut app, Msg::Tick(Duration::from_millis(800)));
    let screen = render(&app, 60, 14);
    assert!(screen.contains("✓ shell sleep 1 && cat f1.txt"), "{screen}");
    assert_eq!(screen.matches("⠇ shell sleep 1 && cat f").count(), 3, "{screen}");
    assert!(screen.contains("⠇ 3 calls"), "{screen}");
}

#[test]
fn a_non_zero_exit_is_a_red_cross_without_framing() {
    let app = tool_cells();
    let screen = render(&app, 60, 40);
    assert!(screen.contains("✗ shell false  exit 1"), "{screen}");
    assert!(screen.contains("✓ shell cargo test ") && !screen.contains("exit 0"), "{screen}");
    assert!(!screen.contains("exit code:") && !screen.contains("--- std"), "{screen}");
    assert!(screen.contains("│     1  def add(a, b):"), "tabs expanded: {screen}");
    let backend = draw(&app, 60, 40);
    let buffer = backend.buffer();
    let cross = (0..buffer.area.height)
        .flat_map(|y| (0..buffer.area.width).map(move |x| (x, y)))
        .find(|&(x, y)| buffer[(x, y)].symbol() == "✗")
        .unwrap();
    assert_eq!(buffer[cross].fg, Color::Red);
}

#[test]
fn shift_tab_asks_before_yolo_and_modes_stay_out_of_the_transcript() {
    let mut app = app();
    let cells = app.transcript.cells().len();
    let shift_tab = || Msg::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
    assert_eq!(update(&mut app, shift_tab()), [Command::SetMode(ApprovalMode::Auto)]);
    assert_eq!(update(&mut app, shift_tab()), [Command::SetMode(ApprovalMode::Plan)]);
    assert_eq!(update(&mut app, shift_tab()), [], "yolo waits for a confirmation");
    assert_eq!(app.status.mode, ApprovalMode::Plan);
    assert!(render(&app, 100, 6).contains("y switches to it"), "{}", render(&app, 100, 6));
    assert_eq!(update(&mut app, shift_tab()), [Command::SetMode(ApprovalMode::Ask)], "skipped");
    for _ in 0..3 {
        update(&mut app, shift_tab());
    }
    assert_eq!(update(&mut app, key(KeyCode::Char('y'))), [Command::SetMode(ApprovalMode::Yolo)]);
    type_text(&mut app, "/mode ask");
    assert_eq!(update(&mut app, key(KeyCode::Enter)), [Command::SetMode(ApprovalMode::Ask)]);
    assert_eq!(app.transcript.cells().len(), cells, "mode changes are not transcript lines");
    assert!(app.hint.as_deref().unwrap_or("").starts_with("mode ask"), "{:?}", app.hint);
}

#[test]
fn tool_call_cells_expand_with_ctrl_o() {
    let mut app = tool_cells();
    update(&mut app, ctrl('o'));
    insta::assert_snapshot!("expanded", render(&app, 60, 26));
}

#[test]
fn diff_cell_with_line_numbers() {
    let mut app = app();
    start_turn(&mut app, "rename it");
    let edit = call("e1", "edit_file", serde_json::json!({"path": "src/a.rs"}));
    runtime(
        &mut app,
        RuntimeEvent::ToolCallStarted { call: edit.clone(), class: ToolClass::Mutating },
    );
    let output = "edited src/a.rs (1 replacement)\n--- a/src/a.rs\n+++ b/src/a.rs\n\
@@ -98,5 +98,6 @@\n fn main() {\n-    let x = old_name();\n+    let x = new_name();\n+    log(x);\n     run(x);\n }\n";
    finish_tool(&mut app, &edit, output, false, None);
    insta::assert_snapshot!(render(&app, 60, 16));
}

pub(super) fn approval_app(request: ToolCall) -> App {
    let mut app = app();
    start_turn(&mut app, "clean up");
    update(
        &mut app,
        Msg::ApprovalRequested {
            call: request,
            reason: "`shell` can change files or run commands".into(),
        },
    );
    app
}

#[test]
fn approval_overlay_for_a_command() {
    let app =
        approval_app(call("c1", "shell", serde_json::json!({"command": "git clean -fdx build/"})));
    insta::assert_snapshot!(render(&app, 70, 20));
}

#[test]
fn approval_overlay_for_an_edit_shows_the_diff() {
    let args = serde_json::json!({"path": "src/a.rs", "old_string": "let a = 1;\nlet b = 2;", "new_string": "let a = 10;"});
    let app = approval_app(call("e1", "edit_file", args));
    insta::assert_snapshot!(render(&app, 70, 20));
}

#[test]
fn approval_note_for_the_model() {
    let mut app =
        approval_app(call("c1", "shell", serde_json::json!({"command": "rm -rf target"})));
    update(&mut app, key(KeyCode::Char('n')));
    type_text(&mut app, "use cargo clean");
    insta::assert_snapshot!(render(&app, 70, 16));
    let commands = update(&mut app, key(KeyCode::Enter));
    assert_eq!(commands, [Command::Answer(ApprovalReply::Deny(Some("use cargo clean".into())))]);
    assert!(app.approval.is_none());
}

#[test]
fn approval_keys_answer_once_or_always() {
    let mut app =
        approval_app(call("c1", "shell", serde_json::json!({"command": "cargo test --all"})));
    // An answer covers what a frame showed: the dialog is drawn first.
    render(&app, 80, 20);
    let commands = update(&mut app, key(KeyCode::Char('a')));
    let [Command::Answer(ApprovalReply::Always(prefix))] = commands.as_slice() else {
        panic!("{commands:?}")
    };
    assert_eq!(prefix.argv, ["cargo", "test"]);
    let mut app = approval_app(call("c1", "shell", serde_json::json!({"command": "ls"})));
    render(&app, 80, 20);
    assert_eq!(update(&mut app, key(KeyCode::Char('y'))), [Command::Answer(ApprovalReply::Once)]);
    let mut app = approval_app(call("c1", "shell", serde_json::json!({"command": "ls"})));
    assert_eq!(update(&mut app, key(KeyCode::Esc)), [Command::Interrupt]);
}

/// Issue 17 item 4: "always" offers the narrowest prefix keel will keep
/// (the script, not the bare interpreter) and nothing keel would refuse.
#[test]
fn approval_always_offers_a_prefix_keel_keeps_or_none() {
    let app =
        approval_app(call("c1", "shell", serde_json::json!({"command": "python3 test_calc.py"})));
    let screen = render(&app, 80, 20);
    assert!(screen.contains("yes, always for `python3 test_calc.py`"), "{screen}");
    let mut app =
        approval_app(call("c1", "shell", serde_json::json!({"command": "rm -f notes.txt"})));
    let screen = render(&app, 80, 20);
    assert!(!screen.contains("always"), "{screen}");
    assert!(update(&mut app, key(KeyCode::Char('a'))).is_empty(), "`a` answers nothing");
    assert!(app.approval.is_some());
}

fn plan() -> PlanView {
    PlanView {
        title: "rename the parser".into(),
        markdown: "## Goal\n\nRename `parse` to `parse_header`.\n\n## Steps\n\n1. edit `src/a.rs`\n2. update callers\n3. run `cargo test`\n".into(),
        scroll: 0,
        feedback: None,
        path: None,
        edited: false,
    }
}

#[test]
fn plan_review() {
    let mut app = app();
    app.plan = Some(plan());
    insta::assert_snapshot!(render(&app, 80, 20));
}

#[test]
fn plan_review_keys() {
    let mut app = app();
    app.plan = Some(plan());
    update(&mut app, key(KeyCode::Char('r')));
    type_text(&mut app, "keep the old name as an alias");
    insta::assert_snapshot!(render(&app, 80, 20));
    let commands = update(&mut app, key(KeyCode::Enter));
    assert!(
        matches!(commands.as_slice(), [Command::Answer(ApprovalReply::Deny(Some(f)))] if f.contains("alias"))
    );
}

fn tasks() -> Vec<TaskItem> {
    [
        ("read the parser", TaskState::Done),
        ("rename parse", TaskState::Active),
        ("run the tests", TaskState::Pending),
    ]
    .into_iter()
    .map(|(title, state)| TaskItem { title: title.into(), state })
    .collect()
}

#[test]
fn tasks_panel() {
    let mut app = app();
    app.tasks = tasks();
    app.show_tasks = true;
    insta::assert_snapshot!(render(&app, 60, 18));
}

#[test]
fn status_line_while_running() {
    let mut app = tool_cells();
    update(&mut app, Msg::Tick(Duration::from_secs(75)));
    let shift_tab = Msg::Key(KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT));
    assert_eq!(update(&mut app, shift_tab), [Command::SetMode(ApprovalMode::Auto)]);
    insta::assert_snapshot!("wide", render(&app, 90, 3));
    insta::assert_snapshot!("narrow", render(&app, 30, 3));
}

#[test]
fn slash_popup() {
    let mut app = app();
    type_text(&mut app, "/m");
    update(&mut app, key(KeyCode::Down));
    insta::assert_snapshot!(render(&app, 60, 12));
    update(&mut app, key(KeyCode::Tab));
    assert_eq!(app.editor.text(), "/model");
}

#[test]
fn tiny_area() {
    let app = tool_cells();
    insta::assert_snapshot!(render(&app, 10, 3));
}

/// Every view at every small size: nothing may panic.
#[test]
fn no_size_panics() {
    let mut apps = vec![tool_cells(), app()];
    let mut with_plan = app();
    with_plan.plan = Some(plan());
    with_plan.tasks = tasks();
    with_plan.show_tasks = true;
    apps.push(with_plan);
    apps.push(approval_app(call("c", "shell", serde_json::json!({"command": "ls"}))));
    let mut popup = app();
    type_text(&mut popup, "/");
    apps.push(popup);
    let mut long_input = app();
    type_text(&mut long_input, &"word ".repeat(60));
    update(&mut long_input, ctrl('j'));
    apps.push(long_input);
    for app in &apps {
        for width in 0..14 {
            for height in 0..8 {
                render(app, width, height);
            }
        }
    }
}

#[test]
fn resize_reflows_the_transcript() {
    let mut app = app();
    start_turn(&mut app, "x");
    stream(&mut app, "one two three four five six seven eight nine ten");
    let wide = render(&app, 60, 8);
    let narrow = render(&app, 20, 10);
    assert!(wide.contains("one two three four five six seven eight nine ten"));
    assert!(narrow.contains("one two three four"));
}

#[test]
fn no_color_draws_no_colours() {
    let mut app = tool_cells();
    app.theme = Theme::new(false);
    let mut terminal = Terminal::new(TestBackend::new(60, 20)).unwrap();
    terminal.draw(|frame| view(&app, frame)).unwrap();
    let buffer = terminal.backend().buffer();
    assert!(buffer.content.iter().all(|cell| cell.fg == Color::Reset && cell.bg == Color::Reset));
}

#[test]
fn interrupts_and_quitting() {
    let mut app = app();
    start_turn(&mut app, "long task");
    assert_eq!(update(&mut app, key(KeyCode::Esc)), [Command::Interrupt]);
    assert_eq!(update(&mut app, ctrl('c')), [Command::Interrupt]);
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
    assert!(update(&mut app, ctrl('c')).is_empty(), "one Ctrl+C only arms");
    assert_eq!(update(&mut app, ctrl('c')), [Command::Quit]);
    let mut app = self::app();
    type_text(&mut app, "x");
    assert!(update(&mut app, ctrl('d')).is_empty(), "Ctrl+D quits only on an empty prompt");
    update(&mut app, key(KeyCode::Backspace));
    assert_eq!(update(&mut app, ctrl('d')), [Command::Quit]);
}

#[test]
fn multi_line_input_and_paste() {
    let mut app = app();
    type_text(&mut app, "first");
    update(&mut app, Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT)));
    update(&mut app, Msg::Paste("second\r\nthird".into()));
    assert_eq!(app.editor.text(), "first\nsecond\nthird");
    insta::assert_snapshot!(render(&app, 40, 10));
}

/// Every modified Enter inserts a newline; only plain Enter sends (issue 37:
/// Ctrl+Enter, `ESC[27;5;13~` or `ESC[13;5u`, sent the prompt).
#[test]
fn any_modified_enter_inserts_a_newline() {
    let mut app = app();
    type_text(&mut app, "a");
    for modifiers in
        [KeyModifiers::SHIFT, KeyModifiers::CONTROL, KeyModifiers::ALT, KeyModifiers::SUPER]
    {
        let commands = update(&mut app, Msg::Key(KeyEvent::new(KeyCode::Enter, modifiers)));
        assert!(commands.is_empty(), "{modifiers:?}+Enter: {commands:?}");
        type_text(&mut app, "b");
    }
    assert_eq!(app.editor.text(), "a\nb\nb\nb\nb");
}

#[test]
fn file_popup_for_at_paths() {
    let mut app = app();
    update(
        &mut app,
        Msg::FilesListed(
            ["src/main.rs", "src/tui/mod.rs", "src/tui/markdown.rs", "README.md"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        ),
    );
    type_text(&mut app, "explain @tuimo");
    insta::assert_snapshot!(render(&app, 60, 10));
    assert!(update(&mut app, key(KeyCode::Enter)).is_empty(), "Enter picks, does not send");
    assert_eq!(app.editor.text(), "explain @src/tui/mod.rs ");
}

#[test]
fn files_are_listed_only_once_an_at_word_is_typed_and_chunks_add_up() {
    let mut app = app();
    let mut asked = Vec::new();
    for c in "fix the bug in ".chars() {
        asked.extend(update(&mut app, key(KeyCode::Char(c))));
    }
    assert!(asked.is_empty(), "no listing without an @: {asked:?}");
    let commands = update(&mut app, key(KeyCode::Char('@')));
    assert!(matches!(commands.as_slice(), [Command::ListFiles]), "{commands:?}");
    update(&mut app, Msg::FilesListed(vec!["src/a.rs".into()]));
    update(&mut app, Msg::FilesListed(vec!["src/b.rs".into()]));
    assert_eq!(app.files, ["src/a.rs", "src/b.rs"]);
    type_text(&mut app, "b.rs @x");
    assert!(update(&mut app, key(KeyCode::Char('y'))).is_empty(), "asked once");
}

#[test]
fn the_spinner_says_when_a_request_is_retried() {
    let mut app = app();
    start_turn(&mut app, "hi");
    let retry = RuntimeEvent::Retrying {
        attempt: 2,
        max_attempts: 5,
        reason: "HTTP 503".into(),
        delay: Duration::from_millis(500),
    };
    runtime(&mut app, retry);
    let screen = render(&app, 120, 3);
    assert!(screen.contains("retrying (2/5): HTTP 503"), "{screen}");
}

/// A stream cut mid-answer and retried shows the answer once: the cut
/// attempt's text and reasoning go (before, every attempt's partial text
/// stayed, run together: "Here is theHere is theHere is the answer").
#[test]
fn a_retried_stream_shows_its_answer_once() {
    let mut app = app();
    start_turn(&mut app, "hi");
    let retry = |attempt| RuntimeEvent::Retrying {
        attempt,
        max_attempts: 5,
        reason: "the stream was cut".into(),
        delay: Duration::from_millis(300),
    };
    for attempt in 2..4 {
        let delta = "weighing it".to_owned();
        runtime(&mut app, RuntimeEvent::Stream(StreamEvent::ReasoningDelta { delta }));
        stream(&mut app, "Here is the");
        runtime(&mut app, retry(attempt));
    }
    stream(&mut app, "Here is the answer.");
    respond(&mut app, "Here is the answer.", &[]);
    let screen = render(&app, 100, 12);
    assert_eq!(screen.matches("Here is the").count(), 1, "{screen}");
    assert!(!screen.contains("weighing it"), "{screen}");
    assert!(screen.contains("› hi"), "the prompt stays: {screen}");
}

/// Issue 13: model text and tool output cannot drive the terminal from a
/// cell, the approval overlay or the tasks panel.
#[test]
fn control_sequences_never_reach_the_screen() {
    let mut app = app();
    start_turn(&mut app, "hi");
    stream(&mut app, "ok\x1b]52;c;cm0=\x07\x1b[2J done");
    let evil = call("c1", "shell", serde_json::json!({"command": "echo \x1b]0;title\x07hi"}));
    runtime(
        &mut app,
        RuntimeEvent::ToolCallStarted { call: evil.clone(), class: ToolClass::Mutating },
    );
    finish_tool(
        &mut app,
        &evil,
        "exit code: 0\n--- stdout ---\n\x1b[31mred\x1b[0m\rgone\n",
        false,
        Some(0),
    );
    app.tasks = vec![TaskItem { title: "task \x1b[2J".into(), state: TaskState::Active }];
    app.show_tasks = true;
    let backend = draw(&app, 60, 24);
    let buffer = backend.buffer();
    let text: String = buffer.content().iter().map(|cell| cell.symbol()).collect();
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(text.contains("ok done") && text.contains("red") && text.contains("gone"), "{text:?}");
}
