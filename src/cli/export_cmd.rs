//! `keel export ID --format md|html|json|atif [-o FILE]`: a session's
//! transcript (`crate::export`), on stdout or in FILE (created 0600: it
//! holds the session's words). ID is a session id (a unique prefix is
//! enough) or a log's path.
//!
//! The mask is the one a session started now would have: the credentials
//! of this environment, the provider's key and the `.env` files of the
//! folder the session worked in; on top, `crate::export` masks well-known
//! credential shapes. A log written before masking existed may hold
//! values keel no longer knows: those are the shapes' to catch.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{CliError, Context, ExitStatus, ExportArgs};
use crate::config::{CliOverrides, Environment, load_local};
use crate::export::{Format, export};
use crate::runtime::workspace_mask;
use crate::session::{find_by_prefix, logged_cwd, read_log, sessions_dir};

pub(super) fn run(args: &ExportArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let Some(format) = Format::parse(&args.format) else {
        return Err(CliError::usage(format!(
            "unknown format {}: md, html, json or atif",
            args.format
        )));
    };
    let log = if Path::new(&args.id).is_file() {
        PathBuf::from(&args.id)
    } else {
        find_by_prefix(&sessions_dir(&env.keel_home), &args.id)
            .context("cannot find the session to export")?
    };
    let Some(cwd) = logged_cwd(&log).map(PathBuf::from) else {
        return Err(CliError::usage(format!(
            "{} is not a keel session log (its first line is not a `session_started` record)",
            log.display()
        )));
    };
    let local = load_local(&env, &CliOverrides::default())?;
    let (mask, warnings) = workspace_mask(&local.secret_values, &cwd, &cwd);
    let contents = read_log(&log)?;
    let mut err = std::io::stderr().lock();
    for warning in warnings.iter().chain(&contents.warnings) {
        let _ = writeln!(err, "warning: {warning}");
    }
    let text = export(&contents.records, format, &mask)
        .map_err(|error| CliError::new(super::ErrorKind::Runtime, error))?;
    match &args.output {
        Some(path) => {
            write_private(path, &text)
                .with_context(|| format!("cannot write the export to {}", path.display()))?;
            let _ = writeln!(err, "exported {} to {}", log.display(), path.display());
        }
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(ExitStatus::Done)
}

/// Writes `text` to `path`, created owner-only (an existing file is
/// replaced, its mode kept).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}
