//! The session's secret mask: built once when a session is assembled
//! from what configuration knows (`config::SecretValues`: credentials of
//! keel's environment, the provider's key) and the `KEY=VALUE` lines of
//! the `.env` files in the workspace root and the session's folder,
//! unless `[secrets] protect_files = false` or `allow_files` lets the
//! model read them; applied to every result a batch makes
//! (`execute.rs`), MCP results, subagent answers and progress messages
//! included, before the log, the model or a front end sees it.
//!
//! Invariants: files are read beneath their folder without following a
//! symlink, at most `MAX_DEFINITION_BYTES` each; a file that cannot be
//! read is left out with a warning, never a failed session; only those
//! two folders are looked at (a `.env` deeper down, or one written after
//! the session started, is not known: see README "Secrets in output").

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::config::{SecretValues, Settings};
use crate::display::{SecretMask, parse_env_file};
use crate::policy::secrets::is_secret_file;
use crate::protocol::{ToolMeta, ToolResult};
use crate::support::bounded_read::read_bounded_beneath;

/// The mask of a session of `settings` working in `cwd`, and what could
/// not be read for it.
pub(super) fn session_mask(settings: &Settings, cwd: &Path) -> (SecretMask, Vec<String>) {
    workspace_mask(&settings.secret_values, &settings.workspace_root, cwd)
}

/// The mask of `values` and the `.env` files of `root` and `cwd` (inside
/// it), and what could not be read for it (`keel export` uses it too).
pub fn workspace_mask(values: &SecretValues, root: &Path, cwd: &Path) -> (SecretMask, Vec<String>) {
    let mut known = values.env.clone();
    let mut warnings = Vec::new();
    if values.protect_files {
        let allow = allow_set(&values.allow_files);
        let mut folders: Vec<&Path> = vec![root];
        if cwd != root && cwd.starts_with(root) {
            folders.push(cwd);
        }
        for folder in folders {
            for name in env_files(folder, &allow) {
                let shown = shown_name(root, folder, &name);
                match read_bounded_beneath(folder, Path::new(&name)) {
                    Ok(text) => known.extend(parse_env_file(&shown, &text)),
                    Err(error) => warnings.push(format!(
                        "{shown} was not read for the secret mask ({error}): its values are not \
                         masked in tool output"
                    )),
                }
            }
        }
    }
    match SecretMask::new(&known) {
        Ok(mask) => (mask, warnings),
        Err(error) => {
            warnings.push(format!("{error}: tool output is not masked"));
            (SecretMask::default(), warnings)
        }
    }
}

/// `[secrets] allow_files` as globs (a bad one was refused by config).
fn allow_set(patterns: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// The `.env`-style secret files directly in `folder` (`.env`,
/// `.env.local`, `prod.env`; never a template), sorted.
fn env_files(folder: &Path, allow: &GlobSet) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| is_env_file(name) && !allow.is_match(name))
        .collect();
    names.sort();
    names
}

/// Whether `name` is a `.env` file the secret hook protects.
fn is_env_file(name: &str) -> bool {
    let env_named = name == ".env" || name.starts_with(".env.") || name.ends_with(".env");
    env_named && is_secret_file(name)
}

/// `name` in `folder` as the workspace shows it (`.env`, `app/.env`).
fn shown_name(root: &Path, folder: &Path, name: &str) -> String {
    let path: PathBuf = folder.join(name);
    path.strip_prefix(root).unwrap_or(&path).display().to_string()
}

/// Masks a result where it is made: its text and its metadata.
pub(super) fn mask_result(mask: &SecretMask, result: &mut ToolResult, meta: &mut ToolMeta) {
    if mask.is_empty() {
        return;
    }
    mask.mask_string(&mut result.output);
    let mut value = meta.to_value();
    mask.mask_json(&mut value);
    if let serde_json::Value::Object(map) = value {
        *meta = ToolMeta::from(map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::display::KnownSecret;

    #[test]
    fn only_env_files_count_and_templates_never() {
        for name in [".env", ".env.local", ".env.production", "prod.env"] {
            assert!(is_env_file(name), "{name}");
        }
        for name in [".env.example", ".env.sample", "id_rsa", "environment", "README.md"] {
            assert!(!is_env_file(name), "{name}");
        }
    }

    #[test]
    fn env_files_are_found_and_allowed_ones_left_out() {
        let dir = tempfile::tempdir().unwrap();
        for name in [".env", ".env.local", ".env.example", "notes.txt"] {
            std::fs::write(dir.path().join(name), "A=1\n").unwrap();
        }
        assert_eq!(env_files(dir.path(), &allow_set(&[])), [".env", ".env.local"]);
        assert_eq!(env_files(dir.path(), &allow_set(&[".env.local".into()])), [".env"]);
    }

    #[test]
    fn a_result_and_its_metadata_are_masked() {
        let mask = SecretMask::new(&[KnownSecret::new("T", "canary-secret")]).unwrap();
        let mut result = ToolResult::ok("c", "out canary-secret");
        let mut meta = ToolMeta::details(serde_json::json!({"stdout": "canary-secret"}));
        mask_result(&mask, &mut result, &mut meta);
        assert_eq!(result.output, "out [redacted: T]");
        assert!(!meta.to_value().to_string().contains("canary-secret"), "{meta:?}");
    }
}
