//! Where a shell, an interpreter, `make`, `awk` or `source` gets the
//! program it runs when that is a file operand: a file keel judges like any
//! program, stdin under another name (`/dev/stdin`, `/dev/fd/0`,
//! `/proc/self/fd/0`, `-`), or text keel cannot read at all (a process
//! substitution `<(…)`, another descriptor, anything under `/dev` or
//! `/proc`). `bash <(curl …)` and `make -f /dev/stdin` are the shapes.
//!
//! Invariants: pure text over argv words; a path is normalised lexically
//! (`//dev/./stdin` is `/dev/stdin`) before it is classified; an operand
//! this module does not recognise is an ordinary file (callers only ever
//! add blind reasons from what is found here).

/// What a program operand names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramFile {
    /// An ordinary file, judged like any program.
    File,
    /// The program's own stdin.
    Stdin,
    /// Text keel cannot read: a process substitution, a descriptor, a
    /// device or `/proc` file.
    Unreadable,
}

/// Classifies a program operand (see the module doc).
pub fn classify(word: &str) -> ProgramFile {
    if word == "-" {
        return ProgramFile::Stdin;
    }
    if word.starts_with("<(") || word.starts_with(">(") {
        return ProgramFile::Unreadable;
    }
    if !word.starts_with('/') {
        return ProgramFile::File;
    }
    let path = normalize(word);
    if ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0", "/proc/thread-self/fd/0"]
        .contains(&path.as_str())
    {
        ProgramFile::Stdin
    } else if path.starts_with("/dev/") || path.starts_with("/proc/") {
        ProgramFile::Unreadable
    } else {
        ProgramFile::File
    }
}

/// `/a//b/./c/../d` → `/a/b/d`.
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The files a shell (`bash`, `sh`, …; not `-c`) runs: its script operand
/// and the start-up files it is told to read (`--rcfile`, `--init-file`).
pub fn shell_files(args: &[String]) -> Vec<&str> {
    let mut files = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--rcfile" | "--init-file" => files.extend(words.next().map(String::as_str)),
            "-o" | "+o" | "-O" | "+O" => {
                words.next();
            }
            "--" => {
                files.extend(words.next().map(String::as_str));
                break;
            }
            "-" => break,
            w if (w.starts_with('-') || w.starts_with('+')) && w.len() > 1 => {}
            script => {
                files.push(script);
                break;
            }
        }
    }
    files
}

/// What `make` reads beyond the folder's makefile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MakeInputs<'a> {
    /// `-f FILE`, `-fFILE`, `--file[=]FILE`, `--makefile[=]FILE`, and
    /// `f` inside a cluster (`-sf FILE`).
    pub files: Vec<&'a str>,
    /// `--eval`/`-E`: make code given inline.
    pub eval: bool,
}

/// What an option missing its value reads: the parser drops a lone `-`
/// before a heredoc (`make -f - <<EOF` arrives as `make -f`), so a value
/// that is not there is taken as stdin.
const STDIN: &str = "-";

/// Short options of GNU make that take an argument.
const MAKE_ARG_OPTIONS: &str = "CfIoWE";

/// Reads `make`'s arguments (everything after the program name).
pub fn make_inputs(args: &[String]) -> MakeInputs<'_> {
    let mut found = MakeInputs::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let word = word.as_str();
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            match name {
                "file" | "makefile" => {
                    found.files.push(
                        // `--file=<(…)` parses as `--file=` and the substitution.
                        value
                            .filter(|value| !value.is_empty())
                            .or_else(|| words.next().map(String::as_str))
                            .unwrap_or(STDIN),
                    );
                }
                "eval" => found.eval = true,
                _ => {}
            }
            continue;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|c| !c.is_empty()) else { continue };
        for (at, option) in cluster.char_indices() {
            if !MAKE_ARG_OPTIONS.contains(option) {
                continue;
            }
            let rest = &cluster[at + option.len_utf8()..];
            let value = if rest.is_empty() { words.next().map(String::as_str) } else { Some(rest) };
            match option {
                'f' => found.files.push(value.unwrap_or(STDIN)),
                'E' => found.eval = true,
                _ => {}
            }
            break;
        }
    }
    found
}

/// Variables naming files a program reads as code when it starts:
/// bash's and sh's start-up file, make's extra makefiles.
const START_UP_VARS: [&str; 3] = ["BASH_ENV", "ENV", "MAKEFILES"];

/// Why `NAME=value` hands a program code keel cannot read (a start-up
/// variable naming stdin, a substitution, a descriptor or a device);
/// `None` for any other word.
pub fn unseen_start_up(word: &str) -> Option<String> {
    let (name, value) = word.split_once('=')?;
    let name = name.trim_end_matches('+');
    let unseen = START_UP_VARS.contains(&name)
        && (value.trim().is_empty() && name == "MAKEFILES"
            || value.split_whitespace().any(|file| classify(file) != ProgramFile::File));
    unseen.then(|| format!("`{name}` names a start-up file keel cannot read (`{value}`)"))
}

/// `just -f FILE`, `-fFILE`, `--justfile[=]FILE`: the recipe files.
pub fn just_files(args: &[String]) -> Vec<&str> {
    let mut files = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-f" | "--justfile" => files.push(words.next().map_or(STDIN, String::as_str)),
            "--" => break,
            // `--justfile=<(…)` parses as `--justfile=` and the substitution.
            "--justfile=" => files.push(words.next().map_or(STDIN, String::as_str)),
            w if w.starts_with("--justfile=") => files.push(&w["--justfile=".len()..]),
            w if w.starts_with("-f") && w.len() > 2 => files.push(&w[2..]),
            _ => {}
        }
    }
    files
}

/// `awk -f FILE`, `-fFILE`, `--file[=]FILE`: the program files.
pub fn awk_files(args: &[String]) -> Vec<&str> {
    let mut files = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-f" | "--file" => files.push(words.next().map_or(STDIN, String::as_str)),
            "--" => break,
            "--file=" => files.push(words.next().map_or(STDIN, String::as_str)),
            w if w.starts_with("--file=") => files.push(&w["--file=".len()..]),
            w if w.starts_with("-f") && w.len() > 2 => files.push(&w[2..]),
            _ => {}
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn operands_are_classified_after_normalising() {
        for stdin in ["-", "/dev/stdin", "//dev/./stdin", "/dev/fd/0", "/proc/self/fd/0"] {
            assert_eq!(classify(stdin), ProgramFile::Stdin, "{stdin}");
        }
        for unreadable in ["<(curl x)", ">(x)", "/dev/fd/3", "/proc/1/fd/0", "/dev/tcp/h/1"] {
            assert_eq!(classify(unreadable), ProgramFile::Unreadable, "{unreadable}");
        }
        for file in ["build.sh", "/tmp/x.sh", "./dev/stdin", "/device"] {
            assert_eq!(classify(file), ProgramFile::File, "{file}");
        }
    }

    #[test]
    fn shell_and_make_and_awk_operands() {
        assert_eq!(shell_files(&words("-x -o pipefail run.sh a")), ["run.sh"]);
        assert_eq!(shell_files(&words("--rcfile /dev/stdin -i")), ["/dev/stdin"]);
        assert_eq!(shell_files(&words("-- -weird")), ["-weird"]);
        assert!(shell_files(&words("-s")).is_empty());
        let args = words("-C sub -sf /dev/stdin --file=a --makefile b -fc all");
        let make = make_inputs(&args);
        assert_eq!(make.files, ["/dev/stdin", "a", "b", "c"]);
        assert!(!make.eval);
        assert!(make_inputs(&words("-E x all")).eval);
        assert!(make_inputs(&words("--eval=x")).eval);
        assert!(make_inputs(&words("-j4 -C dir test")).files.is_empty());
        assert_eq!(make_inputs(&words("-f")).files, ["-"]);
        assert_eq!(
            awk_files(&words("-F: -f /dev/stdin -fx.awk --file=y data")),
            ["/dev/stdin", "x.awk", "y"]
        );
    }
}
