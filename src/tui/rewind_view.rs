//! Rewind and fork in the TUI: Esc Esc on an idle prompt (or `/rewind`)
//! lists the conversation's prompts; Enter takes the session back to
//! before the one chosen (Tab picks what: both, the conversation, the
//! code), `u` undoes the last rewind, `f` forks before it. `/rewind N`,
//! `/rewind undo` and `/fork [N]` do the same without the list.
//!
//! The view and its keys are pure, like `update`; [`carry_out`] is the
//! session task's side (`bridge.rs` hands it the [`RewindOp`]). After a
//! conversation rewind the transcript is redrawn from the session's
//! history and the prompt rewound to is put back in the input, to edit and
//! send again. A fork is a new session beside this one (`runtime::fork`):
//! this session goes on, and the notice says how to open the fork.
//!
//! Invariants: only while no turn runs (`slash.rs` refuses session
//! commands then, and Esc stops a running turn instead); drawing fits any
//! area (too small: nothing).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::agent::Prompt;
use crate::display::for_terminal;
use crate::protocol::{Item, RewindScope};
use crate::runtime::{RewindReport, RewindTarget, Session};

use super::app::{App, Command};
use super::theme::Theme;
use super::transcript::{Level, Transcript};

/// Characters of a prompt shown in a row.
const PROMPT_CHARS: usize = 90;

/// What the UI asks of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindOp {
    /// The prompts, for the list.
    List,
    Go {
        target: RewindTarget,
        scope: RewindScope,
    },
    /// A new session copied before prompt N (or whole).
    Fork(Option<u32>),
}

/// What the session answered.
#[derive(Debug, Clone, PartialEq)]
pub enum RewindReply {
    Prompts(Vec<Prompt>),
    /// Done: what it did, and the conversation from here on.
    Rewound(RewindReport, Vec<Item>),
    Forked {
        session_id: String,
        prompts: usize,
    },
    Failed(String),
}

/// The list of prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindView {
    pub prompts: Vec<Prompt>,
    pub selected: usize,
    pub scope: RewindScope,
}

/// The app's rewind state: the open list, and whether one Esc was pressed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RewindState {
    pub view: Option<RewindView>,
    pub armed: bool,
}

/// Esc on an idle prompt (`armed`: the key before was Esc too).
pub fn on_idle_esc(app: &mut App, armed: bool) -> Vec<Command> {
    if armed {
        return vec![Command::Rewind(RewindOp::List)];
    }
    app.rewind.armed = true;
    app.hint = Some("Esc again to rewind to an earlier prompt".into());
    Vec::new()
}

/// `/rewind [N|undo]`, `/fork [N]`.
pub fn slash(app: &mut App, name: &str, rest: &str) -> Vec<Command> {
    let number = rest.parse::<u32>().ok();
    let op = match (name, rest) {
        ("/fork", "") => RewindOp::Fork(None),
        ("/fork", _) => match number {
            Some(n) => RewindOp::Fork(Some(n)),
            None => return usage(app, "/fork [N]: a new session copied before prompt N"),
        },
        (_, "") => RewindOp::List,
        (_, "undo") => RewindOp::Go { target: RewindTarget::UndoLast, scope: RewindScope::Both },
        (_, _) => match number {
            Some(n) => RewindOp::Go { target: RewindTarget::Prompt(n), scope: RewindScope::Both },
            None => return usage(app, "/rewind [N|undo]: back to before prompt N, or undo"),
        },
    };
    vec![Command::Rewind(op)]
}

fn usage(app: &mut App, text: &str) -> Vec<Command> {
    app.notice(Level::Warning, text);
    Vec::new()
}

/// Keys while the list is open.
pub fn rewind_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(view) = app.rewind.view.as_mut() else { return Vec::new() };
    let last = view.prompts.len().saturating_sub(1);
    let number = |view: &RewindView| u32::try_from(view.selected + 1).unwrap_or(u32::MAX);
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => view.selected = view.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => view.selected = (view.selected + 1).min(last),
        KeyCode::Tab => {
            view.scope = match view.scope {
                RewindScope::Both => RewindScope::Conversation,
                RewindScope::Conversation => RewindScope::Code,
                RewindScope::Code => RewindScope::Both,
            };
        }
        KeyCode::Enter if !view.prompts.is_empty() => {
            let op = RewindOp::Go { target: RewindTarget::Prompt(number(view)), scope: view.scope };
            app.rewind.view = None;
            return vec![Command::Rewind(op)];
        }
        KeyCode::Char('u') => {
            app.rewind.view = None;
            let op = RewindOp::Go { target: RewindTarget::UndoLast, scope: RewindScope::Both };
            return vec![Command::Rewind(op)];
        }
        KeyCode::Char('f') if !view.prompts.is_empty() => {
            let op = RewindOp::Fork(Some(number(view)));
            app.rewind.view = None;
            return vec![Command::Rewind(op)];
        }
        KeyCode::Esc | KeyCode::Char('q') => app.rewind.view = None,
        _ => {}
    }
    Vec::new()
}

/// The session's answer.
pub fn on_reply(app: &mut App, reply: RewindReply) -> Vec<Command> {
    match reply {
        RewindReply::Prompts(prompts) if prompts.is_empty() => {
            app.notice(Level::Info, "no prompt to rewind to yet");
        }
        RewindReply::Prompts(prompts) => {
            let selected = prompts.len() - 1;
            app.rewind.view = Some(RewindView { prompts, selected, scope: RewindScope::Both });
        }
        // The session said what it did (`RuntimeEvent::Progress`); a
        // conversation rewound is drawn again, and that said once more.
        RewindReply::Rewound(report, items) if report.scope.includes_conversation() => {
            app.transcript = Transcript::default();
            super::runtime_events::show_items(app, &items);
            app.scroll = 0;
            let mut text = report.summary();
            if let Some(prompt) = &report.prompt {
                app.editor.clear();
                app.editor.insert(prompt);
                text.push_str("\nthe prompt is back in the input: edit it and send it again");
            }
            app.notice(Level::Info, text);
        }
        RewindReply::Rewound(..) => {}
        RewindReply::Forked { session_id, prompts } => app.notice(
            Level::Info,
            format!(
                "forked as {session_id} ({prompts} prompt(s) copied; the files stay as they \
                 are); this session goes on: open the fork with /resume or `keel resume \
                 {session_id}`"
            ),
        ),
        RewindReply::Failed(message) => app.notice(Level::Warning, message),
    }
    Vec::new()
}

/// The session task's side of `op`.
pub async fn carry_out(session: &mut Session, op: RewindOp) -> RewindReply {
    match op {
        RewindOp::List => match session.prompts() {
            Ok(prompts) => RewindReply::Prompts(prompts),
            Err(error) => RewindReply::Failed(format!("cannot list the prompts: {error}")),
        },
        RewindOp::Go { target, scope } => match session.rewind(target, scope).await {
            Ok(report) => RewindReply::Rewound(report, session.history().to_vec()),
            Err(error) => RewindReply::Failed(format!("cannot rewind: {error}")),
        },
        RewindOp::Fork(at) => {
            let log = session.log_path().to_owned();
            let dir = log.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
            match crate::runtime::fork(&dir, &log, at) {
                Ok(forked) => {
                    RewindReply::Forked { session_id: forked.session_id, prompts: forked.prompts }
                }
                Err(error) => RewindReply::Failed(format!("cannot fork: {error}")),
            }
        }
    }
}

/// Draws the list at the bottom of `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, view: &RewindView, theme: Theme) {
    let width = area.width.saturating_sub(2).max(1);
    let room = usize::from(width.saturating_sub(8).max(1));
    let mut lines: Vec<Line<'static>> = view
        .prompts
        .iter()
        .enumerate()
        .map(|(row, prompt)| {
            let selected = row == view.selected;
            let lead = format!("{} {:>2}  ", if selected { "›" } else { " " }, prompt.number);
            let text: String = for_terminal(&prompt.text)
                .replace('\n', " ")
                .chars()
                .take(room.min(PROMPT_CHARS))
                .collect();
            let style = if selected { theme.bold() } else { theme.plain() };
            Line::from(vec![Span::styled(lead, style), Span::styled(text, style)])
        })
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("Enter ", theme.key()),
        Span::raw(format!("rewind {} · ", view.scope.as_str())),
        Span::styled("Tab ", theme.key()),
        Span::raw("scope · "),
        Span::styled("f ", theme.key()),
        Span::raw("fork · "),
        Span::styled("u ", theme.key()),
        Span::raw("undo · "),
        Span::styled("Esc ", theme.key()),
        Span::raw("close"),
    ]));
    let wanted = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2);
    let height = wanted.min(area.height);
    if height < 3 || width < 8 {
        return;
    }
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let title = format!(" Rewind to before a prompt ({}) ", view.prompts.len());
    let block = Block::default().borders(Borders::ALL).title(Span::styled(title, theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    // Keep the keys and the selected row visible.
    let rows = usize::from(inner.height);
    let skip = (view.selected + 3).saturating_sub(rows).min(lines.len().saturating_sub(rows));
    let mut shown: Vec<Line<'static>> = lines[skip..].to_vec();
    if shown.len() > rows {
        let keys = shown.split_off(shown.len() - 2);
        shown.truncate(rows.saturating_sub(2));
        shown.extend(keys);
    }
    frame.render_widget(Paragraph::new(shown), inner);
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;

    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tui::app::{Msg, update};
    use crate::tui::keys::on_key;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn prompts(n: u32) -> Vec<Prompt> {
        (1..=n)
            .map(|number| Prompt {
                number,
                turn: number,
                seq: u64::from(number) * 10,
                text: format!("prompt number {number}"),
            })
            .collect()
    }

    fn listed(n: u32) -> App {
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        update(&mut app, Msg::Rewind(RewindReply::Prompts(prompts(n))));
        app
    }

    #[test]
    fn esc_esc_on_an_idle_prompt_asks_for_the_prompts() {
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        assert!(on_key(&mut app, key(KeyCode::Esc)).is_empty());
        assert_eq!(on_key(&mut app, key(KeyCode::Esc)), [Command::Rewind(RewindOp::List)]);
        // Another key between the two disarms it.
        assert!(on_key(&mut app, key(KeyCode::Esc)).is_empty());
        on_key(&mut app, key(KeyCode::Char('x')));
        assert!(on_key(&mut app, key(KeyCode::Esc)).is_empty());
        // Two quick presses the terminal sent as one Alt+Esc.
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        let alt_esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::ALT);
        assert_eq!(on_key(&mut app, alt_esc), [Command::Rewind(RewindOp::List)]);
    }

    #[test]
    fn the_list_shows_the_prompts_and_rewinds_to_the_one_chosen() {
        let mut app = listed(3);
        insta::assert_snapshot!("rewind_list", super::super::view_tests::render(&app, 70, 12));
        on_key(&mut app, key(KeyCode::Up));
        on_key(&mut app, key(KeyCode::Tab));
        let commands = on_key(&mut app, key(KeyCode::Enter));
        let go = RewindOp::Go { target: RewindTarget::Prompt(2), scope: RewindScope::Conversation };
        assert_eq!(commands, [Command::Rewind(go)]);
        assert!(app.rewind.view.is_none());
    }

    #[test]
    fn a_rewind_redraws_the_conversation_and_gives_the_prompt_back() {
        let mut app = listed(2);
        app.rewind.view = None;
        let report = RewindReport {
            to_prompt: 2,
            scope: RewindScope::Both,
            prompt: Some("prompt number 2".into()),
            files: vec!["made.txt".into()],
            kept: Vec::new(),
            undid: false,
        };
        let items = vec![
            Item::User { text: "prompt number 1".into(), images: Vec::new() },
            Item::Assistant { text: "done".into() },
        ];
        update(&mut app, Msg::Rewind(RewindReply::Rewound(report, items)));
        assert_eq!(app.editor.text(), "prompt number 2");
        let screen = super::super::view_tests::render(&app, 70, 16);
        assert!(screen.contains("prompt number 1") && screen.contains("restored 1"), "{screen}");
    }

    #[test]
    fn slash_forms() {
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        let go = |target| Command::Rewind(RewindOp::Go { target, scope: RewindScope::Both });
        assert_eq!(slash(&mut app, "/rewind", ""), [Command::Rewind(RewindOp::List)]);
        assert_eq!(slash(&mut app, "/rewind", "2"), [go(RewindTarget::Prompt(2))]);
        assert_eq!(slash(&mut app, "/rewind", "undo"), [go(RewindTarget::UndoLast)]);
        assert_eq!(slash(&mut app, "/fork", ""), [Command::Rewind(RewindOp::Fork(None))]);
        assert_eq!(slash(&mut app, "/fork", "3"), [Command::Rewind(RewindOp::Fork(Some(3)))]);
        assert!(slash(&mut app, "/rewind", "soon").is_empty());
    }

    #[test]
    fn tiny_areas_do_not_panic() {
        let app = listed(30);
        for (width, height) in [(1, 1), (5, 3), (12, 4), (20, 6)] {
            super::super::view_tests::render(&app, width, height);
        }
    }
}
