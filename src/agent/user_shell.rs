//! `!cmd`: a command the user ran themselves (the TUI's `!` prefix,
//! judged and run by the runtime, `runtime/user_shell.rs`) reaches the
//! model as a user message at once, before the next prompt.
//!
//! Invariants: pure; only while idle (a turn never gets a user message
//! in the middle of its calls this way); recorded as a `user_message`
//! outside any turn, which the rebuild applies like any other (so a
//! resume has it) and which no rewind lists as a prompt (it opens no
//! turn).

use crate::protocol::SessionEvent;

use super::apply::emit;
use super::state::LoopState;
use super::step_io::Effect;

/// Appends the text about the command the user ran to the history.
pub(super) fn user_ran(state: &mut LoopState, text: String, effects: &mut Vec<Effect>) {
    if text.trim().is_empty() {
        return;
    }
    let event = SessionEvent::UserMessage { text, images: Vec::new(), queued: None };
    emit(state, event, effects);
}

#[cfg(test)]
mod tests {
    use crate::agent::rebuild_tests::{config, rebuild, record};
    use crate::agent::{Effect, Input, LoopState, Opening, step};
    use crate::policy::ApprovalMode;
    use crate::protocol::{Item, SessionEvent};

    #[test]
    fn the_output_is_a_user_message_recorded_while_idle_and_rebuilt() {
        let mut state = LoopState::open(config(ApprovalMode::Auto), Opening::default());
        let mut log = Vec::new();
        let text = "I ran `ls` myself:\na.txt".to_owned();
        let effects = step(&mut state, Input::UserShell { text: text.clone() });
        assert!(matches!(
            effects.as_slice(),
            [Effect::Record(SessionEvent::UserMessage { queued: None, .. })]
        ));
        record(&effects, &mut log);
        assert!(matches!(state.items().last(), Some(Item::User { text: t, .. }) if *t == text));
        let rebuilt = rebuild(&log);
        assert_eq!(rebuilt.state.items(), state.items());
        assert_eq!(rebuilt.open_turn, None);
        assert_eq!(state.turn, 0, "no turn was started");
    }

    #[test]
    fn nothing_during_a_turn() {
        let mut state = LoopState::open(config(ApprovalMode::Auto), Opening::default());
        step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
        let before = state.items().len();
        assert_eq!(step(&mut state, Input::UserShell { text: "x".into() }), []);
        assert_eq!(state.items().len(), before);
    }
}
