//! `keel` and `keel "prompt"`: the interactive session in the current
//! folder. Reads the environment (config, `NO_COLOR`) and hands over to
//! [`crate::tui::run`].

use std::io::IsTerminal;

use super::{ModelArgs, today};
use crate::config::{self, Environment};
use crate::exec::ExitStatus;
use crate::policy::ApprovalMode;
use crate::tui::{self, Theme, TuiOptions};

pub(super) async fn run(model: &ModelArgs, prompt: Option<String>) -> anyhow::Result<ExitStatus> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "keel's interactive session needs a terminal; in scripts run `keel exec \"…\"`"
        );
    }
    let env = Environment::from_process()?;
    let settings = config::load(&env, &model.overrides())?;
    let no_color = std::env::var("NO_COLOR").ok();
    let options = TuiOptions {
        first_prompt: prompt.filter(|p| !p.trim().is_empty()),
        approval: ApprovalMode::Ask,
        cwd: env.cwd.clone(),
        date: today(),
        theme: Theme::from_no_color(no_color.as_deref()),
    };
    Ok(tui::run(settings, options).await?)
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
}
