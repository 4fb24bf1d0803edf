//! The Starlark subset `.rules` files use: top-level calls with keyword
//! arguments whose values are strings or (nested) lists of strings.
//!
//! Why not the `starlark` crate: Codex's rules files only ever contain
//! `prefix_rule(...)`, `host_executable(...)` and `network_rule(...)`
//! calls with literal arguments; a full Starlark interpreter is a heavy
//! dependency tree (minutes of compile on two cores) for a language we would
//! then have to sandbox. This parser accepts every file in
//! `../shared/conformance/execpolicy/` unchanged (comments, trailing commas,
//! single/double/triple-quoted and raw strings) and reports errors with
//! the line and column they are at.
//!
//! Invariants: never panics on any input, and never recurses deeper than
//! [`MAX_NESTING`] (30 000 nested `[` in a cloned project's rules file
//! overflowed the stack at start); every [`Call`] and [`Arg`]
//! carries the 1-based line and column it starts at, lines ending in LF,
//! CRLF or a lone CR (old Mac files) alike; columns count characters.

/// How deep lists may nest: a rule needs two levels (`["git", ["status",
/// "log"]]`); anything far deeper is a mistake or an attack.
pub const MAX_NESTING: usize = 32;

/// A literal argument value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(String),
    List(Vec<Value>),
    Bool(bool),
}

/// One `name = value` keyword argument, where its name starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub value: Value,
    pub line: usize,
    pub column: usize,
}

/// One top-level call, e.g. `prefix_rule(pattern = ["ls"])`, where its
/// name starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    pub line: usize,
    pub column: usize,
    pub args: Vec<Arg>,
}

/// A syntax error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

impl SyntaxError {
    fn at(pos: Pos, message: String) -> Self {
        Self { line: pos.line, column: pos.column, message }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Str(String),
    Open(char),
    Close(char),
    Comma,
    Equals,
}

/// Parses a whole file into its calls.
pub fn parse(text: &str) -> Result<Vec<Call>, SyntaxError> {
    let (tokens, end) = lex(text)?;
    let mut parser = Parser { tokens, at: 0, end, depth: 0 };
    let mut calls = Vec::new();
    while parser.at < parser.tokens.len() {
        calls.push(parser.call()?);
    }
    Ok(calls)
}

struct Parser {
    tokens: Vec<(Token, Pos)>,
    at: usize,
    /// Where the file ends (for "unexpected end of file").
    end: Pos,
    /// Lists open around the current value.
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(Token, Pos)> {
        self.tokens.get(self.at)
    }

    fn next(&mut self, wanted: &str) -> Result<(Token, Pos), SyntaxError> {
        let token = self.tokens.get(self.at).cloned().ok_or_else(|| {
            SyntaxError::at(self.end, format!("unexpected end of file, expected {wanted}"))
        })?;
        self.at += 1;
        Ok(token)
    }

    fn expect(&mut self, token: &Token, wanted: &str) -> Result<Pos, SyntaxError> {
        let (found, pos) = self.next(wanted)?;
        if &found == token {
            Ok(pos)
        } else {
            Err(SyntaxError::at(pos, format!("expected {wanted}, found {}", show(&found))))
        }
    }

    fn call(&mut self) -> Result<Call, SyntaxError> {
        let (token, pos) = self.next("a function call")?;
        let Token::Ident(name) = token else {
            return Err(SyntaxError::at(
                pos,
                format!("expected a function call, found {}", show(&token)),
            ));
        };
        self.expect(&Token::Open('('), "`(`")?;
        let mut args = Vec::new();
        loop {
            if self.peek().is_some_and(|(token, _)| *token == Token::Close(')')) {
                self.at += 1;
                break;
            }
            args.push(self.arg()?);
            let (token, at) = self.next("`,` or `)`")?;
            match token {
                Token::Comma => {}
                Token::Close(')') => break,
                other => {
                    return Err(SyntaxError::at(
                        at,
                        format!("expected `,` or `)`, found {}", show(&other)),
                    ));
                }
            }
        }
        Ok(Call { name, line: pos.line, column: pos.column, args })
    }

    fn arg(&mut self) -> Result<Arg, SyntaxError> {
        let (token, pos) = self.next("a keyword argument")?;
        let Token::Ident(name) = token else {
            return Err(SyntaxError::at(
                pos,
                format!("expected a keyword argument (name = value), found {}", show(&token)),
            ));
        };
        self.expect(&Token::Equals, "`=` after the argument name")?;
        let value = self.value()?;
        Ok(Arg { name, value, line: pos.line, column: pos.column })
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        let (token, pos) = self.next("a value")?;
        match token {
            Token::Str(text) => Ok(Value::Str(text)),
            Token::Ident(word) if word == "True" => Ok(Value::Bool(true)),
            Token::Ident(word) if word == "False" => Ok(Value::Bool(false)),
            Token::Open('[') => {
                if self.depth >= MAX_NESTING {
                    return Err(SyntaxError::at(
                        pos,
                        format!(
                            "lists nested more than {MAX_NESTING} deep; a rule needs at most \
                             two levels, e.g. pattern = [\"git\", [\"status\", \"log\"]]"
                        ),
                    ));
                }
                self.depth += 1;
                let list = self.list();
                self.depth -= 1;
                list
            }
            other => Err(SyntaxError::at(
                pos,
                format!("expected a string or a list, found {}", show(&other)),
            )),
        }
    }

    fn list(&mut self) -> Result<Value, SyntaxError> {
        let mut items = Vec::new();
        loop {
            if self.peek().is_some_and(|(token, _)| *token == Token::Close(']')) {
                self.at += 1;
                return Ok(Value::List(items));
            }
            items.push(self.value()?);
            let (token, pos) = self.next("`,` or `]`")?;
            match token {
                Token::Comma => {}
                Token::Close(']') => return Ok(Value::List(items)),
                other => {
                    return Err(SyntaxError::at(
                        pos,
                        format!("expected `,` or `]`, found {}", show(&other)),
                    ));
                }
            }
        }
    }
}

fn show(token: &Token) -> String {
    match token {
        Token::Ident(name) => format!("`{name}`"),
        Token::Str(text) => format!("string {text:?}"),
        Token::Open(c) | Token::Close(c) => format!("`{c}`"),
        Token::Comma => "`,`".to_owned(),
        Token::Equals => "`=`".to_owned(),
    }
}

/// The characters of a file and where each line starts, so a token's
/// column is its distance from the start of its line.
struct Cursor {
    chars: Vec<char>,
    at: usize,
    line: usize,
    line_start: usize,
}

impl Cursor {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn pos(&self) -> Pos {
        Pos { line: self.line, column: self.at - self.line_start + 1 }
    }

    /// Steps over a line break at the cursor (LF, CRLF or a lone CR), if
    /// there is one.
    fn line_break(&mut self) -> bool {
        let width = match (self.peek(0), self.peek(1)) {
            (Some('\r'), Some('\n')) => 2,
            (Some('\n' | '\r'), _) => 1,
            _ => return false,
        };
        self.at += width;
        self.line += 1;
        self.line_start = self.at;
        true
    }
}

fn lex(text: &str) -> Result<(Vec<(Token, Pos)>, Pos), SyntaxError> {
    let mut cursor = Cursor { chars: text.chars().collect(), at: 0, line: 1, line_start: 0 };
    let mut tokens = Vec::new();
    while let Some(c) = cursor.peek(0) {
        let pos = cursor.pos();
        if cursor.line_break() {
            continue;
        }
        let single = match c {
            '(' | '[' => Some(Token::Open(c)),
            ')' | ']' => Some(Token::Close(c)),
            ',' => Some(Token::Comma),
            '=' => Some(Token::Equals),
            _ => None,
        };
        if let Some(token) = single {
            tokens.push((token, pos));
            cursor.at += 1;
            continue;
        }
        match c {
            c if c.is_whitespace() => cursor.at += 1,
            '#' => {
                while cursor.peek(0).is_some_and(|c| c != '\n' && c != '\r') {
                    cursor.at += 1;
                }
            }
            'r' | 'R' if matches!(cursor.peek(1), Some('"' | '\'')) => {
                cursor.at += 1;
                tokens.push((Token::Str(string(&mut cursor, pos, true)?), pos));
            }
            '"' | '\'' => tokens.push((Token::Str(string(&mut cursor, pos, false)?), pos)),
            c if c.is_alphabetic() || c == '_' => {
                let mut word = String::new();
                while let Some(c) = cursor.peek(0).filter(|c| c.is_alphanumeric() || *c == '_') {
                    word.push(c);
                    cursor.at += 1;
                }
                tokens.push((Token::Ident(word), pos));
            }
            other => {
                return Err(SyntaxError::at(pos, format!("unexpected character {other:?}")));
            }
        }
    }
    Ok((tokens, cursor.pos()))
}

/// Reads one string literal; the cursor is at its (first) quote, `start`
/// where the literal (its prefix included) begins.
fn string(cursor: &mut Cursor, start: Pos, raw: bool) -> Result<String, SyntaxError> {
    let quote = cursor.peek(0).unwrap_or('"');
    let triple = cursor.peek(1) == Some(quote) && cursor.peek(2) == Some(quote);
    cursor.at += if triple { 3 } else { 1 };
    let mut out = String::new();
    loop {
        let Some(c) = cursor.peek(0) else {
            return Err(SyntaxError::at(start, "unterminated string".to_owned()));
        };
        if c == quote
            && (!triple || (cursor.peek(1) == Some(quote) && cursor.peek(2) == Some(quote)))
        {
            cursor.at += if triple { 3 } else { 1 };
            return Ok(out);
        }
        if c == '\n' || c == '\r' {
            if !triple {
                return Err(SyntaxError::at(
                    start,
                    "unterminated string (a newline inside a one-line string)".to_owned(),
                ));
            }
            let crlf = c == '\r' && cursor.peek(1) == Some('\n');
            out.push(c);
            if crlf {
                out.push('\n');
            }
            cursor.line_break();
            continue;
        }
        if c == '\\' && !raw {
            cursor.at += 1;
            // An escaped line break joins the lines.
            if cursor.line_break() {
                continue;
            }
            let escaped = cursor.peek(0).unwrap_or('\\');
            cursor.at += 1;
            out.push(match escaped {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                '0' => '\0',
                other => other,
            });
            continue;
        }
        out.push(c);
        cursor.at += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_calls_with_nested_lists_and_trailing_commas() {
        let calls = parse(
            "# c\nprefix_rule(\n  pattern = [\"a\", ['b', \"c\"],],\n  decision='allow',\n)\n",
        )
        .unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].line, 2);
        assert_eq!(calls[0].args[0].line, 3);
        assert_eq!(
            calls[0].args[0].value,
            Value::List(vec![
                Value::Str("a".into()),
                Value::List(vec![Value::Str("b".into()), Value::Str("c".into())])
            ])
        );
    }

    #[test]
    fn triple_quoted_strings_span_lines() {
        let calls = parse("f(j = \"\"\"\nline one\n\"\"\")\ng()").unwrap();
        assert_eq!(calls[0].args[0].value, Value::Str("\nline one\n".into()));
        assert_eq!(calls[1].line, 4);
    }

    #[test]
    fn errors_name_the_line() {
        let error = parse("f(a = [\"x\"]\n\n  b = 1)").unwrap_err();
        assert_eq!(error.line, 3, "{error:?}");
        let error = parse("f(a = \"open\n").unwrap_err();
        assert_eq!(error.line, 1);
        assert!(parse("f(a = [").is_err());
    }

    #[test]
    fn positions_count_lf_crlf_and_lone_cr_line_ends_alike() {
        for end in ["\n", "\r\n", "\r"] {
            let text = format!(
                "# c{end}f(a = [\"x\"],{end}  b = \"\"\"{end}{end}\"\"\",{end}    c = 'y'){end}g()"
            );
            let calls = parse(&text).unwrap_or_else(|e| panic!("{end:?}: {e:?}"));
            let places: Vec<(usize, usize)> =
                calls[0].args.iter().map(|arg| (arg.line, arg.column)).collect();
            assert_eq!(places, [(2, 3), (3, 3), (6, 5)], "{end:?}");
            assert_eq!((calls[1].line, calls[1].column), (7, 1), "{end:?}");
            let error = parse(&format!("f({end}  a = 1)")).unwrap_err();
            assert_eq!((error.line, error.column), (2, 7), "{end:?}: {error:?}");
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("f(a = {}", "[".repeat(30_000));
        let error = parse(&deep).unwrap_err();
        assert!(error.message.contains("nested more than 32 deep"), "{error:?}");
        assert_eq!((error.line, error.column), (1, 7 + MAX_NESTING));
        let fine = format!("f(a = {}\"x\"{})", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert!(parse(&fine).is_ok());
    }

    #[test]
    fn never_panics_on_garbage() {
        for text in ["(", ")", "\"", "r'", "f(=)", "f(a=\"\\", "\u{0}", "f(a=b)", "'''"] {
            let _ = parse(text);
        }
    }
}
