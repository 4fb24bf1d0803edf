//! Agent types for the `agent` tool (subagents): keel's built-in ones
//! (`explore`, `review`, `verify`, compiled in from `agents/*.md`) and
//! custom ones from markdown files in Claude Code's format (front matter
//! `name`, `description`, `tools`, `model`, `permissionMode`; the body is
//! the system prompt), so existing `.claude/agents/*.md` work unchanged.
//!
//! Roots, lowest precedence first (a later file replaces an earlier type
//! of the same name; a project's file never replaces a built-in one: one
//! naming `explore`, `review` or `verify` is loaded as `project:NAME`, so
//! the read-only built-in `review` stays what the name means; the user's
//! own file may replace it, and either is said in a warning): built-in,
//! `~/.claude/agents`, `$KEEL_HOME/agents`,
//! then the project's `.claude/agents` and `.keel/agents`, which load only
//! once the project is trusted (`keel trust`); before that they are listed
//! as skipped, never read.
//!
//! Invariants: a broken file is reported with its path and never stops
//! the others; Claude Code's tool names map to keel's (`Read` →
//! `read_file`, `Bash` → `shell`, …) and tools keel does not have are
//! dropped and said; `disallowedTools` is taken out of whatever `tools`
//! gives (a file that relies on it to withhold writes gets no writes:
//! withholding Claude's `Write` or `Edit` withholds keel's `apply_patch`); a
//! type is read-only when its `permissionMode` is `plan` or every tool it
//! may use only reads (an MCP tool never counts as only reading: the file
//! cannot know), and then runs in the read-only `explore` mode whatever the
//! parent's mode. MCP tools keep their names; `mcp__server` and
//! `mcp__server__*` name all of a server's tools, as in Claude Code. No other field widens anything: Claude's
//! `permissionMode: bypassPermissions`/`acceptEdits` are ignored (a child
//! never exceeds its parent's mode).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::plan::{ToolKind, tool_kind};

use super::markdown_file::{
    DefinitionError, DefinitionProblem, MarkdownFile, grouped, markdown_files, valid_name,
};

/// Built-in types: (name, definition text).
pub const BUILT_IN_AGENTS: [(&str, &str); 3] = [
    ("explore", include_str!("../../agents/explore.md")),
    ("review", include_str!("../../agents/review.md")),
    ("verify", include_str!("../../agents/verify.md")),
];

/// Which model a type runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentModel {
    /// The parent's model (`inherit`, absent).
    Inherit,
    /// `[agents] fast_model` when set, else the parent's (`fast`).
    Fast,
    /// This model, where the session's provider serves it
    /// (`llm::ModelChoice`; the runtime decides): Claude's `sonnet`/`opus`
    /// elsewhere are the parent's model, `haiku` the fast one, any other
    /// foreign name the parent's with a warning.
    Named(String),
}

/// Where a type was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    BuiltIn,
    File(PathBuf),
}

/// One agent type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDefinition {
    pub name: String,
    /// When to use it: listed in the `agent` tool's description.
    pub description: String,
    /// keel tool names it may use, in order; `None`: every tool the parent
    /// session offers (a file without `tools`).
    pub tools: Option<Vec<String>>,
    /// keel tool names it may never use (`disallowedTools`), whatever
    /// `tools` says.
    pub disallowed: Vec<String>,
    pub model: AgentModel,
    /// Runs in the read-only `explore` mode; its `agent` calls may run
    /// side by side with other reads.
    pub read_only: bool,
    /// Its system prompt.
    pub prompt: String,
    pub source: AgentSource,
    /// Tools the file named that keel does not have (dropped).
    pub unknown_tools: Vec<String>,
}

/// Every type found, and what was not loaded.
#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    /// Sorted by name.
    pub agents: Vec<AgentDefinition>,
    pub problems: Vec<DefinitionProblem>,
    /// Project files not read because the project is not trusted.
    pub skipped: Vec<PathBuf>,
    /// Files that named a built-in type: (file, the name it was given).
    pub renamed: Vec<(PathBuf, String)>,
}

impl AgentDefinition {
    /// Whether the type may use `tool` (before the session's own limits).
    pub fn may_use(&self, tool: &str) -> bool {
        // The two edit tools are one power: a session offers the one its
        // model is trained on (`[tools] edit`), so a type listing either
        // (Claude's `Edit` is `edit_file`) edits with the one offered.
        let listed = |name: &str| {
            self.tools.as_ref().is_none_or(|tools| tools.iter().any(|t| entry_names(t, name)))
        };
        let edit_tool = EDIT_TOOLS.contains(&tool);
        let allowed = listed(tool)
            || (edit_tool && EDIT_TOOLS.into_iter().any(listed))
            || (PROCESS_TOOLS.contains(&tool) && listed(names::SHELL));
        allowed && !self.disallowed.iter().any(|t| entry_names(t, tool))
    }

    /// The MCP names (or server patterns) its `tools` list gives.
    pub fn listed_mcp(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().flatten().map(String::as_str).filter(|tool| tool.starts_with(MCP_PREFIX))
    }
}

use super::EDIT_TOOLS;
use crate::protocol::tool_facts::{self, PROCESS_TOOLS, names};
use crate::protocol::{HarnessTool, MCP_PREFIX, ToolInfo, entry_names};

/// Whether a type using `tool` stays read-only: a keel tool that only
/// reads. An MCP tool never counts (whether it writes depends on a server
/// the definition cannot see), so a type listing one is read-only only
/// by `permissionMode: plan`, and then is offered only the MCP tools the
/// user trusts as reads.
pub fn only_reads(tool: &str) -> bool {
    !tool.starts_with(MCP_PREFIX) && tool_kind(tool) == ToolKind::Read
}

impl AgentCatalog {
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|agent| agent.name == name)
    }

    /// What the session should tell the user about loading, every line:
    /// broken files, unknown tools, renamed types, untrusted project files
    /// left out.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = self.problem_lines();
        warnings.extend(self.unknown_tool_lines());
        warnings.extend(self.renamed_lines());
        if !self.skipped.is_empty() {
            warnings.push(skipped_warning("agent definition", &self.skipped));
        }
        warnings
    }

    /// The same, one line per kind once a kind has more than three
    /// ([`grouped`]): what a start shows.
    pub fn warning_summary(&self) -> Vec<String> {
        let mut warnings = grouped("agent files not loaded", self.problem_lines());
        let lacking: Vec<&AgentDefinition> =
            self.agents.iter().filter(|agent| !agent.unknown_tools.is_empty()).collect();
        if lacking.len() > 3 {
            let mut tools: Vec<&str> =
                lacking.iter().flat_map(|a| &a.unknown_tools).map(String::as_str).collect();
            tools.sort_unstable();
            tools.dedup();
            let names: Vec<&str> = lacking.iter().take(3).map(|a| a.name.as_str()).collect();
            warnings.push(format!(
                "{} agent types run without tools keel does not have ({}): {} and {} more; \
                 `keel debug prompt` lists each",
                lacking.len(),
                tools.join(", "),
                names.join(", "),
                lacking.len() - 3
            ));
        } else {
            warnings.extend(self.unknown_tool_lines());
        }
        warnings.extend(self.renamed_lines());
        if !self.skipped.is_empty() {
            warnings.push(skipped_warning("agent definition", &self.skipped));
        }
        warnings
    }

    fn problem_lines(&self) -> Vec<String> {
        self.problems
            .iter()
            .map(|p| format!("agent {} not loaded: {}", p.path.display(), p.error))
            .collect()
    }

    fn unknown_tool_lines(&self) -> Vec<String> {
        self.agents
            .iter()
            .filter(|agent| !agent.unknown_tools.is_empty())
            .map(|agent| {
                format!(
                    "agent `{}`: keel has no {} tool(s); the type runs without them",
                    agent.name,
                    agent.unknown_tools.join(", ")
                )
            })
            .collect()
    }

    fn renamed_lines(&self) -> Vec<String> {
        self.renamed
            .iter()
            .map(|(path, name)| match name.split_once(':') {
                Some((_, builtin)) => format!(
                    "agent {} names the built-in type `{builtin}`: the built-in keeps the name; \
                     this one is `{name}`",
                    path.display()
                ),
                None => format!(
                    "agent {} replaces the built-in type `{name}` (your own file)",
                    path.display()
                ),
            })
            .collect()
    }
}

/// "N project X(s) not loaded until trust", naming the first few.
pub(super) fn skipped_warning(what: &str, skipped: &[PathBuf]) -> String {
    let names: Vec<String> = skipped.iter().take(3).map(|p| p.display().to_string()).collect();
    let more =
        if skipped.len() > 3 { format!(" and {} more", skipped.len() - 3) } else { "".into() };
    format!(
        "{} project {what}(s) not loaded until you trust this project (`keel trust`): {}{more}",
        skipped.len(),
        names.join(", ")
    )
}

/// Where agent types are looked for, lowest precedence first; the flag
/// says whether the folder belongs to the project (needs trust).
pub fn agent_roots(home: &Path, keel_home: &Path, workspace_root: &Path) -> Vec<(PathBuf, bool)> {
    vec![
        (home.join(".claude").join("agents"), false),
        (keel_home.join("agents"), false),
        (workspace_root.join(".claude").join("agents"), true),
        (workspace_root.join(".keel").join("agents"), true),
    ]
}

/// Loads the built-in types, then every root's `*.md` (one level of
/// subfolders, as Claude Code allows); project roots only when trusted.
pub fn discover_agents(roots: &[(PathBuf, bool)], project_trusted: bool) -> AgentCatalog {
    let mut by_name: BTreeMap<String, AgentDefinition> = BTreeMap::new();
    let mut catalog = AgentCatalog::default();
    for (name, text) in BUILT_IN_AGENTS {
        if let Ok(file) = MarkdownFile::parse(text) {
            if let Ok(agent) = definition(&file, AgentSource::BuiltIn) {
                by_name.insert(name.to_owned(), agent);
            }
        }
    }
    for (root, project) in roots {
        let files = markdown_files(root, 1);
        if *project && !project_trusted {
            catalog.skipped.extend(files);
            continue;
        }
        for path in files {
            let loaded = MarkdownFile::read(&path)
                .and_then(|file| definition(&file, AgentSource::File(path.clone())));
            match loaded {
                Ok(mut agent) => {
                    if BUILT_IN_AGENTS.iter().any(|(builtin, _)| *builtin == agent.name) {
                        if *project {
                            agent.name = format!("project:{}", agent.name);
                        }
                        catalog.renamed.push((path.clone(), agent.name.clone()));
                    }
                    by_name.insert(agent.name.clone(), agent);
                }
                Err(error) => catalog.problems.push(DefinitionProblem { path, error }),
            }
        }
    }
    catalog.agents = by_name.into_values().collect();
    catalog
}

/// One type from its parsed file.
pub fn definition(
    file: &MarkdownFile,
    source: AgentSource,
) -> Result<AgentDefinition, DefinitionError> {
    let name = file.text("name").ok_or(DefinitionError::Missing { field: "name" })?;
    if !valid_name(&name) {
        return Err(DefinitionError::BadName { name });
    }
    let description =
        file.text("description").ok_or(DefinitionError::Missing { field: "description" })?;
    let mut unknown_tools = Vec::new();
    let tools = file.list("tools").map(|listed| keel_tools(listed, &mut unknown_tools));
    // A tool keel lacks is withheld anyway: nothing to say about it.
    let mut disallowed = file
        .list("disallowedTools")
        .map(|listed| keel_tools(listed, &mut Vec::new()))
        .unwrap_or_default();
    // `apply_patch` (keel's, unknown to Claude Code) both creates and edits
    // files: a file withholding either power withholds it too.
    if disallowed.iter().any(|tool| tool == names::WRITE_FILE || tool == names::EDIT_FILE)
        && !disallowed.iter().any(|tool| tool == names::APPLY_PATCH)
    {
        disallowed.push(names::APPLY_PATCH.to_owned());
    }
    // The background-process tools act on what `shell` started: they go
    // with it.
    if disallowed.iter().any(|tool| tool == names::SHELL) {
        for tool in PROCESS_TOOLS {
            if !disallowed.iter().any(|known| known == tool) {
                disallowed.push(tool.to_owned());
            }
        }
    }
    let plan_mode = file.text("permissionMode").is_some_and(|mode| mode == "plan");
    // Without a `tools` list the type may use every tool keel has (the
    // session may offer fewer), less the disallowed ones.
    let may_use: Vec<&str> = match &tools {
        Some(tools) => tools.iter().map(String::as_str).collect(),
        None => definable_tools().map(|info| info.name).collect(),
    };
    let reads_only = may_use
        .iter()
        .filter(|tool| !disallowed.iter().any(|d| d == *tool))
        .all(|tool| only_reads(tool));
    let model = match file.model()?.as_deref() {
        None | Some("inherit") => AgentModel::Inherit,
        Some("fast") => AgentModel::Fast,
        Some(other) => AgentModel::Named(other.to_owned()),
    };
    Ok(AgentDefinition {
        name,
        description,
        tools,
        disallowed,
        model,
        read_only: plan_mode || reads_only,
        prompt: file.body.trim().to_owned(),
        source,
        unknown_tools,
    })
}

/// The tools a definition may name (by keel's name or Claude Code's):
/// the built-in tools the runtime runs, not the loop's own (`todo_write`,
/// …), which every session has, nor `agent`, named apart (`Task`).
pub fn definable_tools() -> impl Iterator<Item = &'static ToolInfo> {
    tool_facts::BUILTIN
        .into_iter()
        .filter(|info| HarnessTool::parse(info.name).is_none() && info.name != names::AGENT)
        .filter(|info| !tool_facts::DEFERRAL_TOOLS.contains(&info.name))
}

/// keel's names for the listed tools, in order, once each; the names keel
/// does not have go to `unknown`.
fn keel_tools(listed: Vec<String>, unknown: &mut Vec<String>) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for item in listed {
        match keel_tool_name(&item) {
            Some(tool) if !tools.iter().any(|known| known == tool) => tools.push(tool.to_owned()),
            Some(_) => {}
            None => unknown.push(item),
        }
    }
    tools
}

/// keel's name for a tool named in a definition: keel's own names as they
/// are, Claude Code's mapped, a `Tool(pattern)` by its tool; `None` for
/// tools keel does not have. MCP tools (`mcp__server__tool`, or a whole
/// server: `mcp__server`, `mcp__server__*`) keep their names: a child is
/// offered those of the parent's MCP tools they name (`runtime::subagent::mcp`).
pub fn keel_tool_name(item: &str) -> Option<&str> {
    let tool = item.split_once('(').map_or(item, |(tool, _)| tool).trim();
    if tool.starts_with(MCP_PREFIX) {
        return Some(tool);
    }
    let known =
        |info: &&ToolInfo| info.name == names::AGENT || definable_tools().any(|d| d == *info);
    let info = tool_facts::builtin(tool).or_else(|| tool_facts::by_claude_name(tool));
    let mapped = info.filter(known)?.name;
    Some(mapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn built_in_types_are_valid() {
        let catalog = discover_agents(&[], false);
        let names: Vec<&str> = catalog.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["explore", "review", "verify"]);
        let explore = catalog.get("explore").unwrap();
        assert!(explore.read_only && explore.model == AgentModel::Fast);
        assert!(catalog.get("review").unwrap().read_only);
        let verify = catalog.get("verify").unwrap();
        assert!(!verify.read_only, "verify runs the project's checks");
        assert!(!verify.tools.as_ref().unwrap().iter().any(|t| t == "edit_file"));
        assert!(catalog.problems.is_empty() && catalog.warnings().is_empty());
    }

    #[test]
    fn a_claude_definition_maps_its_tools_and_says_what_keel_lacks() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "agents/x.md",
            "---\nname: x\ndescription: Finds things\ntools: Read, Grep, WebFetch, WebSearch, Bash(git log:*)\n\
             model: sonnet\n---\nYou find things.\n",
        );
        let catalog = discover_agents(&[(dir.path().join("agents"), false)], false);
        let x = catalog.get("x").unwrap();
        assert_eq!(x.tools.as_deref().unwrap(), ["read_file", "grep", "web_fetch", "shell"]);
        assert_eq!(x.unknown_tools, ["WebSearch"]);
        assert_eq!(x.model, AgentModel::Named("sonnet".into()), "the provider decides");
        assert!(!x.read_only, "Bash can write");
        assert_eq!(x.prompt, "You find things.");
        assert!(catalog.warnings()[0].contains("WebSearch"), "{:?}", catalog.warnings());
    }

    /// wshobson/agents' `ship-mate/review.md` (a writer named `review`)
    /// no longer replaces the read-only built-in; 40 types lacking
    /// WebSearch are one line at start, not 40.
    #[test]
    fn a_file_naming_a_built_in_is_renamed_and_many_warnings_are_one_line() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "agents/ship-mate/review.md",
            include_str!("../../tests/fixtures/claude/agents/ship-mate-review.md"),
        );
        for i in 0..40 {
            write(
                dir.path(),
                &format!("agents/r{i}.md"),
                &format!(
                    "---\nname: r{i}\ndescription: d\ntools: Read, WebFetch, WebSearch\n---\n"
                ),
            );
        }
        let catalog = discover_agents(&[(dir.path().join("agents"), true)], true);
        assert!(catalog.get("review").unwrap().read_only, "the built-in stays");
        assert_eq!(catalog.get("review").unwrap().source, AgentSource::BuiltIn);
        assert!(catalog.get("project:review").is_some(), "the file's type is reachable");
        let summary = catalog.warning_summary();
        assert_eq!(summary.len(), 2, "{summary:?}");
        assert!(
            summary[0].starts_with(
                "40 agent types run without tools keel does not have \
            (WebSearch): r0, r1, r10 and 37 more"
            ),
            "{summary:?}"
        );
        assert!(summary[1].contains("names the built-in type `review`"), "{summary:?}");
        assert!(summary[1].contains("this one is `project:review`"), "{summary:?}");
        assert_eq!(catalog.warnings().len(), 41, "every line on request");
    }

    #[test]
    fn reading_tools_only_make_a_read_only_type_and_no_tools_means_all() {
        let file = MarkdownFile::parse("---\nname: r\ndescription: d\ntools: [Read, Glob]\n---\n")
            .unwrap();
        assert!(definition(&file, AgentSource::BuiltIn).unwrap().read_only);
        let file = MarkdownFile::parse("---\nname: w\ndescription: d\n---\n").unwrap();
        let all = definition(&file, AgentSource::BuiltIn).unwrap();
        assert_eq!((all.tools, all.read_only), (None, false));
    }

    #[test]
    fn disallowed_tools_are_withheld_and_can_make_a_type_read_only() {
        let parse = |text: &str| {
            definition(&MarkdownFile::parse(text).unwrap(), AgentSource::BuiltIn).unwrap()
        };
        // Claude Code's "everything except writes": no `tools`, a denylist.
        let reader = parse(
            "---\nname: r\ndescription: d\ndisallowedTools: Write, Edit, MultiEdit, Bash\n---\n",
        );
        assert_eq!(reader.tools, None);
        assert!(reader.read_only, "every tool left only reads");
        for tool in ["write_file", "edit_file", "apply_patch", "shell", "process_write"] {
            assert!(!reader.may_use(tool), "{tool}");
        }
        assert!(reader.may_use("read_file") && reader.may_use("grep"));
        // With a list, the denylist is taken out of it.
        let listed = parse(
            "---\nname: l\ndescription: d\ntools: Read, Bash\ndisallowedTools: [Bash]\n---\n",
        );
        assert!(listed.read_only && !listed.may_use("shell") && listed.may_use("read_file"));
        assert!(!listed.may_use("process_output"), "the process tools go with shell");
        // A type that may run commands may poll and stop the background ones.
        let runner = parse("---\nname: b\ndescription: d\ntools: Read, Bash\n---\n");
        assert!(runner.may_use("process_output") && runner.may_use("process_stop"));
        // Withholding some writes leaves a writer.
        let writer = parse("---\nname: w\ndescription: d\ndisallowedTools: Bash\n---\n");
        assert!(!writer.read_only && writer.may_use("write_file") && !writer.may_use("shell"));
        // The edit tools are one power: a type listing Claude's Edit edits
        // with apply_patch where that is the tool offered.
        let editor = parse("---\nname: e\ndescription: d\ntools: Read, Edit\n---\n");
        assert!(editor.may_use("edit_file") && editor.may_use("apply_patch"));
        assert!(!editor.may_use("write_file") && !editor.may_use("shell"));
        // keel's apply_patch goes with either of Claude's file writers.
        let no_edit = parse("---\nname: e\ndescription: d\ndisallowedTools: Edit\n---\n");
        assert!(!no_edit.may_use("apply_patch") && no_edit.may_use("write_file"));
    }

    #[test]
    fn an_mcp_entry_names_its_tool_or_a_whole_server() {
        for (listed, tool, named) in [
            ("mcp__gh__get", "mcp__gh__get", true),
            ("mcp__gh__get", "mcp__gh__get_all", false),
            ("mcp__gh", "mcp__gh__get", true),
            ("mcp__gh__*", "mcp__gh__get", true),
            ("mcp__g", "mcp__gh__get", false),
            ("mcp__gh", "mcp__gh__", false),
            ("mcp__gh__get", "mcp__gh__get__x", false),
            ("mcp__*", "mcp__gh__get", false),
            ("mcp__", "mcp____get", false),
            ("read_file", "read_file", true),
            ("shell", "mcp__shell__x", false),
        ] {
            assert_eq!(entry_names(listed, tool), named, "{listed} {tool}");
        }
    }

    #[test]
    fn a_model_with_control_characters_is_refused() {
        let text = "---\nname: x\ndescription: d\nmodel: \"m\\e[2J\"\n---\n";
        let error = definition(&MarkdownFile::parse(text).unwrap(), AgentSource::BuiltIn);
        assert!(matches!(error, Err(DefinitionError::BadModel { .. })), "{error:?}");
    }

    #[test]
    fn no_front_matter_field_widens_a_type() {
        for mode in ["bypassPermissions", "acceptEdits", "dontAsk", "default", "auto"] {
            let text =
                format!("---\nname: x\ndescription: d\ntools: Read\npermissionMode: {mode}\n---\n");
            let x = definition(&MarkdownFile::parse(&text).unwrap(), AgentSource::BuiltIn).unwrap();
            assert!(x.read_only, "{mode}: its tools still only read");
            assert_eq!(x.tools.as_deref().unwrap(), ["read_file"], "{mode}");
        }
    }

    #[test]
    fn untrusted_project_types_are_skipped_unread_and_later_roots_win() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        let project = dir.path().join("project");
        write(&user, "explore.md", "---\nname: explore\ndescription: mine\n---\nMine.");
        write(&project, "explore.md", "---\nname: explore\ndescription: theirs\n---\nTheirs.");
        write(&project, "broken.md", "---\nname: Broken One\ndescription: d\n---\n");
        let roots = [(user.clone(), false), (project.clone(), true)];
        let untrusted = discover_agents(&roots, false);
        assert_eq!(untrusted.get("explore").unwrap().description, "mine");
        assert_eq!(untrusted.skipped.len(), 2);
        assert!(untrusted.problems.is_empty(), "skipped files are never read");
        assert!(untrusted.warnings().iter().any(|w| w.contains("keel trust")));
        let trusted = discover_agents(&roots, true);
        assert_eq!(trusted.get("explore").unwrap().description, "mine", "the user's own wins");
        assert_eq!(trusted.get("project:explore").unwrap().description, "theirs");
        assert_eq!(trusted.problems.len(), 1);
        assert!(matches!(trusted.problems[0].error, DefinitionError::BadName { .. }));
    }
}
