//! `protect_secrets`: keel's native PreToolUse hook that keeps secret files
//! (`.env` files, private keys, credential stores) out of the model's
//! context.
//!
//! Why a hook and not a policy rule: policy judges *changes* (a read is
//! always allowed, and writing `**/.env*` already prompts by rule), but a
//! read is what leaks a secret: whatever the model reads is sent to the
//! model provider. So: `read_file` and `grep` on a secret file are denied
//! (the model is told the user can allow the file); writes through file
//! tools and shell commands that name a secret file ask, since the user
//! may well mean it (`cp .env.example .env`) and a script's intent cannot
//! be told from its words.
//!
//! Invariants: pure (names only, no file system); it only ever tightens
//! (its outcome passes the hooks guard like any other); the user allows
//! files with `[secrets] allow_files = ["GLOB", …]` in the user config, or
//! turns it off with `[secrets] protect_files = false`. Templates
//! (`.env.example`, `.env.sample`, `.env.template`, `.env.dist`) and public
//! keys (`*.pub`) are never secret.
//!
//! Known limit: a `grep` over a folder searches what the walker yields, and
//! `.env` files are usually git-ignored, so skipped; an explicit path is
//! what this hook sees.

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::native::NativeHook;
use super::outcome::{HookOutcome, Permission};
use super::payload::HookPayload;
use super::{HookConfigError, HookEvent};

/// Exact file names that hold secrets.
const SECRET_NAMES: [&str; 11] = [
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
];

/// Extensions of key stores and private keys.
const SECRET_EXTENSIONS: [&str; 7] = ["env", "pem", "key", "p12", "pfx", "jks", "keystore"];

/// `.env.*` suffixes of templates, which hold no secrets by convention.
const TEMPLATE_SUFFIXES: [&str; 4] = ["example", "sample", "template", "dist"];

/// Characters that end a word in a shell command, for the name scan.
const SHELL_BREAKS: &[char] =
    &[' ', '\t', '\n', '<', '>', '|', ';', '&', '(', ')', '\'', '"', '`', '=', '$', '{', '}'];

/// Whether `path` names a secret file (by its name; nothing is read).
pub fn is_secret_file(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    let name = trimmed.rsplit('/').next().unwrap_or(trimmed).to_ascii_lowercase();
    if name.is_empty() || name.ends_with(".pub") {
        return false;
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

/// The native hook. See the module doc.
#[derive(Debug, Clone)]
pub struct ProtectSecrets {
    allow: GlobSet,
}

impl ProtectSecrets {
    /// Allows the files matching `allow_files` (globs over the path as the
    /// model wrote it, or over its file name).
    pub fn new(allow_files: &[String]) -> Result<Self, HookConfigError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in allow_files {
            let glob = Glob::new(pattern).map_err(|error| HookConfigError::Glob {
                glob: pattern.clone(),
                message: error.to_string(),
            })?;
            builder.add(glob);
        }
        let allow = builder.build().map_err(|error| HookConfigError::Glob {
            glob: allow_files.join(", "),
            message: error.to_string(),
        })?;
        Ok(Self { allow })
    }

    fn guarded(&self, path: &str) -> bool {
        let path = path.strip_prefix("./").unwrap_or(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        is_secret_file(path) && !self.allow.is_match(path) && !self.allow.is_match(name)
    }

    /// The first secret file a shell script names, if any.
    fn named_in_script(&self, script: &str) -> Option<String> {
        script
            .split(SHELL_BREAKS)
            .filter(|word| !word.is_empty() && !word.starts_with('-'))
            .find(|word| self.guarded(word))
            .map(str::to_owned)
    }
}

impl NativeHook for ProtectSecrets {
    fn name(&self) -> &'static str {
        "protect_secrets"
    }

    fn listens(&self, event: HookEvent) -> bool {
        event == HookEvent::PreToolUse
    }

    fn subscribes(&self, event: HookEvent, subject: Option<&str>) -> bool {
        self.listens(event)
            && matches!(subject, Some("read_file" | "grep" | "write_file" | "edit_file" | "shell"))
    }

    fn run(&self, _event: HookEvent, payload: &HookPayload) -> HookOutcome {
        let (Some(tool), Some(input)) = (&payload.tool_name, &payload.tool_input) else {
            return HookOutcome::default();
        };
        let text = |key: &str| input.get(key).and_then(|value| value.as_str());
        let guarded_path = || text("path").filter(|path| self.guarded(path)).map(str::to_owned);
        let (permission, file) = match tool.as_str() {
            "read_file" | "grep" => (Permission::Deny, guarded_path()),
            "write_file" | "edit_file" => (Permission::Ask, guarded_path()),
            "shell" => (Permission::Ask, text("command").and_then(|c| self.named_in_script(c))),
            _ => return HookOutcome::default(),
        };
        let Some(file) = file else { return HookOutcome::default() };
        let reason = match permission {
            Permission::Deny => format!(
                "{file} looks like a secret file (keys, tokens, passwords) and reading it would \
                 send it to the model provider; do without it, or ask the user to allow it with \
                 `[secrets] allow_files = [\"{file}\"]` in ~/.keel/config.toml"
            ),
            Permission::Ask | Permission::Allow => {
                format!("`{tool}` touches {file}, which looks like a secret file")
            }
        };
        HookOutcome { permission: Some(permission), reason: Some(reason), ..HookOutcome::default() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
        source_file: "src/env.rs" => false,
        envrc_is_not_covered: ".envrc" => false,
        cargo_toml: "Cargo.toml" => false,
        folder: "keys/" => false,
    }

    fn outcome(hook: &ProtectSecrets, tool: &str, input: serde_json::Value) -> HookOutcome {
        let payload = HookPayload {
            tool_name: Some(tool.into()),
            tool_input: Some(input),
            ..HookPayload::default()
        };
        hook.run(HookEvent::PreToolUse, &payload)
    }

    #[test]
    fn reading_a_secret_file_is_denied_with_a_reason_that_says_how_to_allow_it() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let denied = outcome(&hook, "read_file", json!({"path": ".env"}));
        assert_eq!(denied.permission, Some(Permission::Deny));
        assert!(denied.reason.unwrap().contains("allow_files"));
        let grep = outcome(&hook, "grep", json!({"pattern": "KEY", "path": "./.env.local"}));
        assert_eq!(grep.permission, Some(Permission::Deny));
        assert_eq!(outcome(&hook, "read_file", json!({"path": "README.md"})).permission, None);
    }

    #[test]
    fn writes_and_shell_commands_naming_a_secret_file_ask() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let write = outcome(&hook, "write_file", json!({"path": "id_rsa", "content": "k"}));
        assert_eq!(write.permission, Some(Permission::Ask));
        for command in
            ["cat .env", "source ./.env && run", "grep KEY<.env.local", "x=$(cat ~/.ssh/id_rsa)"]
        {
            let shell = outcome(&hook, "shell", json!({"command": command}));
            assert_eq!(shell.permission, Some(Permission::Ask), "{command}");
        }
        for command in ["cat .env.example", "cargo test", "echo $API_KEY", "ls -la"] {
            assert_eq!(
                outcome(&hook, "shell", json!({"command": command})).permission,
                None,
                "{command}"
            );
        }
    }

    #[test]
    fn the_user_can_allow_files_by_glob_or_name() {
        let hook = ProtectSecrets::new(&["config/.env.test".into(), "*.pem".into()]).unwrap();
        assert_eq!(
            outcome(&hook, "read_file", json!({"path": "config/.env.test"})).permission,
            None
        );
        assert_eq!(outcome(&hook, "read_file", json!({"path": "certs/ca.pem"})).permission, None);
        let other = outcome(&hook, "read_file", json!({"path": ".env"}));
        assert_eq!(other.permission, Some(Permission::Deny));
        assert!(matches!(ProtectSecrets::new(&["[".into()]), Err(HookConfigError::Glob { .. })));
    }
}
