//! The pin of a trusted project's MCP servers: trusting a project records
//! a digest of its server definitions (`.keel/config.toml`'s
//! `[mcp_servers]` and `.mcp.json`'s `mcpServers`, as written, before any
//! `${VAR}` expansion) with the trust decision (`rules::trust_project`).
//! A later session whose definitions hash differently starts none of the
//! project's servers until the user trusts it again: a command or a tool
//! that planted a server in a trusted project does not get it started
//! (the TUI asks "trust this project?" again, `exec` says to run `keel
//! trust`).
//!
//! Invariants: the digest covers every byte that decides what a server
//! runs (a file that does not parse is hashed as its bytes, so it still
//! pins); no file at all hashes like an empty table, so a project trusted
//! before pins existed keeps working until it has servers.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Bytes of each file read at most for the digest (as `.mcp.json` is read).
const MAX_DEFINITION_BYTES: u64 = 1024 * 1024;

/// Whether a project's MCP servers may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpTrust {
    /// Not trusted: its servers wait for `keel trust`.
    Untrusted,
    /// Trusted, with the definitions the user trusted.
    Trusted,
    /// Trusted, but the definitions changed since: they wait for trust again.
    Changed,
}

/// Why a trusted project's changed server is not started.
pub const CHANGED_REASON: &str = "the project's MCP servers changed since you trusted it: run \
                                  `keel trust` again to start them";

/// The digest of the server definitions of the project at `workspace_root`
/// (hex SHA-256).
pub fn digest(workspace_root: &Path) -> String {
    let config = read_bounded(&workspace_root.join(".keel").join("config.toml"));
    let json = read_bounded(&workspace_root.join(".mcp.json"));
    digest_of(config.as_deref(), json.as_deref())
}

/// The digest of a project without server definitions (what a project
/// trusted before pins is taken to have had).
pub fn no_servers_digest() -> String {
    digest_of(None, None)
}

fn digest_of(config: Option<&[u8]>, json: Option<&[u8]>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"keel-config\0");
    hasher.update(config_servers(config).as_bytes());
    hasher.update(b"\0mcp-json\0");
    hasher.update(json_servers(json));
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The file's first bytes, or `None` when there is none (or it cannot be
/// read: reading it for servers fails the same way, and starts none).
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_DEFINITION_BYTES).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// `[mcp_servers]` of a `.keel/config.toml` as canonical JSON (empty when
/// there is none; the raw text when it does not parse).
fn config_servers(bytes: Option<&[u8]>) -> String {
    let Some(bytes) = bytes else { return String::new() };
    let text = String::from_utf8_lossy(bytes);
    match toml::from_str::<toml::Table>(&text) {
        Ok(table) => table
            .get("mcp_servers")
            .and_then(|servers| serde_json::to_string(servers).ok())
            .unwrap_or_default(),
        Err(_) => text.into_owned(),
    }
}

/// `mcpServers` of a `.mcp.json` as canonical JSON (empty when there is
/// none; the raw bytes when it does not parse).
fn json_servers(bytes: Option<&[u8]>) -> Vec<u8> {
    let Some(bytes) = bytes else { return Vec::new() };
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) => value
            .get("mcpServers")
            .and_then(|servers| serde_json::to_vec(servers).ok())
            .unwrap_or_default(),
        Err(_) => bytes.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_the_server_definitions_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let nothing = digest(dir.path());
        std::fs::write(dir.path().join(".mcp.json"), r#"{"other": 1}"#).unwrap();
        assert_eq!(digest(dir.path()), nothing, "no servers hash like no file");
        std::fs::write(dir.path().join(".mcp.json"), r#"{"mcpServers":{"a":{"command":"x"}}}"#)
            .unwrap();
        let one = digest(dir.path());
        assert_ne!(one, nothing);
        std::fs::write(
            dir.path().join(".mcp.json"),
            "{\n  \"mcpServers\": { \"a\": { \"command\": \"x\" } }\n}\n",
        )
        .unwrap();
        assert_eq!(digest(dir.path()), one, "spacing is not a change");
        std::fs::create_dir(dir.path().join(".keel")).unwrap();
        std::fs::write(dir.path().join(".keel/config.toml"), "model = \"m\"\n").unwrap();
        assert_eq!(digest(dir.path()), one, "other keys are not a change");
        std::fs::write(dir.path().join(".keel/config.toml"), "[mcp_servers.b]\ncommand = \"y\"\n")
            .unwrap();
        assert_ne!(digest(dir.path()), one);
    }
}
