//! A cut command output kept whole for the session (`session::KeptOutputs`):
//! the shell result names it, `read_file` reads exactly that session's
//! folder, and nothing writes there.

use std::os::unix::fs::symlink;
use std::sync::Arc;

use serde_json::json;

use super::apply_patch::ApplyPatch;
use super::edit_file::EditFile;
use super::process_output::ProcessOutput;
use super::read_file::ReadFile;
use super::shell::Shell;
use super::testutil::TestWorkspace;
use super::write_file::WriteFile;
use super::{MAX_OUTPUT_BYTES, ToolError};
use crate::display::{KnownSecret, SecretMask};
use crate::session::KeptOutputs;

/// A workspace whose context keeps outputs for session `s-1` under a home
/// of its own, masking `canary-secret-1`.
fn keeping(home: &tempfile::TempDir) -> TestWorkspace {
    let mut ws = TestWorkspace::new();
    let mask = SecretMask::new(&[KnownSecret::new("TOKEN", "canary-secret-1")]).unwrap();
    let kept = KeptOutputs::new(home.path(), "s-1", Arc::new(mask));
    ws.ctx = ws.ctx.clone().with_kept(Arc::new(kept));
    ws.ctx.call_id = "call_7".into();
    ws
}

/// 40 000 numbered lines (about 1.2 MB) with a marker line in the middle.
const LONG: &str = "for i in $(seq 1 40000); do if [ $i = 20000 ]; then echo MIDDLE-MARKER; fi; \
                    printf 'line %05d of the build log ..........\\n' $i; done";

/// The kept path a cut result names.
fn kept_path(text: &str) -> String {
    let note = text.lines().next().unwrap_or_default();
    let start = note.find("is kept in ").map(|at| at + "is kept in ".len());
    let start = start.unwrap_or_else(|| panic!("no kept path in {note}"));
    note[start..].split(": read_file").next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_cut_output_is_kept_whole_and_read_file_finds_its_middle() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    let out = ws.run(&Shell, json!({ "command": LONG })).await.unwrap();
    assert!(out.text.len() < MAX_OUTPUT_BYTES + 600, "{}", out.text.len());
    assert!(!out.text.contains("MIDDLE-MARKER"), "the middle is cut for the model");
    let path = kept_path(&out.text);
    assert!(out.text.contains(" bytes, 40001 lines) is kept in "), "{}", &out.text[..300]);
    assert_eq!(out.meta["kept_output"], path.as_str());
    assert!(path.starts_with(&home.path().join("outputs/s-1").display().to_string()), "{path}");
    let found = ws.run(&ReadFile, json!({ "path": path, "offset": 19990, "limit": 20 })).await;
    let found = found.unwrap();
    assert!(found.text.contains("MIDDLE-MARKER"), "{}", found.text);
}

#[tokio::test]
async fn an_output_that_fits_is_not_kept() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    let out = ws.run(&Shell, json!({ "command": "seq 1 10" })).await.unwrap();
    assert!(out.meta.get("kept_output").is_none(), "{:?}", out.meta);
    assert!(!home.path().join("outputs").exists());
}

#[tokio::test]
async fn the_kept_copy_is_masked_like_the_result() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    let command = "echo canary-secret-1; seq 1 40000; echo canary-secret-1 >&2";
    let out = ws.run(&Shell, json!({ "command": command })).await.unwrap();
    let kept = std::fs::read_to_string(kept_path(&out.text)).unwrap();
    assert!(!kept.contains("canary-secret-1"), "kept unmasked");
    assert_eq!(kept.matches("[redacted: TOKEN]").count(), 2);
}

#[tokio::test]
async fn another_session_s_outputs_and_the_rest_of_keel_home_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    // Both sessions have logs (else the first to keep removes the other's).
    std::fs::create_dir_all(home.path().join("sessions")).unwrap();
    for id in ["s-1", "s-2"] {
        std::fs::write(home.path().join(format!("sessions/{id}.jsonl")), "").unwrap();
    }
    let other = KeptOutputs::new(home.path(), "s-2", Arc::default()).keep("c", "theirs").unwrap();
    std::fs::write(home.path().join("config.toml"), "x = 1").unwrap();
    ws.run(&Shell, json!({ "command": "seq 1 40000" })).await.unwrap();
    let ours = home.path().join("outputs/s-1");
    for path in [
        other.path.clone(),
        ours.join("../s-2").join(other.path.file_name().unwrap()),
        ours.join("../../config.toml"),
        home.path().join("config.toml"),
    ] {
        let read = ws.run(&ReadFile, json!({ "path": path })).await;
        assert!(matches!(read, Err(ToolError::OutsideWorkspace { .. })), "{path:?}: {read:?}");
    }
    // A symlink in the folder does not lead out of it.
    assert!(other.path.exists(), "another live session's outputs stay");
    symlink(home.path().join("config.toml"), ours.join("link.txt")).unwrap();
    let read = ws.run(&ReadFile, json!({ "path": ours.join("link.txt") })).await;
    assert!(read.is_err(), "{read:?}");
}

#[tokio::test]
async fn nothing_writes_in_the_kept_outputs() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    let out = ws.run(&Shell, json!({ "command": "seq 1 40000" })).await.unwrap();
    let path = kept_path(&out.text);
    ws.run(&ReadFile, json!({ "path": path })).await.unwrap();
    let before = std::fs::read_to_string(&path).unwrap();
    let fresh = format!("{}/new.txt", home.path().join("outputs/s-1").display());
    let writes = [
        ws.run(&WriteFile, json!({ "path": path, "content": "x" })).await,
        ws.run(&WriteFile, json!({ "path": fresh, "content": "x" })).await,
        ws.run(&EditFile, json!({ "path": path, "old_string": "1", "new_string": "2" })).await,
        ws.run(
            &ApplyPatch,
            json!({ "patch": format!("*** Begin Patch\n*** Delete File: {path}\n*** End Patch") }),
        )
        .await,
    ];
    for write in writes {
        assert!(write.is_err(), "{write:?}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    assert!(!std::path::Path::new(&fresh).exists());
}

/// Every result of a background process until it is gone: its start's
/// and then `process_output`'s.
async fn read_to_the_end(ws: &TestWorkspace, command: &str) -> Vec<crate::protocol::ToolOutput> {
    let args = json!({ "command": command, "background": true });
    let mut results = vec![ws.run(&Shell, args).await.unwrap()];
    while results.last().is_some_and(|out| out.meta["background"]["status"] == "running") {
        let id = results[0].meta["background"]["id"].clone();
        let read = ws.run(&ProcessOutput, json!({ "id": id, "wait_ms": 2000 })).await;
        results.push(read.unwrap());
    }
    results
}

#[tokio::test]
async fn a_background_read_longer_than_the_model_s_share_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let ws = keeping(&home);
    let results = read_to_the_end(&ws, "seq 1 20000; echo MIDDLE-MARKER; seq 1 20000").await;
    let shown: String = results.iter().map(|out| out.text.as_str()).collect();
    let kept: Vec<String> = results
        .iter()
        .filter_map(|out| out.meta.get("kept_output").and_then(|p| p.as_str()).map(str::to_owned))
        .collect();
    assert!(!kept.is_empty(), "nothing kept: {}", &shown[..300]);
    assert!(shown.contains("older bytes of this read are not shown; all of it ("), "{shown:.300}");
    let mut found = shown.contains("MIDDLE-MARKER");
    for path in kept {
        let read = ws.run(&ReadFile, json!({ "path": path, "limit": 100000 })).await.unwrap();
        found |= read.text.contains("MIDDLE-MARKER");
    }
    assert!(found, "the marker is shown or kept");
    for out in results {
        assert!(out.text.len() < MAX_OUTPUT_BYTES + 1000, "{}", out.text.len());
    }
}

#[tokio::test]
async fn binary_output_of_a_background_process_is_summarised() {
    let ws = TestWorkspace::new();
    let results = read_to_the_end(&ws, "printf '\\177ELF\\002\\001\\000\\000\\377\\376'").await;
    let shown: String = results.iter().map(|out| out.text.as_str()).collect();
    assert!(shown.contains("[binary output, about"), "{shown}");
    assert!(!shown.contains('\u{fffd}'), "{shown}");
}
