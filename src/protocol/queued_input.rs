//! Input the user typed while a turn was running: the text, when it is to
//! reach the model ([`Delivery`]) and the id its log lines share.
//!
//! Invariants: an id is given once per session (the loop counts them, a
//! rebuild counts them again from the `input_queued` lines); an input is
//! delivered exactly once, by the `user_message` line that names its id
//! (`queued`), so a log says of every queued input whether it reached the
//! model, and a resume delivers only the ones no such line names.

use serde::{Deserialize, Serialize};

/// When a queued input reaches the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// As the prompt of the next turn, once the running one ended.
    Queue,
    /// Into the running turn, as a user message after the current tool
    /// batch (before the next model request); the next turn's prompt if
    /// the turn ends first.
    Steer,
}

impl Delivery {
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Queue => "queue",
            Delivery::Steer => "steer",
        }
    }
}

/// One input waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedInput {
    pub id: u64,
    pub text: String,
    pub mode: Delivery,
    /// Attached to it; delivered with it.
    pub images: Vec<super::image::ImagePart>,
}
