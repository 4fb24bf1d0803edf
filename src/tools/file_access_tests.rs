//! The file tools through a front end's [`FileAccess`] (an editor whose
//! buffers differ from the disk): what the model reads, what the editor
//! is asked and given, what the disk ends up holding.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::apply_patch::ApplyPatch;
use super::edit_file::EditFile;
use super::file_access::{ClientFiles, FileAccess, LineWindow};
use super::read_file::ReadFile;
use super::testutil::TestWorkspace;
use super::write_file::WriteFile;
use super::{ToolContext, ToolError};

/// An editor holding `buffers`, recording what it was asked.
#[derive(Default)]
struct Editor {
    buffers: Mutex<HashMap<PathBuf, String>>,
    reads: Mutex<Vec<(PathBuf, Option<LineWindow>)>>,
    writes: Mutex<Vec<(PathBuf, String)>>,
    /// Every call fails with this.
    broken: Option<String>,
    /// A write is also saved to disk, as Zed does.
    saves: bool,
}

impl FileAccess for Editor {
    fn reads(&self) -> bool {
        true
    }

    fn writes(&self) -> bool {
        true
    }

    fn read_text(&self, path: &Path, window: Option<LineWindow>) -> Result<String, String> {
        self.reads.lock().unwrap().push((path.to_owned(), window));
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        let buffers = self.buffers.lock().unwrap();
        let text = match buffers.get(path) {
            Some(text) => text.clone(),
            None => std::fs::read_to_string(path).map_err(|e| e.to_string())?,
        };
        Ok(match window {
            None => text,
            Some(LineWindow { line, limit }) => {
                text.split_inclusive('\n').skip(line as usize - 1).take(limit as usize).collect()
            }
        })
    }

    fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        self.writes.lock().unwrap().push((path.to_owned(), text.to_owned()));
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        self.buffers.lock().unwrap().insert(path.to_owned(), text.to_owned());
        if self.saves {
            std::fs::write(path, text).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// A workspace whose editor has `buffers` (relative path, text).
fn with_editor(buffers: &[(&str, &str)], editor: Editor) -> (TestWorkspace, Arc<Editor>) {
    let mut ws = TestWorkspace::new();
    let root = ws.canonical_root();
    ws.ctx = ToolContext::new(root.clone(), root.clone(), ws.ctx.cancel.clone());
    {
        let mut held = editor.buffers.lock().unwrap();
        for (rel, text) in buffers {
            held.insert(root.join(rel), (*text).to_owned());
        }
    }
    let editor = Arc::new(editor);
    let client = ClientFiles::new(editor.clone());
    ws.ctx = ws.ctx.clone().with_client_files(Some(client));
    (ws, editor)
}

#[tokio::test]
async fn read_file_shows_the_editors_unsaved_text_in_the_asked_window() {
    let (ws, editor) =
        with_editor(&[("a.txt", "one\ntwo\nthree\nfour\nfive\n")], Editor::default());
    ws.write("a.txt", "on disk\n");
    let all = ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    assert_eq!(all.text, "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n");
    assert_eq!(all.meta["total_lines"], 5);
    let part = ws.run(&ReadFile, json!({ "path": "a.txt", "offset": 2, "limit": 2 })).await;
    let part = part.unwrap();
    assert!(part.text.starts_with("     2\ttwo\n     3\tthree\n"), "{}", part.text);
    assert!(!part.text.contains("four"), "{}", part.text);
    assert!(part.text.contains("showing lines 2-3 (the file goes on)"), "{}", part.text);
    assert!(part.text.contains("offset=4"), "{}", part.text);
    assert_eq!(part.meta["total_lines"], serde_json::Value::Null);
    let tail = ws.run(&ReadFile, json!({ "path": "a.txt", "offset": 4, "limit": 10 })).await;
    assert_eq!(tail.unwrap().text, "     4\tfour\n     5\tfive\n");
    let abs = ws.canonical_root().join("a.txt");
    let asked: Vec<_> = editor.reads.lock().unwrap().clone();
    assert_eq!(
        asked,
        [
            (abs.clone(), Some(LineWindow { line: 1, limit: 2001 })),
            (abs.clone(), Some(LineWindow { line: 2, limit: 3 })),
            (abs, Some(LineWindow { line: 4, limit: 11 })),
        ]
    );
}

#[tokio::test]
async fn an_offset_past_the_editors_text_says_its_length() {
    let (ws, _editor) = with_editor(&[("a.txt", "one\ntwo\n")], Editor::default());
    ws.write("a.txt", "1\n2\n3\n4\n5\n6\n");
    let past = ws.run(&ReadFile, json!({ "path": "a.txt", "offset": 4 })).await;
    assert!(matches!(past, Err(ToolError::OffsetPastEnd { total_lines: 2, .. })), "{past:?}");
}

#[tokio::test]
async fn binary_images_and_paths_outside_are_never_asked_of_the_editor() {
    let (ws, editor) = with_editor(&[], Editor::default());
    ws.write("bin.dat", b"abc\0def");
    ws.write("pic.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let binary = ws.run(&ReadFile, json!({ "path": "bin.dat" })).await;
    assert!(matches!(binary, Err(ToolError::BinaryFile { .. })), "{binary:?}");
    let _image = ws.run(&ReadFile, json!({ "path": "pic.png" })).await;
    let outside = ws.run(&ReadFile, json!({ "path": "../elsewhere.txt" })).await;
    assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
    let escape = ws.run(&WriteFile, json!({ "path": "../x.txt", "content": "x" })).await;
    assert!(matches!(escape, Err(ToolError::OutsideWorkspace { .. })), "{escape:?}");
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), ws.path("out")).unwrap();
    let through = ws.run(&WriteFile, json!({ "path": "out/new.txt", "content": "x" })).await;
    assert!(matches!(through, Err(ToolError::OutsideWorkspace { .. })), "{through:?}");
    assert!(editor.reads.lock().unwrap().is_empty(), "{:?}", editor.reads.lock().unwrap());
    assert!(editor.writes.lock().unwrap().is_empty());
}

#[tokio::test]
async fn edit_file_edits_the_editors_text_and_gives_it_back_and_the_disk_holds_it() {
    let (ws, editor) =
        with_editor(&[("a.txt", "fn main() {\n    unsaved();\n}\n")], Editor::default());
    ws.write("a.txt", "fn main() {}\n");
    ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    let args = json!({ "path": "a.txt", "old_string": "unsaved();", "new_string": "saved();" });
    let out = ws.run(&EditFile, args).await.unwrap();
    assert!(out.text.contains("-    unsaved();\n+    saved();\n"), "{}", out.text);
    let wanted = "fn main() {\n    saved();\n}\n";
    let written = editor.writes.lock().unwrap().clone();
    assert_eq!(written, [(ws.canonical_root().join("a.txt"), wanted.to_owned())]);
    assert_eq!(ws.read("a.txt"), wanted, "the disk holds what the editor was given");
    // keel's own write is no outside change: the next edit goes on.
    let again = json!({ "path": "a.txt", "old_string": "saved();", "new_string": "done();" });
    ws.run(&EditFile, again).await.unwrap();
    assert_eq!(ws.read("a.txt"), "fn main() {\n    done();\n}\n");
}

#[tokio::test]
async fn a_write_the_editor_saved_itself_is_not_written_again() {
    let (ws, editor) = with_editor(&[], Editor { saves: true, ..Editor::default() });
    ws.write("a.txt", "old\n");
    ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    let before = std::fs::metadata(ws.path("a.txt")).unwrap();
    let out = ws.run(&WriteFile, json!({ "path": "a.txt", "content": "new\n" })).await.unwrap();
    assert!(out.text.contains("-old\n+new\n"), "{}", out.text);
    assert_eq!(editor.writes.lock().unwrap().len(), 1);
    use std::os::unix::fs::MetadataExt as _;
    let after = std::fs::metadata(ws.path("a.txt")).unwrap();
    assert_eq!(after.ino(), before.ino(), "keel did not replace the editor's saved file");
    assert_eq!(ws.read("a.txt"), "new\n");
}

#[tokio::test]
async fn a_failing_editor_is_a_tool_error_and_the_disk_stays() {
    let broken = Editor { broken: Some("no such buffer".into()), ..Editor::default() };
    let (ws, _editor) = with_editor(&[], broken);
    ws.write("a.txt", "keep\n");
    let read = ws.run(&ReadFile, json!({ "path": "a.txt" })).await;
    let message = read.as_ref().err().map(ToString::to_string).unwrap_or_default();
    assert!(matches!(read, Err(ToolError::Client { .. })), "{read:?}");
    assert!(message.contains("the editor could not read a.txt: no such buffer"), "{message}");
    let created = ws.run(&WriteFile, json!({ "path": "new.txt", "content": "x" })).await;
    assert_eq!(created.err().map(|e| e.kind()), Some("client_failed"));
    assert!(!ws.path("new.txt").exists(), "nothing written when the editor refused");
}

#[tokio::test]
async fn apply_patch_updates_the_editors_text() {
    let (ws, editor) = with_editor(&[("a.txt", "one\nbuffer\nthree\n")], Editor::default());
    ws.write("a.txt", "one\ndisk\nthree\n");
    ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n one\n-buffer\n+patched\n three\n\
                 *** Add File: b.txt\n+new\n*** End Patch\n";
    let out = ws.run(&ApplyPatch, json!({ "patch": patch })).await.unwrap();
    assert!(out.text.contains("-buffer\n+patched\n"), "{}", out.text);
    let written: Vec<String> = editor.writes.lock().unwrap().iter().map(|w| w.1.clone()).collect();
    assert_eq!(written, ["one\npatched\nthree\n", "new\n"]);
    assert_eq!(
        (ws.read("a.txt"), ws.read("b.txt")),
        ("one\npatched\nthree\n".into(), "new\n".into())
    );
}

#[tokio::test]
async fn an_edit_in_the_editor_after_the_models_read_is_a_conflict_until_read_again() {
    let (ws, editor) = with_editor(&[("a.txt", "seen\n")], Editor::default());
    ws.write("a.txt", "disk\n");
    ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    let abs = ws.canonical_root().join("a.txt");
    editor.buffers.lock().unwrap().insert(abs, "seen\ntyped by the user\n".into());
    let stale = ws.run(&WriteFile, json!({ "path": "a.txt", "content": "mine\n" })).await;
    let message = stale.as_ref().err().map(ToString::to_string).unwrap_or_default();
    assert!(matches!(stale, Err(ToolError::EditorChanged { .. })), "{stale:?}");
    assert!(message.contains("changed in the editor since it was last read"), "{message}");
    assert_eq!(stale.err().map(|e| e.kind()), Some("conflict"));
    assert!(editor.writes.lock().unwrap().is_empty(), "the user's text was not replaced");
    let edit = json!({ "path": "a.txt", "old_string": "seen", "new_string": "x" });
    assert!(matches!(ws.run(&EditFile, edit).await, Err(ToolError::EditorChanged { .. })));
    ws.run(&ReadFile, json!({ "path": "a.txt" })).await.unwrap();
    ws.run(&WriteFile, json!({ "path": "a.txt", "content": "mine\n" })).await.unwrap();
    assert_eq!(ws.read("a.txt"), "mine\n");
}

#[tokio::test]
async fn an_offset_past_what_acp_can_name_reads_the_whole_text_and_windows_it_here() {
    let (ws, editor) = with_editor(&[("a.txt", "one\n")], Editor::default());
    ws.write("a.txt", "one\n");
    let far = ws.run(&ReadFile, json!({ "path": "a.txt", "offset": 5_000_000_000u64 })).await;
    assert!(matches!(far, Err(ToolError::OffsetPastEnd { total_lines: 1, .. })), "{far:?}");
    let asked = editor.reads.lock().unwrap().clone();
    assert_eq!(asked.first().map(|read| read.1), Some(None), "{asked:?}");
}
