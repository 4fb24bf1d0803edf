//! Input the user typed while a turn ran ([`QueuedInput`]): where `step`
//! lets it land.
//!
//! - [`Input::QueueInput`](super::Input::QueueInput), in any phase, records
//!   `input_queued` with the next id; nothing else changes, the running
//!   turn goes on.
//! - A `steer` input lands in the running turn: when the pending batches of
//!   a response are done and before the next request ([`deliver_steers`],
//!   called by `step::advance`), as a `user_message` naming its id, so the
//!   next request carries it after the batch's results.
//! - Anything left when a turn ends (every `queue` input, a `steer` one
//!   typed while the model wrote its last answer) waits for
//!   [`Input::StartQueued`](super::Input::StartQueued), which the driver
//!   feeds for the oldest when the front end runs the queue after a turn
//!   (and after a resume): it becomes the next turn's prompt.
//!
//! Invariants: the queue changes only in `LoopState::apply` (`input_queued`
//! adds, a `user_message` naming an id removes), so a rebuilt state holds
//! exactly the inputs no `user_message` delivered; ids grow by one from the
//! largest logged, so a resume never reuses one; each input is delivered
//! once because delivery and removal are the same line.

use crate::protocol::{Delivery, ImagePart, QueuedInput, SessionEvent};

use super::apply::emit;
use super::state::LoopState;
use super::step_io::Effect;

/// Records `text` (and its images) as waiting for delivery.
pub(super) fn queue(
    state: &mut LoopState,
    text: String,
    mode: Delivery,
    images: Vec<ImagePart>,
    effects: &mut Vec<Effect>,
) {
    let id = state.queued_ids + 1;
    emit(state, SessionEvent::InputQueued { id, text, mode, images }, effects);
}

/// Delivers every waiting `steer` input into the running turn, oldest
/// first, before the next request.
pub(super) fn deliver_steers(state: &mut LoopState, effects: &mut Vec<Effect>) {
    let steers: Vec<QueuedInput> =
        state.queued.iter().filter(|input| input.mode == Delivery::Steer).cloned().collect();
    for input in steers {
        let event = SessionEvent::UserMessage {
            text: input.text,
            images: input.images,
            queued: Some(input.id),
        };
        emit(state, event, effects);
    }
}

/// The images of input `id`, if it still waits for delivery.
pub(super) fn images_of(state: &LoopState, id: u64) -> Option<Vec<ImagePart>> {
    state.queued.iter().find(|input| input.id == id).map(|input| input.images.clone())
}
