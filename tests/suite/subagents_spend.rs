//! A subagent's spend against a server that reports no usage (an
//! Ollama-like Chat server), through the real `keel exec` binary: each
//! response is charged at keel's estimate, and a child's estimates count
//! in its parent's spend limits as its reported usage does, live and on a
//! resume; a child's own token budget holds against such a server too.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::routed_model::{Reply, Route, RoutedModel, tool_results};
use super::subagents_e2e::{
    PARENT, agent_call, answer, calls, exec, logs, of_type, parent_id, result_of,
};
use super::support::{Sandbox, read_jsonl};
use super::wire::call;

/// Bytes of each file a child reads: about 4 000 tokens at keel's 3 bytes
/// a token, so every read adds that much to each later request's estimate.
const FILE_BYTES: usize = 12_000;

fn sandbox_with_big_files() -> Sandbox {
    let sandbox = Sandbox::new();
    let line = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST\n";
    let text = line.repeat(FILE_BYTES / line.len());
    for n in 0..3 {
        sandbox.write(&format!("big{n}.txt"), &text);
    }
    sandbox
}

/// A child's script: three reads of big files, one request each, then
/// its answer.
fn child_script(task: &str) -> Vec<Reply> {
    let mut replies: Vec<Reply> = (0..3)
        .map(|n| calls(vec![call("read_file", json!({ "path": format!("big{n}.txt") }))]))
        .collect();
    replies.push(answer(&format!("{task} done")));
    replies
}

/// A parent that delegates `tasks` one after the other, then answers; a
/// route per task; no response reports usage.
fn delegating_model(tasks: &[&'static str]) -> RoutedModel {
    let mut parent: Vec<Reply> = tasks
        .iter()
        .map(|task| calls(vec![agent_call("explore", task, &format!("{task}: look"))]))
        .collect();
    parent.push(answer("all looked"));
    let mut routes = vec![Route::system("parent", PARENT, parent).without_usage()];
    for task in tasks {
        routes.push(Route::first_user(task, task, child_script(task)).without_usage());
    }
    RoutedModel::start(routes)
}

/// The tokens charged at keel's estimate on a log's `model_response` lines.
fn estimated_in(log: &[Value]) -> u64 {
    of_type(log, "model_response")
        .iter()
        .map(|line| line["estimated_tokens"].as_u64().unwrap_or(0))
        .sum()
}

/// Every response of every log was charged at keel's estimate: their sum.
fn estimated_everywhere(parents: &[PathBuf], children: &[PathBuf]) -> u64 {
    parents.iter().chain(children).map(|path| estimated_in(&read_jsonl(path))).sum()
}

/// The run's `limits.spent_tokens` with the exit code.
fn spent_of(output: &std::process::Output) -> (Option<i32>, u64) {
    let result = result_of(output);
    (output.status.code(), result["limits"]["spent_tokens"].as_u64().unwrap())
}

/// `keel exec --json resume ID PROMPT` with `flags`.
fn resume(sandbox: &Sandbox, model: &RoutedModel, flags: &[&str]) -> std::process::Output {
    let id = parent_id(sandbox);
    let mut args = vec!["--full-auto"];
    args.extend_from_slice(flags);
    args.extend(["resume", id.as_str()]);
    exec(sandbox, model, &args, "go on")
}

/// Each child's estimates (no server reports usage) count in the parent's
/// `--max-tokens`: a child gets what is left after the parent's own
/// estimates, and once children have spent it the parent's next request
/// is not sent (exit 4). Before, the parent counted only what children's
/// servers reported (nothing) and gave each child the whole limit, so a
/// delegating run spent far past it and ended `completed`.
#[test]
fn a_parent_stops_at_its_token_limit_counting_its_childrens_estimates() {
    let sandbox = sandbox_with_big_files();
    let model = delegating_model(&["task 1", "task 2", "task 3", "task 4"]);
    // Each parent request is estimated at some 4 000 tokens, each child's
    // requests at ~2 000, ~6 000, ~11 000 and ~15 000: the limit covers
    // the first child's three first requests and not all four children.
    let output = exec(&sandbox, &model, &["--full-auto", "--max-tokens", "30000"], "Delegate");
    let result = result_of(&output);
    let (code, spent) = spent_of(&output);
    assert_eq!(code, Some(4), "{result}");
    assert_eq!(result["status"], "budget_exceeded", "{result}");
    assert_eq!(result["usage"]["total_tokens"], 0, "usage stays what the servers reported");
    assert!(model.of("task 4").is_empty(), "the run went on past its limit");

    let (parents, children) = logs(&sandbox);
    let all = estimated_everywhere(&parents, &children);
    assert!(all <= 30_000, "every request of the run, children's included: {all}");
    assert_eq!(spent, all, "the spend is every log's estimates: {result}");
    let parent = read_jsonl(&parents[0]);
    let finished = of_type(&parent, "subagent_finished");
    assert_eq!(finished.len(), children.len());
    for (line, child) in finished.iter().zip(&children) {
        let child = read_jsonl(child);
        // None where a child was stopped before its first request.
        let estimated = line["estimated_tokens"].as_u64().unwrap_or(0);
        assert_eq!(estimated, estimated_in(&child), "{line}");
        assert_eq!(line["usage"]["input_tokens"], 0, "{line}");
    }
    // The first child's share is what the parent's own first request
    // left, not the whole limit.
    let first = of_type(&parent, "model_response")[0]["estimated_tokens"].as_u64().unwrap();
    let child = read_jsonl(&children[0]);
    assert_eq!(of_type(&child, "limits_set")[0]["max_tokens"].as_u64(), Some(30_000 - first));

    // A resume starts from the same spend: nothing more is sent.
    let received = model.received().len();
    let again = resume(&sandbox, &model, &[]);
    assert_eq!(spent_of(&again), (Some(4), spent), "{}", result_of(&again));
    assert_eq!(model.received().len(), received, "a resume cannot reset the budget");
}

/// A resume rebuilds the children's estimates from the parent's
/// `subagent_finished` lines: a session that spent its tokens mostly in
/// children is resumed under a limit of what it spent, and the next
/// request is not sent. Before, the rebuilt spend was the parent's own
/// estimates only, well under the limit, and the request went out.
#[test]
fn a_resume_keeps_the_childrens_estimated_spend() {
    let sandbox = sandbox_with_big_files();
    let model = delegating_model(&["task 1", "task 2"]);
    let output = exec(&sandbox, &model, &["--full-auto"], "Delegate");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    let (parents, children) = logs(&sandbox);
    let all = estimated_everywhere(&parents, &children);
    let own = estimated_in(&read_jsonl(&parents[0]));
    assert!(all > 2 * own, "children spent most of it: {own} of {all}");
    assert_eq!(spent_of(&output), (Some(0), all));

    let received = model.received().len();
    let limit = all.to_string();
    let again = resume(&sandbox, &model, &["--max-tokens", &limit]);
    let result = result_of(&again);
    assert_eq!(spent_of(&again), (Some(4), all), "{result}");
    assert_eq!(result["status"], "budget_exceeded", "{result}");
    assert_eq!(model.received().len(), received, "the request crossing the limit was sent");
}

/// A child's own token budget (`[agents] max_tokens`) holds against a
/// server that reports no usage: its estimates are its spend, so the
/// request that would cross the budget is never sent, and the parent is
/// told why the child stopped.
#[test]
fn a_childs_token_budget_holds_against_a_server_that_reports_no_usage() {
    let sandbox = sandbox_with_big_files();
    let model = delegating_model(&["task 1"]);
    let flags = ["--full-auto", "-c", "agents.max_tokens=12000"];
    let output = exec(&sandbox, &model, &flags, "Delegate");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    // ~2 000 and ~6 000 tokens fit; the third request (~11 000) would not.
    assert_eq!(model.of("task 1").len(), 2, "the child's requests");
    let (_, children) = logs(&sandbox);
    let child = read_jsonl(&children[0]);
    let estimated = estimated_in(&child);
    assert!(estimated > 0 && estimated <= 12_000, "{estimated}");
    assert_eq!(of_type(&child, "budget_exceeded")[0]["limit"], "tokens");
    let parent = model.of("parent");
    let told = tool_results(&parent[1].body).pop().unwrap();
    assert!(told.contains("[agents] max_tokens") && told.contains("12000"), "{told}");
}

/// The same for `--max-cost`: children's estimates are priced into the
/// parent's spend (`limits.spent_usd`, each child's on its
/// `subagent_finished` line), while `cost_usd` stays what was reported.
#[test]
fn a_parent_stops_at_its_cost_limit_counting_its_childrens_estimates() {
    let sandbox = sandbox_with_big_files();
    let model = delegating_model(&["task 1", "task 2", "task 3", "task 4"]);
    // At $100 per million tokens, $3 is the 30 000 tokens above.
    let prices = ["-c", "context.input_price=100", "-c", "context.output_price=100"];
    let mut flags = vec!["--full-auto", "--max-cost", "3"];
    flags.extend(prices);
    let output = exec(&sandbox, &model, &flags, "Delegate");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(4), "{result}");
    assert!(model.of("task 4").is_empty(), "the run went on past its limit");
    let (parents, children) = logs(&sandbox);
    let priced: f64 = parents
        .iter()
        .chain(&children)
        .flat_map(|path| read_jsonl(path))
        .filter(|line| line["type"] == "model_response")
        .map(|line| line["estimated_cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    let spent = result["limits"]["spent_usd"].as_f64().unwrap();
    assert!(priced <= 3.0 && (spent - priced).abs() < 1e-9, "{priced} {result}");
    let parent = read_jsonl(&parents[0]);
    let passed_up: f64 = of_type(&parent, "subagent_finished")
        .iter()
        .map(|line| line["estimated_cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    assert!(passed_up > 0.0, "the children's estimates are priced");
    assert_eq!(result["cost_usd"].as_f64(), Some(0.0), "{result}");
}

/// The crash point of issue 35: keel stopped after the parent's
/// `subagent_finished` line and before the `agent` call's result (the
/// log is cut there, as a SIGKILL between the two writes leaves it). The
/// resume finishes the call from the child's log without running the
/// child again, and the child's spend counts once: the run's spend is
/// every log's requests, and the parent's log says the child finished
/// once. Before, the resume counted the child a second time.
#[test]
fn a_crash_between_a_childs_finished_line_and_the_calls_result_counts_the_child_once() {
    let sandbox = sandbox_with_big_files();
    let model = delegating_model(&["task 1"]);
    let output = exec(&sandbox, &model, &["--full-auto"], "Delegate");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    let (parents, children) = logs(&sandbox);
    let text = std::fs::read_to_string(&parents[0]).unwrap();
    let mut kept = String::new();
    for line in text.split_inclusive('\n') {
        kept.push_str(line);
        if line.contains("\"type\":\"subagent_finished\"") {
            break;
        }
    }
    assert!(kept.len() < text.len(), "the call's result followed the child's line");
    std::fs::write(&parents[0], kept).unwrap();
    let child_requests = model.of("task 1").len();

    let again = resume(&sandbox, &model, &[]);
    let result = result_of(&again);
    assert_eq!(again.status.code(), Some(0), "{result}");
    assert_eq!(model.of("task 1").len(), child_requests, "the child ran again");
    let all = estimated_everywhere(&parents, &children);
    assert_eq!(spent_of(&again), (Some(0), all), "the child counts once: {result}");
    let parent = read_jsonl(&parents[0]);
    assert_eq!(of_type(&parent, "subagent_finished").len(), 1);
}
