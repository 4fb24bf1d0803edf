//! Small effect helpers several adapters and front ends share, kept below
//! all of them: a panic guard for the tool, hook and subagent boundaries
//! ([`panic_guard`]), the bounded read of a definition file
//! ([`bounded_read`]) and opening a file beneath a folder without following
//! a symlink ([`beneath`]: what keel reads from or writes to folders a
//! repository or a command can change) and keel's own folder kept
//! owner-only ([`private_dir`]), and images prepared within the providers'
//! limits ([`images`]).
//!
//! Invariant: imports no other keel module but the pure layer, so no
//! import cycle can run through it (`tests/suite/layers.rs` checks that
//! the modules form no cycle). A helper that needs `config`, `tools` or
//! anything above belongs there, not here.

pub mod beneath;
pub mod bounded_read;
pub mod images;
pub mod panic_guard;
pub mod private_dir;
