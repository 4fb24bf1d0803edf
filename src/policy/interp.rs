//! Interpreter one-liners (`python3 -c`, `node -e`, `perl -e`, `ruby -e`,
//! `php -r`, and scripts fed through a heredoc) read for their meaning: the
//! recursive deletes they call (`shutil.rmtree`, `fs.rmSync`,
//! `FileUtils.rm_rf`, `File::Path::rmtree`) become `rm -r` commands of
//! their own, judged by the same hard deny as a shell's; the shell commands
//! they run (`os.system("…")`, `execSync("…")`, `system("…")`, backticks)
//! are analysed as scripts; code or commands built at run time are blind.
//!
//! Invariants: pure text scanning, bounded by the code's length; it only
//! ever adds findings (a missed API means the one-liner is judged like any
//! other program, as before); a delete whose target is not one plain string
//! literal has a dynamic target (`$(…)`), which the hard deny refuses.

/// Languages keel reads one-liners of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Node,
    Perl,
    Ruby,
    Php,
    /// awk's `system("…")` and pipes to or from a command.
    Awk,
}

/// Where an interpreter gets its program from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeSource {
    Inline(String),
    /// A script file, or a module (`-m`, `None`): judged like any program,
    /// unless the file is stdin or a substitution (`program_source`).
    File(Option<String>),
    /// stdin: a pipe, a redirected file, or a heredoc.
    Stdin,
}

/// What a one-liner does that policy judges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// (API, target word) of each recursive delete.
    pub deletes: Vec<(&'static str, String)>,
    /// Shell scripts it runs.
    pub scripts: Vec<String>,
    /// Why it runs something keel cannot see.
    pub blind: Vec<String>,
}

/// The language of a program name (`python3.12`, `/usr/bin/node`).
pub fn lang_of(program: &str) -> Option<Lang> {
    let name = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    match name {
        "python" | "pypy" => Some(Lang::Python),
        "node" | "nodejs" | "bun" | "deno" => Some(Lang::Node),
        "perl" => Some(Lang::Perl),
        "ruby" => Some(Lang::Ruby),
        "php" => Some(Lang::Php),
        _ => None,
    }
}

/// Where `program ARGS` reads its code from.
pub fn code_source(lang: Lang, args: &[String]) -> CodeSource {
    let inline: &[&str] = match lang {
        Lang::Python => &["-c"],
        Lang::Node => &["-e", "--eval", "-p", "--print", "eval"],
        Lang::Perl => &["-e", "-E"],
        Lang::Ruby => &["-e"],
        Lang::Php => &["-r"],
        Lang::Awk => {
            return awk_program(args)
                .map_or(CodeSource::File(None), |c| CodeSource::Inline(c.to_owned()));
        }
    };
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if inline.contains(&word.as_str()) {
            return args
                .get(at + 1)
                .map_or(CodeSource::Stdin, |code| CodeSource::Inline(code.clone()));
        }
        if let Some(code) = inline.iter().find_map(|flag| {
            word.strip_prefix(flag)
                .filter(|rest| flag.len() == 2 && !rest.is_empty() && !flag.starts_with("--"))
        }) {
            // `-cCODE`, `-eCODE`, and clusters like `perl -ne CODE`.
            return CodeSource::Inline(code.to_owned());
        }
        if word.starts_with('-')
            && word.len() > 1
            && word.ends_with(['c', 'e', 'E', 'r'])
            && !word.starts_with("--")
        {
            return args
                .get(at + 1)
                .map_or(CodeSource::Stdin, |code| CodeSource::Inline(code.clone()));
        }
        if word == "-" {
            return CodeSource::Stdin;
        }
        if word == "-m" {
            return CodeSource::File(None);
        }
        if !word.starts_with('-') {
            return CodeSource::File(Some(word.clone()));
        }
        at += 1;
    }
    CodeSource::Stdin
}

/// Deleting APIs (last name; a call follows).
const DELETES: [&str; 13] = [
    "rmtree",
    "removedirs",
    "rm_rf",
    "rm_r",
    "remove_dir",
    "remove_tree",
    "remove_entry",
    "remove_entry_secure",
    "rmSync",
    "rmdirSync",
    "rimraf",
    "removeSync",
    "emptyDirSync",
];

/// APIs that run a shell command or program, per language.
fn exec_apis(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Python => &[
            "os.system",
            "os.popen",
            "os.execv",
            "os.execvp",
            "os.spawnl",
            "subprocess.run",
            "subprocess.call",
            "subprocess.Popen",
            "subprocess.check_output",
            "subprocess.check_call",
            "subprocess.getoutput",
            "subprocess.getstatusoutput",
            "pty.spawn",
        ],
        Lang::Node => &[
            "execSync",
            "execFileSync",
            "spawnSync",
            "exec",
            "execFile",
            "spawn",
            "Bun.spawn",
            "Bun.spawnSync",
            "Deno.Command",
            "Deno.run",
        ],
        Lang::Perl => &["system", "exec", "qx"],
        Lang::Ruby => {
            &["system", "exec", "spawn", "IO.popen", "Open3.capture2", "Open3.popen3", "%x"]
        }
        Lang::Php => &["system", "exec", "shell_exec", "passthru", "proc_open", "popen"],
        Lang::Awk => &["system"],
    }
}

/// APIs that evaluate code given as a string.
fn eval_apis(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Python => &["exec", "eval", "__import__"],
        Lang::Node => &["eval", "Function", "vm.runInThisContext", "vm.runInNewContext"],
        Lang::Perl => &["eval"],
        Lang::Ruby => &["eval", "instance_eval", "class_eval"],
        Lang::Php => &["eval", "assert"],
        Lang::Awk => &[],
    }
}

/// Reads one-liner `code` in `lang`.
pub fn scan(lang: Lang, code: &str) -> Findings {
    let mut findings = Findings::default();
    for api in DELETES {
        for args in calls(code, api) {
            let target = match first_literal(lang, &args) {
                Some(Literal::Plain(text)) => text,
                Some(Literal::Dynamic) | None => format!("$({})", args.trim()),
            };
            findings.deletes.push((api, target));
        }
    }
    // `exec` and `spawn` are common method names (`regex.exec`): in
    // JavaScript they count only where `child_process` is in play.
    let node_exec = code.contains("child_process");
    for api in exec_apis(lang) {
        if lang == Lang::Node && !api.contains('.') && !node_exec {
            continue;
        }
        for args in calls(code, api) {
            let literals = literals(lang, &args);
            let built = literals.is_empty()
                || literals.contains(&Literal::Dynamic)
                || code_outside_literals(top_level_first(&args));
            if built {
                findings.blind.push(format!("`{api}` runs a command built at run time"));
                continue;
            }
            let words: Vec<String> = literals
                .into_iter()
                .filter_map(|l| match l {
                    Literal::Plain(text) => Some(text),
                    Literal::Dynamic => None,
                })
                .collect();
            // A list of literals is an argv; one literal is a shell string.
            let script = if args.trim_start().starts_with('[') && words.len() > 1 {
                shlex::try_join(words.iter().map(String::as_str)).unwrap_or_default()
            } else {
                words.join(" ")
            };
            findings.scripts.push(script);
        }
    }
    if matches!(lang, Lang::Perl | Lang::Ruby | Lang::Php) {
        findings.scripts.extend(backticks(code));
    }
    if lang == Lang::Awk {
        awk_pipes(code, &mut findings);
    }
    for api in eval_apis(lang) {
        if !calls(code, api).is_empty() {
            findings.blind.push(format!("`{api}` evaluates code built at run time"));
        }
    }
    findings
}

/// The argument text of every call of `api` in `code` (`api(…)`, or for
/// Perl/Ruby style `api "…"` up to the end of the statement).
fn calls(code: &str, api: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = code.get(from..).and_then(|rest| rest.find(api)) {
        let at = from + offset;
        from = at + api.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let after = code[from..].trim_start();
        if after.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(inner) = after.strip_prefix('(') {
            found.push(balanced(inner));
        } else if after.starts_with(['"', '\'', '{', '[']) || api == "%x" || api == "qx" {
            let end = after.find([';', '\n']).unwrap_or(after.len());
            found.push(after[..end].to_owned());
        }
        if found.len() > 64 {
            break;
        }
    }
    found
}

/// Text up to the `)` that closes an already open `(`, strings skipped.
fn balanced(text: &str) -> String {
    let mut depth = 1;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if let Some(q) = quote {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, c) if c == q => quote = None,
                (false, _) => {}
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return text[..at].to_owned();
                }
            }
            _ => {}
        }
    }
    text.to_owned()
}

/// A string literal: its text, or dynamic when it interpolates.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Literal {
    Plain(String),
    Dynamic,
}

/// The first argument when it is one string literal (else `None`).
fn first_literal(lang: Lang, args: &str) -> Option<Literal> {
    let first = top_level_first(args).trim();
    let all = literals(lang, first);
    match all.as_slice() {
        [one] if literal_span(first) => Some(one.clone()),
        _ => None,
    }
}

/// Whether `text` is exactly one quoted string (optionally prefixed).
fn literal_span(text: &str) -> bool {
    let body = text.trim_start_matches(['r', 'b', 'u', 'f', 'R', 'B', 'U', 'F']);
    let Some(quote) = body.chars().next().filter(|c| matches!(c, '"' | '\'' | '`')) else {
        return false;
    };
    body.len() >= 2 && body.ends_with(quote) && !body[1..body.len() - 1].contains(quote)
}

/// Whether `text` holds names or calls besides string literals (`"rm -rf
/// " + path`): a command built at run time. A one-letter string prefix
/// (`f"…"`, `r'…'`) is part of its literal.
fn code_outside_literals(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) if c == '\\' => {
                chars.next();
            }
            Some(_) => {}
            None if matches!(c, '"' | '\'' | '`') => quote = Some(c),
            None if c.is_alphanumeric() || c == '_' || c == '$' => {
                let prefix = matches!(chars.peek(), Some('"' | '\''));
                if !prefix {
                    return true;
                }
            }
            None => {}
        }
    }
    false
}

/// The text up to the first top-level comma.
fn top_level_first(args: &str) -> &str {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (at, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => return &args[..at],
            (None, _) => {}
        }
    }
    args
}

/// Every string literal in `text`, in order.
fn literals(lang: Lang, text: &str) -> Vec<Literal> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !matches!(c, '"' | '\'' | '`') {
            continue;
        }
        let prefix = text[..start].chars().next_back();
        let mut body = String::new();
        let mut escaped = false;
        for (_, next) in chars.by_ref() {
            if escaped {
                body.push(next);
                escaped = false;
            } else if next == '\\' {
                escaped = true;
            } else if next == c {
                break;
            } else {
                body.push(next);
            }
        }
        let interpolates = match (lang, c) {
            (Lang::Python, _) => prefix.is_some_and(|p| p == 'f' || p == 'F') && body.contains('{'),
            (Lang::Node, '`') => body.contains("${"),
            (Lang::Perl | Lang::Php, '"' | '`') => body.contains('$') || body.contains('@'),
            (Lang::Ruby, '"' | '`') => body.contains("#{"),
            (Lang::Node | Lang::Perl | Lang::Php | Lang::Ruby | Lang::Awk, _) => false,
        };
        out.push(if interpolates { Literal::Dynamic } else { Literal::Plain(body) });
        if out.len() > 256 {
            break;
        }
    }
    out
}

/// awk's program: the first operand, unless `-f FILE` gives it.
pub fn awk_program(args: &[String]) -> Option<&str> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "-f" | "--file" => return None,
            "-F" | "-v" | "--assign" | "--field-separator" => {
                words.next();
            }
            "--" => return words.next().map(String::as_str),
            w if w.starts_with('-') && w.len() > 1 => {}
            program => return Some(program),
        }
    }
    None
}

/// `print | "cmd"`, `"cmd" | getline`: the command strings; a pipe to or
/// from an expression keel cannot read is blind.
fn awk_pipes(code: &str, findings: &mut Findings) {
    for (at, _) in code.match_indices('|') {
        if code[at + 1..].starts_with('|') || code[..at].ends_with('|') {
            continue;
        }
        let after = code[at + 1..].trim_start();
        let before = code[..at].trim_end();
        let command = if after.starts_with("getline") {
            before
                .ends_with('"')
                .then(|| before[..before.len() - 1].rsplit('"').next().map(str::to_owned))
                .flatten()
        } else if let Some(rest) = after.strip_prefix('"') {
            let command = rest.split('"').next().unwrap_or_default();
            let program = command.split_whitespace().next().unwrap_or_default();
            if matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh")
                || lang_of(program).is_some()
            {
                findings.blind.push(format!("awk pipes its output into `{program}` as a program"));
            }
            Some(command.to_owned())
        } else {
            findings.blind.push("an awk pipe runs a command built at run time".to_owned());
            None
        };
        findings.scripts.extend(command);
    }
}

/// Shell commands in backticks (Perl, Ruby, PHP).
fn backticks(code: &str) -> Vec<String> {
    code.split('`').skip(1).step_by(2).map(str::to_owned).take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        shlex::split(text).unwrap_or_default()
    }

    #[test]
    fn deletes_and_their_targets() {
        let f = scan(Lang::Python, "import shutil; shutil.rmtree('/')");
        assert_eq!(f.deletes, [("rmtree", "/".to_owned())]);
        let f = scan(Lang::Python, "import shutil,os; shutil.rmtree(os.getcwd())");
        assert_eq!(f.deletes, [("rmtree", "$(os.getcwd())".to_owned())]);
        let f = scan(Lang::Node, "require('fs').rmSync(process.cwd(), {recursive: true})");
        assert_eq!(f.deletes[0].0, "rmSync");
        assert!(f.deletes[0].1.starts_with("$("));
        let f = scan(Lang::Ruby, "require 'fileutils'; FileUtils.rm_rf '/home'");
        assert_eq!(f.deletes, [("rm_rf", "/home".to_owned())]);
        let f = scan(Lang::Perl, "use File::Path; rmtree(\"$ENV{HOME}\")");
        assert!(f.deletes[0].1.starts_with("$("));
        assert!(scan(Lang::Python, "print(platform.system())").deletes.is_empty());
        assert!(scan(Lang::Python, "x.remove_duplicates()").deletes.is_empty());
    }

    #[test]
    fn commands_they_run() {
        let f = scan(Lang::Python, "import os; os.system('rm -rf ~')");
        assert_eq!(f.scripts, ["rm -rf ~"]);
        let f = scan(Lang::Python, "import subprocess; subprocess.run(['rm', '-rf', '/'])");
        assert_eq!(f.scripts, ["rm -rf /"]);
        let f = scan(Lang::Python, "import os; os.system(cmd)");
        assert_eq!(f.blind.len(), 1);
        let f = scan(Lang::Python, "import os; os.system('rm -rf ' + p)");
        assert_eq!(f.blind.len(), 1);
        let f = scan(Lang::Python, "import subprocess; subprocess.run(['ls', '-l'], check=True)");
        assert_eq!((f.scripts, f.blind.len()), (vec!["ls -l".to_owned()], 0));
        let f = scan(Lang::Perl, "print `rm -rf /`");
        assert_eq!(f.scripts, ["rm -rf /"]);
        assert!(!scan(Lang::Python, "exec(open('x').read())").blind.is_empty());
        assert_eq!(scan(Lang::Python, "print(1)"), Findings::default());
    }

    #[test]
    fn where_the_code_comes_from() {
        let inline = |text| code_source(Lang::Python, &words(text));
        assert_eq!(inline("-c 'print(1)'"), CodeSource::Inline("print(1)".into()));
        assert_eq!(inline("-u -c x"), CodeSource::Inline("x".into()));
        assert_eq!(inline("test.py"), CodeSource::File(Some("test.py".into())));
        assert_eq!(inline("-m pytest"), CodeSource::File(None));
        assert_eq!(inline("-"), CodeSource::Stdin);
        assert_eq!(inline(""), CodeSource::Stdin);
        assert_eq!(
            code_source(Lang::Perl, &words("-ne 'print'")),
            CodeSource::Inline("print".into())
        );
        assert_eq!(code_source(Lang::Node, &words("x.js")), CodeSource::File(Some("x.js".into())));
        assert_eq!(awk_program(&words("-F: '{print $1}' f")), Some("{print $1}"));
        assert_eq!(awk_program(&words("-f x.awk f")), None);
    }

    #[test]
    fn awk_commands() {
        assert_eq!(scan(Lang::Awk, "BEGIN{system(\"rm -rf ~\")}").scripts, ["rm -rf ~"]);
        assert_eq!(scan(Lang::Awk, "{print | \"sh\"}").scripts, ["sh"]);
        assert_eq!(scan(Lang::Awk, "BEGIN{\"id\" | getline x}").scripts, ["id"]);
        assert_eq!(scan(Lang::Awk, "{print $1 || $2}"), Findings::default());
    }
}
