//! git's ways of running other programs, seen from its arguments: global
//! options (`-c alias.x='!CMD'`, `-c core.pager=CMD`, `--exec-path`,
//! `-c core.hooksPath=DIR`) and subcommand options (`rebase --exec CMD`,
//! `bisect run CMD`, `submodule foreach CMD`, `grep -O CMD`, `clone -u
//! CMD`, `filter-branch --tree-filter CMD`).
//!
//! Invariants: pure; a configuration value that is a command is returned
//! as a script to judge (so `git -c alias.x='!rm -rf ~' x` meets the hard
//! deny); one that points git at code keel cannot read (a hooks folder, an
//! included config file, an exec path) is returned as blind, which never
//! runs without a human. Configuration inside the repository
//! (`.git/config`) is not visible here: the sandbox is what holds that.

/// What a git invocation may run besides git.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitRuns {
    /// Scripts it hands a shell.
    pub scripts: Vec<String>,
    /// Why it may run code keel cannot see.
    pub blind: Vec<String>,
    /// A global option changed git's configuration or paths.
    pub exec_config: bool,
}

/// The subcommand of `git ARGS` after its global options, and where it is.
pub fn subcommand(args: &[String]) -> Option<(usize, &str)> {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        match word.as_str() {
            "-c" | "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
            | "--exec-path" | "--super-prefix" | "--attr-source" => at += 2,
            w if w.starts_with('-') => at += 1,
            w => return Some((at, w)),
        }
    }
    None
}

/// Whether `git ARGS` writes git's own configuration (`git config KEY
/// VALUE`, `--unset`, `--edit`, …): what runs on every later git command
/// (`core.fsmonitor`, `core.hooksPath`, aliases, pagers).
pub fn writes_config(args: &[String]) -> bool {
    let Some((at, "config")) = subcommand(args) else { return false };
    let rest = &args[at + 1..];
    const READS: [&str; 8] = [
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "--show-origin",
        "--show-scope",
    ];
    if rest.iter().any(|a| READS.contains(&a.as_str()) || a.starts_with("--get")) {
        return false;
    }
    let writes = rest.iter().any(|a| {
        a.starts_with("--unset")
            || matches!(
                a.as_str(),
                "--add"
                    | "--replace-all"
                    | "--rename-section"
                    | "--remove-section"
                    | "-e"
                    | "--edit"
            )
            || a.starts_with("set") && a.len() == 3
    });
    let values = rest.iter().filter(|a| !a.starts_with('-')).count();
    writes || values >= 2
}

/// Every global option of `git ARGS` (`-c` pairs as `(key, value)`).
fn global_configs(args: &[String]) -> (Vec<(String, String)>, bool) {
    let mut configs = Vec::new();
    let mut other = false;
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if !word.starts_with('-') {
            break;
        }
        other = true;
        let value = |at: usize| args.get(at + 1).cloned().unwrap_or_default();
        match word.as_str() {
            "-c" => {
                let pair = value(at);
                let (key, val) = pair.split_once('=').unwrap_or((pair.as_str(), "true"));
                configs.push((key.to_ascii_lowercase(), val.to_owned()));
                at += 2;
            }
            "--config-env" | "--exec-path" => {
                configs.push((word.clone(), value(at)));
                at += 2;
            }
            w if w.starts_with("--exec-path=") || w.starts_with("--config-env=") => {
                configs.push((w.to_owned(), String::new()));
                at += 1;
            }
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            | "--attr-source" => at += 2,
            _ => at += 1,
        }
    }
    (configs, other)
}

/// What `git ARGS` runs besides git itself.
pub fn commands_run(args: &[String]) -> GitRuns {
    let mut runs = GitRuns::default();
    let (configs, other) = global_configs(args);
    runs.exec_config = other;
    for (key, value) in &configs {
        judge_config(key, value, &mut runs);
    }
    if let Some((at, sub)) = subcommand(args) {
        subcommand_runs(sub, &args[at + 1..], &mut runs);
    }
    runs
}

fn judge_config(key: &str, value: &str, runs: &mut GitRuns) {
    if key.starts_with("--exec-path") {
        runs.blind.push("`git --exec-path` runs git's helpers from another folder".to_owned());
        return;
    }
    if key.starts_with("--config-env") {
        runs.blind.push("`git --config-env` sets configuration from a variable".to_owned());
        return;
    }
    let (section, name) =
        (key.split('.').next().unwrap_or(key), key.rsplit('.').next().unwrap_or(key));
    if section == "alias" {
        match value.strip_prefix('!') {
            Some(script) => runs.scripts.push(script.to_owned()),
            None => runs.scripts.push(format!("git {value}")),
        }
        return;
    }
    let runs_command = matches!(
        key,
        "core.pager"
            | "core.editor"
            | "core.sshcommand"
            | "core.fsmonitor"
            | "core.askpass"
            | "core.gitproxy"
            | "sequence.editor"
            | "diff.external"
            | "gpg.program"
            | "uploadpack.packobjectshook"
            | "web.browser"
    ) || (section == "credential" && name == "helper")
        || (section == "pager")
        || (matches!(
            section,
            "diff"
                | "merge"
                | "filter"
                | "difftool"
                | "mergetool"
                | "man"
                | "browser"
                | "gpg"
                | "remote"
                | "sendemail"
        ) && matches!(
            name,
            "textconv"
                | "command"
                | "driver"
                | "clean"
                | "smudge"
                | "process"
                | "cmd"
                | "program"
                | "uploadpack"
                | "receivepack"
                | "sendmailcmd"
                | "vcs"
        ));
    if runs_command {
        let script = value.strip_prefix('!').unwrap_or(value);
        if !matches!(script, "true" | "false" | "" | "0" | "1") {
            runs.scripts.push(script.to_owned());
        }
        return;
    }
    let points_at_code = matches!(key, "core.hookspath" | "include.path" | "init.templatedir")
        || (section == "includeif" && name == "path")
        || (section == "protocol" && name == "allow");
    if points_at_code {
        runs.blind.push(format!("`git -c {key}` makes git run code keel cannot read"));
    }
}

fn subcommand_runs(sub: &str, rest: &[String], runs: &mut GitRuns) {
    let value_of = |names: &[&str]| -> Vec<String> {
        let mut found = Vec::new();
        let mut words = rest.iter();
        while let Some(word) = words.next() {
            if let Some(value) = names.iter().find_map(|n| word.strip_prefix(&format!("{n}="))) {
                found.push(value.to_owned());
            } else if names.contains(&word.as_str()) {
                found.extend(words.next().cloned());
            }
        }
        found
    };
    match sub {
        "rebase" => runs.scripts.extend(value_of(&["-x", "--exec"])),
        "bisect" if rest.first().is_some_and(|w| w == "run") => {
            runs.scripts
                .push(shlex::try_join(rest[1..].iter().map(String::as_str)).unwrap_or_default());
        }
        "submodule" => {
            if let Some(at) = rest.iter().position(|w| w == "foreach") {
                let words: Vec<&str> = rest[at + 1..]
                    .iter()
                    .map(String::as_str)
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                runs.scripts.push(words.join(" "));
            }
        }
        "difftool" | "mergetool" => runs.scripts.extend(value_of(&["-x", "--extcmd"])),
        "grep" => {
            for word in rest {
                if let Some(program) = word.strip_prefix("--open-files-in-pager=") {
                    runs.scripts.push(program.to_owned());
                } else if let Some(program) = word.strip_prefix("-O").filter(|p| !p.is_empty()) {
                    runs.scripts.push(program.to_owned());
                } else if word == "-O" || word == "--open-files-in-pager" {
                    runs.blind.push("`git grep -O` opens the files in a pager".to_owned());
                }
            }
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "push" | "archive" => {
            runs.scripts.extend(value_of(&["-u", "--upload-pack", "--receive-pack", "--exec"]));
        }
        "filter-branch" => runs.scripts.extend(value_of(&[
            "--env-filter",
            "--tree-filter",
            "--index-filter",
            "--parent-filter",
            "--msg-filter",
            "--commit-filter",
            "--tag-name-filter",
        ])),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        shlex::split(text).unwrap_or_default()
    }

    #[test]
    fn aliases_and_pagers_are_scripts() {
        let runs = commands_run(&words("-c 'alias.x=!rm -rf ~' x"));
        assert_eq!(runs.scripts, ["rm -rf ~"]);
        assert!(runs.exec_config);
        let runs = commands_run(&words("-c alias.c='clean -fdx' c"));
        assert_eq!(runs.scripts, ["git clean -fdx"]);
        let runs = commands_run(&words("-c core.pager='sh -c id' log"));
        assert_eq!(runs.scripts, ["sh -c id"]);
        let runs = commands_run(&words("-c core.hooksPath=/tmp/h commit -m x"));
        assert_eq!(runs.blind.len(), 1);
    }

    #[test]
    fn subcommands_that_run_commands() {
        assert_eq!(commands_run(&words("rebase -x 'make test' main")).scripts, ["make test"]);
        assert_eq!(commands_run(&words("bisect run ./t.sh")).scripts, ["./t.sh"]);
        assert_eq!(commands_run(&words("grep -Ovim x")).scripts, ["vim"]);
        assert_eq!(commands_run(&words("status")), GitRuns::default());
        assert_eq!(subcommand(&words("-C dir -c a=b log -p")), Some((4, "log")));
        assert!(writes_config(&words("config core.fsmonitor 'rm -rf ~'")));
        assert!(writes_config(&words("config --unset core.pager")));
        assert!(!writes_config(&words("config user.name")));
        assert!(!writes_config(&words("config --get core.pager")));
    }
}
