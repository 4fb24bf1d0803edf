//! Snapshots of `/context /config /permissions /agents /hooks /memory`
//! (`slash_info.rs`), drawn from fixed facts.

use crate::config::ConfigValue;
use crate::context::ledger::{Ledger, Part, Priced, Request, RequestKind, Share, Source};
use crate::policy::ApprovalMode;
use crate::policy::ApprovalScope;
use crate::protocol::Usage;
use crate::runtime::{AlwaysAnswer, HookLine, InForce, RuleLine};

use super::app::{App, Command};
use super::slash::run;
use super::slash_info::{SessionInfo, context_text};
use super::view_tests::render;
use super::{Level, Theme};

fn in_force() -> InForce {
    InForce {
        rules: vec![
            RuleLine {
                decision: "allow".into(),
                pattern: "cargo test".into(),
                at: "/home/u/.keel/rules/mine.rules:3".into(),
                origin: "user".into(),
            },
            RuleLine {
                decision: "forbidden".into(),
                pattern: "git push".into(),
                at: "/work/repo/.keel/rules/local.rules:1".into(),
                origin: "project".into(),
            },
        ],
        builtin_rules: 212,
        always: vec![
            AlwaysAnswer {
                text: "npm run lint".into(),
                at: Some("/work/repo/.keel/rules/local.rules:2".into()),
                this_session: true,
                scope: ApprovalScope::AlwaysPrefix(vec!["npm".into(), "run".into(), "lint".into()]),
            },
            AlwaysAnswer {
                text: "tool mcp__docs__search".into(),
                at: Some("/work/repo/.keel/rules/local.rules:3".into()),
                this_session: false,
                scope: ApprovalScope::AlwaysTool("mcp__docs__search".into()),
            },
            AlwaysAnswer {
                text: "write notes.md".into(),
                at: None,
                this_session: true,
                scope: ApprovalScope::SessionFile("notes.md".into()),
            },
        ],
        agents: vec![
            ("explore".into(), "reads the code, changes nothing".into(), "built in".into()),
            (
                "reviewer".into(),
                "reviews a diff".into(),
                "/work/repo/.keel/agents/reviewer.md".into(),
            ),
        ],
        hooks: vec![HookLine {
            event: "PreToolUse".into(),
            matcher: Some("shell".into()),
            command: "./check.sh".into(),
            source: "/work/repo/.keel/config.toml".into(),
            project: true,
        }],
        memory: vec![(
            "lint-first".into(),
            "always run the linter first".into(),
            "/work/repo/.keel/memory/lint-first.md".into(),
        )],
    }
}

fn app() -> App {
    let mut app = App::new(Theme::default(), ApprovalMode::Ask);
    app.info = SessionInfo {
        in_force: Some(in_force()),
        config: vec![
            ConfigValue {
                key: "model".into(),
                value: "\"m-project\"".into(),
                source: "/work/repo/.keel/config.toml (project)".into(),
                ignored: None,
            },
            ConfigValue {
                key: "mcp_servers.docs.env.TOKEN".into(),
                value: "••••".into(),
                source: "/home/u/.keel/config.toml (user)".into(),
                ignored: None,
            },
            ConfigValue {
                key: "sandbox.mode".into(),
                value: "\"off\"".into(),
                source: "/work/repo/.keel/config.toml (project)".into(),
                ignored: Some("ignored: a project may not set it".into()),
            },
        ],
    };
    app
}

#[test]
fn config_and_permissions_say_where_each_came_from() {
    let mut app = app();
    assert_eq!(run(&mut app, "/config"), []);
    assert_eq!(run(&mut app, "/permissions"), []);
    insta::assert_snapshot!("slash_config_permissions", render(&app, 110, 24));
}

/// `/permissions remove N` sends the N-th listed answer to the session;
/// a wrong N says what is there, and during a turn it waits.
#[test]
fn permissions_remove_takes_back_the_listed_answer() {
    let mut app = app();
    assert_eq!(
        run(&mut app, "/permissions remove 2"),
        [Command::RemoveAlways(ApprovalScope::AlwaysTool("mcp__docs__search".into()))]
    );
    assert_eq!(run(&mut app, "/permissions remove 9"), []);
    assert_eq!(run(&mut app, "/permissions drop"), []);
    insta::assert_snapshot!("slash_permissions_remove_misses", render(&app, 100, 12));
    app.status.running = true;
    assert_eq!(run(&mut app, "/permissions remove 1"), []);
    assert_eq!(app.editor.text(), "/permissions remove 1", "kept for after the turn");
}

#[test]
fn agents_hooks_and_memory_list_their_sources() {
    let mut app = app();
    for command in ["/agents", "/hooks", "/memory"] {
        assert_eq!(run(&mut app, command), []);
    }
    insta::assert_snapshot!("slash_agents_hooks_memory", render(&app, 110, 20));
    assert_eq!(
        run(&mut app, "/memory 1"),
        [Command::EditFile("/work/repo/.keel/memory/lint-first.md".into())]
    );
    assert_eq!(run(&mut app, "/memory 7"), []);
}

#[test]
fn they_work_while_a_turn_runs() {
    let mut app = app();
    app.status.running = true;
    assert_eq!(run(&mut app, "/context"), [Command::ShowContext]);
    run(&mut app, "/hooks");
    assert!(app.hint.is_none());
}

fn part(source: Source, label: &str, input_tokens: u64) -> Part {
    Part { source, label: label.into(), share: Share { input_tokens, ..Share::default() } }
}

#[test]
fn context_splits_the_latest_request_by_part() {
    let request = Request {
        seq: 9,
        turn: 2,
        step: 1,
        kind: RequestKind::Response,
        model: "m".into(),
        usage: Usage { input_tokens: 12_000, output_tokens: 200, ..Usage::default() },
        cost_usd: None,
        priced: Priced::ByTokens,
        estimated_tokens: None,
        estimated_cost_usd: None,
        parts: vec![
            part(Source::Prefix, "prefix (instructions, tools)", 6_000),
            part(Source::Context, "context notes", 500),
            part(Source::History, "history", 1_500),
            part(Source::Tool { name: "read_file".into() }, "tool read_file", 3_000),
            part(Source::Mcp { server: "docs".into() }, "mcp docs", 1_000),
            part(Source::Output, "output", 0),
        ],
    };
    let ledger = Ledger { requests: vec![request], ..Ledger::default() };
    let mut app = app();
    app.notice(Level::Info, context_text(&ledger, Some(128_000)));
    app.notice(Level::Info, context_text(&Ledger::default(), None));
    insta::assert_snapshot!("slash_context", render(&app, 100, 18));
}
