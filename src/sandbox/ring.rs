//! [`OutputRing`]: the newest bytes a background process wrote, with a
//! read position, so each read returns only what is new.
//!
//! Invariants: pure (no I/O); never holds more than its capacity; positions
//! count every byte ever written, so `written - held` bytes were dropped
//! and a read that starts before what is held reports exactly how many of
//! its bytes are gone.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct OutputRing {
    held: VecDeque<u8>,
    capacity: usize,
    /// Bytes ever written.
    written: u64,
    /// Position (in `written` terms) up to which output was read.
    read: u64,
}

impl OutputRing {
    pub fn new(capacity: usize) -> Self {
        Self { held: VecDeque::new(), capacity, written: 0, read: 0 }
    }

    /// Appends `bytes`, dropping the oldest beyond the capacity.
    pub fn push(&mut self, bytes: &[u8]) {
        self.written += bytes.len() as u64;
        let keep = &bytes[bytes.len().saturating_sub(self.capacity)..];
        let overflow = (self.held.len() + keep.len()).saturating_sub(self.capacity);
        self.held.drain(..overflow);
        self.held.extend(keep);
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    /// Bytes written since the last read (held or not).
    pub fn unread(&self) -> u64 {
        self.written - self.read
    }

    /// The unread bytes still held, at most `limit` of the newest, and how
    /// many unread bytes are not returned (dropped by the ring or beyond
    /// `limit`); everything counts as read afterwards.
    pub fn read_new(&mut self, limit: usize) -> (Vec<u8>, u64) {
        let oldest_held = self.written - self.held.len() as u64;
        let start = self.read.max(oldest_held);
        let available = usize::try_from(self.written - start).unwrap_or(usize::MAX);
        let returned = available.min(limit);
        let skip = self.held.len() - returned;
        let bytes: Vec<u8> = self.held.iter().skip(skip).copied().collect();
        let dropped = self.unread() - returned as u64;
        self.read = self.written;
        (bytes, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_return_only_new_bytes() {
        let mut ring = OutputRing::new(8);
        ring.push(b"abc");
        assert_eq!(ring.read_new(100), (b"abc".to_vec(), 0));
        ring.push(b"de");
        assert_eq!(ring.read_new(100), (b"de".to_vec(), 0));
        assert_eq!(ring.read_new(100), (Vec::new(), 0));
    }

    #[test]
    fn bytes_past_the_capacity_are_dropped_and_counted() {
        let mut ring = OutputRing::new(4);
        ring.push(b"abcdef");
        ring.push(b"gh");
        assert_eq!(ring.read_new(100), (b"efgh".to_vec(), 4));
        ring.push(b"ijklmnop");
        assert_eq!(ring.read_new(100), (b"mnop".to_vec(), 4));
    }

    #[test]
    fn a_limited_read_keeps_the_newest_and_counts_the_rest() {
        let mut ring = OutputRing::new(100);
        ring.push(b"0123456789");
        assert_eq!(ring.read_new(3), (b"789".to_vec(), 7));
        assert_eq!(ring.unread(), 0);
    }
}
