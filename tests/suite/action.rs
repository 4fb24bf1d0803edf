//! The GitHub Action (`action.yml`, issue 40), run locally: its `run:`
//! scripts are taken from the file and run in order by bash as a runner
//! would (`bash --noprofile --norc -eo pipefail`), with fake `GITHUB_*` /
//! `RUNNER_*` files and variables, the `${{ }}` expressions of their `env:`
//! filled in here, and keel talking to a scripted model. The `uses:` steps
//! (cache, upload-artifact) are GitHub's and do not run; a test checks
//! which they are and that the artifact folder they would upload is full.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use super::support::{Sandbox, scripted_model};
use super::wire::{Step, Wire};

fn action() -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("action.yml");
    let text = std::fs::read_to_string(path).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

fn text(yaml: &Yaml) -> String {
    match yaml {
        Yaml::String(s) => s.clone(),
        Yaml::Boolean(b) => b.to_string(),
        Yaml::Integer(i) => i.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

/// A runner: its folders, the inputs, what steps said (`GITHUB_OUTPUT`).
struct Runner {
    workspace: PathBuf,
    temp: PathBuf,
    tool_cache: PathBuf,
    summary: PathBuf,
    home: PathBuf,
    /// Fake `cargo` (records its arguments, installs the built keel).
    fake_bin: PathBuf,
    inputs: BTreeMap<String, String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    path_additions: Vec<String>,
}

/// What one run of the action did.
struct Ran {
    /// Each run step's name and exit code, in order.
    steps: Vec<(String, i32)>,
}

impl Runner {
    fn new(sandbox: &Sandbox, root: &Path, inputs: &[(&str, &str)]) -> Self {
        let runner = Runner {
            workspace: sandbox.repo.clone(),
            temp: root.join("runner-temp"),
            tool_cache: root.join("tool-cache"),
            summary: root.join("summary.md"),
            home: sandbox.home.clone(),
            fake_bin: root.join("fake-bin"),
            inputs: inputs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            outputs: BTreeMap::new(),
            path_additions: Vec::new(),
        };
        for dir in [&runner.temp, &runner.tool_cache, &runner.fake_bin] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let keel = env!("CARGO_BIN_EXE_keel");
        let cargo = format!(
            "#!/bin/sh\necho \"$@\" >> '{log}'\nwhile [ $# -gt 0 ]; do\n  \
             [ \"$1\" = --root ] && root=\"$2\"\n  shift\ndone\n\
             mkdir -p \"$root/bin\" && cp '{keel}' \"$root/bin/keel\"\n",
            log = root.join("cargo-calls").display()
        );
        let fake = runner.fake_bin.join("cargo");
        std::fs::write(&fake, cargo).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
        runner
    }

    /// The value of one `${{ }}` expression.
    fn expression(&self, action: &Yaml, expr: &str) -> String {
        let expr = expr.trim();
        if let Some(name) = expr.strip_prefix("inputs.") {
            return self
                .inputs
                .get(name)
                .cloned()
                .unwrap_or_else(|| text(&action["inputs"][name]["default"]));
        }
        if let Some(rest) = expr.strip_prefix("steps.") {
            let (step, output) = rest.split_once(".outputs.").unwrap();
            return self.outputs.get(step).and_then(|o| o.get(output)).cloned().unwrap_or_default();
        }
        match expr {
            "github.action_path" => env!("CARGO_MANIFEST_DIR").to_owned(),
            "github.action_ref" => "v-test".to_owned(),
            "runner.temp" => self.temp.display().to_string(),
            "runner.tool_cache" => self.tool_cache.display().to_string(),
            other => panic!("the test runner does not know ${{{{ {other} }}}}"),
        }
    }

    /// `text` with its `${{ }}` expressions filled in.
    fn fill(&self, action: &Yaml, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let end = rest[start..].find("}}").unwrap() + start;
            out.push_str(&self.expression(action, &rest[start + 3..end]));
            rest = &rest[end + 2..];
        }
        out + rest
    }

    /// A step's `if:`: `always()`, or `A == 'x'` / `A != 'x'` joined by `&&`.
    fn condition(&self, action: &Yaml, step: &Yaml, failed: bool) -> bool {
        let Some(condition) = step["if"].as_str() else { return !failed };
        if condition == "always()" {
            return true;
        }
        !failed
            && condition.split("&&").all(|part| {
                let (left, right, equal) = match part.split_once("!=") {
                    Some((l, r)) => (l, r, false),
                    None => {
                        let (l, r) = part.split_once("==").unwrap();
                        (l, r, true)
                    }
                };
                let value = self.expression(action, left);
                (value == right.trim().trim_matches('\'')) == equal
            })
    }

    /// Runs every `run:` step in order, as a runner would.
    fn run(&mut self, action: &Yaml) -> Ran {
        let mut ran = Ran { steps: Vec::new() };
        let mut failed = false;
        for (index, step) in action["runs"]["steps"].as_vec().unwrap().iter().enumerate() {
            let Some(script) = step["run"].as_str() else { continue };
            if !self.condition(action, step, failed) {
                continue;
            }
            let id = step["id"].as_str().map_or_else(|| format!("step{index}"), str::to_owned);
            let code = self.run_step(action, step, &id, script);
            failed |= code != 0;
            ran.steps.push((step["name"].as_str().unwrap().to_owned(), code));
        }
        ran
    }

    fn run_step(&mut self, action: &Yaml, step: &Yaml, id: &str, script: &str) -> i32 {
        assert_eq!(step["shell"].as_str(), Some("bash"), "every run step names bash");
        let output = self.temp.join(format!("output-{id}"));
        let path_file = self.temp.join(format!("path-{id}"));
        std::fs::write(&output, "").unwrap();
        std::fs::write(&path_file, "").unwrap();
        let script_file = self.temp.join(format!("{id}.sh"));
        std::fs::write(&script_file, script).unwrap();
        let mut path: Vec<String> = self.path_additions.iter().rev().cloned().collect();
        path.push(self.fake_bin.display().to_string());
        path.push(std::env::var("PATH").unwrap_or_default());
        let dir = match step["working-directory"].as_str() {
            Some(dir) => self.workspace.join(self.fill(action, dir)),
            None => self.workspace.clone(),
        };
        let mut command = std::process::Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script_file)
            .env_clear()
            .env("PATH", path.join(":"))
            .env("HOME", &self.home)
            .env("CI", "true")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &self.workspace)
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_PATH", &path_file)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("RUNNER_TEMP", &self.temp)
            .current_dir(dir);
        for (key, value) in step["env"].as_hash().into_iter().flatten() {
            command.env(text(key), self.fill(action, &text(value)));
        }
        let status = command.status().unwrap();
        self.outputs
            .insert(id.to_owned(), parse_outputs(&std::fs::read_to_string(&output).unwrap()));
        let added = std::fs::read_to_string(&path_file).unwrap();
        self.path_additions.extend(added.lines().map(str::to_owned));
        status.code().unwrap_or(-1)
    }

    fn output(&self, step: &str, name: &str) -> &str {
        self.outputs.get(step).and_then(|o| o.get(name)).map_or("", String::as_str)
    }

    fn cargo_calls(&self) -> String {
        std::fs::read_to_string(self.fake_bin.parent().unwrap().join("cargo-calls"))
            .unwrap_or_default()
    }
}

/// `GITHUB_OUTPUT`: `name=value` lines and `name<<DELIMITER` blocks.
fn parse_outputs(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some((name, delimiter)) = line.split_once("<<") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != delimiter).collect();
            out.insert(name.to_owned(), body.join("\n"));
        } else if let Some((name, value)) = line.split_once('=') {
            out.insert(name.to_owned(), value.to_owned());
        }
    }
    out
}

async fn model(steps: &[Step]) -> (wiremock::MockServer, String) {
    let server = scripted_model(Wire::Chat, steps).await;
    let url = format!("{}/v1", server.uri());
    (server, url)
}

#[test]
fn the_action_uses_only_githubs_cache_and_artifact_steps() {
    let action = action();
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let uses: Vec<&str> = action["runs"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .filter_map(|step| step["uses"].as_str())
        .collect();
    assert_eq!(uses, ["actions/cache@v4", "actions/upload-artifact@v4"]);
    for step in action["runs"]["steps"].as_vec().unwrap() {
        if let Some(script) = step["run"].as_str() {
            assert!(!script.contains("${{"), "inputs reach scripts through env only: {script}");
        }
    }
}

#[tokio::test]
async fn the_scripts_install_run_summarize_and_keep_the_log() {
    let sandbox = Sandbox::new();
    let root = tempfile::tempdir().unwrap();
    let (_server, url) = model(&[Step::Answer("All <b>good</b>.".into())]).await;
    let inputs = [
        ("prompt", "Which files are here? $(touch injected)"),
        ("provider", "openai-chat"),
        ("model", "m"),
        ("base-url", url.as_str()),
        ("max-steps", "5"),
    ];
    let mut runner = Runner::new(&sandbox, root.path(), &inputs);
    let ran = runner.run(&action());
    let names: Vec<&str> = ran.steps.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["Install keel", "Run keel", "Summarize"], "{:?}", ran.steps);
    assert!(ran.steps.iter().all(|(_, code)| *code == 0), "{:?}", ran.steps);
    assert!(runner.cargo_calls().contains("install --locked --path"), "{}", runner.cargo_calls());
    assert_eq!(runner.output("run", "status"), "completed");
    assert_eq!(runner.output("run", "exit-code"), "0");
    assert_eq!(runner.output("run", "final-text"), "All <b>good</b>.");
    assert!(!sandbox.repo.join("injected").exists(), "the prompt ran as shell");
    let summary = std::fs::read_to_string(&runner.summary).unwrap();
    assert!(summary.contains("### keel: `completed`"), "{summary}");
    assert!(summary.contains("All &lt;b&gt;good&lt;/b&gt;."), "escaped: {summary}");
    // What upload-artifact would upload: the events and the session log.
    let artifact = PathBuf::from(runner.output("run", "artifact-dir"));
    let mut files: Vec<String> = std::fs::read_dir(&artifact)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files.contains(&"events.jsonl".to_owned()), "{files:?}");
    let log = files.iter().find(|f| *f != "events.jsonl").unwrap();
    for line in std::fs::read_to_string(artifact.join(log)).unwrap().lines() {
        super::contract::validate_log_line(&serde_json::from_str(line).unwrap());
    }
    // A second job with the cache restored builds nothing.
    let calls = runner.cargo_calls();
    let ran = runner.run(&action());
    assert!(ran.steps.iter().all(|(_, code)| *code == 0), "{:?}", ran.steps);
    assert_eq!(runner.cargo_calls(), calls, "cargo ran again with keel cached");
}

#[tokio::test]
async fn a_schema_invalid_answer_fails_the_job_after_the_summary() {
    let sandbox = Sandbox::new();
    sandbox.write("answer.schema.json", r#"{"type": "object", "required": ["ok"]}"#);
    let root = tempfile::tempdir().unwrap();
    let (_server, url) = model(&[Step::Answer("not json".into())]).await;
    let inputs = [
        ("prompt", "Which files are here?"),
        ("provider", "openai-chat"),
        ("model", "m"),
        ("base-url", url.as_str()),
        ("output-schema", "answer.schema.json"),
    ];
    let mut runner = Runner::new(&sandbox, root.path(), &inputs);
    let ran = runner.run(&action());
    let steps: Vec<(&str, i32)> = ran.steps.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    assert_eq!(
        steps,
        [("Install keel", 0), ("Run keel", 0), ("Summarize", 0), ("Fail on keel's exit code", 1)]
    );
    assert_eq!(runner.output("run", "status"), "schema_invalid");
    let summary = std::fs::read_to_string(&runner.summary).unwrap();
    assert!(summary.contains("### keel: `schema_invalid`"), "{summary}");
    assert!(summary.contains("| error |"), "{summary}");
}
