//! Tests of [`super`]: which instruction files are found, in what order,
//! and what their `@` imports bring in or refuse.

use super::*;

/// The real AGENTS.md files, or `None` (the test is skipped) in a clone
/// without the shared corpus: see `crate::shared_corpus`.
fn corpus() -> Option<PathBuf> {
    crate::shared_corpus::locate("conformance/agents_md")
}

/// Discovery for a user whose home (and `~/.keel`, `~/.codex`) is
/// `home`, in an untrusted project at `root`.
fn discover(home: &Path, root: &Path, cwd: &Path) -> Vec<InstructionFile> {
    discover_as(home, root, cwd, false)
}

fn discover_as(home: &Path, root: &Path, cwd: &Path, trusted: bool) -> Vec<InstructionFile> {
    discover_with(home, root, cwd, trusted, true)
}

fn discover_with(
    home: &Path,
    root: &Path,
    cwd: &Path,
    trusted: bool,
    import: bool,
) -> Vec<InstructionFile> {
    let keel_home = home.join(".keel");
    let codex_home = home.join(".codex");
    let places = InstructionPlaces {
        keel_home: &keel_home,
        home,
        codex_home: &codex_home,
        workspace_root: root,
        trusted,
        import,
    };
    discover_instructions(&places, cwd)
}

/// A user's home and a project in one temp folder.
struct Layout {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

impl Layout {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        Layout { _dir: dir, home, repo }
    }

    fn home_file(&self, rel: &str, text: &str) -> PathBuf {
        write(&self.home.join(rel), text)
    }

    fn repo_file(&self, rel: &str, text: &str) -> PathBuf {
        write(&self.repo.join(rel), text)
    }

    /// The files found from the project root, untrusted.
    fn found(&self) -> Vec<InstructionFile> {
        discover(&self.home, &self.repo, &self.repo)
    }

    fn found_trusted(&self) -> Vec<InstructionFile> {
        discover_as(&self.home, &self.repo, &self.repo, true)
    }
}

fn write(path: &Path, text: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    path.to_owned()
}

fn paths(found: &[InstructionFile]) -> Vec<PathBuf> {
    found.iter().map(|file| file.path.clone()).collect()
}

fn all_text(found: &[InstructionFile]) -> String {
    found.iter().map(|file| file.text.as_str()).collect()
}

fn warnings(found: &[InstructionFile]) -> Vec<String> {
    found.iter().flat_map(|file| file.skipped.iter().cloned()).collect()
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

#[test]
fn every_conformance_agents_md_is_picked_up_root_first_in_a_nested_layout() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    let sources = [
        ("", "openai__codex/AGENTS.md"),
        ("a", "openai__openai-python/AGENTS.md"),
        ("a/b", "pydantic__pydantic-ai/AGENTS.md"),
        ("a/b/c", "vercel__ai/AGENTS.md"),
        ("a/b/c/d", "astral-sh__uv/AGENTS.md"),
        (
            "a/b/c/d/codex-rs/tui/src/bottom_pane",
            "openai__codex/codex-rs/tui/src/bottom_pane/AGENTS.md",
        ),
    ];
    for (sub, src) in sources {
        copy(&corpus.join(src), &root.join(sub).join("AGENTS.md"));
    }
    let cwd = root.join("a/b/c/d/codex-rs/tui/src/bottom_pane");
    let home = dir.path().join("home");
    let found = discover(&home, &root, &cwd);
    assert_eq!(found.len(), sources.len());
    for (file, (sub, src)) in found.iter().zip(sources) {
        assert_eq!(file.path, root.join(sub).join("AGENTS.md"));
        let original = std::fs::read_to_string(corpus.join(src)).unwrap();
        let head: String = original.chars().take(200).collect();
        assert!(file.text.starts_with(&head) || file.text.contains("truncated"), "{src}");
    }
    let total: usize = found.iter().map(|f| f.text.len()).sum();
    assert!(total <= MAX_INSTRUCTION_BYTES + 200);
}

#[test]
fn claude_md_import_stub_brings_in_agents_md() {
    let Some(corpus) = corpus() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    copy(&corpus.join("astral-sh__uv/CLAUDE.md"), &root.join("sub/CLAUDE.md"));
    copy(&corpus.join("astral-sh__uv/AGENTS.md"), &root.join("sub/notes/AGENTS.md"));
    std::fs::write(root.join("sub/CLAUDE.md"), "@notes/AGENTS.md\n").unwrap();
    let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].text.contains("ALWAYS") || found[0].text.contains("NEVER"),
        "{}",
        found[0].text
    );
}

#[test]
fn an_import_of_a_secret_file_is_not_read_and_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join(".env"), "OPENAI_API_KEY=sk-env\n").unwrap();
    std::fs::write(root.join("deploy/prod.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    std::os::unix::fs::symlink(root.join(".env"), root.join("notes.md")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "be brief\n@.env\n@notes.md\n").unwrap();
    std::fs::write(root.join("sub/CLAUDE.md"), "@../deploy/prod.pem\n@prod.pem\n").unwrap();
    std::os::unix::fs::symlink(root.join("deploy/prod.pem"), root.join("sub/prod.pem")).unwrap();
    let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
    let text: String = found.iter().map(|file| file.text.as_str()).collect();
    assert!(text.contains("be brief"), "{text}");
    assert!(!text.contains("sk-env") && !text.contains("PRIVATE KEY"), "{text}");
    let skipped: Vec<&String> = found.iter().flat_map(|file| &file.skipped).collect();
    assert_eq!(skipped.len(), 4, "{skipped:?}");
    assert!(skipped[0].contains("`@.env`") && skipped[0].contains("secret"), "{skipped:?}");
    assert!(skipped[1].contains("`@notes.md`"), "a link to .env is .env: {skipped:?}");
    assert!(skipped[2].contains("`@../deploy/prod.pem`"), "{skipped:?}");
    assert!(skipped[3].contains("`@prod.pem`") && skipped[3].contains("secret"));
}

#[test]
fn agents_md_wins_over_claude_md_in_one_folder_and_imports_cannot_escape() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("AGENTS.md"), "use tabs\n@../secret.txt\n").unwrap();
    std::fs::write(root.join("CLAUDE.md"), "ignored\n").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "TOP SECRET").unwrap();
    let found = discover(&dir.path().join("h"), &root, &root);
    assert_eq!(found.len(), 1);
    assert!(found[0].text.contains("use tabs"));
    assert!(!found[0].text.contains("TOP SECRET"));
}

#[test]
fn a_symlink_out_of_the_workspace_is_not_read_as_a_file_or_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("notes.md")).unwrap();
    std::fs::write(root.join("inside.md"), "inside notes\n").unwrap();
    std::os::unix::fs::symlink(root.join("inside.md"), root.join("linked.md")).unwrap();
    std::fs::write(root.join("CLAUDE.md"), "use tabs\n@notes.md\n@linked.md\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("sub/AGENTS.md")).unwrap();
    let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
    let text: String = found.iter().map(|file| file.text.as_str()).collect();
    assert!(!text.contains("TOP SECRET"), "{text}");
    assert!(text.contains("use tabs") && text.contains("inside notes"), "{text}");
}

#[test]
fn imports_importing_imports_stop_after_max_imports() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    for (file, next) in [("AGENTS.md", "a.md"), ("a.md", "b.md"), ("b.md", "c.md")] {
        std::fs::write(root.join(file), format!("@{next}\n").repeat(60)).unwrap();
    }
    std::fs::write(root.join("c.md"), "x\n").unwrap();
    let found = discover(&dir.path().join("h"), &root, &root);
    let read = found[0].text.lines().filter(|line| *line == "x").count();
    assert!(read <= MAX_IMPORTS, "{read} imports of c.md followed (60^3 asked for)");
}

#[test]
fn claude_codes_user_memory_is_read_after_keels_user_file() {
    let layout = Layout::new();
    let keel = layout.home_file(".keel/AGENTS.md", "keel user rules\n");
    let claude = layout.home_file(".claude/CLAUDE.md", "claude user memory\n");
    let project = layout.repo_file("AGENTS.md", "project rules\n");
    let found = layout.found();
    assert_eq!(paths(&found), [keel, claude, project]);
    assert_eq!(found[1].source, InstructionSource::ClaudeUser);
    assert_eq!(found[1].source.label(), "Claude Code user memory");
}

/// `import_setup = false`: keel's own files and the folders' AGENTS.md
/// (CLAUDE.md as before) only.
#[test]
fn without_import_only_keels_own_files_are_read() {
    let layout = Layout::new();
    let keel = layout.home_file(".keel/AGENTS.md", "keel user rules\n");
    layout.home_file(".claude/CLAUDE.md", "claude user memory\n");
    layout.home_file(".codex/AGENTS.md", "codex user rules\n");
    let project = layout.repo_file("AGENTS.md", "project rules\n");
    layout.repo_file("AGENTS.override.md", "codex override\n");
    layout.repo_file("CLAUDE.local.md", "personal\n");
    let found = discover_with(&layout.home, &layout.repo, &layout.repo, true, false);
    assert_eq!(paths(&found), [keel, project]);
}

#[test]
fn codex_user_instructions_are_read_and_its_override_wins() {
    let layout = Layout::new();
    let agents = layout.home_file(".codex/AGENTS.md", "codex user rules\n");
    let found = layout.found();
    assert_eq!(paths(&found), [agents]);
    assert_eq!(found[0].source.label(), "Codex user instructions");
    let over = layout.home_file(".codex/AGENTS.override.md", "codex override\n");
    let found = layout.found();
    assert_eq!(paths(&found), [over]);
    assert!(!all_text(&found).contains("codex user rules"));
}

#[test]
fn claude_local_md_is_read_after_the_folders_own_file() {
    let layout = Layout::new();
    let agents = layout.repo_file("AGENTS.md", "shared rules\n");
    let local = layout.repo_file("CLAUDE.local.md", "my sandbox URL is http://127.0.0.1:3000\n");
    std::fs::create_dir_all(layout.repo.join("sub")).unwrap();
    let sub_claude = layout.repo_file("sub/CLAUDE.md", "sub rules\n");
    let sub_local = layout.repo_file("sub/CLAUDE.local.md", "sub personal\n");
    let found = discover(&layout.home, &layout.repo, &layout.repo.join("sub"));
    assert_eq!(paths(&found), [agents, local, sub_claude, sub_local]);
    assert_eq!(found[1].source.label(), "Claude personal project file");
}

#[test]
fn agents_override_md_is_read_instead_of_agents_md_in_its_folder() {
    let layout = Layout::new();
    layout.repo_file("AGENTS.md", "team rules\n");
    let over = layout.repo_file("AGENTS.override.md", "release freeze: docs only\n");
    let found = layout.found();
    assert_eq!(paths(&found), [over]);
    assert!(!all_text(&found).contains("team rules"));
}

#[test]
fn a_file_linked_to_one_already_read_is_not_read_twice() {
    let layout = Layout::new();
    let keel = layout.home_file(".keel/AGENTS.md", "one set of user rules\n");
    std::fs::create_dir_all(layout.home.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&keel, layout.home.join(".claude/CLAUDE.md")).unwrap();
    let agents = layout.repo_file("AGENTS.md", "project rules\n");
    std::os::unix::fs::symlink(&agents, layout.repo.join("CLAUDE.local.md")).unwrap();
    let found = layout.found();
    assert_eq!(paths(&found), [keel, agents]);
}

#[test]
fn an_inline_import_mid_sentence_brings_the_file_in_after_its_line() {
    let layout = Layout::new();
    layout.repo_file("README", "README BODY\n");
    layout.repo_file("package.json", "{\"scripts\": {\"test\": \"vitest\"}}\n");
    let line = "See @README for project overview and @package.json for available npm commands \
                for this project.";
    layout.repo_file("CLAUDE.md", &format!("{line}\nafter\n"));
    let text = all_text(&layout.found());
    assert!(text.starts_with(&format!("{line}\n")), "the line stays as written: {text}");
    let readme = text.find("README BODY").expect(&text);
    let package = text.find("vitest").expect(&text);
    assert!(readme < package && package < text.find("after").unwrap(), "{text}");
}

#[test]
fn a_list_item_import_brings_the_file_in() {
    let layout = Layout::new();
    layout.repo_file("docs/git-instructions.md", "REBASE, NEVER MERGE\n");
    layout.repo_file("docs/style.md", "TABS\n");
    layout.repo_file(
        "CLAUDE.md",
        "# Additional Instructions\n- git workflow @docs/git-instructions.md\n- @docs/style.md\n",
    );
    let text = all_text(&layout.found());
    assert!(text.contains("- git workflow @docs/git-instructions.md\n"), "{text}");
    assert!(text.contains("REBASE, NEVER MERGE") && text.contains("TABS"), "{text}");
}

#[test]
fn a_home_import_from_the_users_own_file_is_read() {
    let layout = Layout::new();
    layout.home_file("notes/mine.md", "MY OWN NOTES\n");
    layout.home_file(".keel/AGENTS.md", "@~/notes/mine.md\n");
    let found = layout.found();
    assert!(all_text(&found).contains("MY OWN NOTES"), "{found:?}");
}

#[test]
fn claude_codes_documented_import_example_works_in_a_trusted_project() {
    let layout = Layout::new();
    layout.repo_file("README", "README BODY\n");
    layout.repo_file("package.json", "NPM SCRIPTS\n");
    layout.repo_file("docs/git-instructions.md", "GIT WORKFLOW\n");
    layout.home_file(".claude/my-project-instructions.md", "MY PROJECT NOTES\n");
    layout.repo_file(
        "CLAUDE.md",
        "See @README for project overview and @package.json for available npm commands for \
         this project.\n\n# Additional Instructions\n- git workflow @docs/git-instructions.md\n\
         - @~/.claude/my-project-instructions.md\n",
    );
    let found = layout.found_trusted();
    let text = all_text(&found);
    for body in ["README BODY", "NPM SCRIPTS", "GIT WORKFLOW", "MY PROJECT NOTES"] {
        assert!(text.contains(body), "{body} missing: {text}");
    }
    assert!(warnings(&found).is_empty(), "{:?}", warnings(&found));
}

#[test]
fn an_untrusted_project_may_not_import_from_home_and_is_told_how() {
    let layout = Layout::new();
    layout.home_file("notes.md", "PRIVATE NOTES\n");
    layout.repo_file("CLAUDE.md", "rules\n- @~/notes.md\n@~/notes.md\n");
    let found = layout.found();
    let text = all_text(&found);
    assert!(!text.contains("PRIVATE NOTES"), "{text}");
    assert!(text.contains("- @~/notes.md\n@~/notes.md\n"), "left as written: {text}");
    let warned = warnings(&found);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[0].contains("`@~/notes.md`") && warned[0].contains("keel trust"), "{warned:?}");
}

#[test]
fn an_absolute_import_from_an_untrusted_project_is_refused() {
    let layout = Layout::new();
    let outside = layout.home_file("outside.md", "OUTSIDE\n");
    layout.repo_file("AGENTS.md", &format!("see @{}\n", outside.display()));
    let found = layout.found();
    assert!(!all_text(&found).contains("OUTSIDE"));
    assert!(warnings(&found)[0].contains("keel trust"), "{:?}", warnings(&found));
    assert!(all_text(&layout.found_trusted()).contains("OUTSIDE"));
}

#[test]
fn a_secret_under_home_is_refused_even_in_a_trusted_project() {
    let layout = Layout::new();
    layout.home_file(".ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
    layout.repo_file("AGENTS.md", "keys: @~/.ssh/id_rsa\n");
    layout.home_file(".keel/AGENTS.md", "@~/.ssh/id_rsa\n");
    let found = layout.found_trusted();
    assert!(!all_text(&found).contains("PRIVATE KEY"), "{}", all_text(&found));
    let warned = warnings(&found);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned.iter().all(|line| line.contains("secret")), "{warned:?}");
}

#[test]
fn imports_in_code_spans_and_fences_stay_text() {
    let layout = Layout::new();
    layout.repo_file("README", "README BODY\n");
    layout.repo_file(
        "CLAUDE.md",
        "Write `@README` to import it; ``see @README`` too.\n```\n@README\n- @README\n```\n",
    );
    let found = layout.found();
    assert!(!all_text(&found).contains("README BODY"), "{}", all_text(&found));
    assert!(warnings(&found).is_empty());
}

#[test]
fn a_mention_or_address_that_is_no_file_stays_as_written_without_a_warning() {
    let layout = Layout::new();
    let text = "Ask @octocat or mail dev@example.com (cc @hubot). See @missing/file.md.\n";
    layout.repo_file("AGENTS.md", text);
    let found = layout.found();
    assert_eq!(found[0].text, text);
    assert!(found[0].skipped.is_empty(), "{:?}", found[0].skipped);
}

#[test]
fn imports_nest_five_deep() {
    let layout = Layout::new();
    let chain = ["AGENTS.md", "a.md", "b.md", "c.md", "d.md", "e.md", "f.md"];
    for pair in chain.windows(2) {
        let name = pair[0].trim_end_matches(".md").to_uppercase();
        layout.repo_file(pair[0], &format!("level {name}\n@{}\n", pair[1]));
    }
    layout.repo_file("f.md", "level F\n");
    let text = all_text(&layout.found());
    assert!(text.contains("level E"), "five hops are followed: {text}");
    assert!(!text.contains("level F"), "a sixth is not: {text}");
}
