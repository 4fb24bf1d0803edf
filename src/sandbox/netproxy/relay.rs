//! Copying bytes both ways between two connected streams until both sides
//! are done, on blocking threads (the proxy and the jail's forwarders
//! carry a handful of connections per command; a thread each keeps them
//! out of any async runtime, so the launcher, which has none, shares it).
//!
//! Invariant: when one direction ends, the other side's write half is
//! shut down, so a client waiting for end-of-file gets it; the call
//! returns once both directions ended. [`relay_with_idle_limit`] also ends
//! both once no byte went either way for its limit (the allowlist
//! proxy's tunnels: a client that opens and goes quiet does not hold a
//! thread and a socket for ever; host ports keep [`relay`], a database
//! pool may idle for hours).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A stream that can be split into a second handle and half-closed.
pub trait Duplex: Read + Write + Send + Sized + 'static {
    fn another(&self) -> std::io::Result<Self>;
    fn close_write(&self);
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()>;
}

impl Duplex for TcpStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

impl Duplex for UnixStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
    fn read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

/// Relays between `left` and `right` until both directions end.
pub fn relay<L: Duplex, R: Duplex>(left: L, right: R) {
    let (Ok(mut left_reader), Ok(mut right_reader)) = (left.another(), right.another()) else {
        return;
    };
    let mut right_writer = right;
    let forward = std::thread::spawn(move || {
        let _ = std::io::copy(&mut left_reader, &mut right_writer);
        right_writer.close_write();
    });
    let mut left_writer = left;
    let _ = std::io::copy(&mut right_reader, &mut left_writer);
    left_writer.close_write();
    let _ = forward.join();
}

/// The longest a reader waits before looking at the idle clock.
const TICK: Duration = Duration::from_secs(5);

/// [`relay`], ended in both directions once nothing moved either way for
/// `idle`.
pub fn relay_with_idle_limit<L: Duplex, R: Duplex>(left: L, right: R, idle: Duration) {
    let tick = idle.min(TICK);
    if left.read_timeout(tick).is_err() || right.read_timeout(tick).is_err() {
        return;
    }
    let (Ok(left_reader), Ok(right_reader)) = (left.another(), right.another()) else {
        return;
    };
    let last = Arc::new(Mutex::new(Instant::now()));
    let forward = {
        let last = Arc::clone(&last);
        std::thread::spawn(move || pump(left_reader, right, &last, idle))
    };
    pump(right_reader, left, &last, idle);
    let _ = forward.join();
}

/// Copies `reader` into `writer` until end-of-file, an error, or `idle`
/// without a byte in either direction (`last` is shared by both); then
/// shuts `writer`'s write half.
fn pump<A: Duplex, B: Duplex>(mut reader: A, mut writer: B, last: &Mutex<Instant>, idle: Duration) {
    let mut buffer = vec![0u8; 16 * 1024];
    let quiet_for = || last.lock().map_or(idle, |at| at.elapsed());
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => {
                if let Ok(mut at) = last.lock() {
                    *at = Instant::now();
                }
                if writer.write_all(&buffer[..read]).is_err() {
                    break;
                }
            }
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if quiet_for() >= idle {
                    break;
                }
            }
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    writer.close_write();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_go_both_ways_and_end_of_file_is_passed_on() {
        let (mut client, near) = UnixStream::pair().unwrap();
        let (far, mut server) = UnixStream::pair().unwrap();
        let relayed = std::thread::spawn(move || relay(near, far));
        client.write_all(b"ping").unwrap();
        client.shutdown(Shutdown::Write).unwrap();
        let mut got = String::new();
        server.read_to_string(&mut got).unwrap();
        assert_eq!(got, "ping");
        server.write_all(b"pong").unwrap();
        server.shutdown(Shutdown::Write).unwrap();
        let mut back = String::new();
        client.read_to_string(&mut back).unwrap();
        assert_eq!(back, "pong");
        relayed.join().unwrap();
    }

    #[test]
    fn a_quiet_tunnel_ends_after_its_idle_limit_and_a_busy_one_does_not() {
        let (mut client, near) = UnixStream::pair().unwrap();
        let (far, mut server) = UnixStream::pair().unwrap();
        let idle = Duration::from_millis(300);
        let started = Instant::now();
        let relayed = std::thread::spawn(move || relay_with_idle_limit(near, far, idle));
        // Busy for longer than the limit: one byte every 100 ms.
        for _ in 0..8 {
            client.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut got = [0u8; 8];
        server.read_exact(&mut got).unwrap();
        assert!(!relayed.is_finished(), "a busy tunnel was cut");
        // Then quiet: both sides see the end.
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).unwrap();
        client.read_to_end(&mut rest).unwrap();
        relayed.join().unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
