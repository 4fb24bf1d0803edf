//! Which files hold secrets, by name: `.env` files, private keys,
//! credential stores, other processes' environments (`/proc/*/environ`).
//! Used by the `protect_secrets` hook (reads of them are denied, writes and
//! commands naming them ask) and by the read-only list (a command that may
//! read one is not run without asking, also when a glob or quotes spell the
//! name: `cat .e*v`, `cat ~/.ssh/id_*`).
//!
//! Invariants: pure, names only (the caller resolves symlinks first, see
//! `policy::links`); templates (`.env.example`, `.env.sample`,
//! `.env.template`, `.env.dist`) and public keys (`*.pub`) are not secret.

use super::words::{glob_matches, has_glob};

/// Exact file names that hold secrets.
const SECRET_NAMES: [&str; 12] = [
    ".env",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".pypirc",
    "credentials.json",
    "secrets.json",
    "environ",
];

/// Extensions of key stores and private keys.
const SECRET_EXTENSIONS: [&str; 7] = ["env", "pem", "key", "p12", "pfx", "jks", "keystore"];

/// `.env.*` suffixes of templates, which hold no secrets by convention.
const TEMPLATE_SUFFIXES: [&str; 4] = ["example", "sample", "template", "dist"];

/// Names a glob is tried against: one of each kind of secret file.
const SECRET_SAMPLES: [&str; 16] = [
    ".env",
    ".env.local",
    ".env.production",
    "prod.env",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "server.pem",
    "private.key",
    "credentials",
    "credentials.json",
    "secrets.json",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    "environ",
];

/// Whether `path` names a secret file (by its name; nothing is read).
pub fn is_secret_file(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    let name = trimmed.rsplit('/').next().unwrap_or(trimmed).to_ascii_lowercase();
    if name.is_empty() || name.ends_with(".pub") {
        return false;
    }
    if name == "environ" {
        // Only a process's environment is a secret; a file called
        // `environ` elsewhere is not.
        return trimmed.starts_with("/proc/") || trimmed.contains("/proc/");
    }
    if let Some(suffix) = name.strip_prefix(".env.") {
        return !TEMPLATE_SUFFIXES.contains(&suffix);
    }
    if SECRET_NAMES.contains(&name.as_str()) {
        return true;
    }
    if trimmed.ends_with(".aws/credentials") {
        return true;
    }
    name.ends_with(".env.local")
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && SECRET_EXTENSIONS.contains(&ext))
}

/// Whether a command word may name a secret file: literally, or as a glob
/// whose last component can match one (`.e*v`, `id_*`, `/proc/*/environ`).
/// A glob matching any name (`*`, `*.*`) counts only inside a key folder
/// (`~/.ssh/*`): in other folders it would make every `grep x *` ask.
pub fn may_name_secret(word: &str) -> bool {
    if is_secret_file(word) {
        return true;
    }
    if !has_glob(word) {
        return false;
    }
    let (dir, last) = word.rsplit_once('/').unwrap_or(("", word));
    let matches_anything = ["README.md", "main.rs"].iter().any(|name| glob_matches(last, name));
    if matches_anything && !dir.contains(".ssh") && !dir.contains(".gnupg") {
        return false;
    }
    SECRET_SAMPLES.iter().any(|sample| {
        let candidate =
            if dir.is_empty() { (*sample).to_owned() } else { format!("{dir}/{sample}") };
        glob_matches(last, sample) && is_secret_file(&candidate)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! secret {
        ($($name:ident: $path:expr => $secret:expr,)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(is_secret_file($path), $secret, "{}", $path);
            }
        )*};
    }

    secret! {
        dot_env: ".env" => true,
        nested_dot_env: "config/.env" => true,
        env_local: "app/.env.local" => true,
        env_production: ".env.production" => true,
        named_env: "deploy/prod.env" => true,
        env_example_is_a_template: ".env.example" => false,
        env_sample_is_a_template: ".env.sample" => false,
        ssh_private_key: "/home/u/.ssh/id_ed25519" => true,
        ssh_public_key: "/home/u/.ssh/id_ed25519.pub" => false,
        pem_key: "certs/server.pem" => true,
        dot_key: "tls/private.key" => true,
        aws_credentials: "/home/u/.aws/credentials" => true,
        netrc: "/home/u/.netrc" => true,
        proc_environ: "/proc/1/environ" => true,
        other_environ: "docs/environ" => false,
        source_file: "src/env.rs" => false,
        envrc_is_not_covered: ".envrc" => false,
        cargo_toml: "Cargo.toml" => false,
        folder: "keys/" => false,
    }

    #[test]
    fn globs_that_can_name_a_secret() {
        for word in
            [".e*v", "~/.ssh/id_*", "/proc/*/environ", "config/.env*", "*.pem", ".env", "~/.ssh/*"]
        {
            assert!(may_name_secret(word), "{word}");
        }
        for word in ["*.rs", "src/*", "*", "docs/*.md", "Cargo.*", "*.example"] {
            assert!(!may_name_secret(word), "{word}");
        }
    }
}
