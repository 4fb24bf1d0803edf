//! The command line: flags, subcommands and their dispatch, one file per
//! subcommand. The one place besides `main.rs` that uses `anyhow`: every
//! command ends with an [`ExitStatus`] or a [`CliError`], whose kind picks
//! the documented exit code (`error.rs`, `crate::exit`).
//!
//! Files: one per subcommand (`*_cmd.rs`); `parse_or_exit` writes a `result` line for `exec --json`
//! usage errors clap catches; `error.rs` (`CliError` and its kinds → exit codes). The codes
//! themselves (`ExitStatus`: 3 `needs_approval`, 4 `budget_exceeded`, 5 `stuck`, 128 + the signal's
//! number) and the signal watcher are in `crate::exit`, shared by the front ends.

mod acp_cmd;
mod apply_patch_cmd;
mod attach_cmd;
mod completion_cmd;
mod cost_cmd;
mod debug_cmd;
mod demo_cmd;
mod doctor;
mod doctor_setup;
mod error;
mod exec_cmd;
mod export_cmd;
mod fork_cmd;
mod mcp_cmd;
mod mcp_server_cmd;
mod plugin_cmd;
mod policy_cmd;
mod replay_cmd;
mod resume_cmd;
mod sandbox_cmd;
mod sessions_cmd;
mod stats_cmd;
mod tool_cmd;
mod tui_cmd;
mod undo_cmd;

use std::path::PathBuf;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand};

pub use self::error::{CliError, Context, ErrorKind, error_text};
pub use self::sandbox_cmd::jail_main;
use crate::config::CliOverrides;
pub use crate::exit::ExitStatus;

const EXIT_CODES: &str = "Exit codes:\n  0    done\n  1    the model or the turn failed \
(model error after retries, step limit, log write failure), the session is in use by \
another keel process, the interactive session could not start, or an undo failed\n  2    usage \
or configuration error\n  3    needs approval: calls the model wanted were declined (keel exec \
cannot ask; rerun with the flag it names)\n  4    budget_exceeded: the next request would have \
crossed --max-cost/--max-tokens\n  5    stuck: the model kept repeating a call after keel \
pointed it out\n  129  stopped by SIGHUP (the terminal closed)\n  130  interrupted (Ctrl-C, \
SIGINT)\n  131  stopped by SIGQUIT\n  143  stopped by SIGTERM\nA stopping signal ends the turn \
cleanly (the running command is killed, the session log closed); a second one exits at once.";

/// keel: a terminal coding agent.
///
/// With no subcommand keel opens an interactive session in the current
/// folder; `keel "PROMPT"` opens one and sends PROMPT first.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Work in DIR instead of the current folder.
    #[arg(short = 'C', long = "cd", global = true, value_name = "DIR")]
    pub cd: Option<PathBuf>,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// A first prompt for the interactive session.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How to reach a model; accepted by every command.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// Wire protocol: openai (Responses API), openai-chat (Chat Completions:
    /// Ollama, vLLM, LM Studio, OpenRouter…), anthropic (Messages API).
    #[arg(long, global = true, value_parser = ["openai", "openai-chat", "anthropic"])]
    pub provider: Option<String>,
    /// Base URL of the API, including the version segment (e.g. http://127.0.0.1:11434/v1).
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name.
    #[arg(long, short = 'm', global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// Override a config key for this run, e.g. -c max_steps=50 (repeatable).
    #[arg(short = 'c', long = "config", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Spend at most USD US dollars in this session (every turn, every
    /// resume), at the model's prices; a request that would cross it is
    /// not sent. Wins over [limits] and over a resumed session's limit.
    #[arg(long, global = true, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Use at most N tokens (input + output, cache reads included) in this
    /// session, like --max-cost.
    #[arg(long, global = true, value_name = "N")]
    pub max_tokens: Option<u64>,
}

/// `keel mcp-server`.
#[derive(Debug, Args)]
pub struct McpServerArgs {
    #[command(flatten)]
    pub mode: ModeArgs,
}

/// `keel acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    #[command(flatten)]
    pub mode: ModeArgs,
}

/// The approval mode to start in (`keel`, `keel resume`, `keel exec`,
/// `keel mcp-server`).
#[derive(Debug, Clone, Default, Args)]
pub struct ModeArgs {
    /// Let workspace writes and sandboxed commands run without asking
    /// (same as --mode auto).
    #[arg(long, conflicts_with_all = ["yolo", "mode"])]
    pub full_auto: bool,
    /// Let everything but hard-denied commands run without asking (same
    /// as --mode yolo).
    #[arg(long, conflicts_with = "mode")]
    pub yolo: bool,
    /// Approval mode: ask (default, or `default_mode` in config.toml),
    /// auto, plan, explore (read-only), yolo.
    #[arg(long, value_parser = ["ask", "auto", "plan", "explore", "yolo"])]
    pub mode: Option<String>,
}

impl ModeArgs {
    /// The mode the flags ask for; `None` when no flag was given.
    pub fn approval(&self) -> Option<crate::policy::ApprovalMode> {
        use crate::policy::ApprovalMode;
        match (self.full_auto, self.yolo, self.mode.as_deref()) {
            (_, true, _) => Some(ApprovalMode::Yolo),
            (true, false, _) => Some(ApprovalMode::Auto),
            // clap's value parser admits only the modes' names.
            (false, false, Some(mode)) => ApprovalMode::parse(mode),
            (false, false, None) => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless: progress on stderr, the answer on stdout.
    Exec(ExecArgs),
    /// Run one tool directly (judged by policy, shell commands sandboxed) and
    /// print its result envelope as JSON.
    Tool(ToolArgs),
    /// Apply a Codex-format patch (*** Begin Patch …) in the current folder.
    ApplyPatch(ApplyPatchArgs),
    /// List recorded sessions, newest first.
    Sessions(SessionsArgs),
    /// What a session's spend went on: by part (prefix, history, each tool
    /// and MCP server, subagents, compaction) and by request.
    Cost(CostArgs),
    /// Usage across sessions: tokens, cost, cache hits, tool calls and
    /// failures, per model and per project.
    Stats(StatsArgs),
    /// Continue a session interactively: its id (a unique prefix is
    /// enough), --last, or neither to pick one of this folder's sessions.
    Resume(ResumeArgs),
    /// Open another terminal on a live session: its transcript, then what
    /// happens; answer its approvals (y/n) and queue prompts. A session no
    /// keel runs now is resumed instead.
    Attach(AttachArgs),
    /// Restore the files as they were before the last turn(s) that changed
    /// them (the newest session of this folder); recorded in its log.
    Undo(UndoArgs),
    /// Start a new session as a copy of another (before its prompt N with
    /// --at, else all of it) and print the new id; `keel resume ID` or
    /// `keel exec resume ID PROMPT` goes on in it.
    Fork(ForkArgs),
    /// Write a session's transcript as Markdown, HTML or JSON, secrets
    /// masked: `keel export ID --format html -o session.html`.
    Export(ExportArgs),
    /// Re-run a recorded session offline (no model): its tool calls run again
    /// in a temporary copy of the workspace and differing results are reported.
    Replay(ReplayArgs),
    /// Watch keel fix a typo in a tiny bundled repository: a recorded session
    /// replayed offline, no API key needed.
    Demo,
    /// Inspect the command policy (rules files, decisions).
    Policy(policy_cmd::PolicyArgs),
    /// Trust the current project: its rules' allows and its config apply.
    Trust,
    /// Print a shell completion script: `keel completion bash > ~/.local/share/bash-completion/completions/keel`.
    Completion {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Show what keel would send: `keel debug prompt [PROMPT]` prints the
    /// first request for this project and provider.
    Debug(debug_cmd::DebugArgs),
    /// Ask the configured server what it does (models, context window,
    /// tool calls, usage, streaming) and say what keel will do about each:
    /// `keel doctor --provider openai-chat --base-url http://127.0.0.1:8080/v1`.
    Doctor(doctor::DoctorArgs),
    /// MCP servers: list (with status and tools), get, add, remove.
    Mcp(mcp_cmd::McpArgs),
    /// Serve keel itself over MCP (stdio): one tool, `keel`, that runs a
    /// task headless in this folder (or one inside it) and returns the
    /// result, so other agents can use keel. The mode is set here, never by
    /// the calling agent; what needs approval is declined and listed.
    McpServer(McpServerArgs),
    /// Claude Code plugins: add (a folder or git URL), list, remove.
    Plugin(plugin_cmd::PluginArgs),
    /// Serve keel as an Agent Client Protocol agent on stdio, for editors
    /// (Zed, JetBrains, Neovim): sessions, streamed output, tool calls with
    /// diffs, keel's approvals asked in the editor, keel's modes.
    Acp(AcpArgs),
    /// Internal: apply the landlock sandbox to itself, then run a command.
    #[command(hide = true)]
    SandboxExec(sandbox_cmd::SandboxExecArgs),
}

#[derive(Debug, Args)]
pub struct ApplyPatchArgs {
    /// The patch text; `-` or nothing reads it from stdin.
    pub patch: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The session log (a path, or a session id prefix).
    pub log: String,
    /// Run the tools in the workspace itself instead of a temporary copy.
    #[arg(long)]
    pub in_place: bool,
    /// Keep the temporary copy and print where it is.
    #[arg(long, conflicts_with = "in_place")]
    pub keep: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The session id (a unique prefix is enough) or log path.
    pub id: String,
    /// md, html, json (schema: docs/export.schema.json) or atif (Harbor's
    /// Agent Trajectory Interchange Format, v1.7).
    #[arg(long, default_value = "md", value_parser = ["md", "markdown", "html", "json", "atif"])]
    pub format: String,
    /// Write to FILE (created 0600) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AttachArgs {
    /// The session id (a unique prefix is enough).
    pub id: String,
    /// The mode to resume in when no keel runs the session.
    #[command(flatten)]
    pub mode: ModeArgs,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session id (a unique prefix is enough) or log path.
    #[arg(conflicts_with = "last")]
    pub id: Option<String>,
    /// The newest session started in this folder.
    #[arg(long)]
    pub last: bool,
    /// Switch the resumed session to this mode (else it keeps its own).
    #[command(flatten)]
    pub mode: ModeArgs,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// How many file-changing turns to undo.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub turns: usize,
    /// The session (id prefix); default: the newest of this folder.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// The session id (a unique prefix is enough) or log path.
    pub id: String,
    /// Print the ledger as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Only sessions started on or after this day (`YYYY-MM-DD`).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The session to copy (a unique id prefix, or its log path).
    pub id: String,
    /// Copy the conversation before prompt N (1 is the first).
    #[arg(long, value_name = "N")]
    pub at: Option<u32>,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print a JSON array (every session) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also list empty sessions (opened and left without a prompt).
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task; `-` reads it from stdin. Optional when resuming.
    #[arg(required_unless_present_any = ["resume", "last", "input_stream"])]
    pub prompt: Option<String>,
    /// `keel exec resume [--last|ID] [PROMPT]`: the words after `resume`.
    #[arg(hide = true, trailing_var_arg = false)]
    pub rest: Vec<String>,
    /// Continue the session with this id (a unique prefix is enough) or log
    /// path: a turn a crash cut off is finished first, then PROMPT is run.
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub resume: Option<String>,
    /// Continue the newest session started in this folder.
    #[arg(long)]
    pub last: bool,
    /// With `resume ID`: first take the session back to before its prompt
    /// N (1 is the first; `/rewind` in the TUI lists them); PROMPT is sent
    /// in its place.
    #[arg(long, value_name = "N", conflicts_with_all = ["undo_rewind", "fork"])]
    pub rewind_to: Option<u32>,
    /// What --rewind-to takes back: code (the files, shell commands'
    /// changes included), conversation, or both.
    #[arg(long, value_name = "SCOPE", default_value = "both",
          value_parser = ["code", "conversation", "both"])]
    pub rewind_scope: String,
    /// With `resume ID`: undo the session's last rewind (what it took back
    /// comes back).
    #[arg(long, conflicts_with = "fork")]
    pub undo_rewind: bool,
    /// Start a new session as a copy of session ID (a unique prefix is
    /// enough) and run PROMPT in it; the parent's log is left alone.
    #[arg(long, value_name = "ID", conflicts_with_all = ["resume", "last"])]
    pub fork: Option<String>,
    /// With --fork: copy the conversation before the parent's prompt N
    /// (else all of it).
    #[arg(long, value_name = "N", requires = "fork")]
    pub at: Option<u32>,
    /// Print one JSON event per line on stdout, ending with a `result` line.
    #[arg(long)]
    pub json: bool,
    /// Also write the last message to FILE.
    #[arg(short = 'o', long = "output-last-message", value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// The final answer must be JSON that validates against the JSON
    /// Schema in FILE; the model is asked again with what was wrong, then
    /// the run ends `schema_invalid` (exit 1).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    #[command(flatten)]
    pub mode: ModeArgs,
    /// Run commands without the landlock sandbox (full file access and
    /// network). Auto mode then asks before unknown commands.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Require a plan and stop once it is submitted: status `plan_ready`,
    /// the plan in `final_text`, exit 0.
    #[arg(long, conflicts_with = "approve_plan")]
    pub plan_only: bool,
    /// Require a plan and approve it within this run; with `resume ID`,
    /// approve the plan a `--plan-only` run left for review.
    #[arg(long)]
    pub approve_plan: bool,
    /// With `resume ID`: reject the plan left for review; the model reads
    /// FEEDBACK, stays in the plan phase and submits a revision, and the
    /// run stops again after it (as with `--plan-only`).
    #[arg(long, value_name = "FEEDBACK", conflicts_with_all = ["approve_plan", "plan_only"])]
    pub reject_plan: Option<String>,
    /// Attach an image (PNG, JPEG, GIF, WebP) to the prompt; repeatable;
    /// `-` reads one from stdin (`screenshot | keel exec --image - "…"`).
    /// Scaled down to fit the providers' limits. Refused (exit 2) when the
    /// model does not take images (`[provider] images = true` says it does).
    #[arg(long = "image", value_name = "FILE")]
    pub images: Vec<PathBuf>,

    /// Read more prompts from stdin while the run goes on, one JSON object
    /// per line: {"type":"user","text":"…","deliver":"queue"|"steer"}.
    /// `queue` (the default) runs the text as a turn of its own after the
    /// running one; `steer` delivers it into the running turn after its
    /// current tool batch. PROMPT is optional; the run ends when stdin is
    /// closed and no turn runs.
    #[arg(long)]
    pub input_stream: bool,
    /// Answer the model's questions (`ask_user`) from stdin, one line per
    /// question: a choice's number or text, or free text; a blank line or
    /// EOF leaves it unanswered. Each question is printed on stderr first.
    /// Without it nobody answers (the model decides or stops, the result
    /// lists the question). Not with --input-stream or a prompt from stdin.
    #[arg(long, conflicts_with = "input_stream")]
    pub answer_from_stdin: bool,
    /// Show the waiting indicator (time waited for the model, what is
    /// streaming) on stderr even when it is not a terminal; never with
    /// --json.
    #[arg(long)]
    pub progress: bool,
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// Tool name (read_file, list_dir, glob, grep, write_file, edit_file, apply_patch, shell).
    pub name: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
    /// Approval mode the call is judged in: ask, auto, plan, explore, yolo.
    #[arg(long, default_value = "ask")]
    pub mode: String,
    /// Run a call that needs approval (there is nobody to ask). Forbidden
    /// calls never run.
    #[arg(long)]
    pub yes: bool,
}

/// Parses the command line; exits on `--help`, `--version` and usage
/// errors, as clap does, except that `keel exec --json` still ends its
/// output with a `result` line (scripts always get one).
pub fn parse_or_exit() -> Cli {
    let error = match Cli::try_parse() {
        Ok(cli) => return cli,
        Err(error) => error,
    };
    let args: Vec<String> = std::env::args().collect();
    let is_usage_error = error.use_stderr();
    if is_usage_error && args.iter().any(|a| a == "exec") && args.iter().any(|a| a == "--json") {
        let line = crate::exec::ResultLine::usage_error(usage_error_line(&error.to_string()));
        crate::exec::write_result(&line);
    }
    error.exit()
}

/// A clap usage error as one line: its message up to the usage text that
/// follows it, including the lines that name what is wrong (clap puts the
/// missing arguments and its tips on lines of their own).
fn usage_error_line(text: &str) -> String {
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|line| !line.is_empty() && !line.starts_with("Usage:"))
        .collect();
    message.join(" ").trim_start_matches("error: ").to_owned()
}

/// Keeps `$KEEL_HOME` owner-only (`support::private_dir`); a failure is a
/// warning (the command may not need the folder at all).
fn secure_keel_home() {
    use std::io::Write;
    let Ok(env) = crate::config::Environment::from_process() else { return };
    let home = env.var("HOME").map(std::path::PathBuf::from);
    if let Err(error) = crate::support::private_dir::make_private(&env.keel_home, home.as_deref()) {
        let _ = writeln!(
            std::io::stderr().lock(),
            "keel: warning: cannot make {} private to you: {error}",
            env.keel_home.display()
        );
    }
}

/// Runs the parsed command line; returns the exit status.
pub async fn run(cli: Cli) -> Result<ExitStatus, CliError> {
    if let Some(dir) = &cli.cd {
        std::env::set_current_dir(dir).map_err(|error| {
            CliError::new(ErrorKind::Usage, error)
                .context(format!("cannot work in {} (-C)", dir.display()))
        })?;
    }
    if !matches!(cli.command, Some(Command::SandboxExec(_) | Command::Completion { .. })) {
        secure_keel_home();
    }
    match cli.command {
        Some(Command::Exec(args)) => exec_cmd::run(&cli.model, args).await,
        Some(Command::Tool(args)) => tool_cmd::run(&cli.model, args).await,
        Some(Command::ApplyPatch(args)) => apply_patch_cmd::run(args),
        Some(Command::Sessions(args)) => sessions_cmd::run(&args),
        Some(Command::Cost(args)) => cost_cmd::run(&args),
        Some(Command::Stats(args)) => stats_cmd::run(&args),
        Some(Command::Resume(args)) => tui_cmd::resume(&cli.model, &args).await,
        Some(Command::Attach(args)) => attach_cmd::run(&cli.model, args).await,
        Some(Command::Completion { shell }) => completion_cmd::run(shell),
        Some(Command::Undo(args)) => undo_cmd::run(&args).await,
        Some(Command::Fork(args)) => fork_cmd::run(&args),
        Some(Command::Replay(args)) => replay_cmd::run(&args).await,
        Some(Command::Export(args)) => export_cmd::run(&args),
        Some(Command::Demo) => demo_cmd::run().await,
        Some(Command::Policy(args)) => policy_cmd::run(args),
        Some(Command::Trust) => policy_cmd::trust(),
        Some(Command::Debug(args)) => debug_cmd::run(&cli.model, args),
        Some(Command::Doctor(args)) => doctor::run(&cli.model, &args).await,
        Some(Command::Mcp(args)) => mcp_cmd::run(cli.model.overrides(), args)
            .await
            // Its failures are flags or the config file it edits.
            .map_err(|error| CliError::new(ErrorKind::Usage, error)),
        Some(Command::Plugin(args)) => plugin_cmd::run(args)
            // Its failures are the folder or URL given, or the plugins folder.
            .map_err(|error| CliError::new(ErrorKind::Usage, error)),
        Some(Command::McpServer(args)) => mcp_server_cmd::run(&cli.model, &args.mode).await,
        Some(Command::Acp(args)) => acp_cmd::run(&cli.model, &args.mode).await,
        Some(Command::SandboxExec(args)) => sandbox_cmd::run(args),
        None => tui_cmd::run(&cli.model, &cli.mode, cli.prompt).await,
    }
}

impl ModelArgs {
    /// The flags as configuration overrides.
    pub fn overrides(&self) -> CliOverrides {
        CliOverrides {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            set: self.set.clone(),
            rules_files: Vec::new(),
            limits: crate::agent::SpendLimits {
                max_cost_usd: self.max_cost,
                max_tokens: self.max_tokens,
            },
        }
    }
}

/// Today's date (UTC) for the system prompt.
pub(crate) fn today() -> String {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    stamp.get(..10).unwrap_or(&stamp).to_owned()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// `keel --help` lists every command with a summary of its own (a
    /// merge once fused three commands' doc comments onto `debug` and left
    /// `mcp` and `mcp-server` without one).
    #[test]
    fn every_visible_command_has_its_own_summary() {
        let cli = Cli::command();
        let mut summaries = Vec::new();
        for command in cli.get_subcommands().filter(|command| !command.is_hide_set()) {
            let name = command.get_name().to_owned();
            let about = command.get_about().map(|about| about.to_string()).unwrap_or_default();
            assert!(!about.trim().is_empty(), "`keel {name}` has no summary in --help");
            summaries.push((name, about));
        }
        let about_of = |name: &str| {
            summaries.iter().find(|(command, _)| command == name).map(|(_, about)| about.clone())
        };
        for (name, says, never_says) in [
            ("debug", "keel debug prompt", "MCP"),
            ("mcp", "MCP servers", "debug prompt"),
            ("mcp-server", "Serve keel itself over MCP", "debug prompt"),
        ] {
            let about = about_of(name).unwrap_or_default();
            assert!(about.contains(says), "`keel {name}` summary: {about}");
            assert!(!about.contains(never_says), "`keel {name}` summary: {about}");
        }
    }
}
