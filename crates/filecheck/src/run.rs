//! Matches a parsed check file against an input, following LLVM's order:
//! CHECK-LABEL blocks first, then each check string with its CHECK-DAG
//! groups and CHECK-NOT ranges inside its block.

use crate::dump::{DumpDiag, MatchKind};
use crate::parse::{CheckString, Directive, Kind, Program};
use crate::pattern::{Found, MatchError, Vars};
use crate::source::{Diagnostic, FileId, SourceText, Sources, Span};

/// What a run produced: whether it passed, every diagnostic in order, and
/// (when the input dump is wanted) what the dump annotates.
pub(crate) struct Outcome {
    pub(crate) passed: bool,
    pub(crate) sources: Sources,
    pub(crate) input: FileId,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) dump: Vec<DumpDiag>,
}

/// How far the fuzzy search for a "possible intended match" looks.
const FUZZY_WINDOW: usize = 4096;

/// The longest pattern (for a full window) the fuzzy search is tried for.
const FUZZY_BUDGET: usize = 2048;

/// Runs `program` over `text` (already canonicalized as the program requires).
pub(crate) fn run(program: &Program, text: String, input_name: &str) -> Outcome {
    let mut sources = program.sources.clone();
    let input = sources.add(SourceText::new(input_name, text));
    let dump = if program.collect_dump { Some(Vec::new()) } else { None };
    let mut runner = Runner { program, sources, input, vars: program.initial_vars.clone(), diagnostics: Vec::new(), dump };
    let passed = runner.run_blocks();
    Outcome { passed, sources: runner.sources, input, diagnostics: runner.diagnostics, dump: runner.dump.unwrap_or_default() }
}

struct Runner<'a> {
    program: &'a Program,
    sources: Sources,
    input: FileId,
    vars: Vars,
    diagnostics: Vec<Diagnostic>,
    /// What the input dump will annotate; `None` when no dump can be printed.
    dump: Option<Vec<DumpDiag>>,
}

/// A matched check string: where its first match starts and its last ends.
#[derive(Clone, Copy)]
struct Matched {
    start: usize,
    end: usize,
}

impl Runner<'_> {
    fn text(&self) -> &str {
        &self.sources.get(self.input).text
    }

    fn input_span(&self, start: usize, end: usize) -> Span {
        Span { file: self.input, start, end }
    }

    /// Splits the input at CHECK-LABEL matches, then checks each block.
    /// A failing block does not stop the following ones.
    fn run_blocks(&mut self) -> bool {
        let checks = &self.program.checks;
        let len = self.text().len();
        let mut passed = true;
        let mut next = 0;
        let mut block_start = 0;
        loop {
            let label = (next..checks.len()).find(|&k| checks[k].directive.kind == Kind::Label);
            let (block_end, last) = match label {
                None => (len, checks.len()),
                Some(label) => match self.check_string(&checks[label], block_start, len, true) {
                    Some(found) => (found.end, label + 1),
                    None => return false,
                },
            };
            if next != 0 && self.program.enable_var_scope {
                self.vars.clear_locals();
            }
            let mut pos = block_start;
            for check in &checks[next..last] {
                match self.check_string(check, pos, block_end, false) {
                    Some(found) => pos = found.end,
                    None => {
                        passed = false;
                        break;
                    }
                }
            }
            next = last;
            if label.is_none() {
                return passed;
            }
            block_start = block_end;
        }
    }

    /// Checks one check string in `start..end`. In label-scan mode only the
    /// directive itself is matched, without its DAG/NOT companions.
    fn check_string(&mut self, check: &CheckString, start: usize, end: usize, label_scan: bool) -> Option<Matched> {
        let mut nots = Vec::new();
        let after_dags = if label_scan { start } else { self.check_dags(check, start, end, &mut nots)? };
        let directive = &check.directive;
        let count = directive.count();
        let mut first = after_dags;
        let mut last_end = after_dags;
        for attempt in 1..=count {
            let found = self.find_or_report(directive, last_end, end, (attempt, count))?;
            self.report_match(directive, &found, (attempt, count));
            if attempt == 1 {
                first = found.start;
            }
            last_end = found.end;
        }
        if !label_scan {
            let wrong_line = match directive.kind {
                Kind::Next | Kind::Empty => self.check_next_line(directive, after_dags, first),
                Kind::Same => self.check_same_line(directive, after_dags, first),
                _ => Some(()),
            };
            if wrong_line.is_none() {
                self.record_wrong_line(directive, first, last_end);
                return None;
            }
            if !self.check_nots(&nots, after_dags, first) {
                return None;
            }
        }
        Some(Matched { start: first, end: last_end })
    }

    /// Matches the CHECK-DAG groups of a check string; CHECK-NOTs between
    /// groups are checked in the gap before the next group. Returns where
    /// the directive itself starts searching; CHECK-NOTs after the last group
    /// are left in `nots`.
    fn check_dags<'c>(&mut self, check: &'c CheckString, start: usize, end: usize, nots: &mut Vec<&'c Directive>) -> Option<usize> {
        let mut group_start = start;
        // Non-overlapping matches of the current group, sorted by position.
        let mut ranges: Vec<Matched> = Vec::new();
        for (index, directive) in check.dag_nots.iter().enumerate() {
            if directive.kind == Kind::Not {
                nots.push(directive);
                continue;
            }
            let mut from = group_start;
            let very_verbose = self.program.very_verbose;
            let found = loop {
                let found = self.find_or_report(directive, from, end, (1, 1))?;
                if very_verbose {
                    self.report_match(directive, &found, (1, 1));
                }
                let after = ranges.iter().position(|r| found.start < r.end);
                match after {
                    Some(i) if ranges[i].start < found.end && !self.program.allow_dag_overlap => {
                        let old = ranges[i];
                        if very_verbose {
                            self.discard(directive, old);
                        }
                        from = old.end;
                    }
                    _ => {
                        ranges.insert(after.unwrap_or(ranges.len()), Matched { start: found.start, end: found.end });
                        break found;
                    }
                }
            };
            if !very_verbose {
                self.report_match(directive, &found, (1, 1));
            }
            let group_ends = check.dag_nots.get(index + 1).is_none_or(|d| d.kind == Kind::Not);
            if group_ends {
                let first = ranges.first().map_or(group_start, |r| r.start);
                if !nots.is_empty() {
                    if !self.check_nots(nots, group_start, first) {
                        return None;
                    }
                    nots.clear();
                }
                group_start = ranges.iter().map(|r| r.end).max().unwrap_or(group_start);
                ranges.clear();
            }
        }
        Some(group_start)
    }

    /// Checks that no CHECK-NOT pattern matches in `start..end`; reports each one that does.
    fn check_nots(&mut self, nots: &[&Directive], start: usize, end: usize) -> bool {
        let mut passed = true;
        for directive in nots {
            match directive.pattern.find(self.text(), start, end, &self.vars) {
                Ok(None) => {
                    if !self.program.very_verbose {
                        continue;
                    }
                    self.record(directive, MatchKind::NoneAndExcluded, start, end, None);
                    self.record_substitutions(directive, MatchKind::NoneAndExcluded, start);
                    if self.dump.is_none() {
                        self.diagnostics.push(Diagnostic::remark(
                            directive.span,
                            format!("{}: excluded string not found in input", directive.name),
                        ));
                        self.diagnostics.push(Diagnostic::note(self.input_span(start, start), "scanning from here"));
                        self.substitution_notes(directive, start);
                    }
                }
                Ok(Some(found)) => {
                    passed = false;
                    self.record(directive, MatchKind::FoundButExcluded, found.start, found.end, None);
                    self.record_substitutions(directive, MatchKind::FoundButExcluded, found.start);
                    self.record_captures(directive, MatchKind::FoundButExcluded, &found);
                    self.diagnostics.push(Diagnostic::error(
                        directive.span,
                        format!("{}: excluded string found in input", directive.name),
                    ));
                    self.diagnostics.push(Diagnostic::note(self.input_span(found.start, found.end), "found here"));
                    self.substitution_notes(directive, found.start);
                    self.capture_notes(&found);
                }
                Err(error) => {
                    passed = false;
                    self.record_invalid(directive, &error, start, end);
                    self.report_match_error(directive, error);
                    self.substitution_notes(directive, start);
                }
            }
        }
        passed
    }

    /// Finds `directive` in `start..end`, recording its variables; reports a failure.
    fn find_or_report(&mut self, directive: &Directive, start: usize, end: usize, attempt: (usize, usize)) -> Option<Found> {
        match directive.pattern.find(self.text(), start, end, &self.vars) {
            Ok(Some(found)) => {
                found.commit(&mut self.vars);
                Some(found)
            }
            Ok(None) => {
                self.report_not_found(directive, start, end, attempt);
                None
            }
            Err(error) => {
                self.record_invalid(directive, &error, start, end);
                self.report_match_error(directive, error);
                self.substitution_notes(directive, start);
                self.fuzzy_note(directive, start, end);
                None
            }
        }
    }

    fn check_next_line(&mut self, directive: &Directive, previous_end: usize, next_start: usize) -> Option<()> {
        let between = &self.text()[previous_end..next_start];
        let newlines = between.matches('\n').count();
        if newlines == 1 {
            return Some(());
        }
        let message = if newlines == 0 {
            format!("{}: is on the same line as previous match", directive.name)
        } else {
            format!("{}: is not on the line after the previous match", directive.name)
        };
        let first_newline = between.find('\n').map(|i| previous_end + i + 1);
        self.diagnostics.push(Diagnostic::error(directive.span, message));
        self.diagnostics.push(Diagnostic::note(self.input_span(next_start, next_start), "'next' match was here"));
        self.diagnostics.push(Diagnostic::note(self.input_span(previous_end, previous_end), "previous match ended here"));
        if let (true, Some(line)) = (newlines > 1, first_newline) {
            self.diagnostics
                .push(Diagnostic::note(self.input_span(line, line), "non-matching line after previous match is here"));
        }
        None
    }

    fn check_same_line(&mut self, directive: &Directive, previous_end: usize, next_start: usize) -> Option<()> {
        if !self.text()[previous_end..next_start].contains('\n') {
            return Some(());
        }
        self.diagnostics.push(Diagnostic::error(
            directive.span,
            format!("{}: is not on the same line as the previous match", directive.name),
        ));
        self.diagnostics.push(Diagnostic::note(self.input_span(next_start, next_start), "'next' match was here"));
        self.diagnostics.push(Diagnostic::note(self.input_span(previous_end, previous_end), "previous match ended here"));
        None
    }

    /// Reports a successful positive match: into the dump when there is
    /// one, as remarks otherwise (with `-v`).
    fn report_match(&mut self, directive: &Directive, found: &Found, attempt: (usize, usize)) {
        if !self.program.verbose || (directive.kind == Kind::EndOfInput && !self.program.very_verbose) {
            return;
        }
        if self.dump.is_some() {
            self.record(directive, MatchKind::FoundAndExpected, found.start, found.end, None);
            self.record_substitutions(directive, MatchKind::FoundAndExpected, found.start);
            self.record_captures(directive, MatchKind::FoundAndExpected, found);
            return;
        }
        let message = format!("{}: expected string found in input{}", directive.name, out_of(attempt));
        self.diagnostics.push(Diagnostic::remark(directive.span, message));
        self.diagnostics.push(Diagnostic::note(self.input_span(found.start, found.end), "found here"));
        self.substitution_notes(directive, found.start);
        self.capture_notes(found);
    }

    fn report_not_found(&mut self, directive: &Directive, start: usize, end: usize, attempt: (usize, usize)) {
        self.record(directive, MatchKind::NoneButExpected, start, end, None);
        self.record_substitutions(directive, MatchKind::NoneButExpected, start);
        let message = format!("{}: expected string not found in input{}", directive.name, out_of(attempt));
        self.diagnostics.push(Diagnostic::error(directive.span, message));
        self.diagnostics.push(Diagnostic::note(self.input_span(start, start), "scanning from here"));
        self.substitution_notes(directive, start);
        self.fuzzy_note(directive, start, end);
    }

    fn fuzzy_note(&mut self, directive: &Directive, start: usize, end: usize) {
        if let Some(best) = fuzzy_match(directive.pattern.example(), &self.text()[start..end]) {
            let at = start + best;
            self.record(directive, MatchKind::Fuzzy, at, at, None);
            self.diagnostics.push(Diagnostic::note(self.input_span(at, at), "possible intended match here"));
        }
    }

    /// Adds one diagnostic to the dump, if a dump is collected.
    fn record(&mut self, directive: &Directive, kind: MatchKind, start: usize, end: usize, note: Option<String>) {
        let Some(dump) = &mut self.dump else { return };
        let file = directive.span.file;
        let place = if file.index() == 0 {
            self.sources.get(file).line_col(directive.span.start).0.to_string()
        } else {
            format!("imp{}", file.index())
        };
        let stem = format!("{}:{place}", abbreviation(directive.kind));
        dump.push(DumpDiag { stem, check: (file.index(), directive.span.start), kind, start, end, note });
    }

    fn record_substitutions(&mut self, directive: &Directive, kind: MatchKind, at: usize) {
        if self.dump.is_none() {
            return;
        }
        for (name, value) in directive.pattern.substitutions(&self.vars) {
            self.record(directive, kind, at, at, Some(substitution_message(&name, &value)));
        }
    }

    fn record_captures(&mut self, directive: &Directive, kind: MatchKind, found: &Found) {
        for (name, start, end) in &found.captures {
            self.record(directive, kind, *start, *end, Some(format!("captured var \"{name}\"")));
        }
    }

    fn capture_notes(&mut self, found: &Found) {
        for (name, start, end) in &found.captures {
            self.diagnostics.push(Diagnostic::note(self.input_span(*start, *end), format!("captured var \"{name}\"")));
        }
    }

    /// Reports a CHECK-DAG match overlapping the earlier match `old` (with `-vv`).
    fn discard(&mut self, directive: &Directive, old: Matched) {
        if let Some(dump) = &mut self.dump {
            let check = (directive.span.file.index(), directive.span.start);
            for diag in dump.iter_mut().rev().take_while(|d| d.check == check) {
                diag.kind = MatchKind::FoundButDiscarded;
            }
        } else {
            self.diagnostics.push(Diagnostic::note(
                self.input_span(old.start, old.end),
                "match discarded, overlaps earlier DAG match here",
            ));
        }
    }

    /// Marks a CHECK-NEXT/SAME/EMPTY match as on the wrong line: with `-v`
    /// its match annotations are re-marked, otherwise one is added.
    fn record_wrong_line(&mut self, directive: &Directive, start: usize, end: usize) {
        if self.program.verbose {
            if let Some(dump) = &mut self.dump {
                let check = (directive.span.file.index(), directive.span.start);
                for diag in dump.iter_mut().rev().take_while(|d| d.check == check) {
                    diag.kind = MatchKind::FoundButWrongLine;
                }
            }
        } else {
            self.record(directive, MatchKind::FoundButWrongLine, start, end, None);
        }
    }

    fn report_match_error(&mut self, directive: &Directive, error: MatchError) {
        for (offset, message) in error.all() {
            let span = offset.map_or(directive.span, |offset| Span::point(directive.span.file, offset));
            self.diagnostics.push(Diagnostic::error(span, message));
        }
    }

    /// Records a pattern that could not be matched (undefined variables,
    /// overflow) in the dump: the search range, then one note per error.
    fn record_invalid(&mut self, directive: &Directive, error: &MatchError, start: usize, end: usize) {
        self.record(directive, MatchKind::NoneForInvalidPattern, start, end, None);
        for (_, message) in error.all() {
            self.record(directive, MatchKind::NoneForInvalidPattern, start, start, Some(message));
        }
        self.record_substitutions(directive, MatchKind::NoneForInvalidPattern, start);
    }

    fn substitution_notes(&mut self, directive: &Directive, at: usize) {
        for (name, value) in directive.pattern.substitutions(&self.vars) {
            self.diagnostics.push(Diagnostic::note(self.input_span(at, at), substitution_message(&name, &value)));
        }
    }
}

/// The dump's short name for a directive kind.
fn abbreviation(kind: Kind) -> &'static str {
    match kind {
        Kind::Plain | Kind::Count(1) => "check",
        Kind::Count(_) => "count",
        Kind::Next => "next",
        Kind::Same => "same",
        Kind::Not => "not",
        Kind::Dag => "dag",
        Kind::Label => "label",
        Kind::Empty => "empty",
        Kind::EndOfInput => "eof",
    }
}

/// `with "NAME" equal to "VALUE"`: the value is shown as is unless it holds
/// a quote or an unprintable character, when it is escaped and said to be.
fn substitution_message(name: &str, value: &str) -> String {
    let needs_escape = value.bytes().any(|b| !(0x20..0x7f).contains(&b) || b == b'"');
    if needs_escape {
        format!("with \"{}\" equal to \"{}\" (escaped value)", escape(name), escape_value(value))
    } else {
        format!("with \"{}\" equal to \"{value}\"", escape(name))
    }
}

/// Escapes as LLVM's `write_escaped`: backslash, quote, tab, newline, and
/// other unprintable bytes as three octal digits.
fn escape_value(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'"' => out.push_str("\\\""),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{:03o}", b)),
        }
    }
    out
}

/// ` (2 out of 3)` for CHECK-COUNT directives.
fn out_of((attempt, count): (usize, usize)) -> String {
    if count > 1 { format!(" ({attempt} out of {count})") } else { String::new() }
}

fn escape(text: &str) -> String {
    escape_value(text)
}

/// The offset in `buffer` of the text most like `example`: edit distance
/// over the same length (cut at a newline), plus a small cost per line
/// skipped. `None` when nothing is close, or the best is where scanning began.
fn fuzzy_match(example: &str, buffer: &str) -> Option<usize> {
    // Like LLVM, give up when the search would be too costly: the work is
    // the window times the pattern length, times the line length.
    if example.is_empty() || FUZZY_WINDOW * FUZZY_BUDGET < buffer.len().min(FUZZY_WINDOW) * example.len() {
        return None;
    }
    let example: Vec<char> = example.chars().collect();
    let mut best: Option<(usize, f64)> = None;
    let mut lines = 0usize;
    for (i, ch) in buffer.char_indices() {
        if i >= FUZZY_WINDOW {
            break;
        }
        if ch == '\n' {
            lines += 1;
        }
        if ch == ' ' || ch == '\t' {
            continue;
        }
        // Only a distance that beats the best so far, and stays under the cut-off, matters:
        // the distance is computed up to that bound and no further.
        let bound = best.map_or(50.0, |(_, q): (usize, f64)| q.min(50.0)) - lines as f64 / 100.0;
        if bound <= 0.0 {
            continue;
        }
        let candidate: Vec<char> = buffer[i..].chars().take(example.len()).take_while(|&c| c != '\n').collect();
        let Some(distance) = edit_distance_below(&example, &candidate, bound.ceil() as usize) else { continue };
        let quality = distance as f64 + lines as f64 / 100.0;
        if best.is_none_or(|(_, q)| quality < q) {
            best = Some((i, quality));
        }
    }
    match best {
        Some((i, quality)) if i != 0 && quality < 50.0 => Some(i),
        _ => None,
    }
}

/// The Levenshtein distance between two character sequences when it is below `limit`, else
/// `None`. Only the diagonal band of width `limit` can hold such a distance, and the search
/// stops as soon as a whole row of the band reaches the limit, so the cost is the shorter
/// sequence times the limit at most, not the product of the lengths.
fn edit_distance_below(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if limit == 0 || a.len().abs_diff(b.len()) >= limit {
        return None;
    }
    // Cells outside the band hold `limit`, which is as good as infinity here.
    let mut previous: Vec<usize> = (0..=b.len()).map(|j| j.min(limit)).collect();
    let mut current = vec![limit; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        let row = i + 1;
        let from = row.saturating_sub(limit - 1).max(1);
        let to = (row + limit - 1).min(b.len());
        current[0] = row.min(limit);
        if from > 1 {
            current[from - 1] = limit;
        }
        let mut row_min = current[0];
        for j in from..=to {
            let substitute = previous[j - 1] + usize::from(*ca != b[j - 1]);
            let cell = substitute.min(previous[j] + 1).min(current[j - 1] + 1).min(limit);
            current[j] = cell;
            row_min = row_min.min(cell);
        }
        if to < b.len() {
            current[to + 1] = limit;
        }
        if row_min >= limit {
            return None;
        }
        std::mem::swap(&mut previous, &mut current);
    }
    let distance = previous[b.len()];
    (distance < limit).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::edit_distance_below;

    /// The plain quadratic Levenshtein distance, the reference of the bounded one.
    fn edit_distance(a: &[char], b: &[char]) -> usize {
        let mut previous: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut current = vec![i + 1; b.len() + 1];
            for (j, cb) in b.iter().enumerate() {
                current[j + 1] = (previous[j] + usize::from(ca != cb)).min(previous[j + 1] + 1).min(current[j] + 1);
            }
            previous = current;
        }
        previous[b.len()]
    }

    #[test]
    fn the_bounded_distance_is_the_distance_below_its_limit() {
        // Strings over a small alphabet, so that they are often close.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for _ in 0..5000 {
            let a: Vec<char> = (0..next(24)).map(|_| (b'a' + next(3) as u8) as char).collect();
            let b: Vec<char> = (0..next(24)).map(|_| (b'a' + next(3) as u8) as char).collect();
            let limit = next(30) as usize;
            let full = edit_distance(&a, &b);
            let bounded = edit_distance_below(&a, &b, limit);
            assert_eq!(bounded, (full < limit).then_some(full), "{a:?} {b:?} limit {limit}");
        }
    }
}
