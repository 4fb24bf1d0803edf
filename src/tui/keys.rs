//! Key and paste handling: the part of `update` that reads the keyboard.
//! The start screens (trust, picker) and overlays (approval, plan review)
//! take keys first, then the slash popup, then the editor. Slash commands
//! are in `slash.rs`.
//!
//! Keys: Enter sends (while a turn runs: queues for after it, `queue.rs`);
//! Tab while a turn runs steers it (delivered after the current tool
//! batch); a modified Enter (Shift, Alt, Ctrl), Ctrl+J or `\` then Enter
//! insert a newline (a paste keeps its line breaks: `paste.rs`); Up/Down walk
//! history (this folder's, kept across runs: `history.rs`), Ctrl+R searches
//! it (`history_search.rs`); Tab completes a slash command; Shift+Tab cycles
//! the approval mode; Esc or Ctrl+C stop a running turn (Esc Esc on an idle
//! prompt opens the rewind list, `rewind_view.rs`); Ctrl+C twice on an
//! idle empty prompt or Ctrl+D on an empty prompt quit; Ctrl+O expands the
//! latest cut tool output, pressed again every one, then collapses them;
//! PageUp/PageDown scroll. In an approval, ↑/↓ (j/k), PgUp/PgDn and
//! Space scroll what would run, and `y`/`a` show the next page until its
//! last row has been on screen (they answer only then; `n` and Esc
//! always work).

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::policy::ApprovalMode;

use super::app::{App, ApprovalReply, Command};

/// Rows one PageUp/PageDown scrolls.
const PAGE_ROWS: usize = 10;

pub fn on_paste(app: &mut App, text: &str) {
    if let Some(note) = app.approval.as_mut().and_then(|a| a.note.as_mut()) {
        note.push_str(text);
    } else if let Some(feedback) = app.plan.as_mut().and_then(|p| p.feedback.as_mut()) {
        feedback.push_str(text);
    } else if !super::attachments::attach_pasted(app, text) {
        app.editor.paste(text);
    }
}

pub fn on_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    if key.kind == KeyEventKind::Release {
        return Vec::new();
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let was_armed = std::mem::take(&mut app.quit_armed);
    let esc_armed = std::mem::take(&mut app.rewind.armed);
    app.hint = None;
    let start_screen =
        app.trust.is_some() || app.picker.as_ref().is_some_and(|picker| !picker.over_session);
    if start_screen && ctrl && matches!(key.code, KeyCode::Char('c' | 'd')) {
        return vec![Command::Quit];
    }
    if app.trust.is_some() {
        return super::picker::trust_key(app, key);
    }
    if app.picker.is_some() {
        if ctrl && key.code == KeyCode::Char('c') {
            app.picker = None;
            return Vec::new();
        }
        return super::picker::picker_key(app, key);
    }
    if std::mem::take(&mut app.yolo_confirm) {
        match key.code {
            KeyCode::Char('y' | 'Y') => return set_mode(app, ApprovalMode::Yolo),
            // Shift+Tab again skips yolo: the cycle goes on to ask.
            KeyCode::BackTab => return set_mode(app, ApprovalMode::Ask),
            _ => {}
        }
    }
    if app.approval.is_some() {
        return approval_key(app, key, ctrl);
    }
    if app.question.is_some() {
        return super::question::key(app, key);
    }
    if app.ps.is_some() {
        return super::processes_view::ps_key(app, key);
    }
    if app.rewind.view.is_some() {
        return super::rewind_view::rewind_key(app, key);
    }
    if app.limit.is_some() {
        return super::budget::limit_key(app, key);
    }
    if app.plan.is_some() {
        if ctrl && key.code == KeyCode::Char('c') {
            app.plan = None;
            return vec![Command::Interrupt];
        }
        return plan_key(app, key);
    }
    if app.search.is_some() {
        return super::history_search::key(app, key);
    }
    if app.memory.is_some() {
        return super::memory_note::key(app, key);
    }
    match (key.code, ctrl) {
        (KeyCode::Esc, _) if app.status.running => vec![Command::Interrupt],
        (KeyCode::Esc, _) if app.editor.completions(&app.files).is_empty() => {
            // Two quick presses may come as one Alt+Esc.
            let twice = esc_armed || key.modifiers.contains(KeyModifiers::ALT);
            super::rewind_view::on_idle_esc(app, twice)
        }
        (KeyCode::Char('c'), true) if app.status.running => vec![Command::Interrupt],
        (KeyCode::Char('c'), true) if !app.editor.is_empty() => {
            app.editor.clear();
            Vec::new()
        }
        (KeyCode::Char('c'), true) if was_armed => vec![Command::Quit],
        (KeyCode::Char('c'), true) => {
            app.quit_armed = true;
            app.hint = Some("press Ctrl+C again to quit".into());
            Vec::new()
        }
        (KeyCode::Char('d'), true) if app.editor.is_empty() => vec![Command::Quit],
        (KeyCode::BackTab, _) => match next_mode(app.status.mode) {
            // Yolo runs everything without asking: never one key away.
            ApprovalMode::Yolo => {
                app.yolo_confirm = true;
                app.hint = Some(
                    "yolo runs every command without asking: y switches to it, Shift+Tab skips \
                     to ask"
                        .into(),
                );
                Vec::new()
            }
            mode => set_mode(app, mode),
        },
        (KeyCode::Char('?'), false) if app.editor.is_empty() => {
            app.notice(super::transcript::Level::Info, super::slash::HELP);
            Vec::new()
        }
        _ => editor_key(app, key, ctrl),
    }
}

fn editor_key(app: &mut App, key: KeyEvent, ctrl: bool) -> Vec<Command> {
    let popup = app.editor.completions(&app.files).len();
    if popup == 0 {
        app.editor.popup_selected = 0;
    }
    // Any modified Enter (Shift, Alt, Ctrl, Super; CSI-u or modifyOtherKeys) is a newline.
    let newline = !key.modifiers.is_empty();
    match (key.code, ctrl) {
        (KeyCode::Enter, _) if newline => app.editor.insert("\n"),
        (KeyCode::Char('j'), true) => app.editor.insert("\n"),
        // `\` then Enter: a newline in place of the backslash (as a shell).
        (KeyCode::Enter, _) if app.editor.text()[..app.editor.cursor()].ends_with('\\') => {
            app.editor.backspace();
            app.editor.insert("\n");
        }
        (KeyCode::Enter, _) => {
            // Enter on an open popup picks the entry; a slash command runs.
            if popup > 0 && app.editor.complete(&app.files) && !app.editor.text().starts_with('/') {
                return Vec::new();
            }
            return submit(app);
        }
        (KeyCode::Tab, _) if popup > 0 => {
            app.editor.complete(&app.files);
        }
        (KeyCode::Tab, _) if app.status.running => {
            return super::queue::type_during_turn(app, crate::protocol::Delivery::Steer);
        }
        (KeyCode::Up, _) if popup > 0 => {
            app.editor.popup_selected = app.editor.popup_selected.saturating_sub(1);
        }
        (KeyCode::Down, _) if popup > 0 => {
            app.editor.popup_selected = (app.editor.popup_selected + 1).min(popup - 1);
        }
        (KeyCode::Up, _) => app.editor.up(),
        (KeyCode::Down, _) => app.editor.down(),
        (KeyCode::Left, _) => app.editor.left(),
        (KeyCode::Right, _) => app.editor.right(),
        (KeyCode::Home, _) | (KeyCode::Char('a'), true) => app.editor.home(),
        (KeyCode::End, _) | (KeyCode::Char('e'), true) => app.editor.end(),
        (KeyCode::Backspace, _) => app.editor.backspace(),
        (KeyCode::Delete, _) => app.editor.delete(),
        (KeyCode::Char('w'), true) => app.editor.delete_word(),
        (KeyCode::Char('r'), true) => return super::history_search::start(app),
        (KeyCode::Char('u'), true) => app.editor.clear(),
        (KeyCode::Char('o'), true) => toggle_output(app),
        (KeyCode::Char('v'), true) => {
            app.hint = Some("reading the clipboard's image…".into());
            return vec![Command::PasteClipboard];
        }
        (KeyCode::PageUp, _) => {
            let limit = app.transcript_rows.get().max(app.scroll);
            app.scroll = (app.scroll + PAGE_ROWS).min(limit.max(PAGE_ROWS));
        }
        (KeyCode::PageDown, _) => app.scroll = app.scroll.saturating_sub(PAGE_ROWS),
        (KeyCode::Char(c), false) => {
            let mut buf = [0u8; 4];
            app.editor.insert(c.encode_utf8(&mut buf));
        }
        _ => {}
    }
    request_files(app)
}

/// The first `@word` typed starts listing the workspace for completion
/// (nothing is listed before: a large tree costs nothing unless asked).
fn request_files(app: &mut App) -> Vec<Command> {
    if app.files_requested || !app.editor.completing_path() {
        return Vec::new();
    }
    app.files_requested = true;
    vec![Command::ListFiles]
}

pub(super) fn submit(app: &mut App) -> Vec<Command> {
    if app.editor.text().trim().is_empty() {
        return Vec::new();
    }
    if app.editor.text().starts_with('/') {
        let text = app.editor.submit();
        return super::slash::run(app, text.trim());
    }
    if super::memory_note::is_note(app.editor.text()) {
        let line = app.editor.submit();
        return super::memory_note::start(app, &line);
    }
    if super::user_shell::is_shell(app.editor.text()) && !app.status.running {
        let line = app.editor.submit();
        return super::user_shell::start(app, &line);
    }
    if app.status.running {
        return super::queue::type_during_turn(app, crate::protocol::Delivery::Queue);
    }
    let text = app.editor.submit();
    app.scroll = 0;
    start_running(app, "thinking");
    let images = app.attachments.take();
    if !images.is_empty() {
        let shown = format!("{text}\n{}", super::attachments::chips(&images));
        app.transcript.push(super::transcript::CellKind::User(shown));
        return vec![Command::SubmitImages { text, images }];
    }
    app.transcript.push(super::transcript::CellKind::User(text.clone()));
    vec![Command::Submit(text)]
}

/// The UI side of starting a turn (or another long operation).
pub(super) fn start_running(app: &mut App, activity: &str) {
    app.status.running = true;
    app.status.elapsed = std::time::Duration::ZERO;
    app.status.activity = activity.into();
}

fn approval_key(app: &mut App, key: KeyEvent, ctrl: bool) -> Vec<Command> {
    let Some(approval) = app.approval.as_mut() else { return Vec::new() };
    if let Some(note) = approval.note.as_mut() {
        match key.code {
            KeyCode::Enter => {
                let note = std::mem::take(note);
                app.approval = None;
                let note = (!note.trim().is_empty()).then_some(note);
                return vec![Command::Answer(ApprovalReply::Deny(note))];
            }
            KeyCode::Backspace => {
                note.pop();
            }
            KeyCode::Esc => approval.note = None,
            KeyCode::Char(c) if !ctrl => note.push(c),
            _ => {}
        }
        return Vec::new();
    }
    let page = approval.drawn.get().page.max(1);
    let last = approval.drawn.get().rows.saturating_sub(page);
    let key = super::approval_keys::as_letter(approval, key);
    let answers = matches!(key.code, KeyCode::Char('y' | 'a')) && !ctrl;
    match key.code {
        // An answer covers only what was on screen: until the body's last
        // row has been drawn, `y` and `a` show the next page instead.
        _ if answers && !approval.all_seen() => {
            approval.scroll = (approval.scroll + page).min(last);
            return Vec::new();
        }
        KeyCode::Down | KeyCode::Char('j') => {
            approval.scroll = (approval.scroll + 1).min(last);
            return Vec::new();
        }
        KeyCode::Up | KeyCode::Char('k') => {
            approval.scroll = approval.scroll.saturating_sub(1);
            return Vec::new();
        }
        KeyCode::PageDown | KeyCode::Char(' ') => {
            approval.scroll = (approval.scroll + page).min(last);
            return Vec::new();
        }
        KeyCode::PageUp => {
            approval.scroll = approval.scroll.saturating_sub(page);
            return Vec::new();
        }
        _ => {}
    }
    let reply = match (key.code, ctrl) {
        (KeyCode::Char('y'), false) => ApprovalReply::Once,
        (KeyCode::Char('a'), false) => match &approval.prefix {
            Some(prefix) => ApprovalReply::Always(prefix.clone()),
            None => return Vec::new(),
        },
        (KeyCode::Char('n'), false) => {
            approval.note = Some(String::new());
            return Vec::new();
        }
        (KeyCode::Esc, _) | (KeyCode::Char('c'), true) => {
            app.approval = None;
            return vec![Command::Interrupt];
        }
        _ => return Vec::new(),
    };
    app.approval = None;
    app.status.activity = "running".into();
    vec![Command::Answer(reply)]
}

fn plan_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(plan) = app.plan.as_mut() else { return Vec::new() };
    if let Some(feedback) = plan.feedback.as_mut() {
        match key.code {
            KeyCode::Enter => {
                let feedback = std::mem::take(feedback);
                app.plan = None;
                app.status.activity = "revising the plan".into();
                let feedback = (!feedback.trim().is_empty()).then_some(feedback);
                return vec![Command::Answer(ApprovalReply::Deny(feedback))];
            }
            KeyCode::Backspace => {
                feedback.pop();
            }
            KeyCode::Esc => plan.feedback = None,
            KeyCode::Char(c) => feedback.push(c),
            _ => {}
        }
        return Vec::new();
    }
    let mode = match key.code {
        KeyCode::Char('a') => ApprovalMode::Ask,
        KeyCode::Char('A') => ApprovalMode::Auto,
        KeyCode::Char('e') => {
            return vec![Command::EditPlan {
                path: plan.path.clone(),
                text: plan.markdown.clone(),
            }];
        }
        KeyCode::Char('r') => {
            plan.feedback = Some(String::new());
            return Vec::new();
        }
        KeyCode::Up => {
            plan.scroll = plan.scroll.saturating_sub(1);
            return Vec::new();
        }
        KeyCode::Down => {
            plan.scroll += 1;
            return Vec::new();
        }
        KeyCode::PageUp => {
            plan.scroll = plan.scroll.saturating_sub(PAGE_ROWS);
            return Vec::new();
        }
        KeyCode::PageDown => {
            plan.scroll += PAGE_ROWS;
            return Vec::new();
        }
        KeyCode::Esc => {
            app.plan = None;
            return vec![Command::Interrupt];
        }
        _ => return Vec::new(),
    };
    let note = plan.approval_note();
    app.plan = None;
    app.status.activity = "running".into();
    vec![Command::Answer(ApprovalReply::PlanApproved { mode, note })]
}

/// Ctrl+O: the latest cut tool output, then every one, then none.
fn toggle_output(app: &mut App) {
    if app.expanded {
        app.expanded = false;
        app.transcript.collapse_all();
    } else if !app.transcript.expand_latest() {
        app.expanded = true;
    }
}

/// Switches the approval mode and says so once, above the input (the
/// status line keeps showing it; the transcript is for the conversation).
pub(super) fn set_mode(app: &mut App, mode: ApprovalMode) -> Vec<Command> {
    app.status.mode = mode;
    let mut hint = format!("mode {}: {}", mode.as_str(), mode_meaning(mode));
    if app.status.running {
        hint.push_str(" (from the next turn)");
    }
    app.hint = Some(hint);
    vec![Command::SetMode(mode)]
}

/// One line on what a mode lets run.
pub(super) fn mode_meaning(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Ask => "reads run, everything else asks",
        ApprovalMode::Auto => "edits and sandboxed commands run without asking",
        ApprovalMode::Plan => "read-only until you approve a plan",
        ApprovalMode::Explore => "read-only",
        ApprovalMode::Yolo => "everything but hard-denied commands runs without asking",
    }
}

/// ask → auto → plan → yolo (after a confirmation) → ask; explore is
/// reached with /mode.
pub fn next_mode(mode: ApprovalMode) -> ApprovalMode {
    match mode {
        ApprovalMode::Ask => ApprovalMode::Auto,
        ApprovalMode::Auto => ApprovalMode::Plan,
        ApprovalMode::Plan | ApprovalMode::Explore => ApprovalMode::Yolo,
        ApprovalMode::Yolo => ApprovalMode::Ask,
    }
}
