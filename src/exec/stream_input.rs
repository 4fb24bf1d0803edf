//! `keel exec --input-stream`: more prompts on stdin while the run goes on.
//!
//! Each stdin line is one JSON object:
//! `{"type":"user","text":"…","deliver":"queue"|"steer","images":[…]}`.
//! `queue` (the default) runs the text as a turn of its own after the
//! running one, in the order received; `steer` hands it to the running
//! turn, delivered after the current tool batch as a user message (with no
//! turn running, it starts the next one like `queue`). `images` (optional)
//! attaches pictures to that message, each `{"path":"shot.png"}` (beneath
//! the working folder or absolute, as `--image`) or `{"base64":"…"}` (the
//! file's bytes; the format is read from them). Blank lines are skipped; a
//! line that is not such an object, or whose image cannot be attached (none
//! for a model that takes none), is reported on stderr and skipped whole (a
//! script sees it did not count). Both kinds are logged when read
//! (`input_queued`, the images stored first) and delivered once; a resume
//! delivers what a crash left undelivered, images included.
//!
//! Invariants: stdin is read only by the task [`spawn`] starts, and what
//! it reads reaches the session only through its inbox
//! (`runtime::InputSender`); the run ends once stdin is at EOF, every
//! input read has run and no turn runs (`exec::run_turns`).

use std::io::Write;
use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::protocol::{Delivery, ImagePart};
use crate::runtime::InputSender;

/// One line of the stream.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum StreamLine {
    User {
        text: String,
        #[serde(default = "queue")]
        deliver: Delivery,
        #[serde(default)]
        images: Vec<StreamImage>,
    },
}

/// An image on a line: a file or its bytes.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum StreamImage {
    Path(PathBuf),
    Base64(String),
}

fn queue() -> Delivery {
    Delivery::Queue
}

/// One line's request.
#[derive(Debug, PartialEq, Eq)]
struct Typed {
    text: String,
    deliver: Delivery,
    images: Vec<StreamImage>,
}

/// What one line asks, or why it is skipped; `None` for a blank line.
fn parse(line: &str) -> Option<Result<Typed, String>> {
    if line.trim().is_empty() {
        return None;
    }
    Some(match serde_json::from_str::<StreamLine>(line) {
        Ok(StreamLine::User { text, .. }) if text.trim().is_empty() => {
            Err("the input's text is empty".to_owned())
        }
        Ok(StreamLine::User { text, deliver, images }) => Ok(Typed { text, deliver, images }),
        Err(error) => Err(format!(
            "not an input line ({error}); expected {{\"type\":\"user\",\"text\":\"…\",\
             \"deliver\":\"queue\"|\"steer\",\"images\":[{{\"path\":\"…\"}}|{{\"base64\":\"…\"}}]}}"
        )),
    })
}

/// What attaching a line's images needs to know.
#[derive(Debug, Clone)]
pub struct ImageContext {
    /// Where a relative `path` is read from.
    pub cwd: PathBuf,
    /// `None` when the model takes images, else why not (said on stderr).
    pub refused: Option<String>,
}

/// The line's images, prepared within the providers' limits, or why the
/// line is skipped.
fn prepare(images: Vec<StreamImage>, context: &ImageContext) -> Result<Vec<ImagePart>, String> {
    if images.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(why) = &context.refused {
        return Err(why.clone());
    }
    images
        .into_iter()
        .enumerate()
        .map(|(index, image)| match image {
            StreamImage::Path(path) => crate::support::images::from_file(&context.cwd.join(&path))
                .map_err(|error| format!("cannot attach {}: {error}", path.display())),
            StreamImage::Base64(data) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data.trim())
                    .map_err(|error| format!("image {}: not base64 ({error})", index + 1))?;
                crate::support::images::prepare(&bytes, &format!("image-{}", index + 1))
                    .map_err(|error| format!("image {}: {error}", index + 1))
            }
        })
        .collect()
}

/// Reads stdin line by line into `sender` until EOF (then the sender is
/// dropped, which ends the session's wait for more).
pub fn spawn(sender: InputSender, context: ImageContext) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        let mut number = 0u64;
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(error) => {
                    let _ = writeln!(std::io::stderr().lock(), "keel: cannot read stdin: {error}");
                    return;
                }
            };
            number += 1;
            let typed = match parse(&line) {
                Some(Ok(typed)) => {
                    let context = context.clone();
                    let Typed { text, deliver, images } = typed;
                    // Decoding and scaling a picture is CPU work: off the runtime's threads.
                    let prepared = tokio::task::spawn_blocking(move || prepare(images, &context))
                        .await
                        .unwrap_or_else(|error| Err(format!("cannot attach the images: {error}")));
                    Some(prepared.map(|images| (text, deliver, images)))
                }
                Some(Err(why)) => Some(Err(why)),
                None => None,
            };
            let delivered = match typed {
                None => true,
                Some(Ok((text, mode, images))) => sender.send_with_images(text, mode, images),
                Some(Err(why)) => {
                    let _ = writeln!(
                        std::io::stderr().lock(),
                        "keel: --input-stream line {number} skipped: {why}"
                    );
                    true
                }
            };
            if !delivered {
                // The session is gone: nothing more is read.
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_their_delivery_and_default_to_the_queue() {
        let typed = |text: &str, deliver| Typed { text: text.into(), deliver, images: Vec::new() };
        assert_eq!(
            parse(r#"{"type":"user","text":"go on","deliver":"steer"}"#),
            Some(Ok(typed("go on", Delivery::Steer)))
        );
        assert_eq!(
            parse(r#"{"type":"user","text":"next"}"#),
            Some(Ok(typed("next", Delivery::Queue)))
        );
        let with_images =
            r#"{"type":"user","text":"see","images":[{"path":"a.png"},{"base64":"AA=="}]}"#;
        assert_eq!(
            parse(with_images).unwrap().unwrap().images,
            [StreamImage::Path("a.png".into()), StreamImage::Base64("AA==".into())]
        );
        assert_eq!(parse("   "), None);
        for bad in [
            "plain words",
            r#"{"type":"user"}"#,
            r#"{"type":"user","text":"x","deliver":"later"}"#,
            r#"{"type":"user","text":"  "}"#,
            r#"{"type":"other","text":"x"}"#,
            r#"{"type":"user","text":"x","images":["a.png"]}"#,
            r#"{"type":"user","text":"x","images":[{"url":"a.png"}]}"#,
        ] {
            assert!(matches!(parse(bad), Some(Err(_))), "{bad}");
        }
    }

    #[test]
    fn a_line_whose_image_cannot_be_attached_is_refused_with_the_reason() {
        let folder = tempfile::tempdir().unwrap();
        let context = ImageContext { cwd: folder.path().into(), refused: None };
        let png = crate::support::images::test_png(4, 3);
        std::fs::write(folder.path().join("shot.png"), &png).unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(&png);
        let images = vec![StreamImage::Path("shot.png".into()), StreamImage::Base64(encoded)];
        let prepared = prepare(images, &context).unwrap();
        assert_eq!(prepared.len(), 2);
        assert_eq!(prepared[0].sha256, prepared[1].sha256, "the same bytes either way");

        let missing = prepare(vec![StreamImage::Path("gone.png".into())], &context).unwrap_err();
        assert!(missing.starts_with("cannot attach gone.png: cannot read"), "{missing}");
        let junk = prepare(vec![StreamImage::Base64("%%".into())], &context).unwrap_err();
        assert!(junk.contains("image 1: not base64"), "{junk}");
        let text = base64::engine::general_purpose::STANDARD.encode("hello");
        let not_image = prepare(vec![StreamImage::Base64(text)], &context).unwrap_err();
        assert!(not_image.contains("not a PNG, JPEG, GIF or WebP"), "{not_image}");
        let blind = ImageContext { refused: Some("`m` does not take images".into()), ..context };
        let refused = prepare(vec![StreamImage::Path("shot.png".into())], &blind).unwrap_err();
        assert_eq!(refused, "`m` does not take images");
    }
}
