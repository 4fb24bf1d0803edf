//! An image in the conversation ([`ImagePart`]): one attached to a user
//! message (`keel exec --image`, a TUI attachment) or returned by a tool
//! (`read_file` of a picture, an MCP server's image content).
//!
//! Invariants: a part names its bytes by their SHA-256 (`sha256`, lowercase
//! hex) and says their media type, size and pixel size; the bytes travel
//! beside it in memory ([`ImageData`]) and are never serialized: a log
//! line holds the reference only, the bytes are stored once by hash
//! (`session::images`) and read back before a request (`runtime::images`).
//! Two parts are equal when they reference the same bytes, loaded or not,
//! so a rebuilt history equals the live one. The bytes were prepared within
//! every provider's limits (`support::images`) before a part was made.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The formats keel sends (every provider takes these four).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum ImageMediaType {
    #[serde(rename = "image/png")]
    Png,
    #[serde(rename = "image/jpeg")]
    Jpeg,
    #[serde(rename = "image/gif")]
    Gif,
    #[serde(rename = "image/webp")]
    Webp,
}

impl ImageMediaType {
    /// The MIME type (`image/png`, …).
    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Gif => "image/gif",
            Self::Webp => "image/webp",
        }
    }

    /// The file extension the image store uses.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Gif => "gif",
            Self::Webp => "webp",
        }
    }

    /// The type named by a MIME string (an MCP server's `mimeType`).
    pub fn from_mime(mime: &str) -> Option<Self> {
        match mime.trim().to_ascii_lowercase().as_str() {
            "image/png" => Some(Self::Png),
            "image/jpeg" | "image/jpg" => Some(Self::Jpeg),
            "image/gif" => Some(Self::Gif),
            "image/webp" => Some(Self::Webp),
            _ => None,
        }
    }
}

/// The encoded bytes of an image, when loaded. Never serialized; printed
/// as its length.
#[derive(Clone, Default)]
pub struct ImageData(Option<Arc<[u8]>>);

impl ImageData {
    pub fn new(bytes: impl Into<Arc<[u8]>>) -> Self {
        Self(Some(bytes.into()))
    }

    /// The bytes, if loaded.
    pub fn bytes(&self) -> Option<&[u8]> {
        self.0.as_deref()
    }
}

impl std::fmt::Debug for ImageData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(bytes) => write!(f, "ImageData({} bytes)", bytes.len()),
            None => f.write_str("ImageData(not loaded)"),
        }
    }
}

/// One image: a reference to stored bytes plus, in memory, the bytes.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImagePart {
    pub media_type: ImageMediaType,
    /// SHA-256 of the encoded bytes, lowercase hex: the store's key.
    pub sha256: String,
    pub width: u32,
    pub height: u32,
    /// Size of the encoded bytes.
    pub bytes: u64,
    /// What it was called where it came from (a file name), for display.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip)]
    pub data: ImageData,
}

impl PartialEq for ImagePart {
    fn eq(&self, other: &Self) -> bool {
        self.sha256 == other.sha256
            && self.media_type == other.media_type
            && self.width == other.width
            && self.height == other.height
            && self.bytes == other.bytes
            && self.name == other.name
    }
}

impl Eq for ImagePart {}

impl ImagePart {
    /// The short label front ends and text notes use:
    /// `shot.png, 1200×800, 120 KB`.
    pub fn label(&self) -> String {
        let name = if self.name.is_empty() { self.media_type.mime() } else { &self.name };
        format!("{name}, {}×{}, {}", self.width, self.height, human_size(self.bytes))
    }

    /// What a model that cannot see images reads instead of this one.
    pub fn text_note(&self) -> String {
        format!(
            "[image: {}; not shown: this model does not take images (set `[provider] images = \
             true` if it does)]",
            self.label()
        )
    }
}

/// `120 KB`, `3.4 MB`: sizes as a person reads them.
pub fn human_size(bytes: u64) -> String {
    const KB: u64 = 1000;
    const MB: u64 = 1000 * KB;
    match bytes {
        b if b >= MB => format!("{:.1} MB", b as f64 / MB as f64),
        b if b >= KB => format!("{} KB", b.div_ceil(KB)),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(data: ImageData) -> ImagePart {
        ImagePart {
            media_type: ImageMediaType::Png,
            sha256: "ab".repeat(32),
            width: 2,
            height: 1,
            bytes: 70,
            name: "shot.png".into(),
            data,
        }
    }

    #[test]
    fn the_bytes_are_never_serialized_and_do_not_make_a_difference() {
        let loaded = part(ImageData::new(vec![1u8, 2, 3]));
        let line = serde_json::to_string(&loaded).unwrap();
        assert!(!line.contains("data"), "{line}");
        assert!(line.contains("\"media_type\":\"image/png\""), "{line}");
        let back: ImagePart = serde_json::from_str(&line).unwrap();
        assert!(back.data.bytes().is_none());
        assert_eq!(back, loaded);
    }

    #[test]
    fn labels_and_sizes() {
        assert_eq!(part(ImageData::default()).label(), "shot.png, 2×1, 70 B");
        assert_eq!(human_size(120_000), "120 KB");
        assert_eq!(human_size(3_400_000), "3.4 MB");
        assert_eq!(ImageMediaType::from_mime("IMAGE/JPG"), Some(ImageMediaType::Jpeg));
        assert_eq!(ImageMediaType::from_mime("image/svg+xml"), None);
    }
}
