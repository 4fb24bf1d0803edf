//! The session's task list (`todo_write`): items with an id, text and
//! status, at most one in progress, and the summary the context carries.
//!
//! Invariants: pure; a list that breaks a rule is rejected whole with a
//! reason the model can act on, never partly applied; every accepted task
//! has an id (its position when the model gave none).

use serde::{Deserialize, Serialize};

// Where one task stands. Not a doc comment: schemars would send it as the
// `status` field's description on every request, and the values say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Task {
    /// Its position (`1`, `2`…) unless the model gave an id of its own
    /// ([`number`] fills it in). Not in the schema: like Codex's and Claude
    /// Code's task tools, the model is not asked for one, and each token of
    /// the schema is billed on every request.
    #[serde(default)]
    #[schemars(skip)]
    pub id: String,
    /// The task, briefly.
    // Claude Code's TodoWrite calls it `content`: a model trained on it is
    // understood (its `activeForm` is ignored like any unknown field).
    #[serde(alias = "content")]
    pub text: String,
    pub status: TaskStatus,
}

/// Why a task list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error("at most one task may be in progress; {count} are: {ids}")]
    SeveralInProgress { count: usize, ids: String },
    #[error("task ids must be unique; `{id}` appears more than once")]
    DuplicateId { id: String },
    #[error("task `{id}` has no text")]
    EmptyText { id: String },
}

/// Gives each task without an id its 1-based position (or the next
/// number no task of the list uses), so the log, `--json` and the
/// summaries name every task.
pub fn number(tasks: &mut [Task]) {
    let mut taken: std::collections::BTreeSet<String> =
        tasks.iter().map(|task| task.id.clone()).filter(|id| !id.trim().is_empty()).collect();
    for (index, task) in tasks.iter_mut().enumerate() {
        if !task.id.trim().is_empty() {
            continue;
        }
        let id =
            (index + 1..).map(|n| n.to_string()).find(|id| !taken.contains(id)).unwrap_or_default();
        taken.insert(id.clone());
        task.id = id;
    }
}

/// Checks a complete replacement list.
pub fn validate(tasks: &[Task]) -> Result<(), TaskError> {
    let mut seen = std::collections::BTreeSet::new();
    for task in tasks {
        if !seen.insert(task.id.as_str()) {
            return Err(TaskError::DuplicateId { id: task.id.clone() });
        }
        if task.text.trim().is_empty() {
            return Err(TaskError::EmptyText { id: task.id.clone() });
        }
    }
    let running: Vec<&str> = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::InProgress)
        .map(|t| t.id.as_str())
        .collect();
    if running.len() > 1 {
        return Err(TaskError::SeveralInProgress { count: running.len(), ids: running.join(", ") });
    }
    Ok(())
}

/// One line per task for the context, e.g. `[x] 1 write the parser`.
pub fn summary(tasks: &[Task]) -> String {
    tasks
        .iter()
        .map(|task| {
            let mark = match task.status {
                TaskStatus::Pending => "[ ]",
                TaskStatus::InProgress => "[>]",
                TaskStatus::Completed => "[x]",
            };
            format!("{mark} {} {}\n", task.id, task.text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: TaskStatus) -> Task {
        Task { id: id.into(), text: format!("task {id}"), status }
    }

    #[test]
    fn one_task_in_progress_at_most() {
        let ok = [task("1", TaskStatus::Completed), task("2", TaskStatus::InProgress)];
        validate(&ok).unwrap();
        let bad = [task("1", TaskStatus::InProgress), task("2", TaskStatus::InProgress)];
        assert!(matches!(validate(&bad), Err(TaskError::SeveralInProgress { count: 2, .. })));
    }

    #[test]
    fn ids_are_unique_and_text_present() {
        assert!(matches!(
            validate(&[task("1", TaskStatus::Pending), task("1", TaskStatus::Pending)]),
            Err(TaskError::DuplicateId { .. })
        ));
        let empty = Task { id: "1".into(), text: " ".into(), status: TaskStatus::Pending };
        assert!(matches!(validate(&[empty]), Err(TaskError::EmptyText { .. })));
    }

    #[test]
    fn tasks_without_ids_are_numbered_by_position() {
        let mut list: Vec<Task> = serde_json::from_value(serde_json::json!([
            {"text": "parse", "status": "completed"},
            {"id": "own", "text": "check", "status": "in_progress"},
            {"text": "ship", "status": "pending"},
        ]))
        .unwrap();
        number(&mut list);
        let ids: Vec<&str> = list.iter().map(|task| task.id.as_str()).collect();
        assert_eq!(ids, ["1", "own", "3"]);
        validate(&list).unwrap();
        // A number the model used for another task is not given twice.
        let mut list = vec![task("2", TaskStatus::Pending), task("", TaskStatus::Pending)];
        number(&mut list);
        assert_eq!(list[1].id, "3");
        validate(&list).unwrap();
    }

    #[test]
    fn claude_codes_field_names_are_understood() {
        let task: Task = serde_json::from_value(serde_json::json!(
            {"content": "ship", "status": "pending", "activeForm": "Shipping"}
        ))
        .unwrap();
        assert_eq!((task.text.as_str(), task.status), ("ship", TaskStatus::Pending));
    }

    #[test]
    fn summary_marks_each_status() {
        let text = summary(&[
            task("1", TaskStatus::Completed),
            task("2", TaskStatus::InProgress),
            task("3", TaskStatus::Pending),
        ]);
        assert_eq!(text, "[x] 1 task 1\n[>] 2 task 2\n[ ] 3 task 3\n");
    }
}
