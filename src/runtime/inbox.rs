//! What the user types while a turn runs, on its way into the loop: the
//! [`InputSender`] a front end holds (the TUI's input box, `keel exec
//! --input-stream`'s stdin reader) and the session's [`Inbox`], drained by
//! the driver, which feeds each text to `step` as `Input::QueueInput` and
//! writes the `input_queued` line it returns. `step` decides where it
//! lands (`agent/queued_input.rs`); [`Session::run_queued`] starts the
//! turn of the oldest waiting input.
//!
//! When typed text is written: at every effect boundary of a turn
//! (`driver.rs`) and while a tool batch runs (`execute.rs`, beside the
//! tools' progress), so a message typed during a long command is in the
//! log before the command ends and survives a crash there; while the model
//! streams, and during a batch with `agent` calls, at its end. A steer typed before the last
//! batch of a response finished reaches the next request.
//!
//! Invariants: only the session's task touches the [`Inbox`] and the log
//! (the sender is a channel); a text is recorded once, in the order typed;
//! a closed sender (the UI quit, stdin's EOF) only ends
//! [`Session::next_input`]'s wait.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{Effect, Input, LoopState, step};
use crate::protocol::{Delivery, ImagePart, SessionEvent};
use crate::session::SessionLog;

use super::images::SessionImages;
use super::{EventSink, RuntimeError, RuntimeEvent, Session, TurnSummary};

/// One text typed during a turn, with the images attached to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedInput {
    pub text: String,
    pub mode: Delivery,
    pub images: Vec<ImagePart>,
}

/// The front end's end of a session's inbox.
#[derive(Debug, Clone)]
pub struct InputSender(mpsc::UnboundedSender<TypedInput>);

impl InputSender {
    /// Hands `text` to the session; false when the session is gone.
    pub fn send(&self, text: String, mode: Delivery) -> bool {
        self.send_with_images(text, mode, Vec::new())
    }

    /// Hands `text` and the images attached to it (prepared by
    /// `support::images`) to the session; false when the session is gone.
    /// The session refuses images for a model that takes none; the front
    /// end checks [`Session::takes_images`] first to say so.
    pub fn send_with_images(&self, text: String, mode: Delivery, images: Vec<ImagePart>) -> bool {
        self.0.send(TypedInput { text, mode, images }).is_ok()
    }
}

#[cfg(test)]
impl InputSender {
    /// A sender and the receiver a test reads.
    pub(super) fn pair() -> (Self, mpsc::UnboundedReceiver<TypedInput>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Self(sender), receiver)
    }
}

/// The session's end; closed until a front end asks for a sender.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    receiver: Option<mpsc::UnboundedReceiver<TypedInput>>,
}

impl Inbox {
    /// A new channel; texts sent on an older one are no longer read.
    fn open(&mut self) -> InputSender {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.receiver = Some(receiver);
        InputSender(sender)
    }

    fn try_take(&mut self) -> Option<TypedInput> {
        self.receiver.as_mut()?.try_recv().ok()
    }

    /// Waits for the next text; `None` once every sender is gone.
    pub(super) async fn recv(&mut self) -> Option<TypedInput> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => None,
        }
    }
}

/// The parts recording a typed text needs, borrowed beside a running batch.
pub(super) struct Typed<'a> {
    pub(super) inbox: &'a mut Inbox,
    pub(super) state: &'a mut LoopState,
    pub(super) log: &'a mut SessionLog,
    pub(super) sink: &'a mut Box<dyn EventSink>,
    pub(super) images: &'a mut SessionImages,
    /// Whether the model takes images (those typed for one that does not
    /// are dropped with a warning).
    pub(super) takes_images: bool,
}

impl Typed<'_> {
    /// Records everything typed so far.
    pub(super) fn drain(&mut self) -> Result<(), RuntimeError> {
        while let Some(typed) = self.inbox.try_take() {
            self.record(typed)?;
        }
        Ok(())
    }

    /// Feeds one text to `step` and writes what it returns; its images
    /// are stored before the line that names them.
    pub(super) fn record(&mut self, mut typed: TypedInput) -> Result<(), RuntimeError> {
        if !typed.images.is_empty() && !self.takes_images {
            let dropped = typed.images.len();
            typed.images.clear();
            let message = format!(
                "{dropped} image(s) typed with a queued input were not sent: {}",
                super::images::ImagesRefused { model: self.state.config().model.clone() }
            );
            self.sink.emit(RuntimeEvent::Warning { message });
        }
        let input = Input::QueueInput { text: typed.text, mode: typed.mode, images: typed.images };
        for effect in step(self.state, input) {
            if let Effect::Record(event) = effect {
                if let Err(error) = self.images.keep(&event) {
                    // As `Session::record`: the line is still written; the
                    // request then says the image is gone.
                    self.sink.emit(RuntimeEvent::Warning { message: error.to_string() });
                }
                self.log.append(event.clone())?;
                if let SessionEvent::InputQueued { id, text, mode, .. } = event {
                    self.sink.emit(RuntimeEvent::InputQueued { id, text, mode });
                }
            }
        }
        Ok(())
    }
}

impl Session {
    /// A sender for what the user types during a turn (one front end at a
    /// time: a new sender closes the old one).
    pub fn input_sender(&mut self) -> InputSender {
        self.inbox.open()
    }

    /// Inputs typed during a turn and not yet delivered, oldest first.
    pub fn queued(&self) -> &[crate::protocol::QueuedInput] {
        self.state.queued()
    }

    pub(super) fn typed(&mut self) -> Typed<'_> {
        let takes_images = self.takes_images();
        Typed {
            inbox: &mut self.inbox,
            state: &mut self.state,
            log: &mut self.log,
            sink: &mut self.sink,
            images: &mut self.images,
            takes_images,
        }
    }

    /// Waits until something is typed (and records it); false once the
    /// senders are gone and nothing more can come.
    pub async fn next_input(&mut self) -> Result<bool, RuntimeError> {
        match self.inbox.recv().await {
            Some(typed) => {
                self.typed().record(typed)?;
                self.typed().drain()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Runs the turn of the oldest input still waiting (typed during an
    /// earlier turn, or left by a crash), as a prompt; `None` when none
    /// waits.
    pub async fn run_queued(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<Option<TurnSummary>, RuntimeError> {
        self.typed().drain()?;
        let Some(input) = self.state.queued().first().cloned() else {
            return Ok(None);
        };
        self.run_prompt_as(input.text, None, Some(input.id), cancel).await.map(Some)
    }
}
