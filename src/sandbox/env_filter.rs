//! Which of keel's own environment variables a child process gets.
//! Children never inherit the environment wholesale: every spawn starts
//! from an empty environment ([`child_env`]) and gets either keel's own
//! minus credentials ([`EnvBase::Filtered`]: the model's commands, hooks)
//! or a fixed minimal set ([`EnvBase::Minimal`]: keel's own helpers such
//! as git). Credentials are names like `*_API_KEY`, `*_TOKEN`, `*_SECRET`,
//! `*PASSWORD*`, `DATABASE_URL`, `*_KEY` ([`DEFAULT_STRIP`]) and any value
//! that is a URL carrying a password (`postgres://u:pw@host`).
//!
//! Invariants: the built-in patterns always apply; the user's `[shell]
//! env_strip` adds patterns, and `[shell] env_keep` is the only way to pass
//! a stripped variable through (user config and `-c` only: `config::layers`
//! drops a project's `env_keep`). Patterns are case-insensitive with `*`
//! for any run of characters. Variables a
//! [`CommandSpec`](super::CommandSpec) sets explicitly are never stripped.
//! The filter is a value, never process-wide state: a session's
//! [`CommandJail`](super::CommandJail) carries it to the model's
//! commands, and hooks, MCP servers and the editor get it explicitly
//! ([`EnvBase::Filtered`]); a spec that names none gets
//! [`EnvBase::Minimal`], so a forgotten filter passes less, never a key.
//! A session calls [`protect_own_environ`] at start: from then on keel's
//! own `/proc/self/environ` (the one copy of the keys it cannot erase
//! without `unsafe`) is unreadable to other processes of the same user.

use std::ffi::OsString;

/// Always stripped, whatever the configuration adds.
pub const DEFAULT_STRIP: [&str; 19] = [
    "API_KEY",
    "*_API_KEY",
    "*APIKEY*",
    "*_KEY",
    "*_PRIVATE_KEY",
    "TOKEN",
    "*_TOKEN",
    "*_TOKEN_*",
    "SECRET",
    "*_SECRET",
    "*_SECRET_*",
    "*SECRET_KEY*",
    "*PASSWORD*",
    "*PASSWD*",
    "*CREDENTIAL*",
    "DATABASE_URL",
    "*_DATABASE_URL",
    "*_DSN",
    "*_CONNECTION_STRING",
];

/// Variables a child started with [`EnvBase::Minimal`] inherits.
const MINIMAL: [&str; 6] = ["PATH", "HOME", "TMPDIR", "TZ", "USER", "LOGNAME"];

/// What a child inherits of keel's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum EnvBase {
    /// Everything but what the filter strips (the model's commands,
    /// hooks, MCP servers, the user's editor).
    Filtered(EnvFilter),
    /// Only `PATH`, `HOME`, `TMPDIR`, `TZ`, `USER`, `LOGNAME` (keel's own
    /// helpers, which must not be steered by `GIT_*` or the like; and
    /// every spec that was given no filter).
    #[default]
    Minimal,
}

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

    /// Whether a child must not inherit variable `name` (by its name).
    pub fn strips(&self, name: &str) -> bool {
        let name = name.to_ascii_uppercase();
        self.strip.iter().any(|p| wildcard(p, &name)) && !self.kept(&name)
    }

    /// Whether a child must not inherit `name=value`: a credential name,
    /// or a value holding a URL with a password.
    pub fn strips_pair(&self, name: &str, value: &str) -> bool {
        self.strips(name) || (has_url_password(value) && !self.kept(&name.to_ascii_uppercase()))
    }

    /// Whether `name=value` is a credential by the strip patterns or its
    /// URL password, `env_keep` or not: what a child may get is not what
    /// the model may read (`display::SecretMask` masks these values).
    pub fn names_credential(&self, name: &str, value: &str) -> bool {
        let upper = name.to_ascii_uppercase();
        self.strip.iter().any(|p| wildcard(p, &upper)) || has_url_password(value)
    }

    fn kept(&self, upper_name: &str) -> bool {
        self.keep.iter().any(|p| wildcard(p, upper_name))
    }
}

/// Marks keel's process non-dumpable: `/proc/<keel>/environ` (and `mem`,
/// `fd/`) then need `CAP_SYS_PTRACE`, so a command running as the same
/// unprivileged user cannot read the API keys keel was started with.
/// Root keeps the capability; the sandbox's PID namespace hides keel from
/// such commands. Children are unaffected (`execve` resets the flag).
/// Best effort: a kernel that refuses leaves things as they were.
pub fn protect_own_environ() {
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

/// The environment a child starts with (before the spec's own additions).
pub fn child_env(base: &EnvBase) -> Vec<(OsString, OsString)> {
    match base {
        EnvBase::Minimal => std::env::vars_os()
            .filter(|(name, _)| name.to_str().is_some_and(|name| MINIMAL.contains(&name)))
            .collect(),
        EnvBase::Filtered(filter) => filtered_env(filter),
    }
}

/// keel's environment minus what `filter` strips.
pub fn filtered_env(filter: &EnvFilter) -> Vec<(OsString, OsString)> {
    std::env::vars_os()
        .filter(|(name, value)| match (name.to_str(), value.to_str()) {
            (Some(name), Some(value)) => !filter.strips_pair(name, value),
            (Some(name), None) => !filter.strips(name),
            // A name that is not UTF-8 cannot be judged: not passed on.
            (None, _) => false,
        })
        .collect()
}

/// Whether `value` holds `scheme://user:password@…` with a non-empty
/// password (a database URL, a git remote with a token).
fn has_url_password(value: &str) -> bool {
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = rest.split(['/', '?', '#', ' ']).next().unwrap_or_default();
        let Some((userinfo, _host)) = authority.rsplit_once('@') else { return false };
        userinfo.split_once(':').is_some_and(|(_, password)| !password.is_empty())
    })
}

/// `*` matches any run of characters (`/` and spaces included); every
/// other character matches itself, and the whole text must match. The one
/// matcher of keel's `*` patterns: variable names here, hook `if` rules
/// (`Bash(git push *--force*)`) in `hooks/config.rs`.
pub fn wildcard(pattern: &str, text: &str) -> bool {
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
    fn plain_and_url_credentials_are_stripped_too() {
        let filter = EnvFilter::default();
        for name in [
            "API_KEY",
            "TOKEN",
            "SECRET",
            "DATABASE_URL",
            "STAGING_DATABASE_URL",
            "STRIPE_KEY",
            "OPENAI_APIKEY",
            "SENTRY_DSN",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "DJANGO_SECRET_KEY",
            "MYSQL_PASSWD",
            "GH_TOKEN_FILE",
        ] {
            assert!(filter.strips(name), "{name}");
        }
        assert!(filter.strips_pair("UPSTREAM", "postgres://app:hunter2@db:5432/x"));
        assert!(filter.strips_pair("REMOTE", "see https://x-access-token:ghp_1@github.com/o/r"));
        for (name, value) in [
            ("REMOTE", "ssh://git@github.com/o/r"),
            ("HOMEPAGE", "https://example.com/a:b@c"),
            ("PROXY", "http://proxy:3128"),
            ("EMPTY_PW", "https://user:@host"),
        ] {
            assert!(!filter.strips_pair(name, value), "{name}={value}");
        }
        let keep = EnvFilter::new(&[], &["UPSTREAM".into()]);
        assert!(!keep.strips_pair("UPSTREAM", "postgres://app:hunter2@db/x"));
    }

    #[test]
    fn a_kept_variable_still_names_a_credential() {
        let filter = EnvFilter::new(&[], &["GH_TOKEN".into()]);
        assert!(!filter.strips("GH_TOKEN"));
        assert!(filter.names_credential("GH_TOKEN", "ghp_x"));
        assert!(filter.names_credential("REMOTE", "https://u:pw@host/r"));
        assert!(!filter.names_credential("PATH", "/usr/bin"));
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
        // Hook `if` rules, as Claude Code matches them.
        assert!(wildcard("git push *--force*", "git push --force origin main"));
        assert!(wildcard("git push *-f*", "git push -f origin main"));
        assert!(!wildcard("git push *-f*", "git push origin main"));
        assert!(wildcard(".env*", ".env.local"));
        assert!(!wildcard(".env*", "src/config.ts"));
        assert!(wildcard("*", ""));
        assert!(!wildcard("EXACT", "EXACTLY"));
    }
}
