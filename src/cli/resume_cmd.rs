//! The resume forms of `keel exec`: `--resume ID|--last [PROMPT]`, and the
//! literal `keel exec resume [--last|ID] [PROMPT]`, which must not break
//! `keel exec "resume the work"` (a prompt that merely starts with the
//! word). Also which log a target names, and taking model and provider from
//! the log unless flags say otherwise.

use std::path::{Path, PathBuf};

use super::{CliError, Context, ExecArgs};
use crate::config::{CliOverrides, Environment};
use crate::session::{find_by_prefix, newest_in_folder, sessions_dir};

/// Which session to continue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ResumeTarget {
    Last,
    Id(String),
}

/// What `keel exec` was asked, after untangling the resume forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExecRequest {
    pub target: Option<ResumeTarget>,
    pub prompt: Option<String>,
}

impl ExecRequest {
    pub fn from_args(args: &ExecArgs) -> Result<Self, CliError> {
        let flag_target = match (&args.resume, args.last) {
            (Some(id), _) => Some(ResumeTarget::Id(id.clone())),
            (None, true) => Some(ResumeTarget::Last),
            (None, false) => None,
        };
        let literal = args.prompt.as_deref() == Some("resume")
            && (args.last || args.resume.is_some() || !args.rest.is_empty());
        if literal {
            return Self::literal_form(flag_target, &args.rest);
        }
        if let Some(extra) = args.rest.first() {
            return Err(CliError::usage(format!(
                "unexpected argument `{extra}`: quote the prompt, e.g. keel exec \"fix the tests\""
            )));
        }
        if flag_target.is_none() && args.prompt.is_none() && !args.input_stream {
            return Err(CliError::usage(
                "give a prompt, or --resume ID / --last to continue a session",
            ));
        }
        Ok(Self { target: flag_target, prompt: args.prompt.clone() })
    }

    /// `resume` was the first word: `[--last|ID] [PROMPT]` follow.
    fn literal_form(flag_target: Option<ResumeTarget>, rest: &[String]) -> Result<Self, CliError> {
        let (target, words) = match flag_target {
            Some(target) => (target, rest),
            None => match rest.split_first() {
                Some((id, words)) => (ResumeTarget::Id(id.clone()), words),
                None => {
                    return Err(CliError::usage("keel exec resume needs --last or a session id"));
                }
            },
        };
        match words {
            [] => Ok(Self { target: Some(target), prompt: None }),
            [prompt] => Ok(Self { target: Some(target), prompt: Some(prompt.clone()) }),
            [_, extra, ..] => Err(CliError::usage(format!(
                "unexpected argument `{extra}`: quote the prompt after the session id"
            ))),
        }
    }
}

/// The log `target` names.
pub(super) fn find_log(env: &Environment, target: &ResumeTarget) -> Result<PathBuf, CliError> {
    let dir = sessions_dir(&env.keel_home);
    let found = match target {
        ResumeTarget::Last => newest_in_folder(&dir, &env.cwd),
        ResumeTarget::Id(prefix) => find_by_prefix(&dir, prefix),
    };
    found.context("cannot pick the session to resume")
}

/// `keel exec --fork ID [--at N]`: the fork's new log (its id is on the
/// `result` line).
pub(super) fn fork_log(
    env: &Environment,
    parent: &str,
    at: Option<u32>,
) -> Result<PathBuf, CliError> {
    let dir = sessions_dir(&env.keel_home);
    let parent = find_by_prefix(&dir, parent).context("cannot pick the session to fork")?;
    let forked = crate::runtime::fork(&dir, &parent, at).context("cannot fork the session")?;
    Ok(forked.log_path)
}

/// Provider and model come from the log unless given as flags.
pub(super) fn prefer_logged_model(log: &Path, overrides: &mut CliOverrides) {
    let Some((provider, model)) = crate::session::logged_model(log) else { return };
    if overrides.provider.is_none() {
        overrides.provider = Some(provider);
    }
    if overrides.model.is_none() {
        overrides.model = Some(model);
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn request(argv: &[&str]) -> Result<ExecRequest, CliError> {
        let cli = Cli::try_parse_from(argv).map_err(CliError::usage)?;
        let Some(Command::Exec(args)) = cli.command else { panic!("not exec") };
        ExecRequest::from_args(&args)
    }

    fn target(id: &str) -> Option<ResumeTarget> {
        Some(ResumeTarget::Id(id.into()))
    }

    #[test]
    fn a_prompt_starting_with_resume_is_a_prompt() {
        let r = request(&["keel", "exec", "resume the work"]).unwrap();
        assert_eq!(r, ExecRequest { target: None, prompt: Some("resume the work".into()) });
        let r = request(&["keel", "exec", "resume"]).unwrap();
        assert_eq!(r, ExecRequest { target: None, prompt: Some("resume".into()) });
    }

    #[test]
    fn flag_forms() {
        let r = request(&["keel", "exec", "--last"]).unwrap();
        assert_eq!(r, ExecRequest { target: Some(ResumeTarget::Last), prompt: None });
        let r = request(&["keel", "exec", "--resume", "01ab", "go on"]).unwrap();
        assert_eq!(r, ExecRequest { target: target("01ab"), prompt: Some("go on".into()) });
    }

    #[test]
    fn literal_forms() {
        let r = request(&["keel", "exec", "resume", "--last"]).unwrap();
        assert_eq!(r, ExecRequest { target: Some(ResumeTarget::Last), prompt: None });
        let r = request(&["keel", "exec", "resume", "--last", "go on"]).unwrap();
        assert_eq!(r.prompt.as_deref(), Some("go on"));
        let r = request(&["keel", "exec", "resume", "01ab"]).unwrap();
        assert_eq!(r, ExecRequest { target: target("01ab"), prompt: None });
        let r = request(&["keel", "exec", "resume", "01ab", "go on"]).unwrap();
        assert_eq!(r, ExecRequest { target: target("01ab"), prompt: Some("go on".into()) });
    }

    #[test]
    fn stray_words_are_refused() {
        assert!(request(&["keel", "exec", "fix", "tests"]).is_err());
        assert!(request(&["keel", "exec", "resume", "01ab", "a", "b"]).is_err());
    }
}
