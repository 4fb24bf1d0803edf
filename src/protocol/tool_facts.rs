//! The facts every layer knows about a built-in tool, in one table: its
//! name, its workflow [`ToolKind`], its access [`ToolClass`], its Claude
//! Code names, and the arguments that name paths with their [`Access`].
//!
//! Why here: `policy/` and `plan/` are pure (L0) and may not import
//! `tools/` (L1), yet they must know what a tool touches. So the facts are
//! plain data in `protocol/` (L0), and each tool's file in `tools/` points
//! at its entry (`const INFO: &ToolInfo = &tool_facts::READ_FILE`) rather
//! than restating its name or class. Plan, policy, hooks, config, runtime
//! and the front ends ask a [`ToolInfo`] ([`builtin`], [`by_claude_name`],
//! or `ToolRegistry::info`) instead of comparing names.
//!
//! Invariants:
//! - a built-in tool's name is written as a string literal only in
//!   [`names`] here (`tests/suite/tool_names.rs` fails on any other
//!   shipped literal); code that must single out one tool compares
//!   against a [`names`] constant;
//! - every argument that names a path is listed in [`ToolInfo::paths`] with
//!   its access, so policy's path checks and secret protection see every
//!   path a tool touches, whatever the argument is called (`path`, `paths`);
//! - one Claude Code table ([`ToolInfo::claude`]): the first name is the
//!   one Claude Code calls the tool (hook payloads from `.claude/` show
//!   it), the others are accepted on input too (`MultiEdit`, `Agent`).
//!
//! Adding a tool: see the recipe in `tools/registry.rs`.

use serde::Deserialize;

use super::ToolClass;

/// The names the model calls the built-in tools by: the only place they
/// are spelled.
pub mod names {
    pub const READ_FILE: &str = "read_file";
    pub const LIST_DIR: &str = "list_dir";
    pub const GLOB: &str = "glob";
    pub const GREP: &str = "grep";
    pub const WRITE_FILE: &str = "write_file";
    pub const EDIT_FILE: &str = "edit_file";
    pub const APPLY_PATCH: &str = "apply_patch";
    pub const SHELL: &str = "shell";
    pub const PROCESS_OUTPUT: &str = "process_output";
    pub const PROCESS_WRITE: &str = "process_write";
    pub const PROCESS_STOP: &str = "process_stop";
    pub const LOAD_SKILL: &str = "load_skill";
    pub const READ_MEMORY: &str = "read_memory";
    pub const AGENT: &str = "agent";
    pub const SET_PHASE: &str = "set_phase";
    pub const SUBMIT_PLAN: &str = "submit_plan";
    pub const TODO_WRITE: &str = "todo_write";
    pub const TOOL_SEARCH: &str = "tool_search";
    pub const CALL_TOOL: &str = "call_tool";
    pub const ASK_USER: &str = "ask_user";
    pub const WEB_FETCH: &str = "web_fetch";
}

/// The kind of tool, as phase rules name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Write,
    Shell,
    Plan,
    Tasks,
    /// Moving between phases; allowed in every phase.
    Phase,
}

/// What a tool does to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// How an argument names paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// One path whose contents the tool reads or writes (a string).
    File,
    /// Several such paths (an array of strings).
    Files,
    /// A folder whose entries' names are listed, not their contents.
    Listing,
    /// A glob choosing the files whose contents are read below a path.
    Glob,
    /// The folder a command runs in.
    Workdir,
    /// A shell script; its paths are found by parsing it.
    Script,
    /// An `apply_patch` patch; its paths are its headers.
    Patch,
    /// A URL the tool fetches: its host is judged by `web_rule`s
    /// (`policy::web_rules`), no path is touched.
    Url,
}

/// One argument that names paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathArg {
    /// The argument's key in the call's JSON object.
    pub arg: &'static str,
    pub operand: Operand,
    pub access: Access,
}

impl PathArg {
    const fn new(arg: &'static str, operand: Operand, access: Access) -> Self {
        Self { arg, operand, access }
    }

    /// The argument's text in the call's `args`: each string of a `Files`
    /// array, else the one string (nothing when absent or mistyped).
    pub fn values<'a>(&self, args: &'a serde_json::Value) -> Vec<&'a str> {
        let value = args.get(self.arg);
        match self.operand {
            Operand::Files => value
                .and_then(|value| value.as_array())
                .into_iter()
                .flatten()
                .filter_map(|value| value.as_str())
                .collect(),
            _ => value.and_then(|value| value.as_str()).into_iter().collect(),
        }
    }
}

/// The facts about one tool. See the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolInfo {
    /// The name the model calls it by.
    pub name: &'static str,
    pub kind: ToolKind,
    /// Whether running it can change anything outside keel.
    pub class: ToolClass,
    /// Claude Code's name for it first, then other names Claude Code
    /// configurations use for it; empty when Claude Code has none.
    pub claude: &'static [&'static str],
    /// The arguments that name paths.
    pub paths: &'static [PathArg],
}

impl ToolInfo {
    /// Whether running it can change anything outside keel.
    pub const fn mutates(&self) -> bool {
        matches!(self.class, ToolClass::Mutating)
    }

    /// The name Claude Code calls it by, if it has one.
    pub fn claude_name(&self) -> Option<&'static str> {
        self.claude.first().copied()
    }

    /// Where a call's result text comes from: a command's output, a
    /// subagent's report, a fetched page's host, else the workspace.
    pub fn origin(&self, args: &serde_json::Value) -> super::Origin {
        if let Some(url) = self.operand(Operand::Url) {
            let host = args.get(url).and_then(serde_json::Value::as_str).and_then(url_host);
            return super::Origin::Web { host: host.unwrap_or_default() };
        }
        match self.kind {
            ToolKind::Shell => super::Origin::Command,
            _ if PROCESS_TOOLS.contains(&self.name) => super::Origin::Command,
            _ if self.name == names::AGENT => super::Origin::Agent,
            _ => super::Origin::Workspace,
        }
    }

    /// The argument of this operand, if the tool has one.
    pub fn operand(&self, operand: Operand) -> Option<&'static str> {
        self.paths.iter().find(|path| path.operand == operand).map(|path| path.arg)
    }

    /// Every path the call's `args` name in a file or listing argument
    /// (`File`, `Files`, `Listing`), with its access and operand, in
    /// declaration order. Scripts, patches, globs and workdirs are left
    /// to their readers.
    pub fn named_paths<'a>(&self, args: &'a serde_json::Value) -> Vec<(&'a str, &'static PathArg)> {
        self.paths
            .iter()
            .filter(|path| {
                matches!(path.operand, Operand::File | Operand::Files | Operand::Listing)
            })
            .flat_map(|path| path.values(args).into_iter().map(move |text| (text, path)))
            .collect()
    }
}

const fn info(
    name: &'static str,
    kind: ToolKind,
    class: ToolClass,
    claude: &'static [&'static str],
    paths: &'static [PathArg],
) -> ToolInfo {
    ToolInfo { name, kind, class, claude, paths }
}

use Access::{Read, Write};
use ToolClass::{Mutating, ReadOnly};

pub const READ_FILE: ToolInfo = info(
    names::READ_FILE,
    ToolKind::Read,
    ReadOnly,
    &["Read"],
    &[PathArg::new("path", Operand::File, Read)],
);
pub const LIST_DIR: ToolInfo = info(
    names::LIST_DIR,
    ToolKind::Read,
    ReadOnly,
    &["LS"],
    &[PathArg::new("path", Operand::Listing, Read)],
);
pub const GLOB: ToolInfo = info(
    names::GLOB,
    ToolKind::Read,
    ReadOnly,
    &["Glob"],
    &[PathArg::new("path", Operand::Listing, Read)],
);
pub const GREP: ToolInfo = info(
    names::GREP,
    ToolKind::Read,
    ReadOnly,
    &["Grep"],
    &[PathArg::new("path", Operand::File, Read), PathArg::new("glob", Operand::Glob, Read)],
);
pub const WRITE_FILE: ToolInfo = info(
    names::WRITE_FILE,
    ToolKind::Write,
    Mutating,
    &["Write"],
    &[PathArg::new("path", Operand::File, Write)],
);
pub const EDIT_FILE: ToolInfo = info(
    names::EDIT_FILE,
    ToolKind::Write,
    Mutating,
    &["Edit", "MultiEdit"],
    &[PathArg::new("path", Operand::File, Write)],
);
pub const APPLY_PATCH: ToolInfo = info(
    names::APPLY_PATCH,
    ToolKind::Write,
    Mutating,
    &[],
    &[PathArg::new("patch", Operand::Patch, Write)],
);
pub const SHELL: ToolInfo = info(
    names::SHELL,
    ToolKind::Shell,
    Mutating,
    &["Bash"],
    &[
        PathArg::new("command", Operand::Script, Write),
        PathArg::new("workdir", Operand::Workdir, Read),
    ],
);
/// The background-process tools act on what `shell` started
/// (`shell` with `background`). Reading its output and ending it change no
/// file; writing to its stdin is a write: it can run anything.
pub const PROCESS_OUTPUT: ToolInfo =
    info(names::PROCESS_OUTPUT, ToolKind::Read, ReadOnly, &["BashOutput"], &[]);
pub const PROCESS_WRITE: ToolInfo = info(names::PROCESS_WRITE, ToolKind::Write, Mutating, &[], &[]);
pub const PROCESS_STOP: ToolInfo =
    info(names::PROCESS_STOP, ToolKind::Read, ReadOnly, &["KillShell", "KillBash"], &[]);
pub const LOAD_SKILL: ToolInfo = info(names::LOAD_SKILL, ToolKind::Read, ReadOnly, &["Skill"], &[]);
pub const READ_MEMORY: ToolInfo = info(names::READ_MEMORY, ToolKind::Read, ReadOnly, &[], &[]);
/// Delegating is allowed in every phase: a subagent's own calls are judged
/// in its session, and what a writer one changed is observed from its
/// result (`agent::workflow`).
pub const AGENT: ToolInfo = info(names::AGENT, ToolKind::Read, ReadOnly, &["Task", "Agent"], &[]);
/// The loop's own tools (`protocol::HarnessTool`): read-only as far as
/// policy and batching are concerned, they change only the loop's state.
pub const SET_PHASE: ToolInfo = info(names::SET_PHASE, ToolKind::Phase, ReadOnly, &[], &[]);
pub const SUBMIT_PLAN: ToolInfo =
    info(names::SUBMIT_PLAN, ToolKind::Plan, ReadOnly, &["ExitPlanMode"], &[]);
pub const TODO_WRITE: ToolInfo =
    info(names::TODO_WRITE, ToolKind::Tasks, ReadOnly, &["TodoWrite"], &[]);
/// Offered in place of deferred tools (`agent::deferred`: the rarely used
/// built-ins of [`DEFERRED_BUILTINS`], MCP tools past `[tools] defer_mcp`):
/// a search over their definitions, and the call of one by name, judged as
/// that tool once `step` unwraps it (so its own class never decides anything).
pub const TOOL_SEARCH: ToolInfo = info(names::TOOL_SEARCH, ToolKind::Read, ReadOnly, &[], &[]);
pub const CALL_TOOL: ToolInfo = info(names::CALL_TOOL, ToolKind::Read, ReadOnly, &[], &[]);

/// Asking the user changes nothing and fits every phase, as moving
/// between phases does: its kind is `Phase`.
pub const ASK_USER: ToolInfo =
    info(names::ASK_USER, ToolKind::Phase, ReadOnly, &["AskUserQuestion"], &[]);

/// Reads a page from the web by keel's HTTP client: a read of the
/// network, judged by `web_rule`s per host (every redirect hop again).
pub const WEB_FETCH: ToolInfo = info(
    names::WEB_FETCH,
    ToolKind::Read,
    ReadOnly,
    &["WebFetch"],
    &[PathArg::new("url", Operand::Url, Read)],
);

/// The host of an `http`/`https` URL, lower-case, without brackets or a
/// trailing dot (`None`: not such a URL).
pub fn url_host(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
    Some(host.trim_end_matches('.').to_ascii_lowercase()).filter(|host| !host.is_empty())
}

/// Every built-in tool, in the order messages list them (a phase's allowed
/// tools); the registry offers its tools in its own order.
pub const BUILTIN: [&ToolInfo; 21] = [
    &READ_FILE,
    &LIST_DIR,
    &GLOB,
    &GREP,
    &LOAD_SKILL,
    &READ_MEMORY,
    &EDIT_FILE,
    &WRITE_FILE,
    &APPLY_PATCH,
    &SHELL,
    &PROCESS_OUTPUT,
    &PROCESS_WRITE,
    &PROCESS_STOP,
    &WEB_FETCH,
    &AGENT,
    &SUBMIT_PLAN,
    &TODO_WRITE,
    &SET_PHASE,
    &ASK_USER,
    &TOOL_SEARCH,
    &CALL_TOOL,
];

/// The tools that act on the background processes `shell` starts: a
/// definition or phase that has `shell` has them, one without it has not.
pub const PROCESS_TOOLS: [&str; 3] =
    [names::PROCESS_OUTPUT, names::PROCESS_WRITE, names::PROCESS_STOP];

/// The tools offered in place of deferred tools (`agent::deferred`): they
/// go with the tools they stand for, so no phase lists them and no agent
/// definition names them (naming the tools, an MCP server, is enough).
pub const DEFERRAL_TOOLS: [&str; 2] = [names::TOOL_SEARCH, names::CALL_TOOL];

/// The built-in tools kept out of the request (issue 32: the first request
/// stays under 16 kB), each with the few words `tool_search`'s description
/// names it by: reached through `tool_search`/`call_tool` like deferred MCP
/// tools, and judged, hooked and logged by their own names. Rarely used:
/// `list_dir` (`glob` and `ls` do as well), the background-process
/// tools (the `shell` result of a `background` start names them),
/// `web_fetch`, `set_phase` (calls move the workflow on by themselves) and
/// `ask_user`.
pub const DEFERRED_BUILTINS: [(&str, &str); 7] = [
    (names::LIST_DIR, "a directory's tree"),
    (names::PROCESS_OUTPUT, "a background process's new output"),
    (names::PROCESS_WRITE, "its stdin"),
    (names::PROCESS_STOP, "stop it"),
    (names::WEB_FETCH, "read a web page"),
    (names::SET_PHASE, "move the workflow back"),
    (names::ASK_USER, "ask the user"),
];

/// The built-in tool called `name` (keel's name), if there is one.
pub fn builtin(name: &str) -> Option<&'static ToolInfo> {
    BUILTIN.into_iter().find(|info| info.name == name)
}

/// The built-in tool Claude Code calls `name` (any of its Claude names).
pub fn by_claude_name(name: &str) -> Option<&'static ToolInfo> {
    BUILTIN.into_iter().find(|info| info.claude.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claude Code's documented tool names (its settings' matchers, agent
    /// files' `tools`), and keel's tool for each, if keel has one.
    #[test]
    fn claude_code_names_map_to_keels_tools() {
        let documented = [
            ("Read", Some("read_file")),
            ("Write", Some("write_file")),
            ("Edit", Some("edit_file")),
            ("MultiEdit", Some("edit_file")),
            ("Bash", Some("shell")),
            ("BashOutput", Some("process_output")),
            ("KillShell", Some("process_stop")),
            ("KillBash", Some("process_stop")),
            ("Grep", Some("grep")),
            ("Glob", Some("glob")),
            ("LS", Some("list_dir")),
            ("TodoWrite", Some("todo_write")),
            ("Task", Some("agent")),
            ("Agent", Some("agent")),
            ("Skill", Some("load_skill")),
            ("WebFetch", Some("web_fetch")),
            ("WebSearch", None),
            ("NotebookEdit", None),
            ("NotebookRead", None),
            ("ExitPlanMode", Some("submit_plan")),
            ("AskUserQuestion", Some("ask_user")),
        ];
        for (claude, keel) in documented {
            assert_eq!(by_claude_name(claude).map(|info| info.name), keel, "{claude}");
        }
        assert_eq!(builtin("edit_file").and_then(ToolInfo::claude_name), Some("Edit"));
        assert_eq!(builtin("agent").and_then(ToolInfo::claude_name), Some("Task"));
        assert_eq!(builtin("apply_patch").and_then(ToolInfo::claude_name), None);
    }

    #[test]
    fn names_are_unique_and_mutating_tools_are_writes_or_shell() {
        for (at, info) in BUILTIN.iter().enumerate() {
            assert!(BUILTIN[..at].iter().all(|other| other.name != info.name), "{}", info.name);
            if info.mutates() {
                assert!(matches!(info.kind, ToolKind::Write | ToolKind::Shell), "{}", info.name);
            } else {
                assert!(!matches!(info.kind, ToolKind::Write | ToolKind::Shell), "{}", info.name);
            }
        }
    }

    #[test]
    fn named_paths_reads_single_and_listed_paths() {
        const MULTI: ToolInfo = info(
            "read_many",
            ToolKind::Read,
            ReadOnly,
            &[],
            &[PathArg::new("paths", Operand::Files, Read)],
        );
        let args = serde_json::json!({"paths": ["a.txt", ".env", 3]});
        let found: Vec<_> = MULTI.named_paths(&args).into_iter().map(|(p, _)| p).collect();
        assert_eq!(found, ["a.txt", ".env"]);
        let args = serde_json::json!({"path": "src", "glob": "*.rs"});
        let found: Vec<_> =
            GREP.named_paths(&args).into_iter().map(|(p, a)| (p, a.access)).collect();
        assert_eq!(found, [("src", Read)]);
        assert_eq!(SHELL.operand(Operand::Script), Some("command"));
    }
}
