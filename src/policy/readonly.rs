//! The read-only list: commands that run without asking in ask mode (and
//! are all plan and explore modes allow). A command is on it only when
//! every flag form it uses is known not to write a file or run a program:
//! unknown flags of the few programs with dangerous ones (`sed`, `sort`,
//! `uniq`, `find`, `tree`, `file`, `rg`, `git`) take it off, and so does an
//! argument that can name a secret file (`cat .e*v`, `grep -a k
//! /proc/*/environ`): reading one sends it to the model provider.
//!
//! Invariant: this judges the argv alone; what ran it (a wrapper, an
//! environment assignment, `xargs` feeding it arguments) is the engine's
//! check (`SimpleCommand` flags), as are redirections.

use super::content_reads::READERS;
use super::git::subcommand;
use super::secrets::may_name_secret;

/// Programs that only print, with no flag that writes or runs anything.
const PLAIN: [&str; 44] = [
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "pwd",
    "echo",
    "printf",
    "grep",
    "egrep",
    "fgrep",
    "which",
    "whoami",
    "id",
    "uname",
    "stat",
    "du",
    "df",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "true",
    "false",
    "printenv",
    "nl",
    "cd",
    "test",
    "[",
    "seq",
    "cmp",
    "comm",
    "md5sum",
    "sha256sum",
    "sha1sum",
    "jq",
    "column",
    "fold",
    "rev",
    "expand",
    "tac",
    "type",
    "diff",
    "sleep",
];

/// Whether `argv` is a known read-only command (no writes, runs nothing
/// else, reads no secret file).
pub fn is_read_only(argv: &[String]) -> bool {
    let Some(program) = argv.first() else { return false };
    let args = &argv[1..];
    let program = program.as_str();
    if READERS.contains(&program) && args.iter().any(|a| !a.starts_with('-') && may_name_secret(a))
    {
        return false;
    }
    match program {
        p if PLAIN.contains(&p) => true,
        "rg" => !args.iter().any(|a| a == "--pre" || a.starts_with("--pre=")),
        "tree" => !args.iter().any(|a| {
            a == "-o" || a.starts_with("--output") || a == "-R" || short_has(a, &['o', 'R'])
        }),
        "file" => !args.iter().any(|a| a == "-C" || a == "--compile" || short_has(a, &['C'])),
        "cut" | "tr" => true,
        "env" | "date" | "hostname" => args.is_empty(),
        "sort" => sort_read_only(args),
        "uniq" => uniq_read_only(args),
        "sed" => sed_read_only(args),
        "find" => find_read_only(args),
        "command" => args.first().is_some_and(|a| a == "-v" || a == "-V"),
        "git" => git_read_only(args),
        "cargo" => matches!(args, [a] if a == "--version" || a == "-V"),
        _ => false,
    }
}

/// A short-option cluster (`-xyz`) holding any of `letters`.
fn short_has(arg: &str, letters: &[char]) -> bool {
    arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().skip(1).any(|c| letters.contains(&c))
}

/// `sort` without `-o`/`-oFILE`/`--output`, a compress program or a temp
/// folder; `o` and `T` inside a cluster count (`-nroOUT`).
fn sort_read_only(args: &[String]) -> bool {
    !args.iter().any(|a| {
        a.starts_with("--output")
            || a.starts_with("--compress-program")
            || a.starts_with("--temporary-directory")
            || short_has(a, &['o', 'T'])
    })
}

/// `uniq [OPTIONS] [INPUT [OUTPUT]]`: a second file operand is written.
fn uniq_read_only(args: &[String]) -> bool {
    let mut operands = 0;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-f" | "-s" | "-w" => {
                words.next();
            }
            "--" => operands += words.by_ref().count(),
            w if w.starts_with('-') && w.len() > 1 => {}
            _ => operands += 1,
        }
    }
    operands <= 1
}

/// `find` without the actions that run, delete or write.
fn find_read_only(args: &[String]) -> bool {
    !args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-delete"
                | "-exec"
                | "-execdir"
                | "-ok"
                | "-okdir"
                | "-fprint"
                | "-fprint0"
                | "-fprintf"
                | "-fls"
        )
    })
}

/// `sed` with only printing scripts: options `-n -E -r -s -u -z -l N
/// --debug --posix -e SCRIPT --expression=SCRIPT`, no `-i`/`-f`/unknown
/// option, and every script read-only ([`sed_script_read_only`]).
fn sed_read_only(args: &[String]) -> bool {
    match sed_scripts(args) {
        Some(SedScripts { scripts, from_file: false, other_options: false }) => {
            scripts.iter().all(|script| sed_script_read_only(script))
        }
        Some(_) | None => false,
    }
}

/// The scripts of `sed ARGS`.
pub struct SedScripts<'a> {
    pub scripts: Vec<&'a str>,
    /// `-f FILE`: a script keel cannot read.
    pub from_file: bool,
    /// An option other than the printing ones (`-i`, unknown).
    pub other_options: bool,
}

/// The scripts `sed ARGS` runs (`-e`, `--expression=`, or the first
/// operand); `None` when a `-e` lacks its script or none is given.
pub fn sed_scripts(args: &[String]) -> Option<SedScripts<'_>> {
    let mut found = SedScripts { scripts: Vec::new(), from_file: false, other_options: false };
    let mut explicit = false;
    let mut operands = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-e" | "--expression" => {
                explicit = true;
                found.scripts.push(words.next()?);
            }
            "-f" | "--file" => {
                explicit = true;
                found.from_file = true;
                words.next();
            }
            "-l" | "--line-length" => {
                words.next();
            }
            "-n" | "--quiet" | "--silent" | "-E" | "-r" | "--regexp-extended" | "-s"
            | "--separate" | "-u" | "--unbuffered" | "-z" | "--null-data" | "--debug"
            | "--posix" | "--sandbox" => {}
            w if w.starts_with("--expression=") => {
                explicit = true;
                found.scripts.push(&w["--expression=".len()..]);
            }
            w if w.starts_with("--file=") => {
                explicit = true;
                found.from_file = true;
            }
            w if w.starts_with('-') && w.len() > 1 => {
                // A cluster of the harmless letters only (`-nE`).
                if !w[1..].chars().all(|c| matches!(c, 'n' | 'E' | 'r' | 's' | 'u' | 'z')) {
                    found.other_options = true;
                }
                if w.ends_with('f') {
                    found.from_file = true;
                }
            }
            _ => operands.push(word.as_str()),
        }
    }
    if !explicit {
        found.scripts.push(operands.first()?);
    }
    Some(found)
}

/// What a sed script runs: the text of each `e COMMAND`, and whether it
/// also runs text keel cannot see (`e` alone or `s///e` run the pattern
/// space; a script it cannot read is counted the same).
pub fn sed_runs(script: &str) -> (Vec<String>, bool) {
    let chars: Vec<char> = script.chars().collect();
    let to_line_end =
        |at: usize| chars[at..].iter().position(|c| *c == '\n').map_or(chars.len(), |p| at + p);
    let mut runs = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        at = skip_address(&chars, at);
        let Some(&command) = chars.get(at) else { break };
        at += 1;
        match command {
            'e' => {
                let end = to_line_end(at);
                let text: String = chars[at..end].iter().collect();
                if text.trim().is_empty() {
                    return (runs, true);
                }
                runs.push(text.trim().to_owned());
                at = end;
            }
            's' | 'y' => {
                let Some(next) = skip_delimited(&chars, at, 2) else { return (runs, true) };
                at = next;
                while let Some(flag) = chars.get(at) {
                    match flag {
                        'e' if command == 's' => return (runs, true),
                        'w' | 'W' => at = to_line_end(at),
                        ';' | '\n' | '}' => break,
                        _ => at += 1,
                    }
                }
            }
            'b' | 't' | 'T' | ':' => at = skip_label(&chars, at),
            '#' | 'a' | 'i' | 'c' | 'r' | 'R' | 'w' | 'W' => at = to_line_end(at),
            _ => {}
        }
    }
    (runs, false)
}

/// A sed script of printing commands only: addresses, then one of
/// `p P d D q Q = l n N g G h H x z b t T : { } y s #` per command; `s`
/// with flags among `g p i I m M` and digits (no `e`, no `w FILE`). Any
/// text keel cannot read this way is not read-only.
pub fn sed_script_read_only(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        at = skip_address(&chars, at);
        let Some(&command) = chars.get(at) else { return true };
        at += 1;
        match command {
            ' ' | '\t' | '\n' | ';' | '}' | '{' | '!' => {}
            'p' | 'P' | 'd' | 'D' | 'q' | 'Q' | '=' | 'l' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H'
            | 'x' | 'z' => {}
            'b' | 't' | 'T' | ':' => at = skip_label(&chars, at),
            '#' => at = chars[at..].iter().position(|c| *c == '\n').map_or(chars.len(), |p| at + p),
            'y' => match skip_delimited(&chars, at, 2) {
                Some(next) => at = next,
                None => return false,
            },
            's' => match skip_delimited(&chars, at, 2) {
                Some(next) => {
                    at = next;
                    while let Some(flag) = chars.get(at) {
                        match flag {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => at += 1,
                            ';' | '\n' | '}' | ' ' => break,
                            _ => return false,
                        }
                    }
                }
                None => return false,
            },
            _ => return false,
        }
    }
    true
}

/// Past an address (`3`, `$`, `/re/`, `\%re%`, `first~step`, `a,b`).
fn skip_address(chars: &[char], mut at: usize) -> usize {
    loop {
        match chars.get(at) {
            Some(c) if c.is_ascii_digit() || matches!(c, '$' | ',' | '~' | '+') => at += 1,
            Some('/') => match skip_sections(chars, at + 1, '/', 1) {
                Some(next) => at = next,
                None => return chars.len(),
            },
            Some('\\') => match chars.get(at + 1).and_then(|d| skip_sections(chars, at + 2, *d, 1))
            {
                Some(next) => at = next,
                None => return chars.len(),
            },
            Some('I' | 'M') if at > 0 && chars[at - 1] == '/' => at += 1,
            _ => return at,
        }
    }
}

/// Past `s` or `y` whose delimiter is at `at`: two sections.
fn skip_delimited(chars: &[char], at: usize, count: usize) -> Option<usize> {
    skip_sections(chars, at + 1, *chars.get(at)?, count)
}

/// Past `count` sections ended by `delimiter`, honouring backslash
/// escapes. A delimiter that is not punctuation is refused (too clever to
/// trust).
fn skip_sections(chars: &[char], mut at: usize, delimiter: char, count: usize) -> Option<usize> {
    if delimiter.is_alphanumeric() || delimiter == '\\' || delimiter == '\n' {
        return None;
    }
    let mut left = count;
    while left > 0 {
        match chars.get(at)? {
            '\\' => at += 2,
            c if *c == delimiter => {
                left -= 1;
                at += 1;
            }
            _ => at += 1,
        }
    }
    Some(at)
}

fn skip_label(chars: &[char], at: usize) -> usize {
    chars[at..].iter().position(|c| matches!(c, ';' | '\n' | '}')).map_or(chars.len(), |p| at + p)
}

fn git_read_only(args: &[String]) -> bool {
    // Global options before the subcommand (`-c`, `-C`, `--git-dir`,
    // `--exec-path`, `-p`) can run programs or point elsewhere.
    let Some((0, sub)) = subcommand(args) else { return false };
    let rest = &args[1..];
    let runs_or_writes = rest.iter().any(|a| {
        a.starts_with("--output")
            || a == "-o"
            || a.starts_with("--ext-diff")
            || a.starts_with("--textconv")
            || a.starts_with("--filters")
            || a.starts_with("--open-files-in-pager")
            || a.starts_with("-O")
            || a.starts_with("--upload-pack")
            || a.starts_with("--exec")
    });
    match sub {
        "status" | "log" | "diff" | "show" | "blame" | "ls-files" | "rev-parse" | "describe"
        | "shortlog" | "grep" | "cat-file" | "ls-tree" | "merge-base" => !runs_or_writes,
        "reflog" => !runs_or_writes && rest.iter().all(|a| a.starts_with('-') || a == "show"),
        "branch" | "tag" | "remote" => rest.iter().all(|a| {
            matches!(
                a.as_str(),
                "-a" | "-v" | "-vv" | "-r" | "--list" | "-l" | "--show-current" | "--all"
            )
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        shlex::split(text).unwrap_or_default()
    }

    #[test]
    fn read_only_commands() {
        for text in [
            "ls -la",
            "git status",
            "git log -p",
            "find . -name x",
            "sed -n 1,5p f",
            "sed -n '/a/,/b/p' f",
            "sed 's/a/b/g' f",
            "sed -E -e 's|x|y|2' f",
            "git branch",
            "sort -n f",
            "uniq -c f",
            "cat README.md",
            "grep -rn TODO src",
            "rg -n x",
            "sleep 1",
        ] {
            assert!(is_read_only(&argv(text)), "{text}");
        }
    }

    #[test]
    fn flag_forms_that_write_or_run_are_not() {
        for text in [
            "sed -i s/a/b/ f",
            "sed -n '1e id' HEAD",
            "sed -n 1e\\ id HEAD",
            "sed 's/a/b/w out' f",
            "sed 's/a/id/e' f",
            "sed -n 'w out' f",
            "sed 'W out' f",
            "sed -f script.sed f",
            "sed --in-place s/a/b/ f",
            "sed -ni p f",
            "find . -delete",
            "find . -fprint out",
            "git push",
            "git branch -D x",
            "git -c x=y log",
            "git --exec-path=/x log",
            "git grep -O x",
            "git grep --open-files-in-pager=vim x",
            "git log --ext-diff",
            "git cat-file --textconv HEAD:x",
            "git reflog expire --all",
            "sort -o f g",
            "sort -oOUT g",
            "sort -nroOUT g",
            "uniq in out",
            "env rm",
            "rg --pre ./evil x",
            "rg --pre=./evil x",
            "tree -o out",
            "file -C -m x",
            "less f",
            "more f",
            "awk '{print}' f",
            "tee out",
            "xargs ls",
            "cat .env",
            "cat .e*v",
            "cat ~/.ssh/id_*",
            "grep -a KEY /proc/*/environ",
        ] {
            assert!(!is_read_only(&argv(text)), "{text}");
        }
    }

    #[test]
    fn what_sed_runs() {
        assert_eq!(sed_runs("1e rm -rf ~"), (vec!["rm -rf ~".to_owned()], false));
        assert_eq!(sed_runs("p;2e id\n3p"), (vec!["id".to_owned()], false));
        assert!(sed_runs("s/a/b/e").1);
        assert!(sed_runs("e").1);
        assert_eq!(sed_runs("s/a/b/w out\np"), (Vec::new(), false));
    }

    #[test]
    fn sed_script_forms() {
        for ok in ["p", "1,5p", "$d", "/x/d;s/a/b/g", "s#a#b#", "y/abc/xyz/", "1~2p", "/a/I p", ""]
        {
            assert!(sed_script_read_only(ok), "{ok}");
        }
        for bad in [
            "1e id",
            "e",
            "w out",
            "s/a/b/w out",
            "s/a/b/e",
            "W x",
            "r /etc/passwd",
            "s/a/b/gw x",
            "1!e x",
        ] {
            assert!(!sed_script_read_only(bad), "{bad}");
        }
    }
}
