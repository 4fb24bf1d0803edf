//! Secrets recognised by their shape, for exports: a transcript leaves
//! the machine, so besides the values keel knew ([`super::SecretMask`])
//! it also hides anything that looks like a well-known credential: PEM
//! private keys, `sk-…` API keys (OpenAI, Anthropic), GitHub tokens
//! (`ghp_…`, `gho_…`, `github_pat_…`), AWS access key ids (`AKIA…`),
//! Slack tokens (`xoxb-…`, `xoxp-…`) and JSON Web Tokens (`eyJ….eyJ….…`).
//!
//! Invariants: pure; each shape becomes `[redacted: WHAT]`; masking is
//! idempotent (no replacement has a shape); a shape needs enough
//! characters after its prefix that prose (`sk-learn`, `AKIA` alone) is
//! left alone. What it cannot catch: credentials of other shapes (a
//! plain password, a random hex key) and ones split across lines.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// The shapes, each with what it is called in its replacement.
const SHAPES: [(&str, &str); 7] = [
    (
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
        "private key",
    ),
    (r"\bsk-[A-Za-z0-9_-]{20,}", "sk- API key"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}", "GitHub token"),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "GitHub token"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "AWS access key id"),
    (r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "Slack token"),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "JSON Web Token"),
];

/// The compiled shapes (a pattern that failed to compile would be a bug
/// caught by the tests; it is left out rather than panicking).
static COMPILED: LazyLock<Vec<(Regex, String)>> = LazyLock::new(|| {
    SHAPES
        .iter()
        .filter_map(|(pattern, what)| {
            Regex::new(pattern).ok().map(|regex| (regex, format!("[redacted: {what}]")))
        })
        .collect()
});

/// `text` with every well-known credential shape replaced.
pub fn mask_secret_shapes(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for (regex, replacement) in COMPILED.iter() {
        if regex.is_match(&out) {
            out = Cow::Owned(regex.replace_all(&out, replacement.as_str()).into_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_compiles() {
        assert_eq!(COMPILED.len(), SHAPES.len());
    }

    #[test]
    fn each_shape_is_masked() {
        let cases = [
            (
                "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nok",
                "key:\n[redacted: private key]\nok",
            ),
            ("-----BEGIN RSA PRIVATE KEY-----\nMIIE cut off", "[redacted: private key]"),
            ("OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI=[redacted: sk- API key]"),
            ("sk-ant-api03-abcdefghijklmnopqrstu", "[redacted: sk- API key]"),
            ("t ghp_abcdefghijklmnopqrstuvwxyz0123456789 x", "t [redacted: GitHub token] x"),
            ("github_pat_11ABCDEFG0123456789_abcdefghij", "[redacted: GitHub token]"),
            ("id AKIAIOSFODNN7EXAMPLE.", "id [redacted: AWS access key id]."),
            ("xoxb-123456789012-abcdefghij", "[redacted: Slack token]"),
            (
                "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "Bearer [redacted: JSON Web Token]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(mask_secret_shapes(text), want, "{text}");
        }
    }

    #[test]
    fn prose_and_public_keys_stay() {
        for text in [
            "use sk-learn for that",
            "AKIA alone",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG user@host",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "gh_pr_list and ghp_short",
        ] {
            assert!(matches!(mask_secret_shapes(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn masking_twice_changes_nothing_more() {
        let once = mask_secret_shapes("a sk-abcdefghijklmnopqrstuvwxyz b").into_owned();
        assert_eq!(mask_secret_shapes(&once), once);
    }
}
