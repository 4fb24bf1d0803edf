//! Patches generated against files, applied through [`apply_patch_text`]
//! (the tool's own entry point, on a real temp workspace) and compared with
//! an independent model of the format's meaning; plus a fuzz target: any
//! patch-shaped text against any file never panics.
//!
//! The model: a file of distinct lines; each chunk rewrites one region
//! (its context lines kept, its removed lines replaced by its added ones),
//! regions in file order; a chunk with only added lines is appended at the
//! end of the file wherever it stands in the patch (Codex's rule); the
//! result ends with a newline and keeps the file's line ending.
//!
//! Runs `PROPTEST_CASES` cases (256 by default); `PROPTEST_CASES=100000
//! cargo test --lib fuzz_` runs every fuzz target longer (README).

use proptest::prelude::*;

use super::*;

/// One generated chunk.
#[derive(Debug, Clone)]
enum Edit {
    /// Rewrites lines `start..start + before + removed + after` of the file.
    Region { start: usize, before: usize, removed: usize, after: usize, added: Vec<String> },
    /// Only `+` lines: appended at the end of the file.
    Append(Vec<String>),
}

#[derive(Debug, Clone)]
struct Case {
    lines: Vec<String>,
    crlf: bool,
    final_newline: bool,
    edits: Vec<Edit>,
    /// Whether each region chunk names the line above it in its `@@` header.
    headers: Vec<bool>,
}

fn added_lines(tag: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z]{1,6}", 0..3).prop_map(move |words| {
        words.iter().enumerate().map(|(i, w)| format!("new {tag}.{i} {w}")).collect()
    })
}

/// Region sizes `(gap, before, removed, after)`; `gap` lines are skipped
/// between regions.
fn region_shape() -> impl Strategy<Value = (usize, usize, usize, usize)> {
    (0usize..4, 0usize..3, 0usize..3, 0usize..3)
        .prop_filter("a region anchors on at least one line", |(_, b, r, a)| b + r + a > 0)
}

fn case() -> impl Strategy<Value = Case> {
    let lines = prop::collection::vec("[a-z ]{0,8}", 0..30)
        .prop_map(|words| words.iter().enumerate().map(|(i, w)| format!("L{i} {w}")).collect());
    let edits = prop::collection::vec(
        prop_oneof![
            3 => (region_shape(), added_lines(0)).prop_map(|(shape, added)| (Some(shape), added)),
            1 => added_lines(1).prop_filter("an addition adds", |a| !a.is_empty()).prop_map(|a| (None, a)),
        ],
        1..6,
    );
    (lines, any::<bool>(), any::<bool>(), edits, prop::collection::vec(any::<bool>(), 6))
        .prop_map(|(lines, crlf, final_newline, shapes, headers)| {
            let lines: Vec<String> = lines;
            let mut edits = Vec::new();
            let mut at = 0;
            for (index, (shape, added)) in shapes.into_iter().enumerate() {
                let added: Vec<String> =
                    added.into_iter().map(|line| format!("{index} {line}")).collect();
                match shape {
                    None => edits.push(Edit::Append(added)),
                    Some((gap, before, removed, after)) => {
                        let start = at + gap;
                        if start + before + removed + after > lines.len() {
                            continue;
                        }
                        edits.push(Edit::Region { start, before, removed, after, added });
                        at = start + before + removed + after;
                    }
                }
            }
            Case { lines, crlf, final_newline, edits, headers }
        })
        .prop_filter("a patch has a chunk", |case| !case.edits.is_empty())
}

impl Case {
    fn file_text(&self) -> String {
        let ending = if self.crlf { "\r\n" } else { "\n" };
        let mut text = self.lines.join(ending);
        if self.final_newline && !self.lines.is_empty() {
            text.push_str(ending);
        }
        text
    }

    fn patch(&self) -> String {
        let mut out = String::from("*** Begin Patch\n*** Update File: f.txt\n");
        let mut previous_end = 0;
        for (index, edit) in self.edits.iter().enumerate() {
            match edit {
                Edit::Append(added) => {
                    out.push_str("@@\n");
                    added.iter().for_each(|line| out.push_str(&format!("+{line}\n")));
                }
                Edit::Region { start, before, removed, after, added } => {
                    // The line above the region, if it lies after the last region.
                    let header = (self.headers[index % self.headers.len()]
                        && *start > previous_end)
                        .then(|| &self.lines[start - 1]);
                    match header {
                        Some(line) => out.push_str(&format!("@@ {line}\n")),
                        None => out.push_str("@@\n"),
                    }
                    let mut at = *start;
                    for line in &self.lines[at..at + before] {
                        out.push_str(&format!(" {line}\n"));
                    }
                    at += before;
                    for line in &self.lines[at..at + removed] {
                        out.push_str(&format!("-{line}\n"));
                    }
                    at += removed;
                    added.iter().for_each(|line| out.push_str(&format!("+{line}\n")));
                    for line in &self.lines[at..at + after] {
                        out.push_str(&format!(" {line}\n"));
                    }
                    previous_end = at + after;
                }
            }
        }
        out.push_str("*** End Patch\n");
        out
    }

    /// What the patch means, computed without the tool's code.
    fn expected(&self) -> String {
        let mut result: Vec<&str> = Vec::new();
        let mut cursor = 0;
        let mut appended: Vec<&str> = Vec::new();
        for edit in &self.edits {
            match edit {
                Edit::Append(added) => appended.extend(added.iter().map(String::as_str)),
                Edit::Region { start, before, removed, after, added } => {
                    result.extend(self.lines[cursor..start + before].iter().map(String::as_str));
                    result.extend(added.iter().map(String::as_str));
                    let kept = start + before + removed;
                    result.extend(self.lines[kept..kept + after].iter().map(String::as_str));
                    cursor = kept + after;
                }
            }
        }
        result.extend(self.lines[cursor..].iter().map(String::as_str));
        result.extend(appended);
        let ending = if self.file_text().contains("\r\n") { "\r\n" } else { "\n" };
        let mut text = result.join(ending);
        text.push_str(ending);
        text
    }
}

fn apply(file: &str, patch: &str) -> (Result<PatchReport, PatchError>, String) {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("f.txt"), file).unwrap();
    let ws = Workspace::from_parts(work.path(), work.path()).unwrap();
    let outcome = apply_patch_text(&ws, &FileStates::unchecked(), patch);
    let after = std::fs::read_to_string(work.path().join("f.txt")).unwrap_or_default();
    (outcome, after)
}

/// Lines patch-shaped text is made of: markers, chunk lines and junk.
fn patch_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*** Begin Patch".to_owned()),
        Just("*** End Patch".to_owned()),
        Just("*** Update File: f.txt".to_owned()),
        Just("*** Add File: g.txt".to_owned()),
        Just("*** Delete File: f.txt".to_owned()),
        Just("*** Move to: h.txt".to_owned()),
        Just("*** End of File".to_owned()),
        Just("@@".to_owned()),
        "@@ [ab]{0,2}",
        "[ +-][ab]{0,2}",
        Just(String::new()),
        "\\PC{0,6}",
    ]
}

proptest! {
    #[test]
    fn generated_patches_apply_as_the_model_says(case in case()) {
        let patch = case.patch();
        let (outcome, after) = apply(&case.file_text(), &patch);
        prop_assert!(outcome.is_ok(), "{outcome:?}\npatch:\n{patch}");
        prop_assert_eq!(after, case.expected(), "patch:\n{}", patch);
    }

    #[test]
    fn fuzz_patch_text_never_panics(
        body in prop::collection::vec(patch_line(), 0..16),
        file in prop::collection::vec("[ab]{0,2}", 0..8),
        crlf in any::<bool>(),
    ) {
        let mut text = String::from("*** Begin Patch\n");
        for line in &body {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str("*** End Patch\n");
        let file = file.join(if crlf { "\r\n" } else { "\n" });
        let (outcome, _) = apply(&file, &text);
        // Either way it returns (a panic would fail the test); a failure is
        // an error the model can read.
        if let Err(error) = outcome {
            prop_assert!(!error.to_string().is_empty());
        }
    }
}

#[test]
fn an_addition_before_a_removal_applies_both() {
    // The finding of issue 14: this panicked (the addition's index was past
    // the end once the removal had been applied).
    let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n+tail\n@@\n a\n-b\n*** End Patch\n";
    let (outcome, after) = apply("a\nb\nc\nd\n", patch);
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(after, "a\nc\nd\ntail\n");
}
