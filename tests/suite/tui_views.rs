//! Issue 37's information commands in the real TUI (tmux,
//! `tmux_support.rs`): `/context`, `/config`, `/permissions`, `/agents`,
//! `/hooks` and `/memory` show what the session runs with, each fact with
//! where it came from; main answered "unknown command" to all six. Every
//! wait is on the screen.

use super::support::{Sandbox, scripted_model};
use super::tmux_support::launch;
use super::wire::{Step, Wire};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_info_commands_show_what_the_session_runs_with_and_where_it_came_from() {
    let sandbox = Sandbox::new();
    let config = "[tui]\nnotify = \"bell\"\n\
                  [[hooks.PreToolUse]]\nmatcher = \"shell\"\n\
                  [[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"true HOOK-MARK\"\n\
                  [mcp_servers.docs]\ncommand = \"/nonexistent/docs-server\"\n\
                  env = { DOCS_TOKEN = \"tok-secret-55\" }\n";
    std::fs::write(sandbox.home.join("config.toml"), config).unwrap();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(
        sandbox.home.join("rules/mine.rules"),
        "prefix_rule(pattern=[\"make\", \"lint\"], decision=\"allow\")\n",
    )
    .unwrap();
    let note = "---\nname: lint-first\ndescription: always run the linter first\ntype: project\n---\nRun make lint.\n";
    sandbox.write(".keel/memory/lint-first.md", note);
    let server = scripted_model(Wire::Chat, &[Step::Answer("Hello.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);

    pane.type_text("/config");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["config (the last source wins", "tui.notify", "(user)"]);
    assert!(screen.contains("mcp_servers.docs.env.DOCS_TOKEN = ••••"), "{screen}");
    assert!(!screen.contains("tok-secret-55"), "{screen}");

    pane.type_text("/permissions");
    pane.keys(&["Enter"]);
    pane.wait_for(&["rules in force", "allow     make lint", "mine.rules:1 (user)"]);

    pane.type_text("/hooks");
    pane.keys(&["Enter"]);
    pane.wait_for(&["hooks in force:", "PreToolUse [shell]  true HOOK-MARK"]);

    pane.type_text("/agents");
    pane.keys(&["Enter"]);
    pane.wait_for(&["agent types the model may start", "← built in"]);

    pane.type_text("/memory");
    pane.keys(&["Enter"]);
    pane.wait_for(&["1. lint-first: always run the linter first", "lint-first.md"]);

    pane.type_text("hi");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Hello."]);
    pane.keys(&["C-l"]);
    pane.type_text("/context");
    pane.keys(&["Enter"]);
    pane.wait_for(&[
        "context of the latest request (turn 1)",
        "prefix (instructions, tools)",
        "history",
    ]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
