//! Input typed while a turn runs (issue 37), through the real binary:
//! `keel exec --input-stream` reads JSON lines from stdin; a `queue` line
//! runs as a turn of its own after the running one, a `steer` line lands in
//! the running turn after its tool batch; both are logged when read and
//! delivered once, also across a SIGKILL and `keel exec resume`.
//!
//! The long call waits for a file the test creates (no sleep in the test);
//! every wait is on keel's output.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdout, Stdio};

use serde_json::{Value, json};

use super::support::{Model, Sandbox, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// A shell call that runs until the test creates `go` in the repo.
pub(super) fn waits_for_go() -> Step {
    let command = "while [ ! -f go ]; do sleep 0.05; done; echo released";
    Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
}

pub(super) struct Run {
    pub(super) child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    seen: Vec<Value>,
}

impl Run {
    pub(super) fn start(sandbox: &Sandbox, model: &Model, args: &[&str]) -> Self {
        let (exec, rest) = args.split_first().unwrap();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("keel"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &sandbox.home)
            .env("KEEL_HOME", &sandbox.home)
            .current_dir(&sandbox.repo)
            .arg(exec)
            .args(model.flags())
            .args(rest)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines, seen: Vec::new() }
    }

    pub(super) fn send(&mut self, line: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Reads `--json` lines until one matches.
    pub(super) fn until(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        loop {
            let Some(line) = self.lines.next() else {
                panic!("keel ended before {what}: {:#?}", self.seen)
            };
            let value: Value = serde_json::from_str(&line.unwrap()).unwrap();
            self.seen.push(value.clone());
            if matches(&value) {
                return value;
            }
        }
    }

    pub(super) fn shell_started(&mut self) {
        self.until("the shell call", |v| {
            v["type"] == "item_started" && v["item"]["name"] == "shell"
        });
    }

    pub(super) fn finish(mut self) -> (Vec<Value>, Option<i32>) {
        drop(self.child.stdin.take());
        for line in self.lines.by_ref() {
            self.seen.push(serde_json::from_str(&line.unwrap()).unwrap());
        }
        let code = self.child.wait().unwrap().code();
        (self.seen, code)
    }
}

fn user(text: &str, deliver: &str) -> Value {
    json!({ "type": "user", "text": text, "deliver": deliver })
}

/// The user messages of a chat request, in order.
fn user_texts(request: &Value) -> Vec<String> {
    let messages = request["messages"].as_array().unwrap();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// The log's `user_message` lines: (text, queued id).
fn deliveries(log: &[Value]) -> Vec<(String, Option<u64>)> {
    log.iter()
        .filter(|line| line["type"] == "user_message")
        .map(|line| (line["text"].as_str().unwrap().to_owned(), line["queued"].as_u64()))
        .collect()
}

#[tokio::test]
async fn two_queued_prompts_from_stdin_run_in_order_then_the_run_ends_at_eof() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("one done".into()), Step::Answer("two done".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let mut run = Run::start(&sandbox, &model, &["exec", "--json", "--input-stream"]);
    run.send(user("first task", "queue"));
    run.send(json!({ "type": "user", "text": "second task" }));
    let (lines, code) = run.finish();
    assert_eq!(code, Some(0), "{lines:#?}");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["final_text"], "two done");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(user_texts(&requests[0]).last().unwrap(), "first task");
    assert_eq!(user_texts(&requests[1]).last().unwrap(), "second task");
    let queued: Vec<&Value> = lines.iter().filter(|l| l["type"] == "input_queued").collect();
    assert_eq!(queued.len(), 2, "{lines:#?}");
    let log = read_jsonl(&sandbox.only_log_path());
    assert_eq!(
        deliveries(&log),
        [("first task".to_owned(), Some(1)), ("second task".to_owned(), Some(2))]
    );
}

#[tokio::test]
async fn a_steer_lands_after_the_batch_and_a_queued_prompt_runs_after_the_turn() {
    let sandbox = Sandbox::new();
    let steps =
        [waits_for_go(), Step::Answer("steered".into()), Step::Answer("queued one done".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let mut run =
        Run::start(&sandbox, &model, &["exec", "--json", "--full-auto", "--input-stream", "begin"]);
    run.shell_started();
    run.send(user("and then the queued task", "queue"));
    run.send(user("use tabs, not spaces", "steer"));
    // Both are logged while the command still runs.
    run.until("the steer queued", |v| v["type"] == "input_queued" && v["mode"] == "steer");
    let log = read_jsonl(&sandbox.only_log_path());
    assert!(log.iter().any(|l| l["type"] == "input_queued" && l["text"] == "use tabs, not spaces"));
    assert!(!log.iter().any(|l| l["type"] == "tool_call_finished"), "the call still runs");
    sandbox.write("go", "");
    let (lines, code) = run.finish();
    assert_eq!(code, Some(0), "{lines:#?}");
    assert_eq!(lines.last().unwrap()["final_text"], "queued one done");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 3);
    // The second request of the first turn carries the steer after the
    // command's result.
    let messages = requests[1]["messages"].as_array().unwrap();
    let tail: Vec<&str> =
        messages.iter().rev().take(2).map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(tail, ["user", "tool"], "{messages:#?}");
    assert_eq!(messages.last().unwrap()["content"], "use tabs, not spaces");
    assert_eq!(user_texts(&requests[2]).last().unwrap(), "and then the queued task");
    let turns = lines.iter().filter(|l| l["type"] == "turn_started").count();
    assert_eq!(turns, 2, "the steer ran in the first turn");
    let log = read_jsonl(&sandbox.only_log_path());
    let delivered = deliveries(&log);
    assert_eq!(delivered.iter().filter(|(_, id)| id.is_some()).count(), 2, "{delivered:?}");
}

#[tokio::test]
async fn a_message_queued_during_a_long_call_survives_sigkill_and_is_delivered_once_on_resume() {
    let sandbox = Sandbox::new();
    let steps = [
        waits_for_go(),
        Step::Answer("finished the interrupted turn".into()),
        Step::Answer("did the queued task".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let mut run =
        Run::start(&sandbox, &model, &["exec", "--json", "--full-auto", "--input-stream", "begin"]);
    run.shell_started();
    run.send(user("the task typed before the crash", "queue"));
    run.until("the input queued", |v| v["type"] == "input_queued");
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    let log_path = sandbox.only_log_path();
    let log = read_jsonl(&log_path);
    assert!(log.iter().any(|l| l["type"] == "input_queued"), "logged before the kill");
    assert!(deliveries(&log).iter().all(|(_, id)| id.is_none()), "not delivered yet");
    let session = log[0]["session_id"].as_str().unwrap().to_owned();

    let resumed = sandbox.run(&model, &["exec", "resume", &session, "--json", "--full-auto"]);
    let lines = super::support::json_lines(&resumed.stdout);
    assert_eq!(resumed.status.code(), Some(0), "{lines:#?}");
    assert_eq!(lines.last().unwrap()["final_text"], "did the queued task");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 3);
    assert_eq!(user_texts(&requests[2]).last().unwrap(), "the task typed before the crash");
    // Once: a second resume has nothing left to deliver.
    let again = sandbox.run(&model, &["exec", "resume", &session, "--json", "--full-auto"]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(request_bodies(&server).await.len(), 3, "nothing was sent again");
    let log = read_jsonl(&log_path);
    let delivered: Vec<_> = deliveries(&log).into_iter().filter(|(_, id)| id.is_some()).collect();
    assert_eq!(delivered, [("the task typed before the crash".to_owned(), Some(1))]);
}

/// `ask_user` in `exec`: no one answers; the model reads that it must
/// decide or stop, and the `result` lists the question. Not offered to
/// the model headless (it could not work), answered all the same.
#[tokio::test]
async fn exec_answers_ask_user_with_no_one_and_lists_the_question_in_the_result() {
    let sandbox = Sandbox::new();
    let question = json!({ "question": "Which database?", "choices": ["SQLite", "Postgres"] });
    let steps = [
        Step::Calls { text: None, calls: vec![call("ask_user", question)] },
        Step::Answer("went with SQLite".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--json", "pick a database"]);
    let lines = super::support::json_lines(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{lines:#?}");
    let result = lines.last().unwrap();
    assert_eq!(result["unanswered_questions"], json!(["Which database?"]));
    let requests = request_bodies(&server).await;
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(!offered.contains(&"ask_user"), "{offered:?}");
    let answer = requests[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(answer["role"], "tool");
    assert_eq!(answer["content"], keel::agent::NO_ANSWER);
}

/// `exec --answer-from-stdin`: a script answers `ask_user` a line at a
/// time (a choice's number picks the choice, other text is the answer);
/// each question is shown on stderr first; after EOF a question is
/// unanswered as without the flag. The answers are logged.
#[tokio::test]
async fn exec_answer_from_stdin_answers_each_question_with_the_next_line() {
    let sandbox = Sandbox::new();
    let ask = |question: Value| Step::Calls { text: None, calls: vec![call("ask_user", question)] };
    let steps = [
        ask(json!({ "question": "Which database?", "choices": ["SQLite", "Postgres"] })),
        ask(json!({ "question": "Which port?" })),
        ask(json!({ "question": "Anything else?" })),
        Step::Answer("set up Postgres on 5433".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json", "--answer-from-stdin", "set up a db"])
        .write_stdin("2\nuse 5433\n")
        .output()
        .unwrap();
    let lines = super::support::json_lines(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{lines:#?}\n{stderr}");
    assert!(stderr.contains("question (ask_user): Which database?\n  1. SQLite\n  2. Postgres"));
    assert!(stderr.contains("answered (ask_user): Postgres"), "{stderr}");
    assert!(stderr.contains("no answer (ask_user): stdin is closed"), "{stderr}");
    let result = lines.last().unwrap();
    assert_eq!(result["unanswered_questions"], json!(["Anything else?"]));
    let requests = request_bodies(&server).await;
    assert!(requests[0].to_string().contains("ask_user"), "offered when a script answers");
    assert!(requests[0].to_string().contains("a script answers your `ask_user` questions"));
    let answer_in = |n: usize| {
        let last = requests[n]["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "tool");
        last["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(answer_in(1), "The user answered: Postgres");
    assert_eq!(answer_in(2), "The user answered: use 5433");
    assert_eq!(answer_in(3), keel::agent::NO_ANSWER);
    let log = sandbox.only_log().iter().map(Value::to_string).collect::<String>();
    assert!(log.contains("The user answered: use 5433"), "the answer is in the log");
}

/// Both read stdin: the flag refuses a prompt from stdin and
/// `--input-stream`, before anything runs.
#[test]
fn exec_answer_from_stdin_refuses_other_readers_of_stdin() {
    let sandbox = Sandbox::new();
    let model = Model::at("openai-chat", "http://127.0.0.1:9");
    let piped = sandbox
        .keel_on(&model, &["exec", "--answer-from-stdin", "-"])
        .write_stdin("a task\n")
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(2));
    let said = String::from_utf8_lossy(&piped.stderr);
    assert!(said.contains("--answer-from-stdin reads the answers from stdin"), "{said}");
    let streamed =
        sandbox.run(&model, &["exec", "--answer-from-stdin", "--input-stream", "a task"]);
    assert_eq!(streamed.status.code(), Some(2));
    let said = String::from_utf8_lossy(&streamed.stderr);
    assert!(said.contains("cannot be used with"), "{said}");
}
