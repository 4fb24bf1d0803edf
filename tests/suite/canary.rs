//! Canaries for the adversarial corpus: a fresh folder outside the
//! workspace and outside temp (`/var/lib/keel-tests/…` when it can be
//! created, else under cargo's target tmp dir), which an attack would write
//! into if it escaped; and a scripted `keel exec` run.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

/// A folder an escaped attack would write into; removed on drop.
pub struct Canary {
    pub dir: PathBuf,
}

impl Canary {
    pub fn new(name: &str) -> Self {
        let unique = format!("{name}-{}-{}", std::process::id(), unique_suffix());
        let bases = [
            PathBuf::from("/var/lib/keel-tests"),
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("keel-canaries"),
        ];
        for base in bases {
            let dir = base.join(&unique);
            if std::fs::create_dir_all(&dir).is_ok() {
                return Self { dir };
            }
        }
        panic!("no folder for canaries outside temp could be created");
    }

    /// A shell command that leaves `tag` in the canary folder if it runs.
    pub fn trap(&self, tag: &str) -> String {
        format!("touch {}", self.dir.join(tag).display())
    }

    /// The path of a file the attack would create or change.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Fails the test if anything fired, naming what did.
    pub fn assert_quiet(&self, context: &str) {
        let fired: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
            })
            .unwrap_or_default();
        assert!(fired.is_empty(), "{context}: escaped, canaries fired: {fired:?}");
    }

    /// Files present in the canary folder (for pre-seeded canaries).
    pub fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn unique_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos() as u64));
    hasher.finish()
}

/// A script that writes a file (so a checkpoint is taken) and answers.
pub fn write_then_answer() -> Vec<Step> {
    vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "note.txt", "content": "x\n"}))],
        },
        Step::Answer("done".into()),
    ]
}

/// Runs `keel exec --full-auto` against a chat model playing `steps`, in
/// `dir` (the repository unless given), with `env` added.
pub async fn exec_in(
    sandbox: &Sandbox,
    dir: &Path,
    steps: &[Step],
    env: &[(&str, &str)],
    args: &[&str],
) -> Output {
    let server = scripted_model(Wire::Chat, steps).await;
    let mut command = sandbox.keel();
    command.current_dir(dir);
    for (key, value) in env {
        command.env(key, value);
    }
    command
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "--full-auto"])
        .args(args)
        .arg("go")
        .output()
        .unwrap()
}

/// [`exec_in`] in the repository with the write-then-answer script.
pub async fn exec(sandbox: &Sandbox, env: &[(&str, &str)]) -> Output {
    exec_in(sandbox, &sandbox.repo.clone(), &write_then_answer(), env, &[]).await
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
