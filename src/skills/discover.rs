//! Walks the skill roots and collects valid skills and problems.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{BUILT_IN, Skill, SkillError, SkillSource, parse_skill_md};

/// A `SKILL.md` that could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    pub path: PathBuf,
    pub error: SkillError,
}

/// Every skill found, by name, plus what was rejected.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Sorted by name.
    pub skills: Vec<Skill>,
    pub problems: Vec<SkillProblem>,
}

/// Skill folders to search, lowest precedence first: Claude Code's
/// `~/.claude/skills` under keel's own `~/.keel/skills`, and in each folder
/// Claude's `.claude/skills` under `.keel/skills` and `.agents/skills`.
pub fn skill_roots(
    home: &Path,
    keel_home: &Path,
    workspace_root: &Path,
    cwd: &Path,
) -> Vec<PathBuf> {
    let mut roots = vec![home.join(".claude").join("skills"), keel_home.join("skills")];
    let mut dirs: Vec<&Path> =
        cwd.ancestors().take_while(|d| d.starts_with(workspace_root)).collect();
    dirs.reverse();
    for dir in dirs {
        roots.push(dir.join(".claude").join("skills"));
        roots.push(dir.join(".keel").join("skills"));
        roots.push(dir.join(".agents").join("skills"));
    }
    roots
}

/// Loads the built-in skills, then every `<root>/<name>/SKILL.md`.
pub fn discover(roots: &[PathBuf]) -> Discovery {
    let roots: Vec<(PathBuf, Option<String>)> =
        roots.iter().map(|root| (root.clone(), None)).collect();
    discover_namespaced(&roots)
}

/// [`discover`], each root with the namespace its skills are named under
/// (a plugin's: `plugin:skill`, as Claude Code names them, so two plugins'
/// `code-review` skills are both reachable and neither replaces the user's).
pub fn discover_namespaced(roots: &[(PathBuf, Option<String>)]) -> Discovery {
    let mut by_name: BTreeMap<String, Skill> = BTreeMap::new();
    let mut problems = Vec::new();
    for (folder, text) in BUILT_IN {
        if let Ok(meta) = parse_skill_md(text, folder) {
            by_name.insert(meta.name.clone(), Skill { meta, source: SkillSource::BuiltIn });
        }
    }
    for (root, namespace) in roots {
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        let mut folders: Vec<PathBuf> =
            entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
        folders.sort();
        for folder in folders {
            let path = folder.join("SKILL.md");
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let name =
                folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let loaded =
                super::read_skill_file(&path).and_then(|text| parse_skill_md(&text, &name));
            match loaded {
                Ok(mut meta) => {
                    if let Some(namespace) = namespace {
                        meta.name = format!("{namespace}:{}", meta.name);
                    }
                    by_name
                        .insert(meta.name.clone(), Skill { meta, source: SkillSource::File(path) });
                }
                Err(error) => problems.push(SkillProblem { path, error }),
            }
        }
    }
    Discovery { skills: by_name.into_values().collect(), problems }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real skills, or `None` (the test is skipped) in a clone without
    /// the shared corpus: see `crate::shared_corpus`.
    fn conformance_skills() -> Option<PathBuf> {
        crate::shared_corpus::locate("conformance/skills")
    }

    #[test]
    fn every_conformance_skill_loads() {
        let Some(root) = conformance_skills() else { return };
        let found = discover(std::slice::from_ref(&root));
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        let names: Vec<&str> = found.skills.iter().map(|s| s.meta.name.as_str()).collect();
        for expected in ["algorithmic-art", "claude-api", "mcp-builder", "webapp-testing", "review"]
        {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        assert_eq!(found.skills.len(), 12 + super::super::BUILT_IN.len());
    }

    #[test]
    fn a_skill_swapped_for_a_symlink_after_discovery_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("skills");
        std::fs::create_dir_all(root.join("pdf")).unwrap();
        let skill_md = root.join("pdf/SKILL.md");
        std::fs::write(&skill_md, "---\nname: pdf\ndescription: d\n---\nbody\n").unwrap();
        let found = discover(std::slice::from_ref(&root));
        let skill = found.skills.iter().find(|s| s.meta.name == "pdf").unwrap();
        assert_eq!(super::super::read_body(skill).unwrap().trim(), "body");
        let secret = dir.path().join("environ");
        std::fs::write(&secret, "---\nname: pdf\ndescription: d\n---\nKEY=sk-live\n").unwrap();
        std::fs::remove_file(&skill_md).unwrap();
        std::os::unix::fs::symlink(&secret, &skill_md).unwrap();
        let error = super::super::read_body(skill).unwrap_err().to_string();
        assert!(error.contains("symlink"), "{error}");
        // The folder swapped for a link to another folder: refused too.
        std::fs::remove_file(&skill_md).unwrap();
        std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
        std::fs::rename(&secret, dir.path().join("elsewhere/SKILL.md")).unwrap();
        std::fs::remove_dir(root.join("pdf")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), root.join("pdf")).unwrap();
        assert!(super::super::read_body(skill).is_err());
        // And such a skill is reported at discovery, not loaded.
        let again = discover(std::slice::from_ref(&root));
        assert!(again.skills.iter().all(|s| s.meta.name != "pdf"));
        assert!(again.problems.iter().any(|p| p.error.to_string().contains("symlink")));
    }

    #[test]
    fn a_broken_skill_is_reported_by_path_and_the_rest_load() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("good")).unwrap();
        std::fs::write(dir.path().join("good/SKILL.md"), "---\nname: good\ndescription: ok\n---\n")
            .unwrap();
        std::fs::create_dir_all(dir.path().join("broken")).unwrap();
        std::fs::write(dir.path().join("broken/SKILL.md"), "---\nname: broken\n---\n").unwrap();
        let found = discover(&[dir.path().to_owned()]);
        assert!(found.skills.iter().any(|s| s.meta.name == "good"));
        assert_eq!(found.problems.len(), 1);
        assert!(found.problems[0].path.ends_with("broken/SKILL.md"));
    }

    /// A clone's skills are read before trust: a file past the definition
    /// bound is reported, not read whole (a 2 GB SKILL.md would be).
    #[test]
    fn a_skill_file_past_the_bound_is_reported_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("big")).unwrap();
        let text = format!("---\nname: big\ndescription: d\n---\n{}", "x".repeat(300 * 1024));
        std::fs::write(dir.path().join("big/SKILL.md"), text).unwrap();
        let found = discover(&[dir.path().to_owned()]);
        assert!(!found.skills.iter().any(|s| s.meta.name == "big"));
        assert!(
            found.problems[0].error.to_string().contains("larger than"),
            "{:?}",
            found.problems
        );
    }

    #[test]
    fn project_skill_overrides_a_built_in_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("review")).unwrap();
        std::fs::write(
            dir.path().join("review/SKILL.md"),
            "---\nname: review\ndescription: ours\n---\n",
        )
        .unwrap();
        let found = discover(&[dir.path().to_owned()]);
        let review = found.skills.iter().find(|s| s.meta.name == "review").unwrap();
        assert_eq!(review.meta.description, "ours");
    }

    #[test]
    fn roots_run_from_home_to_the_working_directory() {
        let roots =
            skill_roots(Path::new("/u"), Path::new("/h"), Path::new("/repo"), Path::new("/repo/a"));
        let shown: Vec<String> = roots.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            shown,
            [
                "/u/.claude/skills",
                "/h/skills",
                "/repo/.claude/skills",
                "/repo/.keel/skills",
                "/repo/.agents/skills",
                "/repo/a/.claude/skills",
                "/repo/a/.keel/skills",
                "/repo/a/.agents/skills"
            ]
        );
    }
}
