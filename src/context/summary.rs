//! The model-written step of compaction: the request that asks for a
//! summary, and the history that replaces the old one.
//!
//! The new history is, in order: the user's goal (their first message,
//! verbatim), one block with the summary and the facts the harness keeps
//! verbatim ([`Preserved`]), the user's latest request (verbatim), and the
//! items of the current turn after it when they fit.
//!
//! Invariants: pure; the goal and the latest request are never paraphrased;
//! the block is recognisable ([`SUMMARY_MARKER`]), so a later compaction
//! never mistakes it for the user's words; the kept tail starts right
//! after a user message, so every kept tool call keeps its result.

use crate::protocol::{Item, ModelRequest};

use super::tokens::estimate_items;

/// The compaction prompt (instructions of the summary request).
pub const COMPACTION_PROMPT: &str = include_str!("../../prompts/compact.md");

/// Opens the block that carries a summary; never typed by a user.
pub const SUMMARY_MARKER: &str = "<keel-compaction-summary>";
const SUMMARY_END: &str = "</keel-compaction-summary>";

/// Longest plan text kept verbatim in the block.
const PLAN_CHARS: usize = 6_000;
/// Longest failing check output kept in the block.
pub const CHECK_CHARS: usize = 3_000;

/// What survives a compaction word for word, besides the goal and the
/// latest request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Preserved {
    pub mode: String,
    pub phase: String,
    /// Path, status and text of the current plan.
    pub plan: Option<(String, String, String)>,
    /// Open tasks, one line each.
    pub open_tasks: Vec<String>,
    pub changed_files: Vec<String>,
    /// The output of the last verification that failed (and was not
    /// followed by a passing one).
    pub failed_check: Option<String>,
    /// What the user asked the summary to focus on (`/compact focus`).
    pub focus: Option<String>,
}

/// Whether `item` is a summary block written by [`compacted_history`].
pub fn is_summary_block(item: &Item) -> bool {
    matches!(item, Item::User { text, .. } if text.starts_with(SUMMARY_MARKER))
}

/// The user's messages, without summary blocks, oldest first.
fn user_messages(items: &[Item]) -> impl Iterator<Item = (usize, &str)> {
    items.iter().enumerate().filter_map(|(index, item)| match item {
        Item::User { text, .. } if !is_summary_block(item) => Some((index, text.as_str())),
        Item::User { .. }
        | Item::Assistant { .. }
        | Item::Reasoning(_)
        | Item::ToolCall(_)
        | Item::ToolResult(_)
        | Item::Context { .. } => None,
    })
}

/// The first thing the user asked (after a compaction, the goal it kept).
pub fn goal(items: &[Item]) -> Option<&str> {
    user_messages(items).next().map(|(_, text)| text)
}

/// The request that asks the model for a summary of `items`. `history`
/// is what fits the window (see [`fit_for_summary`]).
pub fn summary_request(
    base: &ModelRequest,
    history: Vec<Item>,
    focus: Option<&str>,
) -> ModelRequest {
    let mut ask = String::from(
        "Summarize the session above for the instance that continues it, following your \
         instructions. Reply with the summary only; do not call tools.",
    );
    if let Some(focus) = focus.filter(|focus| !focus.trim().is_empty()) {
        ask.push_str(&format!("\n\nThe user asked the summary to focus on: {}", focus.trim()));
    }
    let mut items = history;
    items.push(Item::user(ask));
    ModelRequest {
        model: base.model.clone(),
        instructions: COMPACTION_PROMPT.to_owned(),
        items,
        // Sent so providers accept the tool calls in the history
        // (Anthropic refuses tool_use blocks without tool definitions).
        tools: base.tools.clone(),
        max_output_tokens: Some(4_096),
    }
}

/// `items` cut to fit `budget` tokens for the summary request: the goal
/// is always kept, then as many of the latest items as fit, starting where
/// a user message or a model response starts (so no kept result lacks its
/// call, and no call its reasoning).
pub fn fit_for_summary(items: &[Item], budget: u64) -> Vec<Item> {
    if estimate_items(items) <= budget {
        return items.to_vec();
    }
    let goal = user_messages(items).next();
    let goal_tokens = goal.map_or(0, |(index, _)| estimate_items(&items[index..=index]));
    let mut start = items.len();
    let mut used = goal_tokens;
    for (index, item) in items.iter().enumerate().rev() {
        let cost = estimate_items(std::slice::from_ref(item));
        if used + cost > budget {
            break;
        }
        used += cost;
        start = index;
    }
    let start = (start..items.len()).find(|&index| starts_turn_or_response(items, index));
    let mut kept = Vec::new();
    match start {
        Some(start) => {
            if let Some((index, _)) = goal.filter(|(index, _)| *index < start) {
                kept.push(items[index].clone());
            }
            kept.extend_from_slice(&items[start..]);
        }
        None => kept.extend(goal.map(|(index, _)| items[index].clone())),
    }
    kept
}

/// Whether a history may start at `index`: a user message, or the first
/// item of a model response (right after a user message or a result).
fn starts_turn_or_response(items: &[Item], index: usize) -> bool {
    let previous = index.checked_sub(1).map(|before| &items[before]);
    match &items[index] {
        Item::User { .. } | Item::Context { .. } => true,
        Item::ToolResult(_) => false,
        Item::Assistant { .. } | Item::Reasoning(_) | Item::ToolCall(_) => {
            matches!(previous, Some(Item::User { .. } | Item::ToolResult(_)))
        }
    }
}

/// The history that replaces `items`: goal, summary block, latest request
/// and as much of the current turn after it as fits `tail_budget` tokens
/// (its latest responses, each whole).
pub fn compacted_history(
    items: &[Item],
    summary: Option<&str>,
    preserved: &Preserved,
    tail_budget: u64,
) -> Vec<Item> {
    let mut messages = user_messages(items);
    let goal = messages.next();
    let latest = user_messages(items).last();
    let mut history = Vec::new();
    if let Some((goal_index, goal_text)) = goal {
        if latest.is_some_and(|(latest_index, _)| latest_index != goal_index) {
            history.push(Item::user(goal_text.to_owned()));
        }
    }
    history.push(Item::user(summary_block(summary, preserved)));
    if let Some((latest_index, latest_text)) = latest {
        history.push(Item::user(latest_text.to_owned()));
        history.extend_from_slice(latest_fitting(&items[latest_index + 1..], tail_budget));
    }
    history
}

/// The longest suffix of `items` within `budget` tokens that starts where
/// a model response starts (empty if none fits).
fn latest_fitting(items: &[Item], budget: u64) -> &[Item] {
    let mut used = 0;
    let mut start = items.len();
    for (index, item) in items.iter().enumerate().rev() {
        used += estimate_items(std::slice::from_ref(item));
        if used > budget {
            break;
        }
        start = index;
    }
    let boundary = (start..items.len()).find(|&index| {
        index == 0 && !matches!(items[index], Item::ToolResult(_))
            || index > 0 && starts_turn_or_response(items, index)
    });
    boundary.map_or(&items[items.len()..], |start| &items[start..])
}

/// The block: the model's summary, then the preserved facts.
pub fn summary_block(summary: Option<&str>, preserved: &Preserved) -> String {
    let mut out = format!(
        "{SUMMARY_MARKER}\nThe earlier conversation was compacted to save context. Your summary \
         of it and the facts keel keeps verbatim follow; the user's goal is the message before \
         this one (when there is one) and their latest request the message after it.\n\n"
    );
    match summary.map(str::trim).filter(|text| !text.is_empty()) {
        Some(text) => out.push_str(&format!("# Summary\n\n{text}\n\n")),
        None => out.push_str(
            "# Summary\n\n(No summary could be written; re-read the files you need.)\n\n",
        ),
    }
    out.push_str("# Kept verbatim\n\n");
    out.push_str(&format!("- Mode: {}\n- Phase: {}\n", preserved.mode, preserved.phase));
    if let Some((path, status, text)) = &preserved.plan {
        out.push_str(&format!("- Plan ({status}): {path}\n\n{}\n\n", head(text, PLAN_CHARS)));
    }
    if !preserved.open_tasks.is_empty() {
        out.push_str("- Open tasks:\n");
        for task in &preserved.open_tasks {
            out.push_str(&format!("  - {task}\n"));
        }
    }
    if !preserved.changed_files.is_empty() {
        out.push_str(&format!("- Files being changed: {}\n", preserved.changed_files.join(", ")));
    }
    if let Some(check) = &preserved.failed_check {
        out.push_str(&format!(
            "- Last failing verification:\n```\n{}\n```\n",
            clip(check, CHECK_CHARS)
        ));
    }
    if let Some(focus) = &preserved.focus {
        out.push_str(&format!("- The user asked to focus on: {focus}\n"));
    }
    out.push_str(SUMMARY_END);
    out
}

/// `text` cut to at most `max` characters (its tail kept: the end of an
/// output is where errors are).
pub fn clip(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(total - max).collect();
    format!("[… {} characters cut]\n{tail}", total - max)
}

/// `text` cut to its first `max` characters (a plan's start carries its
/// context and steps).
fn head(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[… {} characters cut; the whole plan is in its file]", total - max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ToolCall, ToolResult};

    /// One long turn: the goal, then many read calls with their results.
    fn long_turn(reads: usize) -> Vec<Item> {
        let mut items = vec![Item::user("GOAL: fix the parser")];
        for i in 0..reads {
            let id = format!("c{i}");
            items.push(Item::Assistant { text: format!("reading part {i}") });
            items.push(Item::ToolCall(ToolCall {
                call_id: id.clone(),
                name: "read_file".into(),
                arguments: "{}".into(),
                item_id: None,
                provider_data: None,
            }));
            items.push(Item::ToolResult(ToolResult::ok(&id, "line of code\n".repeat(40))));
        }
        items
    }

    #[test]
    fn a_long_single_turn_keeps_the_goal_and_its_latest_responses_whole() {
        let items = long_turn(50);
        let kept = fit_for_summary(&items, 2_000);
        assert!(kept.len() > 3, "more than the goal survives: {}", kept.len());
        assert!(estimate_items(&kept) <= 2_000);
        assert_eq!(kept[0], items[0], "the goal first");
        assert!(matches!(kept[1], Item::Assistant { .. }), "a response starts whole");
        assert_eq!(kept.last(), items.last(), "the latest work is in");
        let calls = kept.iter().filter(|item| matches!(item, Item::ToolCall(_))).count();
        let results = kept.iter().filter(|item| matches!(item, Item::ToolResult(_))).count();
        assert_eq!(calls, results, "every kept result has its call");
    }

    #[test]
    fn a_history_that_fits_is_kept_as_it_is() {
        let items = long_turn(3);
        assert_eq!(fit_for_summary(&items, 100_000), items);
    }

    #[test]
    fn the_compacted_history_keeps_goal_and_latest_verbatim_around_the_block() {
        let mut items = long_turn(2);
        items.push(Item::Assistant { text: "done".into() });
        items.push(Item::user("LATEST: also tabs"));
        let history = compacted_history(&items, Some("SUMMARY"), &Preserved::default(), 0);
        let texts: Vec<&str> = history
            .iter()
            .filter_map(|item| match item {
                Item::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts.len(), 3);
        assert_eq!(texts[0], "GOAL: fix the parser");
        assert!(texts[1].starts_with(SUMMARY_MARKER) && texts[1].contains("SUMMARY"));
        assert_eq!(texts[2], "LATEST: also tabs");
        assert!(is_summary_block(&history[1]) && !is_summary_block(&history[0]));
    }

    #[test]
    fn the_current_turn_keeps_its_latest_whole_responses_within_the_budget() {
        let mut items = vec![Item::user("GOAL")];
        items.extend(long_turn(20).into_iter().skip(1));
        let history = compacted_history(&items, Some("S"), &Preserved::default(), 1_000);
        let tail = &history[2..];
        assert!(!tail.is_empty() && estimate_items(tail) <= 1_000);
        assert!(matches!(tail[0], Item::Assistant { .. }), "starts with a whole response");
        assert_eq!(tail.last(), items.last());
        let nothing = compacted_history(&items, Some("S"), &Preserved::default(), 0);
        assert_eq!(nothing.len(), 2, "goal is the latest request: block + request only");
    }
}
