//! `keel apply-patch [PATCH|-]`: applies a Codex-format patch in the
//! current folder, like Codex's standalone `apply_patch` binary.
//!
//! Success prints `Success. Updated the following files:` and `A`/`M`/`D`
//! lines on stdout and exits 0; a patch that does not parse or apply prints
//! the reason on stderr and exits 1 (operations before a failing one stay
//! applied, as with the tool). Paths are confined to the workspace (the
//! enclosing git repository, else the current folder).

use std::io::{Read, Write};

use super::{ApplyPatchArgs, CliError, Context, ExitStatus};
use crate::config::find_workspace_root;
use crate::tools::paths::Workspace;
use crate::tools::{FileStates, ToolError, apply_patch_text};

pub(super) fn run(args: ApplyPatchArgs) -> Result<ExitStatus, CliError> {
    let patch = match args.patch.as_deref() {
        None | Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the patch from stdin")?;
            text
        }
        Some(text) => text.to_owned(),
    };
    let cwd = std::env::current_dir().context("cannot determine the working directory")?;
    let root = find_workspace_root(&cwd);
    // Run by a person in a folder: paths are relative to it, as for `git apply`.
    let ws = Workspace::from_parts(&root, &cwd).map_err(CliError::usage)?.relative_to_cwd();
    match apply_patch_text(&ws, &FileStates::unchecked(), &patch) {
        Ok(report) => {
            let mut out = std::io::stdout().lock();
            write!(out, "Success. Updated the following files:\n{}", report.lines())?;
            Ok(ExitStatus::Done)
        }
        Err(error) => {
            let error = ToolError::from(error);
            writeln!(std::io::stderr().lock(), "error: {error}")?;
            Ok(ExitStatus::Failed)
        }
    }
}
