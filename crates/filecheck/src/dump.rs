//! The annotated input dump (`--dump-input`): every input line, numbered,
//! with a marker line under it for each match, miss and note of the run,
//! laid out as LLVM's FileCheck lays it out.

use std::fmt::Write as _;

use crate::color::{Color, Paint};
use crate::source::SourceText;

/// When the dump is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum DumpInput {
    /// Never.
    Never,
    /// When a check fails (the default).
    #[default]
    Fail,
    /// After every run.
    Always,
}

/// Which input lines the dump shows (besides their context).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DumpFilter {
    /// Lines where an error annotation starts.
    Error,
    /// Lines where any annotation starts.
    Annotation,
    /// Lines any annotation covers.
    AnnotationFull,
    /// Every line.
    All,
}

/// How one diagnostic relates the pattern to the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MatchKind {
    FoundAndExpected,
    FoundButExcluded,
    FoundButWrongLine,
    FoundButDiscarded,
    FoundErrorNote,
    NoneAndExcluded,
    NoneButExpected,
    NoneForInvalidPattern,
    Fuzzy,
}

impl MatchKind {
    /// The color of the kind's marker lines.
    fn color(self) -> Color {
        match self {
            MatchKind::FoundAndExpected | MatchKind::NoneAndExcluded => Color::Green,
            MatchKind::FoundButDiscarded => Color::Cyan,
            MatchKind::Fuzzy => Color::Magenta,
            MatchKind::FoundButExcluded
            | MatchKind::FoundButWrongLine
            | MatchKind::FoundErrorNote
            | MatchKind::NoneButExpected
            | MatchKind::NoneForInvalidPattern => Color::Red,
        }
    }

    /// The marker character, its default note, and whether it counts as an
    /// error for `--dump-input-filter=error`.
    fn style(self) -> (char, &'static str, bool) {
        match self {
            MatchKind::FoundAndExpected => ('^', "", false),
            MatchKind::FoundButExcluded => ('!', "error: no match expected", true),
            MatchKind::FoundButWrongLine => ('!', "error: match on wrong line", true),
            MatchKind::FoundButDiscarded => ('!', "discard: overlaps earlier match", false),
            MatchKind::FoundErrorNote => ('!', "error: unknown error after match", true),
            MatchKind::NoneAndExcluded => ('X', "", false),
            MatchKind::NoneButExpected => ('X', "error: no match found", true),
            MatchKind::NoneForInvalidPattern => ('X', "error: match failed for invalid pattern", true),
            MatchKind::Fuzzy => ('?', "possible intended match", true),
        }
    }
}

/// One diagnostic as the dump sees it: which directive (by its label stem
/// and the place of its pattern), what happened, where in the input.
#[derive(Debug, Clone)]
pub(crate) struct DumpDiag {
    /// `check:12`, `not:imp1`: the directive's kind and where it is.
    pub(crate) stem: String,
    /// Identifies the directive (the offset of its pattern, per buffer).
    pub(crate) check: (usize, usize),
    pub(crate) kind: MatchKind,
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) note: Option<String>,
}

/// One marker line under one input line.
struct Annotation {
    diag: usize,
    label: String,
    first_line: bool,
    line: usize,
    start_col: usize,
    end_col: usize,
    lead: char,
    note: String,
    is_error: bool,
    color: Color,
    /// Part of a good match for an expected pattern (left unhighlighted
    /// under `-v` with colors).
    good_match: bool,
}

/// How the dump is shown: which lines, how much context, and whether `-v`
/// highlighting and colors are on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    pub(crate) filter: DumpFilter,
    pub(crate) context: usize,
    pub(crate) verbose: bool,
    pub(crate) paint: Paint,
}

/// Renders the dump of `input` (the text as matched) with `diags`.
pub(crate) fn render(input: &SourceText, diags: &[DumpDiag], style: Style) -> String {
    let Style { filter, context, verbose, paint } = style;
    let mut annotations = annotate(input, diags);
    let label_width = annotations.iter().map(|a| a.label.len()).max().unwrap_or(0);
    annotations.sort_by_key(|a| (a.line, a.diag));
    let text = input.text.as_bytes();
    let mut line_count = text.iter().filter(|&&b| b == b'\n').count();
    if text.last() != Some(&b'\n') {
        line_count += 1;
    }
    let number_width = digits(line_count.max(1));
    let width = label_width.max(number_width) + 3;

    let mut out = String::from("Input was:\n<<<<<<\n");
    // LLVM probes whether its stream takes colors by coloring nothing.
    out.push_str(paint.bold());
    out.push_str(paint.reset());
    let mut elided = String::new();
    let mut previous_in_filter = 0usize;
    let mut next_in_filter = 0usize;
    let mut pos = 0usize;
    let mut next = 0usize;
    let mut line = 1usize;
    while pos < text.len() || next < annotations.len() {
        if next_in_filter < line {
            next_in_filter = find_in_filter(filter, line, &annotations[next..]);
        }
        if next_in_filter == line {
            previous_in_filter = line;
        }
        let hidden = (previous_in_filter == 0 || previous_in_filter + context < line)
            && (next_in_filter == usize::MAX || line + context < next_in_filter);
        if !hidden {
            flush_elided(&mut out, &mut elided, width, paint);
        }
        let sink = if hidden { &mut elided } else { &mut out };
        let _ = write!(sink, "{}{line:>width$}: {}", paint.fg(Color::Black), paint.reset());
        // With -v and colors, what no good match covers is highlighted.
        let good: Vec<&Annotation> = if verbose && paint.enabled {
            annotations[next..].iter().take_while(|a| a.line == line).filter(|a| a.good_match).collect()
        } else {
            Vec::new()
        };
        let line_start = pos;
        let mut shown = Vec::new();
        shown.extend_from_slice(paint.bold().as_bytes());
        let highlight = paint.bg(Color::Cyan);
        if verbose {
            shown.extend_from_slice(highlight.as_bytes());
        }
        let mut in_match = false;
        let mut col = 1;
        while pos < text.len() {
            let byte = text[pos];
            pos += 1;
            let was_in_match = in_match;
            in_match = good.iter().any(|a| a.start_col <= col && col < a.end_col);
            if in_match && !was_in_match {
                shown.extend_from_slice(paint.reset().as_bytes());
            } else if was_in_match && !in_match {
                shown.extend_from_slice(highlight.as_bytes());
            }
            col += 1;
            if byte == b'\n' {
                shown.push(b' ');
                break;
            }
            shown.push(byte);
        }
        shown.extend_from_slice(paint.reset().as_bytes());
        sink.push_str(&String::from_utf8_lossy(&shown));
        sink.push('\n');
        let line_width = pos - line_start;
        while next < annotations.len() && annotations[next].line == line {
            let a = &annotations[next];
            let _ = write!(sink, "{}{:<width$}  ", paint.fg(a.color), a.label);
            sink.extend(std::iter::repeat_n(' ', a.start_col - 1));
            sink.push(a.lead);
            let mut col = a.start_col + 1;
            while col < a.end_col && col <= line_width {
                sink.push('~');
                col += 1;
            }
            if !a.note.is_empty() {
                while col <= line_width {
                    sink.push(' ');
                    col += 1;
                }
                sink.push(' ');
                sink.push_str(&a.note);
            }
            sink.push('\n');
            sink.push_str(paint.reset());
            next += 1;
        }
        line += 1;
    }
    flush_elided(&mut out, &mut elided, width, paint);
    out.push_str(">>>>>>\n");
    out
}

/// Prints the lines held back, or an ellipsis when that is shorter.
fn flush_elided(out: &mut String, elided: &mut String, width: usize, paint: Paint) {
    if elided.is_empty() {
        return;
    }
    if elided.matches('\n').count() > 3 {
        for _ in 0..3 {
            let _ = writeln!(out, "{}{:>width$}{}", paint.fg(Color::Black), ".", paint.reset());
        }
    } else {
        out.push_str(elided);
    }
    elided.clear();
}

/// The first line at or after `line` that the filter keeps (`usize::MAX` for none).
fn find_in_filter(filter: DumpFilter, line: usize, rest: &[Annotation]) -> usize {
    if filter == DumpFilter::All {
        return line;
    }
    rest.iter()
        .find(|a| match filter {
            DumpFilter::AnnotationFull => true,
            DumpFilter::Annotation => a.first_line,
            _ => a.first_line && a.is_error,
        })
        .map_or(usize::MAX, |a| a.line)
}

fn digits(mut n: usize) -> usize {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

/// Turns diagnostics into marker lines, one per input line each covers.
fn annotate(input: &SourceText, diags: &[DumpDiag]) -> Vec<Annotation> {
    let mut per_check: std::collections::HashMap<(usize, usize), (usize, usize)> = std::collections::HashMap::new();
    for diag in diags {
        per_check.entry(diag.check).or_default().0 += 1;
    }
    let mut annotations = Vec::new();
    for (index, diag) in diags.iter().enumerate() {
        let counts = per_check.entry(diag.check).or_default();
        let label = if counts.0 > 1 {
            counts.1 += 1;
            format!("{}'{}", diag.stem, counts.1 - 1)
        } else {
            diag.stem.clone()
        };
        let (marker, default_note, is_error) = diag.kind.style();
        let (start_line, start_col) = input.line_col(diag.start);
        let (end_line, end_col) = input.line_col(diag.end);
        let mut lead = marker;
        let mut note = default_note.to_string();
        if let Some(custom) = &diag.note {
            note = custom.clone();
            if diag.start == diag.end {
                lead = ' ';
            }
        }
        if diag.kind == MatchKind::FoundErrorNote {
            note = format!("error: {note}");
        }
        let first = Annotation {
            diag: index,
            label: label.clone(),
            first_line: true,
            line: start_line,
            start_col,
            end_col: if start_line == end_line { (start_col + 1).max(end_col) } else { usize::MAX },
            lead,
            note,
            is_error,
            color: diag.kind.color(),
            good_match: diag.kind == MatchKind::FoundAndExpected,
        };
        annotations.push(first);
        for line in start_line + 1..=end_line {
            if end_col == 1 && line == end_line {
                break;
            }
            annotations.push(Annotation {
                diag: index,
                label: label.clone(),
                first_line: false,
                line,
                start_col: 1,
                end_col: if line == end_line { end_col } else { usize::MAX },
                lead: '~',
                note: String::new(),
                is_error,
                color: diag.kind.color(),
                good_match: diag.kind == MatchKind::FoundAndExpected,
            });
        }
    }
    annotations
}
