//! `keel plugin add/list/remove`: the only writer of `$KEEL_HOME/plugins/`.
//! `add` checks a plugin folder (a valid `.claude-plugin/plugin.json`, a
//! name no installed plugin has, no symlink leading out of the folder),
//! copies it to `$KEEL_HOME/plugins/<name>/` and records name, version and
//! source in `installed.json`; `remove` deletes both. A git URL is cloned
//! by the CLI (through `sandbox`) into a temporary folder first.
//!
//! Invariants: nothing is written before every check passed; the copy is
//! made beside the target and renamed into place, so a failed copy leaves
//! no half plugin; a symlink inside the plugin is copied as the file or
//! folder it points to (so the installed copy cannot reach out later);
//! `.git` is not copied.

use std::path::{Path, PathBuf};

use super::plugins::{
    InstalledPlugin, PluginError, RECORD, plugins_dir, read_manifest, read_record,
};

/// Checks the plugin in `folder` and installs a copy; `source` is what the
/// user gave (a folder or URL), kept in the record.
pub fn add_plugin(
    keel_home: &Path,
    folder: &Path,
    source: &str,
) -> Result<InstalledPlugin, PluginError> {
    let manifest = read_manifest(folder)?;
    let mut record = read_record(keel_home)?;
    let target = plugins_dir(keel_home).join(&manifest.name);
    if let Some(known) = record.plugins.iter().find(|plugin| plugin.name == manifest.name) {
        return Err(PluginError::Clash {
            name: manifest.name.clone(),
            source_label: known.source.clone(),
        });
    }
    if target.exists() {
        return Err(PluginError::Clash {
            name: manifest.name.clone(),
            source_label: target.display().to_string(),
        });
    }
    let root = folder
        .canonicalize()
        .map_err(|source| PluginError::Read { path: folder.to_owned(), source })?;
    check_links(&root, &root)?;
    let dir = plugins_dir(keel_home);
    std::fs::create_dir_all(&dir)
        .map_err(|source| PluginError::Write { path: dir.clone(), source })?;
    let staging = dir.join(format!(".adding-{}", manifest.name));
    let _ = std::fs::remove_dir_all(&staging);
    let copied = copy_tree(&root, &staging).and_then(|()| {
        std::fs::rename(&staging, &target)
            .map_err(|source| PluginError::Write { path: target.clone(), source })
    });
    if let Err(error) = copied {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    let installed = InstalledPlugin {
        name: manifest.name,
        version: manifest.version,
        description: manifest.description,
        source: source.to_owned(),
    };
    record.plugins.push(installed.clone());
    record.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    write_record(keel_home, &record)?;
    Ok(installed)
}

/// Deletes an installed plugin and its record line.
pub fn remove_plugin(keel_home: &Path, name: &str) -> Result<InstalledPlugin, PluginError> {
    let mut record = read_record(keel_home)?;
    let Some(index) = record.plugins.iter().position(|plugin| plugin.name == name) else {
        return Err(PluginError::NotInstalled { name: name.to_owned() });
    };
    let removed = record.plugins.remove(index);
    let folder = plugins_dir(keel_home).join(&removed.name);
    match std::fs::remove_dir_all(&folder) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(PluginError::Write { path: folder, source }),
    }
    write_record(keel_home, &record)?;
    Ok(removed)
}

/// The record's plugins, sorted by name.
pub fn list_plugins(keel_home: &Path) -> Result<Vec<InstalledPlugin>, PluginError> {
    Ok(read_record(keel_home)?.plugins)
}

fn write_record(keel_home: &Path, record: &super::plugins::Record) -> Result<(), PluginError> {
    let path = plugins_dir(keel_home).join(RECORD);
    let text = serde_json::to_string_pretty(record)
        .map_err(|error| PluginError::Invalid { path: path.clone(), message: error.to_string() })?;
    let staging = path.with_extension("json.new");
    std::fs::write(&staging, text + "\n")
        .and_then(|()| std::fs::rename(&staging, &path))
        .map_err(|source| PluginError::Write { path, source })
}

/// Refuses a symlink anywhere below `dir` that resolves outside `root`
/// (a dangling one counts as outside: nothing can say where it will lead).
fn check_links(root: &Path, dir: &Path) -> Result<(), PluginError> {
    for entry in read_dir(dir)? {
        let meta = std::fs::symlink_metadata(&entry)
            .map_err(|source| PluginError::Read { path: entry.clone(), source })?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&entry).unwrap_or_default();
            match entry.canonicalize() {
                Ok(resolved) if resolved.starts_with(root) => {}
                _ => return Err(PluginError::SymlinkEscapes { link: entry, target }),
            }
        } else if meta.is_dir() {
            check_links(root, &entry)?;
        }
    }
    Ok(())
}

/// Copies `from` to `to` (created), following the (checked) symlinks.
fn copy_tree(from: &Path, to: &Path) -> Result<(), PluginError> {
    std::fs::create_dir_all(to)
        .map_err(|source| PluginError::Write { path: to.to_owned(), source })?;
    for entry in read_dir(from)? {
        let Some(name) = entry.file_name() else { continue };
        if name == ".git" {
            continue;
        }
        let target = to.join(name);
        let meta = std::fs::metadata(&entry)
            .map_err(|source| PluginError::Read { path: entry.clone(), source })?;
        if meta.is_dir() {
            copy_tree(&entry, &target)?;
        } else {
            std::fs::copy(&entry, &target)
                .map_err(|source| PluginError::Write { path: target.clone(), source })?;
        }
    }
    Ok(())
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, PluginError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|source| PluginError::Read { path: dir.to_owned(), source })?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::plugins::load_installed;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plugins/wshobson").join(name)
    }

    #[test]
    fn a_real_plugin_installs_lists_loads_and_removes() {
        let home = tempfile::tempdir().unwrap();
        let source = fixture("debugging-toolkit");
        let added = add_plugin(home.path(), &source, "./debugging-toolkit").unwrap();
        assert_eq!(added.name, "debugging-toolkit");
        assert_eq!(added.version.as_deref(), Some("1.2.1"));
        let listed = list_plugins(home.path()).unwrap();
        assert_eq!(listed, vec![added.clone()]);
        let loaded = load_installed(home.path());
        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        let agents = loaded.agent_roots();
        assert!(agents[0].0.join("debugger.md").is_file(), "{agents:?}");
        let again = add_plugin(home.path(), &source, "again").unwrap_err().to_string();
        assert!(again.contains("already installed") && again.contains("./debugging-toolkit"));
        remove_plugin(home.path(), "debugging-toolkit").unwrap();
        assert!(list_plugins(home.path()).unwrap().is_empty());
        assert!(!plugins_dir(home.path()).join("debugging-toolkit").exists());
        let gone = remove_plugin(home.path(), "debugging-toolkit").unwrap_err().to_string();
        assert!(gone.contains("no plugin named `debugging-toolkit`"), "{gone}");
    }

    #[test]
    fn a_folder_without_a_valid_manifest_is_refused_and_nothing_is_written() {
        let home = tempfile::tempdir().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let missing = add_plugin(home.path(), folder.path(), "x").unwrap_err().to_string();
        assert!(missing.contains("not a Claude Code plugin"), "{missing}");
        std::fs::create_dir_all(folder.path().join(".claude-plugin")).unwrap();
        let manifest = folder.path().join(".claude-plugin/plugin.json");
        std::fs::write(&manifest, r#"{"name": "Bad Name"}"#).unwrap();
        let bad = add_plugin(home.path(), folder.path(), "x").unwrap_err().to_string();
        assert!(bad.contains("`Bad Name` is not valid"), "{bad}");
        std::fs::write(&manifest, r#"{"name": "ok", "commands": "../elsewhere"}"#).unwrap();
        let escapes = add_plugin(home.path(), folder.path(), "x").unwrap_err().to_string();
        assert!(escapes.contains("leaves the plugin's folder"), "{escapes}");
        std::fs::write(&manifest, "{ not json").unwrap();
        let broken = add_plugin(home.path(), folder.path(), "x").unwrap_err().to_string();
        assert!(broken.contains("plugin.json is not valid"), "{broken}");
        assert!(!plugins_dir(home.path()).exists());
    }

    #[test]
    fn a_symlink_out_of_the_plugin_is_refused_one_inside_is_copied_as_a_file() {
        let home = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join(".claude-plugin")).unwrap();
        std::fs::create_dir_all(folder.path().join("commands")).unwrap();
        std::fs::write(folder.path().join(".claude-plugin/plugin.json"), r#"{"name": "p"}"#)
            .unwrap();
        std::fs::write(folder.path().join("commands/real.md"), "Say hi").unwrap();
        std::os::unix::fs::symlink("real.md", folder.path().join("commands/alias.md")).unwrap();
        add_plugin(home.path(), folder.path(), "p").unwrap();
        let copied = plugins_dir(home.path()).join("p/commands/alias.md");
        assert!(!std::fs::symlink_metadata(&copied).unwrap().file_type().is_symlink());
        remove_plugin(home.path(), "p").unwrap();
        let link = folder.path().join("commands/leak.md");
        std::os::unix::fs::symlink(outside.path().join("secret"), &link).unwrap();
        let refused = add_plugin(home.path(), folder.path(), "p").unwrap_err().to_string();
        assert!(refused.contains("outside the plugin's folder"), "{refused}");
        assert!(!plugins_dir(home.path()).join("p").exists());
    }
}
