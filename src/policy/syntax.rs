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
//! the line they are on.
//!
//! Invariants: never panics on any input; every [`Call`] and [`Arg`] carries
//! the 1-based line it starts on.

/// A literal argument value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(String),
    List(Vec<Value>),
    Bool(bool),
}

/// One `name = value` keyword argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    pub value: Value,
    pub line: usize,
}

/// One top-level call, e.g. `prefix_rule(pattern = ["ls"])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub name: String,
    pub line: usize,
    pub args: Vec<Arg>,
}

/// A syntax error: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: usize,
    pub message: String,
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
    let tokens = lex(text)?;
    let mut parser = Parser { tokens, at: 0 };
    let mut calls = Vec::new();
    while parser.at < parser.tokens.len() {
        calls.push(parser.call()?);
    }
    Ok(calls)
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&(Token, usize)> {
        self.tokens.get(self.at)
    }

    fn last_line(&self) -> usize {
        self.tokens.last().map_or(1, |(_, line)| *line)
    }

    fn next(&mut self, wanted: &str) -> Result<(Token, usize), SyntaxError> {
        let token = self.tokens.get(self.at).cloned().ok_or_else(|| SyntaxError {
            line: self.last_line(),
            message: format!("unexpected end of file, expected {wanted}"),
        })?;
        self.at += 1;
        Ok(token)
    }

    fn expect(&mut self, token: &Token, wanted: &str) -> Result<usize, SyntaxError> {
        let (found, line) = self.next(wanted)?;
        if &found == token {
            Ok(line)
        } else {
            Err(SyntaxError { line, message: format!("expected {wanted}, found {}", show(&found)) })
        }
    }

    fn call(&mut self) -> Result<Call, SyntaxError> {
        let (token, line) = self.next("a function call")?;
        let Token::Ident(name) = token else {
            return Err(SyntaxError {
                line,
                message: format!("expected a function call, found {}", show(&token)),
            });
        };
        self.expect(&Token::Open('('), "`(`")?;
        let mut args = Vec::new();
        loop {
            if self.peek().is_some_and(|(token, _)| *token == Token::Close(')')) {
                self.at += 1;
                break;
            }
            args.push(self.arg()?);
            let (token, line) = self.next("`,` or `)`")?;
            match token {
                Token::Comma => {}
                Token::Close(')') => break,
                other => {
                    return Err(SyntaxError {
                        line,
                        message: format!("expected `,` or `)`, found {}", show(&other)),
                    });
                }
            }
        }
        Ok(Call { name, line, args })
    }

    fn arg(&mut self) -> Result<Arg, SyntaxError> {
        let (token, line) = self.next("a keyword argument")?;
        let Token::Ident(name) = token else {
            return Err(SyntaxError {
                line,
                message: format!(
                    "expected a keyword argument (name = value), found {}",
                    show(&token)
                ),
            });
        };
        self.expect(&Token::Equals, "`=` after the argument name")?;
        let value = self.value()?;
        Ok(Arg { name, value, line })
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        let (token, line) = self.next("a value")?;
        match token {
            Token::Str(text) => Ok(Value::Str(text)),
            Token::Ident(word) if word == "True" => Ok(Value::Bool(true)),
            Token::Ident(word) if word == "False" => Ok(Value::Bool(false)),
            Token::Open('[') => self.list(),
            other => Err(SyntaxError {
                line,
                message: format!("expected a string or a list, found {}", show(&other)),
            }),
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
            let (token, line) = self.next("`,` or `]`")?;
            match token {
                Token::Comma => {}
                Token::Close(']') => return Ok(Value::List(items)),
                other => {
                    return Err(SyntaxError {
                        line,
                        message: format!("expected `,` or `]`, found {}", show(&other)),
                    });
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

fn lex(text: &str) -> Result<Vec<(Token, usize)>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut at = 0;
    while let Some(&c) = chars.get(at) {
        let start_line = line;
        match c {
            '\n' => {
                line += 1;
                at += 1;
            }
            c if c.is_whitespace() => at += 1,
            '#' => {
                while chars.get(at).is_some_and(|c| *c != '\n') {
                    at += 1;
                }
            }
            '(' | '[' => {
                tokens.push((Token::Open(c), line));
                at += 1;
            }
            ')' | ']' => {
                tokens.push((Token::Close(c), line));
                at += 1;
            }
            ',' => {
                tokens.push((Token::Comma, line));
                at += 1;
            }
            '=' => {
                tokens.push((Token::Equals, line));
                at += 1;
            }
            'r' | 'R' if matches!(chars.get(at + 1), Some('"' | '\'')) => {
                let text = string(&chars, &mut at, &mut line, true)?;
                tokens.push((Token::Str(text), start_line));
            }
            '"' | '\'' => {
                let text = string(&chars, &mut at, &mut line, false)?;
                tokens.push((Token::Str(text), start_line));
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut word = String::new();
                while let Some(&c) = chars.get(at).filter(|c| c.is_alphanumeric() || **c == '_') {
                    word.push(c);
                    at += 1;
                }
                tokens.push((Token::Ident(word), line));
            }
            other => {
                return Err(SyntaxError {
                    line,
                    message: format!("unexpected character {other:?}"),
                });
            }
        }
    }
    Ok(tokens)
}

/// Reads one string literal starting at `at` (at the prefix or the quote).
fn string(
    chars: &[char],
    at: &mut usize,
    line: &mut usize,
    raw: bool,
) -> Result<String, SyntaxError> {
    let start_line = *line;
    if raw {
        *at += 1;
    }
    let quote = chars.get(*at).copied().unwrap_or('"');
    let triple = chars.get(*at + 1) == Some(&quote) && chars.get(*at + 2) == Some(&quote);
    *at += if triple { 3 } else { 1 };
    let mut out = String::new();
    loop {
        let Some(&c) = chars.get(*at) else {
            return Err(SyntaxError {
                line: start_line,
                message: "unterminated string".to_owned(),
            });
        };
        if c == quote
            && (!triple
                || (chars.get(*at + 1) == Some(&quote) && chars.get(*at + 2) == Some(&quote)))
        {
            *at += if triple { 3 } else { 1 };
            return Ok(out);
        }
        if c == '\n' {
            if !triple {
                return Err(SyntaxError {
                    line: start_line,
                    message: "unterminated string (a newline inside a one-line string)".to_owned(),
                });
            }
            *line += 1;
        }
        if c == '\\' && !raw {
            let escaped = chars.get(*at + 1).copied().unwrap_or('\\');
            *at += 2;
            match escaped {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\n' => *line += 1,
                other => out.push(other),
            }
            continue;
        }
        out.push(c);
        *at += 1;
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
    fn never_panics_on_garbage() {
        for text in ["(", ")", "\"", "r'", "f(=)", "f(a=\"\\", "\u{0}", "f(a=b)", "'''"] {
            let _ = parse(text);
        }
    }
}
