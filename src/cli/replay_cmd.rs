//! `keel replay LOG [--in-place|--keep]`: re-runs a recorded session's tool
//! calls offline and reports the results that differ. The temporary copy
//! starts from the session's first checkpoint when there is one (the
//! workspace as it was before the session changed it), else from a copy of
//! the current workspace.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CliError, Context, ExitStatus, ReplayArgs};
use crate::config::{Environment, find_workspace_root};
use crate::exec::HumanPrinter;
use crate::runtime::{ReplayReport, ShadowRepo, copy_workspace, first_checkpoint, replay};
use crate::session::{find_by_prefix, logged_cwd, logged_model, sessions_dir};

pub(super) async fn run(args: &ReplayArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    // An existing file is that file, whatever its name; else an id prefix.
    let log = if Path::new(&args.log).is_file() {
        PathBuf::from(&args.log)
    } else {
        find_by_prefix(&sessions_dir(&env.keel_home), &args.log)
            .context("cannot find the log to replay")?
    };
    if logged_model(&log).is_none() {
        return Err(CliError::usage(format!(
            "{} is not a keel session log (its first line is not a `session_started` record); \
             `keel sessions` lists the logs",
            log.display()
        )));
    }
    let workspace = if args.in_place {
        find_workspace_root(&env.cwd)
    } else {
        prepare_copy(&env, &log).await?
    };
    let mut printer = HumanPrinter::stderr();
    let report = replay(&log, &workspace, &mut printer).await?;
    print_report(&report)?;
    if args.keep {
        let _ =
            writeln!(std::io::stderr(), "the replay workspace is kept at {}", workspace.display());
    } else if !args.in_place {
        let _ = std::fs::remove_dir_all(&workspace);
    }
    Ok(if report.differences.is_empty() { ExitStatus::Done } else { ExitStatus::Failed })
}

/// A fresh temporary folder holding the workspace the session started from.
async fn prepare_copy(env: &Environment, log: &Path) -> Result<PathBuf, CliError> {
    let dest = temp_folder("replay")?;
    let recorded = logged_cwd(log).map(PathBuf::from).unwrap_or_else(|| env.cwd.clone());
    let root = find_workspace_root(&recorded);
    if let Some(commit) = first_checkpoint(log)? {
        ShadowRepo::for_workspace(&env.keel_home, &root)
            .export(&commit, &dest)
            .await
            .context("cannot restore the session's first checkpoint for the replay")?;
    } else {
        let source = if root.is_dir() { root } else { find_workspace_root(&env.cwd) };
        copy_workspace(&source, &dest)
            .with_context(|| format!("cannot copy {} for the replay", source.display()))?;
    }
    Ok(dest)
}

/// A new, empty folder under the system temp dir.
pub(super) fn temp_folder(what: &str) -> Result<PathBuf, CliError> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("keel-{what}-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// The summary on stdout: one line, then each differing result.
pub(super) fn print_report(report: &ReplayReport) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "replayed {} turn(s), {} tool call(s): {} result(s) differ from the recording",
        report.turns,
        report.calls_run,
        report.differences.len()
    )?;
    for difference in &report.differences {
        writeln!(out, "\n{} {}", difference.call.name, difference.call.arguments)?;
        writeln!(out, "  recorded: {}", first_line(&difference.recorded.output))?;
        writeln!(out, "  replayed: {}", first_line(&difference.replayed.output))?;
    }
    for warning in &report.warnings {
        let _ = writeln!(std::io::stderr(), "warning: {warning}");
    }
    Ok(())
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    line.chars().take(160).collect()
}
