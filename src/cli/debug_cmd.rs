//! `keel debug prompt [PROMPT]`: the exact first request `keel exec
//! PROMPT` would send from this folder with these flags, printed instead
//! of sent (nothing is logged, no hook runs, no model is called), so users
//! and tests can read what the model sees.

use std::io::Write;

use clap::{Args, Subcommand};

use super::{CliError, ExitStatus, ModelArgs, today};
use crate::config::{self, Environment};
use crate::policy::ApprovalMode;
use crate::runtime::{SessionOptions, first_request};

/// What `keel debug` can show.
#[derive(Debug, Args)]
pub struct DebugArgs {
    #[command(subcommand)]
    pub what: DebugCommand,
}

#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Print the first request body a session would send to the provider
    /// (tools, instructions, the context message, the prompt).
    Prompt(PromptArgs),
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The task, as `keel exec` would get it.
    #[arg(default_value = "Hello.")]
    pub prompt: String,
    /// Approval mode the session would start in: ask, auto, plan, explore, yolo.
    #[arg(long, default_value = "ask")]
    pub mode: String,
    /// As an interactive session would send it (default: as `keel exec`).
    #[arg(long)]
    pub interactive: bool,
    /// Print the body exactly as sent (one line of JSON) instead of indented.
    #[arg(long)]
    pub raw: bool,
}

pub(super) fn run(model: &ModelArgs, args: DebugArgs) -> Result<ExitStatus, CliError> {
    match args.what {
        DebugCommand::Prompt(args) => prompt(model, &args),
    }
}

fn prompt(model: &ModelArgs, args: &PromptArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let settings = config::load(&env, &model.overrides())?;
    let approval = ApprovalMode::parse(&args.mode).ok_or_else(|| {
        CliError::usage(format!(
            "unknown mode `{}`; use ask, auto, plan, explore or yolo",
            args.mode
        ))
    })?;
    let options = SessionOptions {
        approval,
        cwd: env.cwd.clone(),
        date: today(),
        headless: !args.interactive,
        script_answers: false,
    };
    let (request, body, warnings) = first_request(&settings, &options, &args.prompt)?;
    let exact = serde_json::to_string(&body)?;
    let mut stderr = std::io::stderr().lock();
    for warning in &settings.warnings {
        let _ = writeln!(stderr, "warning: {warning}");
    }
    for warning in &warnings {
        let _ = writeln!(stderr, "warning: {warning}");
    }
    let _ = writeln!(
        stderr,
        "{} request to {} for model {}: {} bytes ({} of instructions, {} tools, {} history items)",
        settings.provider.kind.cli_name(),
        settings.provider.base_url,
        settings.model,
        exact.len(),
        request.instructions.len(),
        request.tools.len(),
        request.items.len(),
    );
    let mut out = std::io::stdout().lock();
    if args.raw {
        writeln!(out, "{exact}")?;
    } else {
        writeln!(out, "{}", serde_json::to_string_pretty(&body)?)?;
    }
    Ok(ExitStatus::Done)
}
