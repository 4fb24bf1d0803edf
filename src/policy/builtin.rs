//! keel's built-in judgements that no rules file can change: the hard-deny
//! list (destroying `/`, home or the workspace by meaning, see
//! [`super::destroy`]; raw disk writes (`dd of=`, a redirection, `tee`,
//! `cp`, partitioning tools, `shred`, … into a block device however its
//! path is spelled); making file systems; fork bombs are
//! `engine`'s) and, re-exported from [`super::readonly`], the known
//! read-only commands that run without asking in ask mode.
//!
//! Invariants: hard deny looks at the unwrapped argv and resolved paths
//! (symlinks included when the caller supplied them), so quoting,
//! wrappers, `bash -c`, variables and globs do not hide a command from it;
//! every reason names what matched.

use super::destroy::{Cwd, deletion, refusal};
use super::paths::PathContext;
use super::shell::SimpleCommand;
use super::unwrap::base_name;

pub use super::readonly::is_read_only;

/// Why `command` must never run in the folder `ctx` (`cwd` says whether
/// keel could follow the script's `cd`s), if it must not.
pub fn hard_deny_command(command: &SimpleCommand, ctx: &PathContext, cwd: Cwd) -> Option<String> {
    if let Some(found) = deletion(&command.argv) {
        if let Some(reason) = refusal(&found, ctx, cwd, command.stdin_args) {
            return Some(match &command.origin {
                Some(origin) => format!("{origin}: {reason}"),
                None => reason,
            });
        }
    }
    hard_deny(&command.argv, ctx)
}

/// Why `argv` must never run, if it must not (everything but the
/// recursive deletes of [`hard_deny_command`]).
pub fn hard_deny(argv: &[String], ctx: &PathContext) -> Option<String> {
    let program = base_name(argv.first()?);
    let args = &argv[1..];
    match program {
        "rm" | "chmod" | "chown" | "chgrp" | "find" | "git" | "rsync" | "rimraf" => {
            let found = deletion(argv)?;
            refusal(&found, ctx, Cwd::Known, false)
        }
        "mv" => args.iter().filter(|a| !a.starts_with('-')).find_map(|arg| {
            let path = ctx.locations(arg).into_iter().find(|p| ctx.is_critical(p))?;
            Some(format!(
                "refused in every mode: `mv` of {} would take away the system, the home folder \
                 or the workspace",
                path.display()
            ))
        }),
        "dd" | "dcfldd" => args
            .iter()
            .find_map(|a| a.strip_prefix("of="))
            .filter(|target| is_raw_disk(ctx, target))
            .map(|target| format!("refused in every mode: `dd of={target}` writes a raw disk")),
        "shred" | "wipefs" | "blkdiscard" | "tee" | "truncate" | "badblocks"
            if operands(args).any(|a| is_raw_disk(ctx, a)) =>
        {
            Some(format!("refused in every mode: `{program}` on a raw disk destroys it"))
        }
        "cp" | "install" | "ddrescue" => {
            copy_target(args).filter(|target| is_raw_disk(ctx, target)).map(|target| {
                format!("refused in every mode: `{program}` into `{target}` overwrites a raw disk")
            })
        }
        "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "parted" | "partx"
            if operands(args).any(|a| is_raw_disk(ctx, a)) && !lists_only(program, args) =>
        {
            Some(format!("refused in every mode: `{program}` rewrites a raw disk's partitions"))
        }
        "mkswap" | "mke2fs" | "mkdosfs" | "mkntfs" => {
            Some(format!("refused in every mode: `{program}` formats a device"))
        }
        mkfs if mkfs == "mkfs" || mkfs.starts_with("mkfs.") => Some(format!(
            "refused in every mode: `{mkfs}` makes a file system and destroys what was there"
        )),
        _ => None,
    }
}

/// Why redirecting output into `target` must never happen, if so.
pub fn hard_deny_write(target: &str, ctx: &PathContext) -> Option<String> {
    is_raw_disk(ctx, target)
        .then(|| format!("refused in every mode: writing into `{target}` overwrites a raw disk"))
}

/// Words that are not options (`--` ends the options).
fn operands(args: &[String]) -> impl Iterator<Item = &str> {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (options, rest) = args.split_at(end);
    options
        .iter()
        .filter(|a| !a.starts_with('-'))
        .chain(rest.iter().skip(1))
        .map(String::as_str)
        // `--output=/dev/sda`-style values name the target too.
        .chain(options.iter().filter_map(|a| a.split_once('=').map(|(_, v)| v)))
}

/// Where a copying program writes: `-t DIR`/`--target-directory=DIR`, else
/// its last operand.
fn copy_target(args: &[String]) -> Option<&str> {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "-t" || word == "--target-directory" {
            return words.next().map(String::as_str);
        }
        if let Some(dir) = word.strip_prefix("--target-directory=") {
            return Some(dir);
        }
    }
    args.iter().rev().find(|a| !a.starts_with('-')).map(String::as_str)
}

/// `fdisk -l /dev/sda`, `parted /dev/sda print`: reading the table only.
fn lists_only(program: &str, args: &[String]) -> bool {
    let lists =
        |a: &String| matches!(a.as_str(), "-l" | "--list" | "-p" | "--print" | "-d" | "--dump");
    match program {
        "parted" => {
            args.iter()
                .filter(|a| !a.starts_with('-') && !a.starts_with("/dev/"))
                .all(|a| a == "print")
                && args.iter().any(|a| a == "print" || a == "-l" || a == "--list")
        }
        "cfdisk" => false,
        _ => args.iter().any(lists),
    }
}

/// Block devices (disks, partitions, their mapper, RAID, loop, network
/// block devices), however the path is spelled: relative to the folder,
/// with `//`, `.` or `..`.
fn is_raw_disk(ctx: &PathContext, target: &str) -> bool {
    const DISKS: [&str; 16] = [
        "/dev/sd",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/nvme",
        "/dev/mmcblk",
        "/dev/disk/",
        "/dev/mapper/",
        "/dev/md",
        "/dev/dm-",
        "/dev/loop",
        "/dev/nbd",
        "/dev/rbd",
        "/dev/zram",
        "/dev/block/",
        "/dev/root",
    ];
    let raw = |path: &std::path::Path| {
        let path = path.to_string_lossy();
        DISKS.iter().any(|prefix| path.starts_with(prefix))
    };
    raw(std::path::Path::new(target)) || ctx.locations(target).iter().any(|p| raw(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn ctx() -> PathContext {
        PathContext::new("/home/u", "/home/u/ws", "/home/u/ws")
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
            let reason = hard_deny(&argv(text), &ctx());
            assert!(reason.as_deref().is_some_and(|r| r.contains("refused")), "{text}: {reason:?}");
        }
        for text in
            ["rm -rf target", "rm -f /", "dd if=a of=b", "chmod 644 /etc/x", "find target -delete"]
        {
            assert!(hard_deny(&argv(text), &ctx()).is_none(), "{text}");
        }
    }
}
