//! Prompt caching on the wire (issue 16), through the real binary:
//! Anthropic requests carry `cache_control` breakpoints where Anthropic
//! documents them (last tool, system, the end of the conversation; at most
//! 4), consecutive requests agree byte for byte up to the previous
//! request's last breakpoint, and OpenAI requests carry the session id as
//! `prompt_cache_key` (Responses always, Chat Completions where harmless).

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::wire::{Step, Wire, call};

/// A read-only session: reads, a search, then the answer.
fn reading_steps() -> Vec<Step> {
    vec![
        Step::Calls {
            text: Some("Reading.".into()),
            calls: vec![call("read_file", json!({"path": "notes.txt"}))],
        },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "todo.txt"}))] },
        Step::Calls { text: None, calls: vec![call("grep", json!({"pattern": "alpha"}))] },
        Step::Answer("alpha, beta, buy milk.".into()),
    ]
}

/// Runs `steps` on `wire`; returns the raw request bodies and the result.
async fn run(wire: Wire, steps: &[Step], args: &[&str]) -> (Vec<Vec<u8>>, Value) {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nbeta\n");
    sandbox.write("todo.txt", "buy milk\n");
    let server = scripted_model(wire, steps).await;
    let output = sandbox
        .keel_on(&Model::on(wire, &server).named("claude-sonnet-4-5"), &["exec", "--json"])
        .args(args)
        .arg("What do the notes say?")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json_lines(&output.stdout).pop().unwrap();
    let bodies = server.received_requests().await.unwrap().into_iter().map(|r| r.body).collect();
    (bodies, result)
}

/// Where the markers are: `tools[i]`, `system[i]`, `messages[m][b]`.
fn markers(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (key, list) in [("tools", &body["tools"]), ("system", &body["system"])] {
        for (i, item) in list.as_array().into_iter().flatten().enumerate() {
            if item.get("cache_control").is_some() {
                out.push(format!("{key}[{i}]"));
            }
        }
    }
    for (m, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        for (b, block) in message["content"].as_array().into_iter().flatten().enumerate() {
            if block.get("cache_control").is_some() {
                out.push(format!("messages[{m}][{b}]"));
            }
        }
    }
    out
}

fn last_block(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let blocks = messages.last().unwrap()["content"].as_array().unwrap().len();
    format!("messages[{}][{}]", messages.len() - 1, blocks - 1)
}

#[tokio::test]
async fn anthropic_requests_mark_tools_system_and_the_end_of_the_conversation() {
    let (bodies, _) = run(Wire::Anthropic, &reading_steps(), &[]).await;
    assert_eq!(bodies.len(), 4);
    for raw in &bodies {
        let body: Value = serde_json::from_slice(raw).unwrap();
        let tools = body["tools"].as_array().unwrap().len();
        let want = vec![format!("tools[{}]", tools - 1), "system[0]".to_owned(), last_block(&body)];
        assert_eq!(markers(&body), want, "at most 4, where the docs put them");
        assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    }
}

#[tokio::test]
async fn each_anthropic_request_repeats_the_previous_one_up_to_its_last_breakpoint() {
    let (bodies, _) = run(Wire::Anthropic, &reading_steps(), &[]).await;
    for pair in bodies.windows(2) {
        let (previous, next) = (&pair[0], &pair[1]);
        let marker = b",\"cache_control\":";
        let last = previous.windows(marker.len()).rposition(|w| w == marker).unwrap();
        let prefix = &previous[..last];
        let agree = next.iter().zip(prefix).take_while(|(a, b)| a == b).count();
        assert_eq!(
            agree,
            prefix.len(),
            "bytes differ at {agree}: …{}…",
            String::from_utf8_lossy(&next[agree.saturating_sub(80)..(agree + 80).min(next.len())])
        );
    }
}

#[tokio::test]
async fn a_wide_step_keeps_the_previous_end_marked_within_four() {
    let reads: Vec<(String, String)> =
        (0..9).map(|_| call("read_file", json!({"path": "notes.txt"}))).collect();
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "todo.txt"}))] },
        Step::Calls { text: Some("All at once.".into()), calls: reads },
        Step::Answer("done".into()),
    ];
    let (bodies, _) = run(Wire::Anthropic, &steps, &[]).await;
    let previous: Value = serde_json::from_slice(&bodies[1]).unwrap();
    let wide: Value = serde_json::from_slice(&bodies[2]).unwrap();
    let marked = markers(&wide);
    assert_eq!(marked.len(), 4, "{marked:?}");
    assert!(marked.contains(&last_block(&previous)), "the previous write is read: {marked:?}");
    assert!(marked.contains(&last_block(&wide)));
}

#[tokio::test]
async fn one_hour_ttl_marks_every_breakpoint_and_asks_for_the_beta() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(
        &Model::on(Wire::Anthropic, &server).named("claude-sonnet-4-5"),
        &["exec", "--json", "-c", "provider.cache_ttl=1h", "hi"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let request = &server.received_requests().await.unwrap()[0];
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["system"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
    assert_eq!(request.headers.get("anthropic-beta").unwrap(), "extended-cache-ttl-2025-04-11");
}

#[tokio::test]
async fn responses_requests_carry_the_session_id_as_prompt_cache_key() {
    let (bodies, result) = run(Wire::Responses, &reading_steps(), &[]).await;
    let session = result["session_id"].as_str().unwrap();
    for raw in &bodies {
        let body: Value = serde_json::from_slice(raw).unwrap();
        assert_eq!(body["prompt_cache_key"], session);
    }
}

#[tokio::test]
async fn chat_requests_carry_it_only_where_harmless_or_asked() {
    let (bodies, _) = run(Wire::Chat, &reading_steps(), &[]).await;
    let body: Value = serde_json::from_slice(&bodies[0]).unwrap();
    assert!(body.get("prompt_cache_key").is_none(), "a local server may reject unknown fields");
    let (bodies, result) =
        run(Wire::Chat, &reading_steps(), &["-c", "provider.prompt_cache_key=true"]).await;
    let body: Value = serde_json::from_slice(&bodies[1]).unwrap();
    assert_eq!(body["prompt_cache_key"], result["session_id"]);
}
