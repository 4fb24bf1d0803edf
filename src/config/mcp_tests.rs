use std::collections::BTreeMap;

use super::*;
use crate::config::{CliOverrides, load_mcp};

fn env(dir: &Path, vars: &[(&str, &str)]) -> Environment {
    let env = Environment {
        keel_home: dir.join("home"),
        cwd: dir.join("repo"),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    };
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    std::fs::create_dir_all(&env.keel_home).unwrap();
    env
}

fn names(servers: &[McpServerConfig]) -> Vec<&str> {
    servers.iter().map(|server| server.name.as_str()).collect()
}

const USER: &str = r#"
[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { DOCS_TOKEN = "t0k3n" }
tool_timeout_sec = 30
disabled_tools = ["delete"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
http_headers = { "X-Team" = "keel" }
startup_timeout_sec = 2.5
trust_read_only_hint = true

[mcp_servers.off]
command = "x"
enabled = false
"#;

#[test]
fn codex_shaped_tables_resolve_with_defaults_and_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[("REMOTE_TOKEN", "s3cret")]);
    std::fs::write(env.keel_home.join("config.toml"), USER).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert_eq!(names(&mcp.servers), ["docs", "remote"]);
    let docs = &mcp.servers[0];
    assert_eq!(docs.tool_timeout, Duration::from_secs(30));
    assert_eq!(docs.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    assert!(docs.offers("search") && !docs.offers("delete"));
    // A server's read-only claims count only where the user says so.
    assert!(!docs.trust_read_only_hint && mcp.servers[1].trust_read_only_hint);
    let McpTransport::Http { bearer_token, headers, .. } = &mcp.servers[1].transport else {
        panic!("remote is an HTTP server")
    };
    assert_eq!(bearer_token.as_ref().map(|t| t.0.as_str()), Some("s3cret"));
    assert_eq!(headers[0].0, "X-Team");
    assert_eq!(mcp.servers[1].startup_timeout, Duration::from_millis(2500));
    assert_eq!(mcp.skipped[0].name, "off");
    let shown = format!("{mcp:?}");
    assert!(!shown.contains("s3cret") && !shown.contains("t0k3n"), "{shown}");
}

#[test]
fn overrides_change_one_key_of_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[("REMOTE_TOKEN", "s")]);
    std::fs::write(env.keel_home.join("config.toml"), USER).unwrap();
    let cli = CliOverrides {
        set: vec!["mcp_servers.docs.enabled=false".into(), "mcp_servers.off.enabled=true".into()],
        ..CliOverrides::default()
    };
    let mcp = load_mcp(&env, &cli).unwrap();
    assert_eq!(names(&mcp.servers), ["off", "remote"]);
}

#[test]
fn entries_that_cannot_work_are_skipped_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[]);
    let config = r#"
[mcp_servers.both]
command = "x"
url = "http://127.0.0.1:1/mcp"
[mcp_servers.neither]
args = ["x"]
[mcp_servers.tokenless]
url = "http://127.0.0.1:1/mcp"
bearer_token_env_var = "NOT_SET_ANYWHERE"
[mcp_servers.slow]
command = "x"
startup_timeout_sec = -1
[mcp_servers.good]
command = "x"
"#;
    std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert_eq!(names(&mcp.servers), ["good"]);
    let reasons: BTreeMap<&str, &str> =
        mcp.skipped.iter().map(|s| (s.name.as_str(), s.reason.as_str())).collect();
    assert!(reasons["both"].contains("not both"), "{reasons:?}");
    assert!(reasons["neither"].contains("`command`"), "{reasons:?}");
    assert!(reasons["tokenless"].contains("$NOT_SET_ANYWHERE"), "{reasons:?}");
    assert!(reasons["slow"].contains("startup_timeout_sec"), "{reasons:?}");
}

#[test]
fn unknown_keys_in_a_server_table_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[]);
    std::fs::write(env.keel_home.join("config.toml"), "[mcp_servers.x]\ncomand = \"x\"\n").unwrap();
    let error = load_mcp(&env, &CliOverrides::default()).unwrap_err().to_string();
    assert!(error.contains("comand"), "{error}");
}

const MCP_JSON: &str = r#"{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "server-fs", "${PROJECT_DIR:-.}"], "env": {"K": "${HOME_VAR}"}},
    "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}"}},
    "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
  }
}"#;

#[test]
fn a_projects_servers_wait_for_trust() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[("HOME_VAR", "/h"), ("API_TOKEN", "tok")]);
    std::fs::write(env.cwd.join(".mcp.json"), MCP_JSON).unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    std::fs::write(env.cwd.join(".keel/config.toml"), "[mcp_servers.proj]\ncommand = \"p\"\n")
        .unwrap();
    let untrusted = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert!(untrusted.servers.is_empty(), "{untrusted:?}");
    let skipped: Vec<&str> = untrusted.skipped.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(skipped, ["proj", "fs", "old", "web"]);
    assert!(untrusted.skipped.iter().all(|s| s.reason.contains("keel trust")));

    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    let trusted = load_mcp(&env, &CliOverrides::default()).unwrap();
    // `web` sends ${API_TOKEN}, a credential variable: a project may not.
    assert_eq!(names(&trusted.servers), ["proj", "fs", "old"]);
    let McpTransport::Stdio { args, env: vars, .. } = &trusted.servers[1].transport else {
        panic!("fs is a stdio server")
    };
    assert_eq!(args[2], ".");
    assert_eq!(vars[0].1.0, "/h");
    // `"type": "sse"` is the legacy HTTP+SSE transport, spoken as such.
    let McpTransport::Http { legacy_sse, .. } = &trusted.servers[2].transport else {
        panic!("old is an HTTP server")
    };
    assert!(legacy_sse, "{trusted:?}");
    let web = trusted.skipped.iter().find(|s| s.name == "web").expect("web skipped");
    assert!(web.reason.contains("$API_TOKEN, a credential variable"), "{web:?}");
}

#[test]
fn a_project_server_takes_no_credential_from_keels_environment() {
    let dir = tempfile::tempdir().unwrap();
    let env =
        env(dir.path(), &[("MY_LLM", "sk-provider"), ("OPENAI_API_KEY", "sk-o"), ("PLAIN", "p")]);
    std::fs::write(env.keel_home.join("config.toml"), "api_key_env = \"MY_LLM\"\n").unwrap();
    let json = r#"{"mcpServers": {
        "leak": {"type": "http", "url": "http://127.0.0.1:9/x?k=${MY_LLM}"},
        "leak2": {"command": "srv", "env": {"K": "${OPENAI_API_KEY:-none}"}},
        "fine": {"command": "srv", "args": ["${PLAIN}"]}
    }}"#;
    std::fs::write(env.cwd.join(".mcp.json"), json).unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    let project =
        "[mcp_servers.tok]\nurl = \"http://127.0.0.1:9/\"\nbearer_token_env_var = \"MY_LLM\"\n";
    std::fs::write(env.cwd.join(".keel/config.toml"), project).unwrap();
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert_eq!(names(&mcp.servers), ["fine"]);
    for name in ["leak", "leak2", "tok"] {
        let skipped = mcp.skipped.iter().find(|s| s.name == name).expect(name);
        assert!(skipped.reason.contains("credential variable"), "{skipped:?}");
    }
    // The user's own config may give one to a server.
    let user = "api_key_env = \"MY_LLM\"\n[mcp_servers.mine]\nurl = \"http://127.0.0.1:9/\"\nbearer_token_env_var = \"MY_LLM\"\n";
    std::fs::write(env.keel_home.join("config.toml"), user).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert!(names(&mcp.servers).contains(&"mine"), "{mcp:?}");
}

#[test]
fn a_user_entry_wins_over_a_project_entry_of_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[]);
    std::fs::write(env.keel_home.join("config.toml"), "[mcp_servers.fs]\ncommand = \"mine\"\n")
        .unwrap();
    std::fs::write(env.cwd.join(".mcp.json"), MCP_JSON).unwrap();
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    let McpTransport::Stdio { command, .. } = &mcp.servers[0].transport else { panic!() };
    assert_eq!(command, "mine");
    assert!(mcp.skipped.iter().any(|s| s.name == "fs" && s.reason.contains("already")));
}

#[test]
fn a_broken_mcp_json_is_reported_and_stops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[]);
    std::fs::write(env.keel_home.join("config.toml"), "[mcp_servers.a]\ncommand = \"a\"\n")
        .unwrap();
    std::fs::write(env.cwd.join(".mcp.json"), "{not json").unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert_eq!(names(&mcp.servers), ["a"]);
    assert!(mcp.skipped[0].reason.contains("not valid"), "{mcp:?}");
}

#[test]
fn variables_expand_like_claude_codes() {
    let vars = BTreeMap::from([("A".to_owned(), "1".to_owned())]);
    assert_eq!(expand_vars("x${A}y", &vars), "x1y");
    assert_eq!(expand_vars("${B:-two}", &vars), "two");
    assert_eq!(expand_vars("${B}|", &vars), "|");
    assert_eq!(expand_vars("${open", &vars), "${open");
}

#[test]
fn names_fit_tool_names() {
    for good in ["github", "my-server", "a_1"] {
        assert!(check_name(good).is_ok(), "{good}");
    }
    for bad in ["", "a b", "a.b", "a__b", "x".repeat(25).as_str(), "é"] {
        assert!(check_name(bad).is_err(), "{bad}");
    }
}

/// Names real `.mcp.json` files use (scoped packages, spaces, long
/// names) are accepted under a tool-name form, said once each; two that
/// would share one are refused, naming the clash.
#[test]
fn any_configured_name_is_accepted_under_a_tool_name_form_and_clashes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = env(dir.path(), &[]);
    let config = r#"
[mcp_servers."@modelcontextprotocol/server-memory"]
command = "x"
[mcp_servers."Sequential Thinking"]
command = "x"
[mcp_servers.supabase-project-management-server]
command = "x"
[mcp_servers."sequential thinking"]
command = "x"
[mcp_servers.sequential_thinking]
command = "x"
[mcp_servers.github]
command = "x"
"#;
    std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    let long = tool_name_part("supabase-project-management-server");
    assert_eq!(long.len(), MAX_SERVER_NAME);
    assert!(long.starts_with("supabase-projec_"), "{long}");
    assert_eq!(
        names(&mcp.servers),
        [
            "modelcontextpro_1691abd1",
            "Sequential_Thinking",
            "github",
            "sequential_thinking",
            long.as_str()
        ]
    );
    for server in &mcp.servers {
        assert!(check_name(&server.name).is_ok(), "{}", server.name);
    }
    let notes = mcp.rename_notes();
    assert_eq!(notes.len(), 4, "{notes:?}");
    assert!(
        notes[0].contains("`@modelcontextprotocol/server-memory` is `modelcontextpro_1691abd1`")
    );
    assert_eq!(mcp.skipped.len(), 1, "{:?}", mcp.skipped);
    assert_eq!(mcp.skipped[0].name, "sequential_thinking");
    assert!(
        mcp.skipped[0].reason.contains("the tool-name form of server `sequential thinking`"),
        "{:?}",
        mcp.skipped
    );
}
