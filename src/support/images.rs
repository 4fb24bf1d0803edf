//! Preparing an image for a model: recognised by its bytes (PNG, JPEG,
//! GIF, WebP), kept as it is when it fits every provider's limits, else
//! scaled down and re-encoded (PNG where it has transparency, JPEG
//! otherwise) until it does. What a user attaches, what `read_file` reads
//! and what an MCP server returns all pass through here.
//!
//! Limits ([`MAX_SIDE`], [`MAX_BYTES`]): Anthropic refuses images over 5 MB
//! of base64 and over 8000 px a side, and scales anything past about
//! 1568 px down itself; OpenAI scales to 2048 px. 2000 px on the longest
//! side and 3.75 MB of bytes (5 MB in base64) fit all three protocols.
//! Decoding is bounded ([`decode_limits`]): a small file that claims a
//! huge picture (a decompression bomb) is refused, not decoded. Input that
//! is not an image of these four formats is an error, never a panic.

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use sha2::{Digest, Sha256};

use crate::protocol::{ImageData, ImageMediaType, ImagePart};

/// The longest side keel sends, in pixels.
pub const MAX_SIDE: u32 = 2000;
/// The most encoded bytes keel sends for one image (5 MB once in base64).
pub const MAX_BYTES: usize = 3_750_000;
/// The largest file keel reads as an image at all.
pub const MAX_INPUT_BYTES: u64 = 50 * 1024 * 1024;
/// The largest picture keel decodes, a side.
const MAX_DECODED_SIDE: u32 = 16_384;
/// The most memory one decode may take.
const MAX_DECODE_ALLOC: u64 = 1024 * 1024 * 1024;
/// JPEG quality of a re-encoded photo.
const JPEG_QUALITY: u8 = 85;

/// Why an image could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("not a PNG, JPEG, GIF or WebP image")]
    Unsupported,
    #[error("the image is larger than {} MB", MAX_INPUT_BYTES / 1024 / 1024)]
    TooLarge,
    #[error("cannot decode the image: {0}")]
    Decode(String),
    #[error("cannot encode the image: {0}")]
    Encode(String),
    #[error("cannot read {path}: {source}")]
    Read { path: std::path::PathBuf, source: std::io::Error },
}

/// The format `bytes` are in, by their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<ImageMediaType> {
    match bytes {
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, ..] => Some(ImageMediaType::Png),
        [0xff, 0xd8, 0xff, ..] => Some(ImageMediaType::Jpeg),
        [b'G', b'I', b'F', b'8', b'7' | b'9', b'a', ..] => Some(ImageMediaType::Gif),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => {
            Some(ImageMediaType::Webp)
        }
        _ => None,
    }
}

/// `bytes` as an image part within the limits; `name` is kept for display.
pub fn prepare(bytes: &[u8], name: &str) -> Result<ImagePart, ImageError> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(ImageError::TooLarge);
    }
    let media_type = sniff(bytes).ok_or(ImageError::Unsupported)?;
    let (width, height) = reader(bytes, media_type)?
        .into_dimensions()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    if width.max(height) <= MAX_SIDE && bytes.len() <= MAX_BYTES {
        return Ok(part(bytes.to_vec(), media_type, (width, height), name));
    }
    let mut reader = reader(bytes, media_type)?;
    reader.limits(decode_limits());
    let decoded = reader.decode().map_err(|e| ImageError::Decode(e.to_string()))?;
    shrink(&decoded, name)
}

/// The image file at `path`, prepared ([`prepare`]); read no further than
/// [`MAX_INPUT_BYTES`].
pub fn from_file(path: &std::path::Path) -> Result<ImagePart, ImageError> {
    let read_error = |source| ImageError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    from_reader(file, &name, path)
}

/// The image `source` holds (a file, stdin), prepared ([`prepare`]); read
/// no further than [`MAX_INPUT_BYTES`]. `origin` names it in an error.
pub fn from_reader(
    source: impl std::io::Read,
    name: &str,
    origin: &std::path::Path,
) -> Result<ImagePart, ImageError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    source
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ImageError::Read { path: origin.to_owned(), source })?;
    prepare(&bytes, name)
}

fn reader(
    bytes: &[u8],
    media_type: ImageMediaType,
) -> Result<ImageReader<Cursor<&[u8]>>, ImageError> {
    let format = match media_type {
        ImageMediaType::Png => ImageFormat::Png,
        ImageMediaType::Jpeg => ImageFormat::Jpeg,
        ImageMediaType::Gif => ImageFormat::Gif,
        ImageMediaType::Webp => ImageFormat::WebP,
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(decode_limits());
    Ok(reader)
}

/// What one decode may take.
fn decode_limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_DECODED_SIDE);
    limits.max_image_height = Some(MAX_DECODED_SIDE);
    limits.max_alloc = Some(MAX_DECODE_ALLOC);
    limits
}

/// Scales `image` to fit [`MAX_SIDE`], then smaller until its encoding
/// fits [`MAX_BYTES`]: PNG while it has transparency and fits, JPEG else.
fn shrink(image: &DynamicImage, name: &str) -> Result<ImagePart, ImageError> {
    let mut side = MAX_SIDE.min(image.width().max(image.height()));
    loop {
        let scaled = match image.width().max(image.height()) > side {
            true => image.resize(side, side, image::imageops::FilterType::Triangle),
            false => image.clone(),
        };
        let size = (scaled.width(), scaled.height());
        if scaled.color().has_alpha() {
            let png = encode(&scaled, ImageFormat::Png)?;
            if png.len() <= MAX_BYTES {
                return Ok(part(png, ImageMediaType::Png, size, name));
            }
        }
        let jpeg = encode_jpeg(&scaled)?;
        if jpeg.len() <= MAX_BYTES || side <= 64 {
            return Ok(part(jpeg, ImageMediaType::Jpeg, size, name));
        }
        side = side * 3 / 4;
    }
}

fn encode(image: &DynamicImage, format: ImageFormat) -> Result<Vec<u8>, ImageError> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(out.into_inner())
}

fn encode_jpeg(image: &DynamicImage) -> Result<Vec<u8>, ImageError> {
    let mut out = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY);
    DynamicImage::ImageRgb8(image.to_rgb8())
        .write_with_encoder(encoder)
        .map_err(|e| ImageError::Encode(e.to_string()))?;
    Ok(out)
}

fn part(bytes: Vec<u8>, media_type: ImageMediaType, size: (u32, u32), name: &str) -> ImagePart {
    ImagePart {
        media_type,
        sha256: sha256_hex(&bytes),
        width: size.0,
        height: size.1,
        bytes: bytes.len() as u64,
        name: name.to_owned(),
        data: ImageData::new(bytes),
    }
}

/// Lowercase hex SHA-256 of `bytes`: an image's key in the store.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A PNG of `width` × `height` with a gradient (tests and benches).
#[cfg(test)]
pub fn test_png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image).write_to(&mut out, ImageFormat::Png).unwrap_or_default();
    out.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_png_passes_unchanged() {
        let png = test_png(40, 30);
        let part = prepare(&png, "shot.png").unwrap();
        assert_eq!(part.media_type, ImageMediaType::Png);
        assert_eq!((part.width, part.height), (40, 30));
        assert_eq!(part.data.bytes(), Some(png.as_slice()));
        assert_eq!(part.sha256, sha256_hex(&png));
        assert_eq!(part.bytes, png.len() as u64);
    }

    #[test]
    fn a_4000_by_3000_png_is_scaled_to_2000_by_1500() {
        let png = test_png(4000, 3000);
        let part = prepare(&png, "big.png").unwrap();
        assert_eq!((part.width, part.height), (2000, 1500));
        let bytes = part.data.bytes().unwrap();
        assert!(bytes.len() <= MAX_BYTES, "{} bytes", bytes.len());
        assert_eq!(sniff(bytes), Some(part.media_type));
        let back = image::load_from_memory(bytes).unwrap();
        assert_eq!((back.width(), back.height()), (2000, 1500));
    }

    #[test]
    fn what_is_not_an_image_is_refused_without_a_panic() {
        assert!(matches!(prepare(b"hello", "x"), Err(ImageError::Unsupported)));
        let mut torn = test_png(10, 10);
        torn.truncate(40);
        assert!(prepare(&torn, "x").is_err());
        assert!(matches!(prepare(b"GIF89a", "x"), Err(ImageError::Decode(_))));
    }

    #[test]
    fn formats_are_told_by_their_bytes() {
        assert_eq!(sniff(b"\xff\xd8\xff\xe0"), Some(ImageMediaType::Jpeg));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(ImageMediaType::Webp));
        assert_eq!(sniff(b"GIF87a"), Some(ImageMediaType::Gif));
        assert_eq!(sniff(b"%PDF"), None);
    }
}
