//! The user's Claude Code and Codex MCP servers (`~/.claude.json`,
//! `~/.codex/config.toml`) and plugin servers' origin, through `load_mcp`
//! as `keel mcp list` loads them (issue 36).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::mcp::{McpServerConfig, McpSettings, McpTransport, SkippedServer};
use crate::config::{CliOverrides, Environment, load_mcp};

/// A repository (`repo`, with `.git`), a keel home and a user home holding
/// the foreign files; `HOME` names the user home.
struct Dirs {
    _dir: tempfile::TempDir,
    env: Environment,
    home: PathBuf,
}

fn dirs(vars: &[(&str, &str)]) -> Dirs {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("user");
    let mut vars: BTreeMap<String, String> =
        vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    vars.insert("HOME".into(), home.display().to_string());
    let env =
        Environment { keel_home: dir.path().join("keel"), cwd: dir.path().join("repo"), vars };
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    std::fs::create_dir_all(&env.keel_home).unwrap();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    Dirs { _dir: dir, env, home }
}

fn load(dirs: &Dirs) -> McpSettings {
    load_mcp(&dirs.env, &CliOverrides::default()).unwrap()
}

fn names(servers: &[McpServerConfig]) -> Vec<&str> {
    servers.iter().map(|server| server.name.as_str()).collect()
}

fn server<'a>(mcp: &'a McpSettings, name: &str) -> &'a McpServerConfig {
    mcp.servers.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name}: {mcp:?}"))
}

fn skipped<'a>(mcp: &'a McpSettings, name: &str) -> &'a SkippedServer {
    mcp.skipped.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("{name}: {mcp:?}"))
}

fn command(server: &McpServerConfig) -> &str {
    match &server.transport {
        McpTransport::Stdio { command, .. } => command,
        McpTransport::Http { url, .. } => url,
    }
}

/// `~/.claude.json` as Claude Code writes it: user-scope servers at the
/// top, local-scope ones under the project's path, among much else.
fn claude_json(project: &Path) -> String {
    let project = project.display();
    format!(
        r#"{{
  "numStartups": 212,
  "theme": "dark",
  "tipsHistory": {{"memory-command": 4}},
  "mcpServers": {{
    "github": {{"type": "stdio", "command": "npx", "args": ["-y", "github-mcp"],
                "env": {{"GITHUB_PERSONAL_ACCESS_TOKEN": "${{GITHUB_TOKEN}}"}}}},
    "remote": {{"type": "http", "url": "http://127.0.0.1:9/mcp",
                "headers": {{"Authorization": "Bearer ${{REMOTE_TOKEN}}"}}}},
    "shared": {{"command": "user-scope"}}
  }},
  "projects": {{
    "{project}": {{
      "allowedTools": [],
      "history": [{{"display": "fix the build", "pastedContents": {{}}}}],
      "mcpServers": {{
        "local-db": {{"command": "db-mcp", "args": ["--ro"]}},
        "shared": {{"command": "local-scope"}}
      }},
      "hasTrustDialogAccepted": true
    }},
    "/somewhere/else": {{"mcpServers": {{"elsewhere": {{"command": "x"}}}}}}
  }}
}}"#
    )
}

#[test]
fn claude_json_user_and_this_projects_local_servers_are_read() {
    let dirs = dirs(&[("GITHUB_TOKEN", "ghp_1"), ("REMOTE_TOKEN", "r2")]);
    let path = dirs.home.join(".claude.json");
    std::fs::write(&path, claude_json(&dirs.env.cwd)).unwrap();
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["local-db", "shared", "github", "remote"], "{mcp:?}");
    // The local-scope entry wins over the user-scope one of the same name.
    assert_eq!(command(server(&mcp, "shared")), "local-scope");
    assert!(skipped(&mcp, "shared").reason.contains("already configured"));
    // The user's own file may hand a server a credential.
    let McpTransport::Stdio { env, .. } = &server(&mcp, "github").transport else { panic!() };
    assert_eq!(env[0].1.0, "ghp_1");
    let McpTransport::Http { headers, .. } = &server(&mcp, "remote").transport else { panic!() };
    assert_eq!(headers[0].1.0, "Bearer r2");
    let shown = path.display().to_string();
    assert_eq!(server(&mcp, "github").origin.describe(), shown);
    assert!(server(&mcp, "local-db").origin.describe().starts_with(&shown));
    assert!(server(&mcp, "local-db").origin.describe().contains("local scope"));
    assert!(!server(&mcp, "github").origin.is_project());
}

/// A real user's Codex config: many keys keel does not know, which must
/// not stop its servers being read.
const CODEX_CONFIG: &str = r#"
model = "gpt-5-codex"
model_provider = "openai"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
notify = ["terminal-notifier", "-title", "Codex"]

[features]
multi_agent = true

[profiles.strict]
approval_policy = "never"
sandbox_mode = "read-only"

[agents]
max_threads = 6

[agents.reviewer]
description = "PR reviewer"
config_file = "agents/reviewer.toml"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp@latest"]
env = { "LOG" = "1" }
startup_timeout_sec = 20
disabled_tools = ["resolve"]

[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
bearer_token_env_var = "DOCS_TOKEN"
tool_timeout_sec = 30

[mcp_servers.odd]
command = "x"
env_vars = ["FOO"]

[mcp_servers.off]
command = "x"
enabled = false
"#;

#[test]
fn codex_config_servers_are_read_and_its_other_keys_ignored() {
    let dirs = dirs(&[("DOCS_TOKEN", "d0c")]);
    let path = dirs.home.join(".codex/config.toml");
    std::fs::write(&path, CODEX_CONFIG).unwrap();
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["context7", "docs"], "{mcp:?}");
    let context7 = server(&mcp, "context7");
    assert_eq!(context7.startup_timeout, std::time::Duration::from_secs(20));
    assert!(!context7.offers("resolve") && context7.offers("query-docs"));
    let McpTransport::Http { bearer_token, .. } = &server(&mcp, "docs").transport else { panic!() };
    assert_eq!(bearer_token.as_ref().map(|t| t.0.as_str()), Some("d0c"));
    assert_eq!(context7.origin.describe(), path.display().to_string());
    // A key keel does not know skips that server alone, naming the key.
    let odd = skipped(&mcp, "odd");
    assert!(odd.reason.contains("env_vars"), "{odd:?}");
    assert_eq!(odd.origin.describe(), path.display().to_string());
    assert!(skipped(&mcp, "off").reason.contains("disabled"));
    assert_eq!(mcp.skipped.len(), 2, "nothing else complains: {:?}", mcp.skipped);
}

#[test]
fn codex_home_comes_from_codex_home_when_set() {
    let dirs = dirs(&[]);
    let elsewhere = dirs.home.join("codex-elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("config.toml"), "[mcp_servers.a]\ncommand = \"a\"\n").unwrap();
    std::fs::write(dirs.home.join(".codex/config.toml"), "[mcp_servers.b]\ncommand = \"b\"\n")
        .unwrap();
    let mut env = dirs.env.clone();
    env.vars.insert("CODEX_HOME".into(), elsewhere.display().to_string());
    let mcp = load_mcp(&env, &CliOverrides::default()).unwrap();
    assert_eq!(names(&mcp.servers), ["a"]);
}

#[test]
fn keels_own_config_comes_first_then_claudes_then_codexs() {
    let dirs = dirs(&[]);
    std::fs::write(
        dirs.env.keel_home.join("config.toml"),
        "[mcp_servers.fs]\ncommand = \"keel\"\n",
    )
    .unwrap();
    let claude = r#"{"mcpServers": {"fs": {"command": "claude"}, "gh": {"command": "claude"},
        "@scope/Memory Server": {"command": "claude"}}}"#;
    std::fs::write(dirs.home.join(".claude.json"), claude).unwrap();
    let codex = "[mcp_servers.gh]\ncommand = \"codex\"\n[mcp_servers.cx]\ncommand = \"codex\"\n";
    std::fs::write(dirs.home.join(".codex/config.toml"), codex).unwrap();
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["fs", "scope_Memory_Server", "gh", "cx"], "{mcp:?}");
    assert_eq!(command(server(&mcp, "fs")), "keel");
    assert_eq!(command(server(&mcp, "gh")), "claude");
    assert_eq!(command(server(&mcp, "cx")), "codex");
    let fs = skipped(&mcp, "fs");
    assert!(
        fs.reason.contains("already configured") && fs.origin.describe().contains(".claude.json")
    );
    let gh = skipped(&mcp, "gh");
    assert!(
        gh.reason.contains("already configured") && gh.origin.describe().contains("config.toml")
    );
    assert_eq!(
        mcp.renamed,
        [("@scope/Memory Server".to_owned(), "scope_Memory_Server".to_owned())]
    );
}

/// A clone's `.mcp.json` naming a server like the user's does not switch
/// the user's off while the clone is untrusted; once trusted, it comes first.
#[test]
fn an_untrusted_projects_server_does_not_shadow_the_users_claude_server() {
    let dirs = dirs(&[]);
    std::fs::write(
        dirs.env.cwd.join(".mcp.json"),
        r#"{"mcpServers": {"github": {"command": "repo"}}}"#,
    )
    .unwrap();
    std::fs::write(
        dirs.home.join(".claude.json"),
        r#"{"mcpServers": {"github": {"command": "mine"}}}"#,
    )
    .unwrap();
    let mcp = load(&dirs);
    assert_eq!(command(server(&mcp, "github")), "mine", "{mcp:?}");
    assert!(skipped(&mcp, "github").reason.contains("keel trust"));
    crate::config::rules::trust_project(&dirs.env.keel_home, &dirs.env.cwd).unwrap();
    let mcp = load(&dirs);
    assert_eq!(command(server(&mcp, "github")), "repo", "{mcp:?}");
    assert!(skipped(&mcp, "github").reason.contains("already configured"));
}

#[test]
fn broken_foreign_files_are_one_skipped_line_each_and_stop_nothing() {
    let dirs = dirs(&[]);
    std::fs::write(dirs.env.keel_home.join("config.toml"), "[mcp_servers.a]\ncommand = \"a\"\n")
        .unwrap();
    std::fs::write(dirs.home.join(".claude.json"), "{\"mcpServers\": {").unwrap();
    std::fs::write(dirs.home.join(".codex/config.toml"), "model = \n[mcp_servers.b]\n").unwrap();
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["a"]);
    let stars: Vec<(String, &str)> =
        (mcp.skipped.iter()).map(|s| (s.origin.describe(), s.name.as_str())).collect();
    assert_eq!(stars.len(), 2, "{:?}", mcp.skipped);
    assert!(stars.iter().all(|(_, name)| *name == "*"), "{stars:?}");
    assert!(stars[0].0.ends_with(".claude.json") && stars[1].0.ends_with("config.toml"));
    assert!(mcp.skipped.iter().all(|s| s.reason.contains("not valid")), "{:?}", mcp.skipped);
}

#[test]
fn one_bad_server_in_claude_json_skips_only_that_server() {
    let dirs = dirs(&[]);
    let claude = r#"{"mcpServers": {"bad": {"command": "x", "args": "not-a-list"},
        "good": {"command": "y"}}, "projects": {"/p": {"mcpServers": 7}}}"#;
    std::fs::write(dirs.home.join(".claude.json"), claude).unwrap();
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["good"], "{mcp:?}");
    assert!(skipped(&mcp, "bad").reason.contains("not valid"), "{mcp:?}");
}

/// An installed plugin at `keel_home/plugins/NAME` with `manifest`.
fn install_plugin(keel_home: &Path, name: &str, manifest: &str) {
    let root = keel_home.join("plugins").join(name);
    std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
    std::fs::write(root.join(".claude-plugin/plugin.json"), manifest).unwrap();
    let record = format!(r#"{{"plugins": [{{"name": "{name}", "source": "test"}}]}}"#);
    std::fs::write(keel_home.join("plugins/installed.json"), record).unwrap();
}

#[test]
fn a_plugins_server_says_it_is_the_plugins_and_its_refusal_says_plugin() {
    let dirs = dirs(&[("OPENAI_API_KEY", "sk-1")]);
    let manifest = r#"{"name": "kit", "mcpServers": {
        "kit": {"command": "kit-server"},
        "leak": {"command": "srv", "env": {"K": "${OPENAI_API_KEY}"}}}}"#;
    install_plugin(&dirs.env.keel_home, "kit", manifest);
    let mcp = load(&dirs);
    assert_eq!(names(&mcp.servers), ["kit"], "{mcp:?}");
    assert_eq!(server(&mcp, "kit").origin.describe(), "plugin kit");
    let leak = skipped(&mcp, "leak");
    assert_eq!(leak.origin.describe(), "plugin kit");
    assert!(leak.reason.contains("$OPENAI_API_KEY, a credential variable"), "{leak:?}");
    assert!(leak.reason.contains("a plugin's server"), "{leak:?}");
    assert!(!leak.reason.contains("project"), "{leak:?}");
}

/// A published Codex config (tests/fixtures/codex/README.md) as a user's
/// `~/.codex/config.toml`: its six servers, and nothing else complains.
#[test]
fn a_published_codex_config_gives_its_six_servers() {
    let dirs = dirs(&[]);
    let published = include_str!("../../tests/fixtures/codex/ecc-config.toml");
    std::fs::write(dirs.home.join(".codex/config.toml"), published).unwrap();
    let mcp = load(&dirs);
    let expected = ["context7", "exa", "github", "memory", "playwright", "sequential-thinking"];
    assert_eq!(names(&mcp.servers), expected, "{mcp:?}");
    assert!(mcp.skipped.is_empty() && mcp.renamed.is_empty(), "{mcp:?}");
    assert_eq!(server(&mcp, "github").startup_timeout, std::time::Duration::from_secs(30));
}
