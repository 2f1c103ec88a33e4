//! One directive's pattern: literal text, `{{regex}}`, `[[VAR:regex]]`, `[[VAR]]`
//! and `[[#...]]` blocks, compiled to a `regex::Regex` when it is matched.

use std::collections::{HashMap, HashSet};

use regex::Regex;
use regex_automata::{Input, meta};

use crate::numeric::{self, Expr, Format, NumericValue};

mod parser;

pub(crate) use parser::{parse_numeric_definition, parse_string_definition_name};

/// Variables defined so far in a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars {
    pub(crate) strings: HashMap<String, String>,
    pub(crate) numerics: HashMap<String, NumericValue>,
}

impl Vars {
    /// Forgets every variable whose name does not start with `$` (`--enable-var-scope`).
    pub(crate) fn clear_locals(&mut self) {
        self.strings.retain(|name, _| name.starts_with('$'));
        self.numerics.retain(|name, _| name.starts_with('$'));
    }

    fn define(&mut self, found: &Found) {
        for (name, value) in &found.string_defs {
            self.strings.insert(name.clone(), value.clone());
        }
        for (name, value) in &found.numeric_defs {
            self.numerics.insert(name.clone(), *value);
        }
    }
}

/// The variables a check file has defined so far, as parsing sees them:
/// names may not be both string and numeric, and an expression's format
/// comes from its variables' definitions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    pub(crate) strings: HashSet<String>,
    pub(crate) numerics: HashMap<String, Format>,
    /// Names used in numeric expressions before any definition: they are
    /// numeric variables from then on.
    pub(crate) numeric_uses: HashSet<String>,
}

/// How a pattern is to be compiled.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PatternOptions {
    pub(crate) strict_whitespace: bool,
    pub(crate) match_full_lines: bool,
    pub(crate) ignore_case: bool,
    /// `{LITERAL}` directives: no `{{` or `[[` blocks.
    pub(crate) literal: bool,
}

/// A syntax error in a pattern, at a byte offset of the check buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PatternError {
    pub(crate) offset: usize,
    pub(crate) message: String,
    /// Printed with an empty line after it, as LLVM prints its error values.
    pub(crate) blank: bool,
}

#[derive(Debug, Clone)]
enum Piece {
    Literal(String),
    /// A translated `{{regex}}`.
    Regex(String),
    StringDef { name: String, regex: String, group: String },
    StringUse { name: String, offset: usize },
    /// A use of a string variable defined earlier in the same pattern: it is
    /// matched with the definition's regex and compared after the match.
    StringBackref { regex: String, group: String, def_group: String },
    /// `text` and `offset`: the block as written after `[[#`, and where,
    /// for notes and errors about the constraint's substitution.
    NumericDef { name: String, format: Option<Format>, constraint: Option<Expr>, group: String, text: String, offset: usize },
    NumericUse { expr: Expr, text: String, format: Option<Format>, offset: usize },
    NumericAny(Format),
}

/// What a pattern matches.
#[derive(Debug, Clone)]
enum Body {
    Pieces(Vec<Piece>),
    /// CHECK-EMPTY: an empty line.
    EmptyLine,
    /// The end of the input (the implicit check after the last directive).
    EndOfInput,
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    body: Body,
    options: PatternOptions,
    /// The regex when the pattern uses no variables.
    fixed: Option<Regex>,
    /// The text when the pattern is plain text matched as is: it is looked
    /// for with a substring search, no regex is built.
    plain: Option<String>,
    /// Text compared with the input to find a "possible intended match".
    example: String,
    /// The longest literal every match contains: when the input lacks it,
    /// the pattern cannot match and the regex is not run at all. This keeps
    /// a failing search linear even when the regex is too large for the
    /// regex crate's DFA.
    must: Option<String>,
}

/// A successful match: its byte range and the variables it defines.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) start: usize,
    pub(crate) end: usize,
    string_defs: Vec<(String, String)>,
    numeric_defs: Vec<(String, NumericValue)>,
    /// Each defined variable with the input range it was captured from,
    /// in input order.
    pub(crate) captures: Vec<(String, usize, usize)>,
}

impl Found {
    /// Records this match's variable definitions.
    pub(crate) fn commit(&self, vars: &mut Vars) {
        vars.define(self);
    }
}

/// Why a pattern could not even be tried (an undefined variable, an overflow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchError {
    /// Offset in the check buffer, when the error points at a variable.
    pub(crate) offset: Option<usize>,
    pub(crate) message: String,
    /// Further errors found in the same pattern (each undefined variable
    /// is reported).
    pub(crate) others: Vec<(Option<usize>, String)>,
}

impl MatchError {
    pub(crate) fn new(offset: Option<usize>, message: impl Into<String>) -> MatchError {
        MatchError { offset, message: message.into(), others: Vec::new() }
    }

    /// Every error, first one first.
    pub(crate) fn all(&self) -> Vec<(Option<usize>, String)> {
        let mut all = vec![(self.offset, self.message.clone())];
        all.extend(self.others.iter().cloned());
        all
    }
}

impl Pattern {
    pub(crate) fn empty_line() -> Pattern {
        Pattern { body: Body::EmptyLine, options: PatternOptions::default(), fixed: None, plain: None, example: String::new(), must: None }
    }

    pub(crate) fn end_of_input() -> Pattern {
        Pattern { body: Body::EndOfInput, options: PatternOptions::default(), fixed: None, plain: None, example: String::new(), must: None }
    }

    /// Parses `text`, found at byte `base` of the check buffer on line `line`.
    pub(crate) fn parse(text: &str, base: usize, line: usize, options: PatternOptions, names: &mut Names) -> Result<Pattern, PatternError> {
        let pieces = if options.literal {
            vec![Piece::Literal(text.to_string())]
        } else {
            parser::parse_pieces(names, text, base, line)?
        };
        let dynamic = pieces.iter().any(|p| {
            matches!(p, Piece::StringUse { .. } | Piece::NumericUse { .. } | Piece::NumericDef { constraint: Some(_), .. })
        });
        let skeleton = regex_source(&pieces, &options, &Vars::default(), true).map_err(|e| PatternError {
            offset: e.offset.unwrap_or(base),
            message: e.message,
            blank: false,
        })?;
        let all_literal = pieces.iter().all(|p| matches!(p, Piece::Literal(_)));
        let literal_text = || pieces.iter().filter_map(|p| if let Piece::Literal(s) = p { Some(s.as_str()) } else { None }).collect();
        let plain = (all_literal && !options.ignore_case && !options.match_full_lines).then(literal_text);
        let fixed = if dynamic || plain.is_some() { None } else { Some(compile(&skeleton, base)?) };
        let example = if all_literal { literal_text() } else { example_regex(&skeleton) };
        let must = if options.ignore_case {
            None
        } else {
            pieces
                .iter()
                .filter_map(|p| if let Piece::Literal(s) = p { Some(s) } else { None })
                .max_by_key(|s| s.len())
                .cloned()
        };
        Ok(Pattern { body: Body::Pieces(pieces), options, fixed, plain, example, must })
    }

    /// Does the pattern define or use any variable?
    pub(crate) fn has_variables(&self) -> bool {
        match &self.body {
            Body::Pieces(pieces) => pieces.iter().any(|p| !matches!(p, Piece::Literal(_) | Piece::Regex(_))),
            Body::EmptyLine | Body::EndOfInput => false,
        }
    }

    pub(crate) fn example(&self) -> &str {
        &self.example
    }

    /// Finds the first match in `text[start..end]` (the text before `start`
    /// still anchors `^`).
    pub(crate) fn find(&self, text: &str, start: usize, end: usize, vars: &Vars) -> Result<Option<Found>, MatchError> {
        let haystack = &text[..end];
        let pieces = match &self.body {
            Body::EndOfInput => return Ok(Some(Found::at(end, end))),
            Body::EmptyLine => {
                let re = Regex::new(r"(?m)\n$").map_err(|e| MatchError::new(None, e.to_string()))?;
                return Ok(re.find_at(haystack, start).map(|m| Found::at(m.start() + 1, m.end())));
            }
            Body::Pieces(pieces) => pieces,
        };
        if let Some(plain) = &self.plain {
            let from = start.min(haystack.len());
            let at = memchr::memmem::find(&haystack.as_bytes()[from..], plain.as_bytes());
            return Ok(at.map(|at| Found::at(from + at, from + at + plain.len())));
        }
        // Substituting first reports undefined variables even where the
        // input could not match.
        let source = match &self.fixed {
            Some(_) => None,
            None => Some(regex_source(pieces, &self.options, vars, false)?),
        };
        if let Some(must) = &self.must
            && memchr::memmem::find(&haystack.as_bytes()[start.min(haystack.len())..], must.as_bytes()).is_none() {
                return Ok(None);
            }
        let re = match (&self.fixed, source) {
            (Some(re), _) => re,
            (None, source) => {
                let source = source.unwrap_or_default();
                // A pattern built for one search of a short range is built
                // without the engines that pay off only over long texts.
                if end.saturating_sub(start) <= SHORT_RANGE {
                    let re = build_light_regex(&source).map_err(|message| MatchError::new(None, message))?;
                    return self.find_light(&re, pieces, haystack, start, vars);
                }
                &build_regex(&source).map_err(|e| MatchError::new(None, regex_message(&e)))?
            }
        };
        let mut from = start;
        while from <= haystack.len() {
            let Some(caps) = re.captures_at(haystack, from) else { return Ok(None) };
            let Some(whole) = caps.get(0) else { return Ok(None) };
            let group = |name: &str| caps.name(name).map(|m| (m.start(), m.end()));
            if let Some(found) = self.accept(pieces, &group, haystack, whole.start(), whole.end(), vars)? {
                return Ok(Some(found));
            }
            from = next_start(haystack, whole.start());
        }
        Ok(None)
    }

    /// [`Pattern::find`]'s search loop with a light regex.
    fn find_light(&self, re: &meta::Regex, pieces: &[Piece], haystack: &str, start: usize, vars: &Vars) -> Result<Option<Found>, MatchError> {
        let mut caps = re.create_captures();
        let mut from = start;
        while from <= haystack.len() {
            re.search_captures(&Input::new(haystack).range(from..), &mut caps);
            let Some(whole) = caps.get_match() else { return Ok(None) };
            let group = |name: &str| caps.get_group_by_name(name).map(|span| (span.start, span.end));
            if let Some(found) = self.accept(pieces, &group, haystack, whole.start(), whole.end(), vars)? {
                return Ok(Some(found));
            }
            from = next_start(haystack, whole.start());
        }
        Ok(None)
    }

    /// Checks a regex match against same-pattern back-references and reads
    /// the variables it defines; `group` gives where each named group matched.
    fn accept(
        &self,
        pieces: &[Piece],
        group: &dyn Fn(&str) -> Option<(usize, usize)>,
        haystack: &str,
        start: usize,
        end: usize,
        vars: &Vars,
    ) -> Result<Option<Found>, MatchError> {
        let text = |name: &str| group(name).map_or("", |(s, e)| &haystack[s..e]);
        let mut found = Found::at(start, end);

        for piece in pieces {
            match piece {
                Piece::StringDef { name, group: g, .. } => {
                    found.string_defs.push((name.clone(), text(g).to_string()));
                    if let Some((s, e)) = group(g) {
                        found.captures.push((name.clone(), s, e));
                    }
                }
                Piece::StringBackref { group: g, def_group, .. }
                    if text(g) != text(def_group) => {
                        return Ok(None);
                    }
                Piece::NumericDef { name, format, constraint, group: g, .. } => {
                    let format = match (format, constraint) {
                        (Some(format), _) => *format,
                        (None, Some(expr)) => eval(expr, vars)?.1.unwrap_or_default(),
                        (None, None) => Format::default(),
                    };
                    let value = format.read(text(g)).map_err(|message| MatchError::new(None, message))?;
                    found.numeric_defs.push((name.clone(), NumericValue { value, format }));
                    if let Some((s, e)) = group(g) {
                        found.captures.push((name.clone(), s, e));
                    }
                }
                _ => {}
            }
        }
        found.captures.sort_by_key(|c| c.1);
        Ok(Some(found))
    }

    /// The values substituted into this pattern, as `(expression, value)`
    /// pairs, for the "with X equal to Y" notes.
    pub(crate) fn substitutions(&self, vars: &Vars) -> Vec<(String, String)> {
        let Body::Pieces(pieces) = &self.body else { return Vec::new() };
        let mut out = Vec::new();
        for piece in pieces {
            match piece {
                Piece::StringUse { name, .. } => {
                    if let Some(value) = vars.strings.get(name) {
                        out.push((name.clone(), value.clone()));
                    }
                }
                Piece::NumericUse { expr, text, format, .. }
                | Piece::NumericDef { constraint: Some(expr), text, format, .. } => {
                    if let Ok((value, implicit)) = expr.eval(&vars.numerics)
                        && let Ok(shown) = format.or(implicit).unwrap_or_default().format(value) {
                            out.push((text.clone(), shown));
                        }
                }
                _ => {}
            }
        }
        out
    }
}

impl Found {
    fn at(start: usize, end: usize) -> Found {
        Found { start, end, string_defs: Vec::new(), numeric_defs: Vec::new(), captures: Vec::new() }
    }
}

/// Where the search goes on after a match at `at` that was not accepted:
/// the next character.
fn next_start(haystack: &str, at: usize) -> usize {
    at + haystack[at..].chars().next().map_or(1, char::len_utf8)
}

fn eval(expr: &Expr, vars: &Vars) -> Result<(i128, Option<Format>), MatchError> {
    expr.eval(&vars.numerics).map_err(|e| match e {
        numeric::EvalError::Undefined { name, offset } => {
            MatchError::new(Some(offset), format!("undefined variable: {name}"))
        }
        numeric::EvalError::Overflow => MatchError::new(None, "unable to represent numeric value".to_string()),
    })
}

/// The text a numeric expression stands for: its value in its format. The
/// errors are each undefined variable, or an overflow (a value its format
/// cannot show, a division by zero) reported at the block at `offset`.
fn substitute(expr: &Expr, format: Option<Format>, vars: &Vars, offset: usize) -> Result<String, Vec<MatchError>> {
    let mut used = Vec::new();
    expr.vars(&mut used);
    let undefined: Vec<MatchError> = used
        .into_iter()
        .filter(|(name, _)| !vars.numerics.contains_key(name))
        .map(|(name, at)| MatchError::new(Some(at), format!("undefined variable: {name}")))
        .collect();
    if !undefined.is_empty() {
        return Err(undefined);
    }
    let overflow = || vec![MatchError::new(Some(offset), "unable to substitute variable or numeric expression: overflow error")];
    let (value, implicit) = eval(expr, vars).map_err(|_| overflow())?;
    format.or(implicit).unwrap_or_default().format(value).map_err(|_| overflow())
}

/// Builds the regex for `pieces` with the current variable values
/// substituted. With `skeleton`, uses are left empty (used to validate and
/// to compile patterns without uses).
fn regex_source(pieces: &[Piece], options: &PatternOptions, vars: &Vars, skeleton: bool) -> Result<String, MatchError> {
    let mut errors: Vec<MatchError> = Vec::new();
    let mut re = String::from("(?m)");
    if options.ignore_case {
        re.push_str("(?i)");
    }
    let padding = if options.strict_whitespace { "" } else { "[ \t]*" };
    if options.match_full_lines {
        re.push('^');
        re.push_str(padding);
    }
    for piece in pieces {
        match piece {
            Piece::Literal(text) => re.push_str(&regex::escape(text)),
            Piece::Regex(source) => {
                re.push_str("(?:");
                re.push_str(source);
                re.push(')');
            }
            Piece::StringDef { regex, group, .. } => re.push_str(&format!("(?P<{group}>{regex})")),
            Piece::StringBackref { regex, group, .. } => re.push_str(&format!("(?P<{group}>{regex})")),
            Piece::StringUse { name, offset } => {
                if !skeleton {
                    match vars.strings.get(name) {
                        Some(value) => re.push_str(&regex::escape(value)),
                        None => errors.push(MatchError::new(Some(*offset), format!("undefined variable: {name}"))),
                    }
                }
            }
            Piece::NumericUse { expr, format, offset, .. } => {
                if !skeleton {
                    match substitute(expr, *format, vars, *offset) {
                        Ok(text) => re.push_str(&regex::escape(&text)),
                        Err(found) => errors.extend(found),
                    }
                }
            }
            Piece::NumericDef { format, constraint, group, offset, .. } => {
                let inner = match constraint {
                    Some(expr) if !skeleton => match substitute(expr, *format, vars, *offset) {
                        Ok(text) => regex::escape(&text),
                        Err(found) => {
                            errors.extend(found);
                            continue;
                        }
                    },
                    _ => format.unwrap_or_default().wildcard_regex(),
                };
                re.push_str(&format!("(?P<{group}>{inner})"));
            }
            Piece::NumericAny(format) => {
                re.push_str("(?:");
                re.push_str(&format.wildcard_regex());
                re.push(')');
            }
        }
    }
    if options.match_full_lines {
        re.push_str(padding);
        re.push('$');
    }
    if !errors.is_empty() {
        let mut first = errors.remove(0);
        first.others = errors.into_iter().map(|e| (e.offset, e.message)).collect();
        return Err(first);
    }
    Ok(re)
}

/// The regex as LLVM would spell it, for the fuzzy search: without flags,
/// with plain groups.
fn example_regex(skeleton: &str) -> String {
    let text = skeleton.trim_start_matches("(?m)").trim_start_matches("(?i)").replace("(?:", "(");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("(?P<") {
        out.push_str(&rest[..=at]);
        rest = rest[at..].find('>').map_or("", |end| &rest[at + end + 1..]);
    }
    out.push_str(rest);
    out
}

/// The longest range searched with a light regex (see [`build_light_regex`]).
const SHORT_RANGE: usize = 1 << 16;

/// Builds a regex for one search of a short range: no lazy DFA (whose
/// states would be built for this search alone), no one-pass DFA; the
/// bounded backtracker or the PikeVM runs the search.
/// An error is given as its one-line summary.
fn build_light_regex(source: &str) -> Result<meta::Regex, String> {
    let config = meta::Config::new().nfa_size_limit(Some(1 << 30)).hybrid(false).dfa(false).onepass(false);
    meta::Regex::builder().configure(config).build(source).map_err(|e| error_summary(&e.to_string()))
}

/// Compiles a regex with room for patterns as long as a check line can be:
/// LLVM sets no size limit, so neither does FileCheck here in practice.
fn build_regex(source: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(source).size_limit(1 << 30).build()
}

fn compile(source: &str, offset: usize) -> Result<Regex, PatternError> {
    build_regex(source).map_err(|e| invalid_regex(offset, &e.to_string()))
}

/// Checks that a regex block is valid: only its parse, which reports every
/// syntax error a compile would, without building a matcher.
fn validate(source: &str, offset: usize) -> Result<(), PatternError> {
    regex_syntax::Parser::new().parse(source).map(drop).map_err(|e| invalid_regex(offset, &e.to_string()))
}

fn invalid_regex(offset: usize, error: &str) -> PatternError {
    PatternError { offset, message: format!("invalid regex: {}", error_summary(error)), blank: false }
}

/// The one-line summary of a `regex` error (its `Display` quotes the regex).
fn regex_message(error: &regex::Error) -> String {
    error_summary(&error.to_string())
}

/// The `error:` line of a regex error's text.
fn error_summary(text: &str) -> String {
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| text.lines().last().unwrap_or("").trim().to_string(), str::to_string)
}
