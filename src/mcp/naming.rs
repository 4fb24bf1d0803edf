//! Tool names as the model sees them: `mcp__<server>__<tool>` (Claude
//! Code's naming, so hook matchers written for Claude work unchanged).
//!
//! Invariants: every name is at most [`MAX_TOOL_NAME`] characters of
//! `[a-zA-Z0-9_-]` (the strictest of the providers' rules: OpenAI's
//! Responses and Chat APIs and Anthropic's Messages API all accept that
//! and no more), and names are unique within a session: a tool name the
//! server spelled with other characters, or too long, or clashing with one
//! already taken, gets a short stable hash of its original name appended.
//! Server names arrive in their tool-name form (`config::mcp::tool_name_part`:
//! a configured `@scope/server` or `My Server` is renamed there, said in a
//! warning, clashes refused), so the server part of a name is never
//! rewritten here.

use std::collections::BTreeSet;

/// The prefix every MCP tool name starts with (and no built-in tool does).
pub const PREFIX: &str = "mcp__";
/// The longest tool name every provider accepts.
pub const MAX_TOOL_NAME: usize = 64;

/// Whether `name` is an MCP tool's name.
pub fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// The server part of an MCP tool name (`github` for `mcp__github__get`).
pub fn server_of(name: &str) -> Option<&str> {
    name.strip_prefix(PREFIX)?.split_once("__").map(|(server, _)| server)
}

/// The model-facing name of `server`'s tool `tool`, unique among `taken`
/// (which it is added to).
pub fn assign(server: &str, tool: &str, taken: &mut BTreeSet<String>) -> String {
    let head = format!("{PREFIX}{server}__");
    let clean: String = tool
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
        .collect();
    let plain = format!("{head}{clean}");
    if clean == tool && plain.len() <= MAX_TOOL_NAME && !taken.contains(&plain) {
        taken.insert(plain.clone());
        return plain;
    }
    // `_` + 8 hex digits, salted until unique (a clash of two hashes
    // within one server's tools is all but impossible; the loop ends it).
    let mut salt = 0u32;
    loop {
        let suffix = format!("_{:08x}", fnv1a(tool, salt));
        let room = MAX_TOOL_NAME.saturating_sub(head.len() + suffix.len());
        let kept: String = clean.chars().take(room).collect();
        let name = format!("{head}{kept}{suffix}");
        if taken.insert(name.clone()) {
            return name;
        }
        salt += 1;
    }
}

/// 32-bit FNV-1a of `text` and `salt`: stable across runs and versions,
/// which a name the model saw earlier in the session relies on.
fn fnv1a(text: &str, salt: u32) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes().chain(salt.to_le_bytes()) {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        name.len() <= MAX_TOOL_NAME
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_claude_codes() {
        let mut taken = BTreeSet::new();
        assert_eq!(assign("github", "get_issue", &mut taken), "mcp__github__get_issue");
        assert_eq!(assign("everything", "get-sum", &mut taken), "mcp__everything__get-sum");
        assert_eq!(server_of("mcp__github__get_issue"), Some("github"));
        assert!(is_mcp_tool("mcp__a__b") && !is_mcp_tool("shell"));
    }

    #[test]
    fn odd_long_and_clashing_names_stay_valid_unique_and_stable() {
        let mut taken = BTreeSet::new();
        let dotted = assign("s", "files.read", &mut taken);
        let underscored = assign("s", "files_read", &mut taken);
        assert!(dotted.starts_with("mcp__s__files_read_") && valid(&dotted), "{dotted}");
        assert_eq!(underscored, "mcp__s__files_read");
        let long = "a".repeat(100);
        let first = assign("server", &long, &mut taken);
        assert_eq!(first.len(), MAX_TOOL_NAME);
        assert!(valid(&first));
        let clash = assign("server", &long, &mut taken);
        assert_ne!(first, clash);
        assert!(valid(&clash));
        let again = assign("s", "files.read", &mut BTreeSet::new());
        assert_eq!(again, dotted, "the same tool gets the same name in every session");
        let unicode = assign("s", "überprüfen", &mut taken);
        assert!(valid(&unicode), "{unicode}");
    }
}
