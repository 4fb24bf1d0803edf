//! Architecture check (DESIGN §6): lower layers never import higher ones,
//! and the pure layer touches no tokio, filesystem, process or clock.

use std::path::{Path, PathBuf};

fn layer(module: &str) -> Option<u8> {
    match module {
        "protocol" | "policy" | "prompts" | "context" | "plan" | "tasks" | "agent" | "display" => {
            Some(0)
        }
        "llm" | "tools" | "sandbox" | "session" | "skills" | "hooks" | "config" | "mcp" => Some(1),
        // Test-only: finds the shared corpus on disk.
        "shared_corpus" => Some(1),
        "runtime" => Some(2),
        "exec" | "tui" | "cli" | "main" | "lib" => Some(3),
        _ => None,
    }
}

const IMPURE: [&str; 6] = ["tokio", "std::fs", "std::process", "SystemTime", "reqwest", "Instant"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// The code before the first test module: what ships.
fn non_test_code(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |at| &text[..at])
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut violations = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        let own = layer(&module).unwrap_or_else(|| panic!("module `{module}` has no layer"));
        let text = std::fs::read_to_string(file).unwrap();
        for (at, _) in text.match_indices("crate::") {
            let used: String =
                text[at + 7..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if let Some(theirs) = layer(&used) {
                if theirs > own {
                    violations.push(format!(
                        "{} (L{own}) uses crate::{used} (L{theirs})",
                        file.display()
                    ));
                }
            }
        }
        if own == 0 {
            for word in IMPURE {
                if non_test_code(&text).contains(word) {
                    violations.push(format!("{} is pure (L0) but mentions {word}", file.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The modules each bullet of docs/design.md §6 names, with the bullet's layer.
fn design_map() -> Vec<(String, u8)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let section = text.split("## 6.").nth(1).expect("docs/design.md has a §6");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut map = Vec::new();
    for bullet in section.split("\n- L").skip(1) {
        let level: u8 = bullet[..1].parse().expect("a bullet starting `- L<digit>`");
        let bullet = bullet.split("\n\n").next().unwrap_or(bullet);
        for name in bullet.split('`').skip(1).step_by(2) {
            map.push((name.trim_end_matches(".rs").to_owned(), level));
        }
    }
    map
}

#[test]
fn the_design_map_names_every_module_at_its_layer() {
    let map = design_map();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let module = module_of(&src, &entry.unwrap().path());
        if matches!(module.as_str(), "lib" | "shared_corpus") {
            continue;
        }
        let own = layer(&module).unwrap_or_else(|| panic!("module `{module}` has no layer"));
        match map.iter().find(|(name, _)| *name == module) {
            Some((_, level)) if *level == own => {}
            Some((_, level)) => {
                problems.push(format!("`{module}`: L{own} here, L{level} in docs/design.md §6"))
            }
            None => problems.push(format!("`{module}` (L{own}) is missing from docs/design.md §6")),
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
