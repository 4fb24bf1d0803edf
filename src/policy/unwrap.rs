//! Stripping wrappers off one argv so rules see the command that really
//! runs: leading `VAR=value`, `env`, `timeout`, `nice`, `nohup`, `stdbuf`,
//! `time`, `command`, `builtin`, `exec`, `xargs`, `sudo`/`doas`, and the
//! process wrappers of [`super::wrappers`] (`setsid`, `ionice`, `chrt`,
//! `taskset`, `flock`, `strace`, `unbuffer`, …); recognising `bash -c
//! SCRIPT` (also `sh`, `zsh`, `dash`, `ksh`, with `-lc`, `-ic`, `-ec` …) and
//! wrappers that hand a shell a joined string (`watch`, `script -c`, `su
//! -c`, `parallel`) so the script is analysed in turn. `find -exec`, `env
//! -S`, git's command-valued options ([`super::git`]) and a command named
//! inside an unknown program's arguments (`mywrap rm -rf /`) contribute the
//! commands they run as `extra`/`scripts`, judged like the rest.
//!
//! Invariant: unwrapping only removes words that cannot change which
//! program runs; what it strips that changes *how* it runs (a process
//! wrapper, an environment assignment, arguments from stdin) is kept as a
//! flag that denies the command the read-only list and allow rules.

use super::git;
use super::shell::sensitive_assignment;
use super::wrappers::{self, Wrapper};

/// What unwrapping learned besides the argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flags {
    /// `sudo`/`doas`/`su`/`pkexec`.
    pub privileged: bool,
    /// A variable that changes what runs (PATH, LD_PRELOAD, GIT_*, …).
    pub sensitive_env: bool,
    /// Any variable set for it beyond locale and colour settings.
    pub env_assigned: bool,
    /// A process wrapper it ran under (`setsid`, `strace`, …).
    pub wrapper: Option<String>,
    /// Its arguments also come from stdin (`xargs`).
    pub stdin_args: bool,
    /// Start-up code it is handed that keel cannot read
    /// (`BASH_ENV=/dev/stdin`, `MAKEFILES=<(…)`).
    pub unseen_start_up: Vec<String>,
}

/// An argv after unwrapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrapped {
    Command {
        argv: Vec<String>,
        flags: Flags,
        /// Commands this one runs itself (`find -exec`, `env -S`, a
        /// command inside an unknown program's arguments).
        extra: Vec<Vec<String>>,
        /// Scripts it hands a shell (`git -c alias.x='!…'`,
        /// `GIT_SSH_COMMAND=…`).
        scripts: Vec<String>,
        /// What it runs that keel cannot read (`git -c core.hooksPath=…`).
        blind: Vec<String>,
    },
    /// A shell running a script given as an argument.
    Script { script: String, flags: Flags },
}

pub(super) const SHELLS: [&str; 6] = ["bash", "sh", "zsh", "dash", "ksh", "fish"];

/// Variables that change nothing a policy cares about.
const HARMLESS_VARS: [&str; 16] = [
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "TERM",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "CI",
    "CARGO_TERM_COLOR",
];

/// Variables whose value is a command some program runs.
const COMMAND_VARS: [&str; 19] = [
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "LESSOPEN",
    "LESSCLOSE",
    "PROMPT_COMMAND",
    "BROWSER",
    "RSYNC_RSH",
];

/// The program's name without its directory (`/usr/bin/env` → `env`).
pub fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Unwraps `argv` down to the command that runs.
pub fn unwrap(mut argv: Vec<String>) -> Unwrapped {
    let mut flags = Flags::default();
    let mut extra = Vec::new();
    let mut scripts = Vec::new();
    let mut blind = Vec::new();
    loop {
        let assignments = argv.iter().take_while(|w| is_assignment(w)).count();
        if assignments > 0 {
            for word in argv.drain(..assignments) {
                note_assignment(&word, &mut flags, &mut scripts);
            }
            continue;
        }
        let Some(program) = argv.first().map(|p| base_name(p).to_owned()) else { break };
        let skip = match program.as_str() {
            "env" => env_skip(&argv, &mut extra, &mut flags, &mut scripts),
            "timeout" => options_then(&argv, &["-s", "-k", "--signal", "--kill-after"], 1),
            "nice" => options_then(&argv, &["-n", "--adjustment"], 0),
            "nohup" | "builtin" | "busybox" => Some(1),
            "exec" => options_then(&argv, &["-a"], 0),
            "time" => options_then(&argv, &["-f", "--format", "-o", "--output"], 0),
            "stdbuf" => options_then(&argv, &["-i", "-o", "-e"], 0),
            "command" if !argv.iter().skip(1).any(|a| a == "-v" || a == "-V") => {
                options_then(&argv, &[], 0)
            }
            "sudo" | "doas" => {
                flags.privileged = true;
                options_then(&argv, &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"], 0)
            }
            "xargs" => {
                flags.stdin_args = true;
                xargs_skip(&argv)
            }
            shell if SHELLS.contains(&shell) => {
                if let Some(script) = shell_script(&argv) {
                    return Unwrapped::Script { script, flags };
                }
                None
            }
            "find" => {
                extra.extend(find_exec(&argv));
                None
            }
            "git" => {
                let found = git::commands_run(&argv[1..]);
                scripts.extend(found.scripts);
                blind.extend(found.blind);
                flags.sensitive_env |= found.exec_config;
                None
            }
            other => match wrappers::lookup(other, &argv) {
                Some(Wrapper::Skip { words, privileged }) => {
                    flags.wrapper = Some(other.to_owned());
                    flags.privileged |= privileged;
                    Some(words)
                }
                Some(Wrapper::Script { script, privileged }) => {
                    flags.wrapper = Some(other.to_owned());
                    flags.privileged |= privileged;
                    return Unwrapped::Script { script, flags };
                }
                None => {
                    extra.extend(wrappers::embedded_command(&argv));
                    None
                }
            },
        };
        match skip {
            Some(n) if n > 0 && n < argv.len() => {
                argv.drain(..n);
            }
            Some(_) | None => break,
        }
    }
    Unwrapped::Command { argv, flags, extra, scripts, blind }
}

/// Records what a `NAME=value` before a command means.
fn note_assignment(word: &str, flags: &mut Flags, scripts: &mut Vec<String>) {
    flags.sensitive_env |= sensitive_assignment(word);
    flags.unseen_start_up.extend(super::program_source::unseen_start_up(word));
    let Some((name, value)) = word.split_once('=') else { return };
    let harmless = HARMLESS_VARS.contains(&name) || name.starts_with("LC_");
    flags.env_assigned |= !harmless;
    if COMMAND_VARS.contains(&name) {
        flags.sensitive_env = true;
        let command = value.trim_start_matches(['|', '-']).trim();
        if !command.is_empty() {
            scripts.push(command.to_owned());
        }
    }
}

pub(super) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let name = name.trim_end_matches('+');
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Words to skip for `PROGRAM [OPTIONS] [positional × positionals] CMD…`:
/// options in `with_value` take the next word (or `=value`); any other
/// `-x` is a flag. `None` if no command follows.
pub(super) fn options_then(
    argv: &[String],
    with_value: &[&str],
    positionals: usize,
) -> Option<usize> {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        if word == "--" {
            at += 1;
            break;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        let takes_value = with_value.iter().any(|o| word == o);
        at += if takes_value { 2 } else { 1 };
    }
    at += positionals;
    (at < argv.len()).then_some(at)
}

fn env_skip(
    argv: &[String],
    extra: &mut Vec<Vec<String>>,
    flags: &mut Flags,
    scripts: &mut Vec<String>,
) -> Option<usize> {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        match word.as_str() {
            "-i" | "-0" | "--ignore-environment" | "--null" | "-" => at += 1,
            "-u" | "--unset" | "-C" | "--chdir" => {
                flags.env_assigned = true;
                at += 2;
            }
            "-S" | "--split-string" => {
                let words = argv.get(at + 1).and_then(|s| shlex::split(s)).unwrap_or_default();
                let mut nested = words;
                nested.extend(argv.iter().skip(at + 2).cloned());
                extra.push(nested);
                return None;
            }
            "--" => {
                at += 1;
                break;
            }
            w if w.starts_with("--unset=") || w.starts_with("--chdir=") => {
                flags.env_assigned = true;
                at += 1;
            }
            w if is_assignment(w) => {
                note_assignment(w, flags, scripts);
                at += 1;
            }
            _ => break,
        }
    }
    (at < argv.len()).then_some(at)
}

fn xargs_skip(argv: &[String]) -> Option<usize> {
    const WITH_VALUE: [&str; 10] = ["-n", "-I", "-i", "-d", "-P", "-L", "-s", "-E", "-e", "-a"];
    options_then(argv, &WITH_VALUE, 0)
}

/// `bash -c SCRIPT`, `sh -lc SCRIPT`, `bash --login -c SCRIPT`.
fn shell_script(argv: &[String]) -> Option<String> {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        if word.starts_with("--") {
            at += 1;
            continue;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            if word.contains('c') {
                return argv.get(at + 1).cloned();
            }
            // `-o OPTION` / `+O OPTION` take a value.
            at += if matches!(word.as_str(), "-o" | "+o" | "-O" | "+O") { 2 } else { 1 };
            continue;
        }
        return None;
    }
    None
}

/// Where a shell without `-c` reads its script: a file argument, or stdin.
pub(super) fn shell_reads_stdin(argv: &[String]) -> bool {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        match word.as_str() {
            "-" | "--" => return true,
            "-s" => return true,
            w if w.starts_with("--") => at += 1,
            "-o" | "+o" | "-O" | "+O" => at += 2,
            w if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 => {
                if w.contains('s') {
                    return true;
                }
                at += 1;
            }
            _ => return false,
        }
    }
    true
}

/// The commands `find … -exec CMD … ;` runs.
fn find_exec(argv: &[String]) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        if matches!(word.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let command: Vec<String> =
                words.by_ref().take_while(|w| *w != ";" && *w != "+").cloned().collect();
            if !command.is_empty() {
                found.push(command);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn inner(text: &str) -> Vec<String> {
        match unwrap(words(text)) {
            Unwrapped::Command { argv, .. } => argv,
            Unwrapped::Script { script, .. } => vec![format!("SCRIPT:{script}")],
        }
    }

    fn flags(text: &str) -> Flags {
        match unwrap(words(text)) {
            Unwrapped::Command { flags, .. } | Unwrapped::Script { flags, .. } => flags,
        }
    }

    #[test]
    fn strips_wrappers() {
        assert_eq!(
            inner("A=1 timeout -s KILL 5 nice -n 3 nohup env -i B=2 rm -rf x"),
            words("rm -rf x")
        );
        assert_eq!(inner("/usr/bin/env rm x"), words("rm x"));
        assert_eq!(inner("xargs -0 -n 1 rm"), words("rm"));
        assert_eq!(inner("sudo -u root rm x"), words("rm x"));
        assert_eq!(inner("command -v ls"), words("command -v ls"));
        assert_eq!(inner("env"), words("env"));
        assert_eq!(
            inner("setsid -f ionice -c 3 chrt -f 1 taskset -c 0 rm -rf x"),
            words("rm -rf x")
        );
        assert_eq!(inner("strace -f -o /dev/null unbuffer rm x"), words("rm x"));
        assert_eq!(inner("flock /tmp/l rm x"), words("rm x"));
    }

    #[test]
    fn flags_say_what_was_stripped() {
        assert!(flags("LESSOPEN=|x less f").env_assigned);
        assert!(flags("LESSOPEN=|x less f").sensitive_env);
        assert!(!flags("LC_ALL=C sort f").env_assigned);
        assert!(flags("xargs rm").stdin_args);
        assert_eq!(flags("setsid ls").wrapper.as_deref(), Some("setsid"));
        assert!(flags("PATH=/tmp ls").sensitive_env);
    }

    #[test]
    fn finds_shell_scripts() {
        assert_eq!(inner("bash -lc x"), ["SCRIPT:x"]);
        assert_eq!(inner("sh --login -c y"), ["SCRIPT:y"]);
        assert_eq!(inner("bash script.sh"), words("bash script.sh"));
        assert_eq!(inner("watch -n 1 rm -rf x"), ["SCRIPT:rm -rf x"]);
        assert_eq!(inner("flock /tmp/l -c x"), ["SCRIPT:x"]);
        assert!(shell_reads_stdin(&words("bash")));
        assert!(shell_reads_stdin(&words("sh -s -- a")));
        assert!(!shell_reads_stdin(&words("sh -e x.sh")));
    }

    #[test]
    fn commands_run_by_others_are_extra() {
        let Unwrapped::Command { extra, .. } = unwrap(words("find . -exec rm -rf {} ;")) else {
            panic!("not a command")
        };
        assert_eq!(extra, [words("rm -rf {}")]);
        let mut argv = words("env -S");
        argv.push("rm -rf /".to_owned());
        let Unwrapped::Command { extra, .. } = unwrap(argv) else { panic!("not a command") };
        assert_eq!(extra, [words("rm -rf /")]);
        let Unwrapped::Command { extra, .. } = unwrap(words("mywrap --fast rm -rf /")) else {
            panic!("not a command")
        };
        assert_eq!(extra, [words("rm -rf /")]);
        let Unwrapped::Command { scripts, .. } = unwrap(words("GIT_SSH_COMMAND=evil git fetch"))
        else {
            panic!("not a command")
        };
        assert_eq!(scripts, ["evil"]);
    }
}
