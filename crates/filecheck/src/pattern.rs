//! One directive's pattern: literal text, `{{regex}}`, `[[VAR:regex]]`, `[[VAR]]`
//! and `[[#...]]` blocks, compiled to a `regex::Regex` when it is matched.

use std::collections::{HashMap, HashSet};

use regex::Regex;

use crate::numeric::{self, Expr, Format, FormatKind, NumericValue};

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
        Pattern { body: Body::EmptyLine, options: PatternOptions::default(), fixed: None, example: String::new(), must: None }
    }

    pub(crate) fn end_of_input() -> Pattern {
        Pattern { body: Body::EndOfInput, options: PatternOptions::default(), fixed: None, example: String::new(), must: None }
    }

    /// Parses `text`, found at byte `base` of the check buffer on line `line`.
    pub(crate) fn parse(text: &str, base: usize, line: usize, options: PatternOptions, names: &mut Names) -> Result<Pattern, PatternError> {
        let pieces = if options.literal {
            vec![Piece::Literal(text.to_string())]
        } else {
            PatternParser {
                names,
                text,
                base,
                line,
                pieces: Vec::new(),
                groups: 0,
                strings_here: HashMap::new(),
                numerics_here: HashSet::new(),
                paren: 1,
                paren_of: HashMap::new(),
            }
                .parse()?
        };
        let dynamic = pieces.iter().any(|p| {
            matches!(p, Piece::StringUse { .. } | Piece::NumericUse { .. } | Piece::NumericDef { constraint: Some(_), .. })
        });
        let skeleton = regex_source(&pieces, &options, &Vars::default(), true).map_err(|e| PatternError {
            offset: e.offset.unwrap_or(base),
            message: e.message,
            blank: false,
        })?;
        let fixed = if dynamic { None } else { Some(compile(&skeleton, base)?) };
        let example = if pieces.iter().all(|p| matches!(p, Piece::Literal(_))) {
            pieces.iter().filter_map(|p| if let Piece::Literal(s) = p { Some(s.as_str()) } else { None }).collect()
        } else {
            example_regex(&skeleton)
        };
        let must = if options.ignore_case {
            None
        } else {
            pieces
                .iter()
                .filter_map(|p| if let Piece::Literal(s) = p { Some(s) } else { None })
                .max_by_key(|s| s.len())
                .cloned()
        };
        Ok(Pattern { body: Body::Pieces(pieces), options, fixed, example, must })
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
        // Substituting first reports undefined variables even where the
        // input could not match.
        let source = match &self.fixed {
            Some(_) => None,
            None => Some(regex_source(pieces, &self.options, vars, false)?),
        };
        if let Some(must) = &self.must
            && !haystack[start.min(haystack.len())..].contains(must.as_str()) {
                return Ok(None);
            }
        let compiled;
        let re = match (&self.fixed, source) {
            (Some(re), _) => re,
            (None, source) => {
                compiled = build_regex(&source.unwrap_or_default()).map_err(|e| MatchError::new(None, regex_message(&e)))?;
                &compiled
            }
        };
        let mut from = start;
        while from <= haystack.len() {
            let Some(caps) = re.captures_at(haystack, from) else { return Ok(None) };
            let Some(whole) = caps.get(0) else { return Ok(None) };
            if let Some(found) = self.accept(pieces, &caps, whole.start(), whole.end(), vars)? {
                return Ok(Some(found));
            }
            from = whole.start() + haystack[whole.start()..].chars().next().map_or(1, char::len_utf8);
        }
        Ok(None)
    }

    /// Checks a regex match against same-pattern back-references and reads
    /// the variables it defines.
    fn accept(&self, pieces: &[Piece], caps: &regex::Captures<'_>, start: usize, end: usize, vars: &Vars) -> Result<Option<Found>, MatchError> {
        let group = |name: &str| caps.name(name).map_or("", |m| m.as_str());
        let mut found = Found::at(start, end);

        for piece in pieces {
            match piece {
                Piece::StringDef { name, group: g, .. } => {
                    found.string_defs.push((name.clone(), group(g).to_string()));
                    if let Some(m) = caps.name(g) {
                        found.captures.push((name.clone(), m.start(), m.end()));
                    }
                }
                Piece::StringBackref { group: g, def_group, .. }
                    if group(g) != group(def_group) => {
                        return Ok(None);
                    }
                Piece::NumericDef { name, format, constraint, group: g, .. } => {
                    let format = match (format, constraint) {
                        (Some(format), _) => *format,
                        (None, Some(expr)) => eval(expr, vars)?.1.unwrap_or_default(),
                        (None, None) => Format::default(),
                    };
                    let value = format.read(group(g)).map_err(|message| MatchError::new(None, message))?;
                    found.numeric_defs.push((name.clone(), NumericValue { value, format }));
                    if let Some(m) = caps.name(g) {
                        found.captures.push((name.clone(), m.start(), m.end()));
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

/// Compiles a regex with room for patterns as long as a check line can be:
/// LLVM sets no size limit, so neither does FileCheck here in practice.
fn build_regex(source: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(source).size_limit(1 << 30).build()
}

fn compile(source: &str, offset: usize) -> Result<Regex, PatternError> {
    build_regex(source).map_err(|e| PatternError { offset, message: format!("invalid regex: {}", regex_message(&e)), blank: false })
}

/// The one-line summary of a `regex` error (its `Display` quotes the regex).
fn regex_message(error: &regex::Error) -> String {
    let text = error.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(|| text.lines().last().unwrap_or("").trim().to_string(), str::to_string)
}

/// Rewrites an LLVM (POSIX extended) regex for the `regex` crate. LLVM
/// matches with REG_NEWLINE, so negated bracket expressions never match a
/// newline; inside brackets `[` is literal unless it opens `[:class:]`, and
/// `&` and `~` are escaped so they are not read as set operations.
fn translate_regex(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + 4);
    let mut chars = source.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => {
                out.push('\\');
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '[' => {
                out.push('[');
                let negated = chars.peek() == Some(&'^');
                if negated {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str("\\]");
                }
                let mut closed = false;
                while let Some(c) = chars.next() {
                    match c {
                        ']' => {
                            closed = true;
                            break;
                        }
                        '\\' => {
                            out.push('\\');
                            if let Some(next) = chars.next() {
                                out.push(next);
                            }
                        }
                        '[' if chars.peek() == Some(&':') => {
                            out.push_str("[:");
                            chars.next();
                            for c in chars.by_ref() {
                                out.push(c);
                                if c == ']' {
                                    break;
                                }
                            }
                        }
                        '[' | '&' | '~' => {
                            out.push('\\');
                            out.push(c);
                        }
                        _ => out.push(c),
                    }
                }
                // An unclosed bracket is left unclosed so that compiling reports it.
                if closed {
                    if negated {
                        out.push_str("\\n");
                    }
                    out.push(']');
                }
            }
            _ => out.push(ch),
        }
    }
    out
}

struct PatternParser<'a> {
    names: &'a mut Names,
    text: &'a str,
    base: usize,
    line: usize,
    pieces: Vec<Piece>,
    groups: usize,
    /// String variables defined earlier in this pattern: name → (group, regex).
    strings_here: HashMap<String, (String, String)>,
    numerics_here: HashSet<String>,
    /// The number of the next capturing group as LLVM counts them (for its
    /// limit on back-references).
    paren: usize,
    /// The group number of each string variable defined in this pattern.
    paren_of: HashMap<String, usize>,
}

/// How many string variables of a pattern can be referred back to in it.
const BACKREF_LIMIT: usize = 9;

/// The capturing groups of a regex: unescaped `(` outside brackets.
fn count_groups(source: &str) -> usize {
    let mut count = 0;
    let mut chars = source.chars();
    let mut in_bracket = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' => in_bracket = true,
            ']' => in_bracket = false,
            '(' if !in_bracket => count += 1,
            _ => {}
        }
    }
    count
}

impl PatternParser<'_> {
    fn error(&self, at: usize, message: impl Into<String>) -> PatternError {
        PatternError { offset: self.base + at, message: message.into(), blank: false }
    }

    /// An error of a numeric block or a variable name (LLVM logs these with
    /// an empty line after them).
    fn value_error(&self, at: usize, message: impl Into<String>) -> PatternError {
        PatternError { blank: true, ..self.error(at, message) }
    }

    fn next_group(&mut self) -> String {
        self.groups += 1;
        format!("fc{}", self.groups)
    }

    fn literal(&mut self, text: &str) {
        if let Some(Piece::Literal(last)) = self.pieces.last_mut() {
            last.push_str(text);
        } else if !text.is_empty() {
            self.pieces.push(Piece::Literal(text.to_string()));
        }
    }

    fn parse(mut self) -> Result<Vec<Piece>, PatternError> {
        let text = self.text;
        let mut pos = 0;
        while pos < text.len() {
            let rest = &text[pos..];
            if let Some(body) = rest.strip_prefix("{{") {
                let Some(end) = body.find("}}") else {
                    return Err(self.error(pos, "found start of regex string with no end '}}'"));
                };
                let source = &body[..end];
                if !source.is_empty() && !source.contains(is_regex_meta) {
                    // A regex without metacharacters is literal text: joining
                    // it to the literals around it gives a longer `must`.
                    self.literal(source);
                    pos += end + 4;
                    continue;
                }
                let translated = translate_regex(source);
                compile(&translated, self.base + pos + 2)?;
                self.paren += usize::from(rest.contains('|')) + count_groups(source);
                self.pieces.push(Piece::Regex(translated));
                pos += end + 4;
            } else if let Some(body) = rest.strip_prefix("[[") {
                let Some(end) = substitution_end(body) else {
                    return Err(self.error(pos, "Invalid substitution block, no ]] found"));
                };
                self.substitution(&body[..end], pos + 2)?;
                pos += end + 4;
            } else {
                let next = [rest.find("{{"), rest.find("[[")].into_iter().flatten().min().unwrap_or(rest.len());
                self.literal(&rest[..next]);
                pos += next;
            }
        }
        Ok(self.pieces)
    }

    /// Reads the variable name that starts `block` (at `at`): its length,
    /// and whether it is a pseudo variable (`@LINE`).
    fn variable_name(&self, block: &str, at: usize) -> Result<(usize, bool), PatternError> {
        let bytes = block.as_bytes();
        let Some(&first) = bytes.first() else { return Err(self.value_error(at, "empty variable name")) };
        let pseudo = first == b'@';
        let skip = usize::from(first == b'$' || pseudo);
        if skip == bytes.len() {
            let kind = if pseudo { "pseudo" } else { "global" };
            return Err(self.value_error(at + skip, format!("empty {kind} variable name")));
        }
        if !(bytes[skip] == b'_' || bytes[skip].is_ascii_alphabetic()) {
            return Err(self.value_error(at, "invalid variable name"));
        }
        let len = skip + bytes[skip..].iter().take_while(|b| **b == b'_' || b.is_ascii_alphanumeric()).count();
        Ok((len, pseudo))
    }

    /// Parses the inside of `[[...]]`, which starts at `at`.
    fn substitution(&mut self, block: &str, at: usize) -> Result<(), PatternError> {
        if let Some(numeric) = block.strip_prefix('#') {
            return self.numeric(numeric, at + 1);
        }
        let name_part = block.split(':').next().unwrap_or("");
        if let Some(space) = name_part.find([' ', '\t']) {
            return Err(self.error(at + space, "unexpected whitespace"));
        }
        let (len, pseudo) = self.variable_name(block, at)?;
        let name = &block[..len];
        let after = &block[len..];
        if block.contains(':') {
            if pseudo || !after.starts_with(':') {
                return Err(self.error(at, "invalid name in string variable definition"));
            }
        } else if pseudo {
            // `[[@LINE+1]]`: the legacy spelling of a numeric expression.
            let expr = numeric::parse_expr(block, self.base + at, self.line, false, true)
                .map_err(|e| PatternError { offset: e.offset, message: e.message, blank: true })?;
            return self.numeric_use(expr, block, at, None);
        } else if !after.is_empty() {
            return Err(self.error(at, "invalid name in string variable use"));
        }
        let numeric = self.numerics_here.contains(name)
            || self.names.numerics.contains_key(name)
            || self.names.numeric_uses.contains(name);
        if block.contains(':') && numeric {
            return Err(self.error(at, format!("numeric variable with name '{name}' already exists")));
        }
        match after.strip_prefix(':') {
            None => {
                if let Some((def_group, regex)) = self.strings_here.get(name).cloned() {
                    if self.paren_of.get(name).is_some_and(|&paren| paren > BACKREF_LIMIT) {
                        return Err(self.error(at, format!("Can't back-reference more than {BACKREF_LIMIT} variables")));
                    }
                    let group = self.next_group();
                    self.pieces.push(Piece::StringBackref { regex, group, def_group });
                } else {
                    self.pieces.push(Piece::StringUse { name: name.to_string(), offset: self.base + at });
                }
            }
            Some(source) => {
                let regex = translate_regex(source);
                compile(&regex, self.base + at + len + 1)?;
                self.paren_of.insert(name.to_string(), self.paren);
                self.names.strings.insert(name.to_string());
                self.paren += 1 + count_groups(source);
                let group = self.next_group();
                self.strings_here.insert(name.to_string(), (group.clone(), regex.clone()));
                self.pieces.push(Piece::StringDef { name: name.to_string(), regex, group });
            }
        }
        Ok(())
    }

    /// Parses `[[#%fmt, NAME: == expr]]` after the `#`, which is at `at`.
    fn numeric(&mut self, block: &str, at: usize) -> Result<(), PatternError> {
        const WS: [char; 2] = [' ', '\t'];
        let mut explicit = None;
        let mut precision = 0;
        let (mut rest, mut rest_at) = (block, at);
        // A comma before any call's parenthesis ends a format specifier.
        let paren = block.find('(').unwrap_or(usize::MAX);
        if let Some(comma) = block.find(',').filter(|&c| c < paren) {
            let spec = &block[..comma];
            let lead = spec.len() - spec.trim_start_matches(WS).len();
            let spec_at = at + lead;
            let spec = spec.trim_matches(WS);
            let Some(after) = spec.strip_prefix('%') else {
                return Err(self.value_error(spec_at, "invalid matching format specification in expression"));
            };
            (explicit, precision) = self.format_spec(after, spec_at + 1)?;
            rest = &block[comma + 1..];
            rest_at = at + comma + 1;
        }
        let (def, expr_text, expr_at) = match rest.find(':') {
            Some(colon) => (Some((&rest[..colon], rest_at)), &rest[colon + 1..], rest_at + colon + 1),
            None => (None, rest, rest_at),
        };
        let mut text = expr_text.trim_start_matches(WS);
        let mut text_at = expr_at + (expr_text.len() - text.len());
        let constraint = text.starts_with("==");
        if constraint {
            let after = text[2..].trim_start_matches(WS);
            text_at += text.len() - after.len();
            text = after;
        }
        let expr = if text.is_empty() {
            if constraint {
                return Err(self.value_error(text_at, "empty numeric expression should not have a constraint"));
            }
            None
        } else {
            let expr = numeric::parse_expr(text.trim_end_matches(WS), self.base + text_at, self.line, !constraint, false)
                .map_err(|e| PatternError { offset: e.offset, message: e.message, blank: true })?;
            Some(expr)
        };
        let format = match (explicit, &expr) {
            (Some(format), _) => format,
            (None, Some(expr)) => self.implicit_format(expr)?.unwrap_or(Format { precision, ..Format::default() }),
            (None, None) => Format { precision, ..Format::default() },
        };
        if let Some((def_text, def_at)) = def {
            let trimmed = def_text.trim_start_matches(WS);
            let name_at = def_at + (def_text.len() - trimmed.len());
            let (len, pseudo) = self.variable_name(trimmed, name_at)?;
            let name = &trimmed[..len];
            if pseudo {
                return Err(self.value_error(name_at, "definition of pseudo numeric variable unsupported"));
            }
            if self.strings_here.contains_key(name) || self.names.strings.contains(name) {
                return Err(self.value_error(name_at, format!("string variable with name '{name}' already exists")));
            }
            let after = trimmed[len..].trim_start_matches(WS);
            if !after.is_empty() {
                let after_at = name_at + (trimmed.len() - after.len());
                return Err(self.value_error(after_at, "unexpected characters after numeric variable name"));
            }
            self.numerics_here.insert(name.to_string());
            self.names.numerics.insert(name.to_string(), format);
            let group = self.next_group();
            self.paren += 1;
            let format = Some(format);
            self.pieces.push(Piece::NumericDef {
                name: name.to_string(),
                format,
                constraint: expr,
                group,
                text: block.to_string(),
                offset: self.base + at,
            });
            return Ok(());
        }
        match expr {
            None => {
                self.pieces.push(Piece::NumericAny(format));
                Ok(())
            }
            Some(expr) => self.numeric_use(expr, block, at, Some(format)),
        }
    }

    /// Parses a format specifier after its `%` (at `at`): the format, if a
    /// conversion letter is given, and the precision.
    fn format_spec(&self, spec: &str, at: usize) -> Result<(Option<Format>, usize), PatternError> {
        let alternate = spec.starts_with('#');
        let mut rest = &spec[usize::from(alternate)..];
        let mut rest_at = at + usize::from(alternate);
        let mut precision = 0;
        if let Some(after) = rest.strip_prefix('.') {
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            precision = match after[..digits].parse() {
                Ok(p) => p,
                Err(_) => return Err(self.value_error(rest_at + 1, "invalid precision in format specifier")),
            };
            rest = &after[digits..];
            rest_at += 1 + digits;
        }
        let mut format = None;
        if let Some(c) = rest.chars().next() {
            let kind = match c {
                'u' => FormatKind::Unsigned,
                'd' => FormatKind::Signed,
                'x' => FormatKind::HexLower,
                'X' => FormatKind::HexUpper,
                _ => return Err(self.value_error(rest_at, "invalid format specifier in expression")),
            };
            format = Some(Format { kind, precision, alternate: alternate && matches!(kind, FormatKind::HexLower | FormatKind::HexUpper) });
            rest = &rest[1..];
            rest_at += 1;
        }
        if alternate && !format.is_some_and(|f| f.alternate) {
            return Err(self.value_error(at, "alternate form only supported for hex values"));
        }
        let after = rest.trim_start_matches([' ', '\t']);
        if !after.is_empty() {
            return Err(self.value_error(rest_at + (rest.len() - after.len()), "invalid matching format specification in expression"));
        }
        Ok((format, precision))
    }

    /// The format an expression takes from its variables; an error when two
    /// operands have different ones.
    fn implicit_format(&self, expr: &Expr) -> Result<Option<Format>, PatternError> {
        match expr {
            Expr::Literal(_) => Ok(None),
            Expr::Var { name, .. } => Ok(Some(self.names.numerics.get(name).copied().unwrap_or_default())),
            Expr::Binary { lhs, rhs, span, .. } => {
                let (left, right) = (self.implicit_format(lhs)?, self.implicit_format(rhs)?);
                match (left, right) {
                    (Some(l), Some(r)) if l != r => Err(PatternError {
                        offset: span.0,
                        message: format!(
                            "implicit format conflict between '{}' ({}) and '{}' ({}), need an explicit format specifier",
                            self.source_of(lhs),
                            l.spelling(),
                            self.source_of(rhs),
                            r.spelling()
                        ),
                        blank: true,
                    }),
                    _ => Ok(left.or(right)),
                }
            }
        }
    }

    /// The text of a variable or operation in the pattern.
    fn source_of(&self, expr: &Expr) -> &str {
        let (start, end) = match expr {
            Expr::Var { name, offset } => (*offset, offset + name.len()),
            Expr::Binary { span, .. } => *span,
            Expr::Literal(_) => return "",
        };
        self.text.get(start - self.base..end - self.base).unwrap_or("").trim_end_matches([' ', '\t'])
    }

    fn numeric_use(&mut self, expr: Expr, text: &str, at: usize, format: Option<Format>) -> Result<(), PatternError> {
        let mut used = Vec::new();
        expr.vars(&mut used);
        self.names.numeric_uses.extend(used.iter().map(|(name, _)| name.clone()));
        if let Some((name, offset)) = used.iter().find(|(name, _)| self.numerics_here.contains(name)) {
            return Err(PatternError {
                offset: *offset,
                message: format!("numeric variable '{name}' defined earlier in the same CHECK directive"),
                blank: true,
            });
        }
        self.pieces.push(Piece::NumericUse { expr, text: text.to_string(), format, offset: self.base + at });
        Ok(())
    }

}

/// Does `c` have a meaning in a regex (POSIX extended, as LLVM reads it)?
fn is_regex_meta(c: char) -> bool {
    matches!(c, '\\' | '.' | '+' | '*' | '?' | '(' | ')' | '|' | '[' | ']' | '{' | '}' | '^' | '$')
}


/// The offset of the `]]` closing a substitution block whose body starts
/// `text`: brackets nest, and a backslash escapes the next character.
fn substitution_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b']' if depth == 0 && bytes.get(i + 1) == Some(&b']') => return Some(i),
            b'\\' => i += 1,
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}
