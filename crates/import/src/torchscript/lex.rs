//! Tokens of TorchScript IR text.

use crate::ParseError;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// `%name` (without the `%`).
    Value(String),
    /// An identifier, possibly qualified: `aten::add`, `__torch__.Mod`, `block0`.
    Ident(String),
    /// A numeric literal as written.
    Number(String),
    Str(String),
    /// Text of a `#` comment, without the `#`.
    Comment(String),
    Arrow,
    Newline,
    Punct(char),
    Eof,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    /// Byte offsets in the source.
    pub start: usize,
    pub end: usize,
}

/// Where each line of a text starts, to map byte offsets to 1-based line and column; kept by
/// whoever holds the text (`Lines` borrows it).
#[derive(Clone, Debug)]
pub(crate) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The line and column of `offset` in `text`, the text this index was made of.
    pub fn position(&self, text: &str, offset: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let col = text.get(start..offset.min(text.len())).map_or(0, |t| t.chars().count()) + 1;
        (line, col)
    }
}

/// Maps byte offsets of a borrowed text to 1-based line and column.
pub(crate) struct Lines<'a> {
    text: &'a str,
    index: LineIndex,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        Lines { text, index: LineIndex::new(text) }
    }

    pub fn position(&self, offset: usize) -> (usize, usize) {
        self.index.position(self.text, offset)
    }

    pub fn error(&self, offset: usize, message: impl Into<String>) -> ParseError {
        let (line, col) = self.position(offset);
        ParseError::new(line, col, message)
    }
}

fn is_ident_start(ch: char) -> bool {
    ch.is_alphabetic() || ch == '_'
}

fn is_ident_char(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_' || ch == '.'
}

/// Splits the text into tokens; the last one is [`Tok::Eof`].
pub(super) fn lex(text: &str, lines: &Lines<'_>) -> Result<Vec<Token>, ParseError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let ch = text[i..].chars().next().unwrap_or(' ');
        let start = i;
        let tok = match ch {
            '\n' => {
                i += 1;
                Tok::Newline
            }
            c if c.is_whitespace() => {
                i += c.len_utf8();
                continue;
            }
            '#' => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                let comment = text[i + 1..end].trim().to_owned();
                i = end;
                Tok::Comment(comment)
            }
            '%' => {
                let rest = &text[i + 1..];
                let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
                if len == 0 {
                    return Err(lines.error(i, "expected a value name after `%`"));
                }
                i += 1 + len;
                Tok::Value(rest[..len].to_owned())
            }
            '"' | '\'' => {
                let (s, end) =
                    string(text, i).ok_or_else(|| lines.error(i, "unterminated string literal"))?;
                i = end;
                Tok::Str(s)
            }
            '-' if bytes.get(i + 1) == Some(&b'>') => {
                i += 2;
                Tok::Arrow
            }
            c if c.is_ascii_digit()
                || (c == '-'
                    && bytes
                        .get(i + 1)
                        .is_some_and(|b| b.is_ascii_digit() || *b == b'.')) =>
            {
                i = number_end(bytes, i);
                Tok::Number(text[start..i].to_owned())
            }
            c if is_ident_start(c) => {
                let mut end = i;
                loop {
                    let rest = &text[end..];
                    let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
                    end += len;
                    // `ns::name` continues the identifier.
                    if text[end..].starts_with("::") && text[end + 2..].starts_with(is_ident_start)
                    {
                        end += 2;
                        continue;
                    }
                    break;
                }
                i = end;
                Tok::Ident(text[start..end].to_owned())
            }
            '(' | ')' | '[' | ']' | '{' | '}' | ',' | ':' | '=' | '?' | '*' | '<' | '>' | '!'
            | '-' => {
                i += 1;
                Tok::Punct(ch)
            }
            other => return Err(lines.error(i, format!("unexpected character `{other}`"))),
        };
        out.push(Token { tok, start, end: i });
    }
    out.push(Token {
        tok: Tok::Eof,
        start: text.len(),
        end: text.len(),
    });
    Ok(out)
}

fn number_end(bytes: &[u8], mut i: usize) -> usize {
    if bytes[i] == b'-' {
        i += 1;
    }
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        i += 1;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            i = j;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    i
}

/// A quoted string starting at `start`; returns its value and the offset after it.
pub(crate) fn string(text: &str, start: usize) -> Option<(String, usize)> {
    let quote = text[start..].chars().next()?;
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '\n' => return None,
            c if c == quote => return Some((out, start + 1 + i + 1)),
            '\\' => {
                let (_, esc) = chars.next()?;
                out.push(match esc {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    other => other,
                });
            }
            other => out.push(other),
        }
    }
    None
}
