//! Rewind's property tests, on the random sessions of the rebuild's
//! (`rebuild_properties.rs`): for any recorded session and any prompt N,
//! the conversation a rewind to N takes is the one the live session had
//! just before N; recorded, the rebuild of the log gives it back and the
//! session goes on from there; undoing the rewind gives back the
//! conversation and prompts before it; a fork at N rebuilds as the parent
//! did at N.

use proptest::prelude::*;

use super::super::rebuild_properties::{drive, priced, rebuild_priced, run_noting, sessions};
use super::super::rebuild_tests::record;
use super::*;
use crate::agent::{Input, LoopState, Rewind, step};
use crate::protocol::{EventRecord, Item, RewindScope};

/// Rewinds `state` (idle, its log `log`) to just before `to_seq`, as the
/// runtime does: the conversation from the log, the line from `step`.
fn rewind(
    state: &mut LoopState,
    log: &mut Vec<EventRecord>,
    to_prompt: u32,
    to_seq: u64,
    undoes: Option<u64>,
) {
    let items = conversation_before(priced(), log.clone(), to_seq);
    let rewind = Rewind {
        to_prompt,
        to_seq,
        scope: RewindScope::Both,
        items: Some(items),
        checkpoint_before: None,
        restored: None,
        kept: Vec::new(),
        undoes,
    };
    record(&step(state, Input::Rewind(rewind)), log);
}

fn texts(prompts: &[Prompt]) -> Vec<String> {
    prompts.iter().map(|prompt| prompt.text.clone()).collect()
}

proptest! {
    #[test]
    fn rewinding_to_any_prompt_rebuilds_the_conversation_the_live_session_had_there(
        turns in sessions(),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut before = Vec::new();
        let (mut live, mut log) = run_noting(&turns, None, &[], &mut before);
        let line = PromptLine::of(&log);
        let all = line.prompts();
        prop_assert_eq!(all.len(), turns.len());
        let n = pick.index(all.len()) + 1;
        let target = line.target(n as u32).unwrap();
        let at_n: &Vec<Item> = &before[n - 1];

        // The conversation the rewind takes is the live one at N.
        prop_assert_eq!(&conversation_before(priced(), log.clone(), target.seq), at_n);
        let state_before_rewind = live.items.clone();
        rewind(&mut live, &mut log, n as u32, target.seq, None);
        prop_assert_eq!(&live.items, at_n);
        // Recorded, the log rebuilds it (nothing in it was rewritten), and
        // the prompt line holds the prompts before N.
        let rebuilt = rebuild_priced(&log);
        prop_assert_eq!(&rebuilt.state.items, at_n);
        prop_assert!(rebuilt.open_turn.is_none());
        prop_assert_eq!(rebuilt.state.turn, live.turn);
        prop_assert_eq!(rebuilt.state.session_usage, live.session_usage);
        let after = PromptLine::of(&log);
        prop_assert_eq!(texts(&after.prompts()), texts(&all[..n - 1]));

        // Undoing the rewind gives back the conversation and the prompts.
        let mark = after.last_rewind().unwrap().clone();
        rewind(&mut live, &mut log, all.len() as u32 + 1, mark.seq, Some(mark.seq));
        prop_assert_eq!(&live.items, &state_before_rewind);
        prop_assert_eq!(&rebuild_priced(&log).state.items, &state_before_rewind);
        let undone = PromptLine::of(&log);
        prop_assert_eq!(texts(&undone.prompts()), texts(&all));
        // Undoing the undo is the rewind again.
        let again = undone.last_rewind().unwrap().clone();
        rewind(&mut live, &mut log, n as u32, again.seq, Some(again.seq));
        prop_assert_eq!(&rebuild_priced(&log).state.items, at_n);
    }

    #[test]
    fn a_session_goes_on_after_a_rewind_as_rebuilt(
        turns in sessions(),
        pick in any::<prop::sample::Index>(),
    ) {
        let mut before = Vec::new();
        let (mut live, mut log) = run_noting(&turns, None, &[], &mut before);
        let line = PromptLine::of(&log);
        let n = pick.index(line.prompts().len()) + 1;
        let target = line.target(n as u32).unwrap();
        rewind(&mut live, &mut log, n as u32, target.seq, None);
        // The prompt edited and sent again: a new branch at N.
        let effects = step(&mut live, Input::UserTurn { text: "edited".into(), images: Vec::new() });
        drive(&mut live, effects, &mut log);
        if !live.phase.is_idle() {
            let done = vec![Item::Assistant { text: "done".into() }];
            let effects = step(&mut live, super::super::rebuild_tests::response_with(
                done,
                crate::protocol::Usage::default(),
            ));
            drive(&mut live, effects, &mut log);
        }
        let rebuilt = rebuild_priced(&log);
        prop_assert_eq!(&rebuilt.state.items, &live.items);
        prop_assert_eq!(rebuilt.state.turn, live.turn);
        let prompts = PromptLine::of(&log).prompts();
        prop_assert_eq!(prompts.len(), n);
        prop_assert_eq!(prompts.last().map(|p| p.text.as_str()), Some("edited"));

        // A fork of that log at any of its prompts rebuilds as the live
        // session was there; its line names the parent.
        let cut = pick.index(prompts.len()) + 1;
        let point = ForkPoint {
            session_id: "fork".into(),
            parent_session: "parent".into(),
            parent_log: "parent.jsonl".into(),
            prompt: Some(cut as u32),
            parent_seq: prompts[cut - 1].seq,
        };
        let forked: Vec<EventRecord> = fork_lines(&log, &point)
            .into_iter()
            .enumerate()
            .map(|(seq, event)| EventRecord { v: 1, seq: seq as u64, ts: String::new(), event })
            .collect();
        let parent_at_cut = conversation_before(priced(), log.clone(), prompts[cut - 1].seq);
        prop_assert_eq!(&rebuild_priced(&forked).state.items, &parent_at_cut);
        prop_assert_eq!(
            texts(&PromptLine::of(&forked).prompts()),
            texts(&prompts[..cut - 1])
        );
        let names_parent = matches!(
            &forked[1].event,
            SessionEvent::Forked { parent_session, .. } if parent_session == "parent"
        );
        prop_assert!(names_parent);
    }
}

#[test]
fn a_prompt_past_the_end_is_refused() {
    let line = PromptLine::default();
    assert_eq!(line.target(1), Err(RewindError::NoSuchPrompt { asked: 1, available: 0 }));
    assert_eq!(line.target(0), Err(RewindError::NoSuchPrompt { asked: 0, available: 0 }));
    assert_eq!(line.last_rewind(), Err(RewindError::NothingToUndo));
}
