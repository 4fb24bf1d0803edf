//! Content hashes of files, to tell on resume whether an interrupted file
//! change landed.
//!
//! FNV-1a 64: fast, dependency-free and stable across versions and
//! platforms (the log outlives the binary). Not cryptographic: it detects
//! change, it does not authenticate content.

use std::path::Path;

/// `fnv1a64:<hex>` of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}

/// The hash of the file at `path`, `None` when it does not exist or cannot
/// be read as a file.
pub fn file_hash(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| content_hash(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(content_hash(b""), "fnv1a64:cbf29ce484222325");
        assert_eq!(content_hash(b"a"), "fnv1a64:af63dc4c8601ec8c");
    }

    #[test]
    fn missing_file_has_no_hash() {
        assert_eq!(file_hash(Path::new("/nonexistent/x")), None);
    }
}
