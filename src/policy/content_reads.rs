//! What a command on the read-only list reads the contents of: the path
//! operands of a reader (`cat`, `grep`, `sed`, …), whether it walks the
//! folders it is given (`grep -r`, `rg`, `diff -r`), and the folder a
//! read-only `git` command reads its repository from. Listing programs
//! (`ls`, `stat`, `du`, `find` without actions) read names, not contents,
//! and are not readers. `script_verdict` checks these paths against the
//! secret places (`secret_places`).
//!
//! Invariants: pure, argv only, and conservative: every word that is not a
//! flag counts as a path (a pattern too: an extra path can only make a
//! command stricter to judge), and a walker given no folder walks `.`.

/// Programs whose output carries the contents of the files they are given.
pub const READERS: [&str; 22] = [
    "cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "nl", "cmp", "comm", "jq", "column",
    "fold", "rev", "expand", "tac", "diff", "sed", "sort", "uniq", "cut", "tr",
];

/// What one command reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentReads<'a> {
    /// Path words as written (`~/.ssh`, `credentials`, `src/*.rs`).
    pub paths: Vec<&'a str>,
    /// Folders among them are walked: whatever lies below is read.
    pub recursive: bool,
}

/// What `argv` reads the contents of; `None` for a command that reads no
/// file contents.
pub fn content_reads(argv: &[String]) -> Option<ContentReads<'_>> {
    let (program, args) = argv.split_first()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    if program == "git" {
        // A repository's objects are read from the folder it runs in.
        return Some(ContentReads { paths: vec!["."], recursive: false });
    }
    if !READERS.contains(&program) {
        return None;
    }
    let mut paths: Vec<&str> = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--" => paths.extend(words.by_ref().map(String::as_str)),
            w if w.starts_with('-') && w.len() > 1 => {}
            w => paths.push(w),
        }
    }
    let recursive = match program {
        "rg" => true,
        "grep" | "egrep" | "fgrep" => args.iter().any(|a| grep_recursive(a)),
        "diff" => args.iter().any(|a| a == "--recursive" || short_cluster_has(a, &['r'])),
        _ => false,
    };
    // A walker without a folder operand walks the current folder (`rg
    // KEY`, `grep -r KEY`: the one word is the pattern).
    if recursive && paths.len() < 2 {
        paths.push(".");
    }
    Some(ContentReads { paths, recursive })
}

fn grep_recursive(arg: &str) -> bool {
    matches!(arg, "--recursive" | "--dereference-recursive" | "--directories=recurse")
        || short_cluster_has(arg, &['r', 'R'])
}

/// A short-option cluster (`-rn`) holding any of `letters`.
fn short_cluster_has(arg: &str, letters: &[char]) -> bool {
    arg.starts_with('-')
        && !arg.starts_with("--")
        && arg.chars().skip(1).any(|c| letters.contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(text: &str) -> Option<(Vec<String>, bool)> {
        let argv: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
        content_reads(&argv)
            .map(|r| (r.paths.iter().map(|p| (*p).to_owned()).collect(), r.recursive))
    }

    #[test]
    fn readers_walkers_and_listers() {
        let owned = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(reads("cat credentials"), Some((owned(&["credentials"]), false)));
        assert_eq!(reads("grep -rn . /home/u/.ssh"), Some((owned(&[".", "/home/u/.ssh"]), true)));
        assert_eq!(reads("grep -r KEY"), Some((owned(&["KEY", "."]), true)));
        assert_eq!(reads("rg KEY"), Some((owned(&["KEY", "."]), true)));
        assert_eq!(reads("diff -ru a b"), Some((owned(&["a", "b"]), true)));
        assert_eq!(reads("git log -p"), Some((owned(&["."]), false)));
        assert_eq!(reads("grep KEY f"), Some((owned(&["KEY", "f"]), false)));
        for lister in ["ls -la /home/u/.ssh", "du -sh /home/u", "stat x", "find . -name k"] {
            assert_eq!(reads(lister), None, "{lister}");
        }
    }
}
