//! Whole-output snapshots: what a user saw from one run of the real
//! binary (exit status, every stdout and stderr line) as one text, with
//! what differs between runs replaced by a stable name, for
//! `insta::assert_snapshot!`. A snapshot pins the whole output, so a line
//! that appears, disappears or changes wording fails the test, where a
//! `.contains(..)` check would not notice.
//!
//! Invariant: only what varies run to run is replaced (the sandbox's
//! folders, session ids, loopback ports, durations and retry delays,
//! timestamps, keel's version, whether the kernel offers the sandbox); texts,
//! counts, costs and the order of lines stay as the user saw them.

use std::process::Output;
use std::sync::LazyLock;

use regex::Regex;

use super::support::Sandbox;

/// Patterns for what differs between runs, each with its stable name,
/// applied in order (a more specific pattern before a general one).
static VOLATILE: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // Session ids are UUIDv7s.
        (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<id>"),
        (r"(?:127\.0\.0\.1|localhost|\[::1\]):\d{2,5}", "127.0.0.1:<port>"),
        (r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?", "<time>"),
        // Durations, and retry delays (jittered).
        (r#""(duration_ms|elapsed_ms|wall_ms|delay_ms)":\d+"#, r#""$1":<ms>"#),
        // Whether this machine's kernel offers the sandbox is the machine's.
        (r"· sandbox (on|unavailable)\b", "· sandbox <state>"),
        (r#""sandbox":"(on|unavailable)""#, r#""sandbox":"<state>""#),
        (r"\b\d+(?:\.\d+)?\s?(ms|s)\b", "<duration>"),
    ]
    .into_iter()
    .map(|(pattern, name)| (Regex::new(pattern).unwrap(), name))
    .collect()
});

/// The run's whole output as one stable text: exit status, then stdout and
/// stderr, each line as printed.
pub fn of(output: &Output, sandbox: &Sandbox) -> String {
    let exit = match output.status.code() {
        Some(code) => format!("exit {code}"),
        None => "killed by a signal".to_owned(),
    };
    let stdout = stable(&String::from_utf8_lossy(&output.stdout), sandbox);
    let stderr = stable(&String::from_utf8_lossy(&output.stderr), sandbox);
    format!("{exit}\n--- stdout\n{stdout}--- stderr\n{stderr}")
}

/// `text` with the sandbox's folders and every volatile part named.
pub fn stable(text: &str, sandbox: &Sandbox) -> String {
    // The home may lie inside the repo's parent: the longer path first.
    let version = env!("CARGO_PKG_VERSION");
    let mut text = text
        .replace(&sandbox.repo.display().to_string(), "<repo>")
        .replace(&sandbox.home.display().to_string(), "<home>")
        .replace(&format!("keel {version} ·"), "keel <version> ·")
        .replace(&format!(r#""keel_version":"{version}""#), r#""keel_version":"<version>""#);
    for (pattern, name) in VOLATILE.iter() {
        text = pattern.replace_all(&text, *name).into_owned();
    }
    text
}

#[test]
fn volatile_parts_are_named_and_the_rest_is_kept() {
    let sandbox = Sandbox::new();
    let text = format!(
        "session 0193a0b4-7c1d-7e2f-8a3b-4c5d6e7f8091 in {}/src at http://127.0.0.1:43211/v1 took 1.25 s\n\
         cost $0.0123, 3 steps\n",
        sandbox.repo.display()
    );
    assert_eq!(
        stable(&text, &sandbox),
        "session <id> in <repo>/src at http://127.0.0.1:<port>/v1 took <duration>\n\
         cost $0.0123, 3 steps\n"
    );
}
