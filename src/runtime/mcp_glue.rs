//! MCP servers in a session: started in parallel when the session opens,
//! waited for (each at most its `startup_timeout_sec`) before the first
//! request, their tools offered from then on, changes to the tool list
//! applied at turn boundaries and recorded, statuses reported, and every
//! server stopped when the session ends.
//!
//! Invariants (the prompt-cache contract): the tool list is
//! settled before the first request and changes only at a turn boundary,
//! each change recorded as a `tools_changed` line with what was added and
//! removed; MCP tools follow keel's own (built-in, then harness) in server
//! order, so a session with the same servers sends the same tool bytes on
//! every request. A server that is slow or fails is reported once
//! (`mcp_server_status`) and never holds a turn. A subagent's state is
//! `McpState::shared`: the parent's hub, its tool list fixed when the child
//! opens (`subagent_mcp.rs`); it never starts, re-lists, reports or stops
//! a server (the session that started the hub does).

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::mcp::{McpHub, McpToolDef, ServerStatus, is_mcp_tool};
use crate::protocol::{SessionEvent, ToolClass, ToolSpec};

use super::{RuntimeError, RuntimeEvent, Session};

/// A session's MCP side.
pub(super) struct McpState {
    pub(super) hub: Arc<McpHub>,
    /// The MCP tools offered now, in order.
    offered: Vec<McpToolDef>,
    /// The servers were waited for and the first tool list is in place.
    settled: bool,
    /// The hub is a parent session's (this is a subagent's state).
    shared: bool,
}

impl McpState {
    /// Starts the configured servers of `settings` in the background.
    pub(super) fn start(settings: &crate::config::Settings, session_id: &str) -> Self {
        let log_dir = mcp_log_dir(&settings.keel_home, session_id);
        let hub = if settings.mcp.servers.is_empty() && settings.mcp.skipped.is_empty() {
            McpHub::empty()
        } else {
            McpHub::start(&settings.mcp, &settings.workspace_root, &settings.env_filter, &log_dir)
        };
        Self { hub: Arc::new(hub), offered: Vec::new(), settled: false, shared: false }
    }

    /// A subagent's view of its parent's `hub`: settled, its tools offered
    /// once (`Session::offer_mcp_tools`), never re-listed, reported or
    /// stopped from here.
    pub(super) fn shared(hub: Arc<McpHub>) -> Self {
        Self { hub, offered: Vec::new(), settled: true, shared: true }
    }

    /// The MCP tools offered now, in order.
    pub(super) fn offered(&self) -> &[McpToolDef] {
        &self.offered
    }
}

/// Where a session's stdio servers write their stderr.
pub fn mcp_log_dir(keel_home: &std::path::Path, session_id: &str) -> PathBuf {
    keel_home.join("logs").join("mcp").join(session_id)
}

impl Session {
    /// Runs at the start of every turn (and before a resumed turn goes
    /// on). The first time: waits for the servers (bounded; an interrupt
    /// stops the wait), offers their tools and reports every server. Later:
    /// applies tool-list changes, recorded.
    pub(super) async fn mcp_turn_boundary(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        let hub = self.mcp.hub.clone();
        if !hub.is_configured() || self.mcp.shared {
            return Ok(());
        }
        if !self.mcp.settled {
            self.mcp.settled = true;
            tokio::select! {
                () = hub.wait_started() => {}
                () = cancel.cancelled() => {}
            }
            hub.refresh_stale().await;
            self.offer_mcp_tools(hub.tool_defs(), None)?;
            for status in hub.statuses() {
                self.report_mcp_status(status)?;
            }
            hub.start_reporting();
            return Ok(());
        }
        hub.refresh_stale().await;
        let defs = hub.tool_defs();
        if defs != self.mcp.offered {
            self.offer_mcp_tools(defs, Some("an MCP server's tool list changed"))?;
        }
        self.mcp_reports()
    }

    /// Reports (front end and log) the status changes since the last call.
    pub(super) fn mcp_reports(&mut self) -> Result<(), RuntimeError> {
        if self.mcp.shared {
            return Ok(());
        }
        for status in self.mcp.hub.take_reports() {
            self.report_mcp_status(status)?;
        }
        Ok(())
    }

    fn report_mcp_status(&mut self, status: ServerStatus) -> Result<(), RuntimeError> {
        let (state, message) = (status.status.as_str().to_owned(), status.message());
        self.log.append(SessionEvent::McpServerStatus {
            server: status.server.clone(),
            status: state.clone(),
            tools: status.tools.clone(),
            error: message.clone(),
        })?;
        let prompts = (self.mcp.hub.prompts().into_iter())
            .filter(|prompt| prompt.server == status.server)
            .map(|prompt| (format!("/{}", prompt.command), prompt.description))
            .collect();
        self.sink.emit(RuntimeEvent::McpServerStatus {
            server: status.server,
            status: state,
            tools: status.tools,
            error: message,
            log: status.log,
            prompts,
        });
        Ok(())
    }

    /// Replaces the MCP tools of the registry and (through `step`) the
    /// loop's config with `defs`; with a `reason`, the change is recorded.
    pub(super) fn offer_mcp_tools(
        &mut self,
        defs: Vec<McpToolDef>,
        reason: Option<&str>,
    ) -> Result<(), RuntimeError> {
        let replaced: Vec<String> = (self.state.config().tools.iter())
            .chain(self.state.deferred_tools())
            .filter(|spec| is_mcp_tool(&spec.name))
            .map(|spec| spec.name.clone())
            .collect();
        let specs: Vec<ToolSpec> = defs
            .iter()
            .map(|def| ToolSpec {
                name: def.name.clone(),
                description: def.description.clone(),
                parameters: def.parameters.clone(),
            })
            .collect();
        // Deferred when their definitions would crowd the request
        // (`[tools] defer_mcp`, `agent::deferred`).
        let defer = self.settings.defer_mcp.defers(&specs);
        let offered = (specs.into_iter().zip(&defs))
            .map(|(spec, def)| {
                let class = if def.read_only { ToolClass::ReadOnly } else { ToolClass::Mutating };
                (spec, class)
            })
            .collect();
        let reason = reason.map(str::to_owned);
        let changed = reason.clone();
        self.apply_outside_loop(Input::ToolsOffered { replaced, offered, reason, defer })?;
        if let Some(reason) = changed {
            self.sink.emit(RuntimeEvent::Warning {
                message: format!("{reason}: the model sees the new tool list from now on"),
            });
        }
        self.tools.remove_where(is_mcp_tool);
        self.tools.extend(self.mcp.hub.tools(&defs));
        self.mcp.offered = defs;
        Ok(())
    }

    /// `/mcp__server__prompt words…` as the prompt's text; other prompts
    /// unchanged. `Err` says why an MCP prompt could not be had.
    pub(super) async fn expand_mcp_prompt(&mut self, prompt: String) -> Result<String, String> {
        let Some(expanded) = self.mcp.hub.expand_prompt(&prompt).await else {
            if prompt.starts_with("/mcp__") {
                let name = prompt.split_whitespace().next().unwrap_or_default();
                return Err(format!("no MCP server offers the prompt {name}; /mcp lists them"));
            }
            return Ok(prompt);
        };
        expanded.map_err(|error| format!("the MCP prompt failed: {error}"))
    }

    /// `@server:uri` mentions of MCP resources read and inlined into the
    /// prompt (their images attached to the turn). The user named them, so
    /// the read is theirs: no approval is asked. `Err` says which failed.
    pub(super) async fn inline_mcp_resources(&mut self, prompt: String) -> Result<String, String> {
        let (prompt, images) = self.mcp.hub.inline_resources(prompt).await?;
        if !images.is_empty() {
            self.images.attach(images);
        }
        Ok(prompt)
    }

    /// Every configured MCP server's status (for `/mcp`).
    pub fn mcp_statuses(&self) -> Vec<ServerStatus> {
        self.mcp.hub.statuses()
    }

    /// The MCP prompts offered as slash commands: (command, description).
    pub fn mcp_prompts(&self) -> Vec<(String, String)> {
        self.mcp.hub.prompts().into_iter().map(|p| (p.command, p.description)).collect()
    }

    /// Stops every MCP server (kill ladder for stdio servers); a subagent
    /// leaves its parent's running.
    pub(super) async fn mcp_shutdown(&mut self) {
        if self.mcp.shared {
            return;
        }
        self.mcp.hub.shutdown().await;
    }
}
