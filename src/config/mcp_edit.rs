//! `keel mcp add` / `keel mcp remove`: the only writer of `[mcp_servers]`
//! tables in the user's `config.toml`.
//!
//! Invariants: the rest of the file is kept byte for byte (comments and
//! order included): an entry is appended as its own table, and removing
//! one drops exactly the lines of its `[mcp_servers.NAME]` tables. The
//! result must parse as a config file and say what was asked (the server
//! is there, or gone) before it replaces the old file (atomically); if it
//! does not, nothing is written and the error says to edit the file by
//! hand.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::layers::ConfigFile;
use super::mcp::{McpServerFile, check_name};

/// Why the config file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum McpEditError {
    #[error("cannot read {path}: {source}", path = path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}", path = path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a valid config file ({message}); fix it first", path = path.display())]
    Invalid { path: PathBuf, message: String },
    #[error("{0}")]
    BadName(String),
    #[error(
        "an MCP server named `{name}` is already in {path}; remove it first (`keel mcp remove \
         {name}`)",
        path = path.display()
    )]
    Exists { name: String, path: PathBuf },
    #[error("no MCP server named `{name}` in {path}", path = path.display())]
    Missing { name: String, path: PathBuf },
    #[error(
        "`{name}` is written in a form keel cannot edit (an inline table?); edit {path} by hand",
        path = path.display()
    )]
    NotEditable { name: String, path: PathBuf },
}

/// Adds `[mcp_servers.NAME]` to the config file at `path` (created if it
/// does not exist).
pub fn add_server(path: &Path, name: &str, file: &McpServerFile) -> Result<(), McpEditError> {
    check_name(name).map_err(McpEditError::BadName)?;
    let text = read(path)?;
    if servers_in(path, &text)?.contains_key(name) {
        return Err(McpEditError::Exists { name: name.to_owned(), path: path.to_owned() });
    }
    #[derive(Serialize)]
    struct Wrapper<'a> {
        mcp_servers: BTreeMap<&'a str, &'a McpServerFile>,
    }
    let table = toml::to_string(&Wrapper { mcp_servers: BTreeMap::from([(name, file)]) }).map_err(
        |error| McpEditError::Invalid { path: path.to_owned(), message: error.to_string() },
    )?;
    let mut updated = text.clone();
    if !updated.is_empty() && !updated.ends_with('\n') {
        updated.push('\n');
    }
    if !updated.is_empty() {
        updated.push('\n');
    }
    updated.push_str(&table);
    let present = servers_in(path, &updated)
        .map_err(|_| McpEditError::NotEditable { name: name.to_owned(), path: path.to_owned() })?;
    if !present.contains_key(name) {
        return Err(McpEditError::NotEditable { name: name.to_owned(), path: path.to_owned() });
    }
    write(path, &updated)
}

/// Removes `[mcp_servers.NAME]` (and its sub-tables) from the config file
/// at `path`.
pub fn remove_server(path: &Path, name: &str) -> Result<(), McpEditError> {
    let text = read(path)?;
    if !servers_in(path, &text)?.contains_key(name) {
        return Err(McpEditError::Missing { name: name.to_owned(), path: path.to_owned() });
    }
    let updated = without_tables(&text, name);
    let still = servers_in(path, &updated)
        .map_err(|_| McpEditError::NotEditable { name: name.to_owned(), path: path.to_owned() })?;
    if still.contains_key(name) {
        return Err(McpEditError::NotEditable { name: name.to_owned(), path: path.to_owned() });
    }
    write(path, &updated)
}

fn read(path: &Path) -> Result<String, McpEditError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(McpEditError::Read { path: path.to_owned(), source }),
    }
}

/// Writes `text` beside `path`, then renames it over `path`: a reader
/// (or a crash) sees the old file or the new one, never half of one. The
/// file may hold secrets (headers, env): the new one keeps the old one's
/// permissions (a user's `chmod 600` survives; a new file is 0600), and a
/// symlinked `config.toml` (a dotfiles repository) stays a link, its
/// target rewritten.
fn write(path: &Path, text: &str) -> Result<(), McpEditError> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let error = |source| McpEditError::Write { path: path.to_owned(), source };
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(error)?;
    }
    let mode = std::fs::metadata(&target).map_or(0o600, |meta| meta.permissions().mode() & 0o7777);
    let staged = target.with_extension(format!("toml.keel-{}", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    let written =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(&staged).and_then(
            |mut file| {
                // `mode` at creation is cut by the umask; set it exactly.
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
                file.write_all(text.as_bytes())
            },
        );
    if let Err(source) = written {
        let _ = std::fs::remove_file(&staged);
        return Err(error(source));
    }
    std::fs::rename(&staged, &target).map_err(|source| {
        let _ = std::fs::remove_file(&staged);
        error(source)
    })
}

fn servers_in(path: &Path, text: &str) -> Result<super::mcp::McpServerTables, McpEditError> {
    let parsed: ConfigFile = toml::from_str(text).map_err(|error| McpEditError::Invalid {
        path: path.to_owned(),
        message: error.to_string(),
    })?;
    Ok(parsed.mcp_servers.unwrap_or_default())
}

/// `text` without the lines of the `[mcp_servers.NAME]` table and its
/// `[mcp_servers.NAME.*]` sub-tables (each runs to the next header).
fn without_tables(text: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        if let Some(header) = table_header(line) {
            skipping = names_server(&header, name);
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// The dotted key of a `[table]` header line, quotes removed.
fn table_header(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let inner = line.strip_prefix('[')?.trim_start_matches('[');
    let end = inner.find(']')?;
    let keys = inner[..end]
        .split('.')
        .map(|key| key.trim().trim_matches('"').trim_matches('\'').to_owned())
        .collect();
    Some(keys)
}

fn names_server(keys: &[String], name: &str) -> bool {
    keys.len() >= 2 && keys[0] == "mcp_servers" && keys[1] == name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str) -> McpServerFile {
        McpServerFile {
            command: Some(command.to_owned()),
            args: Some(vec!["-y".into(), "pkg".into()]),
            env: Some(BTreeMap::from([("TOKEN".to_owned(), "x".to_owned())])),
            ..McpServerFile::default()
        }
    }

    #[test]
    fn add_then_remove_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let original = "# my settings\nmodel = \"gpt-5\"\n\n[mcp_servers.keep]\nurl = \"http://127.0.0.1:1/mcp\"\n";
        std::fs::write(&path, original).unwrap();
        add_server(&path, "docs", &stdio("npx")).unwrap();
        let added = std::fs::read_to_string(&path).unwrap();
        assert!(added.starts_with(original), "{added}");
        let servers = servers_in(&path, &added).unwrap();
        assert_eq!(servers["docs"].command.as_deref(), Some("npx"));
        assert_eq!(servers["docs"].env.as_ref().unwrap()["TOKEN"], "x");
        let error = add_server(&path, "docs", &stdio("other")).unwrap_err();
        assert!(error.to_string().contains("already in"), "{error}");
        remove_server(&path, "docs").unwrap();
        let removed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(removed.trim_end(), original.trim_end());
        let error = remove_server(&path, "docs").unwrap_err();
        assert!(matches!(error, McpEditError::Missing { .. }), "{error}");
    }

    #[test]
    fn an_inline_entry_is_refused_not_mangled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let original = "[mcp_servers]\ninline = { command = \"x\" }\n";
        std::fs::write(&path, original).unwrap();
        let error = remove_server(&path, "inline").unwrap_err();
        assert!(matches!(error, McpEditError::NotEditable { .. }), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    }

    #[test]
    fn bad_names_and_broken_files_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        assert!(matches!(add_server(&path, "a__b", &stdio("x")), Err(McpEditError::BadName(_))));
        assert!(!path.exists());
        std::fs::write(&path, "model = \n").unwrap();
        assert!(matches!(add_server(&path, "ok", &stdio("x")), Err(McpEditError::Invalid { .. })));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "model = \n");
    }

    #[test]
    fn the_file_keeps_its_permissions_and_a_symlink_stays_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "model = \"gpt-5\"\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        add_server(&path, "docs", &stdio("npx")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the user's chmod 600 of a file holding secrets was lost");

        let fresh = dir.path().join("new/config.toml");
        add_server(&fresh, "docs", &stdio("npx")).unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "a new file holding an env secret is the owner's only");

        let dotfiles = dir.path().join("dotfiles.toml");
        std::fs::write(&dotfiles, "model = \"gpt-5\"\n").unwrap();
        let link = dir.path().join("linked.toml");
        std::os::unix::fs::symlink(&dotfiles, &link).unwrap();
        add_server(&link, "docs", &stdio("npx")).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert!(std::fs::read_to_string(&dotfiles).unwrap().contains("[mcp_servers.docs]"));
    }
}
