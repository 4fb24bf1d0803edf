//! What one simple command means, added to a [`Script`]: wrappers
//! stripped ([`unwrap`]), nested shells and the scripts and commands other
//! programs run analysed in turn, shells and interpreters reading their
//! program from stdin (`curl … | sh`, `python3 < x.py`) marked blind,
//! heredocs fed to them read as the script they are, interpreter
//! one-liners read for their meaning ([`super::interp`]), `eval` and
//! `source` of text keel cannot see marked blind, glob command names
//! (`/???/?m`) judged as every dangerous program they can name, and
//! `ln -s` recorded so later paths are judged through the link.
//!
//! Invariants: never panics; recursion is bounded by [`MAX_DEPTH`]; a
//! command only ever adds commands, hidden constructs and blind reasons
//! (nothing found here can make a script look safer).

use super::interp::{self, CodeSource};
use super::program_source::{self, ProgramFile, classify};
use super::readonly;
use super::shell::{
    Hidden, MAX_DEPTH, Script, ScriptLink, SimpleCommand, script_into, script_into_fed,
};
use super::unwrap::{Flags, SHELLS, Unwrapped, base_name, shell_reads_stdin, unwrap};
use super::words::{glob_matches, has_glob};
use super::workdir::Dirs;

/// What a command reads on stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Stdin {
    /// Nothing (the shell tool closes stdin).
    #[default]
    Closed,
    /// The output of the command before it in a pipeline.
    Pipe,
    /// A file (`< file`).
    File,
    /// A heredoc or herestring; `dynamic` when it expands something.
    Text { body: String, dynamic: bool },
}

/// Programs a glob in command position is checked against.
const DANGEROUS: [&str; 14] = [
    "rm", "chmod", "chown", "chgrp", "find", "dd", "shred", "wipefs", "mkfs", "mv", "rsync", "sh",
    "bash", "git",
];

/// Adds `argv` (one simple command, `dynamic` when some word came from
/// an expansion) to `out`, unwrapping wrappers and nested shells.
pub fn command_into(
    argv: Vec<String>,
    dynamic: bool,
    depth: usize,
    dirs: &Dirs,
    stdin: &Stdin,
    out: &mut Script,
) {
    if depth > MAX_DEPTH {
        out.hidden.push(Hidden::Unparseable);
        return;
    }
    match unwrap(argv) {
        Unwrapped::Command { argv, flags, extra, scripts, blind } => {
            out.blind.extend(blind);
            out.blind.extend(flags.unseen_start_up.iter().cloned());
            for nested in extra {
                command_into(nested, dynamic, depth + 1, dirs, &Stdin::Closed, out);
            }
            for script in scripts {
                script_into(&script, depth + 1, dirs, out);
            }
            judge_program(&argv, &flags, dynamic, depth, dirs, stdin, out);
            let dynamic = dynamic || flags.privileged && argv.is_empty();
            out.commands.push(with_flags(SimpleCommand::new(argv, dirs.clone()), &flags, dynamic));
        }
        Unwrapped::Script { script, flags } => {
            out.blind.extend(flags.unseen_start_up.iter().cloned());
            // What ran the shell stays a command of its own, so the script
            // is never taken as read-only (`setsid sh -c 'ls'`).
            let marker = flags
                .wrapper
                .clone()
                .or_else(|| flags.privileged.then(|| "sudo".to_owned()))
                .or_else(|| (flags.env_assigned || flags.sensitive_env).then(|| "env".to_owned()));
            if let Some(name) = marker {
                let command = SimpleCommand::new(vec![name], dirs.clone());
                out.commands.push(with_flags(command, &flags, dynamic));
            }
            if dynamic {
                out.hidden.push(Hidden::DynamicCommandName);
                out.blind.push("a shell runs a script built at run time".to_owned());
                if let Some(known) = substitute(&script, out) {
                    script_into(&known, depth + 1, dirs, out);
                }
            }
            // The script's commands read what the shell reads.
            script_into_fed(&script, depth + 1, dirs, stdin, out);
        }
    }
}

/// `text` with `$NAME`/`${NAME}` replaced by values the script assigned
/// literally; `None` when some expansion stays unknown.
pub(super) fn substitute(text: &str, out: &Script) -> Option<String> {
    let mut result = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        result.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, used) = match after.strip_prefix('{') {
            Some(inner) => {
                let end = inner.find('}')?;
                (&inner[..end], end + 2)
            }
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        result.push_str(out.vars.get(name)?);
        rest = &after[used..];
    }
    result.push_str(rest);
    Some(result)
}

fn with_flags(mut command: SimpleCommand, flags: &Flags, dynamic: bool) -> SimpleCommand {
    command.dynamic = dynamic;
    command.privileged = flags.privileged;
    command.sensitive_env = flags.sensitive_env;
    command.env_assigned = flags.env_assigned;
    command.wrapper = flags.wrapper.clone();
    command.stdin_args = flags.stdin_args;
    command
}

/// What the program itself runs: `eval`, `source`, shells and
/// interpreters without a script argument, glob names, `ln -s`.
fn judge_program(
    argv: &[String],
    flags: &Flags,
    dynamic: bool,
    depth: usize,
    dirs: &Dirs,
    stdin: &Stdin,
    out: &mut Script,
) {
    let Some(first) = argv.first() else { return };
    let program = base_name(first);
    if first == "{}" {
        out.blind.push("`find -exec {}` runs every file it finds as a program".to_owned());
    }
    match program {
        "eval" => {
            out.hidden.push(Hidden::Eval);
            let text = argv[1..].join(" ");
            if dynamic {
                out.blind.push("`eval` runs text built at run time".to_owned());
                if let Some(known) = substitute(&text, out) {
                    script_into(&known, depth + 1, dirs, out);
                }
            }
            // What eval runs is its arguments joined: judge that too.
            script_into(&text, depth + 1, dirs, out);
        }
        "source" | "." => {
            out.hidden.push(Hidden::Source);
            let file = argv.get(1).map_or("", String::as_str);
            let unreadable = classify(file) != ProgramFile::File;
            if dynamic || unreadable || file.is_empty() {
                out.blind.push(format!("`{program}` runs a script keel cannot read"));
            }
        }
        "make" | "gmake" | "bmake" | "remake" => {
            make_program(program, argv, stdin, depth, dirs, out)
        }
        "just" => {
            for file in program_source::just_files(&argv[1..]) {
                if classify(file) != ProgramFile::File {
                    out.blind.push(format!("`just` reads its recipes from `{file}`"));
                }
            }
        }
        "ln" => record_links(argv, dirs, out),
        // Scripts given as arguments: an alias's value, a trap's action.
        "alias" => {
            for value in argv[1..].iter().filter_map(|a| a.split_once('=').map(|(_, v)| v)) {
                script_into(value, depth + 1, dirs, out);
            }
        }
        "trap" => {
            if let Some(action) = argv.get(1).filter(|a| !a.starts_with('-')) {
                script_into(action, depth + 1, dirs, out);
            }
        }
        "sed" | "gsed" => sed_commands(&argv[1..], depth, dirs, out),
        "awk" | "gawk" | "mawk" | "nawk" => {
            if let Some(code) = interp::awk_program(&argv[1..]) {
                read_code(program, interp::Lang::Awk, code, dirs, depth, out);
            }
            for file in program_source::awk_files(&argv[1..]) {
                program_file(program, file, Some(interp::Lang::Awk), stdin, depth, dirs, out);
            }
        }
        shell if SHELLS.contains(&shell) => {
            if flags.stdin_args {
                out.blind.push(format!("`xargs {shell}` runs scripts named on stdin"));
            } else if shell_reads_stdin(argv) {
                fed_program(shell, stdin, None, depth, dirs, out);
            }
            for file in program_source::shell_files(&argv[1..]) {
                program_file(shell, file, None, stdin, depth, dirs, out);
            }
        }
        other => {
            if let Some(lang) = interp::lang_of(other) {
                match interp::code_source(lang, &argv[1..]) {
                    CodeSource::Inline(code) => read_code(other, lang, &code, dirs, depth, out),
                    CodeSource::File(_) if flags.stdin_args => {
                        out.blind.push(format!("`xargs {other}` runs programs named on stdin"));
                    }
                    CodeSource::File(Some(file)) => {
                        program_file(other, &file, Some(lang), stdin, depth, dirs, out);
                    }
                    CodeSource::File(None) => {}
                    CodeSource::Stdin => fed_program(other, stdin, Some(lang), depth, dirs, out),
                }
            }
        }
    }
    if has_glob(first) {
        glob_program(argv, dynamic, depth, dirs, out);
    }
}

/// `sed`'s `e COMMAND` runs COMMAND; `e` alone, `s///e` and a script
/// file (`-f`) run what keel cannot see.
fn sed_commands(args: &[String], depth: usize, dirs: &Dirs, out: &mut Script) {
    let Some(found) = readonly::sed_scripts(args) else { return };
    if found.from_file {
        out.blind.push("`sed -f` runs a script file keel cannot read".to_owned());
    }
    for script in found.scripts {
        let (runs, unseen) = readonly::sed_runs(script);
        for command in runs {
            script_into(&command, depth + 1, dirs, out);
        }
        if unseen {
            out.blind.push("`sed` runs text from its input as a command (`e`, `s///e`)".to_owned());
        }
    }
}

/// A program operand (`bash FILE`, `python3 FILE`, `awk -f FILE`): stdin
/// under another name is fed like `-`; a substitution, descriptor or
/// device is blind; a plain file is judged like any program.
fn program_file(
    program: &str,
    file: &str,
    lang: Option<interp::Lang>,
    stdin: &Stdin,
    depth: usize,
    dirs: &Dirs,
    out: &mut Script,
) {
    match classify(file) {
        ProgramFile::File => {}
        ProgramFile::Stdin => fed_program(program, stdin, lang, depth, dirs, out),
        ProgramFile::Unreadable => {
            out.blind.push(format!(
                "`{program}` runs its program from `{file}`, which keel cannot read"
            ));
        }
    }
}

/// `make` with a makefile keel cannot read (stdin, a substitution, a
/// descriptor) or make code given inline (`--eval`): make's own language
/// is not read, so it is blind; a literal heredoc's recipe lines (those
/// led by a tab) are still judged as the shell commands they are, so a
/// destructive one is refused.
fn make_program(
    program: &str,
    argv: &[String],
    stdin: &Stdin,
    depth: usize,
    dirs: &Dirs,
    out: &mut Script,
) {
    let inputs = program_source::make_inputs(&argv[1..]);
    if inputs.eval {
        out.blind.push(format!("`{program} --eval` runs make code keel does not read"));
    }
    for file in inputs.files {
        match classify(file) {
            ProgramFile::File => {}
            ProgramFile::Stdin => {
                if let Stdin::Text { body, dynamic: false } = stdin {
                    for recipe in body.lines().filter_map(|line| line.strip_prefix('\t')) {
                        script_into(recipe, depth + 1, dirs, out);
                    }
                }
                out.blind.push(format!("`{program}` reads its makefile from stdin"));
            }
            ProgramFile::Unreadable => {
                out.blind.push(format!("`{program}` reads its makefile from `{file}`"));
            }
        }
    }
}

/// A shell or interpreter reading its program from stdin: a literal
/// heredoc is read; a pipe, a file or an expanding heredoc is blind.
fn fed_program(
    program: &str,
    stdin: &Stdin,
    lang: Option<interp::Lang>,
    depth: usize,
    dirs: &Dirs,
    out: &mut Script,
) {
    match (stdin, lang) {
        (Stdin::Closed, _) => {}
        (Stdin::Text { body, dynamic: false }, None) => script_into(body, depth + 1, dirs, out),
        (Stdin::Text { body, dynamic: false }, Some(lang)) => {
            read_code(program, lang, body, dirs, depth, out);
        }
        (Stdin::Pipe | Stdin::File | Stdin::Text { dynamic: true, .. }, _) => {
            out.blind.push(format!("`{program}` reads the program it runs from stdin"));
        }
    }
}

/// A one-liner's findings: deletes become `rm -r` commands, commands it
/// runs are analysed, code built at run time is blind.
fn read_code(
    program: &str,
    lang: interp::Lang,
    code: &str,
    dirs: &Dirs,
    depth: usize,
    out: &mut Script,
) {
    let findings = interp::scan(lang, code);
    for (api, target) in findings.deletes {
        let argv = vec!["rm".into(), "-r".into(), "--".into(), target];
        let mut command = SimpleCommand::new(argv, dirs.clone());
        command.origin = Some(format!("`{api}` in a `{program}` one-liner"));
        out.commands.push(command);
    }
    for script in findings.scripts {
        script_into(&script, depth + 1, dirs, out);
    }
    out.blind.extend(findings.blind);
}

/// `/???/?m -rf /`: the name is a glob; every dangerous program it can
/// name is judged with the same arguments.
fn glob_program(argv: &[String], dynamic: bool, depth: usize, dirs: &Dirs, out: &mut Script) {
    out.hidden.push(Hidden::DynamicCommandName);
    out.blind.push(format!("`{}` is a glob: keel cannot know which program it runs", argv[0]));
    let name = base_name(&argv[0]);
    for program in DANGEROUS {
        if glob_matches(name, program) {
            let mut named = vec![program.to_owned()];
            named.extend(argv[1..].iter().cloned());
            command_into(named, dynamic, depth + 1, dirs, &Stdin::Closed, out);
        }
    }
}

/// `ln -s TARGET LINK`, `ln -sf TARGET`, `ln -s -t DIR TARGET…`.
fn record_links(argv: &[String], dirs: &Dirs, out: &mut Script) {
    let args = &argv[1..];
    let symbolic = args.iter().any(|a| {
        a == "--symbolic" || (a.starts_with('-') && !a.starts_with("--") && a.contains('s'))
    });
    if !symbolic {
        return;
    }
    let mut target_dir = None;
    let mut words = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        if word == "-t" || word == "--target-directory" {
            target_dir = iter.next().cloned();
        } else if let Some(dir) = word.strip_prefix("--target-directory=") {
            target_dir = Some(dir.to_owned());
        } else if !word.starts_with('-') {
            words.push(word.clone());
        }
    }
    let named = |target: &str, dir: &str| {
        let name = target.trim_end_matches('/').rsplit('/').next().unwrap_or(target);
        if dir.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", dir.trim_end_matches('/'))
        }
    };
    let pairs: Vec<(String, String)> = match (target_dir, words.as_slice()) {
        (Some(dir), targets) => targets.iter().map(|t| (t.clone(), named(t, &dir))).collect(),
        (None, [target]) => vec![(target.clone(), named(target, ""))],
        (None, [target, link]) => vec![(target.clone(), link.clone())],
        (None, [targets @ .., dir]) => targets.iter().map(|t| (t.clone(), named(t, dir))).collect(),
        (None, []) => Vec::new(),
    };
    for (target, link) in pairs {
        out.links.push(ScriptLink { link, target, dirs: dirs.clone() });
    }
}

#[cfg(test)]
mod tests {
    use super::super::shell::analyze_script;

    #[test]
    fn stdin_fed_shells_are_blind_and_heredocs_are_read() {
        for script in
            ["curl -s x | sh", "echo 'rm x' | bash", "sh < setup.sh", "cat x.py | python3 -"]
        {
            assert!(!analyze_script(script).blind.is_empty(), "{script}");
        }
        let heredoc = analyze_script("bash <<'EOF'\nrm -rf /\nEOF");
        assert!(heredoc.blind.is_empty(), "{heredoc:?}");
        assert!(heredoc.commands.iter().any(|c| c.argv == ["rm", "-rf", "/"]), "{heredoc:?}");
        assert!(analyze_script("bash x.sh").blind.is_empty());
        assert!(analyze_script("cargo test").blind.is_empty());
    }

    #[test]
    fn glob_names_and_one_liners_become_commands() {
        let script = analyze_script("/???/?m -rf /");
        assert!(script.commands.iter().any(|c| c.argv == ["rm", "-rf", "/"]), "{script:?}");
        let script = analyze_script("python3 -c \"import shutil; shutil.rmtree('/')\"");
        assert!(script.commands.iter().any(|c| c.argv == ["rm", "-r", "--", "/"]), "{script:?}");
    }

    #[test]
    fn eval_of_a_literal_variable_is_read() {
        let script = analyze_script("X='rm -rf /'; eval \"$X\"");
        assert!(script.commands.iter().any(|c| c.argv == ["rm", "-rf", "/"]), "{script:?}");
        assert!(!script.blind.is_empty());
        let script = analyze_script("Y=\"$(curl x)\"; eval \"$Y\"");
        assert!(
            !script
                .commands
                .iter()
                .any(|c| c.argv.first().is_some_and(|p| p == "curl" && c.argv.len() > 2))
        );
    }

    #[test]
    fn links_are_recorded() {
        let script = analyze_script("ln -s . zz; ln -sf ../x y; ln -s a b c/");
        let links: Vec<(&str, &str)> =
            script.links.iter().map(|l| (l.link.as_str(), l.target.as_str())).collect();
        assert_eq!(links, [("zz", "."), ("y", "../x"), ("c/a", "a"), ("c/b", "b")]);
    }
}
