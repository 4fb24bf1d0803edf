use super::*;

/// A plugin folder at `root` with `manifest` and `files` (path, text).
fn plugin_at(root: &Path, manifest: &str, files: &[(&str, &str)]) -> Plugin {
    std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
    std::fs::write(root.join(MANIFEST), manifest).unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let manifest = read_manifest(root).unwrap();
    let installed = InstalledPlugin {
        name: manifest.name.clone(),
        version: manifest.version.clone(),
        description: None,
        source: "test".into(),
    };
    Plugin { installed, manifest, root: root.to_owned() }
}

#[test]
fn the_plugin_root_is_expanded_in_hooks_and_servers_only() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = r#"{"description": "d", "hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh"}]}]}}"#;
    let manifest = r#"{"name": "p", "mcpServers": {"tiny": {"command": "node",
        "args": ["${CLAUDE_PLUGIN_ROOT}/server.js", "${HOME}"]}}}"#;
    let plugin = plugin_at(dir.path(), manifest, &[("hooks/hooks.json", hooks)]);
    let root = dir.path().display().to_string();
    let hooks = plugin.hooks().unwrap().unwrap();
    let command = &hooks["SessionStart"][0]["hooks"][0]["command"];
    let expected =
        format!("export CLAUDE_PLUGIN_ROOT='{root}'\n{root}/hooks-handlers/session-start.sh");
    assert_eq!(command.as_str().unwrap(), expected);
    let servers: serde_json::Value =
        serde_json::from_str(&plugin.mcp_json().unwrap().unwrap()).unwrap();
    let args = &servers["mcpServers"]["tiny"]["args"];
    assert_eq!(args[0].as_str().unwrap(), format!("{root}/server.js"));
    assert_eq!(args[1], "${HOME}", "other variables are left to the .mcp.json expansion");
    let env = &servers["mcpServers"]["tiny"]["env"]["CLAUDE_PLUGIN_ROOT"];
    assert_eq!(env.as_str().unwrap(), root);
}

#[test]
fn manifest_paths_add_folders_and_a_folder_linking_out_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let manifest = r#"{"name": "p", "version": "1.0.0", "commands": ["./extra", "./out"]}"#;
    let plugin = plugin_at(dir.path(), manifest, &[("commands/a.md", "A"), ("extra/b.md", "B")]);
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    let plugins = Plugins { plugins: vec![plugin], problems: Vec::new() };
    let roots = plugins.command_roots();
    let names: Vec<_> =
        roots.iter().map(|(path, ns)| (path.file_name().unwrap(), ns.as_str())).collect();
    assert_eq!(
        names,
        [(std::ffi::OsStr::new("commands"), "p"), (std::ffi::OsStr::new("extra"), "p")]
    );
}

#[test]
fn a_broken_installed_plugin_is_a_problem_line_not_an_error() {
    let home = tempfile::tempdir().unwrap();
    let dir = plugins_dir(home.path());
    std::fs::create_dir_all(dir.join("gone")).unwrap();
    std::fs::write(dir.join(RECORD), r#"{"plugins": [{"name": "gone", "source": "x"}]}"#).unwrap();
    let loaded = load_installed(home.path());
    assert!(loaded.plugins.is_empty());
    assert_eq!(loaded.problems.len(), 1);
    assert!(loaded.problems[0].starts_with("plugin gone not loaded:"), "{:?}", loaded.problems);
}

/// Two plugins shipping a `review` agent and a `review` skill: each is
/// `plugin:review`, both reachable, and the built-in read-only `review`
/// type stays (before: the last plugin's replaced the other and the
/// built-in, silently).
#[test]
fn plugin_agents_and_skills_are_namespaced_like_claude_codes() {
    let agent = "---\nname: review\ndescription: Reviews and fixes.\ntools: Read, Edit\n---\nbody";
    let skill = "---\nname: review\ndescription: How we review.\n---\nbody";
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let files = [("agents/review.md", agent), ("skills/review/SKILL.md", skill)];
    let plugins = Plugins {
        plugins: vec![
            plugin_at(one.path(), r#"{"name": "alpha"}"#, &files),
            plugin_at(two.path(), r#"{"name": "beta"}"#, &files),
        ],
        problems: Vec::new(),
    };
    let mut catalog = crate::config::agents::discover_agents(&[], true);
    crate::config::plugin_parts::add_agents(&plugins, &mut catalog);
    let names: Vec<&str> = catalog.agents.iter().map(|agent| agent.name.as_str()).collect();
    assert!(names.contains(&"alpha:review") && names.contains(&"beta:review"), "{names:?}");
    let builtin = catalog.agents.iter().find(|agent| agent.name == "review").unwrap();
    assert!(!builtin.may_use("edit_file"), "the built-in review stays read-only");
    let roots: Vec<(PathBuf, Option<String>)> =
        plugins.skill_roots().into_iter().map(|(root, name)| (root, Some(name))).collect();
    let skills = crate::skills::discover_namespaced(&roots);
    let names: Vec<&str> = skills.skills.iter().map(|skill| skill.meta.name.as_str()).collect();
    assert!(names.contains(&"alpha:review") && names.contains(&"beta:review"), "{names:?}");
}
