//! Render timing of the TUI: one frame of a 10 000-line transcript at
//! 200×60 (target under 8 ms). `cargo bench --bench tui_render` prints
//! cold (first frame: the visible cells rendered and wrapped), warm (cached),
//! streaming (one delta into the last cell, then a frame), the same with
//! three queued inputs listed under the transcript, and scrolled
//! (half way up: all heights needed) medians. Under
//! `cargo test --all-targets` it draws each kind once as a smoke test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use keel::policy::ApprovalMode;
use keel::protocol::{
    Item, ModelResponse, StopReason, StreamEvent, ToolCall, ToolClass, ToolResult, Usage,
};
use keel::runtime::RuntimeEvent;
use keel::tui::{App, Msg, Theme, update, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const WIDTH: u16 = 200;
const HEIGHT: u16 = 60;
const TARGET_LINES: usize = 10_000;

fn send(app: &mut App, event: RuntimeEvent) {
    update(app, Msg::Runtime(event));
}

/// About 10 000 rendered lines: markdown answers with code and tool calls.
fn transcript() -> App {
    let mut app = App::new(Theme::new(true), ApprovalMode::Ask);
    let answer = "## Step\n\nSome **prose** with `code` that is long enough to wrap at narrow widths but not at 200 columns.\n\n\
- one\n- two\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n";
    let mut n = 0;
    let mut lines = 0;
    while lines < TARGET_LINES {
        let call = ToolCall {
            call_id: format!("c{n}"),
            name: "shell".into(),
            arguments: serde_json::json!({"command": format!("cargo test -p crate{n}")})
                .to_string(),
            item_id: None,
            provider_data: None,
        };
        let response = ModelResponse {
            items: vec![Item::Assistant { text: answer.into() }],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
            response_id: None,
        };
        send(&mut app, RuntimeEvent::ModelResponse(response));
        send(
            &mut app,
            RuntimeEvent::ToolCallStarted { call: call.clone(), class: ToolClass::Mutating },
        );
        let output = (0..30).map(|i| format!("test t{i} ... ok")).collect::<Vec<_>>().join("\n");
        let result = ToolResult::ok(call.call_id.clone(), output);
        send(
            &mut app,
            RuntimeEvent::ToolCallFinished {
                call,
                result,
                meta: keel::protocol::ToolMeta::command(Some(0), None),
            },
        );
        n += 1;
        lines += 14 + 32; // answer lines + expanded tool cell
    }
    // Expanded output: every tool line counts.
    app.expanded = true;
    app
}

fn frame(terminal: &mut Terminal<TestBackend>, app: &App) -> Duration {
    let started = Instant::now();
    terminal.draw(|f| view(app, f)).unwrap();
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 50 } else { 1 };
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    let mut streaming = Vec::new();
    let mut rows = 0;
    for _ in 0..runs.min(if full { 10 } else { 1 }) {
        let app = transcript();
        let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
        cold.push(frame(&mut terminal, &app));
        rows = app.transcript.height(WIDTH, app.expanded, app.theme);
    }
    let mut app = transcript();
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    frame(&mut terminal, &app);
    for _ in 0..runs {
        warm.push(frame(&mut terminal, &app));
    }
    for i in 0..runs {
        let delta = format!("streamed word {i} ");
        send(&mut app, RuntimeEvent::Stream(StreamEvent::TextDelta { delta }));
        streaming.push(frame(&mut terminal, &app));
    }
    // Input typed during the turn waits in the list under the transcript.
    for id in 1..=3 {
        let text = format!("queued input {id}");
        let mode = keel::protocol::Delivery::Queue;
        send(&mut app, RuntimeEvent::InputQueued { id, text, mode });
    }
    let mut queued = Vec::new();
    for i in 0..runs {
        let delta = format!("streamed word {i} ");
        send(&mut app, RuntimeEvent::Stream(StreamEvent::TextDelta { delta }));
        queued.push(frame(&mut terminal, &app));
    }
    // Scrolled up half way: every cell's height is needed (cached after
    // the first such frame).
    app.scroll = rows / 2;
    let first_scrolled = frame(&mut terminal, &app);
    let mut scrolled = Vec::new();
    for _ in 0..runs {
        scrolled.push(frame(&mut terminal, &app));
    }
    println!(
        "tui_render {WIDTH}x{HEIGHT}, {rows} transcript rows: cold {:?}, warm {:?}, \
         streaming {:?}, streaming with 3 queued inputs {:?}, first scrolled \
         {first_scrolled:?}, scrolled {:?} (medians)",
        median(cold),
        median(warm),
        median(streaming),
        median(queued),
        median(scrolled)
    );
}
