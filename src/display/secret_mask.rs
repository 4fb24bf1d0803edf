//! The values a session must never show, masked in text: the credentials
//! keel strips from its children's environments, the provider's key, and
//! the values of the secret files it protects (`.env`), each known by
//! name at session start ([`KnownSecret`]). Wherever one of them appears
//! in a tool's output it becomes `[redacted: NAME]` before the model, the
//! log, the screen or an export sees it (the runtime applies
//! [`SecretMask`] where a batch's results are made).
//!
//! Invariants: pure; a value shorter than [`MIN_SECRET_LEN`] characters
//! is never masked (it would hit ordinary words: `true`, `8080`); the
//! longest value wins where two overlap (leftmost-longest), so a value
//! that contains another is masked whole; masking is idempotent (no
//! replacement contains a value of eight characters or more that was not
//! already there, since names are checked: a name that holds a value is
//! masked as `[redacted]`); an empty mask costs one branch per text.
//! What it cannot catch: a value it never saw (a secret read from a file
//! it was not told about), one transformed on the way (base64, split,
//! reversed, URL-encoded), and short values.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

/// Values shorter than this (in characters) are not masked.
pub const MIN_SECRET_LEN: usize = 8;

/// A value to mask and the name it is masked as (`GITHUB_TOKEN`,
/// `.env:DB_PASSWORD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownSecret {
    pub name: String,
    pub value: String,
}

impl KnownSecret {
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self { name: name.into(), value: value.into() }
    }
}

/// The error of building a mask.
#[derive(Debug, thiserror::Error)]
pub enum SecretMaskError {
    #[error("cannot build the secret mask of {count} values: {message}")]
    Build { count: usize, message: String },
}

/// A matcher over a session's known secret values.
#[derive(Debug, Clone, Default)]
pub struct SecretMask {
    /// `None` when there is nothing to mask.
    matcher: Option<AhoCorasick>,
    /// The replacement of each pattern, by pattern index.
    replacements: Vec<String>,
    /// The names, for reports (`keel debug`, warnings).
    names: Vec<String>,
}

impl SecretMask {
    /// A mask of `secrets` (short values dropped, duplicates kept once
    /// under their first name).
    pub fn new(secrets: &[KnownSecret]) -> Result<Self, SecretMaskError> {
        let mut values: Vec<&str> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for secret in secrets {
            let value = secret.value.as_str();
            if value.chars().count() < MIN_SECRET_LEN || values.contains(&value) {
                continue;
            }
            values.push(value);
            names.push(secret.name.clone());
        }
        if values.is_empty() {
            return Ok(Self::default());
        }
        let matcher =
            AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&values).map_err(
                |error| SecretMaskError::Build { count: values.len(), message: error.to_string() },
            )?;
        let replacements = names
            .iter()
            .map(|name| {
                // A name that spells a value would reveal it.
                if values.iter().any(|value| name.contains(value)) {
                    "[redacted]".to_owned()
                } else {
                    format!("[redacted: {name}]")
                }
            })
            .collect();
        Ok(Self { matcher: Some(matcher), replacements, names })
    }

    /// Whether nothing is masked.
    pub fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The names of the values masked.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// `text` with every known value replaced by `[redacted: NAME]`.
    pub fn mask<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(matcher) = &self.matcher else { return Cow::Borrowed(text) };
        if !matcher.is_match(text) {
            return Cow::Borrowed(text);
        }
        Cow::Owned(matcher.replace_all(text, &self.replacements))
    }

    /// Masks `text` where it is.
    pub fn mask_string(&self, text: &mut String) {
        if let Cow::Owned(masked) = self.mask(text) {
            *text = masked;
        }
    }

    /// Masks every string (and object key) inside `value`.
    pub fn mask_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(text) => self.mask_string(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.mask_json(item)),
            Value::Object(map) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                for key in keys {
                    let Some(mut inner) = map.remove(&key) else { continue };
                    self.mask_json(&mut inner);
                    map.insert(self.mask(&key).into_owned(), inner);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// The `KEY=VALUE` lines of a `.env`-style file, each named
/// `{file}:{KEY}`: `export ` prefixes, quotes and unquoted trailing `#`
/// comments taken off; blank lines, comments and lines without a name
/// skipped. Values are kept whatever their length ([`SecretMask::new`]
/// drops the short ones).
pub fn parse_env_file(file: &str, text: &str) -> Vec<KnownSecret> {
    text.lines()
        .filter_map(|line| env_line(line))
        .map(|(key, value)| KnownSecret::new(format!("{file}:{key}"), value))
        .collect()
}

/// One `KEY=VALUE` line, or `None`.
fn env_line(line: &str) -> Option<(&str, String)> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let line = line.strip_prefix("export ").map_or(line, str::trim_start);
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    let named = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
    if !named {
        return None;
    }
    let value = value.trim();
    let unquoted = ['"', '\'', '`'].iter().find_map(|quote| {
        let rest = value.strip_prefix(*quote)?;
        rest.find(*quote).map(|end| rest[..end].to_owned())
    });
    let value = match unquoted {
        Some(inner) => inner,
        None => match value.find(" #") {
            Some(at) => value[..at].trim_end().to_owned(),
            None => value.to_owned(),
        },
    };
    Some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(secrets: &[(&str, &str)]) -> SecretMask {
        let secrets: Vec<KnownSecret> =
            secrets.iter().map(|(name, value)| KnownSecret::new(*name, *value)).collect();
        SecretMask::new(&secrets).unwrap()
    }

    #[test]
    fn known_values_become_their_names() {
        let mask = mask(&[("GITHUB_TOKEN", "ghp_canary_value_123"), ("DB", "hunter2-long")]);
        let text = "token=ghp_canary_value_123\npw: hunter2-long, again ghp_canary_value_123";
        assert_eq!(
            mask.mask(text),
            "token=[redacted: GITHUB_TOKEN]\npw: [redacted: DB], again [redacted: GITHUB_TOKEN]"
        );
        assert!(matches!(mask.mask("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_never_masked_and_an_empty_mask_is_free() {
        let mask = mask(&[("PORT_TOKEN", "8080"), ("FLAG_SECRET", "true")]);
        assert!(mask.is_empty());
        assert_eq!(mask.mask("listening on 8080: true"), "listening on 8080: true");
    }

    #[test]
    fn the_longest_value_wins_and_masking_twice_changes_nothing() {
        let mask = mask(&[("SHORT", "abcdefgh"), ("LONG", "abcdefgh-ijklmnop")]);
        let once = mask.mask("x abcdefgh-ijklmnop y abcdefgh").into_owned();
        assert_eq!(once, "x [redacted: LONG] y [redacted: SHORT]");
        assert_eq!(mask.mask(&once), once);
    }

    #[test]
    fn a_name_that_holds_a_value_does_not_show_it() {
        let mask = mask(&[("token-abcdefgh", "abcdefgh")]);
        assert_eq!(mask.mask("see abcdefgh"), "see [redacted]");
    }

    #[test]
    fn json_strings_and_keys_are_masked() {
        let mask = mask(&[("K", "sekrit-value")]);
        let mut value = serde_json::json!({
            "a": ["x sekrit-value", 1, {"sekrit-value": "sekrit-value"}],
            "b": null
        });
        mask.mask_json(&mut value);
        assert_eq!(
            value,
            serde_json::json!({
                "a": ["x [redacted: K]", 1, {"[redacted: K]": "[redacted: K]"}],
                "b": null
            })
        );
    }

    #[test]
    fn env_files_parse_like_dotenv() {
        let text = "# comment\n\nexport API_KEY=abc123456789\nDB_PASSWORD=\"quoted value #1\"\n\
                    PLAIN=plain-value # a comment\nSINGLE='it''s'\n=novalue\nnot a line\n";
        let parsed = parse_env_file(".env", text);
        let pairs: Vec<(&str, &str)> =
            parsed.iter().map(|s| (s.name.as_str(), s.value.as_str())).collect();
        assert_eq!(
            pairs,
            [
                (".env:API_KEY", "abc123456789"),
                (".env:DB_PASSWORD", "quoted value #1"),
                (".env:PLAIN", "plain-value"),
                (".env:SINGLE", "it"),
            ]
        );
    }

    #[test]
    fn never_panics_on_odd_text() {
        let mask = mask(&[("K", "ééééééééé")]);
        for text in ["", "é", "éééééééééé", "\u{0}\u{ffff}"] {
            let _ = mask.mask(text);
        }
        for text in ["=", "export", "export =", "A='", "A=\"", "é=é"] {
            let _ = parse_env_file("f", text);
        }
    }
}
