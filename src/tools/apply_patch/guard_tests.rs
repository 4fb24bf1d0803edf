//! `apply_patch` in a session: the read-before-write guard `edit_file` has
//! (an unread or changed file is refused with its message) and the diff in
//! the result.

use serde_json::json;

use super::ApplyPatch;
use crate::tools::ToolError;
use crate::tools::read_file::ReadFile;
use crate::tools::testutil::TestWorkspace;

fn patch(body: &str) -> serde_json::Value {
    json!({ "patch": format!("*** Begin Patch\n{body}*** End Patch\n") })
}

async fn read(ws: &TestWorkspace, path: &str) {
    ws.run(&ReadFile, json!({ "path": path })).await.unwrap();
}

fn message(result: &Result<crate::protocol::ToolOutput, ToolError>) -> String {
    result.as_ref().err().map(ToString::to_string).unwrap_or_default()
}

#[tokio::test]
async fn add_over_an_unread_file_is_refused_then_allowed_after_reading_it() {
    let ws = TestWorkspace::new();
    ws.write("README.md", "the user's notes\n");
    let add = patch("*** Add File: README.md\n+replaced\n");
    let refused = ws.run(&ApplyPatch, add.clone()).await;
    assert!(message(&refused).contains("read it with read_file first"), "{refused:?}");
    assert_eq!(refused.as_ref().err().map(ToolError::kind), Some("conflict"));
    assert_eq!(ws.read("README.md"), "the user's notes\n");
    read(&ws, "README.md").await;
    let out = ws.run(&ApplyPatch, add).await.unwrap();
    assert!(out.text.contains("A README.md\n--- a/README.md"), "{}", out.text);
    assert!(out.text.contains("-the user's notes\n+replaced\n"), "{}", out.text);
    assert_eq!(ws.read("README.md"), "replaced\n");
}

#[tokio::test]
async fn add_of_a_new_file_needs_no_read_and_names_it() {
    let ws = TestWorkspace::new();
    let out = ws.run(&ApplyPatch, patch("*** Add File: new.txt\n+hello\n")).await.unwrap();
    assert_eq!(out.text, "Success. Updated the following files:\nA new.txt\n");
}

#[tokio::test]
async fn delete_of_an_unread_file_is_refused() {
    let ws = TestWorkspace::new();
    ws.write("keep.txt", "precious\n");
    let delete = patch("*** Delete File: keep.txt\n");
    let refused = ws.run(&ApplyPatch, delete.clone()).await;
    assert!(message(&refused).contains("read it with read_file first"), "{refused:?}");
    assert_eq!(ws.read("keep.txt"), "precious\n");
    read(&ws, "keep.txt").await;
    ws.run(&ApplyPatch, delete).await.unwrap();
    assert!(!ws.path("keep.txt").exists());
}

#[tokio::test]
async fn update_of_an_unread_or_changed_file_is_refused_and_a_read_one_shows_the_diff() {
    let ws = TestWorkspace::new();
    ws.write("calc.py", "def add(a, b):\n    return a - b\n");
    let update = patch(
        "*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n",
    );
    let unread = ws.run(&ApplyPatch, update.clone()).await;
    assert!(message(&unread).contains("read it with read_file first"), "{unread:?}");
    read(&ws, "calc.py").await;
    ws.write("calc.py", "def add(a, b):\n    return a - b\n# the user's line\n");
    let changed = ws.run(&ApplyPatch, update.clone()).await;
    assert!(message(&changed).contains("changed on disk since it was last read"), "{changed:?}");
    read(&ws, "calc.py").await;
    let out = ws.run(&ApplyPatch, update).await.unwrap();
    assert!(
        out.text.starts_with(
            "Success. Updated the following files:\nM calc.py\n--- a/calc.py\n+++ b/calc.py\n"
        ),
        "{}",
        out.text
    );
    assert!(out.text.contains("-    return a - b\n+    return a + b\n"), "{}", out.text);
    // The model's own patch keeps the file current: a second one needs no read.
    let again = patch("*** Update File: calc.py\n@@\n-    return a + b\n+    return b + a\n");
    ws.run(&ApplyPatch, again).await.unwrap();
}

#[tokio::test]
async fn a_move_onto_an_unread_file_is_refused() {
    let ws = TestWorkspace::new();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "the user's b\n");
    read(&ws, "a.txt").await;
    let moved = ws
        .run(&ApplyPatch, patch("*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+moved\n"))
        .await;
    assert!(message(&moved).contains("b.txt exists but has not been read"), "{moved:?}");
    assert_eq!(ws.read("b.txt"), "the user's b\n");
    assert_eq!(ws.read("a.txt"), "a\n");
}

#[tokio::test]
async fn the_diffs_of_a_long_patch_stay_bounded() {
    let ws = TestWorkspace::new();
    let mut body = String::new();
    for n in 0..8 {
        let name = format!("f{n}.txt");
        ws.write(&name, "x\n".repeat(4000));
        read(&ws, &name).await;
        body.push_str(&format!("*** Add File: {name}\n"));
        body.push_str(&"+y\n".repeat(4000));
    }
    let out = ws.run(&ApplyPatch, patch(&body)).await.unwrap();
    assert!(out.text.len() < super::MAX_PATCH_DIFF_BYTES + 2048, "{}", out.text.len());
    assert!(out.text.contains("read the file to see"), "{}", &out.text[out.text.len() - 300..]);
    assert_eq!(out.meta["truncated"], true);
}
