//! Real MCP servers from PyPI (installed by `.ci/run` into a cached venv,
//! pinned with hashes by `tests/fixtures/mcp-pypi/requirements.txt`), each
//! driven end to end by `keel exec` with a scripted model: `mcp-server-time`,
//! `mcp-server-git` (on the sandbox's repository) and a FastMCP server of
//! our own (`tests/fixtures/mcp-pypi/fastmcp_server.py`: a tool, a resource,
//! a resource template), its resources listed, read and `@`-mentioned.
//!
//! A plain clone without the venv passes these (they say "skipped: … not
//! installed at …"); under `CI` a missing venv fails.

use std::path::Path;

use serde_json::{Value, json};

use super::mcp_support::{exec_ask as exec, pypi_servers, write_config};
use super::support::Sandbox;
use super::wire::{Step, call};

fn calls(list: &[(&str, Value)]) -> Step {
    Step::Calls { text: None, calls: list.iter().map(|(n, a)| call(n, a.clone())).collect() }
}

/// The results of the model's calls, in the order it made them.
fn results(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] != Value::Null)
        .map(|l| &l["item"])
        .collect()
}

fn output(item: &Value) -> &str {
    item["output"].as_str().unwrap_or_else(|| panic!("no text output: {item}"))
}

/// A `[mcp_servers.NAME]` table running the venv's `program` with `args`,
/// its read-only claims trusted (so reads run in ask mode). The startup
/// bound is generous: importing FastMCP takes about a second alone and
/// more on a machine busy with the rest of the suite.
fn table(name: &str, venv: &Path, program: &str, args: &[String]) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = {args:?}\ntrust_read_only_hint = true\n\
         startup_timeout_sec = 60\n",
        venv.join("bin").join(program).display().to_string()
    )
}

/// The `mcp__` tools the first request offered the model.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn mcp_server_time_is_listed_and_tells_the_time() {
    let Some(venv) = pypi_servers() else { return };
    let sandbox = Sandbox::new();
    write_config(&sandbox, &table("time", &venv, "mcp-server-time", &[]));

    let listed = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", String::from_utf8_lossy(&listed.stderr));
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(servers[0]["status"], "ready", "{servers}");
    let tools: Vec<&Value> = servers[0]["tools"].as_array().unwrap().iter().collect();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["tool"].as_str()).collect();
    assert!(names.contains(&"get_current_time") && names.contains(&"convert_time"), "{names:?}");
    assert!(tools.iter().all(|t| t["read_only"] == true), "{tools:?}");

    let steps = [
        calls(&[
            ("mcp__time__get_current_time", json!({"timezone": "UTC"})),
            (
                "mcp__time__convert_time",
                json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
            ),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec(&sandbox, &steps, "what time is it?", 0).await;
    let offered = offered(&bodies[0]);
    assert!(offered.contains(&"mcp__time__get_current_time".to_owned()), "{offered:?}");
    // The SDK advertises `resources` though the server lists none: no tool for nothing.
    assert!(!offered.contains(&"mcp__time__resources".to_owned()), "{offered:?}");
    let results = results(&lines);
    assert_eq!(results.len(), 2, "{results:#?}");
    let now = output(results[0]);
    assert!(now.contains("\"timezone\": \"UTC\"") && now.contains("+00:00"), "{now}");
    let tokyo = output(results[1]);
    assert!(tokyo.contains("T21:00:00+09:00"), "noon UTC is 21:00 in Tokyo: {tokyo}");
    // Both results reached the model in its next request.
    let second = bodies[1].to_string();
    assert!(second.contains("+00:00") && second.contains("T21:00:00+09:00"), "{second}");
}

fn git(repo: &Path, args: &[&str]) {
    let identity = ["-c", "user.name=keel test", "-c", "user.email=test@keel.invalid"];
    let status = std::process::Command::new("git")
        .args(identity)
        .args(args)
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn mcp_server_git_reads_the_repository_and_asks_before_changing_it() {
    let Some(venv) = pypi_servers() else { return };
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hello\n");
    git(&sandbox.repo, &["add", "hello.txt"]);
    git(&sandbox.repo, &["commit", "-qm", "a first commit from the test"]);
    sandbox.write("hello.txt", "hello, again\n");
    sandbox.write("untracked.txt", "new\n");
    let repo = sandbox.repo.display().to_string();
    let args = ["--repository".to_owned(), repo.clone()];
    write_config(&sandbox, &table("git", &venv, "mcp-server-git", &args));

    let steps = [
        calls(&[
            ("mcp__git__git_status", json!({"repo_path": repo})),
            ("mcp__git__git_log", json!({"repo_path": repo, "max_count": 1})),
            ("mcp__git__git_add", json!({"repo_path": repo, "files": ["untracked.txt"]})),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec(&sandbox, &steps, "what changed?", 3).await;
    let results = results(&lines);
    assert_eq!(results.len(), 3, "{results:#?}");
    let status = output(results[0]);
    assert!(status.contains("modified:   hello.txt"), "{status}");
    assert!(status.contains("untracked.txt"), "{status}");
    let log = output(results[1]);
    assert!(log.contains("a first commit from the test"), "{log}");
    // git_add does not claim to be read-only: ask mode asks (headless: declined).
    assert!(output(results[2]).contains("needs approval"), "{}", results[2]);
    let result = lines.last().unwrap();
    assert_eq!(result["declined"][0]["name"], "mcp__git__git_add", "{result}");
    let staged = std::process::Command::new("git")
        .args(["diff", "--cached", "--name-only"])
        .current_dir(&sandbox.repo)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&staged.stdout), "", "nothing was staged");
    let second = bodies[1].to_string();
    assert!(second.contains("modified:   hello.txt"), "{second}");
    assert!(second.contains("a first commit from the test"), "{second}");
}

const README: &str = "fixture://notes/readme";

fn fastmcp(sandbox: &Sandbox, venv: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp-pypi/fastmcp_server.py")
        .display()
        .to_string();
    write_config(sandbox, &table("fixture", venv, "python", &[script]));
}

#[tokio::test]
async fn a_fastmcp_server_s_tool_and_resources_through_keel() {
    let Some(venv) = pypi_servers() else { return };
    let sandbox = Sandbox::new();
    fastmcp(&sandbox, &venv);
    let resources = "mcp__fixture__resources";
    let steps = [
        calls(&[
            ("mcp__fixture__shout", json!({"text": "ahoy", "times": 2})),
            (resources, json!({})),
            (resources, json!({"uri": README})),
            (resources, json!({"uri": "fixture://users/42"})),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec(&sandbox, &steps, "use the fixture", 0).await;
    let status = lines.iter().find(|l| l["type"] == "mcp_server_status").unwrap();
    assert_eq!(status["status"], "ready", "{status}");
    let offered = offered(&bodies[0]);
    assert_eq!(offered, ["mcp__fixture__shout", resources], "{offered:?}");
    let results = results(&lines);
    assert_eq!(results.len(), 4, "{results:#?}");
    assert_eq!(output(results[0]), "AHOY AHOY");
    let listing = output(results[1]);
    assert!(listing.contains(&format!("- {README} — readme (text/plain)")), "{listing}");
    assert!(listing.contains("URI templates"), "{listing}");
    assert!(listing.contains("- fixture://users/{user_id} — user"), "{listing}");
    let read = output(results[2]);
    assert!(read.starts_with(&format!("[resource {README}]")), "{read}");
    assert!(read.contains("KEEL-FASTMCP-README: the tide turns at noon"), "{read}");
    let user = output(results[3]);
    assert!(user.contains("user 42"), "the template filled in: {user}");
    let second = bodies[1].to_string();
    assert!(second.contains("AHOY AHOY") && second.contains("the tide turns at noon"), "{second}");
}

#[tokio::test]
async fn an_at_mention_inlines_a_fastmcp_resource() {
    let Some(venv) = pypi_servers() else { return };
    let sandbox = Sandbox::new();
    fastmcp(&sandbox, &venv);
    let steps = [Step::Answer("noted".into())];
    let (lines, bodies) = exec(&sandbox, &steps, &format!("summarise @fixture:{README}."), 0).await;
    let first = bodies[0].to_string();
    assert!(
        first.contains(&format!("<mcp_resource server=\\\"fixture\\\" uri=\\\"{README}\\\">")),
        "{first}"
    );
    assert!(first.contains("the tide turns at noon"), "{first}");
    assert_eq!(lines.last().unwrap()["status"], "completed", "{:?}", lines.last());
}
