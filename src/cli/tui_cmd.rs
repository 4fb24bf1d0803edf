//! `keel` and `keel "prompt"`: the interactive session in the current
//! folder; `keel resume [ID|--last]`: the same on a resumed session, or
//! the picker of this folder's sessions. Reads the environment (config,
//! `NO_COLOR`) and hands over to [`crate::tui::run`].

use std::io::IsTerminal;

use clap::CommandFactory;

use super::resume_cmd::{ResumeTarget, find_log};
use super::{Cli, CliError, ExitStatus, ModeArgs, ModelArgs, ResumeArgs, today};
use crate::config::Environment;
use crate::exit::signals;
use crate::session::{self, SessionError};
use crate::tui::{self, FirstPrompt, Launch, Start, Theme, TuiOptions};

pub(super) async fn run(
    model: &ModelArgs,
    mode: &ModeArgs,
    prompt: Option<String>,
) -> Result<ExitStatus, CliError> {
    let first_prompt = match prompt.filter(|p| !p.trim().is_empty()) {
        Some(prompt) => Some(judge_first_prompt(prompt)?),
        None => None,
    };
    open(model, mode, Start::New, first_prompt).await
}

/// `keel WORD`: a single word that names no subcommand is more likely a
/// typo than a task. Close to a subcommand: an error with "did you mean"
/// (nothing is sent); else, unless it names a file, it waits in the input
/// for an Enter instead of being sent at once. `keel -- WORD` sends it.
fn judge_first_prompt(prompt: String) -> Result<FirstPrompt, CliError> {
    let word = prompt.trim();
    let forced = std::env::args().any(|arg| arg == "--");
    if forced || word.contains(char::is_whitespace) || std::path::Path::new(word).exists() {
        return Ok(FirstPrompt::Send(prompt));
    }
    if let Some(name) = closest_subcommand(word) {
        return Err(CliError::usage(format!(
            "`{word}` is not a keel command; did you mean `keel {name}`? (to send \"{word}\" to \
             the model, run `keel -- {word}`)"
        )));
    }
    Ok(FirstPrompt::Confirm(prompt))
}

/// The subcommand `word` most likely meant, if any is close.
fn closest_subcommand(word: &str) -> Option<String> {
    let word = word.to_lowercase();
    Cli::command()
        .get_subcommands()
        .filter(|command| !command.is_hide_set())
        .map(|command| command.get_name().to_owned())
        .map(|name| (strsim::damerau_levenshtein(&word, &name), name))
        .filter(|(distance, name)| {
            let close = if name.len() <= 5 { 1 } else { 2 };
            *distance <= close || (word.len() >= 3 && name.starts_with(&word))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// `keel resume [ID | --last]`: the TUI on a resumed session; with
/// neither, the picker of this folder's sessions.
pub(super) async fn resume(model: &ModelArgs, args: &ResumeArgs) -> Result<ExitStatus, CliError> {
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
                return Err(CliError::usage(
                    "no session was started in this folder; `keel sessions` lists all of them",
                ));
            }
            Start::Pick(sessions)
        }
    };
    // Said before the screen switches; the session's own lock decides.
    if let Start::Resume(log) = &start
        && let Some(holder) = session::lock_holder(log)
    {
        let holder = format!("keel ({holder})");
        return Err(SessionError::Locked { path: log.clone(), holder }.into());
    }
    open(model, &args.mode, start, None).await
}

async fn open(
    model: &ModelArgs,
    mode: &ModeArgs,
    start: Start,
    first_prompt: Option<FirstPrompt>,
) -> Result<ExitStatus, CliError> {
    require_terminal(
        "keel's interactive session needs a terminal; in scripts run `keel exec \"…\"`",
    )?;
    let env = Environment::from_process()?;
    let launch = Launch { env: env.clone(), overrides: model.overrides() };
    // Configuration errors show before the screen switches.
    let settings = launch.settings(None)?;
    let no_color = std::env::var("NO_COLOR").ok();
    let term = std::env::var("TERM").ok();
    // A second signal exits at once, so the screen is restored first.
    let shutdown = signals::watch(|_| tui::restore_terminal())?;
    let options = TuiOptions {
        first_prompt,
        approval: mode.approval().unwrap_or(settings.default_mode),
        mode_flag: mode.approval(),
        cwd: env.cwd.clone(),
        date: today(),
        theme: Theme::from_env(no_color.as_deref(), term.as_deref()),
        start,
        launch,
        shutdown: shutdown.clone(),
    };
    // A session that cannot open (its log is in use, unwritable) or a
    // terminal that cannot be set up is a failed run (exit 1); one a
    // signal stopped exits with the signal's status.
    tui::run(options).await.map_err(|error| {
        let error = CliError::from(error);
        match shutdown.signal() {
            Some(signal) => error.interrupted_by(signal),
            None => error,
        }
    })
}

fn require_terminal(message: &str) -> Result<(), CliError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CliError::usage(message));
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
    fn typos_of_subcommands_are_recognised() {
        assert_eq!(super::closest_subcommand("sesions").as_deref(), Some("sessions"));
        assert_eq!(super::closest_subcommand("exce").as_deref(), Some("exec"));
        assert_eq!(super::closest_subcommand("Resume").as_deref(), Some("resume"));
        assert_eq!(super::closest_subcommand("refactor"), None);
        assert_eq!(super::closest_subcommand("hi"), None);
    }

    #[test]
    fn mode_flags_reach_the_interactive_session() {
        let cli = parse(&["--mode", "auto"]);
        assert_eq!(cli.mode.approval(), Some(crate::policy::ApprovalMode::Auto));
        assert_eq!(parse(&["--yolo"]).mode.approval(), Some(crate::policy::ApprovalMode::Yolo));
        let Some(Command::Resume(args)) = parse(&["resume", "--full-auto", "01ab"]).command else {
            panic!()
        };
        assert_eq!(args.mode.approval(), Some(crate::policy::ApprovalMode::Auto));
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
