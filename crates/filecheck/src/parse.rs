//! Reads a check file into check strings: each positive directive with the
//! `CHECK-NOT`/`CHECK-DAG` directives that precede it.

use std::collections::HashSet;

use regex::Regex;

use crate::color::Paint;
use crate::config::Config;
use crate::error::FileCheckError;

use crate::pattern::{Names, Pattern, PatternError, PatternOptions, Vars};
use crate::source::{self, Diagnostic, FileId, SourceText, Sources, Span};

/// The kind of a directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Plain,
    Next,
    Same,
    Not,
    Dag,
    Label,
    Empty,
    Count(usize),
    /// The implicit check at the end of the input that carries trailing
    /// `CHECK-NOT`/`CHECK-DAG` directives.
    EndOfInput,
}

/// One directive with its compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Directive {
    pub(crate) kind: Kind,
    /// The directive as named in messages: `CHECK-NEXT`, `IMPLICIT-CHECK-NOT`.
    pub(crate) name: String,
    pub(crate) pattern: Pattern,
    /// Where the pattern starts in the check file (or command line).
    pub(crate) span: Span,
}

impl Directive {
    pub(crate) fn count(&self) -> usize {
        if let Kind::Count(n) = self.kind { n } else { 1 }
    }
}

/// A positive directive and the negative and unordered ones before it.
#[derive(Debug, Clone)]
pub(crate) struct CheckString {
    pub(crate) directive: Directive,
    pub(crate) dag_nots: Vec<Directive>,
}

/// A parsed check file, ready to run against inputs.
#[derive(Debug, Clone)]
pub(crate) struct Program {
    pub(crate) checks: Vec<CheckString>,
    pub(crate) sources: Sources,
    /// The check file's buffer in `sources`.
    pub(crate) check_file: FileId,
    /// Variables from `-D`.
    pub(crate) initial_vars: Vars,
    pub(crate) canonicalize: bool,
    pub(crate) enable_var_scope: bool,
    pub(crate) verbose: bool,
    pub(crate) very_verbose: bool,
    /// `--allow-deprecated-dag-overlap`: CHECK-DAG matches of a group may overlap.
    pub(crate) allow_dag_overlap: bool,
    /// Whether diagnostics are collected for an input dump.
    pub(crate) collect_dump: bool,
}

/// Is `b` part of a word, so that a prefix right after it is not a directive?
fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Checks the check prefixes, then the comment prefixes: each must be
/// non-empty, made of ASCII letters, digits, `-` and `_`, and unique.
fn validate_prefixes(checks: &[String], comments: &[String]) -> Result<(), FileCheckError> {
    let mut seen = HashSet::new();
    for (kind, prefixes) in [("check", checks), ("comment", comments)] {
        for prefix in prefixes {
            let problem = if prefix.is_empty() {
                "must not be the empty string".to_string()
            } else if !prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
                format!(
                    "must start with a letter and contain only alphanumeric characters, hyphens, and underscores: '{prefix}'"
                )
            } else if !seen.insert(prefix.as_str()) {
                format!("must be unique among check and comment prefixes: '{prefix}'")
            } else {
                continue;
            };
            return Err(FileCheckError::InvalidConfig(format!("error: supplied {kind} prefix {problem}")));
        }
    }
    Ok(())
}

/// Parses `text` (named `name`) under `config`.
pub(crate) fn parse(text: &str, name: &str, config: &Config) -> Result<Program, FileCheckError> {
    let prefixes = config.check_prefixes();
    validate_prefixes(&prefixes, &config.comment_prefixes)?;
    let initial_vars = crate::defines::parse_defines(&config.defines, Paint::new(config.color))?;
    let canonicalize = !config.strict_whitespace;
    let text = if canonicalize { source::canonicalize(text.to_string()) } else { source::strip_crlf(text) };
    let mut sources = Sources::default();
    let file = sources.add(SourceText::new(name, text));
    let mut parser = Parser {
        sources,
        file,
        config,
        implicit: Vec::new(),
        diagnostics: Vec::new(),
        checks: Vec::new(),
        pending: Vec::new(),
        last_line_end: 0,
        names: Names {
            strings: initial_vars.strings.keys().cloned().collect(),
            numerics: initial_vars.numerics.iter().map(|(k, v)| (k.clone(), v.format)).collect(),
            numeric_uses: HashSet::new(),
        },
    };
    parser.implicit_check_nots();
    parser.pending = parser.implicit.clone();
    let used = parser.scan(&prefixes);
    if !parser.diagnostics.is_empty() {
        return Err(FileCheckError::InvalidCheckFile(source::render(&parser.sources, &parser.diagnostics, Paint::new(config.color))));
    }
    let unused: Vec<String> = prefixes.iter().filter(|p| !used.contains(*p)).cloned().collect();
    // With the default prefix, --implicit-check-not alone is a complete check.
    let implicit_only = used.is_empty() && !config.implicit_check_not.is_empty() && config.prefixes.is_empty();
    if (used.is_empty() && !implicit_only) || (!used.is_empty() && !config.allow_unused_prefixes && !unused.is_empty()) {
        return Err(FileCheckError::NoCheckStrings(if used.is_empty() { prefixes } else { unused }));
    }
    let pending = std::mem::take(&mut parser.pending);
    let check_end = parser.last_line_end;
    // Trailing CHECK-NOT/CHECK-DAG directives hang on an implicit check at
    // the end of the input, which sits at the end of the check file.
    if !pending.is_empty() {
      parser.checks.push(CheckString {
        directive: Directive {
            kind: Kind::EndOfInput,
            name: "implicit EOF".to_string(),
            pattern: Pattern::end_of_input(),
            span: Span::point(parser.file, check_end),
        },
        dag_nots: pending,
      });
    }
    Ok(Program {
        checks: parser.checks,
        sources: parser.sources,
        check_file: parser.file,
        initial_vars,
        canonicalize,
        enable_var_scope: config.enable_var_scope,
        verbose: config.verbose || config.very_verbose,
        very_verbose: config.very_verbose,
        allow_dag_overlap: config.allow_deprecated_dag_overlap,
        collect_dump: config.dump_input != crate::dump::DumpInput::Never,
    })
}

struct Parser<'a> {
    sources: Sources,
    file: FileId,
    config: &'a Config,
    implicit: Vec<Directive>,
    diagnostics: Vec<Diagnostic>,
    checks: Vec<CheckString>,
    /// `CHECK-NOT`/`CHECK-DAG` directives waiting for the next positive one.
    pending: Vec<Directive>,
    /// Variables defined so far (from `-D` and earlier directives).
    names: Names,
    /// Where the line of the last directive (or comment) ends: the place
    /// of the implicit end-of-input check.
    last_line_end: usize,
}

/// A directive recognised after a prefix.
struct Recognised {
    kind: Kind,
    literal: bool,
    /// Bytes after the prefix up to and including the `:`.
    len: usize,
}

impl Parser<'_> {
    fn options(&self, kind: Kind, literal: bool) -> PatternOptions {
        PatternOptions {
            strict_whitespace: self.config.strict_whitespace,
            match_full_lines: self.config.match_full_lines && kind != Kind::Not,
            ignore_case: self.config.ignore_case,
            literal,
        }
    }

    /// Compiles `--implicit-check-not` patterns, each in its own
    /// "command line" buffer as LLVM reports them.
    fn implicit_check_nots(&mut self) {
        const LEAD: &str = "-implicit-check-not='";
        for pattern in &self.config.implicit_check_not {
            let file = self.sources.add(SourceText::new("command line", format!("{LEAD}{pattern}'")));
            match Pattern::parse(pattern, LEAD.len(), 1, self.options(Kind::Not, false), &mut self.names) {
                Ok(compiled) => self.implicit.push(Directive {
                    kind: Kind::Not,
                    name: "IMPLICIT-CHECK-NOT".to_string(),
                    pattern: compiled,
                    span: Span::point(file, LEAD.len()),
                }),
                Err(e) => self.diagnostics.push(Diagnostic::error(Span::point(file, e.offset), e.message)),
            }
        }
    }

    /// Walks the check file directive by directive; returns the check
    /// prefixes that were used.
    fn scan(&mut self, prefixes: &[String]) -> HashSet<String> {
        let mut used = HashSet::new();
        let file = self.file;
        let text = self.sources.get(file).text.clone();
        let mut all: Vec<&String> = prefixes.iter().chain(&self.config.comment_prefixes).collect();
        all.sort_by_key(|p| std::cmp::Reverse(p.len()));
        let alternation = all.iter().map(|p| regex::escape(p)).collect::<Vec<_>>().join("|");
        let Ok(finder) = Regex::new(&alternation) else { return used };
        let mut pos = 0;
        while let Some(found) = finder.find_at(&text, pos) {
            if !self.diagnostics.is_empty() {
                break;
            }
            let (start, end) = (found.start(), found.end());
            pos = end;
            if start > 0 && is_word_byte(text.as_bytes()[start - 1]) {
                continue;
            }
            let prefix = found.as_str();
            let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
            if self.config.comment_prefixes.iter().any(|c| c == prefix) {
                if text[end..].starts_with(':') {
                    pos = line_end;
                    self.last_line_end = line_end;
                }
                continue;
            }
            let recognised = match recognise(&text[end..]) {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(malformed) => {
                    let (at, message) = match malformed {
                        Malformed::Count(offset) => {
                            (end + offset, format!("invalid count in -COUNT specification on prefix '{prefix}'"))
                        }
                        Malformed::NotCombo(offset) => {
                            (end + offset, format!("unsupported -NOT combo on prefix '{prefix}'"))
                        }
                        Malformed::Misspelled(len) => {
                            (start, format!("misspelled directive '{}'", &text[start..end + len]))
                        }
                    };
                    self.diagnostics.push(Diagnostic::error(Span::point(file, at), message));
                    pos = line_end;
                    continue;
                }
            };
            used.insert(prefix.to_string());
            pos = line_end;
            self.last_line_end = line_end;
            self.directive(&text, prefix, start, end + recognised.len, line_end, recognised);
        }
        used
    }

    /// Handles one directive whose prefix starts at `start`, whose pattern
    /// text spans `body..line_end`.
    fn directive(&mut self, text: &str, prefix: &str, start: usize, body: usize, line_end: usize, r: Recognised) {
        let file = self.file;
        let keep_spaces = self.config.strict_whitespace && self.config.match_full_lines;
        let mut pattern_start = body;
        let mut pattern_end = line_end;
        if !keep_spaces {
            let raw = &text[body..line_end];
            pattern_start = body + (raw.len() - raw.trim_start_matches([' ', '\t']).len());
            pattern_end = body + raw.trim_end_matches([' ', '\t']).len().max(pattern_start - body);
        }
        let pattern_text = &text[pattern_start..pattern_end];
        let name = directive_name(prefix, r.kind);
        let error = |at: usize, message: String| Diagnostic::error(Span::point(file, at), message);
        if pattern_text.is_empty() && r.kind != Kind::Empty {
            self.diagnostics.push(error(pattern_start, format!("found empty check string with prefix '{prefix}:'")));
            return;
        }
        if !pattern_text.is_empty() && r.kind == Kind::Empty {
            self.diagnostics
                .push(error(pattern_start, format!("found non-empty check string for empty check with prefix '{prefix}:'")));
            return;
        }
        if matches!(r.kind, Kind::Next | Kind::Same | Kind::Empty) && self.checks.is_empty() {
            let suffix = match r.kind {
                Kind::Next => "NEXT",
                Kind::Same => "SAME",
                _ => "EMPTY",
            };
            self.diagnostics.push(error(start, format!("found '{prefix}-{suffix}' without previous '{prefix}: line")));
            return;
        }
        let line = self.sources.get(file).line_col(start).0;
        let pattern = if r.kind == Kind::Empty {
            Pattern::empty_line()
        } else {
            match Pattern::parse(pattern_text, pattern_start, line, self.options(r.kind, r.literal), &mut self.names) {
                Ok(pattern) => pattern,
                Err(PatternError { offset, message, blank }) => {
                    let mut diagnostic = error(offset, message);
                    diagnostic.blank_after = blank;
                    self.diagnostics.push(diagnostic);
                    return;
                }
            }
        };
        if r.kind == Kind::Label && pattern.has_variables() {
            self.diagnostics.push(error(start, format!("found '{prefix}-LABEL:' with variable definition or use")));
            return;
        }
        let directive = Directive { kind: r.kind, name, pattern, span: Span::point(file, pattern_start) };
        if matches!(r.kind, Kind::Not | Kind::Dag) {
            self.pending.push(directive);
        } else {
            let dag_nots = std::mem::replace(&mut self.pending, self.implicit.clone());
            self.checks.push(CheckString { directive, dag_nots });
        }
    }
}

/// The name of a directive in messages.
fn directive_name(prefix: &str, kind: Kind) -> String {
    let suffix = match kind {
        Kind::Plain | Kind::EndOfInput => "",
        Kind::Next => "-NEXT",
        Kind::Same => "-SAME",
        Kind::Not => "-NOT",
        Kind::Dag => "-DAG",
        Kind::Label => "-LABEL",
        Kind::Empty => "-EMPTY",
        Kind::Count(_) => "-COUNT",
    };
    format!("{prefix}{suffix}")
}

/// Why the text after a prefix is a malformed directive.
enum Malformed {
    /// `-COUNT-` without a valid count; the offset of the bad text.
    Count(usize),
    /// `-NOT` combined with another suffix; the offset after the `-`.
    NotCombo(usize),
    /// `_` where `-` was meant; the length of the directive with its `:`.
    Misspelled(usize),
}

/// Recognises the directive suffix after a prefix (`:`, `-NEXT:`,
/// `-COUNT-3{LITERAL}:` ...): `Ok(None)` when the prefix starts no directive.
fn recognise(rest: &str) -> Result<Option<Recognised>, Malformed> {
    let colon = |after: &str, kind: Kind, used: usize| -> Option<Recognised> {
        if after.starts_with(':') {
            Some(Recognised { kind, literal: false, len: used + 1 })
        } else if after.starts_with("{LITERAL}:") {
            Some(Recognised { kind, literal: true, len: used + 10 })
        } else {
            None
        }
    };
    if let Some(r) = colon(rest, Kind::Plain, 0) {
        return Ok(Some(r));
    }
    let misspelled = rest.starts_with('_');
    let Some(suffix) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('_')) else { return Ok(None) };
    let found = recognise_suffix(suffix, colon)?;
    match found {
        Some(r) if misspelled => Err(Malformed::Misspelled(r.len)),
        other => Ok(other),
    }
}

/// [`recognise`] after the `-` that follows the prefix.
fn recognise_suffix(
    suffix: &str,
    colon: impl Fn(&str, Kind, usize) -> Option<Recognised>,
) -> Result<Option<Recognised>, Malformed> {
    if let Some(after) = suffix.strip_prefix("COUNT-") {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let tail = &after[digits..];
        let count: usize = match after[..digits].parse() {
            Ok(count) if count > 0 && count <= i32::MAX as usize => count,
            _ if digits == 0 => return Err(Malformed::Count(7)),
            _ => return Err(Malformed::Count(7 + digits)),
        };
        if !tail.starts_with(':') && !tail.starts_with('{') {
            return Err(Malformed::Count(7 + digits));
        }
        return Ok(colon(tail, Kind::Count(count), 1 + 6 + digits));
    }
    const COMBOS: [&str; 8] =
        ["DAG-NOT:", "NOT-DAG:", "NEXT-NOT:", "NOT-NEXT:", "SAME-NOT:", "NOT-SAME:", "EMPTY-NOT:", "NOT-EMPTY:"];
    if COMBOS.iter().any(|c| suffix.starts_with(c)) {
        return Err(Malformed::NotCombo(1));
    }
    const NAMED: [(&str, Kind); 6] = [
        ("NEXT", Kind::Next),
        ("SAME", Kind::Same),
        ("NOT", Kind::Not),
        ("DAG", Kind::Dag),
        ("LABEL", Kind::Label),
        ("EMPTY", Kind::Empty),
    ];
    for (word, kind) in NAMED {
        if let Some(after) = suffix.strip_prefix(word) {
            return Ok(colon(after, kind, 1 + word.len()));
        }
    }
    Ok(None)
}
