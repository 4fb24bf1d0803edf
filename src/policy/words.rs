//! Words of a shell command: decoding quotes the way bash does, and the
//! shape of a word after decoding (literal, built from an expansion, a
//! glob, a brace expansion) with a shell-glob matcher, so a check can tell
//! what a word may name.
//!
//! Invariants: pure and allocation-light; every judgement here errs on the
//! side of "may name more": a quoted `*` is treated as a glob, a quoted
//! `$x` as a variable (the decoded text no longer says it was quoted), so a
//! check built on these can only be stricter than bash.

use std::path::{Component, Path};

/// Brace expansions past this many words are not expanded (judged as
/// unknowable instead).
pub const MAX_BRACE_WORDS: usize = 64;

/// Why a word's value cannot be known before it runs, if it cannot.
/// `$HOME`/`${HOME}` at the start is known (policy expands it).
pub fn dynamic_part(word: &str) -> Option<&'static str> {
    let rest = ["$HOME", "${HOME}"]
        .iter()
        .find_map(|home| word.strip_prefix(home).filter(|r| r.is_empty() || r.starts_with('/')))
        .unwrap_or(word);
    if rest.contains("$(") || rest.contains('`') {
        Some("a command substitution")
    } else if rest.contains('$') {
        Some("a variable")
    } else if word == "{}" {
        Some("each path `find` or `xargs` puts there")
    } else if word.starts_with('~') && !(word == "~" || word.starts_with("~/")) {
        Some("`~user` (another user's home folder)")
    } else {
        None
    }
}

/// Whether the word has glob characters (`*`, `?`, `[`).
pub fn has_glob(word: &str) -> bool {
    word.contains(['*', '?', '['])
}

/// The words a brace expansion (`a{b,c}`, `{1..3}`) makes, or `None`
/// when there is none; `Some(Err(()))` when it is too large to judge.
pub fn expand_braces(word: &str) -> Option<Result<Vec<String>, ()>> {
    let (open, close, parts) = find_brace(word)?;
    let (head, tail) = (&word[..open], &word[close + 1..]);
    let mut out = Vec::new();
    for part in parts {
        let joined = format!("{head}{part}{tail}");
        match expand_braces(&joined) {
            Some(Ok(more)) => out.extend(more),
            Some(Err(())) => return Some(Err(())),
            None => out.push(joined),
        }
        if out.len() > MAX_BRACE_WORDS {
            return Some(Err(()));
        }
    }
    Some(Ok(out))
}

/// The first `{…}` that expands: its bounds and alternatives.
fn find_brace(word: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = word.as_bytes();
    let mut search = 0;
    while let Some(offset) = word.get(search..)?.find('{') {
        let open = search + offset;
        let mut depth = 0;
        let mut commas = Vec::new();
        let mut close = None;
        for (at, byte) in bytes.iter().enumerate().skip(open) {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(at);
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(at),
                _ => {}
            }
        }
        let close = close?;
        let inner = &word[open + 1..close];
        if !commas.is_empty() {
            let mut parts = Vec::new();
            let mut start = open + 1;
            for comma in commas {
                parts.push(word[start..comma].to_owned());
                start = comma + 1;
            }
            parts.push(word[start..close].to_owned());
            return Some((open, close, parts));
        }
        if let Some(parts) = sequence(inner) {
            return Some((open, close, parts));
        }
        search = open + 1;
    }
    None
}

/// `{1..5}`, `{a..e}`, `{1..9..2}`: the words, if it is a sequence. A
/// sequence too long to list yields more than [`MAX_BRACE_WORDS`] words so
/// the caller gives up.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let mut bounds = inner.split("..");
    let (from, to) = (bounds.next()?, bounds.next()?);
    let step: i64 = bounds.next().map_or(Some(1), |s| s.parse().ok())?.max(1);
    let too_long = || vec![String::new(); MAX_BRACE_WORDS + 1];
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        if a.abs_diff(b) / step.unsigned_abs() > MAX_BRACE_WORDS as u64 {
            return Some(too_long());
        }
        let range: Vec<i64> = if a <= b {
            (a..=b).step_by(step as usize).collect()
        } else {
            (b..=a).rev().step_by(step as usize).collect()
        };
        return Some(range.into_iter().map(|n| n.to_string()).collect());
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    let (Some(a), None, Some(b), None) = (a.next(), a.next(), b.next(), b.next()) else {
        return None;
    };
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    Some((lo..=hi).map(String::from).collect())
}

/// Whether the glob `pattern` (absolute, `/`-separated) can match `path`:
/// component by component, `*`/`?` never cross `/`, a leading `.` must be
/// matched by a literal `.` (bash without `dotglob`).
pub fn glob_matches_path(pattern: &Path, path: &Path) -> bool {
    let names = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                Component::RootDir
                | Component::CurDir
                | Component::ParentDir
                | Component::Prefix(_) => None,
            })
            .collect()
    };
    let (pattern, path) = (names(pattern), names(path));
    pattern.len() == path.len()
        && pattern.iter().zip(&path).all(|(glob, name)| glob_matches(glob, name))
}

/// One path component against one glob component.
pub fn glob_matches(glob: &str, name: &str) -> bool {
    if name.starts_with('.') && !glob.starts_with('.') && glob != name {
        return false;
    }
    let glob: Vec<char> = glob.chars().collect();
    let name: Vec<char> = name.chars().collect();
    matches_from(&glob, &name)
}

/// Wildcard matching with one backtracking point (linear in practice, never
/// exponential: a model-written pattern may hold many `*`).
fn matches_from(glob: &[char], name: &[char]) -> bool {
    let (mut g, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        if glob.get(g) == Some(&'*') {
            star = Some((g, n));
            g += 1;
            continue;
        }
        if let Some(used) = one_char(&glob[g.min(glob.len())..], name[n]) {
            g += used;
            n += 1;
            continue;
        }
        match star {
            Some((star_at, from)) => {
                g = star_at + 1;
                n = from + 1;
                star = Some((star_at, from + 1));
            }
            None => return false,
        }
    }
    glob[g.min(glob.len())..].iter().all(|c| *c == '*')
}

/// How many pattern characters match the name character `c` at the start
/// of `glob` (not `*`), if they do.
fn one_char(glob: &[char], c: char) -> Option<usize> {
    match glob.first()? {
        '?' => Some(1),
        '[' => match class(&glob[1..]) {
            Some((set, negated, used)) => (set.contains(&c) != negated).then_some(1 + used),
            None => (c == '[').then_some(1),
        },
        '\\' if glob.len() > 1 => (glob[1] == c).then_some(2),
        literal => (*literal == c).then_some(1),
    }
}

/// A `[...]` class after its `[`: the characters, whether negated, and
/// how many pattern characters it used (the closing `]` included).
fn class(rest: &[char]) -> Option<(Vec<char>, bool, usize)> {
    let negated = matches!(rest.first(), Some('!' | '^'));
    let mut at = usize::from(negated);
    let mut set = Vec::new();
    let mut first = true;
    while let Some(&c) = rest.get(at) {
        if c == ']' && !first {
            return Some((set, negated, at + 1));
        }
        first = false;
        if rest.get(at + 1) == Some(&'-') && rest.get(at + 2).is_some_and(|end| *end != ']') {
            let end = rest[at + 2];
            set.extend(c..=end);
            at += 3;
            continue;
        }
        set.push(c);
        at += 1;
    }
    None
}

/// Strips the surrounding quote characters (`prefix` of them at the
/// start, one at the end).
pub fn strip_quotes(text: &str, prefix: usize) -> String {
    let inner = text.get(prefix..text.len().saturating_sub(1)).unwrap_or_default();
    inner.to_owned()
}

/// An unquoted word: backslashes escape the next character.
pub fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            _ => out.push(c),
        }
    }
    out
}

/// The inside of a double-quoted string.
pub fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('"' | '\\' | '$' | '`')) => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            ('\\', Some('\n')) => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `$'…'`: the escapes bash decodes (enough to see `$'\x72m'` as `rm`).
pub fn ansi_c(text: &str) -> String {
    let inner = strip_quotes(text, 2);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('e' | 'E') => out.push('\u{1b}'),
            Some('x') => {
                let digits = take_digits(&mut chars, 2, 16);
                out.extend(u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32));
            }
            Some(d @ '0'..='7') => {
                let digits = format!("{d}{}", take_digits(&mut chars, 2, 8));
                out.extend(u32::from_str_radix(&digits, 8).ok().and_then(char::from_u32));
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn take_digits(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    max: usize,
    radix: u32,
) -> String {
    let mut digits = String::new();
    while digits.len() < max {
        match chars.peek() {
            Some(c) if c.is_digit(radix) => {
                digits.push(*c);
                chars.next();
            }
            _ => break,
        }
    }
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_words() {
        for (word, dynamic) in [
            ("$PWD", true),
            ("$(pwd)", true),
            ("`pwd`/x", true),
            ("~root", true),
            ("{}", true),
            ("$HOME/x", false),
            ("${HOME}", false),
            ("$HOMEX", true),
            ("~/x", false),
            ("build", false),
        ] {
            assert_eq!(dynamic_part(word).is_some(), dynamic, "{word}");
        }
    }

    #[test]
    fn braces_expand_and_stay_bounded() {
        assert_eq!(expand_braces("/{usr,etc}").unwrap().unwrap(), ["/usr", "/etc"]);
        assert_eq!(expand_braces("a{b,c{d,e}}").unwrap().unwrap(), ["ab", "acd", "ace"]);
        assert_eq!(expand_braces("x{1..3}").unwrap().unwrap(), ["x1", "x2", "x3"]);
        assert_eq!(expand_braces("{,/}").unwrap().unwrap(), ["", "/"]);
        assert!(expand_braces("{}").is_none());
        assert!(expand_braces("f{x}").is_none());
        assert!(expand_braces("{1..100000}").unwrap().is_err());
        assert!(expand_braces("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}").unwrap().is_err());
    }

    #[test]
    fn shell_globs() {
        assert!(glob_matches("?m", "rm"));
        assert!(glob_matches("*", "usr"));
        assert!(!glob_matches("*", ".env"));
        assert!(glob_matches(".e*v", ".env"));
        assert!(glob_matches("id_*", "id_rsa"));
        assert!(glob_matches("[a-c]at", "bat"));
        assert!(!glob_matches("[!a-c]at", "bat"));
        assert!(glob_matches("\\*", "*"));
        assert!(glob_matches_path(Path::new("/???/?m"), Path::new("/bin/rm")));
        assert!(glob_matches_path(Path::new("/*"), Path::new("/usr")));
        assert!(!glob_matches_path(Path::new("/*/x"), Path::new("/usr")));
        let many_stars = "*a".repeat(200);
        assert!(!glob_matches(&many_stars, &format!("{}b", "a".repeat(60))));
    }
}
