//! Architecture check (docs/design.md §6), on the code that ships (test
//! modules and test-only files cut out):
//! - lower layers never import higher ones;
//! - no modules import each other around a cycle, and inside `agent/` no
//!   files do (a cycle hides a layer nobody drew: the files of one can
//!   no longer be read, tested or changed apart);
//! - the pure layer touches no tokio, filesystem, process or clock;
//! - each kind of effect has one owner ([`OWNERS`]): only `sandbox/`
//!   starts processes, only `llm/` speaks HTTP, only `session/` writes
//!   the log, only `tui/` draws on the terminal. An exception is named
//!   here with its reason, so the next one is a decision, not an accident.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn layer(module: &str) -> Option<u8> {
    match module {
        "protocol" | "policy" | "prompts" | "context" | "plan" | "tasks" | "agent" | "display"
        | "export" => Some(0),
        "llm" | "tools" | "sandbox" | "session" | "skills" | "hooks" | "config" | "mcp"
        | "support" | "web" | "telemetry" => Some(1),
        // Test-only: finds the shared corpus on disk.
        "shared_corpus" => Some(1),
        "runtime" => Some(2),
        "exec" | "tui" | "attach" | "acp" | "cli" | "exit" | "main" | "jail_main" | "lib" => {
            Some(3)
        }
        _ => None,
    }
}

const IMPURE: [&str; 6] = ["tokio", "std::fs", "std::process", "SystemTime", "reqwest", "Instant"];

/// One kind of effect, the words that show it, and who may use them.
struct Owner {
    effect: &'static str,
    words: &'static [&'static str],
    /// The module (first folder under `src/`) that owns the effect.
    module: &'static str,
    /// Files outside it that may, each with why.
    exceptions: &'static [(&'static str, &'static str)],
}

const OWNERS: [Owner; 4] = [
    Owner {
        effect: "starts a process",
        words: &["process::Command", "tokio::process", "Command::new(", "CommandExt"],
        module: "sandbox",
        exceptions: &[(
            "tui/editor.rs",
            "$EDITOR must own the terminal (inherited stdio, no process group of its own, \
             no capture); its environment still comes from sandbox::child_env",
        )],
    },
    Owner {
        effect: "speaks HTTP",
        words: &["reqwest"],
        module: "llm",
        exceptions: &[
            ("mcp/http.rs", "MCP's streamable HTTP transport (rmcp's reqwest client)"),
            (
                "mcp/legacy_sse.rs",
                "MCP's legacy HTTP+SSE transport (2024-11-05), on the same HTTP client",
            ),
            ("mcp/connection.rs", "builds the MCP transport's header names and values"),
            ("mcp/mod.rs", "names the MCP HTTP client in its module doc"),
            ("web/fetch.rs", "web_fetch's client, each hop resolved by the proxy's resolver"),
            ("telemetry/export.rs", "OTLP/HTTP export to the collector the user configured"),
        ],
    },
    Owner {
        effect: "writes the session log",
        // A log line is an `EventRecord`; appending opens with `OpenOptions`.
        words: &["EventRecord {", "OpenOptions"],
        module: "session",
        exceptions: &[
            ("protocol/events.rs", "defines EventRecord (the type, not a write)"),
            (
                "hooks/runner.rs",
                "creates a hook's private stdin file (0600, create_new), not the log",
            ),
            (
                "config/mcp_edit.rs",
                "stages config.toml with the old file's permissions (create_new), not the log",
            ),
            ("cli/export_cmd.rs", "creates the export file the user named (0600), not the log"),
            (
                "tui/history.rs",
                "appends to the TUI's prompt history (0600, O_NOFOLLOW), not the log",
            ),
            (
                "support/private_dir.rs",
                "writes keel's own owner-only files (0600, whatever the umask), not the log",
            ),
        ],
    },
    Owner {
        effect: "draws on the terminal",
        words: &["ratatui", "crossterm"],
        module: "tui",
        exceptions: &[],
    },
];

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

pub(super) fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// Skips a string, char or comment starting at `at`; returns where it
/// ends, or `None` when `at` starts none of them.
pub(super) fn skip_literal(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    if rest.starts_with(b"//") {
        return Some(rest.iter().position(|b| *b == b'\n').map_or(bytes.len(), |n| at + n));
    }
    if rest.starts_with(b"/*") {
        return Some(find(bytes, at + 2, b"*/").map_or(bytes.len(), |n| n + 2));
    }
    let raw = rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br");
    let before_is_ident =
        at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
    if raw && !before_is_ident {
        let start = at + usize::from(rest[0] == b'b') + 1;
        let hashes = bytes[start..].iter().take_while(|b| **b == b'#').count();
        if bytes.get(start + hashes) == Some(&b'"') {
            let close: Vec<u8> =
                std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let end = find(bytes, start + hashes + 1, &close).map_or(bytes.len(), |n| n);
            return Some(end + close.len());
        }
    }
    match rest[0] {
        b'"' => {
            let mut i = at + 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            Some(i + 1)
        }
        // A char literal ('{', '\''), not a lifetime ('a).
        b'\'' if rest.get(2) == Some(&b'\'') => Some(at + 3),
        b'\'' if rest.get(1) == Some(&b'\\') => {
            find(bytes, at + 2, b"'").map(|n| n + 1).or(Some(bytes.len()))
        }
        _ => None,
    }
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|n| from + n)
}

/// Where the item starting at `at` ends: after its `;`, or after the
/// brace matching its first `{`.
fn item_end(bytes: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while i < bytes.len() {
        if let Some(end) = skip_literal(bytes, i) {
            i = end;
            continue;
        }
        match bytes[i] {
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The code that ships: every item under `#[cfg(test)]` (a test module,
/// a test-only function or import) cut out, whatever follows it. Also
/// returns the names of test-only module files (`#[cfg(test)] mod x;`).
fn shipped(text: &str) -> (String, Vec<String>) {
    const MARK: &str = "#[cfg(test)]";
    let bytes = text.as_bytes();
    let mut kept = String::with_capacity(text.len());
    let mut test_files = Vec::new();
    let mut from = 0;
    while let Some(at) = find(bytes, from, MARK.as_bytes()) {
        kept.push_str(&text[from..at]);
        let end = item_end(bytes, at + MARK.len());
        let mut item = text[at + MARK.len()..end].trim();
        let mut path = None;
        while let Some(attribute) = item.strip_prefix("#[") {
            let (inside, rest) = attribute.split_once(']').unwrap_or((attribute, ""));
            if let Some(value) = inside.strip_prefix("path = ") {
                path = Some(value.trim_matches('"').to_owned());
            }
            item = rest.trim_start();
        }
        let item = item.strip_prefix("pub(crate) ").or(item.strip_prefix("pub ")).unwrap_or(item);
        if let Some(name) = item.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
            test_files.push(path.unwrap_or_else(|| name.trim().to_owned()));
        }
        from = end;
    }
    kept.push_str(&text[from..]);
    (kept, test_files)
}

/// The file a `mod name;` in `file` refers to (`name` ending in `.rs`:
/// a `#[path]`, relative to the file's folder).
fn module_file(file: &Path, name: &str) -> PathBuf {
    let stem = file.file_stem().unwrap().to_string_lossy();
    let dir = file.parent().unwrap();
    if name.ends_with(".rs") {
        return dir.join(name);
    }
    let dir = if matches!(stem.as_ref(), "mod" | "lib" | "main") {
        dir.to_path_buf()
    } else {
        dir.join(stem.as_ref())
    };
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() { flat } else { dir.join(name).join("mod.rs") }
}

/// Every source file with its shipped code; test-only files are left out.
pub(super) fn shipped_sources() -> Vec<(PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut test_only = BTreeSet::new();
    let mut sources = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let (code, test_modules) = shipped(&text);
        for name in test_modules {
            test_only.insert(module_file(&file, &name));
        }
        sources.push((file, code));
    }
    sources.retain(|(file, _)| !test_only.contains(file));
    sources
}

pub(super) fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let src = src_dir();
    let mut violations = Vec::new();
    for (file, text) in shipped_sources() {
        let module = module_of(&src, &file);
        let own = layer(&module).unwrap_or_else(|| panic!("module `{module}` has no layer"));
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
                if text.contains(word) {
                    violations.push(format!("{} is pure (L0) but mentions {word}", file.display()));
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// Whether `text` has `word` starting at a word boundary (`Command::new(`
/// but not `SimpleCommand::new(`).
fn mentions(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn each_effect_has_one_owner() {
    let src = src_dir();
    let mut violations = Vec::new();
    let mut used_exceptions = BTreeSet::new();
    for (file, text) in shipped_sources() {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        let module = module_of(&src, &file);
        for owner in &OWNERS {
            let Some(word) = owner.words.iter().find(|word| mentions(&text, word)) else {
                continue;
            };
            if module == owner.module {
                continue;
            }
            if owner.exceptions.iter().any(|(path, _)| *path == rel) {
                used_exceptions.insert(rel.clone());
                continue;
            }
            violations.push(format!(
                "src/{rel} {} (`{word}`); only {}/ may, or name it with its reason in OWNERS",
                owner.effect, owner.module
            ));
        }
    }
    for (path, _) in OWNERS.iter().flat_map(|owner| owner.exceptions) {
        if !used_exceptions.contains(*path) {
            violations.push(format!("src/{path} is a named exception it no longer needs"));
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn test_code_is_cut_by_item_not_at_the_first_marker() {
    let text = "use a;\n#[cfg(test)]\nuse std::fs;\nfn real() { let s = \"}\"; let c = '{'; }\n\
        #[cfg(test)]\nmod tests {\n    fn t() { if x { std::process::exit(1) } }\n}\n\
        fn after() { tokio::spawn(); }\n#[cfg(test)]\nmod step_tests;\n\
        #[cfg(test)]\n#[path = \"batch_tests.rs\"]\nmod tests;\n";
    let (code, test_files) = shipped(text);
    assert!(!code.contains("std::fs") && !code.contains("std::process"), "{code}");
    assert!(
        code.contains("fn real()") && code.contains("fn after() { tokio::spawn(); }"),
        "{code}"
    );
    assert_eq!(test_files, ["step_tests", "batch_tests.rs"]);
    assert!(mentions("let c = std::process::Command::new(x);", "Command::new("));
    assert!(!mentions("SimpleCommand::new(argv)", "Command::new("));
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
    let src = src_dir();
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

/// `text` with its comments and literals blanked (a doc link or a message
/// that names a module is no import).
pub(super) fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match skip_literal(bytes, i) {
            Some(end) => {
                code.push(' ');
                i = end.min(bytes.len());
            }
            None => {
                let next = (i + 1..=bytes.len()).find(|n| text.is_char_boundary(*n)).unwrap();
                code.push_str(&text[i..next]);
                i = next;
            }
        }
    }
    code
}

/// The names a path starting at `at` in `code` leads to next: `x` for
/// `x::…`, and each first segment of a group `{x, y::z}`.
fn path_heads(code: &str, at: usize) -> Vec<String> {
    let rest = &code[at..];
    let ident = |s: &str| -> String {
        s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
    };
    if let Some(group) = rest.strip_prefix('{') {
        let group = &group[..group.find('}').unwrap_or(group.len())];
        group.split(',').map(ident).filter(|name| !name.is_empty()).collect()
    } else {
        vec![ident(rest)]
    }
}

/// Which top-level modules each module's shipped code names (`crate::x`).
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = src_dir();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in shipped_sources() {
        let module = module_of(&src, &file);
        let code = code_only(&text);
        let used = graph.entry(module.clone()).or_default();
        for (at, word) in code.match_indices("crate::") {
            for name in path_heads(&code, at + word.len()) {
                if name != module && layer(&name).is_some() {
                    used.insert(name);
                }
            }
        }
    }
    graph
}

/// Which files of `src/agent/` each of its shipped files uses: through
/// `super::file` or `crate::agent::file`, or through a name `mod.rs`
/// re-exports (`pub use file::{Name}`), which counts as the file it
/// comes from. `mod.rs` itself is the facade, not a node.
fn agent_graph() -> BTreeMap<String, BTreeSet<String>> {
    let dir = src_dir().join("agent");
    let sources: Vec<(String, String)> = shipped_sources()
        .into_iter()
        .filter(|(file, _)| file.parent() == Some(dir.as_path()))
        .map(|(file, text)| (file.file_stem().unwrap().to_string_lossy().into_owned(), text))
        .collect();
    let files: BTreeSet<String> = sources.iter().map(|(name, _)| name.clone()).collect();
    let facade = code_only(&std::fs::read_to_string(dir.join("mod.rs")).unwrap());
    let mut exported: BTreeMap<String, String> = BTreeMap::new();
    for (at, word) in facade.match_indices("pub use ") {
        let path = &facade[at + word.len()..];
        let path = &path[..path.find(';').unwrap_or(path.len())];
        let Some((from, names)) = path.split_once("::") else { continue };
        let names = names.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim().rsplit(' ').next().unwrap_or_default();
            exported.insert(name.to_owned(), from.trim().to_owned());
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, text) in &sources {
        if name == "mod" {
            continue;
        }
        let code = code_only(text);
        let used = graph.entry(name.clone()).or_default();
        for prefix in ["super::", "crate::agent::"] {
            for (at, _) in code.match_indices(prefix) {
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                for head in path_heads(&code, at + prefix.len()) {
                    let target =
                        if files.contains(&head) { Some(&head) } else { exported.get(&head) };
                    if let Some(target) =
                        target.filter(|target| *target != name && *target != "mod")
                    {
                        used.insert(target.clone());
                    }
                }
            }
        }
    }
    graph
}

/// The cycles of `graph`: each set of nodes that reach one another (a
/// strongly connected component of more than one node), sorted.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(node) = todo.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut found: Vec<Vec<String>> = Vec::new();
    for (node, from_node) in &reached {
        let mut component: Vec<String> = from_node
            .iter()
            .filter(|other| reached.get(other).is_some_and(|back| back.contains(*node)))
            .cloned()
            .collect();
        component.sort();
        if component.len() > 1 && !found.contains(&component) {
            found.push(component);
        }
    }
    found
}

/// How a cycle reads in a failure: each node with what it uses of the rest.
fn shown(graph: &BTreeMap<String, BTreeSet<String>>, cycle: &[String]) -> String {
    let lines: Vec<String> = cycle
        .iter()
        .map(|node| {
            let used: Vec<&str> = graph[node]
                .iter()
                .filter(|other| cycle.contains(other))
                .map(String::as_str)
                .collect();
            format!("  {node} -> {}", used.join(", "))
        })
        .collect();
    format!("a cycle of {}:\n{}", cycle.len(), lines.join("\n"))
}

#[test]
fn no_modules_import_each_other_around_a_cycle() {
    let graph = module_graph();
    let found: Vec<String> = cycles(&graph).iter().map(|cycle| shown(&graph, cycle)).collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn no_agent_files_import_each_other_around_a_cycle() {
    let graph = agent_graph();
    assert!(graph.contains_key("step") && graph["step"].contains("state"), "{graph:?}");
    let found: Vec<String> = cycles(&graph).iter().map(|cycle| shown(&graph, cycle)).collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_cycle_is_found_through_any_number_of_nodes_and_imports_in_comments_do_not_count() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a", "d"]),
        ("d", vec![]),
        ("e", vec!["e"]),
    ]
    .into_iter()
    .map(|(node, used)| (node.to_owned(), used.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(cycles(&graph), [["a", "b", "c"]]);
    let code = code_only("use crate::{tools, config::x};\n// crate::tui\nlet s = \"crate::cli\";");
    let heads: Vec<String> =
        code.match_indices("crate::").flat_map(|(at, _)| path_heads(&code, at + 7)).collect();
    assert_eq!(heads, ["tools", "config"]);
}
