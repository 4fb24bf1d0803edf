//! The command line: flags, subcommands and their dispatch, one file per
//! subcommand. The one place besides `main.rs` that uses `anyhow`, turning
//! typed errors into messages with exit codes.

mod apply_patch_cmd;
mod exec_cmd;
mod tool_cmd;

use std::path::PathBuf;
use std::time::SystemTime;

use clap::{Args, Parser, Subcommand};

use crate::config::CliOverrides;
use crate::exec::ExitStatus;

const EXIT_CODES: &str = "Exit codes:\n  0    done\n  1    the model or the turn failed \
(model error after retries, step limit, log write failure)\n  2    usage or configuration \
error\n  130  interrupted (Ctrl-C)";

/// keel: a terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "keel", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(flatten)]
    pub model: ModelArgs,
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
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless: progress on stderr, the answer on stdout.
    Exec(ExecArgs),
    /// Run one tool directly and print its result envelope as JSON.
    Tool(ToolArgs),
    /// Apply a Codex-format patch (*** Begin Patch …) in the current folder.
    ApplyPatch(ApplyPatchArgs),
}

#[derive(Debug, Args)]
pub struct ApplyPatchArgs {
    /// The patch text; `-` or nothing reads it from stdin.
    pub patch: Option<String>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task; `-` reads it from stdin.
    pub prompt: String,
    /// Print one JSON event per line on stdout, ending with a `result` line.
    #[arg(long)]
    pub json: bool,
    /// Also write the last message to FILE.
    #[arg(short = 'o', long = "output-last-message", value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Let workspace writes and commands run without asking.
    #[arg(long, conflicts_with = "yolo")]
    pub full_auto: bool,
    /// Let everything run without asking.
    #[arg(long)]
    pub yolo: bool,
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// Tool name (read_file, list_dir, glob, grep, write_file, edit_file, apply_patch, shell).
    pub name: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
}

/// Runs the parsed command line; returns the exit status.
pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Some(Command::Exec(args)) => exec_cmd::run(&cli.model, args).await,
        Some(Command::Tool(args)) => tool_cmd::run(args).await,
        Some(Command::ApplyPatch(args)) => apply_patch_cmd::run(args),
        None => anyhow::bail!(
            "the interactive TUI is not built yet; run a task with `keel exec \"…\"` (see keel --help)"
        ),
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
        }
    }
}

/// Today's date (UTC) for the system prompt.
pub(crate) fn today() -> String {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    stamp.get(..10).unwrap_or(&stamp).to_owned()
}
