//! Images as each wire protocol's content: Responses `input_image` with a
//! data URL, Chat Completions `image_url` parts with a data URL, Anthropic
//! `image` blocks with a base64 source.
//!
//! Invariants: an image is sent only when the profile says the model takes
//! images (`WireOptions::images`) and its bytes are loaded (the runtime
//! loads them from the store before a request); otherwise the model reads
//! a text note in its place (`ImagePart::text_note`, or one saying the
//! bytes are gone), never a silent drop. The bytes go out as stored: they
//! were prepared within the providers' limits when the part was made.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::WireOptions;
use crate::protocol::ImagePart;

/// What one image becomes on the wire: its bytes in base64, or the text
/// the model reads instead.
pub(crate) enum Sent {
    Image { mime: &'static str, base64: String },
    Note(String),
}

/// Decides how `part` is sent under `options`.
pub(crate) fn sent(part: &ImagePart, options: &WireOptions<'_>) -> Sent {
    if !options.images {
        return Sent::Note(part.text_note());
    }
    match part.data.bytes() {
        Some(bytes) => Sent::Image { mime: part.media_type.mime(), base64: STANDARD.encode(bytes) },
        None => Sent::Note(format!(
            "[image: {}; its stored copy is gone, so it cannot be shown]",
            part.label()
        )),
    }
}

/// The Responses content part of one image (`input_image`, or text).
pub(crate) fn responses_part(part: &ImagePart, options: &WireOptions<'_>) -> Value {
    match sent(part, options) {
        Sent::Image { mime, base64 } => json!({
            "type": "input_image",
            "image_url": format!("data:{mime};base64,{base64}"),
        }),
        Sent::Note(text) => json!({"type": "input_text", "text": text}),
    }
}

/// The Chat Completions content part of one image (`image_url`, or text).
pub(crate) fn chat_part(part: &ImagePart, options: &WireOptions<'_>) -> Value {
    match sent(part, options) {
        Sent::Image { mime, base64 } => json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{mime};base64,{base64}")},
        }),
        Sent::Note(text) => json!({"type": "text", "text": text}),
    }
}

/// The Anthropic content block of one image (`image`, or text).
pub(crate) fn anthropic_block(part: &ImagePart, options: &WireOptions<'_>) -> Value {
    match sent(part, options) {
        Sent::Image { mime, base64 } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": base64},
        }),
        Sent::Note(text) => json!({"type": "text", "text": text}),
    }
}
