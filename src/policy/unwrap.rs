//! Stripping wrappers off one argv so rules see the command that really
//! runs: leading `VAR=value`, `env`, `timeout`, `nice`, `nohup`, `stdbuf`,
//! `time`, `command`, `builtin`, `exec`, `xargs`, `sudo`/`doas`; and
//! recognising `bash -c SCRIPT` (also `sh`, `zsh`, `dash`, `ksh`, with
//! `-lc`, `-ic`, `-ec` …) so the script is analysed in turn. `find -exec`
//! and `env -S` contribute the commands they run as `extra`.
//!
//! Invariant: unwrapping only removes words that cannot change which
//! program runs; a flag keel does not know stops unwrapping (the wrapper
//! stays the program name, which no allow rule and no read-only entry
//! covers, so the command asks).

use super::shell::sensitive_assignment;

/// An argv after unwrapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrapped {
    Command {
        argv: Vec<String>,
        privileged: bool,
        sensitive_env: bool,
        /// Commands this one runs itself (`find -exec`, `env -S`).
        extra: Vec<Vec<String>>,
    },
    /// A shell running a script given as an argument.
    Script { script: String, privileged: bool },
}

const SHELLS: [&str; 5] = ["bash", "sh", "zsh", "dash", "ksh"];

/// The program's name without its directory (`/usr/bin/env` → `env`).
pub fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// Unwraps `argv` down to the command that runs.
pub fn unwrap(mut argv: Vec<String>) -> Unwrapped {
    let mut privileged = false;
    let mut sensitive_env = false;
    let mut extra = Vec::new();
    loop {
        let assignments = argv.iter().take_while(|w| is_assignment(w)).count();
        if assignments > 0 {
            sensitive_env |= argv[..assignments].iter().any(|w| sensitive_assignment(w));
            argv.drain(..assignments);
            continue;
        }
        let Some(program) = argv.first().map(|p| base_name(p).to_owned()) else { break };
        let skip = match program.as_str() {
            "env" => env_skip(&argv, &mut extra, &mut sensitive_env),
            "timeout" => options_then(&argv, &["-s", "-k", "--signal", "--kill-after"], 1),
            "nice" => options_then(&argv, &["-n", "--adjustment"], 0),
            "nohup" | "builtin" | "busybox" => Some(1),
            "exec" => options_then(&argv, &["-a"], 0),
            "time" => options_then(&argv, &[], 0),
            "stdbuf" => options_then(&argv, &["-i", "-o", "-e"], 0),
            "command" if !argv.iter().skip(1).any(|a| a == "-v" || a == "-V") => {
                options_then(&argv, &[], 0)
            }
            "sudo" | "doas" => {
                privileged = true;
                options_then(&argv, &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"], 0)
            }
            "xargs" => xargs_skip(&argv),
            shell if SHELLS.contains(&shell) => {
                if let Some(script) = shell_script(&argv) {
                    return Unwrapped::Script { script, privileged };
                }
                None
            }
            "find" => {
                extra.extend(find_exec(&argv));
                None
            }
            _ => None,
        };
        match skip {
            Some(n) if n > 0 && n < argv.len() => {
                argv.drain(..n);
            }
            Some(_) | None => break,
        }
    }
    Unwrapped::Command { argv, privileged, sensitive_env, extra }
}

fn is_assignment(word: &str) -> bool {
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
fn options_then(argv: &[String], with_value: &[&str], positionals: usize) -> Option<usize> {
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

fn env_skip(argv: &[String], extra: &mut Vec<Vec<String>>, sensitive: &mut bool) -> Option<usize> {
    let mut at = 1;
    while let Some(word) = argv.get(at) {
        match word.as_str() {
            "-i" | "-0" | "--ignore-environment" | "--null" | "-" => at += 1,
            "-u" | "--unset" | "-C" | "--chdir" => at += 2,
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
            w if w.starts_with("--unset=") || w.starts_with("--chdir=") => at += 1,
            w if is_assignment(w) => {
                *sensitive |= sensitive_assignment(w);
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
        if word.starts_with('-') && word.len() > 1 {
            if word.contains('c') {
                return argv.get(at + 1).cloned();
            }
            at += 1;
            continue;
        }
        return None;
    }
    None
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
    }

    #[test]
    fn finds_shell_scripts() {
        assert_eq!(inner("bash -lc x"), ["SCRIPT:x"]);
        assert_eq!(inner("sh --login -c y"), ["SCRIPT:y"]);
        assert_eq!(inner("bash script.sh"), words("bash script.sh"));
    }

    #[test]
    fn find_exec_and_env_split_string_are_extra() {
        let Unwrapped::Command { extra, .. } = unwrap(words("find . -exec rm -rf {} ;")) else {
            panic!("not a command")
        };
        assert_eq!(extra, [words("rm -rf {}")]);
        let mut argv = words("env -S");
        argv.push("rm -rf /".to_owned());
        let Unwrapped::Command { extra, .. } = unwrap(argv) else { panic!("not a command") };
        assert_eq!(extra, [words("rm -rf /")]);
    }

    #[test]
    fn sensitive_variables_are_flagged() {
        let Unwrapped::Command { sensitive_env, .. } = unwrap(words("PATH=/tmp ls")) else {
            panic!("not a command")
        };
        assert!(sensitive_env);
    }
}
