//! `keel demo`: a recorded session (a typo fixed in a tiny shell script)
//! replayed offline on a bundled copy of its repository, so a new user sees
//! keel work with no API key and no network. The same machinery as
//! `keel replay`; the session log and the files are compiled in. It says
//! up front that it is a replay (it runs at machine speed), shows the
//! change it made as a diff, and ends with how to start for real; the
//! temporary log is never named (it is deleted at the end).

use std::io::Write;

use super::replay_cmd::{print_report, temp_folder};
use super::{CliError, Context, ExitStatus};
use crate::exec::HumanPrinter;
use crate::runtime::replay;

/// The bundled repository, as (path, content).
const REPO: [(&str, &str); 2] =
    [("greet.sh", include_str!("demo/greet.sh")), ("README.md", include_str!("demo/README.md"))];

/// The recorded session.
const LOG: &str = include_str!("demo/session.jsonl");

pub(super) async fn run() -> Result<ExitStatus, CliError> {
    let dir = temp_folder("demo")?;
    let result = run_in(&dir).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn run_in(dir: &std::path::Path) -> Result<ExitStatus, CliError> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).context("cannot create the demo repository")?;
    for (name, content) in REPO {
        std::fs::write(repo.join(name), content)
            .with_context(|| format!("cannot write the demo file {name}"))?;
    }
    let log = dir.join("demo-session.jsonl");
    std::fs::write(&log, LOG).context("cannot write the demo session log")?;
    let _ = writeln!(
        std::io::stderr(),
        "keel demo: a replay of a recorded session (no model is called, so it runs at \
         machine speed), in a temporary copy of its repository\n"
    );
    let mut printer = HumanPrinter::stderr().without_paths();
    let report = replay(&log, &repo, &mut printer).await?;
    print_report(&report)?;
    let mut out = std::io::stdout().lock();
    for (name, before) in REPO {
        let after = std::fs::read_to_string(repo.join(name)).unwrap_or_default();
        if after != before {
            let diff = similar::TextDiff::from_lines(before, after.as_str())
                .unified_diff()
                .context_radius(3)
                .header(&format!("a/{name}"), &format!("b/{name}"))
                .to_string();
            writeln!(out, "\nthe change keel made:\n{diff}")?;
        }
    }
    if let Some(text) = &report.final_text {
        writeln!(out, "{text}")?;
    }
    writeln!(
        out,
        "\nnext: set a key (export OPENAI_API_KEY=… or ANTHROPIC_API_KEY=…) and run `keel` in \
         a repository; `keel exec --help` for scripts"
    )?;
    Ok(if report.differences.is_empty() { ExitStatus::Done } else { ExitStatus::Failed })
}
