//! Copying bytes both ways between two connected streams until both sides
//! are done, on blocking threads (the proxy and the jail's forwarders
//! carry a handful of connections per command; a thread each keeps them
//! out of any async runtime, so the launcher, which has none, shares it).
//!
//! Invariant: when one direction ends, the other side's write half is
//! shut down, so a client waiting for end-of-file gets it; the call
//! returns once both directions ended.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

/// A stream that can be split into a second handle and half-closed.
pub trait Duplex: Read + Write + Send + Sized + 'static {
    fn another(&self) -> std::io::Result<Self>;
    fn close_write(&self);
}

impl Duplex for TcpStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
    }
}

impl Duplex for UnixStream {
    fn another(&self) -> std::io::Result<Self> {
        self.try_clone()
    }
    fn close_write(&self) {
        let _ = self.shutdown(Shutdown::Write);
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
}
