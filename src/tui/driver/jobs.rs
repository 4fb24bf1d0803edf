//! The driver's jobs that leave the UI task or the terminal: the plan handed to the user's
//! editor, `@path` mentions attached, `#` memory notes saved, the workspace listed for `@`
//! completion, `/context` and `/diff` computed off the UI task, the clipboard's image read.
//!
//! Invariant: nothing here blocks the UI task; what takes time runs on a blocking thread or a
//! task and comes back as a [`UiEvent`].

use std::path::PathBuf;

use crate::tui::TuiError;
use crate::tui::app::{Msg, update};
use crate::tui::bridge::UiEvent;
use crate::tui::terminal::TerminalGuard;
use crate::tui::transcript::Level;

use super::Driver;

impl Driver {
    /// Opens the plan in `$VISUAL`/`$EDITOR` (else `vi`) with the terminal
    /// handed over, then shows the edited text for approval.
    pub(super) async fn edit_plan(
        &mut self,
        guard: &mut TerminalGuard,
        path: Option<String>,
        text: String,
    ) -> Result<(), TuiError> {
        let file = match &path {
            Some(path) => PathBuf::from(path),
            // Under keel's home, not a shared temp folder (no symlink games).
            None => {
                let name = format!("unsaved-plan-{}.md", std::process::id());
                self.options.launch.env.keel_home.join("plans").join(name)
            }
        };
        if path.is_none() || !file.is_file() {
            let written = file.parent().map_or(Ok(()), std::fs::create_dir_all);
            if let Err(error) = written.and_then(|()| std::fs::write(&file, &text)) {
                let message = format!("cannot write the plan to {}: {error}", file.display());
                update(&mut self.app, Msg::Notice(Level::Error, message));
                return Ok(());
            }
        }
        guard.suspend();
        let status = crate::tui::editor::edit(&file, &self.env_filter).await;
        guard.resume()?;
        let msg = match status.and_then(|()| crate::tui::editor::read(&file)) {
            Ok(edited) if edited == text => {
                Msg::Notice(Level::Info, "the plan is unchanged".into())
            }
            Ok(edited) => Msg::PlanEdited(edited),
            Err(message) => Msg::Notice(Level::Warning, message),
        };
        update(&mut self.app, msg);
        Ok(())
    }

    /// `@path` mentions: the files attached to the prompt (an image as
    /// an image part; the session refuses it for a model that takes none),
    /// each said in a notice (`runtime/mentions.rs`).
    pub(super) fn attach_mentions(
        &mut self,
        text: String,
    ) -> (String, Vec<crate::protocol::ImagePart>) {
        let Some(root) = self.root.clone() else { return (text, Vec::new()) };
        if crate::runtime::mentions::mentions(&text).is_empty() {
            return (text, Vec::new());
        }
        let home =
            self.options.launch.env.var("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from);
        let attached = crate::runtime::mentions::attach(
            &text,
            &root,
            &self.options.cwd,
            &self.secret_places,
            &home,
        );
        for note in attached.notes {
            self.app.notice(Level::Info, note);
        }
        (attached.prompt, attached.images)
    }

    /// `#text`: writes the note and says where.
    pub(super) fn save_memory(&mut self, scope: crate::tui::memory_note::MemoryScope, text: &str) {
        let Some(root) = self.root.clone() else {
            self.app.notice(Level::Warning, "no session is open yet; the note was not saved");
            return;
        };
        let home = self.options.launch.env.keel_home.clone();
        match crate::tui::memory_note::save(&root, &home, scope, text) {
            Ok(path) => self.app.notice(
                Level::Info,
                format!(
                    "saved the memory note {} (listed to the model from the next session on)",
                    path.display()
                ),
            ),
            Err(message) => self.app.notice(Level::Error, message),
        }
    }

    /// Lists the workspace for `@path` completion on a blocking thread;
    /// the chunks arrive as [`UiEvent::Files`] while the user types, and
    /// the listing stops once nobody receives them.
    pub(super) fn list_files(&mut self) {
        let Some(root) = self.root.clone() else {
            // No session yet: the next `@` asks again.
            self.app.files_requested = false;
            return;
        };
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            crate::tui::files::list_files(&root, |chunk| {
                events.send(UiEvent::Files(chunk)).is_ok()
            });
        });
    }

    /// Ctrl+V: the clipboard's image, read by the desktop's tool and
    /// prepared off the UI task; it comes back as [`UiEvent::ClipboardImage`].
    pub(super) fn paste_clipboard(&mut self) {
        let workspace = self.root.clone().unwrap_or_else(|| self.options.cwd.clone());
        let desktop = crate::sandbox::clipboard::Desktop::current(&workspace);
        let events = self.events.clone();
        tokio::spawn(async move {
            let image = match crate::sandbox::clipboard::read_image(&desktop).await {
                Ok(bytes) => tokio::task::spawn_blocking(move || {
                    crate::support::images::prepare(&bytes, "clipboard")
                        .map_err(|error| format!("cannot attach the clipboard's image: {error}"))
                })
                .await
                .unwrap_or_else(|error| {
                    Err(format!("cannot attach the clipboard's image: {error}"))
                }),
                Err(error) => Err(error.to_string()),
            };
            let _ = events.send(UiEvent::ClipboardImage(image));
        });
    }

    /// `/context`: the ledger of this session's log, off the UI task.
    pub(super) fn show_context(&mut self) {
        let Some((_, log)) = self.session.clone() else {
            let msg = Msg::Notice(Level::Info, "context: the session has not opened yet".into());
            update(&mut self.app, msg);
            return;
        };
        let dir = crate::session::sessions_dir(&self.options.launch.env.keel_home);
        let window = self.app.status.pricing.context_window;
        let events = self.events.clone();
        tokio::task::spawn_blocking(move || {
            let notice = match crate::session::ledger_of(&dir, &log) {
                Ok(ledger) => (Level::Info, crate::tui::slash_info::context_text(&ledger, window)),
                Err(error) => (Level::Warning, format!("cannot read the session's log: {error}")),
            };
            let _ = events.send(UiEvent::Notice(notice.0, notice.1));
        });
    }

    /// `/diff`: `git diff` of the workspace, off the UI task.
    pub(super) fn diff(&mut self) {
        let Some(root) = self.root.clone() else {
            let msg = Msg::Notice(Level::Warning, "no session is open yet".into());
            update(&mut self.app, msg);
            return;
        };
        let events = self.events.clone();
        tokio::spawn(async move {
            // keel's own git: the repository's config cannot run code.
            let outcome = crate::runtime::git::workspace_diff(root)
                .await
                .map_err(|error| format!("cannot show the diff: {error}"));
            let _ = events.send(UiEvent::Diff(outcome));
        });
    }
}
