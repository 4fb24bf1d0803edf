//! The stdio MCP server's stage, `keel sandbox-exec --server-stage -- CMD`:
//! a small keel process between keel and each stdio server that makes
//! sure nothing the server started outlives it (issue 35 item 6).
//!
//! A process group is not enough: a server that ignores EOF survives a
//! SIGKILLed keel (nobody is left to run the kill ladder), and a child the
//! server moved into its own session (`setsid`) leaves the group. So the
//! stage marks itself a child subreaper (`PR_SET_CHILD_SUBREAPER`: every
//! orphan below it is reparented to it, `setsid` or not), starts the
//! server with stdio inherited (it relays nothing), and waits for the
//! first of:
//! - the server's exit: the stage kills what is left and exits with the
//!   server's code;
//! - keel's death, any kind (`kill -9` included), seen on a pidfd of its
//!   parent (a process-wide handle: `PR_SET_PDEATHSIG` would follow the
//!   spawning *thread*): everything below is SIGKILLed;
//! - SIGTERM (keel's kill ladder on the stage's group): everything below
//!   gets SIGTERM, [`STAGE_GRACE`] to end — shorter than keel's own
//!   [`TERM_GRACE`](super::group::TERM_GRACE), so the stage finishes before
//!   keel would SIGKILL it — then SIGKILL.
//!
//! Invariant: the stage exits only once it has no child left (it kills
//! and reaps descendants, found through `/proc/<pid>/task/*/children`,
//! until none remain). Not covered: a SIGKILL of the stage itself.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

/// How long the server's processes get after SIGTERM before SIGKILL.
pub const STAGE_GRACE: Duration = Duration::from_millis(300);

/// The exit code when the server could not be started.
const SPAWN_FAILED: i32 = 127;

/// What ends the stage's wait.
enum Event {
    ServerExited(Option<ExitStatus>),
    ParentGone,
    Terminate,
}

/// The keel binary to start stdio servers under their stage: this
/// process's own executable when it is keel (named `keel`, as built and
/// installed); `None` otherwise, e.g. in a unit test's binary, which
/// would not understand `sandbox-exec`.
pub fn launcher() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    (exe.file_name()? == "keel").then_some(exe)
}

/// Runs the stage (see the module doc); returns its exit code.
pub fn run(program: &OsString, args: &[OsString]) -> i32 {
    let parent = rustix::process::getppid();
    // Opened before the server starts; checked against getppid() after,
    // so a parent that died in between is never missed.
    let parent_fd =
        parent.and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok());
    if rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_err() {
        say("cannot become a child subreaper; the server's orphans may outlive it".to_owned());
    }
    let (events, received) = mpsc::channel();
    let signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGTERM]);
    let mut child = match Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(error) => {
            say(format!("cannot start {}: {error}", program.to_string_lossy()));
            return SPAWN_FAILED;
        }
    };
    match signals {
        Ok(mut signals) => {
            let events = events.clone();
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    let _ = events.send(Event::Terminate);
                }
            });
        }
        Err(error) => say(format!("cannot watch SIGTERM: {error}")),
    }
    if let Some(parent_fd) = parent_fd {
        let events = events.clone();
        std::thread::spawn(move || {
            let mut fds = [PollFd::new(&parent_fd, PollFlags::IN)];
            while let Err(rustix::io::Errno::INTR) = poll(&mut fds, None) {}
            let _ = events.send(Event::ParentGone);
        });
    }
    if rustix::process::getppid() != parent {
        let _ = events.send(Event::ParentGone);
    }
    std::thread::spawn(move || {
        let _ = events.send(Event::ServerExited(child.wait().ok()));
    });
    let status = match received.recv() {
        Ok(Event::ServerExited(status)) => status,
        Ok(Event::ParentGone) | Err(_) => None,
        Ok(Event::Terminate) => {
            signal_all(Signal::TERM);
            match received.recv_timeout(STAGE_GRACE) {
                Ok(Event::ServerExited(status)) => status,
                _ => None,
            }
        }
    };
    kill_all();
    match status {
        Some(status) => status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
        None => 1,
    }
}

/// A line on the stage's stderr, which is the server's log.
fn say(text: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "keel server stage: {text}");
}

/// Sends `signal` to every live descendant.
fn signal_all(signal: Signal) {
    for pid in descendants() {
        let _ = rustix::process::kill_process(pid, signal);
    }
}

/// SIGKILLs and reaps descendants until none is left (orphans of the
/// killed ones are reparented to the stage, the subreaper, meanwhile).
fn kill_all() {
    loop {
        let below = descendants();
        if below.is_empty() {
            while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
            if descendants().is_empty() {
                return;
            }
            continue;
        }
        for pid in &below {
            let _ = rustix::process::kill_process(*pid, Signal::KILL);
        }
        // Reap one (blocking: a SIGKILLed child ends promptly); ECHILD
        // means another thread reaped the server meanwhile.
        let _ = rustix::process::wait(WaitOptions::empty());
    }
}

/// Every process below the stage, found through `/proc` (zombies
/// included: they are still children until reaped).
fn descendants() -> Vec<Pid> {
    let mut found = Vec::new();
    let mut pending = children_of("self");
    while let Some(pid) = pending.pop() {
        pending.extend(children_of(&pid.as_raw_nonzero().to_string()));
        found.push(pid);
    }
    found
}

/// The direct children of `/proc/<process>`, across its threads.
fn children_of(process: &str) -> Vec<Pid> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{process}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<i32>().ok().and_then(Pid::from_raw))
                .collect::<Vec<_>>()
        })
        .collect()
}
