//! Programs that run another command: how many words to skip to reach it
//! (`setsid -f CMD`, `chrt -f 10 CMD`, `taskset -c 0 CMD`), or the script
//! they hand a shell (`watch 'CMD'`, `script -qc 'CMD'`, `su -c 'CMD'`,
//! `parallel 'CMD {}' ::: …`); and, for a program keel does not know, the
//! first word of its arguments that names a command worth judging
//! (`mywrap --fast rm -rf /`).
//!
//! Invariant: a wrapper whose options keel cannot parse is not skipped: it
//! stays the program, which asks in ask mode, and its arguments are still
//! searched for an embedded command, so nothing it runs escapes the hard
//! deny.

use super::unwrap::{SHELLS, base_name, options_then};

/// How a known wrapper runs its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrapper {
    /// The command starts after this many words.
    Skip { words: usize, privileged: bool },
    /// The wrapper runs this script with a shell.
    Script { script: String, privileged: bool },
}

/// Programs whose presence in an unknown program's arguments means that
/// program probably runs them: each is judged as a command of its own.
const EMBEDDED: [&str; 34] = [
    "rm", "rmdir", "chmod", "chown", "chgrp", "find", "dd", "shred", "wipefs", "mkfs", "mke2fs",
    "mkswap", "mv", "rsync", "rimraf", "git", "xargs", "eval", "env", "sudo", "doas", "su", "bash",
    "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "node", "perl", "ruby", "truncate",
];

/// Programs that print or search their arguments rather than run them.
const NEVER_RUN_ARGS: [&str; 16] = [
    "echo", "printf", "grep", "egrep", "fgrep", "rg", "cat", "ls", "man", "which", "type",
    "whatis", "apropos", "test", "[", "true",
];

/// The wrapper `name` (the base name of `argv[0]`) and where its command
/// starts, if keel knows it.
pub fn lookup(name: &str, argv: &[String]) -> Option<Wrapper> {
    let skip = |words: Option<usize>| words.map(|words| Wrapper::Skip { words, privileged: false });
    match name {
        "setsid" => skip(options_then(argv, &[], 0)),
        "ionice" => skip(options_then(argv, &["-c", "-n", "--class", "--classdata"], 0)),
        "chrt" => skip(options_then(argv, &["-T", "-P", "-D"], 1)),
        "taskset" => skip(options_then(argv, &[], 1)),
        "unbuffer" | "catchsegv" | "dbus-run-session" | "fakeroot" | "chronic" | "caffeinate" => {
            skip(options_then(argv, &[], 0))
        }
        "strace" | "ltrace" => skip(options_then(
            argv,
            &["-o", "-e", "-s", "-u", "-E", "-a", "-S", "-X", "-P", "-I", "-b", "-O", "-U"],
            0,
        )),
        "nsenter" | "unshare" => {
            skip(options_then(argv, &["-S", "-G", "-R", "-w", "-t", "--setuid", "--setgid"], 0))
        }
        "chroot" => skip(options_then(argv, &["--userspec", "--groups"], 1)),
        "xvfb-run" => skip(options_then(argv, &["-n", "-s", "-f", "-e", "-p"], 0)),
        "firejail" | "systemd-run" | "systemd-inhibit" => skip(long_options_then(argv)),
        "pkexec" => options_then(argv, &["--user"], 0)
            .map(|words| Wrapper::Skip { words, privileged: true }),
        "flock" => flock(argv),
        "watch" => watch(argv),
        "script" => option_script(argv, &["-c", "--command"]).map(script(false)),
        "su" | "runuser" => option_script(argv, &["-c", "--command"]).map(script(true)),
        "sg" => argv.get(2).cloned().map(script(false)),
        "parallel" => parallel(argv),
        _ => None,
    }
}

fn script(privileged: bool) -> impl Fn(String) -> Wrapper {
    move |script| Wrapper::Script { script, privileged }
}

/// Flags of the form `--name=value` or `-x`; the command follows.
fn long_options_then(argv: &[String]) -> Option<usize> {
    let at = argv.iter().skip(1).position(|w| !w.starts_with('-')).map(|i| i + 1)?;
    Some(at)
}

/// `flock [opts] FILE CMD…` or `flock [opts] FILE -c CMD`.
fn flock(argv: &[String]) -> Option<Wrapper> {
    let file_at = options_then(argv, &["-w", "-E", "--timeout", "--conflict-exit-code"], 0)?;
    let after = argv.get(file_at + 1)?;
    if after == "-c" || after == "--command" {
        return argv.get(file_at + 2).cloned().map(script(false));
    }
    Some(Wrapper::Skip { words: file_at + 1, privileged: false })
}

/// `watch [opts] CMD…`: joined with spaces and run by `sh -c` (unless
/// `-x`, which runs the words directly).
fn watch(argv: &[String]) -> Option<Wrapper> {
    let at = options_then(argv, &["-n", "--interval", "-q", "--equexit"], 0)?;
    if argv[1..at].iter().any(|w| w == "-x" || w == "--exec") {
        return Some(Wrapper::Skip { words: at, privileged: false });
    }
    Some(Wrapper::Script { script: argv[at..].join(" "), privileged: false })
}

/// The value of `-c CMD` (also inside a cluster: `-qc CMD`).
fn option_script(argv: &[String], names: &[&str]) -> Option<String> {
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        if let Some(value) = names.iter().find_map(|n| word.strip_prefix(&format!("{n}="))) {
            return Some(value.to_owned());
        }
        let cluster_ends_in_c =
            word.starts_with('-') && !word.starts_with("--") && word.ends_with('c');
        if names.contains(&word.as_str()) || cluster_ends_in_c {
            return words.next().cloned();
        }
    }
    None
}

/// GNU parallel: the words before `:::` are a command template run by a
/// shell, `{}` standing for each input.
fn parallel(argv: &[String]) -> Option<Wrapper> {
    let end = argv.iter().position(|w| w.starts_with(":::")).unwrap_or(argv.len());
    let start = options_then(&argv[..end], &["-j", "-S", "-N", "-n", "-a", "-d", "-I", "-E"], 0)?;
    let mut script = argv[start..end].join(" ");
    if !script.contains("{}") {
        // Without a placeholder, each input is appended.
        script.push_str(" {}");
    }
    Some(Wrapper::Script { script, privileged: false })
}

/// For a program keel does not know: the first of its arguments (from a
/// command word on) that names a program worth judging.
pub fn embedded_command(argv: &[String]) -> Option<Vec<String>> {
    let program = base_name(argv.first()?);
    if NEVER_RUN_ARGS.contains(&program) || EMBEDDED.contains(&program) {
        return None;
    }
    let at = argv.iter().skip(1).position(|word| {
        let name = base_name(word);
        EMBEDDED.contains(&name) || name.starts_with("mkfs") || SHELLS.contains(&name)
    })?;
    Some(argv[at + 1..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn scripts_handed_to_a_shell() {
        let got = lookup("script", &words("script -qc id /dev/null"));
        assert_eq!(got, Some(Wrapper::Script { script: "id".into(), privileged: false }));
        let got = lookup("su", &words("su root -c id"));
        assert_eq!(got, Some(Wrapper::Script { script: "id".into(), privileged: true }));
        let got = lookup("parallel", &words("parallel rm -rf {} ::: a b"));
        assert_eq!(got, Some(Wrapper::Script { script: "rm -rf {}".into(), privileged: false }));
        let got = lookup("parallel", &words("parallel rm -rf ::: a b"));
        assert_eq!(got, Some(Wrapper::Script { script: "rm -rf {}".into(), privileged: false }));
    }

    #[test]
    fn embedded_commands_of_unknown_programs() {
        assert_eq!(embedded_command(&words("mywrap -x rm -rf /")), Some(words("rm -rf /")));
        assert_eq!(embedded_command(&words("echo rm -rf /")), None);
        assert_eq!(embedded_command(&words("cargo build")), None);
        assert_eq!(embedded_command(&words("uv run bash -c x")), Some(words("bash -c x")));
    }
}
