//! The tool runtime: one file per tool (argument type with a schemars schema,
//! description, access class, run, tests) and the registry that dispatches a
//! model's [`ToolCall`] to them.
//!
//! Invariants: every path argument is resolved and confined to the workspace
//! (symlinks included, see [`paths`]) before it is touched; bad arguments,
//! unknown tools and tool failures become a [`ToolResult`] with `is_error`
//! the model can read, never a panic or a fatal error. Processes are spawned
//! only via [`crate::sandbox`]. Blocking filesystem work runs on
//! `spawn_blocking`, since read-only tools run concurrently.
//!
//! Files: one per tool, and `registry.rs` (`ToolRegistry::builtin`, `run_call`); `agent.rs` is only
//! the `agent` tool's schema and description (the runtime runs its calls). `paths.rs` checks paths
//! (one rule: root-relative, cwd-relative accepted when only it names something); `beneath.rs` uses
//! a checked path (openat walks from the root with `O_NOFOLLOW`, regular files only); `atomic.rs`
//! writes through a temp file and `renameat` relative to the parent's descriptor; `batch.rs` runs a
//! batch (at most `[shell] max_parallel` concurrent reads in flight, results in call order);
//! `file_state.rs` is read-before-write, one per session. `file_access.rs` is the front end's view of text
//! files (an ACP editor's buffers), which the file tools read and write through when a session
//! sets one (`ToolContext::client_files`); the disk otherwise. A panicking tool becomes an error through
//! `support::panic_guard`. Adding a tool: AGENTS.md, "Recipes".
//!
//! [`ToolCall`]: crate::protocol::ToolCall
//! [`ToolResult`]: crate::protocol::ToolResult

pub mod agent;
mod apply_patch;
mod args;
pub mod atomic;
mod batch;
mod beneath;
mod diff;
mod edit_file;
mod error;
pub mod file_access;
pub mod file_state;
mod glob;
mod grep;
mod grep_search;
mod list_dir;
mod load_skill;
pub mod paths;
mod process_output;
mod process_stop;
mod process_write;
pub mod processes;
mod read_file;
mod read_file_image;
mod read_memory;
mod registry;
mod shell;
mod shell_background;
mod shell_binary;
mod web_fetch;
mod write_file;

#[cfg(test)]
mod file_access_tests;
#[cfg(test)]
mod kept_output_tests;
#[cfg(test)]
mod testutil;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::protocol::{ToolClass, ToolInfo, ToolOutput};
use crate::sandbox::{CallJail, CommandAccess, CommandJail};

pub use agent::{AGENT_TOOL, AgentArgs};
pub use apply_patch::{PatchError, PatchReport, apply_patch_text};
pub use batch::{BatchMode, run_batch};
pub use error::ToolError;
pub use file_state::FileStates;
pub use read_memory::NAME as READ_MEMORY_TOOL;
pub use registry::ToolRegistry;
pub use shell::{MAX_OUTPUT_BYTES, NAME as SHELL_TOOL};

/// A boxed future, so tools can live behind `dyn Tool` (`futures_util`'s).
pub use futures_util::future::BoxFuture;

/// What a tool may see of the session.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root; every path is confined under it.
    pub workspace_root: PathBuf,
    /// Where relative paths and commands start (inside the workspace).
    pub cwd: PathBuf,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// What this session has read and written (read-before-write checks).
    pub files: Arc<FileStates>,
    /// The skills `load_skill` can load.
    pub skills: Arc<Vec<crate::skills::Skill>>,
    /// The memory notes `read_memory` can read.
    pub memory: Arc<Vec<crate::context::memory::MemoryNote>>,
    /// The call was judged a read and runs alongside other reads: a
    /// command runs in a jail with no write access at all (`shell`), so a
    /// wrong judgement fails the command instead of racing a write.
    pub read_only: bool,
    /// The call being run (set per call by [`ToolRegistry::run_call`]).
    pub call_id: String,
    /// Where a long-running tool reports progress, if anyone listens.
    pub progress: Option<ProgressSender>,
    /// The session's background processes (`shell` with `background`).
    pub processes: Arc<processes::BackgroundProcesses>,
    /// The session's jail: what the model's commands run under
    /// (confinement, environment filter). Ask it through
    /// [`ToolContext::command_jail`].
    pub jail: Arc<CommandJail>,
    /// The tools the model was offered (harness and MCP ones included),
    /// when a session knows them: a call to any other name is an unknown
    /// tool listing these, even if the registry holds it. `None`: the
    /// registry's names (one-shot `keel tool` runs).
    pub offered: Option<Arc<Vec<String>>>,
    /// What `web_fetch` may reach and how names resolve (the session's
    /// `web_rule`s and `[sandbox] hosts`).
    pub web: Arc<crate::web::WebAccess>,
    /// Where a cut command output is kept whole for the session
    /// (`session::KeptOutputs`), and the one folder of KEEL_HOME
    /// `read_file` reads. `None`: nothing is kept (one-shot `keel tool`
    /// runs), and a cut result says how to narrow the command instead.
    pub kept: Option<Arc<crate::session::KeptOutputs>>,
    /// The front end's text files (an ACP editor's buffers), which the
    /// file tools read and write text through when set
    /// (`file_access.rs`); `None`: the disk only.
    pub client_files: Option<file_access::ClientFiles>,
}

/// Progress a running tool reported (an MCP server's
/// `notifications/progress`), for front ends.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    pub call_id: String,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The sending half of a batch's progress channel.
pub type ProgressSender = tokio::sync::mpsc::UnboundedSender<ToolProgress>;

impl ToolContext {
    /// A context with a fresh file-state tracker (a session shares one
    /// tracker across its calls with [`ToolContext::with_files`]) and an
    /// unconfined jail with the built-in environment filter (a session
    /// gives its own with [`ToolContext::with_jail`]).
    pub fn new(workspace_root: PathBuf, cwd: PathBuf, cancel: CancellationToken) -> Self {
        Self {
            workspace_root,
            cwd,
            cancel,
            files: Arc::new(FileStates::new()),
            skills: Arc::new(Vec::new()),
            memory: Arc::new(Vec::new()),
            read_only: false,
            call_id: String::new(),
            progress: None,
            processes: Arc::default(),
            jail: Arc::new(CommandJail::default()),
            offered: None,
            web: Arc::default(),
            kept: None,
            client_files: None,
        }
    }

    /// The same context reading and writing text files through `client`.
    pub fn with_client_files(mut self, client: Option<file_access::ClientFiles>) -> Self {
        self.client_files = client;
        self
    }

    /// The same context keeping cut outputs in `kept`.
    pub fn with_kept(mut self, kept: Arc<crate::session::KeptOutputs>) -> Self {
        self.kept = Some(kept);
        self
    }

    /// The same context sharing the session's background processes.
    pub fn with_processes(mut self, processes: Arc<processes::BackgroundProcesses>) -> Self {
        self.processes = processes;
        self
    }

    /// The same context running commands in `jail`.
    pub fn with_web(mut self, web: Arc<crate::web::WebAccess>) -> Self {
        self.web = web;
        self
    }

    pub fn with_jail(mut self, jail: Arc<CommandJail>) -> Self {
        self.jail = jail;
        self
    }

    /// The jail of this call's commands: the session's, with nothing
    /// writable when the call was judged a read. The one place a tool
    /// learns what its commands run under.
    pub fn command_jail(&self) -> CallJail<'_> {
        let access = if self.read_only { CommandAccess::Reads } else { CommandAccess::Writes };
        self.jail.for_call(access)
    }

    /// The same context knowing which tools the model was offered.
    pub fn with_offered(mut self, offered: Vec<String>) -> Self {
        self.offered = Some(Arc::new(offered));
        self
    }

    /// The same context reporting progress to `sender`.
    pub fn with_progress(mut self, sender: ProgressSender) -> Self {
        self.progress = Some(sender);
        self
    }

    /// Reports progress of the current call, if anyone listens.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if let Some(sender) = &self.progress {
            let call_id = self.call_id.clone();
            let _ = sender.send(ToolProgress { call_id, progress, total, message });
        }
    }

    /// The same context for calls judged reads (see [`ToolContext::read_only`]).
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// The same context offering `memory` to `read_memory`.
    pub fn with_memory(mut self, memory: Arc<Vec<crate::context::memory::MemoryNote>>) -> Self {
        self.memory = memory;
        self
    }

    /// The same context offering `skills` to `load_skill`.
    pub fn with_skills(mut self, skills: Arc<Vec<crate::skills::Skill>>) -> Self {
        self.skills = skills;
        self
    }

    /// The same context sharing `files`.
    pub fn with_files(mut self, files: Arc<FileStates>) -> Self {
        self.files = files;
        self
    }
}

/// One tool.
/// A tool described by constants and a typed argument struct: the blanket
/// impl below makes it a [`Tool`] (schema generated from `Args`; the
/// model's arguments parsed with the offending field named, before `call`
/// runs). Every built-in tool is one.
pub trait TypedTool: Send + Sync {
    /// Its entry in the table of tool facts (name, kind, class, paths).
    const INFO: &'static ToolInfo;
    /// What the model reads about the tool.
    const DESCRIPTION: &'static str;
    type Args: serde::de::DeserializeOwned + schemars::JsonSchema + Send;

    fn call<'a>(
        &'a self,
        args: Self::Args,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

impl<T: TypedTool> Tool for T {
    fn name(&self) -> &str {
        T::INFO.name
    }

    fn info(&self) -> Option<&'static ToolInfo> {
        Some(T::INFO)
    }

    fn description(&self) -> &str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> serde_json::Value {
        crate::protocol::schema_of::<T::Args>()
    }

    fn class(&self) -> ToolClass {
        T::INFO.class
    }

    fn origin(&self, args: &serde_json::Value) -> crate::protocol::Origin {
        T::INFO.origin(args)
    }

    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match args::parse_args::<T::Args>(T::INFO.name, args) {
            Ok(args) => self.call(args, ctx),
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }
}

pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    /// The facts of a built-in tool; `None` for the others (MCP tools),
    /// which policy and hooks judge by name and class.
    fn info(&self) -> Option<&'static ToolInfo> {
        None
    }
    fn description(&self) -> &str;
    /// JSON schema of the arguments (generated with schemars).
    fn parameters(&self) -> serde_json::Value;
    fn class(&self) -> ToolClass;
    /// Where a call's result text comes from (`protocol::origin`), given
    /// its parsed arguments; the registry records it on every result.
    fn origin(&self, args: &serde_json::Value) -> crate::protocol::Origin {
        let _ = args;
        crate::protocol::Origin::Workspace
    }
    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}
