//! Custom commands in a session: a prompt `/name args` naming one of the
//! saved prompts (`config::commands`) runs as a turn whose user message is
//! the command's body with the arguments substituted, on the command's
//! `model` if it names one the provider serves (`llm::ModelChoice`: a
//! Claude name on an OpenAI API runs on the session's model, with one
//! warning), with what its `allowed-tools` pre-approve. The same path
//! serves the TUI (which sends the typed line) and `keel exec "/name args"`.
//!
//! Precedence: keel's own slash commands (the TUI's `/help`, `/mode`, …)
//! first (a file cannot take their names), then custom commands, then
//! skills (`/<skill>`), so a user's `review.md` command runs instead of the
//! built-in `review` skill.
//!
//! `allowed-tools` as Claude Code reads it (`config::claude_permissions::
//! preapprovals`): what the turn may run without asking, like a session's
//! "always" answers (the loop's `turn_approvals`, joined to its allowlist
//! when a call is judged): `Bash(git add:*)` commands starting with those
//! words, `Bash(git status)` that command exactly, `mcp__docs` the server's
//! tools. Still judged: forbidden rules, read-only modes, the sandbox and
//! the egress check decide first, and a tool it does not list is judged as
//! usual, never refused. Bare `Bash`, a prefix that runs any program
//! (`python:*`) and built-ins other than reads (`Edit`, `Write`)
//! pre-approve nothing, said once in a warning. Only the user's own
//! command files and a trusted project's are loaded. The pre-approvals end
//! with the turn, however it ends; they are logged (`turn_scope`) so a turn
//! resumed after a crash keeps them. A model switch lasts the command's turn: it is
//! recorded with the model to go back to (`model_changed`, `after_turn`),
//! `step` goes back when the turn ends, and a turn resumed after a crash
//! runs on the command's model and then goes back too. A model without
//! prices is refused while a cost limit is set.
//!
//! A body's `` !`cmd` `` lines run before the turn, as the user's own
//! `!cmd` (`user_shell.rs`: policy's verdict, the session's sandbox and
//! secret mask), their output in the prompt; one policy forbids (or, in a
//! project's file, one it would ask about) is not run, said in the prompt
//! and in a warning. Each `@path` it names is read by
//! the user's own `read_file` (its confinement: a secret or outside path
//! is refused, and said) and appended as a `<file>` block.
//!
//! Flow: `Session::run_turn` checks `/name args` against the commands first (then skills, in
//! `run_prompt_turn`). `Input::PreapproveTurn` is fed right before the turn's `UserTurn`, so a
//! prompt refused first pre-approves nothing; the loop clears them when the turn completes, and the
//! driver switches the model back itself only when the turn never started. A child opened during
//! the turn does not get them (its own calls are asked about as its type and mode say). The TUI
//! sends the typed line as a prompt (its popup
//! lists the commands with their argument hints, `Session::command_index`), so exec and the TUI
//! share one expansion.

use tokio_util::sync::CancellationToken;

use crate::agent::TurnApprovals;
use crate::config::claude_permissions::Preapprovals;
use crate::config::commands::{expand, file_mentions, shell_lines};
use crate::llm::ModelChoice;
use crate::policy::Allowlist;
use crate::protocol::ResultKind;
use crate::protocol::tool_facts::names;

use super::{RuntimeError, RuntimeEvent, Session, TurnSummary, UserShell};

/// A custom command's turn, expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CommandTurn {
    name: String,
    prompt: String,
    /// From a project folder: policy's "ask" is not an approval.
    project: bool,
    model: Option<String>,
    preapprovals: Preapprovals,
}

impl Session {
    /// The custom command `prompt` invokes (`/name args`), expanded.
    /// Nothing is sent when the expansion would be too large.
    pub(super) fn custom_command(&self, prompt: &str) -> Result<Option<CommandTurn>, RuntimeError> {
        let Some(line) = prompt.trim_start().strip_prefix('/') else {
            return Ok(None);
        };
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let Some(command) = self.commands.find(name) else {
            return Ok(None);
        };
        let prompt = expand(&command.body, args).map_err(|source| {
            RuntimeError::CommandTooLarge { name: command.name.clone(), source }
        })?;
        Ok(Some(CommandTurn {
            name: command.name.clone(),
            prompt,
            project: command.project,
            model: command.model.clone(),
            preapprovals: command.preapprovals.clone(),
        }))
    }

    /// What to say about the `/name` that `prompt` starts with when nothing
    /// answers to it: no custom command, skill or MCP prompt (those have
    /// their own error). A prompt whose first word is not a command name
    /// (`/tmp/x is broken`, a path) is not one. `keel exec` refuses it
    /// rather than send the model the line it meant to expand.
    pub fn unknown_slash(&self, prompt: &str) -> Option<String> {
        let line = prompt.trim_start().strip_prefix('/')?;
        let name = line.split(char::is_whitespace).next().unwrap_or_default();
        let command_like =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.');
        if name.is_empty() || !name.chars().all(command_like) || name.starts_with("mcp__") {
            return None;
        }
        let known = self.commands.find(name).is_some()
            || self.tools.skills().iter().any(|skill| skill.meta.name == name);
        if known {
            return None;
        }
        let stem = name.rsplit(':').next().unwrap_or(name);
        let skipped = self
            .commands
            .skipped
            .iter()
            .find(|path| path.file_stem().is_some_and(|file| file.to_string_lossy() == stem));
        Some(match skipped {
            Some(path) => format!(
                "unknown command /{name}: {} is not loaded until the project is trusted \
                 (`keel trust`)",
                path.display()
            ),
            None => format!(
                "unknown command /{name}: no custom command or skill has that name (`/help` in \
                 the TUI lists them; put a word before the `/` to send the line as text)"
            ),
        })
    }

    /// Names and argument hints of the custom commands, with their
    /// descriptions (the TUI's slash popup).
    pub fn command_index(&self) -> Vec<(String, String, String)> {
        self.commands
            .commands
            .iter()
            .map(|c| {
                let hint = c.argument_hint.clone().unwrap_or_default();
                (c.name.clone(), hint, c.description.clone())
            })
            .collect()
    }

    /// Runs a custom command's turn with its model and tools.
    pub(super) async fn run_command_turn(
        &mut self,
        command: CommandTurn,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        let previous_model = self.model().to_owned();
        let model =
            command.model.as_deref().and_then(|model| self.served_model(&command.name, model));
        if let Some(model) = &model {
            // For its turn only: `step` goes back when the turn ends (a
            // resumed turn too).
            self.switch_model(model.clone(), true)?;
        }
        let (approvals, ignored) = turn_approvals(&command.name, &command.preapprovals);
        if let Some(message) = ignored {
            self.sink.emit(RuntimeEvent::Warning { message });
        }
        let asked = !command.project;
        let prompt = self.run_shell_lines(&command.name, command.prompt, asked, cancel).await;
        let prompt = self.attach_mentions(&command.name, prompt, asked, cancel).await;
        let summary = self.run_prompt_turn(prompt, approvals, cancel).await;
        // A turn that never started (refused by a UserPromptSubmit hook)
        // has no end to go back at.
        if model.is_some() {
            self.set_model(previous_model)?;
        }
        summary
    }

    /// `prompt` with each `` !`cmd` `` replaced by what the command printed,
    /// run as the user's `!cmd` (policy, sandbox, secret mask:
    /// `user_shell.rs`); one refused by policy is replaced by a note and
    /// said once. Every loaded command file is the user's own or a trusted
    /// project's (an untrusted project's are not loaded).
    async fn run_shell_lines(
        &mut self,
        name: &str,
        mut prompt: String,
        asked: bool,
        cancel: &CancellationToken,
    ) -> String {
        let lines = shell_lines(&prompt);
        for (range, line) in lines.into_iter().rev() {
            let replacement = match self.run_as_user(&line, asked, cancel).await {
                UserShell::Ran { output, .. } => output.trim_end().to_owned(),
                UserShell::Refused { reason } => {
                    let message = format!("the /{name} command's `!{line}` did not run: {reason}");
                    self.sink.emit(RuntimeEvent::Warning { message });
                    format!("(`{line}` was not run: {reason})")
                }
            };
            prompt.replace_range(range, &replacement);
        }
        prompt
    }

    /// `prompt` with each file its `@path` names appended, read by the
    /// user's own `read_file` call (`call_as_user`: policy, the tool's
    /// confinement, the secret mask). A path that does not exist is not a
    /// reference (`@user`); one refused is said in the prompt and a warning.
    async fn attach_mentions(
        &mut self,
        name: &str,
        mut prompt: String,
        asked: bool,
        cancel: &CancellationToken,
    ) -> String {
        for path in file_mentions(&prompt) {
            let arguments = serde_json::json!({ "path": path });
            let refused = match self.call_as_user(names::READ_FILE, arguments, asked, cancel).await
            {
                Ok((result, _)) if !result.is_error => {
                    let text = result.output.trim_end();
                    prompt.push_str(&format!("\n\n<file path=\"{path}\">\n{text}\n</file>"));
                    continue;
                }
                Ok((_, meta)) if meta.kind() == Some(ResultKind::ToolError("not_found".into())) => {
                    continue;
                }
                Ok((result, _)) => result.output,
                Err(reason) => reason,
            };
            let message = format!("the /{name} command's @{path} was not inlined: {refused}");
            self.sink.emit(RuntimeEvent::Warning { message });
            prompt.push_str(&format!("\n\n(@{path} was not inlined: {refused})"));
        }
        prompt
    }

    /// The model the command `name`'s `model:` names, if this provider
    /// serves it (`llm::ModelChoice`); otherwise one warning, and `None`:
    /// the session's model.
    fn served_model(&mut self, name: &str, requested: &str) -> Option<String> {
        match self.settings.provider.choose_model(requested) {
            ModelChoice::Model(model) => Some(model),
            ModelChoice::Session => None,
            ModelChoice::Foreign => {
                let message = format!(
                    "the /{name} command asks for model `{requested}`, which the {} provider \
                     does not serve: it runs on the session's model `{}`",
                    self.settings.provider.kind.cli_name(),
                    self.model()
                );
                self.sink.emit(RuntimeEvent::Warning { message });
                None
            }
        }
    }
}

/// What the command `name`'s `allowed-tools` pre-approve for its turn
/// (`None`: nothing), and the one warning naming the entries that
/// pre-approve nothing, if any.
fn turn_approvals(name: &str, found: &Preapprovals) -> (Option<TurnApprovals>, Option<String>) {
    let ignored = (!found.ignored.is_empty()).then(|| {
        format!(
            "the /{name} command's allowed-tools {} pre-approve nothing: keel asks about those \
             calls as the session's mode says",
            found.ignored.join(", ")
        )
    });
    if found.is_empty() {
        return (None, ignored);
    }
    let mut allowlist = Allowlist::default();
    allowlist.prefixes.extend(found.prefixes.iter().cloned());
    allowlist.commands.extend(found.commands.iter().cloned());
    allowlist.tools.extend(found.tools.iter().cloned());
    (Some(TurnApprovals { owner: format!("the /{name} command"), allowlist }), ignored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::claude_permissions::preapprovals;

    /// Issue 36: `allowed-tools` become the turn's pre-approvals; what
    /// gives nothing is said once, and a list of reads only is no line.
    #[test]
    fn a_commands_allowed_tools_become_its_turns_preapprovals() {
        let items = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let found = preapprovals(&items(&["Bash(git add:*)", "Read", "Bash", "Write"]));
        let (approvals, warning) = turn_approvals("commit", &found);
        let approvals = approvals.unwrap();
        assert_eq!(approvals.owner, "the /commit command");
        assert!(approvals.allowlist.allows(&items(&["git", "add", "a.txt"])));
        assert!(!approvals.allowlist.allows(&items(&["git", "push"])));
        let warning = warning.unwrap();
        assert!(warning.contains("`Bash`") && warning.contains("`Write`"), "{warning}");
        assert!(!warning.contains("Read"), "{warning}");
        assert_eq!(turn_approvals("look", &preapprovals(&items(&["Read", "Grep"]))), (None, None));
    }
}
