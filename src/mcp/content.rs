//! A `tools/call` result as the model reads it: text blocks as they are,
//! structured content as JSON when the server sent no text for it, images
//! passed through to the model as image parts (prepared within the
//! providers' limits, `support::images`), audio and resources described,
//! all cut to the same budget as shell output.
//!
//! Invariants: the text never exceeds [`MAX_OUTPUT_BYTES`] plus a one-line
//! note saying how much was cut from the middle; binary payloads are never
//! copied into the text (only their type and size); at most
//! [`MAX_IMAGES`] images of one result go to the model, each with a line of
//! text in its place, and one that cannot be decoded is described instead;
//! `isError` decides whether the model reads it as a failure.

use rmcp::model::{CallToolResult, ContentBlock, ReadResourceResult, ResourceContents};
use serde_json::{Value, json};

use base64::Engine as _;

use crate::protocol::ImagePart;
use crate::sandbox::CapturedStream;
use crate::support::images::{self, MAX_INPUT_BYTES};

/// Images of one result passed to the model; the rest are described.
pub const MAX_IMAGES: usize = 8;

/// The budget of one result, shared with the `shell` tool.
pub const MAX_OUTPUT_BYTES: usize = crate::tools::MAX_OUTPUT_BYTES;

/// What the model reads of one call, with metadata for front ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub text: String,
    pub is_error: bool,
    pub meta: Value,
    /// The images for the model, in the order of their blocks.
    pub images: Vec<ImagePart>,
}

/// Renders `result` for the model.
pub fn render(result: &CallToolResult) -> Rendered {
    let mut parts: Vec<String> = Vec::new();
    let mut kinds: Vec<&'static str> = Vec::new();
    let mut has_text = false;
    let mut images = Vec::new();
    for block in &result.content {
        if let ContentBlock::Image(image) = block
            && images.len() < MAX_IMAGES
        {
            match image_part(&image.data, &image.mime_type) {
                Ok(part) => {
                    parts.push(format!("[image: {}]", part.label()));
                    images.push(part);
                }
                Err(reason) => parts.push(format!(
                    "[image: {}, {} bytes; cannot be shown: {reason}]",
                    image.mime_type,
                    decoded_len(&image.data)
                )),
            }
            kinds.push("image");
            continue;
        }
        let (kind, text) = describe(block);
        has_text |= kind == "text";
        kinds.push(kind);
        parts.push(text);
    }
    if let Some(structured) = &result.structured_content {
        // The spec asks servers to repeat structured content as text; when
        // one does not, the JSON is the only answer the model can read.
        if !has_text {
            parts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
        }
        kinds.push("structured");
    }
    let is_error = result.is_error.unwrap_or(false);
    if parts.is_empty() {
        parts.push(
            if is_error { "(the tool failed without a message)" } else { "(no output)" }.into(),
        );
    }
    let (text, omitted) = fit(&parts.join("\n"));
    let meta = json!({
        "content": kinds,
        "truncated": omitted > 0,
        "omitted_bytes": omitted,
        "is_error": is_error,
    });
    Rendered { text, is_error, meta, images }
}

/// A `resources/read` result as the model reads it: text contents as they
/// are (each under its URI), image blobs as image parts, other blobs
/// described, within the same budget as a call's result.
pub fn render_resource(result: &ReadResourceResult) -> Rendered {
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for contents in &result.contents {
        if let ResourceContents::BlobResourceContents { uri, mime_type: Some(mime), blob, .. } =
            contents
            && mime.starts_with("image/")
            && images.len() < MAX_IMAGES
            && let Ok(part) = image_part(blob, mime)
        {
            parts.push(format!("[resource {uri}]\n[image: {}]", part.label()));
            images.push(part);
            continue;
        }
        parts.push(resource_text(contents));
    }
    if parts.is_empty() {
        parts.push("(the resource is empty)".to_owned());
    }
    let (text, omitted) = fit(&parts.join("\n"));
    let meta =
        json!({ "truncated": omitted > 0, "omitted_bytes": omitted, "images": images.len() });
    Rendered { text, is_error: false, meta, images }
}

/// An MCP image block (base64 `data`, `mimeType`) as an image part; the
/// bytes decide the format, the declared type only names it.
fn image_part(data: &str, mime: &str) -> Result<ImagePart, String> {
    if decoded_len(data) as u64 > MAX_INPUT_BYTES {
        return Err(images::ImageError::TooLarge.to_string());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|error| format!("invalid base64: {error}"))?;
    images::prepare(&bytes, mime).map_err(|error| error.to_string())
}

/// The text standing for one content block (a prompt message's, too).
pub fn block_text(block: &ContentBlock) -> String {
    describe(block).1
}

/// One content block: its kind and the text standing for it.
fn describe(block: &ContentBlock) -> (&'static str, String) {
    match block {
        ContentBlock::Text(text) => ("text", text.text.clone()),
        ContentBlock::Image(image) => (
            "image",
            format!(
                "[image: {}, {} bytes; images here are not shown to the model]",
                image.mime_type,
                decoded_len(&image.data)
            ),
        ),
        ContentBlock::Audio(audio) => (
            "audio",
            format!("[audio: {}, {} bytes; not shown]", audio.mime_type, decoded_len(&audio.data)),
        ),
        ContentBlock::Resource(embedded) => ("resource", resource_text(&embedded.resource)),
        ContentBlock::ResourceLink(link) => (
            "resource_link",
            format!(
                "[resource link: {} ({}){}]",
                link.uri,
                link.name,
                link.description.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
            ),
        ),
        // A content type from a newer protocol than keel knows.
        _ => ("unknown", "[content of a type keel does not know]".to_owned()),
    }
}

fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => format!(
            "[resource {uri}: {}, {} bytes; binary content not shown]",
            mime_type.as_deref().unwrap_or("application/octet-stream"),
            decoded_len(blob)
        ),
        _ => "[a resource of a type keel does not know]".to_owned(),
    }
}

/// Bytes a base64 payload decodes to (without decoding it).
fn decoded_len(base64: &str) -> usize {
    let padding = base64.bytes().rev().take_while(|b| *b == b'=').count();
    (base64.len() / 4 * 3).saturating_sub(padding)
}

/// `text` within [`MAX_OUTPUT_BYTES`] (head and tail kept), with the same
/// note shell output gets; returns the bytes left out.
pub fn fit(text: &str) -> (String, u64) {
    if text.len() <= MAX_OUTPUT_BYTES {
        return (text.to_owned(), 0);
    }
    let whole = CapturedStream { head: text.to_owned(), tail: String::new(), omitted_bytes: 0 };
    let kept = whole.fit_to(MAX_OUTPUT_BYTES);
    let omitted = kept.omitted_bytes;
    let note = format!(
        "[output truncated: {omitted} bytes cut from the middle; ask the tool for less (a \
         narrower query, a page) if you need the rest]\n"
    );
    (format!("{note}{}", kept.text()), omitted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        content: Vec<ContentBlock>,
        structured: Option<Value>,
        error: bool,
    ) -> CallToolResult {
        let mut result =
            if error { CallToolResult::error(content) } else { CallToolResult::success(content) };
        result.structured_content = structured;
        result
    }

    #[test]
    fn text_and_structured_content() {
        let out = render(&result(vec![ContentBlock::text("Echo: hi")], None, false));
        assert_eq!(out.text, "Echo: hi");
        assert!(!out.is_error);
        let structured = json!({"temperature": 22.5});
        let out = render(&result(Vec::new(), Some(structured.clone()), false));
        assert!(out.text.contains("\"temperature\": 22.5"), "{}", out.text);
        assert_eq!(out.meta["content"], json!(["structured"]));
        let out = render(&result(
            vec![ContentBlock::text("{\"temperature\":22.5}")],
            Some(structured),
            false,
        ));
        assert_eq!(out.text, "{\"temperature\":22.5}", "no second copy");
    }

    #[test]
    fn an_image_that_is_not_one_is_described_never_inlined() {
        let block = ContentBlock::image("aGVsbG8=", "image/png");
        let out = render(&result(vec![block], None, false));
        assert_eq!(
            out.text,
            "[image: image/png, 5 bytes; cannot be shown: not a PNG, JPEG, GIF or WebP image]"
        );
        assert!(out.images.is_empty());
        assert!(!out.text.contains("aGVsbG8"));
    }

    #[test]
    fn images_are_passed_through_to_the_model() {
        let png = crate::support::images::test_png(3, 2);
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let blocks = vec![ContentBlock::text("the chart:"), ContentBlock::image(data, "image/png")];
        let out = render(&result(blocks, None, false));
        assert_eq!(out.images.len(), 1);
        assert_eq!(out.images[0].data.bytes(), Some(png.as_slice()));
        assert_eq!((out.images[0].width, out.images[0].height), (3, 2));
        assert!(out.text.starts_with("the chart:\n[image: image/png, 3×2, "), "{}", out.text);
        assert_eq!(out.meta["content"], json!(["text", "image"]));
    }

    #[test]
    fn errors_and_huge_outputs() {
        let out = render(&result(vec![ContentBlock::text("no such issue")], None, true));
        assert!(out.is_error);
        assert_eq!(out.text, "no such issue");
        let huge = "x".repeat(10 * 1024 * 1024);
        let out = render(&result(vec![ContentBlock::text(huge)], None, false));
        assert!(out.text.len() <= MAX_OUTPUT_BYTES + 300, "{}", out.text.len());
        assert!(out.text.starts_with("[output truncated:"), "{}", &out.text[..100]);
        assert_eq!(out.meta["truncated"], true);
    }
}
