//! Text from the model or from a tool, made safe to print on a terminal.
//!
//! Model text and command output are untrusted: written raw, an
//! `ESC ] 52 ; c ; …` sequence sets the user's clipboard, `ESC [ 2 J`
//! clears the screen, `ESC ] 0 ;` retitles the window, cursor moves and a
//! bare carriage return overwrite what was printed (a command that looks
//! harmless on screen). [`for_terminal`] removes every control sequence and
//! control character a terminal acts on, keeping the printable text, line
//! feeds and tabs.
//!
//! Invariants: the result contains no C0 control but `\n` and `\t`, no DEL
//! and no C1 control (so no escape sequence of any kind can start); text
//! without controls comes back borrowed, unchanged; sanitizing twice
//! equals sanitizing once. Pure (L0).

use std::borrow::Cow;

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
/// The 8-bit String Terminator (C1).
const ST: char = '\u{9c}';

/// `text` with every terminal control sequence and control character
/// removed. A bare carriage return (one not followed by a line feed) would
/// let later text overwrite earlier text on the same row, so it becomes a
/// line feed: both texts stay visible. `\r\n` becomes `\n`.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_work) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            ESC => skip_escape(&mut chars),
            // 8-bit forms of CSI, OSC, DCS, SOS, PM and APC.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if is_control(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn needs_work(c: char) -> bool {
    is_control(c) && c != '\n' && c != '\t'
}

/// C0 (but nothing printable), DEL and C1.
fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// After an ESC: the rest of the sequence it starts.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    let Some(&next) = chars.peek() else { return };
    match next {
        '[' => {
            chars.next();
            skip_csi(chars);
        }
        // OSC, DCS, SOS, PM, APC: a string up to BEL or ST.
        ']' | 'P' | 'X' | '^' | '_' => {
            chars.next();
            skip_string(chars);
        }
        // nF sequences: intermediates (space to /), then one final byte.
        ' '..='/' => {
            while chars.next_if(|c| matches!(c, ' '..='/')).is_some() {}
            chars.next_if(|c| matches!(c, '0'..='~'));
        }
        // Two-character sequences (ESC 7, ESC c, ESC M, …).
        '0'..='~' => {
            chars.next();
        }
        // ESC before a control or a non-ASCII char: drop the ESC alone.
        _ => {}
    }
}

/// A CSI's parameters and intermediates, then its final byte. Stops at a
/// control (which is then judged on its own) so a cut sequence cannot
/// swallow the following lines.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while chars.next_if(|c| matches!(c, '0'..='?' | ' '..='/')).is_some() {}
    chars.next_if(|c| matches!(c, '@'..='~'));
}

/// An OSC/DCS-style string: everything up to BEL, ESC `\` or ST. An
/// unterminated string runs to the end of the text (a terminal would wait
/// for its end too, showing nothing).
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | ST => return,
            ESC => {
                chars.next_if_eq(&'\\');
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    macro_rules! strips {
        ($($name:ident: $input:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(for_terminal($input), $expected);
            }
        )*};
    }

    strips! {
        plain_text_is_untouched: "hello\n\tworld" => "hello\n\tworld";
        osc52_clipboard_with_bel: "a\x1b]52;c;cm0gLXJmIC8=\x07b" => "ab";
        osc52_clipboard_with_st: "a\x1b]52;c;cm0gLXJmIC8=\x1b\\b" => "ab";
        window_title: "\x1b]0;pwned\x07done" => "done";
        clear_screen: "x\x1b[2Jy\x1b[H" => "xy";
        cursor_moves: "\x1b[10;20Hz\x1b[3A\x1b[?25l" => "z";
        sgr_colours: "\x1b[1;31mred\x1b[0m" => "red";
        dcs_string: "\x1bPq#0;2;0;0;0\x1b\\after" => "after";
        apc_and_pm: "\x1b_hidden\x1b\\\x1b^pm\x07ok" => "ok";
        two_char_escapes: "\x1bc\x1b7a\x1b8" => "a";
        charset_designation: "\x1b(0lqk\x1b(B" => "lqk";
        c1_csi: "a\u{9b}2Jb" => "ab";
        c1_osc: "a\u{9d}52;c;eA==\u{9c}b" => "ab";
        other_c1: "a\u{85}\u{8d}b" => "ab";
        bell_backspace_del: "a\x07b\x08c\x7f" => "abc";
        bare_cr_becomes_a_line: "safe\rEVIL" => "safe\nEVIL";
        crlf_is_a_newline: "one\r\ntwo\r\n" => "one\ntwo\n";
        unterminated_osc_swallows_the_rest: "a\x1b]52;c;xyz" => "a";
        cut_csi_keeps_the_next_line: "a\x1b[12\nb" => "a\nb";
        lone_esc_at_end: "a\x1b" => "a";
        unicode_survives: "naïve → ✓ 日本" => "naïve → ✓ 日本";
    }

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(for_terminal("plain"), Cow::Borrowed(_)));
    }

    proptest! {
        #[test]
        fn no_control_survives(text in any::<String>()) {
            let clean = for_terminal(&text);
            prop_assert!(!clean.chars().any(needs_work), "{clean:?}");
        }

        #[test]
        fn idempotent(text in any::<String>()) {
            let once = for_terminal(&text).into_owned();
            prop_assert_eq!(for_terminal(&once), once.as_str());
        }

        #[test]
        fn escapes_mixed_into_text_leave_the_text(
            words in proptest::collection::vec("[a-z ]{0,8}", 1..6),
            seqs in proptest::collection::vec(prop_oneof![
                Just("\x1b[2J"), Just("\x1b]52;c;QQ==\x07"), Just("\x1b[31m"),
                Just("\x1b]0;t\x1b\\"), Just("\u{9b}1;1H"), Just("\x07"),
            ], 1..6),
        ) {
            let mut mixed = String::new();
            for (i, word) in words.iter().enumerate() {
                mixed.push_str(word);
                mixed.push_str(seqs[i % seqs.len()]);
            }
            prop_assert_eq!(for_terminal(&mixed), words.concat());
        }
    }
}
