//! `keel` and `keel "prompt"`: the interactive session in the current
//! folder; `keel resume [ID|--last]`: the same on a resumed session, or
//! the picker of this folder's sessions. Reads the environment (config,
//! `NO_COLOR`) and hands over to [`crate::tui::run`].

use std::io::IsTerminal;

use super::resume_cmd::{ResumeTarget, find_log};
use super::{ModelArgs, ResumeArgs, today};
use crate::config::Environment;
use crate::exec::ExitStatus;
use crate::policy::ApprovalMode;
use crate::tui::{self, Launch, Start, Theme, TuiOptions};

pub(super) async fn run(model: &ModelArgs, prompt: Option<String>) -> anyhow::Result<ExitStatus> {
    let first_prompt = prompt.filter(|p| !p.trim().is_empty());
    open(model, Start::New, first_prompt).await
}

/// `keel resume [ID | --last]`: the TUI on a resumed session; with
/// neither, the picker of this folder's sessions.
pub(super) async fn resume(model: &ModelArgs, args: &ResumeArgs) -> anyhow::Result<ExitStatus> {
    require_terminal(
        "keel resume opens the interactive session; in scripts run `keel exec resume [--last|ID]`",
    )?;
    let env = Environment::from_process()?;
    let start = match (&args.id, args.last) {
        (Some(id), _) => Start::Resume(find_log(&env, &ResumeTarget::Id(id.clone()))?),
        (None, true) => Start::Resume(find_log(&env, &ResumeTarget::Last)?),
        (None, false) => {
            let launch = Launch { env, overrides: model.overrides() };
            let sessions = launch.sessions_here();
            if sessions.is_empty() {
                anyhow::bail!(
                    "no session was started in this folder; `keel sessions` lists all of them"
                );
            }
            Start::Pick(sessions)
        }
    };
    open(model, start, None).await
}

async fn open(
    model: &ModelArgs,
    start: Start,
    first_prompt: Option<String>,
) -> anyhow::Result<ExitStatus> {
    require_terminal(
        "keel's interactive session needs a terminal; in scripts run `keel exec \"…\"`",
    )?;
    let env = Environment::from_process()?;
    let launch = Launch { env: env.clone(), overrides: model.overrides() };
    // Configuration errors show before the screen switches.
    launch.settings(None)?;
    let no_color = std::env::var("NO_COLOR").ok();
    let options = TuiOptions {
        first_prompt,
        approval: ApprovalMode::Ask,
        cwd: env.cwd.clone(),
        date: today(),
        theme: Theme::from_no_color(no_color.as_deref()),
        start,
        launch,
    };
    Ok(tui::run(options).await?)
}

fn require_terminal(message: &str) -> anyhow::Result<()> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!("{message}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::{Cli, Command};

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("keel").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn a_bare_word_is_a_first_prompt() {
        let cli = parse(&["fix the build", "--model", "m"]);
        assert_eq!(cli.prompt.as_deref(), Some("fix the build"));
        assert!(cli.command.is_none());
    }

    #[test]
    fn no_arguments_start_an_empty_session() {
        let cli = parse(&[]);
        assert!(cli.prompt.is_none() && cli.command.is_none());
    }

    #[test]
    fn subcommand_names_still_win() {
        let cli = parse(&["--model", "m", "exec", "task"]);
        assert!(matches!(cli.command, Some(Command::Exec(_))));
        assert!(cli.prompt.is_none());
        assert!(matches!(parse(&["tool", "read_file"]).command, Some(Command::Tool(_))));
    }

    #[test]
    fn resume_forms() {
        let Some(Command::Resume(args)) = parse(&["resume"]).command else { panic!() };
        assert!(args.id.is_none() && !args.last, "no id: the picker");
        let Some(Command::Resume(args)) = parse(&["resume", "--last"]).command else { panic!() };
        assert!(args.last);
        let Some(Command::Resume(args)) = parse(&["resume", "01ab"]).command else { panic!() };
        assert_eq!(args.id.as_deref(), Some("01ab"));
        assert!(matches!(parse(&["exec", "resume", "--last"]).command, Some(Command::Exec(_))));
    }
}
