//! The command line: flags, subcommands and their dispatch. The one place
//! besides `main.rs` that uses `anyhow`, turning typed errors into
//! messages with exit codes.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::SystemTime;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::{self, CliOverrides, Environment, Settings, find_workspace_root};
use crate::exec::{self, ExecOptions, ExitStatus, ResultLine};
use crate::policy::ApprovalMode;
use crate::protocol::ToolCall;
use crate::tools::{ToolContext, ToolRegistry};

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
    /// Tool name (read_file, list_dir, glob, grep, write_file, edit_file, shell).
    pub name: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    pub arguments: String,
}

/// Runs the parsed command line; returns the exit status.
pub async fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Some(Command::Exec(args)) => run_exec(&cli.model, args).await,
        Some(Command::Tool(args)) => run_tool(args).await,
        None => anyhow::bail!(
            "the interactive TUI is not built yet; run a task with `keel exec \"…\"` (see keel --help)"
        ),
    }
}

async fn run_exec(model: &ModelArgs, args: ExecArgs) -> anyhow::Result<ExitStatus> {
    let json = args.json;
    match prepare_exec(model, args) {
        Ok((settings, options)) => {
            let cancel = CancellationToken::new();
            watch_interrupts(cancel.clone())?;
            Ok(exec::run(&settings, options, cancel).await)
        }
        // Scripts reading --json get their `result` line even for bad usage.
        Err(error) if json => {
            let line = ResultLine::failure(format!("{error:#}"));
            exec::write_json_line(&line.to_json());
            let _ = writeln!(std::io::stderr(), "error: {error:#}");
            Ok(ExitStatus::Usage)
        }
        Err(error) => Err(error),
    }
}

fn prepare_exec(model: &ModelArgs, args: ExecArgs) -> anyhow::Result<(Settings, ExecOptions)> {
    let env = Environment::from_process()?;
    let overrides = CliOverrides {
        provider: model.provider.clone(),
        base_url: model.base_url.clone(),
        model: model.model.clone(),
        set: model.set.clone(),
    };
    let settings = config::load(&env, &overrides)?;
    let prompt = read_prompt(&args.prompt)?;
    let approval = match (args.full_auto, args.yolo) {
        (_, true) => ApprovalMode::Yolo,
        (true, false) => ApprovalMode::FullAuto,
        (false, false) => ApprovalMode::Ask,
    };
    let options = ExecOptions {
        prompt,
        json: args.json,
        last_message_file: args.output_last_message,
        approval,
        cwd: env.cwd.clone(),
        date: today(),
    };
    Ok((settings, options))
}

/// First Ctrl-C (SIGINT) cancels the turn, which then ends cleanly; a
/// second one leaves at once. The handler is installed before this returns,
/// so no early SIGINT falls through to the default (kill) action.
fn watch_interrupts(cancel: CancellationToken) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint =
        signal(SignalKind::interrupt()).context("cannot install the Ctrl-C handler")?;
    tokio::spawn(async move {
        if sigint.recv().await.is_none() {
            return;
        }
        cancel.cancel();
        if sigint.recv().await.is_some() {
            std::process::exit(ExitStatus::Interrupted as i32);
        }
    });
    Ok(())
}

fn read_prompt(arg: &str) -> anyhow::Result<String> {
    let prompt = if arg == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the prompt from stdin")?;
        text
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("the prompt is empty; pass a task, or `-` to read it from stdin");
    }
    Ok(prompt)
}

async fn run_tool(args: ToolArgs) -> anyhow::Result<ExitStatus> {
    let cwd = std::env::current_dir().context("cannot determine the working directory")?;
    let ctx = ToolContext {
        workspace_root: find_workspace_root(&cwd),
        cwd,
        cancel: CancellationToken::new(),
    };
    let registry = ToolRegistry::builtin();
    let call = ToolCall {
        call_id: "cli".to_owned(),
        name: args.name,
        arguments: args.arguments,
        item_id: None,
    };
    let (result, meta) = registry.run_call(&call, &ctx).await;
    let envelope = serde_json::json!({
        "ok": !result.is_error,
        "output": if result.is_error { serde_json::Value::Null } else { result.output.clone().into() },
        "meta": meta,
        "error": if result.is_error { serde_json::Value::from(result.output) } else { serde_json::Value::Null },
    });
    exec::write_json_line(&envelope);
    Ok(if result.is_error { ExitStatus::Failed } else { ExitStatus::Done })
}

/// Today's date (UTC) for the system prompt.
fn today() -> String {
    let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    stamp.get(..10).unwrap_or(&stamp).to_owned()
}
