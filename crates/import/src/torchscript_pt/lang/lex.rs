//! Tokens of TorchScript source: Python's lexical rules (indentation, implicit line joining in
//! brackets, backslash continuation, comments, numeric and string literals).

use crate::ParseError;
use crate::torchscript::lex::{Lines, string};

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Name(String),
    Int(i64),
    Float(f64),
    Str(String),
    /// Punctuation or an operator: `(`, `->`, `//=`, `**`, ….
    Op(&'static str),
    Newline,
    Indent,
    Dedent,
    Eof,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    /// Byte offset of the token's first character.
    pub at: usize,
}

/// Operators, longest first so that `//=` wins over `//` and `/`.
const OPS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "->", "**", "//", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "<<", ">>", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=",
    "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~", "@",
];

/// Splits `text` into tokens ending with [`Tok::Eof`], with `Indent`/`Dedent` around blocks.
pub(crate) fn lex(text: &str, lines: &Lines<'_>) -> Result<Vec<Token>, ParseError> {
    let bytes = text.as_bytes();
    let mut out: Vec<Token> = Vec::new();
    let mut indents = vec![0usize];
    let mut depth = 0usize;
    let mut i = 0;
    let mut line_start = true;
    while i < text.len() {
        if line_start && depth == 0 {
            // Measure the indentation; blank and comment-only lines do not count.
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
                if bytes[j] == b'\t' {
                    return Err(lines.error(j, "a tab in indentation (use spaces)"));
                }
                j += 1;
            }
            match bytes.get(j) {
                None => break,
                Some(b'\n') => {
                    i = j + 1;
                    continue;
                }
                Some(b'\r') if bytes.get(j + 1) == Some(&b'\n') => {
                    i = j + 2;
                    continue;
                }
                Some(b'#') => {
                    i = text[j..].find('\n').map_or(text.len(), |n| j + n + 1);
                    continue;
                }
                _ => {}
            }
            let width = j - i;
            let current = *indents.last().unwrap_or(&0);
            if width > current {
                indents.push(width);
                out.push(Token { tok: Tok::Indent, at: j });
            } else {
                while width < *indents.last().unwrap_or(&0) {
                    indents.pop();
                    out.push(Token { tok: Tok::Dedent, at: j });
                }
                if width != *indents.last().unwrap_or(&0) {
                    return Err(lines.error(j, "unindent does not match any outer indentation level"));
                }
            }
            i = j;
            line_start = false;
        }
        let ch = text[i..].chars().next().unwrap_or(' ');
        let start = i;
        match ch {
            '\n' => {
                i += 1;
                if depth == 0 {
                    if !matches!(out.last().map(|t| &t.tok), None | Some(Tok::Newline)) {
                        out.push(Token { tok: Tok::Newline, at: start });
                    }
                    line_start = true;
                }
            }
            '\\' if bytes.get(i + 1) == Some(&b'\n') => i += 2,
            c if c.is_whitespace() => i += c.len_utf8(),
            '#' => i = text[i..].find('\n').map_or(text.len(), |n| i + n),
            '"' | '\'' => {
                if text[i..].starts_with("\"\"\"") || text[i..].starts_with("'''") {
                    let quote = &text[i..i + 3];
                    let end = text[i + 3..]
                        .find(quote)
                        .ok_or_else(|| lines.error(start, "unterminated triple-quoted string"))?;
                    let body = text[i + 3..i + 3 + end].to_string();
                    out.push(Token { tok: Tok::Str(body), at: start });
                    i += end + 6;
                } else {
                    let (s, end) = string(text, i).ok_or_else(|| lines.error(start, "unterminated string"))?;
                    out.push(Token { tok: Tok::Str(s), at: start });
                    i = end;
                }
            }
            c if c.is_ascii_digit() || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
                let (tok, end) = number(text, i).map_err(|m| lines.error(start, m))?;
                out.push(Token { tok, at: start });
                i = end;
            }
            c if c.is_alphabetic() || c == '_' => {
                let end = text[i..]
                    .char_indices()
                    .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
                    .map_or(text.len(), |(n, _)| i + n);
                out.push(Token { tok: Tok::Name(text[i..end].to_string()), at: start });
                i = end;
            }
            _ => {
                let Some(op) = OPS.iter().find(|op| text[i..].starts_with(**op)) else {
                    return Err(lines.error(start, format!("unexpected character `{ch}`")));
                };
                match *op {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => {
                        depth = depth.checked_sub(1).ok_or_else(|| lines.error(start, format!("unmatched `{op}`")))?
                    }
                    _ => {}
                }
                out.push(Token { tok: Tok::Op(op), at: start });
                i += op.len();
            }
        }
    }
    if depth > 0 {
        return Err(lines.error(text.len(), "unclosed bracket at the end of the file"));
    }
    if !matches!(out.last().map(|t| &t.tok), None | Some(Tok::Newline)) {
        out.push(Token { tok: Tok::Newline, at: text.len() });
    }
    for _ in 1..indents.len() {
        out.push(Token { tok: Tok::Dedent, at: text.len() });
    }
    out.push(Token { tok: Tok::Eof, at: text.len() });
    Ok(out)
}

/// A numeric literal at `start`: its token and the offset after it.
fn number(text: &str, start: usize) -> Result<(Tok, usize), String> {
    let bytes = text.as_bytes();
    let mut i = start;
    let digits = |i: &mut usize| {
        while *i < bytes.len() && (bytes[*i].is_ascii_digit() || bytes[*i] == b'_') {
            *i += 1;
        }
    };
    if text[i..].starts_with("0x") || text[i..].starts_with("0X") {
        i += 2;
        while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
            i += 1;
        }
        let v = i64::from_str_radix(&text[start + 2..i], 16).map_err(|_| format!("integer literal `{}` does not fit 64 bits", &text[start..i]))?;
        return Ok((Tok::Int(v), i));
    }
    digits(&mut i);
    let mut float = false;
    if bytes.get(i) == Some(&b'.') {
        float = true;
        i += 1;
        digits(&mut i);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            float = true;
            i = j;
            digits(&mut i);
        }
    }
    if matches!(bytes.get(i), Some(b'j' | b'J')) {
        return Err("complex literals are not supported".into());
    }
    let literal: String = text[start..i].chars().filter(|&c| c != '_').collect();
    if float {
        let v: f64 = literal.parse().map_err(|_| format!("malformed number `{literal}`"))?;
        Ok((Tok::Float(v), i))
    } else {
        let v: i64 = literal.parse().map_err(|_| format!("integer literal `{literal}` does not fit 64 bits"))?;
        Ok((Tok::Int(v), i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex(text, &Lines::new(text)).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn indentation_becomes_indent_and_dedent() {
        let t = toks("if x:\n  y = 1\n\n  # note\nz = 2.\n");
        assert_eq!(
            t,
            vec![
                Tok::Name("if".into()),
                Tok::Name("x".into()),
                Tok::Op(":"),
                Tok::Newline,
                Tok::Indent,
                Tok::Name("y".into()),
                Tok::Op("="),
                Tok::Int(1),
                Tok::Newline,
                Tok::Dedent,
                Tok::Name("z".into()),
                Tok::Op("="),
                Tok::Float(2.0),
                Tok::Newline,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn brackets_join_lines_and_operators_take_the_longest_match() {
        let t = toks("f(a,\n    b) //= 1e-05\n");
        assert!(t.contains(&Tok::Op("//=")));
        assert!(t.contains(&Tok::Float(1e-5)));
        assert_eq!(t.iter().filter(|t| **t == Tok::Newline).count(), 1);
    }

    #[test]
    fn bad_indentation_and_literals_are_positioned() {
        let text = "if x:\n    a = 1\n  b = 2\n";
        let e = lex(text, &Lines::new(text)).unwrap_err();
        assert_eq!((e.line, e.col), (3, 3));
        assert!(e.message.contains("unindent"));
        let text = "a = 99999999999999999999\n";
        assert!(lex(text, &Lines::new(text)).unwrap_err().message.contains("64 bits"));
        let text = "a = (1,\n";
        assert!(lex(text, &Lines::new(text)).unwrap_err().message.contains("unclosed"));
    }
}
