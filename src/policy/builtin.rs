//! keel's built-in judgements that no rules file can change: the hard-deny
//! list (destroying `/`, home or the workspace, raw disk writes, making
//! file systems, fork bombs) and the known read-only commands that run
//! without asking in ask mode.
//!
//! Invariants: hard deny looks at the unwrapped argv and resolved paths,
//! so quoting, wrappers and `bash -c` do not hide a command from it; the
//! read-only list only accepts a command when every flag it uses is known
//! not to write or run anything (e.g. `find` without `-delete`/`-exec`,
//! `sed` without `-i`, `git` read subcommands only).

use std::path::PathBuf;

use super::paths::PathContext;
use super::unwrap::base_name;

/// Why `argv` must never run, if it must not.
pub fn hard_deny(argv: &[String], ctx: &PathContext) -> Option<String> {
    let program = base_name(argv.first()?);
    let args = &argv[1..];
    match program {
        "rm" if recursive(args, &["-r", "-R", "--recursive"], &['r', 'R']) => {
            critical_target(args, ctx).map(|path| destroys("rm -r", &path))
        }
        "chmod" | "chown" | "chgrp" if recursive(args, &["-R", "--recursive"], &['R']) => {
            critical_target(args, ctx).map(|path| destroys(program, &path))
        }
        "mv" => critical_target(args, ctx).map(|path| destroys("mv", &path)),
        "find" if args.iter().any(|a| a == "-delete") => {
            critical_target(args, ctx).map(|path| destroys("find -delete", &path))
        }
        "dd" => args
            .iter()
            .find_map(|a| a.strip_prefix("of="))
            .filter(|target| is_raw_disk(target))
            .map(|target| format!("`dd of={target}` writes a raw disk")),
        "shred" | "wipefs" | "blkdiscard" if args.iter().any(|a| is_raw_disk(a)) => {
            Some(format!("`{program}` on a raw disk destroys it"))
        }
        "mkswap" | "mke2fs" => Some(format!("`{program}` formats a device")),
        mkfs if mkfs == "mkfs" || mkfs.starts_with("mkfs.") => {
            Some(format!("`{mkfs}` makes a file system and destroys what was there"))
        }
        _ => None,
    }
}

/// Why redirecting output into `target` must never happen, if so.
pub fn hard_deny_write(target: &str) -> Option<String> {
    is_raw_disk(target).then(|| format!("writing into `{target}` overwrites a raw disk"))
}

fn destroys(what: &str, path: &std::path::Path) -> String {
    format!(
        "`{what}` on {} would destroy the system, the home folder or the workspace",
        path.display()
    )
}

fn recursive(args: &[String], long: &[&str], short: &[char]) -> bool {
    args.iter().any(|arg| {
        long.contains(&arg.as_str())
            || arg == "--no-preserve-root"
            || (arg.starts_with('-')
                && !arg.starts_with("--")
                && arg.chars().any(|c| short.contains(&c)))
    })
}

/// The first non-option argument that names (or globs all of) a critical
/// path.
fn critical_target(args: &[String], ctx: &PathContext) -> Option<PathBuf> {
    args.iter().filter(|a| !a.starts_with('-') || a.as_str() == "-").find_map(|arg| {
        let trimmed = arg.trim_end_matches('*');
        let glob_all = trimmed.len() != arg.len() && (trimmed.is_empty() || trimmed.ends_with('/'));
        let word = if glob_all && trimmed.is_empty() { "." } else { trimmed };
        let word = if word.is_empty() { "/" } else { word };
        let path = ctx.resolve(word);
        ctx.is_critical(&path).then_some(path)
    })
}

fn is_raw_disk(target: &str) -> bool {
    const DISKS: [&str; 10] = [
        "/dev/sd",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/nvme",
        "/dev/mmcblk",
        "/dev/disk",
        "/dev/mapper/",
        "/dev/md",
        "/dev/dm-",
    ];
    DISKS.iter().any(|prefix| target.starts_with(prefix))
}

/// Whether `argv` is a known read-only command (no writes, runs nothing
/// else).
pub fn is_read_only(argv: &[String]) -> bool {
    let Some(program) = argv.first() else { return false };
    let args = &argv[1..];
    match program.as_str() {
        "ls" | "cat" | "head" | "tail" | "wc" | "pwd" | "echo" | "printf" | "rg" | "grep"
        | "egrep" | "fgrep" | "which" | "whoami" | "id" | "uname" | "file" | "stat" | "du"
        | "df" | "tree" | "uniq" | "diff" | "cut" | "tr" | "basename" | "dirname" | "realpath"
        | "readlink" | "true" | "false" | "printenv" | "nl" | "cd" | "test" | "[" | "seq"
        | "cmp" | "comm" | "md5sum" | "sha256sum" | "sha1sum" | "jq" | "column" | "fold"
        | "rev" | "expand" | "tac" | "less" | "more" | "type" => {
            // Flags that run a program or write a file.
            !args.iter().any(|a| {
                a == "--pre" || a.starts_with("--pre=") || (program == "tree" && a == "-o")
            })
        }
        "env" | "date" | "hostname" => args.is_empty(),
        "sort" => !args
            .iter()
            .any(|a| a == "-o" || a.starts_with("--output") || a.starts_with("--compress-program")),
        "sed" => {
            !args.iter().any(|a| {
                a.starts_with("-i")
                    || a.starts_with("--in-place")
                    || (a.starts_with('-') && a.contains('i') && !a.starts_with("--"))
            }) && !args.iter().any(|a| a.contains("w ") || a.ends_with('e'))
        }
        "find" => !args.iter().any(|a| {
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
        }),
        "command" => args.first().is_some_and(|a| a == "-v" || a == "-V"),
        "git" => git_read_only(args),
        "cargo" => matches!(args, [a] if a == "--version" || a == "-V"),
        _ => false,
    }
}

fn git_read_only(args: &[String]) -> bool {
    // Global options before the subcommand (`-c`, `-C`, `--git-dir`) can run
    // programs or point elsewhere: not read-only.
    let Some(sub) = args.first() else { return false };
    let rest = &args[1..];
    let writes_output =
        rest.iter().any(|a| a.starts_with("--output") || a == "-o" || a.starts_with("--ext-diff"));
    match sub.as_str() {
        "status" | "log" | "diff" | "show" | "blame" | "ls-files" | "rev-parse" | "describe"
        | "shortlog" | "grep" | "cat-file" | "ls-tree" | "merge-base" | "reflog" => !writes_output,
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
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn ctx() -> PathContext {
        PathContext {
            home: "/home/u".into(),
            workspace_root: "/home/u/ws".into(),
            cwd: "/home/u/ws".into(),
        }
    }

    #[test]
    fn hard_denies_destruction() {
        for text in [
            "rm -rf /",
            "rm -fr ~",
            "rm -r -f .",
            "rm -rf /*",
            "rm -rf *",
            "rm --recursive /usr",
            "chmod -R 777 /",
            "dd if=/dev/zero of=/dev/sda",
            "mkfs.ext4 /dev/sdb1",
            "find / -delete",
            "mv ~ /tmp/x",
        ] {
            assert!(hard_deny(&argv(text), &ctx()).is_some(), "{text}");
        }
        for text in
            ["rm -rf target", "rm -f /", "dd if=a of=b", "chmod 644 /etc/x", "find target -delete"]
        {
            assert!(hard_deny(&argv(text), &ctx()).is_none(), "{text}");
        }
    }

    #[test]
    fn read_only_commands() {
        for text in
            ["ls -la", "git status", "git log -p", "find . -name x", "sed -n 1,5p f", "git branch"]
        {
            assert!(is_read_only(&argv(text)), "{text}");
        }
        for text in [
            "sed -i s/a/b/ f",
            "find . -delete",
            "git push",
            "git branch -D x",
            "git -c x=y log",
            "sort -o f g",
            "env rm",
        ] {
            assert!(!is_read_only(&argv(text)), "{text}");
        }
    }
}
