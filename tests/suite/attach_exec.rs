//! `keel attach ID` to a running `keel exec` (issue 40): the attacher, a
//! plain pipe, sees the transcript so far and the live stream, is told it
//! watches only, and its typed text is refused with a notice; the run goes
//! on, ends as it would have, and the log had one writer. Every wait is on
//! a line read, never a timer.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::queue_e2e::{Run, waits_for_go};
use super::support::{Model, Sandbox, read_jsonl, scripted_model};
use super::wire::{Step, Wire};

#[tokio::test]
async fn an_exec_run_can_be_watched_from_another_terminal_and_goes_on_alone() {
    let sandbox = Sandbox::new();
    let steps = [waits_for_go(), Step::Answer("released and done".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let mut run = Run::start(&sandbox, &model, &["exec", "--json", "--full-auto", "begin"]);
    run.shell_started();
    let log_path = sandbox.only_log_path();
    let id = log_path.file_stem().unwrap().to_string_lossy().into_owned();

    let mut attacher = Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .args(["attach", &id])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let mut lines = BufReader::new(attacher.stdout.take().unwrap()).lines();
    let mut until = |what: &str, seen: &mut Vec<String>| loop {
        let Some(line) = lines.next() else { panic!("attach ended before {what}: {seen:#?}") };
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains(what) {
            return;
        }
    };
    until("a `keel exec` run: watching only", &mut seen);
    until("begin", &mut seen);
    let mut stdin = attacher.stdin.take().unwrap();
    writeln!(stdin, "please also do this").unwrap();
    stdin.flush().unwrap();
    until("takes no typed input", &mut seen);

    std::fs::write(sandbox.repo.join("go"), "").unwrap();
    until("released and done", &mut seen);
    let (out, code) = run.finish();
    assert_eq!(code, Some(0), "{out:#?}");
    let result = out.iter().rev().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["status"], "completed");
    drop(stdin);
    let _ = attacher.wait();

    let log = read_jsonl(&log_path);
    let typed = log.iter().any(|l| l.to_string().contains("please also do this"));
    assert!(!typed, "the attacher's text reached nothing");
    let seqs: Vec<u64> = log.iter().map(|l: &Value| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "one writer");
}
