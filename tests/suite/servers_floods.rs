//! Servers that never stop, through the real binary: an endless SSE line
//! and a flood of text deltas each end the request with one clear error
//! once keel's cap is reached (memory stays bounded; `benches/floods.rs`
//! measures the peak), and the request deadline bounds waiting, not
//! progress: a stream that keeps delivering text goes on past
//! `request_timeout_secs`, one that stops (keep-alives only) or never ends
//! is stopped with a message saying which.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::Sandbox;

/// A server on 127.0.0.1 that answers every request with an event stream
/// (closed by closing the connection) whose body `body` writes; returns
/// the base URL and the count of requests.
fn streaming_server(
    body: impl Fn(&mut TcpStream) -> std::io::Result<()> + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counter = requests.clone();
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 65536];
                let _ = stream.read(&mut buffer);
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                let _ = stream.write_all(head.as_bytes()).and_then(|()| body(&mut stream));
            });
        }
    });
    (base, requests)
}

/// One chat-completions chunk carrying `text`.
fn text_chunk(text: &str) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    format!("data: {chunk}\n\n")
}

/// The chunks that end a chat-completions stream.
fn finish_chunks() -> String {
    let done = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {done}\n\ndata: [DONE]\n\n")
}

/// `keel exec` (human output) against `base`, with `-c` settings.
fn exec(base: &str, settings: &[&str]) -> (std::process::Output, Duration) {
    let sandbox = Sandbox::new();
    let mut command = sandbox.keel();
    command.args(["exec", "--provider", "openai-chat", "--model", "m", "--base-url", base]);
    for setting in settings {
        command.args(["-c", setting]);
    }
    let started = Instant::now();
    let output = command.arg("hi").output().unwrap();
    (output, started.elapsed())
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Writes `piece` until `total` bytes went out or keel hung up.
fn flood(stream: &mut TcpStream, piece: &[u8], total: usize) -> std::io::Result<()> {
    let mut sent = 0;
    while sent < total {
        stream.write_all(piece)?;
        sent += piece.len();
    }
    Ok(())
}

#[test]
fn an_endless_sse_line_ends_the_request_at_the_cap() {
    let (base, requests) = streaming_server(|stream| {
        stream.write_all(b"data: ")?;
        flood(stream, &[b'a'; 65536], 256 << 20)
    });
    let (output, elapsed) = exec(&base, &["max_retries=2"]);
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: the server sent one line or event of more than 8 MiB; keel stopped reading"
        ),
        "{stderr}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1, "a flood is not asked for again");
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
}

#[test]
fn a_flood_of_text_deltas_ends_the_request_at_the_cap() {
    let (base, requests) = streaming_server(|stream| {
        let piece = text_chunk(&"x".repeat(4096));
        flood(stream, piece.as_bytes(), 256 << 20)?;
        stream.write_all(finish_chunks().as_bytes())
    });
    let (output, elapsed) = exec(&base, &["max_retries=2"]);
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: the server sent one response's text of more than 8 MiB"),
        "{stderr}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
}

/// Text every 150 ms for 3.5 s, then the end: the 2 s request deadline
/// does not cut an answer that is still coming (before: cut at 2 s, "the
/// server kept the request open").
#[test]
fn a_stream_delivering_text_outlasts_the_request_deadline() {
    let (base, _) = streaming_server(|stream| {
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(3500) {
            stream.write_all(text_chunk("word ").as_bytes())?;
            std::thread::sleep(Duration::from_millis(150));
        }
        stream.write_all(finish_chunks().as_bytes())
    });
    let (output, elapsed) =
        exec(&base, &["idle_timeout_secs=1", "request_timeout_secs=2", "max_retries=0"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(elapsed >= Duration::from_millis(3500), "{elapsed:?}");
    let answer = String::from_utf8_lossy(&output.stdout);
    assert!(answer.trim_end().ends_with("word word"), "the whole answer: {answer}");
}

/// Text for half a second, then keep-alives only: the deadline counts
/// from the last text, and the message says the answer stopped.
#[test]
fn an_answer_that_stops_behind_keep_alives_hits_the_deadline_and_says_so() {
    let (base, _) = streaming_server(|stream| {
        for _ in 0..5 {
            stream.write_all(text_chunk("word ").as_bytes())?;
            std::thread::sleep(Duration::from_millis(100));
        }
        loop {
            stream.write_all(b": keep-alive\n\n")?;
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (output, elapsed) =
        exec(&base, &["idle_timeout_secs=1", "request_timeout_secs=2", "max_retries=3"]);
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: the answer stopped streaming for 2s (request_timeout_secs) while the server \
             kept the request open"
        ),
        "{stderr}"
    );
    // The last text arrives 400 ms in: counted from it, the deadline ends
    // the run past 2.4 s; counted from the request, at 2 s.
    assert!(elapsed >= Duration::from_millis(2350), "counted from the last text: {elapsed:?}");
}

/// Text forever: the stream's own bound (4 × request_timeout) ends it.
#[test]
fn an_answer_that_never_ends_hits_the_stream_bound() {
    let (base, _) = streaming_server(|stream| {
        loop {
            stream.write_all(text_chunk("word ").as_bytes())?;
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (output, elapsed) =
        exec(&base, &["idle_timeout_secs=1", "request_timeout_secs=1", "max_retries=3"]);
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "error: the answer was still streaming after 4s, the most one response may take"
        ),
        "{stderr}"
    );
    assert!(elapsed >= Duration::from_secs(4) && elapsed < Duration::from_secs(20), "{elapsed:?}");
}

/// Runs keel with `args` under a Python parent that reports the peak RSS
/// of its children (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, KiB: keel and
/// what it started, each counted alone); returns keel's stderr, exit code,
/// that peak and the wall time.
pub(super) fn peak_rss(sandbox: &Sandbox, args: &[&str]) -> (String, Option<i32>, u64, Duration) {
    const WRAPPER: &str = "import resource, subprocess, sys\n\
        r = subprocess.run(sys.argv[1:])\n\
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n\
        sys.stderr.write('\\nPEAK_RSS_KIB=%d\\n' % peak)\n\
        sys.exit(r.returncode)\n";
    let started = Instant::now();
    let output = std::process::Command::new("python3")
        .args(["-c", WRAPPER])
        .arg(assert_cmd::cargo::cargo_bin("keel"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let peak = stderr
        .lines()
        .find_map(|line| line.strip_prefix("PEAK_RSS_KIB="))
        .and_then(|kib| kib.parse().ok())
        .unwrap_or_else(|| panic!("no peak reported: {stderr}"));
    (stderr, output.status.code(), peak, elapsed)
}

/// The acceptance figure of issue 35: keel's peak RSS under an endless SSE
/// line and under a 1 GB flood of text deltas stays under 64 MiB. Prints
/// the figures (`benches/README.md` has the latest). Not in the default
/// run: it measures, and the debug binary is slower than a release one.
/// Run: `cargo test --test all servers_floods::peak_rss -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn peak_rss_under_an_endless_line_and_a_text_flood_stays_under_64_mib() {
    const GIB: usize = 1 << 30;
    let endless_line = streaming_server(|stream| {
        stream.write_all(b"data: ")?;
        flood(stream, &[b'a'; 65536], 64 * GIB)
    });
    let text_flood = streaming_server(|stream| {
        let piece = text_chunk(&"x".repeat(4096));
        flood(stream, piece.as_bytes(), GIB)?;
        stream.write_all(finish_chunks().as_bytes())
    });
    let baseline = streaming_server(|stream| {
        stream.write_all(text_chunk("hello").as_bytes())?;
        stream.write_all(finish_chunks().as_bytes())
    });
    for (name, (base, _)) in [
        ("one answer (baseline)", baseline),
        ("endless SSE line", endless_line),
        ("1 GB text flood", text_flood),
    ] {
        let sandbox = Sandbox::new();
        let args = ["exec", "--provider", "openai-chat", "--model", "m", "--base-url", &base];
        let (stderr, code, kib, elapsed) =
            peak_rss(&sandbox, &[&args[..], &["-c", "max_retries=0", "hi"]].concat());
        let error = stderr.lines().find(|l| l.starts_with("error:")).unwrap_or("(none)");
        println!(
            "{name}: peak RSS {:.1} MiB, {:.2} s, exit {code:?}, {error}",
            kib as f64 / 1024.0,
            elapsed.as_secs_f64()
        );
        assert!(kib < 64 * 1024, "{name}: peak RSS {kib} KiB");
    }
}
