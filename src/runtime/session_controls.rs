//! What a front end reads of a running [`Session`] and changes on it
//! between turns: its identity, spend and window, the approval mode and the
//! model, attached images, an answer schema, background processes.
//!
//! Every change goes through `step` ([`Session::apply_outside_loop`]), which
//! records it, so a resumed session comes back with the same mode and model;
//! nothing here starts a turn.

use std::path::Path;

use crate::agent::{Effect, Input, SpendStatus, step};
use crate::policy::ApprovalMode;
use crate::protocol::Usage;

use super::{RuntimeError, RuntimeEvent, Session};

impl Session {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn log_path(&self) -> &Path {
        self.log.path()
    }

    /// What the session spent, its subagents included.
    pub fn session_usage(&self) -> Usage {
        let mut usage = self.state.session_usage();
        usage.add(&self.state.delegated().usage);
        usage
    }

    /// The model the next request goes to (a resumed log may have
    /// switched it: `model_changed`).
    pub fn model(&self) -> &str {
        &self.state.config().model
    }

    /// The approval mode the next turn runs in.
    pub fn approval_mode(&self) -> ApprovalMode {
        self.state.config().policy.mode
    }

    /// Input tokens of the latest model request (0 before the first).
    pub fn last_input_tokens(&self) -> u64 {
        self.model.last_input_tokens()
    }

    /// What the session cost so far, its subagents included, each
    /// response at the prices of the model that served it, if every one
    /// of those models' prices is known (keel's table, or `[context]`
    /// prices in the config). What the servers reported: estimates for
    /// responses without usage count in [`Self::spend_status`] only.
    pub fn cost_usd(&self) -> Option<f64> {
        self.state.session_cost_usd().map(|own| own + self.state.delegated().cost_usd)
    }

    /// The session's spend (every process's, from the log) against its
    /// spend limits.
    pub fn spend_status(&self) -> SpendStatus {
        SpendStatus::new(self.state.config().limits.spend, self.state.spent())
    }

    /// How full the context was at the latest request, in percent.
    pub fn context_percent(&self) -> Option<f64> {
        self.state.config().pricing.context_percent(self.model.last_input_tokens())
    }

    /// Stops background process `id` for the user (`/ps`); says how it
    /// ended.
    pub async fn stop_background(
        &mut self,
        id: u32,
    ) -> Result<String, crate::tools::processes::ProcessError> {
        let processes = self.tools.processes();
        let process = processes.get(id)?;
        processes.remove(id);
        Ok(match process.stop().await {
            Some(exit) => format!("background process {id} stopped: it {exit}"),
            None => format!("background process {id} did not end within the kill ladder"),
        })
    }

    /// Asks every turn's model request for a final answer of this JSON
    /// Schema where the protocol can (`keel exec --output-schema`; the
    /// answer is checked by `exec`, whatever the server promised).
    pub fn set_answer_schema(&mut self, schema: Option<serde_json::Value>) {
        self.model.set_answer_schema(schema);
    }

    /// The file tools of this session read and write text files through
    /// `client` (an ACP editor's buffers) from now on; every call is
    /// still judged, and its path checked, by keel first
    /// (`tools::file_access`).
    pub fn use_client_files(&mut self, client: crate::tools::file_access::ClientFiles) {
        self.tools.set_client_files(client);
    }

    /// Changes the approval mode for the turns that follow (the TUI's
    /// Shift+Tab, a mode flag on resume) through `step`, which records a
    /// change (`mode_changed`) so a resume restores it; a failed write is
    /// reported, and the poisoned log stops the next turn.
    pub fn set_approval_mode(&mut self, mode: ApprovalMode) {
        if let Err(error) = self.apply_outside_loop(Input::SetMode { mode }) {
            let message = format!("cannot record the mode change: {error}");
            self.sink.emit(RuntimeEvent::Error { message });
        }
    }

    /// Feeds what reached the session outside the loop's own effects (a
    /// mode or a plan review between turns, a subagent opened or done
    /// within a batch, MCP tools offered, what was read for the next
    /// request) to `step` and records what it leads to (only records: such
    /// inputs start nothing); whether anything was recorded. Front ends
    /// hear of each record even when the log could not take it.
    pub(super) fn apply_outside_loop(&mut self, input: Input) -> Result<bool, RuntimeError> {
        let effects = step(&mut self.state, input);
        let changed = !effects.is_empty();
        let mut failure = None;
        for effect in effects {
            if let Effect::Record(event) = effect {
                if failure.is_none()
                    && let Err(error) = self.log.append(event.clone())
                {
                    failure = Some(error);
                }
                self.announce(event);
            }
        }
        failure.map_or(Ok(changed), |error| Err(error.into()))
    }

    /// Switches the model for the requests that follow (`/model NAME`);
    /// the running turn keeps its model. Through `step`, which records it
    /// (`model_changed`) so a resume asks the same model; the window and
    /// prices follow the new name (`LoopConfig::pricing_for`: the
    /// configured model's `[context]` prices when switching back to it).
    /// A model without prices is refused while a cost limit is set.
    pub fn set_model(&mut self, model: String) -> Result<(), RuntimeError> {
        self.switch_model(model, false)
    }

    /// [`Session::set_model`]; `for_turn`: only until the turn about to
    /// start ends (a custom command's `model:`).
    pub(super) fn switch_model(
        &mut self,
        model: String,
        for_turn: bool,
    ) -> Result<(), RuntimeError> {
        if crate::agent::unpriced_switch(&self.state, &model) {
            return Err(RuntimeError::UnpricedModelSwitch { model });
        }
        self.apply_outside_loop(Input::SetModel { model, for_turn })?;
        Ok(())
    }

    /// Attaches `images` to the next prompt [`Session::run_turn`] sends;
    /// refused when the model in use does not take images.
    pub fn attach_images(
        &mut self,
        images: Vec<crate::protocol::ImagePart>,
    ) -> Result<(), super::images::ImagesRefused> {
        if !images.is_empty() && !self.takes_images() {
            return Err(super::images::ImagesRefused { model: self.model().to_owned() });
        }
        self.images.attach(images);
        Ok(())
    }

    /// Whether the model in use takes images (`[provider] images`, else
    /// the known models).
    pub fn takes_images(&self) -> bool {
        self.model.connection().config().profile.takes_images(self.model())
    }
}
