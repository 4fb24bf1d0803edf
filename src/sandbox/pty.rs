//! Pseudo-terminals for background processes started with `pty`
//! ([`super::background`]): the pair keel opens, the master's async reads
//! and writes, and the one step that makes the terminal the command's
//! controlling one.
//!
//! Invariants:
//! - keel holds only the master (non-blocking, close-on-exec); the slave is
//!   the child's stdin, stdout and stderr and keel drops its copy once the
//!   child is spawned, so the master reads EIO (the end) when the last
//!   process holding the slave is gone;
//! - the terminal is [`COLUMNS`]×[`ROWS`] and the command sees
//!   `TERM=`[`TERM`]: keel reads text, not a screen, and `dumb` is what
//!   tells readline, Python's REPL, git and most CLIs to draw no colours,
//!   no cursor moves and no redraws (what is sent anyway is stripped by
//!   [`super::terminal_text`]);
//! - the crate forbids `unsafe` (no `pre_exec`), so the process that takes
//!   the terminal as its controlling one is a fresh `exec` that calls
//!   [`take_controlling_terminal`] as a session leader: the jail's init
//!   (after its `setsid`), the launcher when it runs the command in place,
//!   or, unconfined, [`stage`] (`keel sandbox-exec --terminal-stage`). The
//!   first process keel starts calls `setsid` itself and so leads its own
//!   process group, as `process_group(0)` gives the other children: the
//!   kill ladder ends it alike.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;

use rustix::fd::OwnedFd;
use rustix::pty::OpenptFlags;
use tokio::io::unix::AsyncFd;

/// The terminal's width.
pub const COLUMNS: u16 = 120;
/// The terminal's height.
pub const ROWS: u16 = 40;
/// The command's `TERM` (see the module doc).
pub const TERM: &str = "dumb";

/// Why no terminal could be made.
#[derive(Debug, thiserror::Error)]
pub enum PtyError {
    #[error("cannot open a pseudo-terminal ({step}): {source}")]
    Open {
        step: &'static str,
        #[source]
        source: io::Error,
    },
}

/// A freshly opened terminal: the master keel keeps, the slave the child gets.
#[derive(Debug)]
pub struct Pair {
    pub master: OwnedFd,
    pub slave: OwnedFd,
}

/// Opens a pseudo-terminal of [`COLUMNS`]×[`ROWS`], its master non-blocking.
pub fn open() -> Result<Pair, PtyError> {
    let fail = |step| move |errno: rustix::io::Errno| PtyError::Open { step, source: errno.into() };
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = rustix::pty::openpt(flags).map_err(fail("posix_openpt"))?;
    rustix::pty::grantpt(&master).map_err(fail("grantpt"))?;
    rustix::pty::unlockpt(&master).map_err(fail("unlockpt"))?;
    let slave = match rustix::pty::ioctl_tiocgptpeer(&master, flags) {
        Ok(slave) => slave,
        // Kernels before 4.13: by its name.
        Err(_) => {
            let name = rustix::pty::ptsname(&master, Vec::new()).map_err(fail("ptsname"))?;
            let flags =
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC;
            rustix::fs::open(name.as_c_str(), flags, rustix::fs::Mode::empty())
                .map_err(fail("open the terminal"))?
        }
    };
    let size =
        rustix::termios::Winsize { ws_row: ROWS, ws_col: COLUMNS, ws_xpixel: 0, ws_ypixel: 0 };
    rustix::termios::tcsetwinsize(&master, size).map_err(fail("set its size"))?;
    rustix::io::ioctl_fionbio(&master, true).map_err(fail("make it non-blocking"))?;
    Ok(Pair { master, slave })
}

/// The master, registered with tokio's reactor for async reads and writes.
///
/// `AsyncFd::new` is deprecated for types whose raw descriptor another
/// owner could close while it is registered; an [`OwnedFd`] moved in has
/// no other owner, and the safe constructor is the only one the crate
/// (`unsafe` forbidden) can call.
#[allow(deprecated)]
pub fn register(master: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    AsyncFd::new(master)
}

/// Reads from the master; `Ok(0)` or an error (EIO once every slave is
/// closed) is its end.
pub async fn read(master: &AsyncFd<OwnedFd>, buffer: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut guard = master.readable().await?;
        let attempt = guard
            .try_io(|fd| rustix::io::read(fd.get_ref(), &mut *buffer).map_err(io::Error::from));
        if let Ok(result) = attempt {
            return result;
        }
    }
}

/// Writes all of `input` to the master (what the command reads as typed).
pub async fn write_all(master: &AsyncFd<OwnedFd>, mut input: &[u8]) -> io::Result<()> {
    while !input.is_empty() {
        let mut guard = master.writable().await?;
        let attempt =
            guard.try_io(|fd| rustix::io::write(fd.get_ref(), input).map_err(io::Error::from));
        match attempt {
            Ok(Ok(0)) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(Ok(written)) => input = &input[written..],
            Ok(Err(error)) => return Err(error),
            Err(_would_block) => {}
        }
    }
    Ok(())
}

/// Makes this process's stdin, a terminal, its controlling terminal; call
/// as a session leader without one (after `setsid`).
pub fn take_controlling_terminal() -> io::Result<()> {
    rustix::process::ioctl_tiocsctty(std::io::stdin()).map_err(io::Error::from)
}

/// `keel sandbox-exec --terminal-stage -- CMD` (unconfined commands): a
/// new session whose controlling terminal is stdin, then `exec` of the
/// command. Returns the exit code when it could not be run.
pub fn stage(program: &OsString, args: &[OsString]) -> i32 {
    if let Err(error) = rustix::process::setsid() {
        say(&format!("keel: cannot start a new session for the terminal: {error}"));
    } else if let Err(error) = take_controlling_terminal() {
        say(&format!("keel: the terminal is not the command's controlling one: {error}"));
    }
    let error = std::process::Command::new(program).args(args).exec();
    say(&format!("keel: cannot run {}: {error}", program.to_string_lossy()));
    127
}

fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}
