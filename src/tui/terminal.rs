//! Terminal setup and teardown: raw mode, the alternate screen, bracketed
//! paste and (where the terminal supports it) key disambiguation so
//! Shift+Enter is seen (terminals that send xterm's modifyOtherKeys form
//! instead are read by the vendored crossterm's patch, `vendor/crossterm/`).
//!
//! Invariant: once [`TerminalGuard::enter`] succeeds the terminal is
//! restored on every exit path: normal return, `?` errors (the guard's
//! `Drop`) and panics (a hook that restores before the message prints).

use std::io::{Stdout, Write};
use std::sync::Once;

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::TuiError;
use super::plain_output::PlainOutput;

pub type Term = Terminal<CrosstermBackend<PlainOutput<Stdout>>>;

/// Restores the terminal when dropped.
pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    /// Sets the terminal up; `plain`: no colour escapes (`plain_output.rs`).
    pub fn enter(plain: bool) -> Result<Self, TuiError> {
        install_panic_hook();
        enable_raw_mode().map_err(TuiError::Terminal)?;
        let mut stdout = std::io::stdout();
        let setup = execute!(stdout, EnterAlternateScreen, EnableBracketedPaste);
        if let Err(error) = setup {
            restore();
            return Err(TuiError::Terminal(error));
        }
        if supports_keyboard_enhancement().unwrap_or(false) {
            let flags = KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
            let _ = execute!(stdout, PushKeyboardEnhancementFlags(flags));
        }
        match Terminal::new(CrosstermBackend::new(PlainOutput::new(stdout, plain))) {
            Ok(terminal) => Ok(Self { terminal }),
            Err(error) => {
                restore();
                Err(TuiError::Terminal(error))
            }
        }
    }
}

impl TerminalGuard {
    /// Hands the terminal to a child (the user's `$EDITOR`): the screen is
    /// restored as on exit; [`TerminalGuard::resume`] takes it back.
    pub fn suspend(&mut self) {
        restore();
    }

    /// Takes the terminal back after [`TerminalGuard::suspend`] and forces
    /// a full redraw.
    pub fn resume(&mut self) -> Result<(), TuiError> {
        enable_raw_mode().map_err(TuiError::Terminal)?;
        let mut stdout = std::io::stdout();
        execute!(stdout, EnterAlternateScreen, EnableBracketedPaste).map_err(TuiError::Terminal)?;
        if supports_keyboard_enhancement().unwrap_or(false) {
            let flags = KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES;
            let _ = execute!(stdout, PushKeyboardEnhancementFlags(flags));
        }
        self.terminal.clear().map_err(TuiError::Draw)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Undoes everything `enter` did; harmless when repeated.
pub fn restore() {
    let mut stdout = std::io::stdout();
    let _ = execute!(
        stdout,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // A tool's or hook's panic is caught and reported in the
            // transcript; the screen stays.
            if !crate::support::panic_guard::is_guarded() {
                restore();
            }
            previous(info);
        }));
    });
}
