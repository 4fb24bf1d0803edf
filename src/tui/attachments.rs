//! Images attached to the prompt being typed: a pasted (or dropped: the
//! terminal pastes the path) path of an existing image file becomes an
//! attachment, shown as a chip (`[image: shot.png 120 KB]`) on the input
//! box, and goes with the next prompt (`Command::SubmitImages`).
//!
//! Invariants: only a paste that is one path, nothing else, of a regular
//! file whose bytes are a PNG, JPEG, GIF or WebP attaches; anything else is
//! typed text as before. The image is prepared within the providers'
//! limits when pasted (`support::images`); one that cannot be is said in
//! the hint and attaches nothing. Ctrl+V attaches the clipboard's own
//! image (a screenshot tool's copy), read by the desktop's clipboard tool
//! in `sandbox::clipboard` (`wl-paste`, `xclip`; the hint says when there
//! is none or the clipboard holds no image).

use std::path::{Path, PathBuf};

use super::app::App;
use crate::protocol::{ImagePart, human_size};
use crate::support::images;

/// The images waiting for the next prompt.
#[derive(Debug, Default)]
pub struct Attachments {
    images: Vec<ImagePart>,
}

impl Attachments {
    pub fn is_empty(&self) -> bool {
        self.images.is_empty()
    }

    /// The images, for the prompt being sent.
    pub fn take(&mut self) -> Vec<ImagePart> {
        std::mem::take(&mut self.images)
    }

    /// `[image: shot.png 120 KB] [image: …]`.
    pub fn chips(&self) -> String {
        chips(&self.images)
    }
}

/// The chips of `images`, space-separated.
pub fn chips(images: &[ImagePart]) -> String {
    let chip = |image: &ImagePart| format!("[image: {} {}]", image.name, human_size(image.bytes));
    images.iter().map(chip).collect::<Vec<_>>().join(" ")
}

/// Attaches the clipboard's image (Ctrl+V), or says why there is none.
pub fn attach_clipboard(app: &mut App, image: Result<ImagePart, String>) {
    match image {
        Ok(image) => {
            app.hint = Some(format!("attached {}", chips(std::slice::from_ref(&image))));
            app.attachments.images.push(image);
        }
        Err(why) => app.hint = Some(why),
    }
}

/// Attaches the image `text` names, if it names one; `false`: `text` is
/// to be typed.
pub fn attach_pasted(app: &mut App, text: &str) -> bool {
    let Some(path) = image_path(text) else { return false };
    match images::from_file(&path) {
        Ok(image) => {
            app.hint = Some(format!("attached {}", chips(std::slice::from_ref(&image))));
            app.attachments.images.push(image);
        }
        Err(error) => app.hint = Some(format!("cannot attach {}: {error}", path.display())),
    }
    true
}

/// The path of an image file `text` is, as terminals paste a dropped file:
/// plain, quoted, with `\ ` escapes, or a `file://` URL.
pub fn image_path(text: &str) -> Option<PathBuf> {
    let text = text.trim();
    if text.is_empty() || text.contains(['\n', '\r']) {
        return None;
    }
    let unquoted = ['\'', '"']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .unwrap_or(text);
    let path = match unquoted.strip_prefix("file://") {
        Some(url) => percent_decoded(url)?,
        None => unquoted.replace("\\ ", " "),
    };
    let path = PathBuf::from(path);
    is_image_file(&path).then_some(path)
}

fn is_image_file(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else { return false };
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(16);
    file.take(16).read_to_end(&mut head).is_ok() && images::sniff(&head).is_some()
}

/// `%20` and friends of a `file://` URL's path.
fn percent_decoded(url: &str) -> Option<String> {
    let mut out = Vec::with_capacity(url.len());
    let mut bytes = url.bytes();
    while let Some(byte) = bytes.next() {
        if byte != b'%' {
            out.push(byte);
            continue;
        }
        let hex = [bytes.next()?, bytes.next()?];
        out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tui::app::{Command, Msg, update};
    use crate::tui::theme::Theme;

    fn shot(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, images::test_png(20, 10)).unwrap();
        path
    }

    #[test]
    fn a_pasted_image_path_becomes_a_chip_and_goes_with_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let path = shot(dir.path(), "shot one.png");
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        let escaped = path.display().to_string().replace(' ', "\\ ");
        update(&mut app, Msg::Paste(escaped));
        assert_eq!(app.editor.text(), "", "the path is not typed");
        let chip = app.attachments.chips();
        assert!(chip.starts_with("[image: shot one.png ") && chip.ends_with(" B]"), "{chip}");
        update(&mut app, Msg::Paste("what is wrong here?".into()));
        let commands = super::super::keys::submit(&mut app);
        let [Command::SubmitImages { text, images }] = commands.as_slice() else {
            panic!("{commands:?}")
        };
        assert_eq!(text, "what is wrong here?");
        assert_eq!(images.len(), 1);
        assert!(app.attachments.is_empty());
    }

    #[test]
    fn an_image_pasted_while_a_turn_runs_goes_with_the_queued_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = shot(dir.path(), "shot.png");
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        crate::tui::view_tests::runtime(
            &mut app,
            crate::runtime::RuntimeEvent::TurnStarted { turn: 1 },
        );
        update(&mut app, Msg::Paste(path.display().to_string()));
        update(&mut app, Msg::Paste("and this one".into()));
        let commands = super::super::keys::submit(&mut app);
        let [Command::TypeDuringTurn { text, images, .. }] = commands.as_slice() else {
            panic!("{commands:?}")
        };
        assert_eq!(text, "and this one");
        assert_eq!(images.len(), 1, "the image goes with the queued text, not a later prompt");
        assert!(app.attachments.is_empty());
        assert!(
            app.hint.as_deref().unwrap_or("").starts_with("queued with 1 image"),
            "{:?}",
            app.hint
        );
    }

    #[test]
    fn the_chip_shows_on_the_input_box() {
        let dir = tempfile::tempdir().unwrap();
        let path = shot(dir.path(), "shot.png");
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        update(&mut app, Msg::Paste(path.display().to_string()));
        update(&mut app, Msg::Paste("why is the button grey?".into()));
        app.hint = None;
        insta::assert_snapshot!(crate::tui::view_tests::render(&app, 60, 8));
        // A tiny terminal draws without a panic.
        crate::tui::view_tests::render(&app, 8, 3);
    }

    #[test]
    fn other_pastes_are_typed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap();
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        let text_file = dir.path().join("notes.txt").display().to_string();
        update(&mut app, Msg::Paste(text_file.clone()));
        assert_eq!(app.editor.text(), text_file);
        assert!(app.attachments.is_empty());
        assert_eq!(image_path("/no/such/file.png"), None);
    }

    #[test]
    fn dropped_paths_come_quoted_escaped_or_as_urls() {
        let dir = tempfile::tempdir().unwrap();
        let path = shot(dir.path(), "a b.png");
        let plain = path.display().to_string();
        assert_eq!(image_path(&format!("'{plain}'")), Some(path.clone()));
        assert_eq!(image_path(&format!("{plain}\nmore")), None, "two lines are text");
        assert_eq!(image_path(&format!("\"{plain}\" ")), Some(path.clone()));
        assert_eq!(image_path(&format!("file://{}", plain.replace(' ', "%20"))), Some(path));
    }
}
