//! The transcript: one cell per user message, assistant message, tool call
//! or notice, each rendered to wrapped lines once per width and cached.
//!
//! Invariants: a cell's cache is dropped whenever its content changes (all
//! mutation goes through methods here), so drawing a long transcript costs
//! only the visible rows plus a sum of cached heights.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use ratatui::text::{Line, Span};

use crate::display::for_terminal;

use super::diff::{self, DiffLine};
use super::markdown;
use super::theme::Theme;
use super::wrap::wrap_lines;
use crate::protocol::tool_facts::names;

/// The frames of a spinner, one per 100 ms (status line and running tool
/// cells turn together).
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The spinner's frame `elapsed` into a turn.
pub fn spinner(elapsed: Duration) -> &'static str {
    let frame = usize::try_from(elapsed.as_millis() / 100).unwrap_or(0) % SPINNER.len();
    SPINNER[frame]
}

/// Output lines a collapsed tool cell shows.
const COLLAPSED_OUTPUT_LINES: usize = 4;
/// Diff lines a collapsed tool cell shows.
const COLLAPSED_DIFF_LINES: usize = 40;

/// How a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    Running,
    Succeeded,
    Failed,
}

/// One tool call as shown.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub call_id: String,
    pub name: String,
    /// The command, path or arguments.
    pub summary: String,
    pub status: ToolStatus,
    /// Why a finished call failed, when it says more than ✗ (`exit 1`,
    /// `killed by signal 9`, `timed out after 5000 ms`).
    pub failure: Option<String>,
    /// What the user sees: a shell call's streams without the framing the
    /// model reads.
    pub output: String,
    /// Parsed when the output carries a unified diff.
    pub diff: Option<Vec<DiffLine>>,
    /// The spinner frame a running cell shows (`Transcript::spin`).
    pub spinner: &'static str,
    /// An `agent` call's subagent: what it is doing, nested under the call.
    pub subagent: Option<Box<SubagentView>>,
}

/// A subagent as its `agent` call's cell shows it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubagentView {
    /// What it is doing now: a tool name, or `thinking`.
    pub current: String,
    /// Model responses so far.
    pub steps: u32,
    pub tokens: u64,
    /// Its calls so far, oldest first (shown when the cell is expanded).
    pub calls: Vec<SubagentCall>,
}

/// One call of a subagent.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentCall {
    pub call_id: String,
    pub name: String,
    pub summary: String,
    pub status: ToolStatus,
}

/// Calls of a subagent a collapsed cell lists.
const COLLAPSED_SUBAGENT_CALLS: usize = 3;

impl ToolCell {
    /// The cell of a call that started (or was judged) and has no result.
    pub fn running(call: &crate::protocol::ToolCall) -> Self {
        Self {
            summary: crate::display::call_summary(call),
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            status: ToolStatus::Running,
            failure: None,
            output: String::new(),
            diff: None,
            spinner: SPINNER[0],
            subagent: (call.name == crate::tools::AGENT_TOOL).then(|| {
                Box::new(SubagentView { current: "starting".to_owned(), ..SubagentView::default() })
            }),
        }
    }

    /// Fills in the result: a non-zero exit, a signal or a timeout fail
    /// the cell although the shell tool returns them as results.
    pub fn finish(&mut self, output: &str, is_error: bool, meta: &crate::protocol::ToolMeta) {
        let outcome = crate::display::outcome(is_error, meta);
        self.status = if outcome.failed { ToolStatus::Failed } else { ToolStatus::Succeeded };
        self.failure = outcome.status;
        self.diff = diff::contains_diff(output).then(|| diff::parse(output));
        self.output = if self.name == names::SHELL {
            crate::display::parse_shell(output).combined()
        } else {
            output.to_owned()
        };
    }
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// What a cell shows.
#[derive(Debug, Clone, PartialEq)]
pub enum CellKind {
    User(String),
    Assistant { text: String, streaming: bool },
    Reasoning(String),
    Tool(ToolCell),
    Notice { level: Level, text: String },
}

type Cache = RefCell<Option<(u16, bool, Rc<[Line<'static>]>)>>;

/// A cell and its render cache (width, expanded, wrapped lines).
#[derive(Debug)]
pub struct Cell {
    kind: CellKind,
    cache: Cache,
    /// This cell's output is shown in full (Ctrl+O on the latest cut one).
    expanded: bool,
}

impl Cell {
    pub fn new(kind: CellKind) -> Self {
        Self { kind, cache: RefCell::new(None), expanded: false }
    }

    pub fn kind(&self) -> &CellKind {
        &self.kind
    }

    /// Wrapped lines for `width`, from the cache when it is current.
    pub fn lines(&self, width: u16, expanded_all: bool, theme: Theme) -> Rc<[Line<'static>]> {
        let expanded = expanded_all || self.expanded;
        if let Some((w, e, lines)) = self.cache.borrow().as_ref() {
            if *w == width && *e == expanded {
                return Rc::clone(lines);
            }
        }
        let lines: Rc<[Line<'static>]> =
            wrap_lines(&self.logical_lines(expanded, theme), width).into();
        *self.cache.borrow_mut() = Some((width, expanded, Rc::clone(&lines)));
        lines
    }

    /// Unwrapped lines, ending with a blank separator.
    fn logical_lines(&self, expanded: bool, theme: Theme) -> Vec<Line<'static>> {
        let mut lines = match &self.kind {
            CellKind::User(text) => for_terminal(text)
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    let mark = if i == 0 { "› " } else { "  " };
                    Line::from(vec![Span::styled(mark, theme.user()), Span::raw(l.to_owned())])
                })
                .collect(),
            CellKind::Assistant { text, .. } => markdown::render(&for_terminal(text), theme),
            CellKind::Reasoning(text) => for_terminal(text)
                .lines()
                .map(|l| Line::styled(l.to_owned(), theme.reasoning()))
                .collect(),
            CellKind::Tool(tool) => tool_lines(tool, expanded, theme),
            CellKind::Notice { level, text } => {
                let style = match level {
                    Level::Info => theme.secondary(),
                    Level::Warning => theme.warning(),
                    Level::Error => theme.error(),
                };
                for_terminal(text).lines().map(|l| Line::styled(l.to_owned(), style)).collect()
            }
        };
        lines.push(Line::default());
        lines
    }
}

impl ToolCell {
    /// Whether the collapsed cell leaves lines out.
    fn is_cut(&self) -> bool {
        if self.subagent.as_ref().is_some_and(|s| s.calls.len() > COLLAPSED_SUBAGENT_CALLS) {
            return true;
        }
        match &self.diff {
            Some(diff) => diff.len() > COLLAPSED_DIFF_LINES,
            None => self.output.lines().count() > COLLAPSED_OUTPUT_LINES,
        }
    }
}

fn tool_lines(tool: &ToolCell, expanded: bool, theme: Theme) -> Vec<Line<'static>> {
    let (mark, mark_style) = match tool.status {
        ToolStatus::Running => (tool.spinner, theme.dim()),
        ToolStatus::Succeeded => ("✓", theme.ok()),
        ToolStatus::Failed => ("✗", theme.error()),
    };
    let summary = for_terminal(&tool.summary).replace('\n', " ");
    let mut head = vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(tool.name.clone(), theme.tool()),
        Span::raw(" "),
        Span::raw(summary),
    ];
    if let Some(failure) = &tool.failure {
        head.push(Span::styled(format!("  {failure}"), theme.error()));
    }
    let mut lines = vec![Line::from(head)];
    if let Some(subagent) = &tool.subagent {
        subagent_lines(subagent, tool.status, expanded, theme, &mut lines);
    }
    if let Some(diff) = &tool.diff {
        let shown = if expanded { diff.len() } else { diff.len().min(COLLAPSED_DIFF_LINES) };
        lines.extend(diff::render(&diff[..shown], theme).into_iter().map(indent));
        push_more(&mut lines, diff.len() - shown, theme);
        return lines;
    }
    let output = for_terminal(&tool.output);
    let output: Vec<&str> = output.lines().collect();
    let shown = if expanded { output.len() } else { output.len().min(COLLAPSED_OUTPUT_LINES) };
    // A failed call's preview is its last lines: that is where errors are.
    let range = if tool.status == ToolStatus::Failed {
        output.len() - shown..output.len()
    } else {
        0..shown
    };
    let style = if tool.status == ToolStatus::Failed { theme.error() } else { theme.plain() };
    if tool.status == ToolStatus::Failed {
        push_more(&mut lines, output.len() - shown, theme);
    }
    for line in &output[range] {
        lines.push(Line::from(vec![
            Span::styled("  │ ", theme.dim()),
            Span::styled(expand_tabs(line), style),
        ]));
    }
    if tool.status != ToolStatus::Failed {
        push_more(&mut lines, output.len() - shown, theme);
    }
    lines
}

/// A subagent under its call: its calls (the last few, or all when
/// expanded), then, while it runs, what it does now with its steps and
/// tokens.
fn subagent_lines(
    subagent: &SubagentView,
    status: ToolStatus,
    expanded: bool,
    theme: Theme,
    lines: &mut Vec<Line<'static>>,
) {
    let shown = if expanded {
        subagent.calls.len()
    } else {
        subagent.calls.len().min(COLLAPSED_SUBAGENT_CALLS)
    };
    let hidden = subagent.calls.len() - shown;
    if hidden > 0 {
        lines.push(Line::styled(format!("  ┆ … {hidden} earlier call(s) (Ctrl+O)"), theme.dim()));
    }
    for call in &subagent.calls[hidden..] {
        let (mark, style) = match call.status {
            ToolStatus::Running => ("◌", theme.dim()),
            ToolStatus::Succeeded => ("✓", theme.ok()),
            ToolStatus::Failed => ("✗", theme.error()),
        };
        lines.push(Line::from(vec![
            Span::styled("  ┆ ", theme.dim()),
            Span::styled(format!("{mark} "), style),
            Span::styled(call.name.clone(), theme.tool()),
            Span::raw(format!(" {}", for_terminal(&call.summary).replace('\n', " "))),
        ]));
    }
    if status == ToolStatus::Running {
        lines.push(Line::styled(
            format!(
                "  ┆ ↳ {} · {} step(s) · {} tokens",
                subagent.current, subagent.steps, subagent.tokens
            ),
            theme.dim(),
        ));
    }
}

/// Tabs to spaces (stops every 8 columns): a terminal cell cannot hold a
/// tab, and `read_file`'s `     1\tcode` must not become `1code`.
fn expand_tabs(line: &str) -> String {
    if !line.contains('\t') {
        return line.to_owned();
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut column = 0;
    for c in line.chars() {
        if c == '\t' {
            let pad = 8 - column % 8;
            out.extend(std::iter::repeat_n(' ', pad));
            column += pad;
        } else {
            out.push(c);
            column += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        }
    }
    out
}

fn indent(line: Line<'static>) -> Line<'static> {
    let mut spans = vec![Span::raw("  ")];
    spans.extend(line.spans);
    Line::from(spans).style(line.style)
}

fn push_more(lines: &mut Vec<Line<'static>>, hidden: usize, theme: Theme) {
    if hidden > 0 {
        lines.push(Line::styled(format!("  … {hidden} more lines (Ctrl+O expands)"), theme.dim()));
    }
}

/// Cells the transcript keeps: past it the oldest go (the session log
/// keeps everything: `keel export`), so a session of thousands of turns
/// holds the memory of its last few hundred, not of all of them.
pub const MAX_CELLS: usize = 4_000;
/// Cells dropped at once past [`MAX_CELLS`], so the shift of the rest is
/// paid once per this many pushes.
const DROP_BATCH: usize = 400;

/// All cells, oldest first.
#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Cell>,
    /// Cells no longer kept (the first cell then says so).
    dropped: usize,
}

impl Transcript {
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    pub fn push(&mut self, kind: CellKind) {
        self.cells.push(Cell::new(kind));
        if self.cells.len() > MAX_CELLS + DROP_BATCH {
            self.drop_oldest();
        }
    }

    /// Cuts the transcript back to [`MAX_CELLS`], the first cell a notice
    /// of how many earlier ones are only in the session log.
    fn drop_oldest(&mut self) {
        let had_notice = self.dropped > 0;
        let cut = self.cells.len() - MAX_CELLS;
        // The old notice is one of the cells cut, not an entry of its own.
        self.dropped += cut - usize::from(had_notice);
        self.cells.drain(..cut);
        let text = format!(
            "… {} earlier entries are not kept on screen; the session log has them all              (`keel export`)",
            self.dropped
        );
        self.cells.insert(0, Cell::new(CellKind::Notice { level: Level::Info, text }));
    }

    /// Appends streamed text to the open assistant cell, opening one if the
    /// last cell is anything else.
    pub fn append_assistant(&mut self, delta: &str) {
        if let Some(cell) = self.cells.last_mut() {
            if let CellKind::Assistant { text, streaming: true } = &mut cell.kind {
                text.push_str(delta);
                cell.cache.take();
                return;
            }
        }
        self.push(CellKind::Assistant { text: delta.to_owned(), streaming: true });
    }

    /// Appends streamed reasoning to the last reasoning cell or a new one.
    pub fn append_reasoning(&mut self, delta: &str) {
        if let Some(cell) = self.cells.last_mut() {
            if let CellKind::Reasoning(text) = &mut cell.kind {
                text.push_str(delta);
                cell.cache.take();
                return;
            }
        }
        self.push(CellKind::Reasoning(delta.to_owned()));
    }

    /// Closes the streaming assistant cell with the authoritative text; adds
    /// a cell when nothing was streamed (providers that do not stream text).
    pub fn finish_assistant(&mut self, full: &str) {
        let open = self
            .cells
            .iter_mut()
            .rev()
            .find(|cell| matches!(cell.kind, CellKind::Assistant { streaming: true, .. }));
        match open {
            Some(cell) => {
                cell.kind = CellKind::Assistant { text: full.to_owned(), streaming: false };
                cell.cache.take();
            }
            None if !full.trim().is_empty() => {
                self.push(CellKind::Assistant { text: full.to_owned(), streaming: false });
            }
            None => {}
        }
    }

    /// Drops what a failed attempt streamed (its open assistant cell and
    /// the reasoning after the last finished cell): the retried request
    /// streams its answer anew, which would otherwise follow the cut one.
    pub fn discard_attempt(&mut self) {
        while let Some(cell) = self.cells.last() {
            match cell.kind {
                CellKind::Assistant { streaming: true, .. } | CellKind::Reasoning(_) => {
                    self.cells.pop();
                }
                _ => break,
            }
        }
    }

    /// Ends streaming without changing the text (interrupts, failures).
    pub fn close_streaming(&mut self) {
        for cell in self.cells.iter_mut().rev().take(8) {
            if let CellKind::Assistant { streaming, .. } = &mut cell.kind {
                *streaming = false;
            }
        }
    }

    /// Changes the tool cell for `call_id`, if there is one.
    pub fn update_tool(&mut self, call_id: &str, change: impl FnOnce(&mut ToolCell)) -> bool {
        for cell in self.cells.iter_mut().rev() {
            if let CellKind::Tool(tool) = &mut cell.kind {
                if tool.call_id == call_id {
                    change(tool);
                    cell.cache.take();
                    return true;
                }
            }
        }
        false
    }

    /// Turns the spinners of the running tool cells (the latest turn's:
    /// calls judged reads run together, each shows it is running) to the
    /// frame for `elapsed`; only their caches are dropped.
    pub fn spin(&mut self, elapsed: Duration) {
        let frame = spinner(elapsed);
        for cell in self.cells.iter_mut().rev() {
            match &mut cell.kind {
                CellKind::User(_) => break,
                CellKind::Tool(tool) if tool.status == ToolStatus::Running => {
                    if tool.spinner != frame {
                        tool.spinner = frame;
                        cell.cache.take();
                    }
                }
                CellKind::Tool(_)
                | CellKind::Assistant { .. }
                | CellKind::Reasoning(_)
                | CellKind::Notice { .. } => {}
            }
        }
    }

    /// The names of the latest turn's running tool calls, in order.
    pub fn running_tools(&self) -> Vec<&str> {
        let mut names = Vec::new();
        for cell in self.cells.iter().rev() {
            match &cell.kind {
                CellKind::User(_) => break,
                CellKind::Tool(tool) if tool.status == ToolStatus::Running => {
                    names.push(tool.name.as_str());
                }
                CellKind::Tool(_)
                | CellKind::Assistant { .. }
                | CellKind::Reasoning(_)
                | CellKind::Notice { .. } => {}
            }
        }
        names.reverse();
        names
    }

    /// Marks running tool cells as failed (the turn ended under them).
    pub fn settle_running(&mut self) {
        for cell in &mut self.cells {
            if let CellKind::Tool(tool) = &mut cell.kind {
                if tool.status == ToolStatus::Running {
                    tool.status = ToolStatus::Failed;
                    cell.cache.take();
                }
            }
        }
    }

    /// Expands the latest tool cell whose output is cut; false when that
    /// cell is expanded already or nothing is cut.
    pub fn expand_latest(&mut self) -> bool {
        let latest = self.cells.iter_mut().rev().find(|cell| match &cell.kind {
            CellKind::Tool(tool) => tool.is_cut(),
            CellKind::User(_)
            | CellKind::Assistant { .. }
            | CellKind::Reasoning(_)
            | CellKind::Notice { .. } => false,
        });
        match latest {
            Some(cell) if !cell.expanded => {
                cell.expanded = true;
                cell.cache.take();
                true
            }
            Some(_) | None => false,
        }
    }

    /// Collapses every cell expanded on its own.
    pub fn collapse_all(&mut self) {
        for cell in self.cells.iter_mut().filter(|cell| cell.expanded) {
            cell.expanded = false;
            cell.cache.take();
        }
    }

    /// Rows of the whole transcript at `width`.
    pub fn height(&self, width: u16, expanded: bool, theme: Theme) -> usize {
        self.cells.iter().map(|c| c.lines(width, expanded, theme).len()).sum()
    }

    /// The `rows` rows ending `from_bottom` rows above the last one.
    pub fn window(
        &self,
        width: u16,
        rows: usize,
        from_bottom: usize,
        expanded: bool,
        theme: Theme,
    ) -> Vec<Line<'static>> {
        let mut skip = from_bottom;
        let mut picked: Vec<Line<'static>> = Vec::with_capacity(rows);
        for cell in self.cells.iter().rev() {
            let lines = cell.lines(width, expanded, theme);
            for line in lines.iter().rev() {
                if skip > 0 {
                    skip -= 1;
                } else if picked.len() < rows {
                    picked.push(line.clone());
                } else {
                    picked.reverse();
                    return picked;
                }
            }
        }
        picked.reverse();
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    /// A session of many thousand turns keeps a bounded transcript, whose
    /// top says how many entries only the session log has (issue 42: the
    /// TUI grew 26 MiB over 1 037 busy turns, every cell kept).
    #[test]
    fn a_long_session_keeps_the_latest_cells_and_says_how_many_went() {
        let mut transcript = Transcript::default();
        let total = 3 * MAX_CELLS;
        for turn in 0..total {
            transcript.push(CellKind::User(format!("prompt {turn}")));
        }
        let kept = transcript.cells().len();
        assert!(kept <= MAX_CELLS + DROP_BATCH + 1, "{kept}");
        let first_user = transcript.cells().iter().find_map(|cell| match cell.kind() {
            CellKind::User(text) => text.strip_prefix("prompt ")?.parse::<usize>().ok(),
            _ => None,
        });
        let dropped = first_user.unwrap();
        match transcript.cells()[0].kind() {
            CellKind::Notice { text, .. } => {
                assert!(text.contains(&format!("… {dropped} earlier entries")), "{text}");
            }
            other => panic!("the first cell is {other:?}"),
        }
        // The latest prompt is still the last thing shown.
        let shown = transcript.window(80, 2, 0, false, Theme::default());
        assert!(texts(&shown).iter().any(|line| line.contains(&format!("prompt {}", total - 1))));
    }
}
