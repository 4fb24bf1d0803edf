//! An ACP prompt (content blocks) as the text and images of a keel turn.
//!
//! Text blocks are the user's words. An embedded resource (a file or a
//! selection the editor attached) becomes a fenced block naming its URI;
//! a resource link becomes a line naming it, for the model to read with
//! its tools (keel's policy then judges that read as any other). Images
//! (a block, or a blob resource with an image MIME type) are prepared
//! within the providers' limits (`support::images`).
//!
//! Invariants: nothing of the prompt is dropped silently: a block keel
//! cannot take (audio, a binary resource that is not an image, an image
//! that does not decode) refuses the prompt with the reason, and nothing
//! is sent to the model.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use base64::Engine as _;

use crate::protocol::ImagePart;

/// Why a prompt cannot be taken.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PromptError {
    #[error("keel takes text, images and resources, not {0}")]
    Unsupported(&'static str),
    #[error("the image {name} is not base64: {reason}")]
    NotBase64 { name: String, reason: String },
    #[error("the image {name} cannot be used: {reason}")]
    Image { name: String, reason: String },
    #[error("the prompt is empty")]
    Empty,
}

/// A prompt ready for `Session::run_turn`.
#[derive(Debug, Default)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<ImagePart>,
}

/// The turn `blocks` ask for.
pub fn prompt(blocks: &[ContentBlock]) -> Result<Prompt, PromptError> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::Image(image) => {
                let name = image.uri.clone().unwrap_or_else(|| "pasted image".to_owned());
                images.push(image_part(&image.data, &name)?);
            }
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(text) => {
                    parts.push(fenced(&text.uri, &text.text));
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    let is_image =
                        blob.mime_type.as_deref().is_some_and(|mime| mime.starts_with("image/"));
                    if !is_image {
                        return Err(PromptError::Unsupported("binary resources"));
                    }
                    images.push(image_part(&blob.blob, &blob.uri)?);
                }
                _ => return Err(PromptError::Unsupported("this kind of resource")),
            },
            ContentBlock::Audio(_) => return Err(PromptError::Unsupported("audio")),
            _ => return Err(PromptError::Unsupported("this kind of content")),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && images.is_empty() {
        return Err(PromptError::Empty);
    }
    Ok(Prompt { text, images })
}

/// A text resource as the model reads it: its URI, then its text in a
/// fence longer than any run of backticks inside it.
fn fenced(uri: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    format!("{uri}:\n{fence}\n{text}{newline}{fence}")
}

fn image_part(data: &str, name: &str) -> Result<ImagePart, PromptError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|error| {
        PromptError::NotBase64 { name: name.to_owned(), reason: error.to_string() }
    })?;
    crate::support::images::prepare(&bytes, name)
        .map_err(|error| PromptError::Image { name: name.to_owned(), reason: error.to_string() })
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{
        AudioContent, BlobResourceContents, EmbeddedResource, ImageContent, ResourceLink,
        TextResourceContents,
    };

    use super::*;

    /// A 1×1 PNG.
    const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

    #[test]
    fn text_resources_and_links_become_the_prompt_text() {
        let blocks = vec![
            ContentBlock::from("Fix the bug in".to_owned()),
            ContentBlock::ResourceLink(ResourceLink::new("calc.py", "file:///w/calc.py")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "def add(a, b):\n    return a - b  # ```\n",
                    "file:///w/calc.py#L1-2",
                )),
            )),
        ];
        let prompt = prompt(&blocks).unwrap();
        assert_eq!(
            prompt.text,
            "Fix the bug in\n\n[calc.py](file:///w/calc.py)\n\nfile:///w/calc.py#L1-2:\n````\n\
             def add(a, b):\n    return a - b  # ```\n````"
        );
        assert!(prompt.images.is_empty());
    }

    #[test]
    fn images_are_prepared_and_what_keel_cannot_take_is_refused() {
        let image = ContentBlock::Image(ImageContent::new(PIXEL, "image/png"));
        let prompt = prompt(&[ContentBlock::from("look".to_owned()), image]).unwrap();
        assert_eq!((prompt.images.len(), prompt.images[0].width), (1, 1));
        let blob = |mime: &str| {
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::BlobResourceContents(
                    BlobResourceContents::new(PIXEL, "file:///w/p.png").mime_type(mime.to_owned()),
                ),
            ))
        };
        assert_eq!(super::prompt(&[blob("image/png")]).unwrap().images.len(), 1);
        assert_eq!(
            super::prompt(&[blob("application/zip")]).unwrap_err(),
            PromptError::Unsupported("binary resources")
        );
        let audio = ContentBlock::Audio(AudioContent::new("AAAA", "audio/wav"));
        assert_eq!(super::prompt(&[audio]).unwrap_err(), PromptError::Unsupported("audio"));
        let broken = ContentBlock::Image(ImageContent::new("not base64!", "image/png"));
        assert!(matches!(super::prompt(&[broken]), Err(PromptError::NotBase64 { .. })));
        assert_eq!(super::prompt(&[]).unwrap_err(), PromptError::Empty);
    }
}
