use serde_json::{Value, json};

use super::*;
use crate::display::KnownSecret;

/// A log: one turn with an approved shell call, an edit with a diff, an
/// answer; the lines as keel writes them.
pub(crate) fn sample_log(extra_output: &str) -> Vec<EventRecord> {
    let diff = "edited notes.txt (1 replacement)\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-alpha\n+beta";
    let lines = [
        json!({"type": "session_started", "session_id": "s-1", "cwd": "/w", "provider": "openai-chat",
               "model": "m", "keel_version": "0.1.0", "mode": "ask"}),
        json!({"type": "turn_started", "turn": 1}),
        json!({"type": "user_message", "text": "fix <the> notes"}),
        json!({"type": "model_response", "step": 1, "cost_usd": 0.25, "response": {
            "items": [{"kind": "assistant", "text": "Looking."},
                      {"kind": "tool_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":\"cat notes.txt\"}"}],
            "usage": {"input_tokens": 100, "output_tokens": 10}, "stop_reason": "tool_use"}}),
        json!({"type": "policy_decision", "call_id": "c1", "decision": "prompt", "reason": "not known to be read-only"}),
        json!({"type": "approval", "call_id": "c1", "approved": true, "scope": "once"}),
        json!({"type": "tool_call_started", "call": {"call_id": "c1", "name": "shell", "arguments": "{\"command\":\"cat notes.txt\"}"}, "class": "mutating"}),
        json!({"type": "tool_call_finished", "result": {"call_id": "c1", "output": format!("alpha\n{extra_output}"), "is_error": false}, "meta": {"exit_code": 0}}),
        json!({"type": "model_response", "step": 2, "cost_usd": 0.5, "response": {
            "items": [{"kind": "tool_call", "call_id": "c2", "name": "edit_file",
                       "arguments": "{\"path\":\"notes.txt\",\"old_string\":\"alpha\",\"new_string\":\"beta\"}"}],
            "usage": {"input_tokens": 200, "output_tokens": 20}, "stop_reason": "tool_use"}}),
        json!({"type": "file_changed", "call_id": "c1", "path": "/w", "before": "f1", "after": "f1"}),
        json!({"type": "file_changed", "call_id": "c2", "path": "/w/notes.txt", "before": "h1", "after": "h2"}),
        json!({"type": "tool_call_finished", "result": {"call_id": "c2", "output": diff, "is_error": false}}),
        json!({"type": "model_response", "step": 3, "cost_usd": 0.25, "response": {
            "items": [{"kind": "assistant", "text": "Done <script>alert(1)</script>"}],
            "usage": {"input_tokens": 300, "output_tokens": 30}, "stop_reason": "end_turn"}}),
        json!({"type": "turn_completed", "turn": 1, "outcome": "completed",
               "usage": {"input_tokens": 600, "output_tokens": 60}}),
    ];
    lines
        .into_iter()
        .enumerate()
        .map(|(seq, mut line)| {
            line["v"] = json!(1);
            line["seq"] = json!(seq);
            line["ts"] = json!(format!("2026-12-02T10:00:{seq:02}Z"));
            serde_json::from_value(line).unwrap()
        })
        .collect()
}

#[test]
fn a_log_folds_into_turns_calls_approvals_diffs_and_cost() {
    let transcript = transcript(&sample_log(""));
    assert_eq!(transcript.session_id, "s-1");
    assert_eq!(transcript.turns.len(), 1);
    let turn = &transcript.turns[0];
    assert_eq!(turn.prompt, "fix <the> notes");
    assert_eq!(turn.outcome.as_deref(), Some("completed"));
    let Entry::ToolCall(shell) = &turn.entries[1] else { panic!("{:?}", turn.entries) };
    assert_eq!(shell.summary, "cat notes.txt");
    assert_eq!(shell.decision.as_deref(), Some("prompt"));
    assert_eq!(
        shell.approval.as_ref().map(|a| (a.approved, a.scope.as_str())),
        Some((true, "once"))
    );
    let Entry::ToolCall(edit) = &turn.entries[2] else { panic!("{:?}", turn.entries) };
    assert_eq!(edit.files_changed, ["notes.txt"]);
    assert!(shell.files_changed.is_empty(), "an unchanged fingerprint is no change");
    assert_eq!(transcript.usage.input_tokens, 600);
    assert_eq!(transcript.cost_usd, Some(1.0));
}

#[test]
fn html_escapes_everything_and_loads_nothing() {
    let page =
        export(&sample_log("<img src=x onerror=alert(1)>"), Format::Html, &SecretMask::default())
            .unwrap();
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("default-src 'none'"));
    assert!(!page.contains("http://") && !page.contains("https://"), "no external resource");
    assert!(
        page.contains("<span class=\"del\">-alpha</span><span class=\"add\">+beta</span>"),
        "{page}"
    );
}

#[test]
fn long_outputs_are_collapsed_and_fences_hold() {
    let long: String = (0..40).map(|n| format!("line {n}\n")).collect();
    let md = export(
        &sample_log(&format!("```\n# not a heading\n{long}")),
        Format::Markdown,
        &SecretMask::default(),
    )
    .unwrap();
    assert!(md.contains("<details><summary>output (43 lines)</summary>"), "{md}");
    assert!(
        md.contains("````text\nalpha\n```\n# not a heading"),
        "the fence outlasts the output's: {md}"
    );
    assert!(md.contains("```diff\n"), "{md}");
    assert!(md.contains("> fix &lt;the&gt; notes"), "{md}");
    assert!(md.contains("approved (once)"), "{md}");
    let html = export(&sample_log(&long), Format::Html, &SecretMask::default()).unwrap();
    assert!(html.contains("<details><summary>output (41 lines)</summary>"), "{html}");
}

#[test]
fn exports_mask_known_values_and_secret_shapes() {
    let output = "GH=ghp_abcdefghijklmnopqrstuvwxyz0123456789\nmine=value-only-keel-knew";
    let mask = SecretMask::new(&[KnownSecret::new("MY_SECRET", "value-only-keel-knew")]).unwrap();
    for format in [Format::Markdown, Format::Html, Format::Json, Format::Atif] {
        let text = export(&sample_log(output), format, &mask).unwrap();
        assert!(!text.contains("ghp_abc") && !text.contains("value-only"), "{format:?}: {text}");
        assert!(text.contains("[redacted: GitHub token]"), "{format:?}: {text}");
        assert!(text.contains("[redacted: MY_SECRET]"), "{format:?}: {text}");
    }
}

#[test]
fn json_is_the_transcript_and_carries_its_version() {
    let text = export(&sample_log(""), Format::Json, &SecretMask::default()).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["schema_version"], EXPORT_SCHEMA_VERSION);
    assert_eq!(value["turns"][0]["entries"][1]["kind"], "tool_call");
    let back: Transcript = serde_json::from_value(value).unwrap();
    assert_eq!(back, transcript(&sample_log("")));
}

#[test]
fn odd_logs_never_panic() {
    let mut records = sample_log("");
    records.remove(0);
    records.remove(1);
    records.retain(|record| {
        !matches!(record.event, crate::protocol::SessionEvent::TurnStarted { .. })
    });
    for format in [Format::Markdown, Format::Html, Format::Json, Format::Atif] {
        let _ = export(&records, format, &SecretMask::default()).unwrap();
        let _ = export(&[], format, &SecretMask::default()).unwrap();
    }
}

#[test]
fn arguments_show_only_when_they_say_more_than_the_summary() {
    let md = export(&sample_log(""), Format::Markdown, &SecretMask::default()).unwrap();
    assert_eq!(md.matches("<summary>arguments</summary>").count(), 1, "only the edit's: {md}");
    assert!(md.contains("\"new_string\": \"beta\""), "{md}");
    assert_eq!(when("2026-12-02T10:00:05.123Z"), "2026-12-02 10:00:05 UTC");
    assert_eq!(when("odd"), "odd");
}

#[test]
fn atif_has_a_user_step_per_prompt_and_an_agent_step_per_response_with_its_results() {
    let text = export(&sample_log(""), Format::Atif, &SecretMask::default()).unwrap();
    let atif: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(atif["schema_version"], "ATIF-v1.7");
    assert_eq!(atif["session_id"], "s-1");
    assert_eq!(atif["agent"], json!({"name": "keel", "version": "0.1.0", "model_name": "m"}));
    let steps = atif["steps"].as_array().unwrap();
    let sources: Vec<&str> = steps.iter().map(|step| step["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["user", "agent", "agent", "agent"]);
    let ids: Vec<u64> = steps.iter().map(|step| step["step_id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4]);
    assert_eq!(steps[0]["message"], "fix <the> notes");
    let first = &steps[1];
    assert_eq!(first["message"], "Looking.");
    assert_eq!(
        first["tool_calls"],
        json!([{"tool_call_id": "c1", "function_name": "shell",
                "arguments": {"command": "cat notes.txt"}}])
    );
    assert_eq!(first["observation"]["results"][0]["source_call_id"], "c1");
    assert_eq!(first["observation"]["results"][0]["content"], "alpha\n");
    assert_eq!(first["metrics"]["prompt_tokens"], 100);
    assert_eq!(first["metrics"]["cost_usd"], 0.25);
    assert_eq!(steps[2]["tool_calls"][0]["arguments"]["new_string"], "beta");
    assert!(steps[2]["observation"]["results"][0]["content"].as_str().unwrap().contains("+beta"));
    assert_eq!(steps[3]["message"], "Done <script>alert(1)</script>");
    assert!(steps[3].get("tool_calls").is_none() && steps[3].get("observation").is_none());
    assert_eq!(
        atif["final_metrics"],
        json!({"total_prompt_tokens": 600, "total_completion_tokens": 60,
               "total_cached_tokens": 0, "total_cost_usd": 1.0, "total_steps": 4})
    );
}
