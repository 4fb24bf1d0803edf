//! Spend limits and runaway detection (issue 24) through the real `keel`
//! binary against a scripted model that reports a known usage per
//! response: the request that would cross a limit never reaches the
//! model, a resumed session keeps its spend, and a model repeating one
//! call is stopped after being told.
//!
//! Figures: every response reports 10 000 input and 1 000 output tokens;
//! with prices of $100 per million tokens a response costs $1.10, and the
//! projection of the next request is about the same (10 000 in plus the
//! few new items, and the largest output so far, 1 000).

use serde_json::{Value, json};

use super::support::{
    Model, Sandbox, json_lines, read_jsonl, request_bodies, scripted_chat_without_usage,
    scripted_model, scripted_model_with,
};
use super::wire::{Step, Tokens, Wire, call};

const TOKENS: Tokens = Tokens { input: 10_000, cached: 0, output: 1_000 };

/// Reads of six different files, then an answer.
fn reads() -> Vec<Step> {
    let mut steps: Vec<Step> = (0..6)
        .map(|n| Step::Calls {
            text: None,
            calls: vec![call("read_file", json!({ "path": format!("f{n}.txt") }))],
        })
        .collect();
    steps.push(Step::Answer("done".into()));
    steps
}

fn sandbox_with_files() -> Sandbox {
    let sandbox = Sandbox::new();
    for n in 0..6 {
        sandbox.write(&format!("f{n}.txt"), &format!("file {n}\n"));
    }
    sandbox
}

/// `keel exec --json --full-auto` on openai-chat against `server`, on
/// `model`, with `args` before the prompt: its exit code and `result` line.
fn exec_json(
    sandbox: &Sandbox,
    server: &wiremock::MockServer,
    model: &str,
    args: &[&str],
) -> (Option<i32>, Value) {
    exec_json_on(sandbox, Model::chat(server), model, args)
}

/// [`exec_json`] on `provider`'s server.
fn exec_json_on(
    sandbox: &Sandbox,
    provider: Model,
    model: &str,
    args: &[&str],
) -> (Option<i32>, Value) {
    let output = sandbox
        .keel_on(&provider.named(model), &["exec", "--json", "--full-auto"])
        .args(args)
        .output()
        .unwrap();
    let lines = json_lines(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let result = lines.last().cloned().unwrap_or_else(|| panic!("no result line; {stderr}"));
    assert_eq!(result["type"], "result", "{stderr}");
    (output.status.code(), result)
}

/// [`exec_json`] on mock-model, priced at $100 per million tokens.
fn exec(sandbox: &Sandbox, server: &wiremock::MockServer, args: &[&str]) -> (Option<i32>, Value) {
    let prices = ["-c", "context.input_price=100", "-c", "context.output_price=100"];
    let args: Vec<&str> = prices
        .into_iter()
        .chain(["-c", "context.cached_input_price=100"])
        .chain(args.iter().copied())
        .collect();
    exec_json(sandbox, server, "mock-model", &args)
}

fn log_of(result: &Value) -> Vec<Value> {
    read_jsonl(std::path::Path::new(result["log_path"].as_str().unwrap()))
}

fn lines_of<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|line| line["type"] == kind).collect()
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|value| (value - expected).abs() < 1e-6)
}

#[tokio::test]
async fn max_cost_stops_before_the_crossing_request_and_a_resume_keeps_the_spend() {
    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Chat, &reads(), TOKENS).await;

    // $3: the first two requests fit ($1.10 each); the third would make
    // about $3.31 and is not sent.
    let (code, result) = exec(&sandbox, &server, &["--max-cost", "3", "read the files"]);
    assert_eq!(code, Some(4), "{result}");
    assert_eq!(result["status"], "budget_exceeded");
    assert_eq!(request_bodies(&server).await.len(), 2, "the crossing request was never sent");
    assert!(close(&result["limits"]["max_cost_usd"], 3.0), "{result}");
    assert!(close(&result["limits"]["spent_usd"], 2.2), "{result}");
    assert_eq!(result["limits"]["spent_tokens"], 22_000);
    assert!(result["error"].as_str().unwrap().contains("--max-cost"), "{result}");
    let log = log_of(&result);
    let set = lines_of(&log, "limits_set");
    assert_eq!(set.len(), 1);
    assert!(close(&set[0]["max_cost_usd"], 3.0) && set[0]["reason"] == "start", "{:?}", set[0]);
    let exceeded = lines_of(&log, "budget_exceeded");
    assert_eq!(exceeded.len(), 1);
    assert_eq!(exceeded[0]["limit"], "cost");
    assert!(close(&exceeded[0]["spent_usd"], 2.2), "{}", exceeded[0]);
    let next = exceeded[0]["next_usd"].as_f64().unwrap();
    assert!(next > 0.8 && next < 1.5, "the projection: {next}");
    let completed = lines_of(&log, "turn_completed");
    assert_eq!(completed.last().unwrap()["outcome"], "budget_exceeded");

    // A second process, no flag: the logged limit and spend hold, so it
    // stops before its first request.
    let id = result["session_id"].as_str().unwrap().to_owned();
    let (code, again) = exec(&sandbox, &server, &["resume", &id, "go on"]);
    assert_eq!(code, Some(4), "{again}");
    assert_eq!(request_bodies(&server).await.len(), 2, "a resume cannot reset the budget");
    assert!(close(&again["limits"]["spent_usd"], 2.2), "{again}");

    // A higher limit on the command line goes on from the logged spend:
    // $3.30 and $4.40 fit under $5, $5.50 would not.
    let (code, raised) = exec(&sandbox, &server, &["resume", &id, "--max-cost", "5", "go on"]);
    assert_eq!(code, Some(4), "{raised}");
    assert_eq!(request_bodies(&server).await.len(), 4);
    assert!(close(&raised["limits"]["spent_usd"], 4.4), "{raised}");
    let log = log_of(&raised);
    let set = lines_of(&log, "limits_set");
    assert!(close(&set.last().unwrap()["max_cost_usd"], 5.0), "{set:?}");
    assert_eq!(set.last().unwrap()["reason"], "changed");
}

#[tokio::test]
async fn max_tokens_stops_likewise_and_needs_no_prices() {
    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Responses, &reads(), TOKENS).await;
    let run = |args: &[&str]| {
        let output = sandbox
            .keel_on(
                &Model::on(Wire::Responses, &server).named("mock-model"),
                &["exec", "--full-auto"],
            )
            .args(args)
            .output()
            .unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    // 25 000 tokens: 11 000 + ~11 000 fit, a third request would not.
    let (code, stderr) = run(&["--max-tokens", "25000", "read the files"]);
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(request_bodies(&server).await.len(), 2);
    assert!(stderr.contains("tokens: 22000 of 25000 (limit)"), "{stderr}");
    assert!(stderr.contains("--max-tokens N"), "the way on is named: {stderr}");
    let (code, stderr) = run(&["resume", "--last", "go on"]);
    assert_eq!(code, Some(4), "{stderr}");
    assert_eq!(request_bodies(&server).await.len(), 2, "the resumed session stops at once");
}

#[tokio::test]
async fn a_model_repeating_one_call_is_told_then_stopped_as_stuck() {
    let sandbox = sandbox_with_files();
    let same =
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "f0.txt"}))] };
    let mut steps = vec![same; 6];
    steps.push(Step::Answer("done".into()));
    let server = scripted_model(Wire::Anthropic, &steps).await;
    let output = sandbox.run(
        &Model::on(Wire::Anthropic, &server).named("mock-model"),
        &["exec", "--json", "--full-auto", "read f0.txt"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["status"], "stuck", "{result}");
    // The third identical result carried the note to the model; it
    // repeated the call once more and the turn ended there.
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4, "no request after the stop");
    let note = "[keel] This exact call has now returned this exact result 3 times";
    assert!(!bodies[2].to_string().contains(note));
    assert!(bodies[3].to_string().contains(note), "the note reached the model");
    let log = log_of(&result);
    let finished = lines_of(&log, "tool_call_finished");
    assert_eq!(finished.len(), 4);
    assert_eq!(finished[2]["meta"]["runaway"]["action"], "noted");
    assert_eq!(finished[3]["meta"]["runaway"]["action"], "stopped");
    assert_eq!(lines_of(&log, "turn_completed")[0]["outcome"], "stuck");
}

#[tokio::test]
async fn a_cost_limit_on_a_model_without_prices_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("hi".into())]).await;
    for json in [false, true] {
        let mut command = sandbox.keel();
        command.args(["exec", "--provider", "openai-chat", "--max-cost", "1"]).args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--model",
            "mock-model",
        ]);
        if json {
            command.arg("--json");
        }
        let output = command.arg("hello").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        for needle in ["mock-model", "[context]", "input_price", "output_price"] {
            assert!(stderr.contains(needle), "{needle} missing: {stderr}");
        }
        if json {
            let result = json_lines(&output.stdout).pop().unwrap();
            assert_eq!(result["status"], "usage_error");
        }
    }
    assert!(request_bodies(&server).await.is_empty(), "never a silent no-limit run");
}

/// A cloned repository's `[context]` prices may raise keel's, never lower
/// them, and never price a model for a cost limit: the budget holds.
#[tokio::test]
async fn a_repository_cannot_make_the_budget_free() {
    let sandbox = sandbox_with_files();
    sandbox.write(".keel/config.toml", "[context]\ninput_price = 0.0\noutput_price = 0.0\n");
    let server = scripted_model_with(Wire::Chat, &reads(), TOKENS).await;
    let (code, result) = exec(&sandbox, &server, &["--max-cost", "3", "read the files"]);
    assert_eq!(code, Some(4), "{result}");
    assert_eq!(request_bodies(&server).await.len(), 2, "the user's prices count");
    assert!(close(&result["limits"]["spent_usd"], 2.2), "{result}");

    // Without the user's prices, the repository's do not price the model.
    let output = sandbox
        .run(&Model::chat(&server).named("mock-model"), &["exec", "--max-cost", "3", "hello"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("input_price"), "{stderr}");
    assert_eq!(request_bodies(&server).await.len(), 2);
}

/// A server reporting absurd usage (a bug, or a hostile endpoint at
/// `--base-url`: `u64::MAX` tokens) neither crashes keel (the session sums
/// overflowed) nor slips past a token limit (a wrapped sum reads as small).
#[tokio::test]
async fn absurd_usage_from_the_server_neither_crashes_nor_slips_past_a_token_limit() {
    let huge = Tokens { input: u64::MAX - 10, cached: 0, output: 5 };
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "f0.txt"}))] },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "f1.txt"}))] },
        Step::Answer("done".into()),
    ];
    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Chat, &steps, huge).await;
    let (code, result) = exec(&sandbox, &server, &["read the files"]);
    assert_eq!((code, &result["status"]), (Some(0), &json!("completed")), "{result}");
    assert!(result["usage"]["total_tokens"].as_u64().is_some(), "{result}");

    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Chat, &steps, huge).await;
    let (code, result) = exec(&sandbox, &server, &["--max-tokens", "100000000", "read the files"]);
    assert_eq!(code, Some(4), "{result}");
    assert_eq!(result["status"], "budget_exceeded");
    assert_eq!(request_bodies(&server).await.len(), 1, "the second request is not sent");
}

/// Review O1: 100 000 input and 1 000 output tokens per response. At
/// gpt-5-nano's prices a response costs $0.0054; at claude-opus-4's, $1.575.
const BIG: Tokens = Tokens { input: 100_000, cached: 0, output: 1_000 };
const NANO: f64 = 0.1 * 0.05 + 0.001 * 0.4;
const OPUS: f64 = 0.1 * 15.0 + 0.001 * 75.0;

/// A read, then an answer.
fn read_then_answer() -> Vec<Step> {
    let read = call("read_file", json!({ "path": "f0.txt" }));
    vec![Step::Calls { text: None, calls: vec![read] }, Step::Answer("done".into())]
}

/// `keel exec --json` on gpt-5-nano (keel's table prices it) with `args`, at an
/// Anthropic-protocol server (which serves the Claude model the command names),
/// `$KEEL_HOME/commands/deep.md` naming claude-opus-4.
fn exec_nano(sandbox: &Sandbox, server: &wiremock::MockServer, args: &[&str]) -> (i32, Value) {
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    let deep = "---\nmodel: claude-opus-4\n---\nLook deeply at $ARGUMENTS";
    std::fs::write(sandbox.home.join("commands/deep.md"), deep).unwrap();
    let (code, result) =
        exec_json_on(sandbox, Model::on(Wire::Anthropic, server), "gpt-5-nano", args);
    (code.unwrap_or(-1), result)
}

#[tokio::test]
async fn a_commands_model_is_held_to_the_limit_at_its_own_prices() {
    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Anthropic, &read_then_answer(), BIG).await;
    // The review's repro: $0.05 cannot buy one claude-opus-4 request of
    // this size (its projection alone is ~$0.17), so none is sent.
    let (code, result) = exec_nano(&sandbox, &server, &["--max-cost", "0.05", "/deep src"]);
    assert_eq!(code, 4, "{result}");
    assert_eq!(result["status"], "budget_exceeded");
    assert!(request_bodies(&server).await.is_empty(), "nothing reached claude-opus-4");
    let log = log_of(&result);
    let exceeded = lines_of(&log, "budget_exceeded");
    assert!(exceeded[0]["next_usd"].as_f64().unwrap() > 0.05, "{}", exceeded[0]);
    let switches: Vec<&Value> =
        lines_of(&log, "model_changed").iter().map(|l| &l["model"]).collect();
    assert_eq!(switches, [&json!("claude-opus-4"), &json!("gpt-5-nano")], "there and back");

    // $2: one claude-opus-4 response ($1.575) fits, a second would not.
    let sandbox = sandbox_with_files();
    let server = scripted_model_with(Wire::Anthropic, &read_then_answer(), BIG).await;
    let (code, result) = exec_nano(&sandbox, &server, &["--max-cost", "2", "/deep src"]);
    assert_eq!(code, 4, "{result}");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "the second request would cross $2");
    assert_eq!(bodies[0]["model"], "claude-opus-4");
    assert!(close(&result["cost_usd"], OPUS), "{result}");
    assert!(close(&result["limits"]["spent_usd"], OPUS), "{result}");
    let log = log_of(&result);
    let responses = lines_of(&log, "model_response");
    assert!(close(&responses[0]["cost_usd"], OPUS), "the line carries its cost: {}", responses[0]);

    // Resumed on gpt-5-nano: the logged spend is kept at the prices it was
    // charged at (not re-priced at nano's), and the new response adds nano's.
    let id = result["session_id"].as_str().unwrap().to_owned();
    let (code, again) = exec_nano(&sandbox, &server, &["resume", &id, "go on"]);
    assert_eq!(request_bodies(&server).await[1]["model"], "gpt-5-nano");
    assert!(close(&again["limits"]["spent_usd"], OPUS + NANO), "{again}");
    assert!(close(&again["cost_usd"], OPUS + NANO), "{again}");
    assert_eq!(code, 0, "{again}");
}

#[tokio::test]
async fn a_switch_to_a_model_without_prices_is_refused_under_a_cost_limit() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(sandbox.home.join("commands/local.md"), "---\nmodel: qwen3:8b\n---\nHi")
        .unwrap();
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("hi".into())]).await;
    let (code, result) = exec_nano(&sandbox, &server, &["--max-cost", "1", "/local"]);
    assert_eq!(code, 2, "a usage error, as at start: {result}");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("qwen3:8b") && error.contains("cost limit"), "{error}");
    assert!(error.contains("--max-tokens"), "the way out: {error}");
    assert!(request_bodies(&server).await.is_empty());
    assert!(lines_of(&log_of(&result), "model_changed").is_empty());
}

/// A server that reports no usage (an Ollama-like Chat server) still
/// spends: each response is charged at keel's estimate, so --max-tokens
/// stops the run, says it counts estimates, and a resume keeps the spend.
/// Before, such a session counted 0 tokens and no limit ever held.
#[tokio::test]
async fn max_tokens_holds_against_a_server_that_reports_no_usage() {
    let sandbox = sandbox_with_files();
    let server = scripted_chat_without_usage(&reads()).await;
    // One request of this session is estimated at well under 20 000
    // tokens (the first one alone must fit), seven of them at far more.
    let output = sandbox.run(
        &Model::chat(&server).named("mock-model"),
        &["exec", "--json", "--full-auto", "--max-tokens", "20000", "read the files"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap().clone();
    assert_eq!(output.status.code(), Some(4), "{result} {stderr}");
    assert_eq!(result["status"], "budget_exceeded", "{result}");
    let sent = request_bodies(&server).await.len();
    assert!((1..7).contains(&sent), "stopped before the script ended: {sent} requests");
    let spent = result["limits"]["spent_tokens"].as_u64().unwrap();
    assert!(spent > 0 && spent <= 20_000, "the estimates are the spend: {result}");
    assert_eq!(result["usage"]["total_tokens"], 0, "usage stays what the server reported");
    let warned = lines.iter().filter(|l| {
        l["type"] == "warning" && l["message"].as_str().unwrap().contains("reports no token usage")
    });
    assert_eq!(warned.count(), 1, "{lines:?}");
    let log = log_of(&result);
    let estimated: u64 = lines_of(&log, "model_response")
        .iter()
        .map(|line| line["estimated_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(estimated, spent, "each response's estimate is logged");

    // A second process goes on from the logged estimates.
    let id = result["session_id"].as_str().unwrap().to_owned();
    let (code, again) = exec_json(&sandbox, &server, "mock-model", &["resume", &id, "go on"]);
    assert_eq!(code, Some(4), "{again}");
    assert_eq!(again["limits"]["spent_tokens"].as_u64(), Some(spent), "{again}");
    assert_eq!(request_bodies(&server).await.len(), sent, "a resume cannot reset the budget");
}

/// The same for --max-cost: the estimates are priced into the spend
/// (`limits.spent_usd`), while `cost_usd`, like `usage`, stays what the
/// server reported.
#[tokio::test]
async fn max_cost_holds_against_a_server_that_reports_no_usage() {
    let sandbox = sandbox_with_files();
    let server = scripted_chat_without_usage(&reads()).await;
    // At $100 per million tokens a request of this session costs well
    // under $1.50, seven of them far more.
    let (code, result) = exec(&sandbox, &server, &["--max-cost", "1.5", "read the files"]);
    assert_eq!(code, Some(4), "{result}");
    assert!((1..7).contains(&request_bodies(&server).await.len()));
    let spent = result["limits"]["spent_usd"].as_f64().unwrap();
    assert!(spent > 0.0 && spent <= 1.5, "{result}");
    assert!(close(&result["cost_usd"], 0.0), "{result}");
    let log = log_of(&result);
    let estimated: f64 = lines_of(&log, "model_response")
        .iter()
        .map(|line| line["estimated_cost_usd"].as_f64().unwrap())
        .sum();
    assert!((estimated - spent).abs() < 1e-9, "{estimated} {spent}");
}
