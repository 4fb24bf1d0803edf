//! A project with hundreds of agent types and skills (as the published
//! collections install them): the first request stays bounded, every type
//! and skill stays reachable (the compact index names some, a search
//! through the existing tools finds the rest, any loads by name), and the
//! start says in one line per kind what the indexes leave out.

use serde_json::json;

use super::support::{Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

const SKILLS: usize = 700;
const AGENTS: usize = 400;

fn install_collection(sandbox: &Sandbox) {
    for i in 0..SKILLS {
        let name = format!("skill-{i:04}");
        sandbox.write(
            &format!(".claude/skills/{name}/SKILL.md"),
            &format!(
                "---\nname: {name}\ndescription: Use when working with format {i} files, \
                 parsing, validating and converting them, with the scripts in this folder.\n\
                 ---\nBODY-OF-{name}\n"
            ),
        );
    }
    let agents = sandbox.home.join(".claude/agents");
    std::fs::create_dir_all(&agents).unwrap();
    for i in 0..AGENTS {
        let name = format!("type-{i:04}");
        std::fs::write(
            agents.join(format!("{name}.md")),
            format!(
                "---\nname: {name}\ndescription: Expert number {i} for a domain; use PROACTIVELY \
                 when the task touches its area, its APIs, its tests or its deployment.\n\
                 tools: Read, Grep, WebSearch\n---\nYou are expert {i}.\n"
            ),
        )
        .unwrap();
    }
}

#[tokio::test]
async fn four_hundred_agent_types_and_seven_hundred_skills_cost_a_bounded_first_request() {
    let sandbox = Sandbox::new();
    install_collection(&sandbox);
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call("load_skill", json!({"name": "search:skill 0699"})),
                call("agent", json!({"agent": "search:type 0399"})),
                call("load_skill", json!({"name": "skill-0650"})),
            ],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = server.received_requests().await.unwrap();
    let first = String::from_utf8_lossy(&requests[0].body).into_owned();
    assert!(first.len() <= 24_000, "first request is {} bytes", first.len());
    assert!(first.contains("- skill-0000:"), "the compact index names the first skills");
    assert!(first.contains("`load_skill` with name `search:WORDS`"), "how to find the rest");
    assert!(first.contains("`agent` with agent `search:WORDS`"), "how to find other types");
    assert!(first.contains("- review (read-only):"), "built-in types stay listed first");
    let bodies = request_bodies(&server).await;
    let second = bodies[1].to_string();
    assert!(second.contains("- skill-0699:"), "the last skill is found by search");
    assert!(second.contains("- type-0399 (read-only):"), "the last type is found by search");
    assert!(second.contains("BODY-OF-skill-0650"), "an unlisted skill loads by name");
    let warnings: Vec<String> = json_lines(&output.stdout)
        .into_iter()
        .filter(|line| line["type"] == "warning")
        .map(|line| line["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(warnings.len() <= 3, "one line per kind: {warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains("of 702 skills")), "{warnings:#?}");
    assert!(warnings.iter().any(|w| w.contains("of 403 agent types")), "{warnings:#?}");
    assert!(
        warnings.iter().any(|w| w.starts_with("400 agent types run without tools")),
        "{warnings:#?}"
    );
}
