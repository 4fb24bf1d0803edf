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
//! Invariants: names only, never file contents: the path a call names is
//! judged as written and, when the session found symlinks on its way
//! (`HookPayload::path_links`), where it really leads (`docs/notes.txt ->
//! ../.env` is `.env`); a shell command is read with policy's own parser,
//! so quotes and globs that can spell a secret file (`cat '.e'nv`, `cat
//! .e*v`, `cat ~/.ssh/id_*`, `grep -a k /proc/*/environ`, `< .env`) count;
//! it only ever tightens (its outcome passes the hooks guard like any
//! other); the user allows files with `[secrets] allow_files = ["GLOB",
//! …]` in the user config, or turns it off with `[secrets] protect_files =
//! false`. Templates (`.env.example`, `.env.sample`, `.env.template`,
//! `.env.dist`) and public keys (`*.pub`) are never secret. A hook's
//! `updatedInput` is judged by this hook again (`runtime/hook_rewrite.rs`).
//!
//! Known limit: a `grep` over a folder searches what the walker yields, and
//! `.env` files are usually git-ignored, so skipped; an explicit path is
//! what this hook sees.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::native::NativeHook;
use super::outcome::{HookOutcome, Permission};
use super::payload::HookPayload;
use super::{HookConfigError, HookEvent};
use crate::policy::PathLinks;
use crate::policy::paths::normalize;
use crate::policy::secret_places::SecretPlaces;
use crate::policy::secrets::may_name_secret;
use crate::policy::shell::analyze_script;
use crate::protocol::tool_facts;
use crate::protocol::{Access, Operand, ToolInfo};

pub use crate::policy::secrets::is_secret_file;

/// The native hook. See the module doc.
#[derive(Debug, Clone)]
pub struct ProtectSecrets {
    allow: GlobSet,
    /// Credential stores and the user's `[secrets] paths`, by place.
    places: SecretPlaces,
    /// Where `~` leads in the words judged.
    home: PathBuf,
    /// Where sessions keep cut outputs (`session::KeptOutputs`): inside
    /// keel's home, a secret place, yet `read_file` reads its session's
    /// folder there (the tool refuses every other one).
    kept_outputs: Option<PathBuf>,
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
        Ok(Self {
            allow,
            places: SecretPlaces::default(),
            home: PathBuf::new(),
            kept_outputs: None,
        })
    }

    /// Also guards the places of `places` (`~` in a word is `home`).
    pub fn with_places(self, places: SecretPlaces, home: PathBuf) -> Self {
        Self { places, home, ..self }
    }

    /// Lets `read_file` read below `dir`, the kept outputs, though keel's
    /// home holds it (a secret file's name there is still refused).
    pub fn with_kept_outputs(self, dir: PathBuf) -> Self {
        Self { kept_outputs: Some(normalize(&dir)), ..self }
    }

    /// Whether `path` is a kept output `read_file` may read: inside the
    /// kept outputs as written and where known symlinks lead it, named
    /// like no secret file.
    fn kept_output(&self, info: &ToolInfo, path: &str, links: &PathLinks) -> bool {
        let Some(dir) = &self.kept_outputs else { return false };
        let given = Path::new(path);
        let inside = |candidate: &Path| candidate.starts_with(dir) && candidate != dir;
        info.name == tool_facts::READ_FILE.name
            && given.is_absolute()
            && inside(&normalize(given))
            && (links.is_empty() || inside(&links.apply(given)))
            && !self.guarded(path)
    }

    /// The secret place `word` (from `cwd`, through `links`) reads: one it
    /// names, or, for a walk (`grep` of a folder), one it holds.
    fn place_of(&self, word: &str, cwd: &str, links: &PathLinks, walks: bool) -> Option<String> {
        let expanded = match word.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None if word == "~" => self.home.clone(),
            None => Path::new(cwd).join(word),
        };
        let lexical = normalize(&expanded);
        let physical = if links.is_empty() { lexical.clone() } else { links.apply(&expanded) };
        [lexical, physical].iter().find_map(|path| {
            let place =
                if walks { self.places.reached_from(path) } else { self.places.named_by(path) };
            let shown = place?.path.display().to_string();
            Some(match (shown == word, walks) {
                (true, _) => shown,
                (false, false) => format!("{word} (in {shown})"),
                (false, true) => format!("{word} (holds {shown})"),
            })
        })
    }

    fn guarded(&self, path: &str) -> bool {
        may_name_secret(path.strip_prefix("./").unwrap_or(path)) && self.unlisted(path)
    }

    /// Not allowed by `[secrets] allow_files` (by path or by name).
    fn unlisted(&self, path: &str) -> bool {
        let path = path.strip_prefix("./").unwrap_or(path);
        let name = path.rsplit('/').next().unwrap_or(path);
        !self.allow.is_match(path) && !self.allow.is_match(name)
    }

    /// `path` as written, or where a known symlink leads it, when either
    /// is a secret file: the name to report.
    fn guarded_path(&self, path: &str, cwd: &str, links: &PathLinks) -> Option<String> {
        if self.guarded(path) {
            return Some(path.to_owned());
        }
        if let Some(place) = self.place_of(path, cwd, links, false).filter(|_| self.unlisted(path))
        {
            return Some(place);
        }
        if links.is_empty() || path.starts_with('~') {
            return None;
        }
        let resolved = links.apply(&Path::new(cwd).join(path));
        let shown = resolved.to_string_lossy();
        self.guarded(&shown).then(|| format!("{path} (a symlink to {shown})"))
    }

    /// The first secret file a shell script names, if any: every word of
    /// every command (quotes removed, globs matched) and every `<` source.
    fn named_in_script(&self, script: &str, cwd: &str, links: &PathLinks) -> Option<String> {
        let analyzed = analyze_script(script);
        let words = analyzed
            .commands
            .iter()
            .flat_map(|c| c.argv.iter().skip(1))
            .chain(analyzed.reads.iter().map(|r| &r.target))
            .chain(analyzed.writes.iter().map(|w| &w.target));
        for word in words {
            let word = word.split_once('=').map_or(word.as_str(), |(_, value)| value);
            if word.is_empty() || word.starts_with('-') {
                continue;
            }
            if let Some(found) = self.guarded_path(word, cwd, links) {
                return Some(found);
            }
        }
        None
    }

    /// The first secret file a call of the tool `info` names, with what to
    /// do about it: a read is denied, a write or a command asks. Every
    /// path argument its descriptor lists counts, in order; a listing shows
    /// names only and is left alone. `cwd` is where relative paths start
    /// (the tool's workdir, when it has one, below it).
    pub fn first_secret(
        &self,
        info: &ToolInfo,
        input: &serde_json::Value,
        cwd: &str,
        links: &PathLinks,
    ) -> Option<(Permission, String)> {
        let workdir = info.paths.iter().find(|arg| arg.operand == Operand::Workdir);
        let cwd = match workdir.and_then(|arg| arg.values(input).first().copied()) {
            Some(workdir) => Path::new(cwd).join(workdir),
            None => Path::new(cwd).to_path_buf(),
        };
        let cwd = cwd.to_string_lossy();
        let permission = |access| match access {
            Access::Read => Permission::Deny,
            Access::Write => Permission::Ask,
        };
        for arg in info.paths {
            let mut values = arg.values(input).into_iter();
            let found = match arg.operand {
                Operand::File | Operand::Files => values.find_map(|path| {
                    if self.kept_output(info, path, links) {
                        return None;
                    }
                    // A read of a folder walks it (`grep`): what it holds counts.
                    let walk = (arg.access == Access::Read)
                        .then(|| self.place_of(path, &cwd, links, true))
                        .flatten()
                        .filter(|_| self.unlisted(path));
                    self.guarded_path(path, &cwd, links).or(walk)
                }),
                // A grep's `glob` can pick secret files out of a folder.
                Operand::Glob => values.find(|glob| self.guarded(glob)).map(str::to_owned),
                Operand::Script => {
                    values.find_map(|script| self.named_in_script(script, &cwd, links))
                }
                Operand::Listing | Operand::Workdir | Operand::Patch | Operand::Url => None,
            };
            if let Some(file) = found {
                return Some((permission(arg.access), file));
            }
        }
        None
    }
}

/// Whether the hook looks at calls of the tool `info`: it names a file, a
/// glob of files or a script. (`apply_patch`'s headers are not read yet.)
fn watched(info: &ToolInfo) -> bool {
    info.paths.iter().any(|arg| {
        matches!(arg.operand, Operand::File | Operand::Files | Operand::Glob | Operand::Script)
    })
}

impl NativeHook for ProtectSecrets {
    fn name(&self) -> &'static str {
        "protect_secrets"
    }

    fn listens(&self, event: HookEvent) -> bool {
        event == HookEvent::PreToolUse
    }

    fn subscribes(&self, event: HookEvent, subject: Option<&str>) -> bool {
        self.listens(event) && subject.and_then(tool_facts::builtin).is_some_and(watched)
    }

    fn run(&self, _event: HookEvent, payload: &HookPayload) -> HookOutcome {
        let (Some(tool), Some(input)) = (&payload.tool_name, &payload.tool_input) else {
            return HookOutcome::default();
        };
        let Some(info) = tool_facts::builtin(tool) else { return HookOutcome::default() };
        let Some((permission, file)) =
            self.first_secret(info, input, &payload.cwd, &payload.path_links)
        else {
            return HookOutcome::default();
        };
        let name = file.split(" (").next().unwrap_or(&file);
        let reason = match permission {
            // A folder that holds a secret place: allowing the folder's name
            // would not help, reading the files needed by name does.
            Permission::Deny if file.contains(" (holds ") => format!(
                "protect_secrets: {file}: reading this folder would read a secret place (keys, \
                 credentials) and send it to the model provider; read the files you need by name"
            ),
            Permission::Deny => format!(
                "protect_secrets: {file} looks like a secret file (keys, tokens, passwords) and \
                 reading it would send it to the model provider; do without it, or, if the task \
                 needs it, say so in your answer (the user can allow it with `[secrets] \
                 allow_files = [\"{name}\"]` in ~/.keel/config.toml; nobody can in a headless run)"
            ),
            Permission::Ask | Permission::Allow => {
                format!("protect_secrets: `{tool}` touches {file}, which looks like a secret file")
            }
        };
        HookOutcome { permission: Some(permission), reason: Some(reason), ..HookOutcome::default() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn read_file_reads_kept_outputs_in_keel_s_home_and_nothing_else_there() {
        let home = PathBuf::from("/home/u");
        let mut places = SecretPlaces::for_home(&home);
        places.add(Path::new("/home/u/.keel/"), "keel", &home, Path::new("/home/u/ws"));
        let hook = ProtectSecrets::new(&[])
            .unwrap()
            .with_places(places, home)
            .with_kept_outputs(PathBuf::from("/home/u/.keel/outputs"));
        let permission = |tool: &str, input| outcome(&hook, tool, input).permission;
        let kept = "/home/u/.keel/outputs/s-1/0001-call_1.txt";
        assert_eq!(permission("read_file", json!({ "path": kept })), None);
        for path in [
            "/home/u/.keel/outputs/s-1/../../config.toml",
            "/home/u/.keel/config.toml",
            "/home/u/.keel/outputs/s-1/.env",
            "/home/u/.keel/outputs",
        ] {
            assert_eq!(permission("read_file", json!({ "path": path })), Some(Permission::Deny));
        }
        assert_eq!(
            permission("write_file", json!({ "path": kept, "content": "x" })),
            Some(Permission::Ask)
        );
        assert_eq!(
            permission("shell", json!({ "command": format!("cat {kept}") })),
            Some(Permission::Ask),
            "commands still ask: only read_file confines itself to its session's folder"
        );
    }

    #[test]
    fn credential_stores_are_refused_by_place() {
        let home = PathBuf::from("/home/u");
        let mut places = SecretPlaces::for_home(&home);
        places.add(Path::new("/home/u/.keel/"), "keel", &home, Path::new("/home/u/ws"));
        let hook = ProtectSecrets::new(&[]).unwrap().with_places(places, home);
        let permission = |tool: &str, input| outcome(&hook, tool, input).permission;
        for path in
            ["~/.docker/config.json", "/home/u/.kube/config", "~/.config/gh/hosts.yml", "~/.npmrc"]
        {
            assert_eq!(permission("read_file", json!({ "path": path })), Some(Permission::Deny));
        }
        assert_eq!(
            permission("read_file", json!({ "path": "~/.keel/config.toml" })),
            Some(Permission::Deny)
        );
        let walk = outcome(&hook, "grep", json!({ "pattern": "KEY", "path": "~" }));
        assert_eq!(walk.permission, Some(Permission::Deny));
        let reason = walk.reason.unwrap();
        assert!(reason.contains("~ (holds /home/u/.") && reason.contains("by name"), "{reason}");
        assert!(!reason.contains("allow_files"), "allowing `~` by name would not help: {reason}");
        let command = |c: &str| permission("shell", json!({ "command": c }));
        assert_eq!(command("cat ~/.kube/config"), Some(Permission::Ask));
        assert_eq!(command("ls ~/.kube"), None);
        assert_eq!(permission("read_file", json!({ "path": "src/main.rs" })), None);
        assert_eq!(permission("grep", json!({ "pattern": "KEY", "path": "src" })), None);
        let allowed = ProtectSecrets::new(&["config.json".to_owned()])
            .unwrap()
            .with_places(SecretPlaces::for_home(Path::new("/home/u")), PathBuf::from("/home/u"));
        assert_eq!(
            outcome(&allowed, "read_file", json!({ "path": "~/.docker/config.json" })).permission,
            None
        );
    }

    fn outcome(hook: &ProtectSecrets, tool: &str, input: serde_json::Value) -> HookOutcome {
        let payload = HookPayload {
            tool_name: Some(tool.into()),
            tool_input: Some(input),
            ..HookPayload::default()
        };
        hook.run(HookEvent::PreToolUse, &payload)
    }

    // Issue 32.9: nobody can answer in a headless run, so the model is not
    // told to ask the user: it says so in its answer, which names the fix.
    #[test]
    fn a_denied_secret_does_not_send_the_model_to_ask_the_user() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let reason = outcome(&hook, "read_file", json!({"path": ".env"})).reason.unwrap();
        assert!(!reason.contains("ask the user"), "{reason}");
        assert!(reason.contains("if the task needs it, say so in your answer"), "{reason}");
        assert!(reason.contains("`[secrets] allow_files = [\".env\"]`"), "{reason}");
    }

    #[test]
    fn reading_a_secret_file_is_denied_with_a_reason_that_says_how_to_allow_it() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let denied = outcome(&hook, "read_file", json!({"path": ".env"}));
        assert_eq!(denied.permission, Some(Permission::Deny));
        assert!(denied.reason.unwrap().contains("allow_files"));
        let grep = outcome(&hook, "grep", json!({"pattern": "KEY", "path": "./.env.local"}));
        assert_eq!(grep.permission, Some(Permission::Deny));
        let glob = outcome(&hook, "grep", json!({"pattern": "KEY", "path": ".", "glob": ".env*"}));
        assert_eq!(glob.permission, Some(Permission::Deny));
        let rust = outcome(&hook, "grep", json!({"pattern": "KEY", "path": ".", "glob": "*.rs"}));
        assert_eq!(rust.permission, None);
        assert_eq!(outcome(&hook, "read_file", json!({"path": "README.md"})).permission, None);
    }

    #[test]
    fn writes_and_shell_commands_naming_a_secret_file_ask() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let write = outcome(&hook, "write_file", json!({"path": "id_rsa", "content": "k"}));
        assert_eq!(write.permission, Some(Permission::Ask));
        for command in [
            "cat .env",
            "source ./.env && run",
            "grep KEY<.env.local",
            "x=$(cat ~/.ssh/id_rsa)",
            "cat '.e'nv",
            "cat .e*v",
            "cat ~/.ssh/id_*",
            "grep -a KEY /proc/*/environ",
            "cat /proc/$PPID/environ",
        ] {
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
    fn a_symlink_to_a_secret_is_judged_where_it_leads() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let mut links = PathLinks::default();
        links.insert("/ws/docs/notes.txt".into(), "/ws/.env".into());
        let payload = |tool: &str, input| HookPayload {
            cwd: "/ws".into(),
            tool_name: Some(tool.into()),
            tool_input: Some(input),
            path_links: links.clone(),
            ..HookPayload::default()
        };
        let read = hook
            .run(HookEvent::PreToolUse, &payload("read_file", json!({"path": "docs/notes.txt"})));
        assert_eq!(read.permission, Some(Permission::Deny));
        assert!(read.reason.unwrap().contains("a symlink to /ws/.env"));
        let shell = hook.run(
            HookEvent::PreToolUse,
            &payload("shell", json!({"command": "cat docs/notes.txt"})),
        );
        assert_eq!(shell.permission, Some(Permission::Ask));
        let plain = outcome(&hook, "read_file", json!({"path": "docs/notes.txt"}));
        assert_eq!(plain.permission, None);
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

    /// A reading tool that names its files in `paths` (test-only): its
    /// descriptor, not its name, is what the hook reads.
    const READ_MANY: ToolInfo = ToolInfo {
        name: "read_many",
        kind: crate::protocol::ToolKind::Read,
        class: crate::protocol::ToolClass::ReadOnly,
        claude: &[],
        paths: &[crate::protocol::PathArg {
            arg: "paths",
            operand: Operand::Files,
            access: Access::Read,
        }],
    };

    #[test]
    fn a_reading_tool_whose_arguments_say_paths_is_denied_each_secret_file() {
        let hook = ProtectSecrets::new(&[]).unwrap();
        let links = PathLinks::default();
        let input = json!({"paths": ["README.md", "config/.env"]});
        let found = hook.first_secret(&READ_MANY, &input, "/ws", &links);
        assert_eq!(found, Some((Permission::Deny, "config/.env".to_owned())));
        let plain = json!({"paths": ["README.md"], "path": ".env"});
        assert_eq!(hook.first_secret(&READ_MANY, &plain, "/ws", &links), None);
        assert!(watched(&READ_MANY));
    }
}
