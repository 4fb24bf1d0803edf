//! Word wrapping of styled lines to a width, done here rather than by
//! ratatui's `Paragraph` so the transcript knows every cell's height in
//! rows (needed to draw only the visible window of a long transcript).
//!
//! Invariants: every output line is at most `width` columns wide (a
//! character wider than the whole width gets a row of its own); text is
//! never dropped, except whitespace at a wrap point.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// Wraps each line to `width` columns, breaking at spaces where possible.
pub fn wrap_lines(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        wrap_one(line, width, &mut out);
    }
    out
}

/// Display width of a string in columns.
pub fn text_width(text: &str) -> usize {
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// Builds the rows of one line.
struct Rows<'o> {
    out: &'o mut Vec<Line<'static>>,
    row: Vec<Span<'static>>,
    used: usize,
    width: usize,
    line_style: Style,
    /// Spaces after the last word: written only if another word follows
    /// on the same row, so rows never end in a wrap point's spaces.
    pending: Option<(String, Style)>,
}

impl Rows<'_> {
    fn push(&mut self, text: &str, style: Style, used: usize) {
        match self.row.last_mut() {
            Some(last) if last.style == style => last.content.to_mut().push_str(text),
            _ => self.row.push(Span::styled(text.to_owned(), style)),
        }
        self.used += used;
    }

    fn finish_row(&mut self) {
        self.pending = None;
        let spans = std::mem::take(&mut self.row);
        self.out.push(Line::from(spans).style(self.line_style));
        self.used = 0;
    }

    /// Places one word (no spaces) or one run of spaces.
    fn place(&mut self, piece: &str, style: Style, is_space: bool) {
        let wide = text_width(piece);
        if is_space && self.row.is_empty() {
            // Indentation at the start of a line is kept (cut to the width).
            let kept: String = piece.chars().take(self.width).collect();
            let kept_width = text_width(&kept);
            self.push(&kept, style, kept_width);
            return;
        }
        if is_space {
            self.pending = Some((piece.to_owned(), style));
            return;
        }
        let gap = self.pending.as_ref().map_or(0, |(spaces, _)| text_width(spaces));
        if self.used + gap + wide <= self.width {
            if let Some((spaces, space_style)) = self.pending.take() {
                self.push(&spaces, space_style, gap);
            }
            self.push(piece, style, wide);
        } else if wide <= self.width {
            self.finish_row();
            self.push(piece, style, wide);
        } else {
            self.hard_split(piece, style);
        }
    }

    fn hard_split(&mut self, piece: &str, style: Style) {
        let mut chunk = String::new();
        for c in piece.chars() {
            let w = c.width().unwrap_or(0);
            if self.used + text_width(&chunk) + w > self.width
                && (self.used > 0 || !chunk.is_empty())
            {
                let wide = text_width(&chunk);
                self.push(&chunk, style, wide);
                chunk.clear();
                self.finish_row();
            }
            chunk.push(c);
        }
        if !chunk.is_empty() {
            let wide = text_width(&chunk);
            self.push(&chunk, style, wide);
        }
    }
}

fn wrap_one(line: &Line<'static>, width: usize, out: &mut Vec<Line<'static>>) {
    let mut rows =
        Rows { out, row: Vec::new(), used: 0, width, line_style: line.style, pending: None };
    for span in &line.spans {
        let style = span.style;
        let text: &str = &span.content;
        let mut start = 0;
        let mut in_space: Option<bool> = None;
        for (at, c) in text.char_indices() {
            let space = c == ' ';
            if in_space.is_some_and(|was| was != space) {
                rows.place(&text[start..at], style, !space);
                start = at;
            }
            in_space = Some(space);
        }
        if let Some(space) = in_space {
            rows.place(&text[start..], style, space);
        }
    }
    rows.finish_row();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn breaks_at_spaces() {
        let wrapped = wrap_lines(&[Line::from("the quick brown fox")], 10);
        assert_eq!(texts(&wrapped), ["the quick", "brown fox"]);
    }

    #[test]
    fn splits_words_longer_than_the_width() {
        let wrapped = wrap_lines(&[Line::from("abcdefghij")], 4);
        assert_eq!(texts(&wrapped), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn empty_lines_stay_one_row() {
        let wrapped = wrap_lines(&[Line::from("")], 4);
        assert_eq!(texts(&wrapped), [""]);
    }

    #[test]
    fn rows_never_exceed_the_width() {
        let text = "a b cc ddd eeee fffff 漢字漢字 gggggggggggg h";
        for width in 2..12u16 {
            for row in wrap_lines(&[Line::from(text)], width) {
                assert!(row.width() <= usize::from(width), "{width}: {row:?}");
            }
        }
    }

    #[test]
    fn no_text_is_lost_except_wrap_spaces() {
        let text = "one two three four five six";
        let joined: String = texts(&wrap_lines(&[Line::from(text)], 7)).join(" ");
        assert_eq!(joined, text);
    }
}
