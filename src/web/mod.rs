//! Reading the web for `web_fetch` (issue 39): keel's own HTTP client
//! ([`fetch`]), which fetches one URL hop by hop, and what a response
//! becomes for the model ([`convert`]: HTML as Markdown, text and JSON as
//! they are, anything else summarised).
//!
//! The way out is the allowlist proxy's (`sandbox::netproxy`): every host
//! is resolved by its resolver (the `[sandbox] hosts` map first; names
//! that resolve to a loopback, link-local or unspecified address are
//! refused unless `hosts` maps them), and every hop's judgement is
//! recorded there as a `network_access` line of the call. The loop judged
//! the call's URL before it ran (`policy::web_rules`); a redirect is
//! never followed by the client: each hop is judged again by the same
//! rules ([`WebAccess::judge_hop`]) and followed only to a host a rule
//! allows or the host the call was approved for.
//!
//! Invariants: nothing is fetched from a host the policy did not allow;
//! at most [`MAX_READ`] bytes of a body are read, at most [`MAX_TEXT`]
//! bytes of text returned, at most [`MAX_REDIRECTS`] hops followed; no
//! system proxy, cookie or credential is used. The page's text is
//! untrusted: the history fences it (`protocol::origin`).

pub mod convert;
mod fetch;

use std::collections::BTreeMap;
use std::net::IpAddr;

pub use fetch::fetch;

use crate::policy::RuleDecision;
use crate::policy::web_rules::{WebRule, judge_host};

/// The most bytes of a response body read.
pub const MAX_READ: usize = 10 * 1024 * 1024;
/// The most bytes of text given to the model.
pub const MAX_TEXT: usize = 100 * 1024;
/// The most redirects followed for one call.
pub const MAX_REDIRECTS: usize = 5;

/// What a session's `web_fetch` may reach and how names resolve.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WebAccess {
    /// The session's `web_rule`s.
    pub rules: Vec<WebRule>,
    /// The project is trusted: its allow rules count.
    pub project_trusted: bool,
    /// `[sandbox] hosts`.
    pub hosts: BTreeMap<String, IpAddr>,
    /// Where each hop's judgement goes (the session's, as its commands').
    pub net_log: crate::sandbox::netproxy::NetLog,
}

impl WebAccess {
    /// Whether a redirect hop to `host` may be followed, from a call
    /// approved for `approved`: `Err` with the reason when not.
    pub fn judge_hop(&self, approved: &str, host: &str) -> Result<String, String> {
        let judged = judge_host(&self.rules, self.project_trusted, host);
        match judged.decision {
            Some(RuleDecision::Forbidden) => Err(judged.reason),
            Some(RuleDecision::Allow) => Ok(judged.reason),
            Some(RuleDecision::Prompt) | None if host == approved => {
                Ok(format!("a redirect on {host}, the host the call was approved for"))
            }
            Some(RuleDecision::Prompt) | None => Err(format!(
                "a redirect to {host}, which no web_rule allows, is not followed ({}); call \
                 web_fetch with that URL to ask for it",
                judged.reason
            )),
        }
    }
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{url:?} is not an http:// or https:// URL with a host name")]
    BadUrl { url: String },
    #[error("not fetched: {reason}")]
    Refused { reason: String },
    #[error("cannot fetch {url}: {message}")]
    Request { url: String, message: String },
    #[error("more than {MAX_REDIRECTS} redirects, last to {url}")]
    TooManyRedirects { url: String },
    #[error("the fetch was interrupted")]
    Cancelled,
}

/// A fetched response, its body bounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The URL that answered (after redirects).
    pub url: String,
    /// The URLs redirected from, in order.
    pub redirected_from: Vec<String>,
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// At most [`MAX_READ`] bytes.
    pub body: Vec<u8>,
    /// The body was longer than what was read.
    pub cut: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Origin, RuleSet};

    #[test]
    fn a_hop_is_followed_to_an_allowed_host_or_on_the_approved_one_only() {
        let mut rules = RuleSet::default();
        let text = "web_rule(host=\"docs.example.test\")\nweb_rule(host=\"bad.example.test\", \
                    decision=\"forbidden\")";
        rules.load("u.rules", text, Origin::User).unwrap();
        let access = WebAccess { rules: rules.web_rules, ..WebAccess::default() };
        assert!(access.judge_hop("asked.example.test", "docs.example.test").is_ok());
        assert!(access.judge_hop("asked.example.test", "asked.example.test").is_ok());
        let refused = access.judge_hop("asked.example.test", "other.example.test").unwrap_err();
        assert!(refused.contains("no web_rule allows"), "{refused}");
        assert!(access.judge_hop("bad.example.test", "bad.example.test").is_err());
        assert!(access.judge_hop("docs.example.test", "127.0.0.1").is_err());
    }
}
