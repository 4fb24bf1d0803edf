//! Input typed during a turn, through [`step`] with no I/O: where a steer
//! and a queued input land, that each is delivered once, and that a
//! rebuild from any prefix of the log holds exactly what was not
//! delivered.

use super::rebuild_tests::{config, record};
use super::test_support::call;
use super::test_support::step_checked as step;
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{
    Delivery, EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolMeta, ToolResult,
    Usage,
};

fn respond(items: Vec<Item>) -> Input {
    let stop_reason = if items.iter().any(|i| matches!(i, Item::ToolCall(_))) {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    let usage = Usage { input_tokens: 5, output_tokens: 1, ..Usage::default() };
    Input::ModelResponded(ModelResponse { items, usage, stop_reason, response_id: None })
}

fn typed(text: &str, mode: Delivery) -> Input {
    Input::QueueInput { text: text.into(), mode, images: Vec::new() }
}

fn delivered(effects: &[Effect]) -> Vec<(String, Option<u64>)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::UserMessage { text, queued, .. }) => {
                Some((text.clone(), *queued))
            }
            _ => None,
        })
        .collect()
}

/// A turn running a (long) read: `go` → a `read_file` call, running.
fn running_turn(log: &mut Vec<EventRecord>) -> LoopState {
    let mut state = LoopState::open(config(ApprovalMode::Auto), Opening::default());
    record(&step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() }), log);
    let effects = step(&mut state, respond(vec![Item::ToolCall(call("a", "read_file"))]));
    assert!(matches!(effects.last(), Some(Effect::RunBatch { .. })), "{effects:?}");
    record(&effects, log);
    state
}

#[test]
fn a_steer_lands_after_the_batch_and_the_next_request_carries_it() {
    let mut log = Vec::new();
    let mut state = running_turn(&mut log);
    let effects = step(&mut state, typed("use the second file", Delivery::Steer));
    record(&effects, &mut log);
    assert_eq!(
        effects,
        [Effect::Record(SessionEvent::InputQueued {
            id: 1,
            text: "use the second file".into(),
            mode: Delivery::Steer,
            images: Vec::new(),
        })],
        "recorded when typed, nothing else happens"
    );
    let results = vec![(ToolResult::ok("a", "text"), ToolMeta::new())];
    let effects = step(&mut state, Input::BatchFinished { results });
    record(&effects, &mut log);
    assert_eq!(delivered(&effects), [("use the second file".to_owned(), Some(1))]);
    let Some(Effect::CallModel(request)) = effects.last() else { panic!("{effects:?}") };
    let tail: Vec<&Item> = request.items.iter().rev().take(2).collect();
    assert!(
        matches!(tail[..], [Item::User { text, .. }, Item::ToolResult(_)] if text == "use the second file"),
        "the result, then the steer: {tail:?}"
    );
    assert!(state.queued().is_empty());
    // The turn ends; nothing is delivered a second time.
    let effects = step(&mut state, respond(vec![Item::Assistant { text: "done".into() }]));
    assert!(delivered(&effects).is_empty());
    assert_eq!(step(&mut state, Input::StartQueued { id: 1, text: "again".into() }), []);
}

#[test]
fn a_queued_input_waits_for_the_turn_to_end_then_starts_the_next_once() {
    let mut log = Vec::new();
    let mut state = running_turn(&mut log);
    record(&step(&mut state, typed("then write the tests", Delivery::Queue)), &mut log);
    record(&step(&mut state, typed("and the docs", Delivery::Queue)), &mut log);
    let results = vec![(ToolResult::ok("a", "text"), ToolMeta::new())];
    let effects = step(&mut state, Input::BatchFinished { results });
    assert!(delivered(&effects).is_empty(), "a queued input is not a steer");
    record(&effects, &mut log);
    record(&step(&mut state, respond(vec![Item::Assistant { text: "read".into() }])), &mut log);
    assert_eq!(state.queued().len(), 2);
    let effects =
        step(&mut state, Input::StartQueued { id: 1, text: "then write the tests".into() });
    assert_eq!(delivered(&effects), [("then write the tests".to_owned(), Some(1))]);
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
    assert_eq!(state.queued().iter().map(|q| q.id).collect::<Vec<_>>(), [2]);
    // Not while a turn runs.
    assert_eq!(step(&mut state, Input::StartQueued { id: 2, text: "x".into() }), []);
}

#[test]
fn a_rebuild_holds_exactly_the_undelivered_inputs_and_goes_on_counting() {
    let mut log = Vec::new();
    let mut state = running_turn(&mut log);
    record(&step(&mut state, typed("steer me", Delivery::Steer)), &mut log);
    record(&step(&mut state, typed("next task", Delivery::Queue)), &mut log);
    let results = vec![(ToolResult::ok("a", "text"), ToolMeta::new())];
    record(&step(&mut state, Input::BatchFinished { results }), &mut log);
    for cut in 0..=log.len() {
        let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
        for record in &log[..cut] {
            rebuilder.apply(record.clone());
        }
        let rebuilt = rebuilder.finish().state;
        let queued = log[..cut]
            .iter()
            .filter(|r| matches!(r.event, SessionEvent::InputQueued { .. }))
            .count();
        let delivered = log[..cut]
            .iter()
            .filter(|r| matches!(r.event, SessionEvent::UserMessage { queued: Some(_), .. }))
            .count();
        assert_eq!(rebuilt.queued().len(), queued - delivered, "cut {cut}");
    }
    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
    for record in &log {
        rebuilder.apply(record.clone());
    }
    let mut rebuilt = rebuilder.finish().state;
    assert_eq!(rebuilt.queued(), state.queued());
    assert_eq!(rebuilt.queued()[0].text, "next task");
    let effects = step(&mut rebuilt, typed("after the crash", Delivery::Queue));
    assert!(
        matches!(&effects[..], [Effect::Record(SessionEvent::InputQueued { id: 3, .. })]),
        "ids go on from the log: {effects:?}"
    );
}

/// `ask_user`: the loop waits for the answer; it becomes the call's
/// result; no answer tells the model to decide or stop; an interrupt
/// answers the open call.
#[test]
fn an_ask_user_call_waits_for_the_answer_and_records_it_as_the_result() {
    let ask = |id: &str| {
        let args =
            serde_json::json!({"question": "Which database?", "choices": ["SQLite", "Postgres"]});
        Item::ToolCall(super::test_support::call_with(id, "ask_user", &args.to_string()))
    };
    let result_of = |effects: &[Effect]| {
        effects.iter().find_map(|effect| match effect {
            Effect::Record(SessionEvent::ToolCallFinished { result, .. }) => Some(result.clone()),
            _ => None,
        })
    };
    let mut state = LoopState::open(config(ApprovalMode::Ask), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let effects = step(&mut state, respond(vec![ask("q1")]));
    let Some(Effect::AskUser { call_id, question, choices }) = effects.last() else {
        panic!("{effects:?}")
    };
    assert_eq!((call_id.as_str(), question.as_str()), ("q1", "Which database?"));
    assert_eq!(choices, &["SQLite", "Postgres"]);
    assert_eq!(state.phase, LoopPhase::AwaitAnswer);
    let stale = Input::UserAnswered { call_id: "other".into(), answer: Some("x".into()) };
    assert_eq!(step(&mut state, stale), []);
    let effects = step(
        &mut state,
        Input::UserAnswered { call_id: "q1".into(), answer: Some("SQLite".into()) },
    );
    let result = result_of(&effects).unwrap();
    assert_eq!(result.output, "The user answered: SQLite");
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));

    let effects = step(&mut state, respond(vec![ask("q2")]));
    assert!(matches!(effects.last(), Some(Effect::AskUser { .. })));
    let effects = step(&mut state, Input::UserAnswered { call_id: "q2".into(), answer: None });
    assert_eq!(result_of(&effects).unwrap().output, NO_ANSWER);

    let effects = step(&mut state, respond(vec![ask("q3")]));
    assert!(matches!(effects.last(), Some(Effect::AskUser { .. })));
    let effects = step(&mut state, Input::Interrupted);
    assert!(result_of(&effects).is_some_and(|r| r.call_id == "q3"), "{effects:?}");
    assert_eq!(state.phase, LoopPhase::Idle);
}

fn image(sha256: &str) -> crate::protocol::ImagePart {
    crate::protocol::ImagePart {
        media_type: crate::protocol::ImageMediaType::Png,
        sha256: sha256.into(),
        width: 2,
        height: 2,
        bytes: 10,
        name: format!("{sha256}.png"),
        data: Default::default(),
    }
}

fn delivered_images(effects: &[Effect]) -> Vec<Vec<crate::protocol::ImagePart>> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(SessionEvent::UserMessage { images, .. }) => Some(images.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn images_typed_with_a_steer_or_a_queued_input_go_with_its_message_also_after_a_rebuild() {
    let mut log = Vec::new();
    let mut state = running_turn(&mut log);
    let steer = Input::QueueInput {
        text: "like this one".into(),
        mode: Delivery::Steer,
        images: vec![image("aa")],
    };
    record(&step(&mut state, steer), &mut log);
    let queue = Input::QueueInput {
        text: "then this".into(),
        mode: Delivery::Queue,
        images: vec![image("bb"), image("cc")],
    };
    record(&step(&mut state, queue), &mut log);
    let results = vec![(ToolResult::ok("a", "text"), ToolMeta::new())];
    let effects = step(&mut state, Input::BatchFinished { results });
    assert_eq!(delivered_images(&effects), [vec![image("aa")]], "the steer's image");
    record(&effects, &mut log);
    record(&step(&mut state, respond(vec![Item::Assistant { text: "ok".into() }])), &mut log);

    let mut rebuilder = Rebuilder::new(config(ApprovalMode::Auto));
    for record in &log {
        rebuilder.apply(record.clone());
    }
    let mut rebuilt = rebuilder.finish().state;
    let effects = step(&mut rebuilt, Input::StartQueued { id: 2, text: "then this".into() });
    assert_eq!(delivered_images(&effects), [vec![image("bb"), image("cc")]]);
    let Some(Effect::CallModel(request)) = effects.last() else { panic!("{effects:?}") };
    let Some(Item::User { images, .. }) = request.items.last() else { panic!("{request:?}") };
    assert_eq!(images.len(), 2, "the request carries them");
}
