//! The prompt editor: a multi-line buffer with a cursor, history, and the
//! slash-command completions for what is typed.
//!
//! Invariant: `cursor` is always a char boundary of `text` (every edit
//! moves it by whole chars), so slicing at it never panics.

/// Slash commands with a one-line description, in popup order.
pub const SLASH_COMMANDS: [(&str, &str); 20] = [
    ("/help", "keys and commands"),
    ("/mode", "set or cycle the approval mode (ask, auto, plan, explore, yolo)"),
    ("/plan", "plan mode: read-only until you approve a plan"),
    ("/compact", "compact the conversation to free context [focus]"),
    ("/tasks", "show or hide the tasks panel"),
    ("/diff", "git diff of the workspace"),
    ("/undo", "restore the files of the last turn that changed them"),
    ("/rewind", "back to before an earlier prompt (or Esc Esc)"),
    ("/fork", "a new session copied from this one: /fork [N]"),
    ("/resume", "switch to another session of this folder"),
    ("/skills", "list skills"),
    ("/model", "show the model, or switch it: /model NAME"),
    ("/mcp", "MCP servers, their status and tools"),
    ("/ps", "background processes; stop one"),
    ("/clear", "start a fresh session (this one stays resumable)"),
    ("/new", "start a fresh session (this one stays resumable)"),
    ("/cost", "what this session spent, and its limits"),
    ("/status", "model, mode, sandbox, network, session id"),
    ("/init", "write or update AGENTS.md from a look at the repo [words]"),
    ("/quit", "leave keel"),
];

/// The editor state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Editor {
    text: String,
    cursor: usize,
    history: Vec<String>,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
    /// Selected row of the slash popup.
    pub popup_selected: usize,
    /// Skills (name, description): each is a `/name` command too.
    pub skills: Vec<(String, String)>,
    /// MCP prompts (`/mcp__server__prompt`, description) of the servers
    /// that are ready.
    pub mcp_prompts: Vec<(String, String)>,
    /// Custom commands (name, argument hint, description), listed before
    /// the skills (a command replaces a skill of the same name).
    pub commands: Vec<(String, String, String)>,
    /// Long pastes shown as chips: (chip, pasted text), see `paste.rs`.
    pastes: Vec<(String, String)>,
}

impl Editor {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn insert(&mut self, text: &str) {
        // Terminals send pasted newlines as \r.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
        self.popup_selected = 0;
    }

    /// Inserts pasted text: a long paste as a chip, sent whole.
    pub fn paste(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let taken: Vec<String> = self.pastes.iter().map(|(label, _)| label.clone()).collect();
        match super::paste::chip(&text, &taken) {
            Some(label) => {
                self.insert(&label);
                self.pastes.push((label, text));
            }
            None => self.insert(&text),
        }
    }

    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
        self.popup_selected = 0;
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
    }

    pub fn end(&mut self) {
        self.cursor += self.text[self.cursor..].find('\n').unwrap_or(self.text.len() - self.cursor);
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |at| at + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
        self.popup_selected = 0;
        self.pastes.clear();
    }

    /// Takes the text for sending (long pastes put back in place of their
    /// chips) and remembers it in history.
    pub fn submit(&mut self) -> String {
        let typed = std::mem::take(&mut self.text);
        let text = super::paste::expand(&typed, &self.pastes);
        self.pastes.clear();
        self.cursor = 0;
        self.browsing = None;
        self.remember(&text);
        text
    }

    /// Adds `text` to the end of history (not twice in a row).
    pub fn remember(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
    }

    /// The prompts of earlier runs in this folder, oldest first, before
    /// anything typed in this one.
    pub fn load_history(&mut self, earlier: Vec<String>) {
        let typed = std::mem::replace(&mut self.history, earlier);
        for text in typed {
            self.remember(&text);
        }
    }

    /// History, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Replaces the text (a history search's choice), cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.clear();
        self.insert(text);
    }

    /// (line, column in chars) of the cursor.
    pub fn cursor_line_col(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        (line, col)
    }

    /// Up: moves within a multi-line buffer, else steps back in history.
    pub fn up(&mut self) {
        let (line, col) = self.cursor_line_col();
        if line > 0 {
            self.move_to_line(line - 1, col);
            return;
        }
        let index = match &self.browsing {
            Some((0, _)) => return,
            Some((index, _)) => index - 1,
            None if self.history.is_empty() => return,
            None => {
                self.browsing = Some((self.history.len(), self.text.clone()));
                self.history.len() - 1
            }
        };
        self.show_history(index);
    }

    /// Down: moves within a multi-line buffer, else forward in history.
    pub fn down(&mut self) {
        let (line, col) = self.cursor_line_col();
        if line + 1 < self.text.lines().count() {
            self.move_to_line(line + 1, col);
            return;
        }
        match self.browsing.take() {
            Some((index, draft)) if index + 1 >= self.history.len() => {
                self.text = draft;
                self.cursor = self.text.len();
            }
            Some((index, draft)) => {
                self.browsing = Some((index, draft));
                self.show_history(index + 1);
            }
            None => {}
        }
    }

    fn show_history(&mut self, index: usize) {
        if let (Some(entry), Some((at, _))) = (self.history.get(index), self.browsing.as_mut()) {
            *at = index;
            self.text = entry.clone();
            self.cursor = self.text.len();
        }
    }

    fn move_to_line(&mut self, target: usize, col: usize) {
        let mut offset = 0;
        for (n, line) in self.text.split('\n').enumerate() {
            if n == target {
                let within: usize = line.chars().take(col).map(char::len_utf8).sum();
                self.cursor = offset + within;
                return;
            }
            offset += line.len() + 1;
        }
    }

    /// The `@word` being typed at the cursor, without the `@`.
    fn at_word(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before.rfind([' ', '\n']).map_or(0, |at| at + 1);
        let word = &before[start..];
        word.strip_prefix('@').map(|rest| (start, rest))
    }

    /// Whether an `@word` (a file to complete) is at the cursor.
    pub fn completing_path(&self) -> bool {
        self.at_word().is_some()
    }

    /// Completions for what is typed: slash commands for a lone `/word`,
    /// files for an `@word` at the cursor. (label, description) pairs.
    pub fn completions(&self, files: &[String]) -> Vec<(String, String)> {
        if let Some((_, query)) = self.at_word() {
            return super::files::rank(query, files)
                .into_iter()
                .map(|file| (format!("@{file}"), String::new()))
                .collect();
        }
        if !self.text.starts_with('/') || self.text.contains([' ', '\n']) {
            return Vec::new();
        }
        let commands = self.commands.iter().map(|(name, hint, about)| {
            let about = if hint.is_empty() { about.clone() } else { format!("{hint}  {about}") };
            (format!("/{name}"), about)
        });
        let skills = self
            .skills
            .iter()
            .filter(|(name, _)| !self.commands.iter().any(|(command, _, _)| command == name))
            .map(|(name, about)| (format!("/{name}"), about.clone()));
        SLASH_COMMANDS
            .iter()
            .map(|(name, about)| ((*name).to_owned(), (*about).to_owned()))
            .chain(commands)
            .chain(skills)
            .chain(self.mcp_prompts.iter().cloned())
            .filter(|(name, _)| name.starts_with(&self.text))
            .collect()
    }

    /// Puts the selected completion in place of what it completes.
    pub fn complete(&mut self, files: &[String]) -> bool {
        let choices = self.completions(files);
        let Some((label, _)) =
            choices.get(self.popup_selected.min(choices.len().saturating_sub(1)))
        else {
            return false;
        };
        match self.at_word() {
            Some((start, _)) => {
                let with_space = format!("{label} ");
                self.text.replace_range(start..self.cursor, &with_space);
                self.cursor = start + with_space.len();
            }
            None => {
                self.text.clone_from(label);
                self.cursor = self.text.len();
            }
        }
        self.popup_selected = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(text: &str) -> Editor {
        let mut editor = Editor::default();
        editor.insert(text);
        editor
    }

    #[test]
    fn history_walks_back_and_restores_the_draft() {
        let mut editor = Editor::default();
        for entry in ["one", "two"] {
            editor.insert(entry);
            editor.submit();
        }
        editor.insert("draft");
        editor.up();
        assert_eq!(editor.text(), "two");
        editor.up();
        assert_eq!(editor.text(), "one");
        editor.up();
        assert_eq!(editor.text(), "one");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "draft");
    }

    #[test]
    fn up_moves_inside_multi_line_text_first() {
        let mut editor = typed("ab\ncd");
        editor.up();
        assert_eq!(editor.cursor_line_col(), (0, 2));
    }

    #[test]
    fn pasted_carriage_returns_become_newlines() {
        assert_eq!(typed("a\r\nb\rc").text(), "a\nb\nc");
    }

    #[test]
    fn editing_multibyte_text_keeps_the_cursor_on_boundaries() {
        let mut editor = typed("héllo wörld");
        editor.left();
        editor.left();
        editor.backspace();
        editor.delete_word();
        editor.home();
        editor.end();
        editor.right();
        assert_eq!(editor.text(), "héllo ld");
    }

    #[test]
    fn slash_completions_filter_by_prefix() {
        let mut editor = typed("/m");
        let names: Vec<_> = editor.completions(&[]).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["/mode", "/model", "/mcp"]);
        editor.popup_selected = 1;
        assert!(editor.complete(&[]));
        assert_eq!(editor.text(), "/model");
        assert!(typed("/mode x").completions(&[]).is_empty());
    }

    #[test]
    fn at_words_complete_to_files() {
        let files = vec!["src/main.rs".to_owned(), "README.md".to_owned()];
        let mut editor = typed("look at @mai please");
        for _ in 0..7 {
            editor.left();
        }
        assert_eq!(editor.completions(&files)[0].0, "@src/main.rs");
        assert!(editor.complete(&files));
        assert_eq!(editor.text(), "look at @src/main.rs  please");
    }
}
