//! `keel plugin add|list|remove`: Claude Code plugins (a folder holding
//! `.claude-plugin/plugin.json`) installed into `$KEEL_HOME/plugins/`
//! (`config::plugin_install` checks and copies; `config::plugins` loads
//! them at every start). `add` takes a folder, or a git URL that is
//! cloned (`git clone --depth 1`, through `sandbox`, into a temporary
//! folder) and then installed as a folder. An installed plugin is the
//! user's own, like `~/.keel/commands`.
//!
//! Output contract: `list` prints one line per plugin, `NAME VERSION
//! SOURCE` (`-` for no version), or "no plugins installed"; `--json`
//! prints an array of `{"name","version","description","source"}`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::config::plugins::PluginError;
use crate::config::{Environment, add_plugin, list_plugins, remove_plugin};
use crate::display::for_terminal;
use crate::exec::ExitStatus;
use crate::sandbox::{CommandSpec, EnvFilter};

/// How long a clone may take.
const CLONE_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, Args)]
pub struct PluginArgs {
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Install a plugin from a folder or a git URL (its commands, agents,
    /// skills, hooks and MCP servers then load in every session).
    Add {
        /// A plugin folder (holding .claude-plugin/plugin.json) or a git URL.
        source: String,
    },
    /// The installed plugins: name, version, where each came from.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Uninstall a plugin by name.
    Remove { name: String },
}

pub(super) fn run(args: PluginArgs) -> anyhow::Result<ExitStatus> {
    let env = Environment::from_process()?;
    let mut out = std::io::stdout().lock();
    match args.command {
        PluginCommand::Add { source } => {
            let installed = if is_git_url(&source) {
                // Beside the plugins (same file system, owner-only home),
                // removed whatever happens.
                let dir = crate::config::plugins::plugins_dir(&env.keel_home);
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot make {}", dir.display()))?;
                let clone = dir.join(format!(".cloning-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&clone);
                let added = git_clone(&source, &clone, &dir)
                    .and_then(|()| add_plugin(&env.keel_home, &clone, &source));
                let _ = std::fs::remove_dir_all(&clone);
                added?
            } else {
                let folder = env.cwd.join(&source);
                let label = folder.canonicalize().unwrap_or(folder.clone());
                add_plugin(&env.keel_home, &folder, &label.display().to_string())?
            };
            let version = installed.version.as_deref().unwrap_or("no version");
            writeln!(
                out,
                "installed plugin `{}` ({version}) into {}",
                for_terminal(&installed.name),
                crate::config::plugins::plugins_dir(&env.keel_home).join(&installed.name).display()
            )?;
        }
        PluginCommand::List { json } => {
            let plugins = list_plugins(&env.keel_home)?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&plugins)?)?;
            } else if plugins.is_empty() {
                writeln!(out, "no plugins installed (`keel plugin add FOLDER|GIT-URL`)")?;
            }
            for plugin in plugins.iter().filter(|_| !json) {
                let version = plugin.version.as_deref().unwrap_or("-");
                let line = format!("{} {version} {}", plugin.name, plugin.source);
                writeln!(out, "{}", for_terminal(&line))?;
            }
        }
        PluginCommand::Remove { name } => {
            let removed = remove_plugin(&env.keel_home, &name)?;
            writeln!(out, "removed plugin `{}`", for_terminal(&removed.name))?;
        }
    }
    Ok(ExitStatus::Done)
}

/// What git can clone, as opposed to a folder on this machine.
fn is_git_url(source: &str) -> bool {
    source.contains("://") || source.starts_with("git@")
}

/// `git clone --depth 1 URL into`, keel's own command (the user asked for it).
fn git_clone(url: &str, into: &Path, cwd: &Path) -> Result<(), PluginError> {
    let clone_error = |message: String| PluginError::Clone { url: url.to_owned(), message };
    let args = ["clone", "--depth", "1", "--quiet", "--", url];
    let spec =
        CommandSpec::argv("git", args.iter().copied().chain([into.to_str().unwrap_or("")]), cwd)
            .with_filtered_env(EnvFilter::default())
            .with_env("GIT_TERMINAL_PROMPT", "0")
            .with_timeout(CLONE_TIMEOUT);
    let output =
        crate::sandbox::run_blocking(&spec).map_err(|error| clone_error(error.to_string()))?;
    if output.timed_out {
        return Err(clone_error(format!("git took longer than {}s", CLONE_TIMEOUT.as_secs())));
    }
    if output.exit_code != Some(0) {
        return Err(clone_error(output.stderr.text().trim().to_owned()));
    }
    Ok(())
}
