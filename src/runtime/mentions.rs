//! `@path` in a prompt attaches the file (or a folder's listing) to it, as
//! Claude Code and Codex do: the model gets the text of the prompt, then
//! each mentioned file in an `<attached path="…">` block; an image (PNG,
//! JPEG, GIF, WebP by its bytes) goes as an image part of the prompt,
//! prepared like `--image` (`support::images`). Used by the TUI's driver
//! and by `keel exec` (`Session::attach_prompt_mentions`).
//!
//! Confined like `read_file`: the path is resolved and confined to the
//! workspace by `tools::paths::Workspace` (a path leading outside, by `..`
//! or a symlink, is refused), opened beneath the root without following a
//! symlink (`support::beneath`), and judged by keel's secret protection
//! (`hooks::ProtectSecrets` as for a `read_file` call, with the session's
//! secret places; the user's `[secrets] allow_files` is not applied here,
//! so a mention never reveals more than `read_file` would). Binary files
//! other than images are refused. Bounded: at most [`MAX_MENTIONS`] mentions,
//! [`MAX_FILE_BYTES`] of one file (a cut file says so) and
//! [`MAX_LISTING`] entries of a folder. What was not attached, and why, is
//! told to the user; the prompt is still sent. `@server:uri` (an MCP
//! resource) is left here: `mcp::resource` inlines it.
//!
//! Invariant: runs in a front end's driver or before the turn (it reads
//! files), never changes a file.

use std::io::Read;
use std::path::Path;

use crate::hooks::ProtectSecrets;
use crate::policy::links::PathLinks;
use crate::policy::secret_places::SecretPlaces;
use crate::protocol::{ImagePart, tool_facts};
use crate::tools::paths::Workspace;

/// Most mentions attached from one prompt.
pub const MAX_MENTIONS: usize = 10;
/// Most bytes of one file attached.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Most entries of a folder listed.
pub const MAX_LISTING: usize = 200;

/// What attaching did: the text to send, the images mentioned, and a line
/// per mention for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Attached {
    pub prompt: String,
    pub images: Vec<ImagePart>,
    pub notes: Vec<String>,
}

/// Why a mention naming no file was not attached: `keel exec` says
/// nothing of it (`@alice` in a prompt is a person, not a file).
const NOT_FOUND: &str = "no such file or folder";

/// One mention's contents.
enum Body {
    Text(String),
    Image(ImagePart),
}

/// The words of `text` that mention a path (`@word`, trailing punctuation
/// removed; `@server:uri` left out), in order, each once.
pub fn mentions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else { continue };
        let path = path.trim_end_matches([',', ';', ':', ')', '!', '?', '"', '\'']);
        if path.is_empty() || path.contains(':') || found.iter().any(|known| known == path) {
            continue;
        }
        found.push(path.to_owned());
    }
    found
}

/// `text` with every mentioned file attached (see the module doc).
pub fn attach(text: &str, root: &Path, cwd: &Path, places: &SecretPlaces, home: &Path) -> Attached {
    let mut prompt = text.to_owned();
    let mut images = Vec::new();
    let mut notes = Vec::new();
    let wanted = mentions(text);
    if wanted.is_empty() {
        return Attached { prompt, images, notes };
    }
    let workspace = match Workspace::from_parts(root, cwd) {
        Ok(workspace) => workspace,
        Err(error) => {
            notes.push(format!("no file attached: {error}"));
            return Attached { prompt, images, notes };
        }
    };
    let guard = ProtectSecrets::new(&[])
        .map(|guard| guard.with_places(places.clone(), home.to_owned()))
        .ok();
    for (n, raw) in wanted.iter().enumerate() {
        if n == MAX_MENTIONS {
            notes.push(format!("not attached: more than {MAX_MENTIONS} mentions"));
            break;
        }
        match read_mention(&workspace, guard.as_ref(), raw) {
            Ok((Body::Text(body), note)) => {
                prompt.push_str(&format!("\n\n<attached path=\"{raw}\">\n{body}\n</attached>"));
                notes.push(note);
            }
            Ok((Body::Image(image), note)) => {
                images.push(image);
                notes.push(note);
            }
            Err(why) => notes.push(format!("@{raw} not attached: {why}")),
        }
    }
    Attached { prompt, images, notes }
}

/// One mention's body and the note for the user, or why it was refused.
fn read_mention(
    workspace: &Workspace,
    guard: Option<&ProtectSecrets>,
    raw: &str,
) -> Result<(Body, String), String> {
    let Some(guard) = guard else { return Err("secret protection is unavailable".into()) };
    let input = serde_json::json!({ "path": raw });
    let cwd = workspace.cwd().to_string_lossy().into_owned();
    if let Some((_, file)) =
        guard.first_secret(&tool_facts::READ_FILE, &input, &cwd, &PathLinks::default())
    {
        return Err(format!("{file} is a secret file (keel's secret protection)"));
    }
    let path = workspace.resolve(raw).map_err(|error| error.to_string())?;
    let shown = workspace.display(&path);
    // The resolved path may be a secret by where it leads.
    let resolved = serde_json::json!({ "path": path.to_string_lossy() });
    if guard.first_secret(&tool_facts::READ_FILE, &resolved, &cwd, &PathLinks::default()).is_some()
    {
        return Err(format!("{shown} is a secret file (keel's secret protection)"));
    }
    let meta = std::fs::symlink_metadata(&path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => NOT_FOUND.to_owned(),
        _ => error.to_string(),
    })?;
    if meta.is_dir() {
        return Ok((Body::Text(listing(&path)?), format!("attached the listing of {shown}/")));
    }
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let file = crate::support::beneath::open_beneath(workspace.root(), &path)
        .map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    let mut file = file.take(MAX_FILE_BYTES + 1);
    file.read_to_end(&mut bytes).map_err(|error| error.to_string())?;
    if crate::support::images::sniff(&bytes).is_some() {
        // The rest of the picture, as far as an image may go.
        let mut rest = file.into_inner().take(crate::support::images::MAX_INPUT_BYTES);
        rest.read_to_end(&mut bytes).map_err(|error| error.to_string())?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let image =
            crate::support::images::prepare(&bytes, &name).map_err(|error| error.to_string())?;
        return Ok((Body::Image(image), format!("attached the image {shown}")));
    }
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return Err("a binary file".into());
    }
    let cut = bytes.len() as u64 > MAX_FILE_BYTES;
    bytes.truncate(MAX_FILE_BYTES as usize);
    let mut body = String::from_utf8_lossy(&bytes).into_owned();
    let note = if cut {
        body.push_str(&format!(
            "\n[cut at {} KiB of {} KiB: read_file reads the rest]",
            MAX_FILE_BYTES / 1024,
            meta.len() / 1024
        ));
        format!("attached the first {} KiB of {shown}", MAX_FILE_BYTES / 1024)
    } else {
        format!("attached {shown} ({} bytes)", bytes.len())
    };
    Ok((Body::Text(body), note))
}

impl super::Session {
    /// `keel exec`'s prompt with its `@path` mentions attached (see the
    /// module doc): each one not attached is a warning; images go with the
    /// turn, or, for a model that takes none, are a warning too.
    pub fn attach_prompt_mentions(&mut self, text: String) -> String {
        if mentions(&text).is_empty() {
            return text;
        }
        let settings = self.settings.clone();
        let attached =
            attach(&text, &self.workspace_root, &self.cwd, &settings.secret_places, &settings.home);
        // What was attached needs no word; what was not does.
        let said = |note: &String| !note.starts_with("attached") && !note.ends_with(NOT_FOUND);
        for note in attached.notes.into_iter().filter(said) {
            self.sink.emit(super::RuntimeEvent::Warning { message: note });
        }
        if !attached.images.is_empty() {
            let count = attached.images.len();
            if let Err(refused) = self.attach_images(attached.images) {
                let message = format!("{count} mentioned image(s) not attached: {refused}");
                self.sink.emit(super::RuntimeEvent::Warning { message });
            }
        }
        attached.prompt
    }
}

/// A folder's entries, sorted, folders with a trailing `/`.
fn listing(dir: &Path) -> Result<String, String> {
    let entries = std::fs::read_dir(dir).map_err(|error| error.to_string())?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_LISTING);
    if total > MAX_LISTING {
        names.push(format!("[{} more entries not listed]", total - MAX_LISTING));
    }
    Ok(names.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attach_in(root: &Path, text: &str) -> Attached {
        let home = Path::new("/nonexistent-home");
        attach(text, root, root, &SecretPlaces::for_home(home), home)
    }

    #[test]
    fn mentions_are_words_starting_with_at() {
        assert_eq!(
            mentions("see @calc.py, and @src/ not a@b @db:res @calc.py"),
            ["calc.py", "src/"]
        );
    }

    #[test]
    fn a_file_and_a_folder_are_attached() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").unwrap();
        let attached = attach_in(dir.path(), "fix @calc.py and look at @src");
        assert!(
            attached.prompt.starts_with(
                "fix @calc.py and look at @src\n\n<attached path=\"calc.py\">\ndef add"
            ),
            "{}",
            attached.prompt
        );
        assert!(
            attached.prompt.contains("<attached path=\"src\">\nmain.rs\n</attached>"),
            "{}",
            attached.prompt
        );
        assert_eq!(attached.notes.len(), 2, "{:?}", attached.notes);
    }

    #[test]
    fn secrets_outside_paths_and_binaries_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "API_KEY=sk-live-1234\n").unwrap();
        std::fs::write(dir.path().join("blob.bin"), b"\x00\x01\x02").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.txt"), "outside\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("x.txt"), dir.path().join("link.txt"))
            .unwrap();
        let attached = attach_in(dir.path(), "@.env @../../etc/passwd @blob.bin @link.txt");
        assert!(!attached.prompt.contains("sk-live"), "{}", attached.prompt);
        assert!(!attached.prompt.contains("root:"), "{}", attached.prompt);
        assert!(!attached.prompt.contains("outside"), "{}", attached.prompt);
        assert!(!attached.prompt.contains("<attached"), "{}", attached.prompt);
        assert_eq!(attached.notes.len(), 4, "{:?}", attached.notes);
        assert!(
            attached.notes.iter().all(|note| note.contains("not attached")),
            "{:?}",
            attached.notes
        );
    }

    #[test]
    fn a_mentioned_png_is_an_image_part_not_a_refused_binary() {
        let dir = tempfile::tempdir().unwrap();
        let png = crate::support::images::test_png(12, 9);
        std::fs::write(dir.path().join("shot.png"), &png).unwrap();
        let attached = attach_in(dir.path(), "describe @shot.png");
        assert_eq!(attached.prompt, "describe @shot.png");
        assert_eq!(attached.images.len(), 1, "{:?}", attached.notes);
        assert_eq!(attached.images[0].media_type, crate::protocol::ImageMediaType::Png);
        assert_eq!(attached.notes, ["attached the image shot.png"]);
    }

    #[test]
    fn a_big_file_is_cut_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(200_000)).unwrap();
        let attached = attach_in(dir.path(), "@big.txt");
        assert!(attached.prompt.len() < 70_000);
        assert!(
            attached.prompt.contains("[cut at 64 KiB of 195 KiB"),
            "{}",
            &attached.prompt[attached.prompt.len() - 80..]
        );
    }
}
