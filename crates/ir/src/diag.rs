//! Diagnostics: errors, warnings and notes with source locations, rendered like compilers do.

use crate::location::Location;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Remark,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        })
    }
}

/// A message about a place in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub loc: Location,
    pub message: String,
    pub notes: Vec<Diagnostic>,
}

impl Diagnostic {
    pub fn error(loc: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, loc, message: message.into(), notes: Vec::new() }
    }

    pub fn warning(loc: Location, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, loc, message: message.into(), notes: Vec::new() }
    }

    pub fn with_note(mut self, loc: Location, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Diagnostic { severity: Severity::Note, loc, message: message.into(), notes: Vec::new() });
        self
    }

    /// Renders `file:line:col: error: message`, followed by the source line and a caret when the
    /// location points into `source` (a file named `source_name`), and the notes likewise.
    pub fn render(&self, source_name: &str, source: &str) -> String {
        let mut out = String::new();
        self.render_into(&mut out, source_name, source);
        for n in &self.notes {
            n.render_into(&mut out, source_name, source);
        }
        out
    }

    fn render_into(&self, out: &mut String, source_name: &str, source: &str) {
        use std::fmt::Write;
        match self.loc.file_line_col() {
            Some((file, line, col)) => {
                let _ = writeln!(out, "{file}:{line}:{col}: {}: {}", self.severity, self.message);
                if file == source_name {
                    if let Some(text) = source.lines().nth(line.saturating_sub(1) as usize) {
                        let _ = writeln!(out, "{text}");
                        let pad: String = text
                            .chars()
                            .take(col.saturating_sub(1) as usize)
                            .map(|c| if c == '\t' { '\t' } else { ' ' })
                            .collect();
                        let _ = writeln!(out, "{pad}^");
                    }
                }
            }
            None => {
                let _ = writeln!(out, "{}: {}: {}", self.loc, self.severity, self.message);
            }
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.loc.file_line_col() {
            Some((file, line, col)) => write!(f, "{file}:{line}:{col}: {}: {}", self.severity, self.message),
            None => write!(f, "{}: {}", self.severity, self.message),
        }
    }
}

impl std::error::Error for Diagnostic {}

/// One `expected-error` / `expected-warning` / `expected-note` / `expected-remark` comment.
#[derive(Clone, Debug)]
struct Expected {
    severity: Severity,
    line: u32,
    text: String,
    comment_line: u32,
    seen: bool,
}

/// Checks diagnostics against `// expected-error@+1 {{text}}` comments in `source`, as
/// `mlir-opt --verify-diagnostics` does. `line_offset` is added to comment lines (for split input).
/// Returns the list of mismatches (each a rendered message) when they differ.
pub fn check_expected(source_name: &str, source: &str, line_offset: u32, diags: &[Diagnostic]) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let mut expected = parse_expectations(source, line_offset, source_name, &mut problems);
    let mut all: Vec<&Diagnostic> = Vec::new();
    for d in diags {
        all.push(d);
        all.extend(d.notes.iter());
    }
    for d in all {
        let pos = d.loc.file_line_col();
        let hit = expected.iter_mut().find(|e| {
            !e.seen
                && e.severity == d.severity
                && pos.is_some_and(|(f, l, _)| f == source_name && l == e.line)
                && d.message.contains(&e.text)
        });
        match hit {
            Some(e) => e.seen = true,
            None => {
                if d.severity == Severity::Note && !diags.iter().any(|x| std::ptr::eq(x, d)) {
                    // Notes attached to a diagnostic need no expectation of their own.
                    continue;
                }
                problems.push(format!("{}: unexpected {}: {}", loc_text(&d.loc), d.severity, d.message))
            }
        }
    }
    for e in expected.iter().filter(|e| !e.seen) {
        problems.push(format!(
            "{source_name}:{}: error: expected {} \"{}\" was not produced",
            e.comment_line, e.severity, e.text
        ));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

fn loc_text(l: &Location) -> String {
    match l.file_line_col() {
        Some((f, line, col)) => format!("{f}:{line}:{col}"),
        None => l.to_string(),
    }
}

fn parse_expectations(source: &str, line_offset: u32, name: &str, problems: &mut Vec<String>) -> Vec<Expected> {
    let lines: Vec<&str> = source.lines().collect();
    let mut out = Vec::new();
    for (idx, text) in lines.iter().enumerate() {
        let line = idx as u32 + 1;
        for (kw, severity) in [
            ("expected-error", Severity::Error),
            ("expected-warning", Severity::Warning),
            ("expected-note", Severity::Note),
            ("expected-remark", Severity::Remark),
        ] {
            let Some(start) = text.find(kw) else { continue };
            let rest = &text[start + kw.len()..];
            let (target, rest) = match rest.strip_prefix('@') {
                None => (Some(line), rest),
                Some(r) => {
                    let end = r.find(|c: char| c.is_whitespace() || c == '{').unwrap_or(r.len());
                    let spec = &r[..end];
                    let t = match spec {
                        "above" => (1..line).rev().find(|&l| !is_expectation_line(lines[l as usize - 1])),
                        "below" => {
                            ((line + 1)..=lines.len() as u32).find(|&l| !is_expectation_line(lines[l as usize - 1]))
                        }
                        _ => spec
                            .parse::<i64>()
                            .ok()
                            .and_then(|d| u32::try_from(line as i64 + d).ok())
                            .filter(|&l| l >= 1),
                    };
                    (t, &r[end..])
                }
            };
            let Some(target) = target else {
                problems.push(format!("{name}:{}: error: invalid line offset in '{kw}'", line + line_offset));
                continue;
            };
            let rest = rest.trim_start();
            let Some(body) = rest.strip_prefix("{{").and_then(|r| r.rfind("}}").map(|e| &r[..e])) else {
                problems.push(format!("{name}:{}: error: expected '{{{{' message '}}}}' after '{kw}'", line + line_offset));
                continue;
            };
            out.push(Expected {
                severity,
                line: target + line_offset,
                text: body.to_string(),
                comment_line: line + line_offset,
                seen: false,
            });
        }
    }
    out
}

fn is_expectation_line(l: &str) -> bool {
    let t = l.trim_start();
    t.starts_with("//") && t.contains("expected-")
}
