//! `#text`: save a memory note (Claude Code's `#`). A one-line prompt
//! starting with `#` is not sent: a small picker asks where the note goes,
//! `p` the project's `.keel/memory/` (shared with everyone who clones the
//! repository) or `u` the user's `$KEEL_HOME/memory/` (every project), and
//! the driver writes it as a note `config::memory` reads: front matter with
//! `name`, `description` and `type`, then the text. Esc gives the line back.
//! A prompt of several lines starting with `#` (a pasted Markdown heading)
//! is sent as usual.
//!
//! Invariants: the picker and its keys are pure; [`save`] writes beneath
//! the folder it belongs to without following a symlink
//! (`support::beneath`: `.keel/memory` is in the repository), never
//! overwrites a note (a taken name gets `-2`, `-3`, …), and user notes are
//! 0600. Notes are indexed when a session starts, so a new note is read
//! from the next session on (said in the notice).

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::app::{App, Command};
use super::theme::Theme;

/// Where a note is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryScope {
    Project,
    User,
}

impl MemoryScope {
    fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
        }
    }
}

/// The open "save where?" picker, holding the note's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPick {
    pub text: String,
}

/// Whether the typed line is a note (`#text` on one line).
pub fn is_note(line: &str) -> bool {
    line.starts_with('#') && !line.contains('\n') && !line[1..].trim().is_empty()
}

/// Opens the picker for the typed `#text`.
pub fn start(app: &mut App, line: &str) -> Vec<Command> {
    let text = line[1..].trim().to_owned();
    app.memory = Some(MemoryPick { text });
    Vec::new()
}

/// A key while the picker is open.
pub fn key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(pick) = app.memory.take() else { return Vec::new() };
    let scope = match key.code {
        KeyCode::Char('p' | 'P') => MemoryScope::Project,
        KeyCode::Char('u' | 'U') => MemoryScope::User,
        KeyCode::Esc => {
            app.editor.set_text(&format!("#{}", pick.text));
            return Vec::new();
        }
        _ => {
            app.memory = Some(pick);
            return Vec::new();
        }
    };
    vec![Command::SaveMemory { scope, text: pick.text }]
}

/// Draws the picker at the bottom of `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, pick: &MemoryPick, theme: Theme) {
    let text = crate::display::escape_visibly(&pick.text).into_owned();
    let lines = vec![
        Line::from(vec![Span::styled("note: ", theme.dim()), Span::raw(text)]),
        Line::default(),
        Line::from(vec![
            Span::styled("[p] ", theme.key()),
            Span::raw("project: .keel/memory/ (in the repository, shared)"),
        ]),
        Line::from(vec![
            Span::styled("[u] ", theme.key()),
            Span::raw("user: ~/.keel/memory/ (yours, every project)"),
        ]),
        Line::styled("Esc puts the line back", theme.dim()),
    ];
    let height = 7.min(area.height);
    let width = area.width.saturating_sub(2);
    if height < 3 || width < 10 {
        return;
    }
    let rect = Rect { x: area.x + 1, y: area.bottom() - height, width, height };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(" Save to memory? ", theme.bold()));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), rect);
}

/// A file name from the note's first words: lowercase ASCII letters and
/// digits joined by `-`, at most 40 chars (`note` when none are left).
pub fn slug(text: &str) -> String {
    let mut slug = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        if slug.len() + word.len() + 1 > 40 {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() { "note".to_owned() } else { slug }
}

/// The note's file text.
pub fn note_text(name: &str, text: &str, scope: MemoryScope) -> String {
    let description: String = text.chars().take(200).collect();
    let quoted = serde_json::to_string(&description).unwrap_or_default();
    format!("---\nname: {name}\ndescription: {quoted}\ntype: {}\n---\n\n{text}\n", scope.as_str())
}

/// Writes the note: under `workspace_root/.keel/memory/` or
/// `keel_home/memory/`. Returns the file written.
pub fn save(
    workspace_root: &Path,
    keel_home: &Path,
    scope: MemoryScope,
    text: &str,
) -> Result<PathBuf, String> {
    let (root, folder, mode) = match scope {
        MemoryScope::Project => (workspace_root, Path::new(".keel/memory"), 0o644),
        MemoryScope::User => (keel_home, Path::new("memory"), 0o600),
    };
    let base = slug(text);
    let free =
        (1..100).map(|n| if n == 1 { base.clone() } else { format!("{base}-{n}") }).find(|name| {
            std::fs::symlink_metadata(root.join(folder).join(format!("{name}.md"))).is_err()
        });
    let Some(name) = free else {
        return Err(format!("too many notes named {base}"));
    };
    let path = folder.join(format!("{name}.md"));
    let bytes = note_text(&name, text, scope);
    crate::support::beneath::write_beneath(root, &path, bytes.as_bytes(), mode)
        .map_err(|error| format!("cannot save the memory note: {error}"))?;
    Ok(root.join(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tui::view_tests::render;
    use crate::tui::{Msg, update};

    fn press(app: &mut App, code: KeyCode) -> Vec<Command> {
        update(app, Msg::Key(KeyEvent::new(code, crossterm::event::KeyModifiers::NONE)))
    }

    #[test]
    fn a_hash_line_asks_where_and_saves_there() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.editor.insert("#always run cargo fmt before committing");
        assert!(press(&mut app, KeyCode::Enter).is_empty(), "not sent to the model");
        insta::assert_snapshot!("memory_note_picker", render(&app, 80, 14));
        let commands = press(&mut app, KeyCode::Char('p'));
        let text = "always run cargo fmt before committing".to_owned();
        assert_eq!(commands, [Command::SaveMemory { scope: MemoryScope::Project, text }]);
        assert!(app.memory.is_none());
    }

    #[test]
    fn esc_gives_the_line_back_and_a_heading_paste_is_a_prompt() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.editor.insert("#a note");
        press(&mut app, KeyCode::Enter);
        press(&mut app, KeyCode::Esc);
        assert_eq!(app.editor.text(), "#a note");
        assert!(!is_note("# Title\nbody"));
        assert!(!is_note("#"));
    }

    #[test]
    fn notes_are_written_where_memory_reads_them_and_never_overwritten() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let first = save(root.path(), home.path(), MemoryScope::Project, "Use tabs: no!").unwrap();
        let second = save(root.path(), home.path(), MemoryScope::Project, "use tabs no").unwrap();
        assert_eq!(first, root.path().join(".keel/memory/use-tabs-no.md"));
        assert_eq!(second, root.path().join(".keel/memory/use-tabs-no-2.md"));
        let user = save(root.path(), home.path(), MemoryScope::User, "I prefer short answers");
        assert!(user.unwrap().starts_with(home.path().join("memory")));
        let (notes, problems) = crate::config::discover_memory(home.path(), root.path());
        assert!(problems.is_empty(), "{problems:?}");
        let names: Vec<_> = notes.iter().map(|note| note.meta.name.as_str()).collect();
        assert_eq!(names, ["i-prefer-short-answers", "use-tabs-no", "use-tabs-no-2"]);
        assert_eq!(notes[1].meta.description, "Use tabs: no!");
    }

    #[test]
    fn a_symlinked_memory_folder_is_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".keel")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.path().join(".keel/memory")).unwrap();
        assert!(save(root.path(), elsewhere.path(), MemoryScope::Project, "x").is_err());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
