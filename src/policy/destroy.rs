//! Destruction judged by meaning, not spelling: a recursive delete (`rm
//! -r`, `find … -delete`, `find -exec rm`, `git clean -x/-d -f`, `rsync
//! --delete`, `rimraf`, a one-liner's `shutil.rmtree`) or a recursive
//! `chmod`/`chown`/`chgrp` is refused in every mode when a target is
//! unknowable (a variable, a substitution, `~user`, `{}` from `find`,
//! arguments from `xargs`, a brace expansion too large to list), resolves
//! to a critical path (`/`, a system folder, home, the workspace root or
//! an ancestor of them, also through symlinks), or is a glob that can reach
//! one (`/*/`, `~/*`, `*` in the workspace root).
//!
//! Invariants: pure; judged once per folder the command may run in; a
//! relative target in a folder keel cannot tell counts as unknowable when
//! it is broad (`*`, `.`, `..`); every refusal names the command, the
//! target and why.

use std::path::{Path, PathBuf};

use super::paths::{Critical, PathContext, normalize};
use super::unwrap::base_name;
use super::words::{dynamic_part, expand_braces, glob_matches, glob_matches_path, has_glob};

/// One recursive destruction found in a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// How reasons name it (`rm -r`, `find -delete`, `git clean -x`).
    pub what: String,
    pub targets: Vec<String>,
}

/// Names that match almost any entry: a glob matching one of these is
/// broad.
const ANY_NAMES: [&str; 4] = ["x", "src", "Documents", ".x"];

/// The recursive destruction `argv` performs, if any.
pub fn deletion(argv: &[String]) -> Option<Deletion> {
    let program = base_name(argv.first()?);
    let args = &argv[1..];
    let found =
        |what: &str, targets: Vec<String>| Some(Deletion { what: what.to_owned(), targets });
    match program {
        "rm" if recursive(args, &["-r", "-R", "--recursive"], &['r', 'R']) => {
            found("rm -r", operands(args, 0))
        }
        "chmod" | "chown" | "chgrp" if recursive(args, &["-R", "--recursive"], &['R']) => {
            let skip = usize::from(!args.iter().any(|a| a.starts_with("--reference")));
            found(&format!("{program} -R"), operands(args, skip))
        }
        "find" if find_destroys(args) => found("find -delete", find_roots(args)),
        "rimraf" | "del-cli" | "trash" => found(program, operands(args, 0)),
        "rsync"
            if args.iter().any(|a| a.starts_with("--delete") || a == "--remove-source-files") =>
        {
            found("rsync --delete", operands(args, 0).last().cloned().into_iter().collect())
        }
        "git" => git_clean(args),
        _ => None,
    }
}

fn recursive(args: &[String], long: &[&str], short: &[char]) -> bool {
    args.iter().take_while(|a| *a != "--").any(|arg| {
        long.contains(&arg.as_str())
            || arg == "--no-preserve-root"
            || (arg.starts_with('-')
                && !arg.starts_with("--")
                && arg.chars().any(|c| short.contains(&c)))
    })
}

/// The non-option arguments, after the first `skip` of them (`chmod`'s
/// mode); everything after `--` is an operand.
fn operands(args: &[String], skip: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--" {
            out.extend(words.by_ref().cloned());
            break;
        }
        if !word.starts_with('-') || word == "-" {
            out.push(word.clone());
        }
    }
    out.into_iter().skip(skip).collect()
}

/// `find` that deletes: `-delete`, or `-exec`/`-execdir`/`-ok` running
/// `rm`, `rmdir`, `shred` or `unlink`.
fn find_destroys(args: &[String]) -> bool {
    args.iter().enumerate().any(|(at, arg)| {
        arg == "-delete"
            || (matches!(arg.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && args.get(at + 1).is_some_and(|program| {
                    matches!(base_name(program), "rm" | "rmdir" | "shred" | "unlink")
                }))
    })
}

/// `find`'s starting points (before the first expression word), `.` when
/// none are given.
fn find_roots(args: &[String]) -> Vec<String> {
    let roots: Vec<String> = args
        .iter()
        .skip_while(|a| matches!(a.as_str(), "-H" | "-L" | "-P") || a.starts_with("-O"))
        .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
        .cloned()
        .collect();
    if roots.is_empty() { vec![".".to_owned()] } else { roots }
}

/// `git clean` with `-f` and any of `-d`, `-x`, `-X`: removes untracked
/// (and ignored) files under its pathspecs, the current folder without.
fn git_clean(args: &[String]) -> Option<Deletion> {
    let (at, sub) = super::git::subcommand(args)?;
    if sub != "clean" {
        return None;
    }
    let rest = &args[at + 1..];
    let has = |letter: char, long: &str| {
        rest.iter().any(|a| {
            a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(letter))
        })
    };
    let dry_run = has('n', "--dry-run");
    if dry_run || !has('f', "--force") || !(has('d', "-d") || has('x', "-x") || has('X', "-X")) {
        return None;
    }
    let mut targets: Vec<String> = rest.iter().filter(|a| !a.starts_with('-')).cloned().collect();
    // `-e PATTERN` takes a value that is not a path.
    if let Some(at) = rest.iter().position(|a| a == "-e" || a == "--exclude") {
        if let Some(pattern) = rest.get(at + 1) {
            targets.retain(|t| t != pattern);
        }
    }
    if targets.is_empty() {
        targets.push(".".to_owned());
    }
    Some(Deletion { what: "git clean".to_owned(), targets })
}

/// How a deletion is judged in one folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cwd {
    Known,
    /// A `cd` before it could not be followed.
    Unknown,
}

/// Why the deletion must never run, if it must not. `stdin_args`: `xargs`
/// adds targets read from stdin.
pub fn refusal(
    deletion: &Deletion,
    ctx: &PathContext,
    cwd: Cwd,
    stdin_args: bool,
) -> Option<String> {
    let what = &deletion.what;
    if stdin_args {
        return Some(format!(
            "refused in every mode: `{what}` of paths `xargs` reads from stdin, which keel cannot \
             know; list the paths explicitly"
        ));
    }
    deletion.targets.iter().find_map(|target| {
        let why = target_refusal(target, ctx, cwd, 0)?;
        Some(format!(
            "refused in every mode: `{what}` of `{target}`: {why}; name a narrower path literally \
             (e.g. `rm -rf build`)"
        ))
    })
}

fn target_refusal(target: &str, ctx: &PathContext, cwd: Cwd, depth: usize) -> Option<String> {
    if let Some(part) = dynamic_part(target) {
        return Some(format!("it is built from {part}, which keel cannot know"));
    }
    match expand_braces(target) {
        Some(Ok(words)) if depth < 4 => {
            return words.iter().find_map(|word| target_refusal(word, ctx, cwd, depth + 1));
        }
        Some(Ok(_) | Err(())) => {
            return Some("it is a brace expansion too large to judge".to_owned());
        }
        None => {}
    }
    let relative = !target.starts_with('/') && !target.starts_with('~');
    if cwd == Cwd::Unknown && relative && broad(target) {
        return Some("it runs in a folder keel cannot tell (an earlier `cd`)".to_owned());
    }
    if has_glob(target) {
        return glob_refusal(target, ctx);
    }
    ctx.locations(target).into_iter().find_map(|path| {
        let critical = ctx.critical(&path)?;
        Some(critical_reason(&path, critical))
    })
}

fn critical_reason(path: &Path, critical: Critical) -> String {
    format!("{} is {}", path.display(), critical.describe())
}

/// `*`, `.`, `..`, `./*`, `.*`: everything in the folder, or the folder.
fn broad(target: &str) -> bool {
    let trimmed = target.trim_end_matches('/');
    matches!(trimmed, "" | "." | ".." | "*" | ".*" | "./*" | "./.*")
        || trimmed.starts_with("..")
        || trimmed.split('/').any(|part| part == "..")
}

/// A glob reaches too far when it can match a critical path, or matches
/// (nearly) everything directly inside one (`~/*`, `*` in the workspace).
fn glob_refusal(target: &str, ctx: &PathContext) -> Option<String> {
    let pattern = normalize(&ctx.joined(target));
    let (lexical_prefix, first_glob) = split_at_glob(&pattern);
    let rest = pattern.strip_prefix(&lexical_prefix).map(Path::to_path_buf).unwrap_or_default();
    let prefix =
        if ctx.links.is_empty() { lexical_prefix } else { ctx.links.apply(&lexical_prefix) };
    if prefix.components().any(|c| c.as_os_str().to_string_lossy().contains('$')) {
        return Some("it passes through a link the script makes to a path keel cannot know".into());
    }
    let full = prefix.join(rest);
    if let Some(path) = ctx.critical_paths().into_iter().find(|path| glob_matches_path(&full, path))
    {
        let critical = ctx.critical(&path).unwrap_or(Critical::Root);
        return Some(format!("the glob can match {}", critical_reason(&path, critical)));
    }
    let last = full.components().count() == prefix.components().count() + 1;
    let everything = ANY_NAMES.iter().any(|name| glob_matches(&first_glob, name));
    match ctx.critical(&prefix) {
        Some(critical) if last && everything => {
            Some(format!("the glob matches everything in {}", critical_reason(&prefix, critical)))
        }
        Some(_) | None => None,
    }
}

/// The folder before the first component with a glob, and that component.
fn split_at_glob(pattern: &Path) -> (PathBuf, String) {
    let mut prefix = PathBuf::from("/");
    for component in pattern.components().skip(1) {
        let name = component.as_os_str().to_string_lossy();
        if has_glob(&name) {
            return (prefix, name.into_owned());
        }
        prefix.push(component);
    }
    (prefix, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext {
        PathContext::new("/home/u", "/home/u/ws", "/home/u/ws")
    }

    fn refused(text: &str) -> bool {
        let argv = shlex::split(text).unwrap_or_default();
        let deletion = deletion(&argv).unwrap_or_else(|| panic!("not a deletion: {text}"));
        refusal(&deletion, &ctx(), Cwd::Known, false).is_some()
    }

    #[test]
    fn destruction_by_meaning() {
        for text in [
            "rm -rf /",
            "rm -rf \"$PWD\"",
            "rm -rf $(pwd)",
            "rm -rf /*/",
            "rm -rf ~/*",
            "rm -fr ~root",
            "rm -rf /{usr,etc}",
            "rm -rf {,/}",
            "rm -rf $X",
            "rm -rf *",
            "rm -rf .",
            "rm -rf -- /",
            "find . -delete",
            "find -exec rm -rf {} +",
            "chmod -R 777 /",
            "chown -R u ~",
            "git clean -fdx",
            "git clean -f -X",
            "rsync -a --delete empty/ ~/",
            "rimraf /",
        ] {
            assert!(refused(text), "{text}");
        }
        for text in [
            "rm -rf target",
            "rm -rf build/*",
            "rm -rf *.o",
            "rm -r node_modules dist",
            "find target -delete",
            "chmod -R u+w target",
            "git clean -fd build",
            "rm -rf ./{a,b}",
        ] {
            assert!(!refused(text), "{text}");
        }
        assert!(deletion(&shlex::split("git clean -n -dx").unwrap()).is_none());
        assert!(deletion(&shlex::split("rm -f /tmp/x").unwrap()).is_none());
    }

    #[test]
    fn links_are_followed() {
        let mut c = ctx();
        c.links.insert("/home/u/ws/zz".into(), "/home/u/ws".into());
        let deletion = deletion(&shlex::split("rm -rf zz/*").unwrap()).unwrap();
        assert!(refusal(&deletion, &c, Cwd::Known, false).is_some());
        assert!(refusal(&deletion, &ctx(), Cwd::Known, false).is_none());
    }
}
