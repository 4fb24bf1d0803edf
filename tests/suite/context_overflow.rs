//! A provider's context-length error is answered by compacting old tool
//! outputs and asking again, keeping the user's goal word for word.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Model, Sandbox, json_lines, request_bodies};
use super::wire::{Step, Wire, call, render};

/// Plays `steps`, but answers 400 context_length_exceeded while the first
/// file's long content is still in the request.
struct Overflowing {
    steps: Vec<String>,
    next: AtomicUsize,
    marker: String,
}

impl Respond for Overflowing {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let results = body.matches("\"role\":\"tool\"").count();
        if results >= 6 && body.contains(&self.marker) {
            return ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "This model's maximum context length is 128000 tokens.",
                "type": "invalid_request_error", "code": "context_length_exceeded"}}));
        }
        let index = self.next.fetch_add(1, Ordering::SeqCst).min(self.steps.len() - 1);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.steps[index].clone())
    }
}

#[tokio::test]
async fn context_overflow_compacts_old_outputs_and_goes_on() {
    let sandbox = Sandbox::new();
    let marker = "a".repeat(1500);
    sandbox.write("f0.txt", &format!("{marker}\n"));
    for i in 1..6 {
        sandbox.write(&format!("f{i}.txt"), &format!("{}\n", "b".repeat(1500)));
    }
    let mut steps: Vec<Step> = (0..6)
        .map(|i| Step::Calls {
            text: None,
            calls: vec![call("read_file", json!({"path": format!("f{i}.txt")}))],
        })
        .collect();
    steps.push(Step::Answer("read them all".into()));
    let bodies: Vec<String> =
        steps.iter().enumerate().map(|(i, s)| render(Wire::Chat, s, i)).collect();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Overflowing {
            steps: bodies,
            next: AtomicUsize::new(0),
            marker: marker.clone(),
        })
        .mount(&server)
        .await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--json", "Summarise the six files"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(json_lines(&output.stdout).last().unwrap()["final_text"], "read them all");
    let requests = request_bodies(&server).await;
    let last = requests.last().unwrap().to_string();
    assert!(!last.contains(&marker), "the old output was not elided");
    assert!(last.contains("output elided to save context"));
    assert!(last.contains("Summarise the six files"), "the goal is kept verbatim");
    let log = sandbox.only_log();
    assert!(log.iter().any(|l| l["type"] == "compaction"), "the compaction is in the log");
}
