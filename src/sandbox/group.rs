//! The process group of one command and how it is ended: the kill ladder.
//!
//! Invariants: the command's child leads a fresh process group (pgid ==
//! pid). [`ProcessGroup::end`] sends SIGTERM to the whole group, gives it
//! [`TERM_GRACE`] to exit, sends SIGKILL, and then checks (up to
//! [`KILL_VERIFY`]) that no live member remains; zombies waiting to be
//! reaped do not count, since they run nothing. Dropping a [`ProcessGroup`]
//! SIGKILLs the group without waiting, so a dropped future leaves nothing
//! running; [`ProcessGroup::end_in_background`] is the ladder for an
//! owner that is dropped rather than stopped (a server). Only a process that left the group (`setsid`) escapes; the
//! landlock/namespace sandbox, not this module, is the answer to that.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// Time between SIGTERM and SIGKILL for programs to clean up.
pub const TERM_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for SIGKILLed members to disappear.
pub const KILL_VERIFY: Duration = Duration::from_secs(2);
/// Poll interval while waiting for the group to empty.
const POLL: Duration = Duration::from_millis(10);

/// How a group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    /// SIGKILL was needed (the group outlived the SIGTERM grace period).
    pub escalated: bool,
    /// Live members left after the whole ladder (0 unless a process
    /// is stuck in the kernel, e.g. uninterruptible I/O).
    pub survivors: usize,
}

/// The process group led by a command's child.
#[derive(Debug)]
pub struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    /// The group led by the process `pid` (`None` if it already ended).
    pub fn led_by(pid: Option<u32>) -> Self {
        Self(pid.and_then(|id| Pid::from_raw(i32::try_from(id).ok()?)))
    }

    /// The group id, if known.
    pub fn id(&self) -> Option<i32> {
        self.0.map(Pid::as_raw_nonzero).map(i32::from)
    }

    /// Runs the kill ladder: SIGTERM, grace, SIGKILL, verify.
    pub async fn end(&self) -> Ending {
        let Some(pgid) = self.0 else { return Ending { escalated: false, survivors: 0 } };
        if live_members(pgid) == 0 {
            return Ending { escalated: false, survivors: 0 };
        }
        // ESRCH means the group emptied meanwhile: the outcome we want.
        let _ = kill_process_group(pgid, Signal::TERM);
        if wait_until_empty(pgid, TERM_GRACE).await {
            return Ending { escalated: false, survivors: 0 };
        }
        let _ = kill_process_group(pgid, Signal::KILL);
        wait_until_empty(pgid, KILL_VERIFY).await;
        Ending { escalated: true, survivors: live_members(pgid) }
    }

    /// Runs the kill ladder on a thread of its own, without waiting: for
    /// an owner dropped without being stopped (a dropped session's MCP
    /// server), so the group still gets SIGTERM and [`TERM_GRACE`] to
    /// close, as a stopped one does. The group is this call's from now on
    /// (dropping `self` kills nothing).
    pub fn end_in_background(mut self) {
        let Some(pgid) = self.0.take() else { return };
        if live_members(pgid) == 0 {
            return;
        }
        let _ = kill_process_group(pgid, Signal::TERM);
        let ended =
            std::thread::Builder::new().name("keel-group-end".to_owned()).spawn(move || {
                let deadline = Instant::now() + TERM_GRACE;
                while live_members(pgid) > 0 && Instant::now() < deadline {
                    std::thread::sleep(POLL);
                }
                if live_members(pgid) > 0 {
                    let _ = kill_process_group(pgid, Signal::KILL);
                }
            });
        if ended.is_err() {
            // No thread: the old way, at once.
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }

    /// SIGKILLs the group at once, without waiting.
    pub fn kill_now(&self) {
        if let Some(pgid) = self.0 {
            let _ = kill_process_group(pgid, Signal::KILL);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Polls until the group has no live member or `limit` passes.
async fn wait_until_empty(pgid: Pid, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if live_members(pgid) == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Members of the group that are not zombies. Cheap when the group is
/// gone (one `kill(-pgid, 0)`); otherwise scans `/proc`.
pub fn live_members(pgid: Pid) -> usize {
    if test_kill_process_group(pgid).is_err() {
        return 0;
    }
    members_in_proc(pgid.as_raw_nonzero().get())
}

/// Counts processes in `/proc` whose group is `pgid` and which are not
/// zombies (state `Z`/`X`).
pub fn members_in_proc(pgid: i32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| stat_is_live_member(stat, pgid))
        .count()
}

/// `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses,
/// so fields are read after the last `)`.
fn stat_is_live_member(stat: &str, pgid: i32) -> bool {
    let Some((_, rest)) = stat.rsplit_once(')') else { return false };
    let mut fields = rest.split_whitespace();
    let state = fields.next().unwrap_or("Z");
    let pgrp = fields.nth(1).and_then(|field| field.parse::<i32>().ok());
    pgrp == Some(pgid) && !matches!(state, "Z" | "X")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_parsed_after_the_command_name() {
        assert!(stat_is_live_member("42 (sleep) S 1 77 77 0", 77));
        assert!(!stat_is_live_member("42 (sleep) Z 1 77 77 0", 77));
        assert!(!stat_is_live_member("42 (sleep) S 1 78 78 0", 77));
        assert!(stat_is_live_member("42 (a) b) (c) R 1 77 77 0", 77));
        assert!(!stat_is_live_member("garbage", 77));
    }
}
