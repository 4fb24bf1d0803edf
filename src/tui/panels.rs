//! Plan review and the tasks panel: view components fed by plain data.
//! The plan comes from a `submit_plan` approval request (its
//! `plan_markdown`), the tasks from the runtime's `WorkflowChanged`
//! events (the model's `todo_write` list).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::protocol::ToolCall;
use crate::tasks::{Task, TaskStatus};

use crate::display::for_terminal;

use super::markdown;
use super::theme::Theme;
use super::wrap::wrap_lines;

/// A plan waiting for review.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanView {
    pub title: String,
    /// The plan as markdown.
    pub markdown: String,
    /// Rows scrolled down.
    pub scroll: usize,
    /// `Some` while the user types feedback for a rejection.
    pub feedback: Option<String>,
    /// Where the plan is saved (`.keel/plans/…`), if it could be.
    pub path: Option<String>,
    /// The user changed it in `$EDITOR`; approving tells the model so.
    pub edited: bool,
}

impl PlanView {
    /// The review of a `submit_plan` call (the reason holds the plan when
    /// the arguments cannot be read).
    pub fn for_call(call: &ToolCall, reason: &str, path: Option<String>) -> Self {
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let markdown = args
            .get("plan_markdown")
            .and_then(serde_json::Value::as_str)
            .map_or_else(|| reason.to_owned(), str::to_owned);
        let title = markdown
            .lines()
            .find_map(|line| line.strip_prefix('#').map(|t| t.trim_start_matches('#').trim()))
            .filter(|title| !title.is_empty())
            .unwrap_or("review")
            .to_owned();
        Self { title, markdown, scroll: 0, feedback: None, path, edited: false }
    }

    /// What approving tells the model: nothing, or where the edited plan is.
    pub fn approval_note(&self) -> Option<String> {
        if !self.edited {
            return None;
        }
        Some(match &self.path {
            Some(path) => format!(
                "The user edited the plan before approving it. Re-read the plan file at {path} \
                 and follow that version, not the one you submitted."
            ),
            None => format!(
                "The user edited the plan before approving it; follow this version, not the \
                 one you submitted:\n\n{}",
                self.markdown
            ),
        })
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Pending,
    Active,
    Done,
}

/// One entry of the tasks panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskItem {
    pub title: String,
    pub state: TaskState,
}

impl TaskItem {
    pub fn from_task(task: &Task) -> Self {
        let state = match task.status {
            TaskStatus::Pending => TaskState::Pending,
            TaskStatus::InProgress => TaskState::Active,
            TaskStatus::Completed => TaskState::Done,
        };
        Self { title: task.text.clone(), state }
    }
}

/// Draws the plan review overlay over `area`.
pub fn draw_plan(frame: &mut Frame<'_>, area: Rect, plan: &PlanView, theme: Theme) {
    let area = super::view::centered(area, 90, 80);
    if area.width < 4 || area.height < 3 {
        return;
    }
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(format!(" Plan: {} ", for_terminal(&plan.title)), theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let saved = match (&plan.path, plan.edited) {
        (Some(path), true) => format!("edited · {path}"),
        (Some(path), false) => path.clone(),
        (None, true) => "edited (not saved to a plan file)".to_owned(),
        (None, false) => String::new(),
    };
    let mut keys = match &plan.feedback {
        Some(text) => vec![
            Line::from(vec![
                Span::styled("feedback: ", theme.bold()),
                Span::raw(text.clone()),
                Span::styled("▏", theme.dim()),
            ]),
            Line::styled("Enter reject with this feedback · Esc back", theme.dim()),
        ],
        None => vec![
            Line::from(vec![
                Span::styled("[a]", theme.key()),
                Span::raw(" approve, then ask  "),
                Span::styled("[A]", theme.key()),
                Span::raw(" approve, then auto  "),
                Span::styled("[r]", theme.key()),
                Span::raw(" reject with feedback  "),
                Span::styled("[e]", theme.key()),
                Span::raw(" edit in $EDITOR"),
            ]),
            Line::styled("↑↓ scroll · Esc stops the turn", theme.dim()),
        ],
    };
    if !saved.is_empty() {
        keys.insert(0, Line::styled(saved, theme.dim()));
    }
    let footer_lines = wrap_lines(&keys, inner.width);
    // The keys stay visible; the plan body gets what is left.
    let footer_rows = u16::try_from(footer_lines.len()).unwrap_or(u16::MAX).min(inner.height);
    let body = Rect { height: inner.height - footer_rows, ..inner };
    let lines = wrap_lines(&markdown::render(&for_terminal(&plan.markdown), theme), body.width);
    let visible: Vec<Line<'static>> =
        lines.into_iter().skip(plan.scroll).take(usize::from(body.height)).collect();
    frame.render_widget(Paragraph::new(visible), body);
    let footer = Rect { y: body.y + body.height, height: footer_rows, ..inner };
    frame.render_widget(Paragraph::new(footer_lines), footer);
}

/// Draws the tasks panel into `area`.
pub fn draw_tasks(frame: &mut Frame<'_>, area: Rect, tasks: &[TaskItem], theme: Theme) {
    if area.width < 4 || area.height < 3 {
        return;
    }
    let done = tasks.iter().filter(|t| t.state == TaskState::Done).count();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(format!(" Tasks {done}/{} ", tasks.len()), theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines: Vec<Line<'static>> = tasks
        .iter()
        .map(|task| {
            let (mark, style) = match task.state {
                TaskState::Pending => ("☐ ", theme.plain()),
                TaskState::Active => ("◐ ", theme.bold()),
                TaskState::Done => ("☑ ", theme.dim()),
            };
            let title = for_terminal(&task.title).replace('\n', " ");
            Line::from(vec![Span::styled(mark, style), Span::styled(title, style)])
        })
        .collect();
    frame.render_widget(Paragraph::new(wrap_lines(&lines, inner.width)), inner);
}

/// Rows the tasks panel wants: one per task plus borders.
pub fn tasks_height(tasks: &[TaskItem]) -> u16 {
    u16::try_from(tasks.len()).unwrap_or(u16::MAX).saturating_add(2)
}
