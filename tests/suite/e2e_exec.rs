//! The real `keel exec` binary against scripted models of all three wire
//! protocols, in temp git repos.

use serde_json::json;

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model, types};
use super::transcript;
use super::wire::{Step, Wire, call};

/// Read, edit (with the edit tool `[tools] edit = "auto"` offers on
/// `wire`: `apply_patch` on Responses, `edit_file` elsewhere), check.
fn edit_trajectory(wire: Wire) -> Vec<Step> {
    let edit = match wire {
        Wire::Responses => call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello world\n+goodbye world\n*** End Patch\n"}),
        ),
        _ => call(
            "edit_file",
            json!({"path": "hello.txt", "old_string": "hello", "new_string": "goodbye"}),
        ),
    };
    vec![
        Step::Calls {
            text: Some("Let me look at the file.".into()),
            calls: vec![call("read_file", json!({"path": "hello.txt"}))],
        },
        Step::Calls { text: None, calls: vec![edit] },
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "cat hello.txt"}))] },
        Step::Answer("Done: hello.txt now says goodbye.".into()),
    ]
}

async fn run_edit_trajectory(wire: Wire) {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hello world\n");
    let server = scripted_model(wire, &edit_trajectory(wire)).await;
    let output = sandbox.run(
        &Model::on(wire, &server).named("mock-model"),
        &["exec", "--json", "--full-auto", "Change hello to goodbye in hello.txt"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{wire:?} stderr: {stderr}");
    assert_eq!(sandbox.read("hello.txt"), "goodbye world\n", "{wire:?}");

    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result", "{wire:?}");
    assert_eq!(types(&lines).iter().filter(|t| *t == "result").count(), 1);
    // The file changed and nothing verified it afterwards (issue 6's gate).
    assert_eq!(result["status"], "unverified");
    assert_eq!(result["final_text"], "Done: hello.txt now says goodbye.");
    assert_eq!(result["usage"]["output_tokens"], 80, "{wire:?}: {result}");
    let shell_done = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .unwrap();
    assert_eq!(shell_done["item"]["is_error"], false, "{shell_done}");
    assert!(shell_done["item"]["output"].as_str().unwrap().contains("goodbye world"));

    // The log holds every step, write-ahead: started before finished.
    let log = sandbox.only_log();
    let log_types = types(&log);
    assert_eq!(log_types.iter().filter(|t| *t == "model_response").count(), 4, "{log_types:?}");
    assert_eq!(log_types.iter().filter(|t| *t == "tool_call_started").count(), 3);
    assert_eq!(log_types.iter().filter(|t| *t == "tool_call_finished").count(), 3);
    assert_eq!(log.last().unwrap()["type"], "session_ended");
    let end = &log[log.len() - 2];
    assert_eq!(end["type"], "turn_completed");
    assert_eq!(end["outcome"], "completed");
    for (seq, line) in log.iter().enumerate() {
        assert_eq!(line["seq"], seq as u64);
    }
    assert!(result["log_path"].as_str().unwrap().ends_with(".jsonl"));

    // The model saw each tool's result: the last request carries the
    // shell output.
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4, "{wire:?}");
    assert!(bodies[3].to_string().contains("goodbye world"), "{wire:?}");
}

#[tokio::test]
async fn responses_api_edits_a_file_end_to_end() {
    run_edit_trajectory(Wire::Responses).await;
}

#[tokio::test]
async fn chat_completions_edits_a_file_end_to_end() {
    run_edit_trajectory(Wire::Chat).await;
}

#[tokio::test]
async fn anthropic_messages_edits_a_file_end_to_end() {
    run_edit_trajectory(Wire::Anthropic).await;
}

#[tokio::test]
async fn bad_tool_calls_become_errors_the_model_reads() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![
                ("read_file".to_owned(), "{\"path\": \"a.txt\"".to_owned()),
                ("launch_rockets".to_owned(), "{}".to_owned()),
            ],
        },
        Step::Answer("Sorry.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--json", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let errors: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["is_error"] == true)
        .collect();
    assert_eq!(errors.len(), 2, "{lines:?}");
    assert!(errors[1]["item"]["output"].as_str().unwrap().contains("launch_rockets"));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2, "the session went on after the bad calls");
}

#[tokio::test]
async fn exec_without_full_auto_declines_writes_and_says_how_to_allow_them() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "x.txt", "content": "x"}))],
        },
        Step::Answer("I could not write.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "write x"]);
    assert_eq!(output.status.code(), Some(3), "declined work is needs_approval");
    assert!(!sandbox.repo.join("x.txt").exists());
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    let bodies = request_bodies(&server).await;
    assert!(bodies[1].to_string().contains("--full-auto"), "the model is told how to allow it");
}

#[tokio::test]
async fn model_failure_exits_1_with_the_servers_message() {
    let sandbox = Sandbox::new();
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(wiremock::ResponseTemplate::new(500).set_body_json(
            json!({"error": {"message": "the mock is on fire", "type": "server_error"}}),
        ))
        .mount(&server)
        .await;
    let output =
        sandbox.run(&Model::chat(&server), &["exec", "--json", "-c", "max_retries=1", "go"]);
    assert_eq!(output.status.code(), Some(1));
    json_lines(&output.stdout);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

#[test]
fn usage_errors_exit_2_and_still_end_with_a_result_line() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().args(["exec", "--json", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    assert_eq!(types(&lines), ["result"]);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

#[test]
fn prompt_from_stdin_must_not_be_empty() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .keel_on(&Model::at("openai-chat", "http://127.0.0.1:9"), &["exec", "-"])
        .write_stdin("   \n")
        .output()
        .unwrap();
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

#[tokio::test]
async fn prompt_from_stdin_and_last_message_to_a_file() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("All good.".into())]).await;
    let out_file = sandbox.home.join("last.txt");
    let output = sandbox
        .keel_on(
            &Model::on(Wire::Anthropic, &server),
            &["exec", "-o", out_file.to_str().unwrap(), "-"],
        )
        .write_stdin("What is in this repo?\n")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "All good.\n");
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "All good.");
    let bodies = request_bodies(&server).await;
    assert!(bodies[0].to_string().contains("What is in this repo?"));
}

#[tokio::test]
async fn agents_md_from_the_repo_reaches_the_model() {
    let sandbox = Sandbox::new();
    sandbox.write("AGENTS.md", "Run `make check` before delivering.\n");
    sandbox.write("sub/AGENTS.md", "In sub/, prefer tabs.\n");
    let server = scripted_model(Wire::Responses, &[Step::Answer("ok".into())]).await;
    let output = sandbox
        .keel()
        .current_dir(sandbox.repo.join("sub"))
        .arg("exec")
        .args(Model::on(Wire::Responses, &server).flags())
        .args(["hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&server).await;
    let instructions = bodies[0]["instructions"].as_str().unwrap();
    let root = instructions.find("make check").expect("root AGENTS.md missing");
    let sub = instructions.find("prefer tabs").expect("sub/AGENTS.md missing");
    assert!(root < sub, "root instructions come first");
}

#[tokio::test]
async fn result_reports_cost_and_context_for_known_models() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Anthropic, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(
        &Model::on(Wire::Anthropic, &server).named("claude-sonnet-4-5"),
        &["exec", "--json", "hi"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    // The scripted stream reports 60 fresh + 40 cache-read input tokens and 20 output.
    assert_eq!(result["usage"]["input_tokens"], 100, "{result}");
    assert_eq!(result["usage"]["cached_input_tokens"], 40);
    let cost = result["cost_usd"].as_f64().unwrap();
    let expected = (60.0 * 3.0 + 40.0 * 0.3 + 20.0 * 15.0) / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    assert_eq!(result["context_percent"], 0.1, "100 of 200k tokens, rounded");
}

#[tokio::test]
async fn skills_are_listed_and_loaded_on_demand() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".agents/skills/release-notes/SKILL.md",
        "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n\nUse `git log --oneline v1..HEAD` and group by area.\n",
    );
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("load_skill", json!({"name": "release-notes"}))],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "notes please"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&server).await;
    let first = bodies[0].to_string();
    assert!(
        first.contains("release-notes: Write release notes from the git log."),
        "index missing"
    );
    assert!(!first.contains("group by area"), "bodies stay out until loaded");
    assert!(bodies[1].to_string().contains("group by area"), "load_skill brought the body");
}

/// Every call policy judges has a `policy_decision` line, with the rules
/// that matched, before the call runs or is refused.
#[tokio::test]
async fn policy_decisions_with_matched_rules_are_logged_before_the_call() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hello world\n");
    let rules = "prefix_rule(pattern=[\"curl\"], decision=\"forbidden\", \
                 justification=\"no downloads\")\n";
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(sandbox.home.join("rules/user.rules"), rules).unwrap();
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "hello.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "curl -s http://127.0.0.1:9/x"}))],
        },
        Step::Answer("Could not download.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(
        &Model::chat(&server).named("mock-model"),
        &["exec", "--json", "--full-auto", "Download x"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let log = sandbox.only_log();
    let at = |kind: &str, id: &str| {
        log.iter()
            .position(|l| {
                l["type"] == kind
                    && (l["call_id"] == id
                        || l["call"]["call_id"] == id
                        || l["result"]["call_id"] == id)
            })
            .unwrap_or_else(|| panic!("no {kind} for {id}: {log:#?}"))
    };
    let read = log.iter().find(|l| l["type"] == "tool_call_started").unwrap();
    let read_id = read["call"]["call_id"].as_str().unwrap();
    assert!(at("policy_decision", read_id) < at("tool_call_started", read_id));
    assert_eq!(log[at("policy_decision", read_id)]["decision"], "allow");

    let curl = log.iter().filter(|l| l["type"] == "policy_decision").nth(1).unwrap();
    assert_eq!(curl["decision"], "forbidden", "{curl}");
    let rule = &curl["matched_rules"][0];
    assert_eq!(rule["pattern"], json!(["curl"]), "{curl}");
    assert_eq!(rule["justification"], "no downloads", "{curl}");
    assert!(rule["source"].as_str().unwrap().contains("user.rules"), "{curl}");
    let curl_id = curl["call_id"].as_str().unwrap();
    assert!(at("policy_decision", curl_id) < at("tool_call_finished", curl_id));
    assert_eq!(
        log.iter().filter(|l| l["type"] == "tool_call_started").count(),
        1,
        "curl never ran"
    );
}

/// A YAML "billion laughs": 9 levels of 10 aliases each, 10^9 nodes in
/// about 500 bytes of front matter.
fn alias_bomb(name: &str) -> String {
    let mut text =
        format!("---\nname: {name}\ndescription: d\na0: &a0 [l, l, l, l, l, l, l, l, l, l]\n");
    for level in 1..9 {
        let refs = vec![format!("*a{}", level - 1); 10].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    text + "---\nbody\n"
}

/// A cloned repository's skills and memory notes are read before it is
/// trusted: front matter that expands to gigabytes is refused, said, and
/// the session goes on. keel runs under a 2 GB address-space limit, so
/// a regression fails here (allocation failure) instead of eating the
/// machine's memory.
#[tokio::test]
async fn yaml_alias_bombs_in_an_untrusted_repository_are_refused_not_expanded() {
    let sandbox = Sandbox::new();
    sandbox.write(".agents/skills/bomb/SKILL.md", &alias_bomb("bomb"));
    sandbox.write(".keel/memory/bomb.md", &alias_bomb("bomb"));
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = std::process::Command::new("sh")
        .args(["-c", "ulimit -v 2000000 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_keel")])
        .args(["exec", "--json", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "hi"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let warnings: Vec<String> = lines
        .iter()
        .filter(|line| line["type"] == "warning")
        .map(|line| line["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    for file in ["skills/bomb/SKILL.md", "memory/bomb.md"] {
        let said = warnings.iter().any(|w| w.contains(file) && w.contains("aliases"));
        assert!(said, "{file} not refused: {warnings:?}");
    }
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

/// A provider endpoint answering with a redirect does not get keel to send
/// the API key to the host it names: reqwest strips `Authorization` on a
/// cross-host redirect, but not Anthropic's `x-api-key` (nor Azure's
/// `api-key`), and resends the whole request (307).
#[tokio::test]
async fn a_redirecting_endpoint_does_not_get_the_api_key_sent_elsewhere() {
    let elsewhere = scripted_model(Wire::Anthropic, &[Step::Answer("ok".into())]).await;
    let server = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(
            wiremock::ResponseTemplate::new(307)
                .insert_header("location", format!("{}/v1/messages", elsewhere.uri())),
        )
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let output = sandbox
        .keel()
        .env("ANTHROPIC_API_KEY", "sk-ant-canary")
        .arg("exec")
        .args(Model::on(Wire::Anthropic, &server).named("claude-sonnet-4-5").flags())
        .args(["--json", "-c", "max_retries=0", "hi"])
        .output()
        .unwrap();
    let sent: Vec<String> = elsewhere
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| format!("{:?}", request.headers))
        .collect();
    assert!(sent.is_empty(), "the request went to the other host: {sent:?}");
    let result = json_lines(&output.stdout).last().cloned().unwrap_or_default();
    assert_eq!(result["status"], "failed", "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("307") && error.contains(&elsewhere.uri()), "{error}");
}
