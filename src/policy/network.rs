//! What the model's commands may reach on the network: the mode
//! (`[sandbox] network = "off" | "allowlist" | "on"`) and, in allowlist
//! mode, which host names (`allowed_domains`: exact names and
//! `*.suffix`). Pure: the proxy (`sandbox::netproxy`), `keel policy check
//! --net HOST` and the config's validation all judge through
//! [`NetAllowlist::judge`], so they cannot disagree.
//!
//! Invariants:
//! - names are compared lower-case, without a trailing dot;
//! - `*.example.com` matches `a.example.com` and `a.b.example.com`, never
//!   `example.com` itself (list both to allow both);
//! - an IP literal is never allowed by name: the allowlist is by name, and
//!   a raw address would bypass it;
//! - a trusted project only narrows: a host must be on the user's list
//!   and, when the project gives one, on the project's too.

use serde::{Deserialize, Serialize};

/// How much network a sandboxed command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkMode {
    /// A private network namespace with only loopback.
    #[default]
    Off,
    /// Loopback, plus HTTP(S) by host name through keel's proxy.
    Allowlist,
    /// The host's network.
    On,
}

impl NetworkMode {
    pub const NAMES: &'static str = "\"off\", \"allowlist\" or \"on\"";

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "off" => Some(NetworkMode::Off),
            "allowlist" => Some(NetworkMode::Allowlist),
            "on" => Some(NetworkMode::On),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Off => "off",
            NetworkMode::Allowlist => "allowlist",
            NetworkMode::On => "on",
        }
    }

    /// Whether commands are closed in a private network (off or allowlist).
    pub fn is_closed(self) -> bool {
        self != NetworkMode::On
    }
}

/// One `allowed_domains` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainPattern {
    /// `example.org`: that name only.
    Exact(String),
    /// `*.example.com`: any name ending in `.example.com`.
    Suffix(String),
}

/// Why an `allowed_domains` entry is not a pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("`{0}` is empty or not a host name (letters, digits, `-` and `.` only)")]
    NotAName(String),
    #[error("`{0}`: a wildcard is only allowed as a leading `*.` (e.g. `*.example.com`)")]
    Wildcard(String),
    #[error("`{0}` is an IP address: the allowlist is by host name")]
    Address(String),
    #[error("`{0}` is too broad: a wildcard needs at least two labels after `*.`")]
    TooBroad(String),
}

impl DomainPattern {
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let lower = normalize(text);
        let (suffix, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, lower.clone()),
        };
        if name.contains('*') {
            return Err(PatternError::Wildcard(text.to_owned()));
        }
        if is_ip_literal(&name) {
            return Err(PatternError::Address(text.to_owned()));
        }
        if !is_host_name(&name) {
            return Err(PatternError::NotAName(text.to_owned()));
        }
        if suffix && !name.contains('.') {
            return Err(PatternError::TooBroad(text.to_owned()));
        }
        Ok(if suffix { DomainPattern::Suffix(name) } else { DomainPattern::Exact(name) })
    }

    /// Whether `host` (lower-case, no trailing dot) matches.
    pub fn matches(&self, host: &str) -> bool {
        match self {
            DomainPattern::Exact(name) => host == name,
            DomainPattern::Suffix(name) => {
                host.len() > name.len() + 1
                    && host.ends_with(name.as_str())
                    && host.as_bytes()[host.len() - name.len() - 1] == b'.'
            }
        }
    }

    /// The pattern as a user writes it (`*.example.com`).
    pub fn text(&self) -> String {
        match self {
            DomainPattern::Exact(name) => name.clone(),
            DomainPattern::Suffix(name) => format!("*.{name}"),
        }
    }
}

/// The allowed host names of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetAllowlist {
    pub mode: NetworkMode,
    /// The user's `allowed_domains`.
    pub user: Vec<DomainPattern>,
    /// A trusted project's `allowed_domains`, which narrows the user's.
    pub project: Option<Vec<DomainPattern>>,
}

/// What the proxy does with a host, and why (said to the user, logged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetVerdict {
    pub allowed: bool,
    pub reason: String,
}

impl NetAllowlist {
    /// Whether a command may reach `host` (a name or an IP literal) by
    /// keel's proxy, and why.
    pub fn judge(&self, host: &str) -> NetVerdict {
        let host = normalize(host.trim_start_matches('[').trim_end_matches(']'));
        let deny = |reason: String| NetVerdict { allowed: false, reason };
        match self.mode {
            NetworkMode::On => {
                return NetVerdict {
                    allowed: true,
                    reason: "[sandbox] network = \"on\": commands use the host's network directly"
                        .to_owned(),
                };
            }
            NetworkMode::Off => {
                return deny(
                    "[sandbox] network = \"off\": commands reach loopback only; set network = \
                     \"allowlist\" and list the host in allowed_domains"
                        .to_owned(),
                );
            }
            NetworkMode::Allowlist => {}
        }
        if is_ip_literal(&host) {
            return deny(format!(
                "{host} is an IP address: keel's proxy allows host names from \
                 [sandbox] allowed_domains only"
            ));
        }
        let Some(user) = self.user.iter().find(|pattern| pattern.matches(&host)) else {
            return deny(format!("{host} is not in [sandbox] allowed_domains"));
        };
        if let Some(project) = &self.project
            && !project.iter().any(|pattern| pattern.matches(&host))
        {
            return deny(format!(
                "{host} is allowed by the user's allowed_domains ({}) but not by the \
                 project's, which narrows it",
                user.text()
            ));
        }
        NetVerdict {
            allowed: true,
            reason: format!("{host} matches `{}` in [sandbox] allowed_domains", user.text()),
        }
    }
}

/// Lower case, without a trailing dot.
fn normalize(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// An IPv4 or IPv6 literal (also the shorthand forms `getaddrinfo`
/// accepts, such as `127.1` or a bare number).
pub fn is_ip_literal(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.parse::<std::net::IpAddr>().is_ok()
        || host.contains(':')
        || (!host.is_empty()
            && host.split('.').all(|part| {
                !part.is_empty()
                    && (part.bytes().all(|b| b.is_ascii_digit())
                        || part
                            .strip_prefix("0x")
                            .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit())))
            }))
}

fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The patterns of a list, or the first entry that is not one.
pub fn parse_patterns(texts: &[String]) -> Result<Vec<DomainPattern>, PatternError> {
    texts.iter().map(|text| DomainPattern::parse(text)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(user: &[&str], project: Option<&[&str]>) -> NetAllowlist {
        let parse = |texts: &[&str]| {
            parse_patterns(&texts.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>()).unwrap()
        };
        NetAllowlist {
            mode: NetworkMode::Allowlist,
            user: parse(user),
            project: project.map(parse),
        }
    }

    #[test]
    fn exact_names_and_suffixes_match_as_documented() {
        let allow = list(&["pkgs.example.org", "*.example.com"], None);
        assert!(allow.judge("pkgs.example.org").allowed);
        assert!(allow.judge("PKGS.Example.org.").allowed);
        assert!(allow.judge("a.example.com").allowed);
        assert!(allow.judge("a.b.example.com").allowed);
        assert!(!allow.judge("example.com").allowed);
        assert!(!allow.judge("badexample.com").allowed);
        assert!(!allow.judge("other.example.org").allowed);
        let denied = allow.judge("evil.test");
        assert!(denied.reason.contains("not in [sandbox] allowed_domains"), "{}", denied.reason);
    }

    #[test]
    fn ip_literals_are_never_allowed_by_name() {
        let allow = list(&["*.example.com"], None);
        for host in ["127.0.0.1", "[::1]", "::1", "127.1", "2130706433", "0x7f.1", "10.0.0.1"] {
            let verdict = allow.judge(host);
            assert!(!verdict.allowed, "{host}");
            assert!(verdict.reason.contains("IP address"), "{host}: {}", verdict.reason);
        }
        assert!(DomainPattern::parse("10.0.0.1").is_err());
    }

    #[test]
    fn a_project_only_narrows() {
        let allow = list(&["*.example.com"], Some(&["a.example.com", "other.test"]));
        assert!(allow.judge("a.example.com").allowed);
        let narrowed = allow.judge("b.example.com");
        assert!(!narrowed.allowed);
        assert!(narrowed.reason.contains("project"), "{}", narrowed.reason);
        assert!(!allow.judge("other.test").allowed, "a project cannot add a host");
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        assert!(matches!(DomainPattern::parse("a.*.com"), Err(PatternError::Wildcard(_))));
        assert!(matches!(DomainPattern::parse("*.com"), Err(PatternError::TooBroad(_))));
        assert!(matches!(DomainPattern::parse("*"), Err(PatternError::Wildcard(_))));
        assert!(matches!(DomainPattern::parse(""), Err(PatternError::NotAName(_))));
        assert!(matches!(DomainPattern::parse("a b.org"), Err(PatternError::NotAName(_))));
    }

    #[test]
    fn off_and_on_say_which_setting_decides() {
        let mut allow = list(&["a.example.com"], None);
        allow.mode = NetworkMode::Off;
        let off = allow.judge("a.example.com");
        assert!(!off.allowed && off.reason.contains("network = \"off\""), "{}", off.reason);
        allow.mode = NetworkMode::On;
        assert!(allow.judge("anything.test").allowed);
    }
}
