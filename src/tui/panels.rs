//! Plan review and the tasks panel: view components fed by plain data.
//! The workflow and tasks issues will produce this data; until then only
//! tests (fixtures) fill it.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

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
        .title(Span::styled(format!(" Plan: {} ", plan.title), theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let footer_rows = 2u16.min(inner.height);
    let body = Rect { height: inner.height - footer_rows, ..inner };
    let lines = wrap_lines(&markdown::render(&plan.markdown, theme), body.width);
    let visible: Vec<Line<'static>> =
        lines.into_iter().skip(plan.scroll).take(usize::from(body.height)).collect();
    frame.render_widget(Paragraph::new(visible), body);
    let footer = Rect { y: body.y + body.height, height: footer_rows, ..inner };
    let keys = match &plan.feedback {
        Some(text) => vec![
            Line::from(vec![Span::styled("feedback: ", theme.bold()), Span::raw(text.clone())]),
            Line::styled("Enter send · Esc back", theme.dim()),
        ],
        None => vec![Line::from(vec![
            Span::styled("[a]", theme.key()),
            Span::raw(" approve, then ask  "),
            Span::styled("[A]", theme.key()),
            Span::raw(" approve, then auto  "),
            Span::styled("[r]", theme.key()),
            Span::raw(" reject with feedback  "),
            Span::styled("[e]", theme.key()),
            Span::raw(" edit in $EDITOR"),
        ])],
    };
    frame.render_widget(Paragraph::new(wrap_lines(&keys, footer.width)), footer);
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
            Line::from(vec![Span::styled(mark, style), Span::styled(task.title.clone(), style)])
        })
        .collect();
    frame.render_widget(Paragraph::new(wrap_lines(&lines, inner.width)), inner);
}

/// Rows the tasks panel wants: one per task plus borders.
pub fn tasks_height(tasks: &[TaskItem]) -> u16 {
    u16::try_from(tasks.len()).unwrap_or(u16::MAX).saturating_add(2)
}
