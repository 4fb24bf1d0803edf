//! Markdown to styled lines (pulldown-cmark events to ratatui `Line`s).
//!
//! Rendering is a pure function of the text, so a streaming message is
//! simply re-rendered as it grows: an unclosed code fence renders as a code
//! block up to the end, which is what the finished message will show too.
//! Wrapping is not done here (see `wrap.rs`); code lines are kept whole.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::theme::Theme;

/// Renders markdown `text` as lines.
pub fn render(text: &str, theme: Theme) -> Vec<Line<'static>> {
    let mut writer = Writer::new(theme);
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        writer.event(event);
    }
    writer.finish()
}

/// A list being written: `None` for bullets, `Some(n)` for the next number.
type ListKind = Option<u64>;

struct Writer {
    theme: Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    lists: Vec<ListKind>,
    quote_depth: usize,
    code_block: bool,
    /// A blank line goes before the next block (not before the first).
    pending_gap: bool,
}

impl Writer {
    fn new(theme: Theme) -> Self {
        Self {
            theme,
            lines: Vec::new(),
            current: Vec::new(),
            styles: Vec::new(),
            lists: Vec::new(),
            quote_depth: 0,
            code_block: false,
            pending_gap: false,
        }
    }

    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn prefix(&self) -> String {
        let mut prefix = "│ ".repeat(self.quote_depth);
        prefix.push_str(&"  ".repeat(self.lists.len().saturating_sub(1)));
        prefix
    }

    fn start_block(&mut self) {
        self.flush();
        if self.pending_gap && self.lists.is_empty() {
            self.lines.push(Line::default());
        }
        self.pending_gap = false;
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            let spans = std::mem::take(&mut self.current);
            self.lines.push(Line::from(spans));
        }
    }

    fn text(&mut self, text: &str) {
        if self.current.is_empty() {
            let prefix = self.prefix();
            if !prefix.is_empty() {
                self.current.push(Span::styled(prefix, self.theme.dim()));
            }
        }
        self.current.push(Span::styled(text.to_owned(), self.style()));
    }

    fn code_text(&mut self, text: &str) {
        for line in text.split_inclusive('\n') {
            let line = line.trim_end_matches('\n');
            let mut spans = vec![Span::styled(format!("{}  ", self.prefix()), self.theme.dim())];
            spans.push(Span::styled(line.to_owned(), self.theme.code()));
            self.lines.push(Line::from(spans));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) if self.code_block => self.code_text(&text),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                self.styles.push(self.theme.code());
                self.text(&code);
                self.styles.pop();
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.start_block();
                self.lines.push(Line::styled("───", self.theme.dim()));
                self.pending_gap = true;
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if self.current.is_empty() {
                    self.start_block();
                }
            }
            Tag::Heading { level, .. } => {
                self.start_block();
                self.styles.push(self.theme.heading());
                self.text(&format!("{} ", "#".repeat(heading_depth(level))));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote_depth += 1;
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                self.code_block = true;
                let label = match kind {
                    CodeBlockKind::Fenced(lang) if !lang.is_empty() => format!("```{lang}"),
                    CodeBlockKind::Fenced(_) | CodeBlockKind::Indented => "```".to_owned(),
                };
                self.lines
                    .push(Line::styled(format!("{}{label}", self.prefix()), self.theme.dim()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    Some(None) | None => "• ".to_owned(),
                };
                self.text("");
                self.current.push(Span::styled(marker, self.theme.dim()));
            }
            Tag::Emphasis => self.styles.push(Style::new().italic()),
            Tag::Strong => self.styles.push(self.theme.bold()),
            Tag::Strikethrough => self.styles.push(Style::new().crossed_out()),
            Tag::Link { .. } => self.styles.push(self.theme.link()),
            Tag::Image { .. }
            | Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Table(_)
            | Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
            | Tag::Superscript
            | Tag::Subscript
            | Tag::MetadataBlock(_) => self.table_or_other(&tag),
        }
    }

    /// Tables are shown as `a | b` rows; other rare blocks as plain text.
    fn table_or_other(&mut self, tag: &Tag<'_>) {
        match tag {
            Tag::Table(_) => self.start_block(),
            Tag::TableHead | Tag::TableRow => self.flush(),
            Tag::TableCell if !self.current.is_empty() => {
                self.current.push(Span::styled(" │ ", self.theme.dim()));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::Table => {
                self.flush();
                self.pending_gap = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.pending_gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.pending_gap = true;
            }
            TagEnd::CodeBlock => {
                self.code_block = false;
                self.lines.push(Line::styled(format!("{}```", self.prefix()), self.theme.dim()));
                self.pending_gap = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                self.pending_gap = true;
            }
            TagEnd::Item | TagEnd::TableHead | TagEnd::TableRow => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link => {
                self.styles.pop();
            }
            TagEnd::Image
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::TableCell
            | TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::MetadataBlock(_) => {}
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush();
        self.lines
    }
}

fn heading_depth(level: HeadingLevel) -> usize {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Vec<String> {
        render(text, Theme::new(false))
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn paragraphs_are_separated_by_a_blank_line() {
        assert_eq!(plain("one\ntwo\n\nthree"), ["one two", "", "three"]);
    }

    #[test]
    fn code_blocks_keep_their_lines() {
        let lines = plain("text\n\n```rust\nfn main() {}\n  x\n```\n");
        assert_eq!(lines, ["text", "", "```rust", "  fn main() {}", "    x", "```"]);
    }

    #[test]
    fn an_unclosed_fence_renders_as_code_while_streaming() {
        let lines = plain("```sh\nls -la\n");
        assert_eq!(lines[..2], ["```sh", "  ls -la"]);
    }

    #[test]
    fn lists_get_markers() {
        assert_eq!(plain("- a\n- b\n\n1. x\n2. y"), ["• a", "• b", "", "1. x", "2. y"]);
    }

    #[test]
    fn any_text_renders_without_panicking() {
        for text in [
            "",
            "#",
            "```",
            "> > >",
            "- [ ] t",
            "| a |\n|---|\n| b |",
            "**unclosed",
            "[l](",
            "\n\n\n",
        ] {
            let _ = render(text, Theme::new(true));
        }
    }
}
