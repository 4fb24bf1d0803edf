//! The spend limits in the TUI: `$spent/$limit` in the status
//! line, the one-time notice at 80 %, and the question at 100 % (snapshot,
//! and what each answer sends). Helpers are `view_tests`'.

use crossterm::event::KeyCode;

use super::app::{App, ApprovalReply, Command, Msg, update};
use super::transcript::CellKind;
use super::view_tests::{key, render, runtime, start_turn};
use crate::agent::{BudgetHit, LimitKind, SpendLimits};
use crate::policy::ApprovalMode;
use crate::protocol::{Item, ModelResponse, StopReason, Usage};
use crate::runtime::{RuntimeEvent, SandboxState};

/// A gpt-4o session limited to $0.20 (and 200 000 tokens when `tokens`).
fn limited_app(tokens: bool) -> App {
    let mut app = App::new(super::theme::Theme::new(true), ApprovalMode::Ask);
    let limits = SpendLimits { max_cost_usd: Some(0.2), max_tokens: tokens.then_some(200_000) };
    runtime(
        &mut app,
        RuntimeEvent::SessionStarted {
            session_id: "s-1".into(),
            log_path: "/tmp/s-1.jsonl".into(),
            provider: "openai".into(),
            model: "gpt-4o".into(),
            workspace_root: "/repo".into(),
            sandbox: SandboxState::On,
            pricing: crate::context::Pricing::for_model("gpt-4o"),
            mode: ApprovalMode::Ask,
            limits,
        },
    );
    start_turn(&mut app, "rename it");
    app
}

/// A response of 32 000 tokens in, 1 000 out: $0.09 on gpt-4o.
fn respond(app: &mut App) {
    let usage = Usage { input_tokens: 32_000, output_tokens: 1_000, ..Usage::default() };
    let items = vec![Item::Assistant { text: "On it.".into() }];
    let response =
        ModelResponse { items, usage, stop_reason: StopReason::ToolUse, response_id: None };
    runtime(app, RuntimeEvent::ModelResponse(response));
}

fn warnings(app: &App) -> Vec<String> {
    app.transcript
        .cells()
        .iter()
        .filter_map(|cell| match cell.kind() {
            CellKind::Notice { text, .. } if text.contains("limit spent") => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_status_line_shows_spend_against_the_limit_and_warns_once_at_80_percent() {
    let mut app = limited_app(true);
    respond(&mut app);
    let screen = render(&app, 120, 3);
    assert!(screen.contains("$0.09/$0.20") && screen.contains("tok 33.0k/200.0k"), "{screen}");
    assert!(warnings(&app).is_empty(), "45 % is no warning");
    respond(&mut app);
    let shown = warnings(&app);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("90% of this session's limit spent ($0.18 of $0.20"),
        "{}",
        shown[0]
    );
    respond(&mut app);
    assert_eq!(warnings(&app).len(), 1, "once");
    insta::assert_snapshot!("status_line_spend_limit", render(&app, 120, 3));
}

fn hit() -> BudgetHit {
    BudgetHit {
        limit: LimitKind::Cost,
        limits: SpendLimits { max_cost_usd: Some(0.2), max_tokens: None },
        spent_usd: Some(0.18),
        spent_tokens: 66_000,
        next_usd: Some(0.09),
        next_tokens: 33_000,
    }
}

#[test]
fn at_the_limit_the_user_is_asked_and_yes_raises_it() {
    let mut app = limited_app(false);
    update(&mut app, Msg::LimitReached(hit()));
    let screen = render(&app, 80, 14);
    for part in
        ["Spend limit reached", "$0.18 of $0.20 spent", "about $0.09", "raise the limit to $0.40"]
    {
        assert!(screen.contains(part), "{part} missing:\n{screen}");
    }
    insta::assert_snapshot!("spend_limit_question", screen);
    assert!(update(&mut app, key(KeyCode::Char('x'))).is_empty(), "other keys wait");
    let commands = update(&mut app, key(KeyCode::Char('y')));
    assert_eq!(commands, [Command::Answer(ApprovalReply::Once)]);
    assert_eq!(app.limit, None);
    assert_eq!(app.status.limits.max_cost_usd, Some(0.4), "the status shows the raised limit");
}

#[test]
fn no_or_esc_ends_the_turn_at_the_limit() {
    for code in [KeyCode::Char('n'), KeyCode::Esc] {
        let mut app = limited_app(false);
        update(&mut app, Msg::LimitReached(hit()));
        let commands = update(&mut app, key(code));
        assert_eq!(commands, [Command::Answer(ApprovalReply::Deny(None))], "{code:?}");
        assert_eq!(app.status.limits.max_cost_usd, Some(0.2));
    }
}
