//! `read_file` of a picture: a PNG, JPEG, GIF or WebP file (told by its
//! first bytes, not its name) comes back as an image part for the model
//! beside one line of text saying what it is. This is also keel's
//! `view_image`: any workspace file a command wrote (a screenshot a test
//! took) is read the same way.
//!
//! Invariants: at most `support::images::MAX_INPUT_BYTES` are read; the
//! image is prepared within the providers' limits (`support::images`),
//! scaled down when it is larger; one that cannot be decoded is an error
//! for the model, never a panic. Whether the model sees it or a text note
//! is the request builder's decision (`llm::image_parts`): the tool does
//! not know the model.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::json;

use super::ToolError;
use crate::protocol::{ImageMediaType, ToolMeta, ToolOutput};
use crate::support::images::{self, ImageError, MAX_INPUT_BYTES};

/// The file, rewound, and its image format if it is a picture.
pub(super) fn sniff(
    mut file: File,
    rel: &Path,
) -> Result<(File, Option<ImageMediaType>), ToolError> {
    let mut head = Vec::with_capacity(16);
    (&mut file).take(16).read_to_end(&mut head).map_err(|source| ToolError::io(rel, source))?;
    file.seek(SeekFrom::Start(0)).map_err(|source| ToolError::io(rel, source))?;
    Ok((file, images::sniff(&head)))
}

/// The picture in `file` as a tool output.
pub(super) fn read(
    file: File,
    media_type: ImageMediaType,
    rel: &Path,
) -> Result<ToolOutput, ToolError> {
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ToolError::io(rel, source))?;
    let original = bytes.len() as u64;
    let name = rel.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let part = images::prepare(&bytes, &name).map_err(|error| match error {
        ImageError::TooLarge => ToolError::FileTooLarge {
            path: rel.to_owned(),
            bytes: original,
            limit: MAX_INPUT_BYTES,
        },
        ImageError::Unsupported
        | ImageError::Decode(_)
        | ImageError::Encode(_)
        | ImageError::Read { .. } => {
            ToolError::BadImage { path: rel.to_owned(), reason: error.to_string() }
        }
    })?;
    let scaled = part.bytes != original || part.media_type != media_type;
    let text = format!(
        "{}: {} image, {}×{}{}; the image follows.",
        rel.display(),
        media_type.mime(),
        part.width,
        part.height,
        if scaled { ", scaled down to fit the model's limits" } else { "" },
    );
    let meta = ToolMeta::details(json!({
        "path": rel.to_string_lossy(),
        "image": part.media_type.mime(),
        "width": part.width,
        "height": part.height,
        "bytes": part.bytes,
    }));
    Ok(ToolOutput { text, meta, images: vec![part] })
}
