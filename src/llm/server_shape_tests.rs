//! Each server's documented stream shapes, reduced and then sent back:
//! the response keel assembles from a stream, and the request body it
//! builds from that response (what the server validates on the next
//! request). The same fixtures run through the real binary in
//! `tests/suite/servers_*.rs`.
