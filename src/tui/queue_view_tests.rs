//! Typing during a turn and the `ask_user` dialog: the keys (`update`)
//! and what the user sees (snapshots).

use crossterm::event::KeyCode;

use super::app::{Command, Msg, update};
use super::view_tests::{app, key, render, runtime, type_text};
use crate::protocol::{Delivery, TurnOutcome, Usage};
use crate::runtime::RuntimeEvent;

fn running() -> super::app::App {
    let mut app = app();
    runtime(&mut app, RuntimeEvent::TurnStarted { turn: 1 });
    app
}

fn turn_completed(app: &mut super::app::App, outcome: TurnOutcome) {
    let event = RuntimeEvent::TurnCompleted {
        turn: 1,
        outcome,
        final_text: None,
        usage: Usage::default(),
        unverified: None,
    };
    runtime(app, event);
}

#[test]
fn enter_queues_and_tab_steers_while_a_turn_runs() {
    let mut app = running();
    type_text(&mut app, "then the docs");
    let commands = update(&mut app, key(KeyCode::Enter));
    assert_eq!(
        commands,
        [Command::TypeDuringTurn {
            text: "then the docs".into(),
            mode: Delivery::Queue,
            images: Vec::new()
        }]
    );
    assert!(app.editor.is_empty(), "the text left the input");
    type_text(&mut app, "use tabs");
    let commands = update(&mut app, key(KeyCode::Tab));
    assert_eq!(
        commands,
        [Command::TypeDuringTurn {
            text: "use tabs".into(),
            mode: Delivery::Steer,
            images: Vec::new()
        }]
    );
    assert_eq!(app.pending.len(), 2);
    insta::assert_snapshot!("pending_list_while_a_turn_runs", render(&app, 60, 14));
    // Recorded, then delivered: shown where it landed, gone from the list.
    let queued =
        RuntimeEvent::InputQueued { id: 1, text: "use tabs".into(), mode: Delivery::Steer };
    runtime(&mut app, queued);
    assert_eq!(app.pending[1].id, Some(1));
    runtime(&mut app, RuntimeEvent::InputDelivered { id: 1, text: "use tabs".into() });
    assert_eq!(app.pending.len(), 1);
    assert!(render(&app, 60, 14).contains("use tabs"));
}

#[test]
fn a_turn_that_ends_with_recorded_inputs_waiting_keeps_the_ui_busy_until_they_ran() {
    let mut app = running();
    type_text(&mut app, "next");
    update(&mut app, key(KeyCode::Enter));
    runtime(
        &mut app,
        RuntimeEvent::InputQueued { id: 1, text: "next".into(), mode: Delivery::Queue },
    );
    turn_completed(&mut app, TurnOutcome::Completed);
    assert!(app.status.running, "the session starts the queued turn next");
    type_text(&mut app, "more");
    let commands = update(&mut app, key(KeyCode::Enter));
    assert!(matches!(commands[..], [Command::TypeDuringTurn { .. }]), "{commands:?}");
    // After an interrupt they wait: the UI is idle again.
    turn_completed(&mut app, TurnOutcome::Interrupted);
    assert!(!app.status.running);
}

#[test]
fn the_ask_user_dialog_picks_a_choice_by_number_arrow_or_own_words() {
    let mut app = running();
    let choices = vec!["SQLite".to_owned(), "Postgres".to_owned()];
    let asked = Msg::QuestionAsked { question: "Which database?".into(), choices };
    update(&mut app, asked.clone());
    insta::assert_snapshot!("ask_user_dialog", render(&app, 60, 16));
    assert_eq!(
        update(&mut app, key(KeyCode::Char('2'))),
        [Command::AnswerQuestion(Some("Postgres".into()))]
    );
    assert!(app.question.is_none());
    update(&mut app, asked.clone());
    update(&mut app, key(KeyCode::Down));
    update(&mut app, key(KeyCode::Up));
    assert_eq!(
        update(&mut app, key(KeyCode::Enter)),
        [Command::AnswerQuestion(Some("SQLite".into()))]
    );
    update(&mut app, asked.clone());
    type_text(&mut app, "neither, use files");
    assert_eq!(
        update(&mut app, key(KeyCode::Enter)),
        [Command::AnswerQuestion(Some("neither, use files".into()))]
    );
    update(&mut app, asked);
    assert_eq!(update(&mut app, key(KeyCode::Esc)), [Command::AnswerQuestion(None)]);
}
