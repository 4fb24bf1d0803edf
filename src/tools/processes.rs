//! The session's background processes: what `shell` with `background`
//! started and `process_output`, `process_write` and `process_stop` act on,
//! by a small number the session hands out (1, 2, …).
//!
//! Invariants: at most [`MAX_PROCESSES`] at once (a start past it is
//! refused, naming the ones to stop); a process that ended on its own stays
//! until its last output was read, then it is gone; dropping the table
//! (the session ends, keel exits) SIGKILLs every process and the jail each
//! one runs in, and [`BackgroundProcesses::stop_all`] ends them politely
//! first. The table never awaits a process while its lock is held, so reads
//! of different processes run side by side.
//!
//! The facts front ends and the log read are in each result's metadata
//! under `background` (`id`, `status`: `running`, `exited`, `stopped`,
//! `command`, `pid`, `exit_code`, `signal`); a resumed session finds the
//! processes the log left running from them ([`LeftRunning`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol::{ContextKind, SessionEvent, ToolMeta};
use crate::sandbox::background::{BackgroundProcess, Exit, NewOutput};

/// Background processes a session may have at once.
pub const MAX_PROCESSES: usize = 8;

/// Why a background process could not be acted on.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error(
        "{limit} background processes are running already, the most a session may have; stop \
         one with process_stop first (running: {})",
        list(running)
    )]
    TooMany { limit: usize, running: Vec<u32> },
    #[error("there is no background process {id}; {}", known_ones(known))]
    NoSuchProcess { id: u32, known: Vec<u32> },
    #[error("background process {id} no longer reads its input ({source}); see process_output")]
    Input {
        id: u32,
        #[source]
        source: std::io::Error,
    },
}

impl ProcessError {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TooMany { .. } => "too_many_processes",
            Self::NoSuchProcess { .. } => "no_such_process",
            Self::Input { .. } => "process_input",
        }
    }
}

fn list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

fn known_ones(ids: &[u32]) -> String {
    if ids.is_empty() {
        "none is running (a resumed session's earlier processes are gone)".to_owned()
    } else {
        format!("the ones this session has: {}", list(ids))
    }
}

/// One process of the table.
#[derive(Debug)]
struct Entry {
    command: String,
    process: Arc<BackgroundProcess>,
}

/// What `/ps` shows of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    pub id: u32,
    pub command: String,
    pub pid: Option<u32>,
    /// `None` while it runs.
    pub exit: Option<Exit>,
    /// Bytes it wrote in all.
    pub written: u64,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u32,
    entries: BTreeMap<u32, Entry>,
    /// Numbers handed out for processes still starting.
    starting: usize,
}

/// A number reserved for a process about to start; dropped unfilled (the
/// start failed), it frees its place.
#[derive(Debug)]
pub struct Slot<'t> {
    table: &'t BackgroundProcesses,
    pub id: u32,
}

impl Slot<'_> {
    /// Adds the process started under this number.
    pub fn fill(self, command: String, process: Arc<BackgroundProcess>) {
        self.table.table().entries.insert(self.id, Entry { command, process });
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut table = self.table.table();
        table.starting = table.starting.saturating_sub(1);
    }
}

/// The session's table of background processes (shared by its contexts).
#[derive(Debug, Default)]
pub struct BackgroundProcesses {
    table: Mutex<Table>,
}

impl BackgroundProcesses {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A number for a process about to start, or the refusal when the
    /// session has [`MAX_PROCESSES`] already. Processes that ended and
    /// whose output was all read are forgotten first.
    pub fn reserve(&self) -> Result<Slot<'_>, ProcessError> {
        let mut table = self.table();
        table
            .entries
            .retain(|_, entry| entry.process.exit().is_none() || entry.process.unread() > 0);
        if table.entries.len() + table.starting >= MAX_PROCESSES {
            let running = table.entries.keys().copied().collect();
            return Err(ProcessError::TooMany { limit: MAX_PROCESSES, running });
        }
        table.next_id += 1;
        table.starting += 1;
        Ok(Slot { table: self, id: table.next_id })
    }

    /// The process `id`.
    pub fn get(&self, id: u32) -> Result<Arc<BackgroundProcess>, ProcessError> {
        let table = self.table();
        match table.entries.get(&id) {
            Some(entry) => Ok(entry.process.clone()),
            None => Err(ProcessError::NoSuchProcess {
                id,
                known: table.entries.keys().copied().collect(),
            }),
        }
    }

    /// The command `id` runs, for messages.
    pub fn command(&self, id: u32) -> String {
        self.table().entries.get(&id).map(|entry| entry.command.clone()).unwrap_or_default()
    }

    /// Forgets `id` (stopped, or ended and read to its end).
    pub fn remove(&self, id: u32) -> Option<Arc<BackgroundProcess>> {
        self.table().entries.remove(&id).map(|entry| entry.process)
    }

    /// Every process, by number.
    pub fn list(&self) -> Vec<ProcessInfo> {
        self.table()
            .entries
            .iter()
            .map(|(id, entry)| ProcessInfo {
                id: *id,
                command: entry.command.clone(),
                pid: entry.process.pid(),
                exit: entry.process.exit(),
                written: entry.process.written(),
            })
            .collect()
    }

    /// Stops every process (the kill ladder on each, side by side) and
    /// forgets them: the session is ending.
    pub async fn stop_all(&self) {
        let processes: Vec<_> =
            std::mem::take(&mut self.table().entries).into_values().map(|e| e.process).collect();
        futures_util::future::join_all(processes.iter().map(|process| process.stop())).await;
    }
}

/// The text a read of `id`'s new output gives the model: a status line,
/// a note of what was dropped, the output.
pub fn render_output(id: u32, command: &str, exit: Option<Exit>, output: &NewOutput) -> String {
    let status = match exit {
        None => format!("background process {id} (`{command}`) is running."),
        Some(exit) => format!(
            "background process {id} (`{command}`) {exit}; it is gone now (the rest of its \
             output is below)."
        ),
    };
    let dropped = (output.dropped > 0).then(|| {
        format!(
            "[... {} bytes of output dropped: keel keeps the newest {} KiB per read and 1 MiB \
             per process; read more often or make the program quieter ...]",
            output.dropped,
            super::MAX_OUTPUT_BYTES / 1024
        )
    });
    let text = if output.text.is_empty() && output.dropped == 0 {
        "(no new output)".to_owned()
    } else {
        output.text.trim_end().to_owned()
    };
    [Some(status), dropped, Some(text)].into_iter().flatten().collect::<Vec<_>>().join("\n")
}

/// The `background` metadata of a result about `id`.
pub fn meta(
    id: u32,
    status: &str,
    command: &str,
    pid: Option<u32>,
    exit: Option<Exit>,
) -> ToolMeta {
    let (code, signal) = match exit {
        Some(Exit::Code(code)) => (Some(code), None),
        Some(Exit::Signal(signal)) => (None, Some(signal)),
        None => (None, None),
    };
    ToolMeta::new().with(
        "background",
        json!({"id": id, "status": status, "command": command, "pid": pid, "exit_code": code,
            "signal": signal}),
    )
}

/// How long `process_output` may wait for new output.
pub const MAX_WAIT_MS: u64 = 60_000;

/// The wait a call asked for, at most [`MAX_WAIT_MS`], and the note its
/// result carries when it asked for more.
pub fn wait(wait_ms: Option<u64>, default: u64) -> (Duration, Option<String>) {
    let (wait, note) = super::args::bounded("wait_ms", wait_ms, default, 0, MAX_WAIT_MS);
    (Duration::from_millis(wait), note)
}

/// The background processes a session log left running: started and
/// never seen to end, and not yet said to be gone. A resumed session has
/// none of them (keel's processes died with it, or it stopped them as it
/// ended), which its first request must tell the model.
#[derive(Debug, Default)]
pub struct LeftRunning {
    open: BTreeMap<u32, String>,
}

impl LeftRunning {
    /// Takes in one logged event, in log order.
    pub fn note(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::ToolCallFinished { meta, .. } => self.note_meta(meta),
            SessionEvent::ContextUpdated { parts }
                if parts.iter().any(|part| part.kind == ContextKind::Processes) =>
            {
                // An earlier resume said so already.
                self.open.clear();
            }
            _ => {}
        }
    }

    fn note_meta(&mut self, meta: &ToolMeta) {
        let Some(background) = meta.get("background") else { return };
        let Some(id) = background.get("id").and_then(Value::as_u64) else { return };
        let id = u32::try_from(id).unwrap_or(u32::MAX);
        match background.get("status").and_then(Value::as_str) {
            Some("running") => {
                let command = background.get("command").and_then(Value::as_str).unwrap_or("");
                self.open.insert(id, command.to_owned());
            }
            Some(_) => {
                self.open.remove(&id);
            }
            None => {}
        }
    }

    /// The note for the next request, if any process was left running.
    pub fn gone_note(&self) -> Option<String> {
        (!self.open.is_empty()).then(|| gone_note(&self.open))
    }
}

/// What the first request of a resumed session says about them.
fn gone_note(gone: &BTreeMap<u32, String>) -> String {
    let listed: Vec<String> =
        gone.iter().map(|(id, command)| format!("- {id}: `{command}`")).collect();
    format!(
        "The background processes this session started before are gone: keel stopped them when \
         it ended (or they died with it), so process_output, process_write and process_stop no \
         longer know them. Start them again with `shell` and `background: true` if you still \
         need them.\n{}",
        listed.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContextPart, ToolResult};

    fn started(id: u32, command: &str) -> ToolMeta {
        meta(id, "running", command, Some(1), None)
    }

    fn finished(meta: ToolMeta) -> SessionEvent {
        SessionEvent::ToolCallFinished { result: ToolResult::ok("c", "o"), meta }
    }

    #[test]
    fn a_resume_names_the_processes_the_log_left_running_once() {
        let mut left = LeftRunning::default();
        for meta in [
            started(1, "python3 -m http.server"),
            started(2, "npm run watch"),
            meta(2, "stopped", "npm run watch", Some(1), Some(Exit::Signal(15))),
            ToolMeta::command(Some(0), None),
        ] {
            left.note(&finished(meta));
        }
        let note = left.gone_note().unwrap_or_default();
        assert!(note.contains("are gone"), "{note}");
        assert!(note.ends_with("\n- 1: `python3 -m http.server`"), "{note}");
        let said = ContextPart { kind: ContextKind::Processes, text: note };
        left.note(&SessionEvent::ContextUpdated { parts: vec![said] });
        assert_eq!(left.gone_note(), None, "a second resume does not say it again");
    }

    #[test]
    fn a_read_says_the_status_the_drop_and_the_output() {
        let output = NewOutput { text: "line\n".into(), dropped: 10 };
        let text = render_output(3, "tail -f x", None, &output);
        assert!(text.starts_with("background process 3 (`tail -f x`) is running.\n[... 10 bytes"));
        assert!(text.ends_with("]\nline"), "{text}");
        let quiet = render_output(3, "x", Some(Exit::Code(0)), &NewOutput::default());
        assert!(quiet.contains("exited with code 0; it is gone now"), "{quiet}");
        assert!(quiet.ends_with("(no new output)"));
    }
}
