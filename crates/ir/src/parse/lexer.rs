//! Characters and tokens: positions, errors, whitespace and comments, identifiers, strings and numbers.

use super::*;
use crate::diag::Diagnostic;
use crate::location::Location;

impl<'a> Parser<'a> {
    // ----- positions and errors -----

    pub(super) fn loc_at(&self, pos: usize) -> Location {
        let line = self.line_starts.partition_point(|&s| s <= pos);
        let start = self.line_starts[line - 1];
        let col = self.src[start..pos.min(self.src.len())].chars().count() + 1;
        Location::File { file: self.file.clone(), line: line as u32 + self.line_offset, col: col as u32 }
    }

    pub(super) fn here(&self) -> Location {
        self.loc_at(self.pos)
    }

    pub(super) fn err(&self, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.here(), msg)
    }

    pub(super) fn err_at(&self, pos: usize, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(self.loc_at(pos), msg)
    }

    // ----- characters -----

    pub(super) fn eof(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    pub(super) fn peek(&self) -> u8 {
        self.bytes.get(self.pos).copied().unwrap_or(0)
    }

    pub(super) fn peek_at(&self, k: usize) -> u8 {
        self.bytes.get(self.pos + k).copied().unwrap_or(0)
    }

    /// Skips whitespace and `//` comments.
    pub(super) fn ws(&mut self) {
        loop {
            while self.pos < self.bytes.len() && self.bytes[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.bytes[self.pos..].starts_with(b"//") {
                while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    pub(super) fn eat(&mut self, s: &str) -> bool {
        self.ws();
        if self.bytes[self.pos..].starts_with(s.as_bytes()) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    /// Eats a keyword: `s` not followed by an identifier character.
    pub(super) fn eat_kw(&mut self, s: &str) -> bool {
        self.ws();
        if self.bytes[self.pos..].starts_with(s.as_bytes())
            && !self.bytes.get(self.pos + s.len()).copied().is_some_and(is_id_char)
        {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, s: &str) -> PResult<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.err(format!("expected '{s}'{}", self.found())))
        }
    }

    pub(super) fn found(&self) -> String {
        if self.eof() {
            ", found end of input".into()
        } else {
            let rest = &self.src[self.pos..];
            let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
            format!(", found '{tok}'")
        }
    }

    pub(super) fn bare_id(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.pos;
        if !is_id_start(self.peek()) {
            return None;
        }
        while is_id_char(self.peek()) {
            self.pos += 1;
        }
        Some(&self.src[start..self.pos])
    }

    /// A suffix identifier after `%`, `^`, `#`, `!` or `@`: letters, digits and `_$.-`.
    pub(super) fn suffix_id(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while is_suffix_char(self.peek()) {
            self.pos += 1;
        }
        if self.pos == start { None } else { Some(&self.src[start..self.pos]) }
    }

    pub(super) fn string_lit(&mut self) -> PResult<String> {
        self.ws();
        let start = self.pos;
        if self.peek() != b'"' {
            return Err(self.err(format!("expected string literal{}", self.found())));
        }
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek() {
                0 if self.eof() => return Err(self.err_at(start, "unterminated string literal")),
                b'\n' => return Err(self.err_at(start, "unterminated string literal")),
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    let c = self.peek_at(1);
                    match c {
                        b'"' | b'\\' => {
                            bytes.push(c);
                            self.pos += 2;
                        }
                        b'n' => {
                            bytes.push(b'\n');
                            self.pos += 2;
                        }
                        b't' => {
                            bytes.push(b'\t');
                            self.pos += 2;
                        }
                        _ => {
                            let hex = self.src.get(self.pos + 1..self.pos + 3).unwrap_or("");
                            let v = u8::from_str_radix(hex, 16)
                                .map_err(|_| self.err("invalid escape sequence in string literal"))?;
                            bytes.push(v);
                            self.pos += 3;
                        }
                    }
                }
                c => {
                    bytes.push(c);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| self.err_at(start, "string literal is not valid UTF-8"))
    }

    /// A number token: returns its text (sign included) and whether it is a float.
    pub(super) fn number_text(&mut self) -> Option<(&'a str, bool)> {
        self.ws();
        let start = self.pos;
        if matches!(self.peek(), b'-' | b'+') {
            self.pos += 1;
        }
        if !self.peek().is_ascii_digit() {
            self.pos = start;
            return None;
        }
        if self.peek() == b'0' && matches!(self.peek_at(1), b'x' | b'X') && self.peek_at(2).is_ascii_hexdigit() {
            self.pos += 2;
            while self.peek().is_ascii_hexdigit() {
                self.pos += 1;
            }
            return Some((&self.src[start..self.pos], false));
        }
        while self.peek().is_ascii_digit() {
            self.pos += 1;
        }
        let mut float = false;
        if self.peek() == b'.' {
            float = true;
            self.pos += 1;
            while self.peek().is_ascii_digit() {
                self.pos += 1;
            }
            if matches!(self.peek(), b'e' | b'E') {
                let save = self.pos;
                self.pos += 1;
                if matches!(self.peek(), b'+' | b'-') {
                    self.pos += 1;
                }
                if self.peek().is_ascii_digit() {
                    while self.peek().is_ascii_digit() {
                        self.pos += 1;
                    }
                } else {
                    self.pos = save;
                }
            }
        }
        Some((&self.src[start..self.pos], float))
    }

    pub(super) fn parse_i64(&self, text: &str, pos: usize) -> PResult<i64> {
        let (neg, digits) = match text.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let mag: u64 = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
            u64::from_str_radix(h, 16).map_err(|_| self.err_at(pos, "integer literal out of range"))?
        } else {
            digits.parse().map_err(|_| self.err_at(pos, "integer literal out of range"))?
        };
        if neg {
            if mag > i64::MAX as u64 + 1 {
                return Err(self.err_at(pos, "integer literal out of range for i64"));
            }
            Ok((mag as i64).wrapping_neg())
        } else {
            i64::try_from(mag).map_err(|_| self.err_at(pos, "integer literal out of range for i64"))
        }
    }

    pub(super) fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth -= 1;
    }

}

pub(super) fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(super) fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

pub(super) fn is_suffix_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}
