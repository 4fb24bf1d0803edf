//! Colours and emphasis in one place, so `NO_COLOR` is honoured by
//! construction: with colour off every style keeps its modifiers (bold,
//! dim, reversed) and drops its foreground and background.

use ratatui::style::{Color, Modifier, Style};

/// The palette. Copy, cheap to pass around.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Theme {
    /// `color: false` for `NO_COLOR` (any non-empty value, per no-color.org).
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    /// Colour unless `no_color` (the value of `NO_COLOR`) is set and non-empty.
    pub fn from_no_color(no_color: Option<&str>) -> Self {
        Self::new(no_color.is_none_or(str::is_empty))
    }

    /// Colour unless `NO_COLOR` is set and non-empty or `TERM` is `dumb`.
    pub fn from_env(no_color: Option<&str>, term: Option<&str>) -> Self {
        Self::new(Self::from_no_color(no_color).color && term != Some("dumb"))
    }

    /// Whether colours are drawn (else the output is stripped of them too:
    /// `plain_output.rs`).
    pub fn colour(self) -> bool {
        self.color
    }

    fn fg(self, color: Color) -> Style {
        if self.color { Style::new().fg(color) } else { Style::new() }
    }

    pub fn plain(self) -> Style {
        Style::new()
    }

    /// Chrome: separators, borders of hints, "… more lines". Dark grey
    /// without the DIM attribute (the two together are unreadable on many
    /// dark themes); never used for content.
    pub fn dim(self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Secondary text people read (notices, key hints): the terminal's
    /// own foreground, readable on dark and light themes alike.
    pub fn secondary(self) -> Style {
        Style::new()
    }

    /// The model's reasoning: italic in the terminal's own foreground.
    pub fn reasoning(self) -> Style {
        Style::new().add_modifier(Modifier::ITALIC)
    }

    pub fn bold(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn user(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn heading(self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }

    pub fn code(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn link(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::UNDERLINED)
    }

    pub fn tool(self) -> Style {
        self.fg(Color::Blue).add_modifier(Modifier::BOLD)
    }

    pub fn ok(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn warning(self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn added(self) -> Style {
        self.fg(Color::Green)
    }

    pub fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    pub fn hunk(self) -> Style {
        self.fg(Color::Cyan)
    }

    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    pub fn border(self) -> Style {
        self.fg(Color::Gray)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_keeps_modifiers_and_drops_colours() {
        let theme = Theme::from_no_color(Some("1"));
        assert_eq!(theme.error(), Style::new().add_modifier(Modifier::BOLD));
        assert_eq!(theme.added(), Style::new());
    }

    #[test]
    fn empty_no_color_means_colour() {
        assert_eq!(Theme::from_no_color(Some("")), Theme::new(true));
        assert_eq!(Theme::from_no_color(None), Theme::new(true));
    }
}
