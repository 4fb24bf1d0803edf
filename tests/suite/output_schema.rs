//! `keel exec --output-schema FILE` (issue 40): on every protocol the
//! model is asked for the shape (natively where the protocol can), a wrong
//! answer is answered with what was wrong, a right one is the result's
//! JSON; one that never comes right ends `schema_invalid`, exit 1.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire};

const SCHEMA: &str = r#"{"type": "object", "required": ["files", "ok"],
  "properties": {"files": {"type": "array", "items": {"type": "string"}},
                 "ok": {"type": "boolean"}},
  "additionalProperties": false}"#;

fn answer(text: &str) -> Step {
    Step::Answer(text.to_owned())
}

/// Runs `exec --json --output-schema` against `steps` on `wire`: the
/// result line, the exit code and the request bodies.
async fn run(wire: Wire, steps: &[Step]) -> (Value, Option<i32>, Vec<Value>) {
    let sandbox = Sandbox::new();
    sandbox.write("answer.schema.json", SCHEMA);
    let server = scripted_model(wire, steps).await;
    let args = ["exec", "--json", "--output-schema", "answer.schema.json", "Which files are here?"];
    let output = sandbox.run(&Model::on(wire, &server), &args);
    let lines = json_lines(&output.stdout);
    let result = lines.last().cloned().unwrap();
    assert_eq!(result["type"], "result", "{lines:?}");
    (result, output.status.code(), request_bodies(&server).await)
}

/// What the native structured-output field of a request says, if any.
fn native_format(wire: Wire, body: &Value) -> Value {
    match wire {
        Wire::Responses => body["text"]["format"].clone(),
        Wire::Chat => body["response_format"]["json_schema"].clone(),
        Wire::Anthropic => Value::Null,
    }
}

async fn a_wrong_answer_is_retried_then_the_right_one_is_the_result(wire: Wire) {
    let steps = [
        answer("The files are a.txt and b.txt."),
        answer(r#"{"files": "a.txt", "ok": true}"#),
        answer(r#"{"files": ["a.txt", "b.txt"], "ok": true}"#),
    ];
    let (result, code, bodies) = run(wire, &steps).await;
    assert_eq!(code, Some(0), "{result}");
    assert_eq!(result["status"], "completed", "{result}");
    let wanted = json!({"files": ["a.txt", "b.txt"], "ok": true});
    assert_eq!(result["structured_output"], wanted);
    assert_eq!(result["final_text"], wanted.to_string());
    assert_eq!(bodies.len(), 3);
    let first = bodies[0].to_string();
    assert!(first.contains("validates against this JSON Schema"), "the prompt asks: {first}");
    match wire {
        Wire::Responses | Wire::Chat => {
            let format = native_format(wire, &bodies[0]);
            assert_eq!(format["name"], "final_answer", "{}", bodies[0]);
            assert_eq!(format["schema"]["required"], json!(["files", "ok"]));
            assert_eq!(format["strict"], false);
        }
        Wire::Anthropic => assert!(bodies[0].get("output_format").is_none()),
    }
    let second = bodies[1].to_string();
    assert!(second.contains("It is not a JSON value"), "{second}");
    let third = bodies[2].to_string();
    assert!(third.contains("at /files: expected array, found string"), "{third}");
}

#[tokio::test]
async fn responses_a_wrong_answer_is_retried_then_the_right_one_is_the_result() {
    a_wrong_answer_is_retried_then_the_right_one_is_the_result(Wire::Responses).await;
}

#[tokio::test]
async fn chat_a_wrong_answer_is_retried_then_the_right_one_is_the_result() {
    a_wrong_answer_is_retried_then_the_right_one_is_the_result(Wire::Chat).await;
}

#[tokio::test]
async fn anthropic_a_wrong_answer_is_retried_then_the_right_one_is_the_result() {
    a_wrong_answer_is_retried_then_the_right_one_is_the_result(Wire::Anthropic).await;
}

#[tokio::test]
async fn an_answer_that_never_validates_ends_schema_invalid_with_exit_1() {
    let steps = [answer("{\"ok\": true}")];
    let (result, code, bodies) = run(Wire::Chat, &steps).await;
    assert_eq!(code, Some(1), "{result}");
    assert_eq!(result["status"], "schema_invalid");
    assert!(result["structured_output"].is_null());
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("missing required field \"files\""), "{error}");
    assert_eq!(bodies.len(), 3, "the first answer and two more");
}

#[tokio::test]
async fn without_json_the_validated_answer_is_stdout() {
    let sandbox = Sandbox::new();
    sandbox.write("answer.schema.json", SCHEMA);
    let server =
        scripted_model(Wire::Chat, &[answer("```json\n{\"files\": [], \"ok\": false}\n```")]).await;
    let args = ["exec", "--output-schema", "answer.schema.json", "Which files are here?"];
    let output = sandbox.run(&Model::chat(&server), &args);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "{\"files\":[],\"ok\":false}\n");
}

#[tokio::test]
async fn a_schema_file_that_is_not_json_is_a_usage_error_before_any_request() {
    let sandbox = Sandbox::new();
    sandbox.write("bad.json", "{not json");
    let server = scripted_model(Wire::Chat, &[answer("{}")]).await;
    let args = ["exec", "--json", "--output-schema", "bad.json", "Which files are here?"];
    let output = sandbox.run(&Model::chat(&server), &args);
    assert_eq!(output.status.code(), Some(2));
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["status"], "usage_error");
    assert!(result["error"].as_str().unwrap().contains("not JSON"), "{result}");
    assert!(request_bodies(&server).await.is_empty());
}
