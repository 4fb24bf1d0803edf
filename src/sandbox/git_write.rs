//! git without the programs it can be made to run, and the model's
//! recognised git commands (`policy::git_write`) run with `.git`
//! writable (issue 31).
//!
//! git executes commands named in its configuration (`core.fsmonitor`,
//! hooks, pagers, `diff.external`, credential helpers, `core.sshCommand`,
//! …). [`NEUTRAL_CONFIG`] switches them off with `-c` (which wins over
//! every config file) and [`NEUTRAL_ENV`] does the same for the
//! environment; keel's own git (`runtime::git`) adds
//! [`ISOLATED_CONFIG_ENV`] (no system or global config at all). This is
//! the one list of both.
//!
//! A recognised git command of the model runs as an argv, not through a
//! shell: the git found on `PATH` outside every writable root (a `git`
//! planted in the workspace is never the one run), the neutral config
//! and environment, the user's own global config kept (their name and
//! e-mail; read-only in the jail). Its jail has the workspace's `.git`
//! writable except [`super::protected::GIT_DIR_GUARDED`] (its config,
//! hooks, `info/`, …), which stay read-only binds inside it; one of those
//! the command creates is removed after it, as a protected folder is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::CommandSpec;
use super::landlock::{self, Confinement};

/// Config that runs programs, switched off (`-c` wins over every file).
pub const NEUTRAL_CONFIG: [&str; 22] = [
    "core.fsmonitor=",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=:",
    "sequence.editor=:",
    "core.askPass=",
    "core.sshCommand=",
    "core.gitProxy=",
    "core.alternateRefsCommand=",
    "diff.external=",
    "credential.helper=",
    "gpg.program=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "protocol.allow=never",
    "uploadpack.packObjectsHook=",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.untrackedCache=false",
];

/// No system or global config (so no `include` from them, no
/// `safe.directory` widening): keel's own git, which reads an untrusted
/// repository before any trust.
pub const ISOLATED_CONFIG_ENV: [(&str, &str); 3] =
    [("GIT_CONFIG_NOSYSTEM", "1"), ("GIT_CONFIG_GLOBAL", "/dev/null"), ("GIT_ATTR_NOSYSTEM", "1")];

/// The environment of every neutralised git: no pager, no prompts, no
/// editor, no lazy fetches, no optional index writes.
pub const NEUTRAL_ENV: [(&str, &str); 10] = [
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_EDITOR", ":"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_PROTOCOL_FROM_USER", "0"),
    ("GIT_NO_REPLACE_OBJECTS", "1"),
    ("GIT_ADVICE", "0"),
    ("LC_ALL", "C"),
];

/// [`NEUTRAL_CONFIG`] as git's environment config (`GIT_CONFIG_COUNT`,
/// `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`, which win over every config
/// file like `-c`): every git a command judged a read starts (`git status`
/// in ask mode) runs no program the repository names (`core.fsmonitor`,
/// hooks, pager, external diff), and the command line the user saw is the
/// one that runs.
pub fn neutral_config_env() -> Vec<(String, String)> {
    config_env_with(&[])
}

/// Whether config key `name` names a program git runs for a driver:
/// `filter.<x>.clean|smudge|process`, `diff.<x>.textconv|command`,
/// `merge.<x>.driver`. A `.gitattributes` line picks the driver; the
/// repository's config names its program, so `git diff`, `git status` or
/// `git add` would run code a repository chose.
pub fn is_driver_command(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let Some((section, rest)) = lower.split_once('.') else { return false };
    let Some((_, key)) = rest.rsplit_once('.') else { return false };
    matches!(
        (section, key),
        ("filter", "clean" | "smudge" | "process")
            | ("diff", "textconv" | "command")
            | ("merge", "driver")
    )
}

/// What a switched-off filter that the repository marks `required` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequiredFilters {
    /// Not required any more: a read shows the file unfiltered.
    Relax,
    /// Kept: a write that needs the filter fails rather than storing what
    /// the filter would not have (an LFS file in full).
    Keep,
}

/// How long reading a repository's config names may take.
const CONFIG_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Overrides (key, value) switching off every driver program that the
/// repository at `cwd` names in its own config (scopes `local` and
/// `worktree`, includes followed; the user's global drivers, such as
/// git-lfs, are the user's own and stay). Blocking: one `git config`.
/// Empty outside a repository or without git.
pub fn repository_driver_overrides(cwd: &Path, required: RequiredFilters) -> Vec<(String, String)> {
    let args = ["--no-pager", "config", "--list", "--show-scope", "--name-only", "-z"];
    let spec = NEUTRAL_ENV.iter().fold(
        CommandSpec::argv("git", args, cwd).with_minimal_env().with_timeout(CONFIG_TIMEOUT),
        |spec, (key, value)| spec.with_env(key, value),
    );
    let listed = match super::run_blocking(&spec) {
        Ok(output) if output.success() => output.stdout.text(),
        Ok(_) | Err(_) => return Vec::new(),
    };
    driver_overrides(&listed, required)
}

/// [`repository_driver_overrides`] from `git config --list --show-scope
/// --name-only -z` output (pure; the tests read it).
fn driver_overrides(listed: &str, required: RequiredFilters) -> Vec<(String, String)> {
    let mut fields = listed.split('\0');
    let mut overrides = Vec::new();
    while let (Some(scope), Some(name)) = (fields.next(), fields.next()) {
        if !matches!(scope, "local" | "worktree") || !is_driver_command(name) {
            continue;
        }
        // `cat` shows the file as it is; an empty textconv would fail the
        // whole diff. The others fail loudly when empty ("cannot run"),
        // never silently.
        let is_textconv = name.to_ascii_lowercase().ends_with(".textconv");
        let off = if is_textconv { "cat" } else { "" };
        overrides.push((name.to_owned(), off.to_owned()));
        let is_filter = name.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("filter."));
        if let Some((driver, _)) = name.rsplit_once('.').filter(|_| is_filter)
            && required == RequiredFilters::Relax
        {
            overrides.push((format!("{driver}.required"), "false".to_owned()));
        }
    }
    overrides
}

/// [`neutral_config_env`] plus `extra` overrides (driver programs).
pub fn config_env_with(extra: &[(String, String)]) -> Vec<(String, String)> {
    let settings = NEUTRAL_CONFIG
        .iter()
        .map(|setting| setting.split_once('=').unwrap_or((setting, "")))
        .chain(extra.iter().map(|(key, value)| (key.as_str(), value.as_str())));
    let mut env = Vec::new();
    let mut count = 0;
    for (at, (key, value)) in settings.enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{at}"), key.to_owned()));
        env.push((format!("GIT_CONFIG_VALUE_{at}"), value.to_owned()));
        count = at + 1;
    }
    env.insert(0, ("GIT_CONFIG_COUNT".to_owned(), count.to_string()));
    env
}

/// The `git` the model's recognised git commands run: the first on
/// `PATH` (absolute entries only) whose real path lies outside every
/// writable root of `confinement`; `None` when there is none.
pub fn git_program(confinement: &Confinement) -> Option<PathBuf> {
    let writable: Vec<PathBuf> = (confinement.workspace_roots.iter())
        .chain(&confinement.extra_roots)
        .cloned()
        .chain(landlock::temp_roots())
        .map(|root| std::fs::canonicalize(&root).unwrap_or(root))
        .collect();
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .filter_map(|dir| std::fs::canonicalize(dir.join("git")).ok())
        .find(|git| is_executable(git) && !writable.iter().any(|root| git.starts_with(root)))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// `git ARGS` (`args` after the word `git`) as `base` would have run
/// (its folder, timeout, output limit, environment), through `program`,
/// neutralised.
pub fn spec(program: &Path, args: &[String], base: &CommandSpec) -> CommandSpec {
    let mut argv: Vec<OsString> = vec!["--no-pager".into()];
    for setting in NEUTRAL_CONFIG {
        argv.push("-c".into());
        argv.push(setting.into());
    }
    argv.extend(args.iter().map(OsString::from));
    let mut spec = CommandSpec::argv(program, argv, base.cwd.clone());
    // Messages name the model's command, not this argv.
    spec.display_as = Some(base.display());
    spec.timeout = base.timeout;
    spec.output_limit = base.output_limit;
    spec.env_base = base.env_base.clone();
    spec.env = base.env.clone();
    NEUTRAL_ENV.iter().fold(spec, |spec, (key, value)| spec.with_env(key, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Program;
    use crate::sandbox::landlock::SandboxMode;

    fn confinement(root: &Path) -> Confinement {
        Confinement {
            launcher: "/bin/keel".into(),
            mode: SandboxMode::WorkspaceWrite,
            workspace_roots: vec![root.to_owned()],
            extra_roots: Vec::new(),
            read_only: Vec::new(),
            network: crate::sandbox::landlock::NetworkMode::Off,
            bridges: Default::default(),
            required: true,
            protect_vcs: true,
            git_write: false,
            max_pids: 64,
            shared_network: None,
            hidden: Vec::new(),
        }
    }

    #[test]
    fn a_repository_fsmonitor_does_not_run_under_the_neutral_env() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        let marker = repo.join("ran");
        let git = |envs: &[(String, String)], args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(repo)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .envs(envs.iter().cloned())
                .output()
                .unwrap()
        };
        assert!(git(&[], &["init", "-q"]).status.success());
        let hook = format!("#!/bin/sh\necho planted > {}\n", marker.display());
        std::fs::write(repo.join("mon.sh"), hook).unwrap();
        std::process::Command::new("chmod")
            .args(["+x", "mon.sh"])
            .current_dir(repo)
            .status()
            .unwrap();
        let monitor = repo.join("mon.sh").display().to_string();
        assert!(git(&[], &["config", "core.fsmonitor", &monitor]).status.success());
        assert!(git(&neutral_config_env(), &["status"]).status.success());
        assert!(!marker.exists(), "the planted fsmonitor ran under the neutral env");
        // The repository really runs it otherwise (the check above means something).
        git(&[], &["status"]);
        assert!(marker.exists());
    }

    #[test]
    fn only_the_repository_s_own_drivers_are_switched_off() {
        let listed = "global\0filter.lfs.clean\0local\0filter.Peek.clean\0local\0\
                      diff.peek.textconv\0worktree\0merge.m.driver\0local\0user.name\0\
                      command\0diff.x.command\0";
        let relaxed = driver_overrides(listed, RequiredFilters::Relax);
        let pairs: Vec<String> = relaxed.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(
            pairs,
            [
                "filter.Peek.clean=",
                "filter.Peek.required=false",
                "diff.peek.textconv=cat",
                "merge.m.driver="
            ]
        );
        let kept = driver_overrides(listed, RequiredFilters::Keep);
        assert!(kept.iter().all(|(key, _)| !key.ends_with(".required")), "{kept:?}");
        let env = config_env_with(&relaxed);
        assert_eq!(env[0], ("GIT_CONFIG_COUNT".to_owned(), (NEUTRAL_CONFIG.len() + 4).to_string()));
    }

    #[test]
    fn the_git_run_is_never_one_in_a_writable_root() {
        let dir = tempfile::tempdir().unwrap();
        let git = git_program(&confinement(dir.path())).expect("git on PATH");
        assert!(!git.starts_with(std::fs::canonicalize(dir.path()).unwrap()));
        // Everything on PATH writable: no git to run.
        let everything = confinement(Path::new("/"));
        assert_eq!(git_program(&everything), None);
    }

    #[test]
    fn a_recognised_command_keeps_its_folder_limits_and_gets_the_neutral_config() {
        let base = CommandSpec::script("git commit -m x", "/ws")
            .with_timeout(std::time::Duration::from_secs(7))
            .with_output_limit(99)
            .with_env("KEEP", "1");
        let args = ["commit".to_owned(), "-m".to_owned(), "x".to_owned()];
        let spec = spec(Path::new("/usr/bin/git"), &args, &base);
        assert_eq!(
            (spec.cwd.as_path(), spec.timeout.as_secs(), spec.output_limit),
            (Path::new("/ws"), 7, 99)
        );
        assert_eq!(spec.display(), "git commit -m x");
        let Program::Argv { program, args } = &spec.program else { panic!("{spec:?}") };
        let shown = std::iter::once(program)
            .chain(args)
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            shown.starts_with(
                "/usr/bin/git --no-pager -c core.fsmonitor= -c core.hooksPath=/dev/null"
            ),
            "{shown}"
        );
        assert!(shown.ends_with("-c core.untrackedCache=false commit -m x"), "{shown}");
        assert!(spec.env.contains(&("KEEP".into(), "1".into())));
        assert!(spec.env.contains(&("GIT_EDITOR".into(), ":".into())));
    }
}
