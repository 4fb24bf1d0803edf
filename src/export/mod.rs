//! Exporting a session (`keel export ID --format md|html|json|atif`): the
//! log's records folded into a [`Transcript`] (`transcript.rs`), every
//! string in it masked, then rendered as Markdown (`markdown.rs`), a
//! self-contained HTML page (`html.rs`: inline CSS, no script, everything
//! escaped) or JSON (the transcript itself; schema in
//! `schemas/export.schema.json`, generated from [`Transcript`] by
//! [`json_schema`]); or folded into a Harbor ATIF trajectory (`atif.rs`),
//! masked the same way.
//!
//! Invariants: pure (the log is read and the file written by
//! `cli/export_cmd.rs`); before any format sees it, each string of the
//! transcript passes the caller's [`SecretMask`] (the values the current
//! environment and `.env` files know) and [`mask_secret_shapes`] (private
//! keys, `sk-…`, `ghp_…`, `AKIA…`, `xox?-…`, JWTs), so a secret logged by
//! an older keel, or one keel never knew by value but recognises by
//! shape, does not leave in an export. Long outputs are collapsed
//! (`<details>`) past [`COLLAPSE_LINES`] lines or [`COLLAPSE_BYTES`]
//! bytes.

mod atif;
mod html;
mod markdown;
mod transcript;

use serde_json::Value;

use crate::display::{SecretMask, mask_secret_shapes};
use crate::protocol::EventRecord;

pub use transcript::{
    ApprovalEntry, CallEntry, CallResult, EXPORT_SCHEMA_VERSION, Entry, TokenUsage, Transcript,
    Turn, transcript,
};

/// Outputs longer than this many lines are collapsed.
pub const COLLAPSE_LINES: usize = 12;
/// Outputs longer than this many bytes are collapsed.
pub const COLLAPSE_BYTES: usize = 1200;

/// What an export is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    Json,
    /// Harbor's Agent Trajectory Interchange Format (`atif.rs`).
    Atif,
}

impl Format {
    /// `md`, `html`, `json` or `atif` (`markdown` too).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "md" | "markdown" => Some(Self::Markdown),
            "html" => Some(Self::Html),
            "json" => Some(Self::Json),
            "atif" => Some(Self::Atif),
            _ => None,
        }
    }

    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Markdown => "md",
            Self::Html => "html",
            Self::Json | Self::Atif => "json",
        }
    }
}

/// Why an export could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("cannot encode the transcript as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// The session of `records` in `format`, masked.
pub fn export(
    records: &[EventRecord],
    format: Format,
    mask: &SecretMask,
) -> Result<String, ExportError> {
    if format == Format::Atif {
        let mut value = serde_json::to_value(atif::trajectory(records))?;
        mask_value(&mut value, mask);
        let mut text = serde_json::to_string_pretty(&value)?;
        text.push('\n');
        return Ok(text);
    }
    let transcript = masked(transcript(records), mask)?;
    Ok(match format {
        Format::Markdown => markdown::render(&transcript),
        Format::Html => html::render(&transcript),
        Format::Json | Format::Atif => {
            let mut text = serde_json::to_string_pretty(&transcript)?;
            text.push('\n');
            text
        }
    })
}

/// `transcript` with every string (and object key) masked.
pub fn masked(transcript: Transcript, mask: &SecretMask) -> Result<Transcript, ExportError> {
    let mut value = serde_json::to_value(&transcript)?;
    mask_value(&mut value, mask);
    Ok(serde_json::from_value(value)?)
}

fn mask_value(value: &mut Value, mask: &SecretMask) {
    match value {
        Value::String(text) => {
            let known = mask.mask(text);
            if let std::borrow::Cow::Owned(shaped) = mask_secret_shapes(&known) {
                *text = shaped;
            } else if let std::borrow::Cow::Owned(known) = known {
                *text = known;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| mask_value(item, mask)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                let Some(mut inner) = map.remove(&key) else { continue };
                mask_value(&mut inner, mask);
                let mut shown = Value::String(key);
                mask_value(&mut shown, mask);
                map.insert(shown.as_str().unwrap_or_default().to_owned(), inner);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The JSON schema of `--format json` (draft 2020-12).
pub fn json_schema() -> Value {
    schemars::schema_for!(Transcript).to_value()
}

/// Whether `output` is long enough to be collapsed.
pub(crate) fn is_long(output: &str) -> bool {
    output.len() > COLLAPSE_BYTES || output.lines().count() > COLLAPSE_LINES
}

/// Whether `call`'s arguments say more than its summary line (a shell
/// call's lone `command` does not; an edit's strings do).
pub(crate) fn says_more(call: &CallEntry) -> bool {
    match &call.arguments {
        Value::Object(args) if args.len() == 1 => {
            args.values().next().and_then(Value::as_str) != Some(call.summary.as_str())
        }
        Value::Object(args) => !args.is_empty(),
        Value::String(text) => text != &call.summary,
        Value::Null => false,
        Value::Bool(_) | Value::Number(_) | Value::Array(_) => true,
    }
}

/// A log timestamp for people: `2026-12-02 14:20:01 UTC`.
pub(crate) fn when(ts: &str) -> String {
    let Some((date, time)) = ts.split_once('T') else { return ts.to_owned() };
    let time = time.trim_end_matches('Z');
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    format!("{date} {time} UTC")
}

/// Whether a result reads as a unified diff (`edit_file`, `write_file`,
/// `apply_patch` show one).
pub(crate) fn looks_like_diff(output: &str) -> bool {
    output.lines().any(|line| line.starts_with("@@ "))
        && output.lines().any(|line| line.starts_with("+++ ") || line.starts_with("--- "))
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
