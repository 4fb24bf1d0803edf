//! A session's images: those the user attached for the next turn, the
//! store every image of the log is kept in (`session::ImageStore`), and
//! the bytes a request needs.
//!
//! Invariants: an image is stored before the log line that references it
//! is written ([`SessionImages::keep`], called by `Session::record`); a
//! request carries the bytes of every image it references
//! ([`SessionImages::loaded`]: a rebuilt history holds references only),
//! read from the store once per session and kept in memory; an image the
//! store no longer has goes without bytes, and the request builder tells
//! the model so. Attachments are refused before anything is recorded when
//! the model does not take images ([`ImagesRefused`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use crate::protocol::{ImageData, ImagePart, Item, ModelRequest, SessionEvent};
use crate::session::{ImageStore, ImageStoreError, sessions_dir};

/// The user attached images and the model does not take them.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{model}` does not take images, as far as keel knows: send the prompt without --image, or \
     set `images = true` under `[provider]` if the model does take them"
)]
pub struct ImagesRefused {
    pub model: String,
}

pub(super) struct SessionImages {
    store: ImageStore,
    /// Bytes by SHA-256: what this process stored or read back.
    loaded: HashMap<String, ImageData>,
    /// Attached for the next turn (`Session::attach_images`).
    attached: Vec<ImagePart>,
}

impl SessionImages {
    pub(super) fn new(keel_home: &Path) -> Self {
        Self {
            store: ImageStore::new(&sessions_dir(keel_home)),
            loaded: HashMap::new(),
            attached: Vec::new(),
        }
    }

    pub(super) fn attach(&mut self, images: Vec<ImagePart>) {
        self.attached.extend(images);
    }

    /// The images attached for the turn about to start.
    pub(super) fn take_attached(&mut self) -> Vec<ImagePart> {
        std::mem::take(&mut self.attached)
    }

    /// Stores the images `event` references (before it is logged).
    pub(super) fn keep(&mut self, event: &SessionEvent) -> Result<(), ImageStoreError> {
        for part in images_of(event) {
            if let Some(bytes) =
                part.data.bytes().filter(|_| !self.loaded.contains_key(&part.sha256))
            {
                self.store.put(part)?;
                self.loaded.insert(part.sha256.clone(), ImageData::new(bytes.to_vec()));
            }
        }
        Ok(())
    }

    /// `request` with the bytes of every image it references; borrowed
    /// when it has them all.
    pub(super) fn loaded<'a>(&mut self, request: &'a ModelRequest) -> Cow<'a, ModelRequest> {
        let missing = request.items.iter().flat_map(item_images).any(|p| p.data.bytes().is_none());
        if !missing {
            return Cow::Borrowed(request);
        }
        let mut request = request.clone();
        for item in &mut request.items {
            for part in item_images_mut(item) {
                if part.data.bytes().is_none() {
                    part.data = self.bytes_of(part);
                }
            }
        }
        Cow::Owned(request)
    }

    fn bytes_of(&mut self, part: &ImagePart) -> ImageData {
        if let Some(data) = self.loaded.get(&part.sha256) {
            return data.clone();
        }
        match self.store.load(part) {
            Some(data) => {
                self.loaded.insert(part.sha256.clone(), data.clone());
                data
            }
            None => {
                tracing::warn!(sha256 = %part.sha256, "an image of the log is not in the store");
                ImageData::default()
            }
        }
    }
}

fn images_of(event: &SessionEvent) -> &[ImagePart] {
    if let SessionEvent::UserMessage { images, .. } | SessionEvent::InputQueued { images, .. } =
        event
    {
        return images;
    }
    if let SessionEvent::ToolCallFinished { result, .. } = event {
        return &result.images;
    }
    &[]
}

fn item_images(item: &Item) -> &[ImagePart] {
    match item {
        Item::User { images, .. } => images,
        Item::ToolResult(result) => &result.images,
        Item::Assistant { .. } | Item::Reasoning(_) | Item::ToolCall(_) | Item::Context { .. } => {
            &[]
        }
    }
}

fn item_images_mut(item: &mut Item) -> &mut [ImagePart] {
    match item {
        Item::User { images, .. } => images,
        Item::ToolResult(result) => &mut result.images,
        Item::Assistant { .. } | Item::Reasoning(_) | Item::ToolCall(_) | Item::Context { .. } => {
            &mut []
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolResult;
    use crate::support::images::{prepare, test_png};

    fn request(part: ImagePart) -> ModelRequest {
        let result = ToolResult { images: vec![part], ..ToolResult::ok("c1", "read") };
        ModelRequest {
            model: "m".into(),
            instructions: String::new(),
            items: vec![Item::ToolResult(result)],
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn a_rebuilt_reference_gets_its_bytes_back_from_the_store() {
        let home = tempfile::tempdir().unwrap();
        let part = prepare(&test_png(6, 4), "x.png").unwrap();
        let event = SessionEvent::UserMessage {
            text: "see".into(),
            images: vec![part.clone()],
            queued: None,
        };
        SessionImages::new(home.path()).keep(&event).unwrap();
        // A new process: nothing in memory, a reference from the log.
        let line = serde_json::to_string(&part).unwrap();
        let reference: ImagePart = serde_json::from_str(&line).unwrap();
        let mut images = SessionImages::new(home.path());
        let request = request(reference);
        let loaded = images.loaded(&request);
        let Item::ToolResult(result) = &loaded.items[0] else { panic!() };
        assert_eq!(result.images[0].data.bytes(), part.data.bytes());
    }

    #[test]
    fn a_request_with_its_bytes_is_not_copied() {
        let home = tempfile::tempdir().unwrap();
        let part = prepare(&test_png(6, 4), "x.png").unwrap();
        let request = request(part);
        assert!(matches!(SessionImages::new(home.path()).loaded(&request), Cow::Borrowed(_)));
    }
}
