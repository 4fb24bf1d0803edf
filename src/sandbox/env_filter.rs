//! Which inherited environment variables a child process does not get:
//! credentials (`*_API_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, …) are
//! stripped from every command keel spawns (the model's shell commands and
//! hooks alike), so a command cannot read, print or send them.
//!
//! Invariants: the built-in patterns ([`DEFAULT_STRIP`]) always apply; the
//! user's `[shell] env_strip` adds patterns, and `[shell] env_keep` is the
//! only way to pass a matching variable through (user config and `-c`
//! only: `config::layers` drops a project's `env_keep`). Patterns are
//! case-insensitive with `*` for any run of characters. Variables a
//! [`CommandSpec`](super::CommandSpec) sets explicitly are never stripped.
//! The filter is process-wide, like the session confinement: one session
//! per process sets it at start.

use std::sync::RwLock;

/// Always stripped, whatever the configuration adds.
pub const DEFAULT_STRIP: [&str; 6] =
    ["*_API_KEY", "*_TOKEN", "*_SECRET", "*_SECRET_*", "*PASSWORD*", "*_PRIVATE_KEY"];

/// Which inherited variables to strip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvFilter {
    /// Upper-cased patterns, the defaults first.
    strip: Vec<String>,
    /// Upper-cased patterns passed through even when stripped.
    keep: Vec<String>,
}

impl Default for EnvFilter {
    fn default() -> Self {
        Self::new(&[], &[])
    }
}

impl EnvFilter {
    /// The built-in patterns plus `extra_strip`, minus what `keep` names.
    pub fn new(extra_strip: &[String], keep: &[String]) -> Self {
        let upper = |patterns: &[String]| -> Vec<String> {
            patterns
                .iter()
                .map(|p| p.trim().to_ascii_uppercase())
                .filter(|p| !p.is_empty())
                .collect()
        };
        let mut strip: Vec<String> = DEFAULT_STRIP.iter().map(|p| (*p).to_owned()).collect();
        strip.extend(upper(extra_strip));
        Self { strip, keep: upper(keep) }
    }

    /// Whether a child must not inherit variable `name`.
    pub fn strips(&self, name: &str) -> bool {
        let name = name.to_ascii_uppercase();
        self.strip.iter().any(|p| wildcard(p, &name))
            && !self.keep.iter().any(|p| wildcard(p, &name))
    }
}

static FILTER: RwLock<Option<EnvFilter>> = RwLock::new(None);

/// Sets the filter for every later spawn (the runtime, once per session).
pub fn set_env_filter(filter: EnvFilter) {
    if let Ok(mut slot) = FILTER.write() {
        *slot = Some(filter);
    }
}

/// The names of our own variables a child must not inherit.
pub(super) fn stripped_names() -> Vec<std::ffi::OsString> {
    let filter = FILTER.read().ok().and_then(|slot| slot.clone()).unwrap_or_default();
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| name.to_str().is_some_and(|name| filter.strips(name)))
        .collect()
}

/// `*` matches any run of characters; everything else matches itself.
fn wildcard(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else { return false };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else { return rest.is_empty() };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_strips_credentials_and_nothing_else() {
        let filter = EnvFilter::default();
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "aws_secret",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD_FILE",
            "password",
            "SSH_PRIVATE_KEY",
        ] {
            assert!(filter.strips(name), "{name}");
        }
        for name in ["PATH", "HOME", "TOKENIZERS_PARALLELISM", "KEEL_SECRETARY", "AWS_REGION"] {
            assert!(!filter.strips(name), "{name}");
        }
    }

    #[test]
    fn configured_patterns_add_and_keep_exempts() {
        let filter = EnvFilter::new(&["corp_*".into()], &["GH_TOKEN".into(), "NPM_*".into()]);
        assert!(filter.strips("CORP_SSO"));
        assert!(filter.strips("OPENAI_API_KEY"), "defaults stay");
        assert!(!filter.strips("GH_TOKEN"));
        assert!(!filter.strips("npm_token"));
        assert!(filter.strips("GITHUB_TOKEN"));
    }

    #[test]
    fn wildcards_anchor_both_ends() {
        assert!(wildcard("*_TOKEN", "GH_TOKEN"));
        assert!(!wildcard("*_TOKEN", "GH_TOKENS"));
        assert!(wildcard("*PASSWORD*", "PASSWORD"));
        assert!(wildcard("A*B*C", "AXXBYYC"));
        assert!(!wildcard("A*B*C", "AXXC"));
        assert!(wildcard("EXACT", "EXACT"));
        assert!(!wildcard("EXACT", "EXACTLY"));
    }
}
