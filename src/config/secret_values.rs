//! Where a session's secret values come from, resolved with the rest of
//! the settings ([`SecretValues`]): the values of keel's own environment
//! that name credentials (the env filter's strip patterns and URL
//! passwords, `env_keep` or not, so the provider's key under any name),
//! the provider's key itself, and whether the secret files of the
//! workspace (`.env`) are protected, and which `[secrets] allow_files`
//! the user let the model read. The runtime reads those files at session
//! start and builds the mask (`display::SecretMask`).
//!
//! Invariants: values only from the injected `Environment`; nothing is
//! read from disk here.

use crate::display::{KnownSecret, MIN_SECRET_LEN};
use crate::sandbox::EnvFilter;

use super::Environment;
use super::layers::SecretsFile;

/// What a session must never show, as far as configuration knows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretValues {
    /// Credentials of keel's environment and the provider's key, by name.
    pub env: Vec<KnownSecret>,
    /// `[secrets] protect_files` (default on): mask the values of the
    /// workspace's `.env` files too.
    pub protect_files: bool,
    /// `[secrets] allow_files`: files the model may read, not masked.
    pub allow_files: Vec<String>,
}

/// The secret values of `env` under `filter`, the key of `api_key_env`
/// first.
pub(super) fn secret_values(
    env: &Environment,
    filter: &EnvFilter,
    api_key_env: &str,
    secrets: Option<&SecretsFile>,
) -> SecretValues {
    let mut known = Vec::new();
    if let Some(key) = env.var(api_key_env) {
        known.push(KnownSecret::new(api_key_env, key));
    }
    for (name, value) in &env.vars {
        let long = value.chars().count() >= MIN_SECRET_LEN;
        if long && name != api_key_env && filter.names_credential(name, value) {
            known.push(KnownSecret::new(name.as_str(), value.as_str()));
        }
    }
    let file = secrets.cloned().unwrap_or_default();
    SecretValues {
        env: known,
        protect_files: file.protect_files.unwrap_or(true),
        allow_files: file.allow_files.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn env(vars: &[(&str, &str)]) -> Environment {
        Environment {
            keel_home: PathBuf::from("/h/.keel"),
            cwd: PathBuf::from("/w"),
            vars: vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
        }
    }

    #[test]
    fn credentials_and_the_key_are_known_and_nothing_else() {
        let env = env(&[
            ("MY_LLM", "provider-key-123"),
            ("GITHUB_TOKEN", "ghp_long_enough"),
            ("TOKEN", "short"),
            ("PATH", "/usr/bin:/bin"),
            ("UPSTREAM", "https://bot:pw-in-url@git.example/r"),
        ]);
        let filter = EnvFilter::new(&["MY_LLM".into()], &["GITHUB_TOKEN".into()]);
        let values = secret_values(&env, &filter, "MY_LLM", None);
        let names: Vec<&str> = values.env.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["MY_LLM", "GITHUB_TOKEN", "UPSTREAM"]);
        assert!(values.protect_files);
    }
}
