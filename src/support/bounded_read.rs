//! Reading a file users write by hand (an agent, a command, a skill, a
//! memory note) with a size bound: `config` and `skills` both read them.
//!
//! Invariant: never a partial read; a file past its limit or not UTF-8 is
//! an error, never truncated text.

use std::io::Read;
use std::path::Path;

/// Largest definition file read (agents and commands are prompts, not
/// data; a bigger file is a mistake or an attack on the context).
pub const MAX_DEFINITION_BYTES: u64 = 256 * 1024;

/// Why a bounded read gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BoundedReadError {
    #[error("cannot read it: {message}")]
    Read { message: String },
    #[error("it is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("it is not UTF-8 text")]
    NotText,
}

/// The text of `path`: at most [`MAX_DEFINITION_BYTES`], UTF-8.
pub fn read_bounded(path: &Path) -> Result<String, BoundedReadError> {
    let read_error = |error: std::io::Error| BoundedReadError::Read { message: error.to_string() };
    read_file(std::fs::File::open(path).map_err(read_error)?)
}

/// Like [`read_bounded`], for `path` beneath `root` opened without
/// following a symlink below `root` (`super::beneath`): a file a
/// repository or a command can swap for a link.
pub fn read_bounded_beneath(root: &Path, path: &Path) -> Result<String, BoundedReadError> {
    let file = super::beneath::open_beneath(root, path)
        .map_err(|error| BoundedReadError::Read { message: error.to_string() })?;
    read_file(file)
}

fn read_file(file: std::fs::File) -> Result<String, BoundedReadError> {
    let read_error = |error: std::io::Error| BoundedReadError::Read { message: error.to_string() };
    let mut bytes = Vec::new();
    file.take(MAX_DEFINITION_BYTES + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_DEFINITION_BYTES {
        return Err(BoundedReadError::TooLarge { limit: MAX_DEFINITION_BYTES });
    }
    String::from_utf8(bytes).map_err(|_| BoundedReadError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_the_limit_or_not_text_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.md");
        std::fs::write(&path, "x".repeat(MAX_DEFINITION_BYTES as usize + 1)).unwrap();
        assert_eq!(
            read_bounded(&path),
            Err(BoundedReadError::TooLarge { limit: MAX_DEFINITION_BYTES })
        );
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(read_bounded(&path), Err(BoundedReadError::NotText));
        std::fs::write(&path, "x".repeat(MAX_DEFINITION_BYTES as usize)).unwrap();
        assert_eq!(read_bounded(&path).map(|text| text.len()), Ok(MAX_DEFINITION_BYTES as usize));
    }
}
