//! Binary bytes on a command's stdout, summarised for the model instead of
//! shown as U+FFFD soup: the size, a guess at the type from the magic
//! bytes that survive lossy decoding, and how to look at it.
//!
//! Invariants: pure; text that is mostly valid UTF-8 (a log with one stray
//! byte, Latin-1 names) is never summarised: only a NUL, or replacement
//! characters making up more than a tenth of what was kept, count as binary.

use crate::sandbox::CapturedStream;

/// Share of replacement characters past which kept text counts as binary.
const REPLACEMENT_SHARE: usize = 10;

/// Known leading bytes (as they read after lossy decoding) and their type.
const MAGIC: [(&str, &str); 7] = [
    ("\u{7f}ELF", "an ELF executable or library"),
    ("\u{fffd}PNG", "a PNG image"),
    ("%PDF", "a PDF document"),
    ("PK\u{3}\u{4}", "a zip archive (or a jar, wheel, docx…)"),
    ("GIF8", "a GIF image"),
    ("\u{1f}\u{fffd}", "gzip-compressed data"),
    ("SQLite format 3", "an SQLite database"),
];

/// A one-line summary when `stream` looks binary, else `None`.
pub(crate) fn binary_summary(stream: &CapturedStream) -> Option<String> {
    let kept = format!("{}{}", stream.head, stream.tail);
    let chars = kept.chars().count();
    let replaced = kept.chars().filter(|&c| c == '\u{fffd}').count();
    let binary = kept.contains('\0') || (chars > 0 && replaced * REPLACEMENT_SHARE > chars);
    if !binary {
        return None;
    }
    let bytes = kept.len() as u64 + stream.omitted_bytes;
    let kind = MAGIC
        .iter()
        .find(|(magic, _)| stream.head.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind);
    Some(format!(
        "[binary output, about {bytes} bytes, looks like {kind}: not shown. Redirect it to a file \
         and inspect it with `file`, `xxd | head` or `strings | head`]"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(bytes: &[u8]) -> CapturedStream {
        CapturedStream {
            head: String::from_utf8_lossy(bytes).into_owned(),
            tail: String::new(),
            omitted_bytes: 0,
        }
    }

    #[test]
    fn binary_is_summarised_with_a_type_guess() {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend((0..200u8).map(|n| n.wrapping_mul(37) | 0x80));
        let summary = binary_summary(&stream(&png)).unwrap();
        assert!(summary.contains("looks like a PNG image"), "{summary}");
        let elf = binary_summary(&stream(b"\x7fELF\x02\x01\x01\0\0\0\0")).unwrap();
        assert!(elf.contains("ELF executable"), "{elf}");
        let unknown = binary_summary(&stream(&[0xff, 0xfe, 0x00, 0x9c, 0x88])).unwrap();
        assert!(unknown.contains("looks like binary data"), "{unknown}");
    }

    #[test]
    fn text_with_a_stray_byte_is_left_alone() {
        let mut text = "a log line\n".repeat(20).into_bytes();
        text.push(0xe9);
        assert_eq!(binary_summary(&stream(&text)), None);
        assert_eq!(binary_summary(&stream(b"")), None);
    }
}
