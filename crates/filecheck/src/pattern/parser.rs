//! Parsing a pattern's text into pieces: literal runs, `{{regex}}` blocks
//! (translated from LLVM's POSIX dialect), and string and numeric
//! substitution blocks, with LLVM's diagnostics for each mistake.

use std::collections::{HashMap, HashSet};

use super::{Names, PatternError, Piece, validate};
use crate::numeric::{self, Expr, Format, FormatKind};

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

/// Parses the text of a (non-literal) pattern, found at byte `base` of its
/// buffer on line `line`, into pieces.
pub(super) fn parse_pieces(names: &mut Names, text: &str, base: usize, line: usize) -> Result<Vec<Piece>, PatternError> {
    PatternParser::new(names, text, base, line).parse()
}

/// Parses a command-line numeric definition, `%fmt,NAME:expr` (the text of
/// `-D#` with its `=` read as `:`), found at byte `base` of its buffer: the
/// variable's name, its format, and the expression of its value.
pub(crate) fn parse_numeric_definition(
    names: &mut Names,
    text: &str,
    base: usize,
) -> Result<(String, Format, Option<Expr>), PatternError> {
    let mut parser = PatternParser::new(names, text, base, 0);
    parser.numeric(text, 0)?;
    match parser.pieces.pop() {
        Some(Piece::NumericDef { name, format, constraint, .. }) => Ok((name, format.unwrap_or_default(), constraint)),
        _ => Err(parser.value_error(0, "invalid variable name")),
    }
}

/// Checks the name of a command-line string definition, found at byte
/// `base` of its buffer: a plain variable name, nothing after it.
pub(crate) fn parse_string_definition_name(name: &str, base: usize) -> Result<(), PatternError> {
    let mut names = Names::default();
    let parser = PatternParser::new(&mut names, name, base, 0);
    let (len, pseudo) = parser.variable_name(name, 0)?;
    if pseudo || len != name.len() {
        return Err(parser.value_error(0, format!("invalid name in string variable definition '{name}'")));
    }
    Ok(())
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

impl<'a> PatternParser<'a> {
    fn new(names: &'a mut Names, text: &'a str, base: usize, line: usize) -> PatternParser<'a> {
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
    }

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
                validate(&translated, self.base + pos + 2)?;
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
                validate(&regex, self.base + at + len + 1)?;
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
            if self.names.numerics.get(name).is_some_and(|previous| *previous != format) {
                let end = def_at + def_text.len();
                return Err(self.value_error(end, "format different from previous variable definition"));
            }
            self.numerics_here.insert(name.to_string());
            self.names.numerics.insert(name.to_string(), format);
            if let Some(expr) = &expr {
                let mut used = Vec::new();
                expr.vars(&mut used);
                self.names.numeric_uses.extend(used.into_iter().map(|(name, _)| name));
            }
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
