//! The session's tool runner: the registry (built-ins and MCP tools),
//! what the tools share for the session (read-before-write memory, the
//! skills `load_skill` loads, the memory notes `read_memory` reads, the
//! background processes `shell` started, the jail its commands run in, the
//! secret mask its results pass through) and how many reads run at once. It builds each batch's `ToolContext` and runs
//! calls; hooks, policy and file bookkeeping around them stay in
//! `execute.rs`.
//!
//! Invariant: a concurrent batch runs with a read-only context (only calls
//! judged reads are ever batched together), at most `max_parallel` at once.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::context::memory::MemoryNote;
use crate::display::SecretMask;
use crate::protocol::{ToolCall, ToolMeta, ToolResult};
use crate::sandbox::CommandJail;
use crate::skills::Skill;
use crate::tools::file_access::ClientFiles;
use crate::tools::processes::BackgroundProcesses;
use crate::tools::{BatchMode, FileStates, Tool, ToolContext, ToolRegistry, run_batch};

pub(super) struct ToolRunner {
    registry: ToolRegistry,
    /// What the session's tools have read and written (read-before-write).
    files: Arc<FileStates>,
    skills: Arc<Vec<Skill>>,
    memory: Arc<Vec<MemoryNote>>,
    /// How many calls judged reads run at once (`shell.max_parallel`).
    max_parallel: usize,
    /// The background processes the session's `shell` calls started.
    processes: Arc<BackgroundProcesses>,
    /// What the session's commands run under (shared with its subagents).
    jail: Arc<CommandJail>,
    /// The session's known secret values (`secrets.rs`).
    mask: Arc<SecretMask>,
    /// What `web_fetch` may reach (the session's `web_rule`s, `[sandbox] hosts`).
    web: Arc<crate::web::WebAccess>,
    /// Where the session's cut outputs are kept (`session::KeptOutputs`).
    kept: Option<Arc<crate::session::KeptOutputs>>,
    /// The front end's text files (an ACP editor's), when it offers them.
    client_files: Option<ClientFiles>,
}

impl ToolRunner {
    pub(super) fn new(
        registry: ToolRegistry,
        files: FileStates,
        skills: Vec<Skill>,
        memory: Vec<MemoryNote>,
        max_parallel: Option<usize>,
        jail: Arc<CommandJail>,
    ) -> Self {
        Self {
            registry,
            files: Arc::new(files),
            skills: Arc::new(skills),
            memory: Arc::new(memory),
            max_parallel: max_parallel_or_default(max_parallel),
            processes: Arc::default(),
            jail,
            mask: Arc::default(),
            web: Arc::default(),
            kept: None,
            client_files: None,
        }
    }

    /// The front end's text files, if the session has them.
    pub(super) fn client_files(&self) -> Option<&ClientFiles> {
        self.client_files.as_ref()
    }

    /// The file tools read and write text through `client` from now on.
    pub(super) fn set_client_files(&mut self, client: ClientFiles) {
        self.client_files = Some(client);
    }

    /// Keeps the cut outputs of the session `session_id` under
    /// `keel_home`, masked by the session's mask (set it first); those of
    /// the sessions it was `forked_from` stay readable.
    pub(super) fn keeping_outputs(
        mut self,
        keel_home: &Path,
        session_id: &str,
        forked_from: &[String],
    ) -> Self {
        let kept = crate::session::KeptOutputs::new(keel_home, session_id, self.mask.clone())
            .reading_also(keel_home, forked_from);
        self.kept = Some(Arc::new(kept));
        self
    }

    /// Masks the values of `mask` in every result.
    pub(super) fn with_mask(self, mask: SecretMask) -> Self {
        Self { mask: Arc::new(mask), ..self }
    }

    /// The session's secret mask.
    pub(super) fn mask(&self) -> &Arc<SecretMask> {
        &self.mask
    }

    /// The same runner with `web_fetch`'s access set.
    pub(super) fn with_web(mut self, web: crate::web::WebAccess) -> Self {
        self.web = Arc::new(web);
        self
    }

    /// The session's jail.
    pub(super) fn jail(&self) -> &Arc<CommandJail> {
        &self.jail
    }

    /// The context a batch runs in; read-only for a concurrent batch.
    pub(super) fn context(
        &self,
        root: &Path,
        cwd: &Path,
        cancel: &CancellationToken,
        read_only: bool,
    ) -> ToolContext {
        let ctx = ToolContext::new(root.to_owned(), cwd.to_owned(), cancel.clone())
            .with_files(self.files.clone())
            .with_skills(self.skills.clone())
            .with_memory(self.memory.clone())
            .with_jail(self.jail.clone())
            .with_read_only(read_only)
            .with_processes(self.processes.clone())
            .with_web(self.web.clone())
            .with_client_files(self.client_files.clone());
        match &self.kept {
            Some(kept) => ctx.with_kept(kept.clone()),
            None => ctx,
        }
    }

    /// The session's background processes (`/ps`, the session's end).
    pub(super) fn processes(&self) -> &Arc<BackgroundProcesses> {
        &self.processes
    }

    /// Runs calls judged reads together, results in call order.
    pub(super) async fn run_reads(
        &self,
        calls: &[ToolCall],
        ctx: &ToolContext,
    ) -> Vec<(ToolResult, ToolMeta)> {
        let mode = BatchMode::Concurrent { limit: self.max_parallel };
        run_batch(&self.registry, calls, mode, ctx).await
    }

    pub(super) async fn run_call(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (ToolResult, ToolMeta) {
        self.registry.run_call(call, ctx).await
    }

    /// Adds tools (an MCP server's, once it is ready).
    pub(super) fn extend(&mut self, tools: Vec<Box<dyn Tool>>) {
        self.registry.extend(tools);
    }

    pub(super) fn remove_where(&mut self, drop: impl Fn(&str) -> bool) {
        self.registry.remove_where(drop);
    }

    /// The tools this session can run (offered or not).
    pub(super) fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    pub(super) fn skills(&self) -> &[Skill] {
        &self.skills
    }

    /// The memory notes found again (after a compaction).
    /// The memory notes the tools list to the model.
    pub(super) fn memory(&self) -> &Arc<Vec<MemoryNote>> {
        &self.memory
    }

    pub(super) fn set_memory(&mut self, memory: Vec<MemoryNote>) {
        self.memory = Arc::new(memory);
    }
}

/// How many calls judged reads run at once: `shell.max_parallel`, else
/// twice the machine's cores, at least 8 (reads mostly wait on the disk,
/// the network or a timer, so even two cores run eight together) and at
/// most 32.
fn max_parallel_or_default(configured: Option<usize>) -> usize {
    configured.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        cores.saturating_mul(2).clamp(8, 32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_overlap_by_default_even_on_two_cores() {
        assert_eq!(max_parallel_or_default(Some(3)), 3);
        let default = max_parallel_or_default(None);
        assert!((8..=32).contains(&default), "{default}");
    }

    fn call(id: &str, name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    #[tokio::test]
    async fn reads_run_together_and_come_back_in_call_order() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(root.path().join("b.txt"), "beta\n").unwrap();
        let jail = Arc::new(CommandJail::default());
        let registry = ToolRegistry::builtin();
        let runner = ToolRunner::new(registry, FileStates::new(), vec![], vec![], Some(2), jail);
        let cancel = CancellationToken::new();
        let ctx = runner.context(root.path(), root.path(), &cancel, true);
        let reads = [
            call("1", "read_file", serde_json::json!({ "path": "b.txt" })),
            call("2", "read_file", serde_json::json!({ "path": "a.txt" })),
        ];
        let results = runner.run_reads(&reads, &ctx).await;
        let ids: Vec<&str> = results.iter().map(|(r, _)| r.call_id.as_str()).collect();
        assert_eq!(ids, ["1", "2"]);
        assert!(results[0].0.output.contains("beta") && results[1].0.output.contains("alpha"));
    }
}
