//! `keel acp`: keel as an Agent Client Protocol agent over stdio, for
//! editors (Zed, JetBrains, Neovim plugins) that speak ACP. A front end
//! beside `tui/` and `exec/`: each ACP session is a keel
//! [`Session`](crate::runtime::Session), driven as the TUI drives one.
//!
//! What a client gets: sessions (new; load, from keel's own log, replayed
//! as updates); prompts of text, images and resources (`prompt.rs`);
//! streamed message and thought chunks, tool calls with their kind,
//! locations and diffs, the task list as the plan, mode changes and
//! warnings (`updates.rs`, `tool_calls.rs`, `diffs.rs`); keel's approvals
//! as permission requests (`approver.rs`); keel's modes as session modes
//! and `session/cancel` (`hub.rs`); one task per session (`worker.rs`).
//!
//! Invariants: stdout carries only JSON-RPC (sessions print nothing; logs
//! go to stderr); keel's mode and policy decide every call, the client
//! only answers what keel asks (the answer recorded in the log as the
//! TUI's is) and picks among keel's modes; the session log has one writer
//! (a session is open in one task at a time); keel exits only once every
//! session task has ended its session.
//!
//! The client's files (`client_files.rs`): when `initialize` offers
//! `fs.readTextFile` / `fs.writeTextFile`, keel's file tools read a text
//! file as the editor has it (its unsaved buffer; `read_file`'s
//! offset/limit become `line`/`limit`) and give their change to the
//! editor, computed by keel from the editor's text
//! (`tools::file_access`). keel judges every call and checks its path
//! first, as without a client; binary files and images stay on keel's
//! disk path. Both sides are written: the editor first (a refusal, an
//! error or no answer within 30 s is a tool error and nothing is written),
//! then keel makes the disk hold the same bytes unless the editor saved
//! exactly them: keel's commands, undo checkpoints and freshness checks
//! read the disk, and an editor need not save what it was given.
//!
//! The client's terminals are not used, by decision: `terminal/create`
//! runs a command on the client's side, outside keel's sandbox (no
//! confinement, environment filter, network proxy or undo watcher), so
//! keel's policy could judge such a command but not contain it; and ACP v1
//! has no terminal that only shows output keel produced (a terminal exists
//! only by naming a command for the client to run). Commands run in keel's
//! sandbox as in the TUI; their output is the tool call's text content.
//!
//! Not done: the diffs keel shows in permission requests and tool call
//! updates read the old text from the disk, not the editor's buffer
//! (subagents share the session's client files); the MCP servers a client passes in
//! `session/new` are not started (keel's configured ones are), and
//! `ask_user` questions get no answer (ACP v1 has no question request).
//!
//! Built on the maintained SDK (`agent-client-protocol`, protocol v1),
//! fed lines from tokio's stdin and writing to tokio's stdout.

mod approver;
mod client_files;
mod diffs;
mod hub;
mod prompt;
mod replay;
mod tool_calls;
mod updates;
mod worker;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, InitializeRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{Agent, Lines};
use futures_util::{SinkExt as _, StreamExt as _};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use crate::config::{CliOverrides, Environment};
use crate::policy::ApprovalMode;

/// How `keel acp` was started.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The process's environment (KEEL_HOME, variables); each session's
    /// folder replaces its cwd.
    pub env: Environment,
    /// Model and config flags, for every session.
    pub overrides: CliOverrides,
    /// The mode flags; `None`: each folder's `default_mode`.
    pub mode: Option<ApprovalMode>,
    /// Today's date for the prompt.
    pub date: String,
}

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

/// Serves ACP on stdin/stdout until the client closes stdin.
pub async fn serve(options: AcpOptions) -> Result<(), AcpError> {
    let hub = Arc::new(hub::Hub::new(options));
    let stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let incoming = futures_util::stream::unfold(stdin, |mut lines| async move {
        match lines.next_line().await {
            Ok(Some(line)) => Some((Ok(line), lines)),
            Ok(None) => None,
            Err(error) => Some((Err(error), lines)),
        }
    });
    let outgoing =
        futures_util::sink::unfold(tokio::io::stdout(), |mut out, line: String| async move {
            out.write_all(line.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await?;
            Ok::<_, std::io::Error>(out)
        });
    let transport = Lines::new(Box::pin(outgoing).sink_map_err(|e| e), Box::pin(incoming).boxed());
    let served = Agent
        .v1()
        .name("keel")
        .on_receive_request(
            {
                let hub = hub.clone();
                async move |request: InitializeRequest, responder, _connection| {
                    responder.respond(hub.initialize(&request))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let hub = hub.clone();
                async move |request: NewSessionRequest, responder, connection| {
                    hub.new_session(request, responder, connection)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let hub = hub.clone();
                async move |request: LoadSessionRequest, responder, connection| {
                    hub.load_session(request, responder, connection)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let hub = hub.clone();
                async move |request: PromptRequest, responder, _connection| {
                    hub.prompt(request, responder)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let hub = hub.clone();
                async move |request: SetSessionModeRequest, responder, _connection| {
                    hub.set_mode(&request, responder)
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let hub = hub.clone();
                async move |notification: CancelNotification, _connection| {
                    hub.cancel(&notification.session_id.0);
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    // The client is gone: every session ends (recorded, hooks run) before
    // keel exits.
    hub.close_all();
    let _finished = hub.tasks.write().await;
    served.map_err(|error| AcpError::Connection(error.message))
}
