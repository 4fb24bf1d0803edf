//! Issue 22 through the real binary against a scripted model: shell calls
//! policy proves read-only run together (four `sleep 1` reads within
//! 1.5 s; a rendezvous of FIFOs only concurrent readers can meet), a write
//! among them runs alone and in its place, a "read" that writes after all
//! (a repository's `core.fsmonitor` behind `git status`) fails in its
//! read-only jail with nothing changed on disk, and Ctrl-C kills every
//! running read. Plus the read-only jail itself: nothing writable, temp
//! folders included.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime};

use keel::sandbox::landlock::{Confinement, NetworkMode, SandboxMode};
use keel::sandbox::netproxy::Bridges;
use keel::sandbox::{CommandSpec, jail::layers::Layers};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::jail_fixture::{KEEL, note, processes_named};
use super::support::{Model, Sandbox, json_lines, scripted_model, types};
use super::wire::{Step, Wire, call};

/// Why the jail cannot run here (the tests then say so and pass).
fn jail_unavailable(dir: &Path) -> Option<String> {
    let output = Command::new(KEEL)
        .args(["sandbox-exec", "--workspace-root"])
        .arg(dir)
        .args(["--", "--probe"])
        .output()
        .unwrap();
    match serde_json::from_slice::<Layers>(&output.stdout) {
        Ok(layers) if layers.landlock != keel::sandbox::landlock::Enforcement::None => None,
        Ok(layers) => Some(format!("landlock is not enforced: {layers:?}")),
        Err(error) => Some(format!("no probe answer ({error})")),
    }
}

fn shell_calls(commands: &[&str]) -> Step {
    let calls = commands.iter().map(|command| call("shell", json!({ "command": command })));
    Step::Calls { text: None, calls: calls.collect() }
}

/// `keel exec --json` (ask mode unless `args` say otherwise) on `steps`.
async fn exec(sandbox: &Sandbox, steps: &[Step], args: &[&str]) -> Output {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json"])
        .args(args)
        .arg("look around")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    output
}

/// The log's `tool_call_started`/`tool_call_finished` lines as
/// (`started`|`finished`, call id, timestamp), in log order.
fn call_lines(log: &[Value]) -> Vec<(&'static str, String, SystemTime)> {
    log.iter()
        .filter_map(|line| {
            let (kind, id) = match line["type"].as_str()? {
                "tool_call_started" => ("started", &line["call"]["call_id"]),
                "tool_call_finished" => ("finished", &line["result"]["call_id"]),
                _ => return None,
            };
            let ts = humantime::parse_rfc3339(line["ts"].as_str()?).ok()?;
            Some((kind, id.as_str()?.to_owned(), ts))
        })
        .collect()
}

/// Each shell result of the log by call id: (output, meta).
fn results(log: &[Value]) -> Vec<(String, Value)> {
    log.iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .map(|line| (line["result"]["output"].as_str().unwrap().to_owned(), line["meta"].clone()))
        .collect()
}

#[tokio::test]
async fn four_sleeping_reads_finish_within_one_and_a_half_seconds() {
    let sandbox = Sandbox::new();
    if let Some(reason) = jail_unavailable(&sandbox.repo) {
        return note(&format!("skipped: {reason}"));
    }
    for n in 1..=4 {
        sandbox.write(&format!("f{n}.txt"), &format!("file {n}\n"));
    }
    let commands: Vec<String> = (1..=4).map(|n| format!("sleep 1 && cat f{n}.txt")).collect();
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let steps = [shell_calls(&commands), Step::Answer("read them".into())];
    let started = Instant::now();
    let output = exec(&sandbox, &steps, &[]).await;
    let wall = started.elapsed();
    let log = sandbox.only_log();
    let lines = call_lines(&log);
    // Every call started before any finished: one batch of four.
    let kinds: Vec<&str> = lines.iter().map(|(kind, _, _)| *kind).collect();
    assert_eq!(kinds, ["started"; 4].iter().chain(&["finished"; 4]).copied().collect::<Vec<_>>());
    let batch = lines[7].2.duration_since(lines[0].2).unwrap();
    note(&format!("four `sleep 1` reads: batch {batch:?}, whole `keel exec` {wall:?}"));
    assert!(batch <= Duration::from_millis(1500), "the reads took {batch:?}: not concurrent");
    // Recorded in call order, each read's own output, each run as a read.
    for (n, (output, meta)) in results(&log).iter().enumerate() {
        assert!(output.contains(&format!("file {}", n + 1)), "{output}");
        assert_eq!(meta["read_only"], true, "{meta}");
    }
    let ids: Vec<&str> = lines[4..].iter().map(|(_, id, _)| id.as_str()).collect();
    let started_ids: Vec<&str> = lines[..4].iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(ids, started_ids);
    // The `--json` stream shows them running together too.
    let stream = json_lines(&output.stdout);
    let items: Vec<String> = stream
        .iter()
        .filter(|l| l["item"]["name"] == "shell")
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(items[..4], ["item_started"; 4], "{items:?}");
}

/// Opens every FIFO for writing once each has a reader at the same time,
/// then writes its name into it. Only readers running concurrently can
/// meet here; `deadline` bounds the wait when they do not.
fn meet_readers(fifos: &[std::path::PathBuf], deadline: Instant) -> bool {
    use rustix::fs::{Mode, OFlags};
    // A writer stays open once its reader came: closing it would hand that
    // reader an end of file while the other one is still on its way.
    let mut opened: Vec<Option<std::fs::File>> = fifos.iter().map(|_| None).collect();
    while Instant::now() < deadline {
        for (slot, fifo) in opened.iter_mut().zip(fifos) {
            if slot.is_none() {
                // Without a reader a non-blocking open for writing fails (ENXIO).
                *slot = rustix::fs::open(fifo, OFlags::WRONLY | OFlags::NONBLOCK, Mode::empty())
                    .ok()
                    .map(std::fs::File::from);
            }
        }
        if opened.iter().all(Option::is_some) {
            for (file, fifo) in opened.iter_mut().flatten().zip(fifos) {
                let name = fifo.file_name().unwrap().to_string_lossy().into_owned();
                let _ = writeln!(file, "met {name}");
            }
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[tokio::test]
async fn reads_around_a_write_run_together_and_the_write_alone_in_call_order() {
    let sandbox = Sandbox::new();
    if let Some(reason) = jail_unavailable(&sandbox.repo) {
        return note(&format!("skipped: {reason}"));
    }
    let fifos: Vec<std::path::PathBuf> =
        ["p1", "p2", "p3", "p4"].iter().map(|name| sandbox.repo.join(name)).collect();
    for fifo in &fifos {
        assert!(Command::new("mkfifo").arg(fifo).status().unwrap().success());
    }
    // Reads before the write cannot see it; reads after it do. Each pair
    // of reads blocks on its FIFOs until both are open for reading.
    let steps = [
        shell_calls(&[
            "cat p1; cat out.txt",
            "cat p2",
            "echo written > out.txt",
            "cat p3; cat out.txt",
            "cat p4",
        ]),
        Step::Answer("done".into()),
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    let (first, second) = (fifos[..2].to_vec(), fifos[2..].to_vec());
    let meeter = std::thread::spawn(move || {
        (meet_readers(&first, deadline), meet_readers(&second, deadline))
    });
    exec(&sandbox, &steps, &["--full-auto"]).await;
    let met = meeter.join().unwrap();
    assert_eq!(met, (true, true), "the reads of a pair never ran at the same time");
    let log = sandbox.only_log();
    let order: Vec<String> =
        call_lines(&log).iter().map(|(kind, id, _)| format!("{kind} {}", &id[..])).collect();
    let ids: Vec<String> = log
        .iter()
        .filter(|l| l["type"] == "tool_call_started")
        .map(|l| l["call"]["call_id"].as_str().unwrap().to_owned())
        .collect();
    let [r1, r2, w, r3, r4] = &ids[..] else { panic!("{ids:?}") };
    let expected: Vec<String> = [
        ("started", r1),
        ("started", r2),
        ("finished", r1),
        ("finished", r2),
        ("started", w),
        ("finished", w),
        ("started", r3),
        ("started", r4),
        ("finished", r3),
        ("finished", r4),
    ]
    .iter()
    .map(|(kind, id)| format!("{kind} {id}"))
    .collect();
    assert_eq!(order, expected);
    let results = results(&log);
    assert!(
        results[0].0.contains("met p1") && results[0].0.contains("No such file"),
        "{results:?}"
    );
    assert!(results[3].0.contains("met p3") && results[3].0.contains("written"), "{results:?}");
    let read_only: Vec<bool> = results.iter().map(|(_, meta)| meta["read_only"] == true).collect();
    assert_eq!(read_only, [true, true, false, true, true]);
    assert_eq!(sandbox.read("out.txt"), "written\n");
}

#[tokio::test]
async fn a_read_that_writes_after_all_fails_in_its_jail_and_nothing_changes() {
    let sandbox = Sandbox::new();
    if let Some(reason) = jail_unavailable(&sandbox.repo) {
        return note(&format!("skipped: {reason}"));
    }
    // `git status` is on the read-only list, but the repository's config
    // can make it run a program (its fsmonitor hook) that policy never
    // sees. A command judged a read runs git with such programs switched
    // off, and the read-only jail would stop the write besides.
    sandbox.write("a.txt", "a\n");
    let hook = "echo pwned > pwned.txt; false";
    let configured = Command::new("git")
        .args(["config", "core.fsmonitor", hook])
        .current_dir(&sandbox.repo)
        .status()
        .unwrap();
    assert!(configured.success());
    let steps = [shell_calls(&["git status --short", "cat a.txt"]), Step::Answer("ok".into())];
    exec(&sandbox, &steps, &["--full-auto"]).await;
    assert!(
        !sandbox.repo.join("pwned.txt").exists(),
        "the misjudged read wrote into the workspace"
    );
    let log = sandbox.only_log();
    let (output, meta) = &results(&log)[0];
    assert_eq!(meta["read_only"], true, "{meta}");
    assert!(output.contains("?? a.txt") && !output.contains("pwned"), "the hook ran: {output}");
}

#[tokio::test]
async fn ctrl_c_kills_every_running_read() {
    let sandbox = Sandbox::new();
    if let Some(reason) = jail_unavailable(&sandbox.repo) {
        return note(&format!("skipped: {reason}"));
    }
    let marker = format!("par-{}", std::process::id());
    let commands: Vec<String> =
        (1..=3).map(|n| format!("sleep 60 && cat f{n}.txt # {marker}")).collect();
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    let steps = [shell_calls(&commands), Step::Answer("unreachable".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let mut child = Command::new(KEEL)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "sleep"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until all three commands run, then press Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(60);
    let running = || processes_named(&marker).iter().filter(|p| p.starts_with("bash -c")).count();
    while running() < 3 {
        assert!(Instant::now() < deadline, "the three reads never ran together");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pressed = Instant::now();
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let lines: Vec<Value> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|line| super::support::exec_line(&line.unwrap()))
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{:?}", types(&lines));
    assert!(pressed.elapsed() < Duration::from_secs(30), "the reads were not killed");
    let answered = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["is_error"] == true)
        .count();
    assert_eq!(answered, 3, "{:?}", types(&lines));
    // Nothing of the three calls outlives them (the kernel may still be
    // tearing the jails down: wait for that, bounded).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_named(&marker).is_empty() {
        assert!(Instant::now() < deadline, "survivors: {:?}", processes_named(&marker));
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_read_only_jail_writes_nowhere_temp_folders_included() {
    let sandbox = Sandbox::new();
    if let Some(reason) = jail_unavailable(&sandbox.repo) {
        return note(&format!("skipped: {reason}"));
    }
    let session = Confinement {
        launcher: KEEL.into(),
        mode: SandboxMode::WorkspaceWrite,
        workspace_roots: vec![sandbox.repo.clone()],
        extra_roots: vec![sandbox.home.clone()],
        read_only: Vec::new(),
        network: NetworkMode::Off,
        bridges: Bridges::default(),
        required: true,
        protect_vcs: true,
        git_write: false,
        max_pids: 512,
        shared_network: None,
        hidden: Vec::new(),
    };
    let targets = [
        sandbox.repo.join("new.txt"),
        sandbox.home.join("new.txt"),
        "/tmp/keel-parallel-read-only-probe".into(),
        "/var/tmp/keel-parallel-read-only-probe".into(),
        "/dev/shm/keel-parallel-read-only-probe".into(),
    ];
    let script: String = targets
        .iter()
        .map(|target| format!("echo x > '{}' || echo refused; ", target.display()))
        .collect();
    for (confinement, writable) in [(session.clone(), true), (session.for_reads(), false)] {
        let spec = CommandSpec::script(script.clone(), &sandbox.repo).confined(&confinement);
        let out = keel::sandbox::run(&spec, &CancellationToken::new()).await.unwrap();
        let refused = out.stdout.text().matches("refused").count();
        let written = targets.iter().filter(|target| target.exists()).count();
        for target in &targets {
            let _ = std::fs::remove_file(target);
        }
        if writable {
            // The ordinary jail: the same script writes every one.
            assert_eq!((refused, written), (0, targets.len()), "{}", out.stderr.text());
        } else {
            assert_eq!((refused, written), (targets.len(), 0), "{}", out.stderr.text());
        }
    }
}
