//! Source buffers (check file, input, command-line patterns) and LLVM-style diagnostics.

use std::fmt::Write as _;

use crate::color::{Color, Paint};

/// Index of a buffer in a [`Sources`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId(usize);

impl FileId {
    /// The buffer's position in its table: 0 is the check file, then one
    /// buffer per `--implicit-check-not` pattern, then the input.
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

/// One named text buffer with a line index, built the first time a line
/// number is asked for (a run that reports nothing never needs it).
#[derive(Debug, Clone)]
pub(crate) struct SourceText {
    pub(crate) name: String,
    pub(crate) text: String,
    line_starts: std::cell::OnceCell<Vec<usize>>,
}

impl SourceText {
    pub(crate) fn new(name: &str, text: String) -> SourceText {
        SourceText { name: name.to_string(), text, line_starts: std::cell::OnceCell::new() }
    }

    /// Where each line starts.
    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let mut starts = vec![0];
            starts.extend(memchr::memchr_iter(b'\n', self.text.as_bytes()).map(|i| i + 1));
            starts
        })
    }

    /// The 1-based line and byte column of `offset`.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s <= offset).max(1);
        (line, offset - starts[line - 1] + 1)
    }

    /// The text of 1-based line `line`, without its newline.
    pub(crate) fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts().get(line - 1).copied().unwrap_or(self.text.len());
        let end = self.text[start..].find('\n').map_or(self.text.len(), |e| start + e);
        self.text[start..end].strip_suffix('\r').unwrap_or(&self.text[start..end])
    }
}

/// All buffers a run refers to, so that diagnostics can name and quote them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sources {
    files: Vec<SourceText>,
}

impl Sources {
    pub(crate) fn add(&mut self, source: SourceText) -> FileId {
        self.files.push(source);
        FileId(self.files.len() - 1)
    }

    pub(crate) fn get(&self, id: FileId) -> &SourceText {
        &self.files[id.0]
    }
}

/// A position or range in one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) file: FileId,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Span {
    pub(crate) fn point(file: FileId, at: usize) -> Span {
        Span { file, start: at, end: at }
    }
}

/// How serious a diagnostic is; spelled as LLVM spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Severity {
    Error,
    Note,
    Remark,
}

/// One message attached to a place in a buffer.
#[derive(Debug, Clone)]
pub(crate) struct Diagnostic {
    pub(crate) severity: Severity,
    pub(crate) span: Span,
    pub(crate) message: String,
    /// LLVM prints an empty line after errors it logs as error values
    /// (those of numeric blocks and variable names).
    pub(crate) blank_after: bool,
}

impl Diagnostic {
    pub(crate) fn error(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, span, message: message.into(), blank_after: false }
    }

    pub(crate) fn note(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Note, span, message: message.into(), blank_after: false }
    }

    pub(crate) fn remark(span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Remark, span, message: message.into(), blank_after: false }
    }
}

/// Renders diagnostics the way LLVM's `SourceMgr` prints them: a
/// `file:line:col: kind: message` header, the source line, and a caret line,
/// colored as LLVM colors them when `paint` is on.
pub(crate) fn render(sources: &Sources, diagnostics: &[Diagnostic], paint: Paint) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let source = sources.get(diagnostic.span.file);
        let (line, col) = source.line_col(diagnostic.span.start);
        let (kind, color) = match diagnostic.severity {
            Severity::Error => ("error", Color::Red),
            Severity::Note => ("note", Color::Black),
            Severity::Remark => ("remark", Color::Blue),
        };
        let (bold, reset) = (paint.bold(), paint.reset());
        let _ = write!(out, "{bold}{}:{line}:{col}: {reset}", source.name);
        let _ = write!(out, "{}{kind}: {reset}", paint.fg(color));
        let _ = writeln!(out, "{bold}{}", diagnostic.message);
        out.push_str(reset);
        let (text, caret) = quote_line(
            source.line_text(line),
            col - 1,
            diagnostic.span.end.saturating_sub(diagnostic.span.start),
        );
        let _ = writeln!(out, "{text}");
        let _ = writeln!(out, "{}{caret}", paint.fg(Color::Green));
        out.push_str(reset);
        if diagnostic.blank_after {
            out.push('\n');
        }
    }
    out
}

/// Width of a tab stop when quoting source lines, as in LLVM.
const TAB_STOP: usize = 8;

/// A source line with tabs expanded, and the caret line under it: `^` at
/// byte column `col`, then `~` for the rest of a range of `len` bytes
/// (clipped to the line).
fn quote_line(text: &str, col: usize, len: usize) -> (String, String) {
    let mut line = String::new();
    let mut caret = String::new();
    let mut width = 0;
    for (i, ch) in text.char_indices() {
        let cells = if ch == '\t' { TAB_STOP - width % TAB_STOP } else { 1 };
        if ch == '\t' {
            line.extend(std::iter::repeat_n(' ', cells));
        } else {
            line.push(ch);
        }
        let mark = if i == col {
            '^'
        } else if i > col && i < col + len {
            '~'
        } else {
            ' '
        };
        caret.extend(std::iter::repeat_n(mark, cells));
        width += cells;
    }
    if col >= text.len() {
        caret.push('^');
    }
    (line, caret.trim_end().to_string())
}

/// Collapses runs of spaces and tabs into one space and drops the `\r` of
/// `\r\n`, as LLVM does to both the check file and the input unless
/// `--strict-whitespace` is given. Offsets into the result are what every
/// diagnostic reports, as in LLVM.
pub(crate) fn canonicalize(text: String) -> String {
    let mut bytes = text.into_bytes();
    // The text only shrinks, so it is rewritten in place: runs up to the
    // next place that changes (a tab, a `\r`, or a space followed by a space
    // or a tab) move down to where the output has got to. All those bytes
    // are ASCII, so UTF-8 sequences move whole.
    let mut written = 0;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if i + 9 <= bytes.len() && chunk_unchanged(&bytes[i..i + 9]) {
            i += 8;
            continue;
        }
        let changes = match bytes[i] {
            b'\t' | b'\r' => true,
            b' ' => matches!(bytes.get(i + 1), Some(b' ' | b'\t')),
            _ => false,
        };
        if !changes {
            i += 1;
            continue;
        }
        bytes.copy_within(copied..i, written);
        written += i - copied;
        if bytes[i] == b'\r' {
            i += 1;
            if bytes.get(i) != Some(&b'\n') {
                bytes[written] = b'\r';
                written += 1;
            }
        } else {
            bytes[written] = b' ';
            written += 1;
            while matches!(bytes.get(i), Some(b' ' | b'\t')) {
                i += 1;
            }
        }
        copied = i;
    }
    bytes.copy_within(copied.., written);
    written += bytes.len() - copied;
    bytes.truncate(written);
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The high bit of each byte of `word` that is zero.
fn zero_bytes(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((word & LOW7) + LOW7) | word | LOW7)
}

/// The high bit of each byte of `word` that equals `byte`.
fn bytes_equal(word: u64, byte: u8) -> u64 {
    zero_bytes(word ^ (u64::from(byte) * 0x0101_0101_0101_0101))
}

/// Whether canonicalization leaves the first 8 of these 9 bytes as they are:
/// no tab, no `\r`, no space followed by a space or a tab (the 9th byte is
/// the one after a space in the 8th place). Eight bytes are tested at once.
fn chunk_unchanged(nine: &[u8]) -> bool {
    let mut eight = [0u8; 8];
    eight.copy_from_slice(&nine[..8]);
    let word = u64::from_le_bytes(eight);
    let next = (word >> 8) | (u64::from(nine[8]) << 56);
    let blank_next = bytes_equal(next, b' ') | bytes_equal(next, b'\t');
    (bytes_equal(word, b'\t') | bytes_equal(word, b'\r') | (bytes_equal(word, b' ') & blank_next)) == 0
}

/// Drops the `\r` of each `\r\n`: done even under `--strict-whitespace`.
pub(crate) fn strip_crlf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::canonicalize;

    #[test]
    fn canonicalize_collapses_blanks_and_drops_crlf_carriage_returns() {
        let cases = [
            ("a  b\t\tc\r\nd\re  \t f", "a b c\nd\re f"),
            ("  lead", " lead"),
            ("trail \t", "trail "),
            ("\r\n\r\n", "\n\n"),
            ("\r", "\r"),
            ("é  ü\tß", "é ü ß"),
            ("", ""),
            ("0123456 x\t89abcdef  g h\r\r\n", "0123456 x 89abcdef g h\r\n"),
            ("01234567 \t89abcdef ", "01234567 89abcdef "),
        ];
        for (input, want) in cases {
            assert_eq!(canonicalize(input.to_string()), want, "{input:?}");
        }
    }

    /// Canonicalizing eight bytes at a time gives what one byte at a time
    /// gives, wherever the blanks fall.
    #[test]
    fn canonicalize_matches_a_byte_at_a_time() {
        fn reference(text: &str) -> String {
            let mut out = String::new();
            let mut chars = text.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    ' ' | '\t' => {
                        out.push(' ');
                        while matches!(chars.peek(), Some(' ' | '\t')) {
                            chars.next();
                        }
                    }
                    '\r' if chars.peek() == Some(&'\n') => {}
                    _ => out.push(c),
                }
            }
            out
        }
        let alphabet = [' ', '\t', '\r', '\n', 'a', 'é'];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..2000 {
            let mut text = String::new();
            for _ in 0..(seed % 40) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            assert_eq!(canonicalize(text.clone()), reference(&text), "{text:?}");
        }
    }
}
