//! The cheap first step of compaction: old tool outputs are replaced by a
//! short reference, everything the user and the model said is kept word
//! for word (the goal, the latest request, plans and decisions live there).
//! Old tool results' images go too, each leaving a line naming it.
//!
//! Invariants: pure; the item list keeps its length and order, and every
//! tool call keeps exactly one result (only its text shrinks).

use crate::protocol::Item;

/// Tool outputs at most this long are kept as they are.
pub const KEEP_OUTPUT_CHARS: usize = 400;
/// How many of the most recent tool results are never elided.
pub const KEEP_RECENT_RESULTS: usize = 4;
/// How much of an elided output stays as a preview.
const PREVIEW_CHARS: usize = 160;

/// The history with old, long tool outputs elided, or `None` when there is
/// nothing left to elide (the caller must then summarize or fail).
pub fn elide_old_tool_outputs(items: &[Item]) -> Option<Vec<Item>> {
    let results = items.iter().filter(|item| matches!(item, Item::ToolResult(_))).count();
    let elidable = results.saturating_sub(KEEP_RECENT_RESULTS);
    let mut seen = 0;
    let mut changed = false;
    let compacted = items
        .iter()
        .map(|item| match item {
            Item::ToolResult(result) => {
                seen += 1;
                let long = result.output.chars().count() > KEEP_OUTPUT_CHARS;
                if seen > elidable || (!long && result.images.is_empty()) {
                    return item.clone();
                }
                changed = true;
                let mut result = result.clone();
                // An old image costs as much as a page of text.
                for image in std::mem::take(&mut result.images) {
                    result.output.push_str(&format!(
                        "\n[image elided to save context: {}; read it again if you need it]",
                        image.label()
                    ));
                }
                if !long {
                    return Item::ToolResult(result);
                }
                let total = result.output.chars().count();
                let preview: String = result.output.chars().take(PREVIEW_CHARS).collect();
                result.output = format!(
                    "{preview}\n[… output elided to save context: {total} characters; run the tool again if you need it]"
                );
                Item::ToolResult(result)
            }
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::ToolCall(_)
            | Item::Context { .. } => item.clone(),
        })
        .collect();
    changed.then_some(compacted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolResult};

    fn history(outputs: usize, size: usize) -> Vec<Item> {
        let mut items = vec![Item::user("fix the parser")];
        for i in 0..outputs {
            let id = format!("c{i}");
            items.push(Item::ToolCall(ToolCall {
                call_id: id.clone(),
                name: "read_file".into(),
                arguments: "{}".into(),
                item_id: None,
                provider_data: None,
            }));
            items.push(Item::ToolResult(ToolResult::ok(&id, "x".repeat(size))));
        }
        items
    }

    #[test]
    fn old_long_outputs_shrink_and_everything_else_stays() {
        let items = history(10, 5_000);
        let compacted = elide_old_tool_outputs(&items).unwrap();
        assert_eq!(compacted.len(), items.len());
        assert_eq!(compacted[0], items[0], "the user's goal is kept verbatim");
        let sizes: Vec<usize> = compacted
            .iter()
            .filter_map(|item| match item {
                Item::ToolResult(r) => Some(r.output.len()),
                _ => None,
            })
            .collect();
        assert!(sizes[..6].iter().all(|size| *size < 400), "{sizes:?}");
        assert!(sizes[6..].iter().all(|size| *size == 5_000), "recent outputs stay: {sizes:?}");
    }

    #[test]
    fn old_images_go_and_leave_a_line_naming_them() {
        let mut items = history(KEEP_RECENT_RESULTS + 1, 10);
        let image = crate::protocol::ImagePart {
            media_type: crate::protocol::ImageMediaType::Png,
            sha256: "ab".repeat(32),
            width: 800,
            height: 600,
            bytes: 120_000,
            name: "shot.png".into(),
            data: crate::protocol::ImageData::default(),
        };
        if let Item::ToolResult(result) = &mut items[2] {
            result.images.push(image);
        }
        let compacted = elide_old_tool_outputs(&items).expect("the old image goes");
        let Item::ToolResult(result) = &compacted[2] else { panic!() };
        assert!(result.images.is_empty());
        assert!(result.output.starts_with("xxxxxxxxxx\n[image elided"), "{}", result.output);
        assert!(result.output.contains("shot.png, 800×600, 120 KB"), "{}", result.output);
        assert_eq!(compacted.len(), items.len());
    }

    #[test]
    fn nothing_to_elide_says_so() {
        assert_eq!(elide_old_tool_outputs(&history(10, 100)), None);
        assert_eq!(elide_old_tool_outputs(&history(3, 5_000)), None);
        let once = elide_old_tool_outputs(&history(10, 5_000)).unwrap();
        assert_eq!(elide_old_tool_outputs(&once), None, "idempotent");
    }
}
