//! Numeric substitution blocks: formats (`%u`, `%d`, `%x`, `%X`) and expressions.

use std::collections::HashMap;

/// How a numeric value is written in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    pub(crate) kind: FormatKind,
    /// Minimum number of digits (`%.8x`).
    pub(crate) precision: usize,
    /// `%#x`: the value carries a `0x` prefix.
    pub(crate) alternate: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatKind {
    Unsigned,
    Signed,
    HexLower,
    HexUpper,
}

impl Default for Format {
    fn default() -> Format {
        Format { kind: FormatKind::Unsigned, precision: 0, alternate: false }
    }
}

impl Format {
    /// The format as LLVM names it in messages (`%u`, `%x`...).
    pub(crate) fn spelling(&self) -> &'static str {
        match self.kind {
            FormatKind::Unsigned => "%u",
            FormatKind::Signed => "%d",
            FormatKind::HexLower => "%x",
            FormatKind::HexUpper => "%X",
        }
    }

    /// A regex matching any number written in this format.
    pub(crate) fn wildcard_regex(&self) -> String {
        let digits = match self.kind {
            FormatKind::Unsigned | FormatKind::Signed => "[0-9]",
            FormatKind::HexLower => "[0-9a-f]",
            FormatKind::HexUpper => "[0-9A-F]",
        };
        let sign = if self.kind == FormatKind::Signed { "-?" } else { "" };
        let prefix = if self.alternate { "0x" } else { "" };
        if self.precision > 0 {
            let lead = match self.kind {
                FormatKind::Unsigned | FormatKind::Signed => "[1-9]",
                FormatKind::HexLower => "[1-9a-f]",
                FormatKind::HexUpper => "[1-9A-F]",
            };
            return format!("{sign}{prefix}(?:{lead}{digits}*)?{digits}{{{}}}", self.precision);
        }
        format!("{sign}{prefix}{digits}+")
    }

    /// Writes `value` in this format.
    pub(crate) fn format(&self, value: i128) -> Result<String, String> {
        let magnitude = value.unsigned_abs();
        let digits = match self.kind {
            FormatKind::Unsigned if value < 0 => {
                return Err(format!("unable to represent numeric value {value} in unsigned format"));
            }
            FormatKind::Unsigned | FormatKind::Signed => magnitude.to_string(),
            FormatKind::HexLower => format!("{magnitude:x}"),
            FormatKind::HexUpper => format!("{magnitude:X}"),
        };
        let sign = if value < 0 { "-" } else { "" };
        let prefix = if self.alternate { "0x" } else { "" };
        let zeros = self.precision.saturating_sub(digits.len());
        Ok(format!("{sign}{prefix}{}{digits}", "0".repeat(zeros)))
    }

    /// Reads a value written in this format (the text matched by [`Self::wildcard_regex`]).
    pub(crate) fn read(&self, text: &str) -> Result<i128, String> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let rest = if self.alternate { rest.strip_prefix("0x").unwrap_or(rest) } else { rest };
        let radix = match self.kind {
            FormatKind::Unsigned | FormatKind::Signed => 10,
            FormatKind::HexLower | FormatKind::HexUpper => 16,
        };
        let magnitude = i128::from_str_radix(rest, radix)
            .map_err(|_| format!("unable to represent numeric value '{text}'"))?;
        Ok(if negative { -magnitude } else { magnitude })
    }
}

/// The value of a numeric variable and the format it was matched with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NumericValue {
    pub(crate) value: i128,
    pub(crate) format: Format,
}

/// A numeric expression: `N`, `N+1`, `add(A,B)`, `@LINE-2`, `0x10`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    Literal(i128),
    /// A variable use and its byte offset in the check-file line, for diagnostics.
    Var { name: String, offset: usize },
    /// `span` is where the expression is written (absolute offsets), for
    /// format-conflict messages.
    Binary { op: BinOp, lhs: Box<Expr>, rhs: Box<Expr>, span: (usize, usize) },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EvalError {
    Undefined { name: String, offset: usize },
    Overflow,
}

impl Expr {
    /// Evaluates the expression; the format is that of the first variable
    /// with one (the implicit format), or `None` when only literals are used.
    pub(crate) fn eval(&self, vars: &HashMap<String, NumericValue>) -> Result<(i128, Option<Format>), EvalError> {
        match self {
            Expr::Literal(value) => Ok((*value, None)),
            Expr::Var { name, offset } => vars
                .get(name)
                .map(|v| (v.value, Some(v.format)))
                .ok_or_else(|| EvalError::Undefined { name: name.clone(), offset: *offset }),
            Expr::Binary { op, lhs, rhs, .. } => {
                let (a, fa) = lhs.eval(vars)?;
                let (b, fb) = rhs.eval(vars)?;
                let value = match op {
                    BinOp::Add => a.checked_add(b),
                    BinOp::Sub => a.checked_sub(b),
                    BinOp::Mul => a.checked_mul(b),
                    BinOp::Div => a.checked_div(b),
                    BinOp::Max => Some(a.max(b)),
                    BinOp::Min => Some(a.min(b)),
                }
                .ok_or(EvalError::Overflow)?;
                Ok((value, fa.or(fb)))
            }
        }
    }

    /// Every variable the expression reads, with its offset.
    pub(crate) fn vars(&self, out: &mut Vec<(String, usize)>) {
        match self {
            Expr::Literal(_) => {}
            Expr::Var { name, offset } => out.push((name.clone(), *offset)),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.vars(out);
                rhs.vars(out);
            }
        }
    }
}

/// A parse error and the byte offset (relative to the parsed text) it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExprError {
    pub(crate) offset: usize,
    pub(crate) message: String,
}

/// Parses an expression. `base` is added to every recorded offset; `line` is
/// the value of `@LINE`. `maybe_constraint` says the text followed no `==`,
/// so a bad first operand may be a bad matching constraint.
/// `legacy` is the `[[@LINE+N]]` spelling: `@LINE`, then at most one
/// operation with a decimal literal.
pub(crate) fn parse_expr(text: &str, base: usize, line: usize, maybe_constraint: bool, legacy: bool) -> Result<Expr, ExprError> {
    let mut parser = ExprParser { text, pos: 0, base, line, maybe_constraint, legacy };
    let expr = parser.sum(&[])?;
    Ok(expr)
}

struct ExprParser<'a> {
    text: &'a str,
    pos: usize,
    base: usize,
    line: usize,
    /// Whether a bad operand here may be a misspelled `==` constraint.
    maybe_constraint: bool,
    /// The `[[@LINE+N]]` spelling.
    legacy: bool,
}

/// The length of the variable name at the start of `text` (with its `$` or
/// `@`), if one starts there.
fn variable_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let skip = usize::from(matches!(bytes.first(), Some(b'$' | b'@')));
    let first = *bytes.get(skip)?;
    if !(first == b'_' || first.is_ascii_alphabetic()) {
        return None;
    }
    Some(skip + bytes[skip..].iter().take_while(|b| **b == b'_' || b.is_ascii_alphanumeric()).count())
}

/// Reads an unsigned integer at the start of `text` as LLVM does, the radix
/// sensed from its prefix (`0x` hex, `0b` binary, `0o` or a leading `0`
/// octal); returns the value and the bytes read.
fn integer_prefix(text: &str) -> Option<(i128, usize)> {
    let lower = text.get(..2).map(str::to_ascii_lowercase);
    let (radix, skip) = match lower.as_deref() {
        Some("0x") => (16, 2),
        Some("0b") => (2, 2),
        Some("0o") => (8, 2),
        _ if text.starts_with('0') && text[1..].starts_with(|c: char| c.is_ascii_digit()) => (8, 1),
        _ => (10, 0),
    };
    let digits = text[skip..].chars().take_while(|c| c.is_digit(radix)).count();
    if digits == 0 {
        return None;
    }
    let value = i128::from_str_radix(&text[skip..skip + digits], radix).ok()?;
    Some((value, skip + digits))
}

impl ExprParser<'_> {
    fn error(&self, message: String) -> ExprError {
        ExprError { offset: self.base + self.pos, message }
    }

    fn skip_ws(&mut self) {
        while self.text[self.pos..].starts_with([' ', '\t']) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.skip_ws();
        if self.text[self.pos..].starts_with(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Parses operands joined by `+`/`-` until the end or one of `stops`.
    fn sum(&mut self, stops: &[char]) -> Result<Expr, ExprError> {
        let start = self.base + self.pos;
        let mut lhs = self.operand()?;
        self.maybe_constraint = false;
        loop {
            self.skip_ws();
            let Some(c) = self.text[self.pos..].chars().next() else { return Ok(lhs) };
            if stops.contains(&c) {
                return Ok(lhs);
            }
            let op = match c {
                '+' => BinOp::Add,
                '-' => BinOp::Sub,
                _ => return Err(self.error(format!("unsupported operation '{c}'"))),
            };
            self.pos += 1;
            self.skip_ws();
            if self.pos == self.text.len() {
                return Err(self.error("missing operand in expression".to_string()));
            }
            let rhs = if self.legacy { self.legacy_literal()? } else { self.operand()? };
            let end = self.base + self.pos;
            lhs = Expr::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs), span: (start, end) };
            if self.legacy && self.pos < self.text.len() {
                let rest = &self.text[self.pos..];
                return Err(self.error(format!("unexpected characters at end of expression '{rest}'")));
            }
        }
    }

    /// The decimal literal after the operator of `[[@LINE+N]]`.
    fn legacy_literal(&mut self) -> Result<Expr, ExprError> {
        let rest = &self.text[self.pos..];
        let negative = rest.starts_with('-');
        let digits = rest[usize::from(negative)..].bytes().take_while(u8::is_ascii_digit).count();
        let value: i128 = rest[usize::from(negative)..usize::from(negative) + digits]
            .parse()
            .map_err(|_| self.error("invalid operand format".to_string()))?;
        self.pos += usize::from(negative) + digits;
        Ok(Expr::Literal(if negative { -value } else { value }))
    }

    fn operand(&mut self) -> Result<Expr, ExprError> {
        self.skip_ws();
        let rest = &self.text[self.pos..];
        if rest.starts_with('(') {
            self.maybe_constraint = false;
            self.pos += 1;
            self.skip_ws();
            if self.pos == self.text.len() {
                return Err(self.error("missing operand in expression".to_string()));
            }
            let inner = self.sum(&[')'])?;
            if !self.eat(')') {
                return Err(self.error("missing ')' at end of nested expression".to_string()));
            }
            return Ok(inner);
        }
        let offset = self.base + self.pos;
        if let Some(len) = variable_len(rest) {
            let name = &rest[..len];
            if name.starts_with('@') && name != "@LINE" {
                return Err(ExprError { offset, message: format!("invalid pseudo numeric variable '{name}'") });
            }
            self.pos += len;
            if name == "@LINE" {
                return Ok(Expr::Literal(self.line as i128));
            }
            self.skip_ws();
            if self.text[self.pos..].starts_with('(') {
                return self.call(name, offset);
            }
            return Ok(Expr::Var { name: name.to_string(), offset });
        }
        let negative = rest.starts_with('-');
        match integer_prefix(&rest[usize::from(negative)..]) {
            Some((value, len)) => {
                self.pos += usize::from(negative) + len;
                Ok(Expr::Literal(if negative { -value } else { value }))
            }
            None => {
                let what = if self.maybe_constraint { "matching constraint or " } else { "" };
                Err(ExprError { offset, message: format!("invalid {what}operand format") })
            }
        }
    }

    fn call(&mut self, name: &str, offset: usize) -> Result<Expr, ExprError> {
        let op = match name {
            "add" => BinOp::Add,
            "sub" => BinOp::Sub,
            "mul" => BinOp::Mul,
            "div" => BinOp::Div,
            "max" => BinOp::Max,
            "min" => BinOp::Min,
            _ => {
                return Err(ExprError { offset, message: format!("call to undefined function '{name}'") });
            }
        };
        self.eat('(');
        self.skip_ws();
        let mut args = Vec::new();
        while self.pos < self.text.len() && !self.text[self.pos..].starts_with(')') {
            if self.text[self.pos..].starts_with(',') {
                return Err(self.error("missing argument".to_string()));
            }
            args.push(self.sum(&[',', ')'])?);
            self.skip_ws();
            if !self.eat(',') {
                break;
            }
            self.skip_ws();
            if self.text[self.pos..].starts_with(')') {
                return Err(self.error("missing argument".to_string()));
            }
        }
        if !self.eat(')') {
            return Err(self.error("missing ')' at end of call expression".to_string()));
        }
        if args.len() != 2 {
            return Err(ExprError { offset, message: format!("function '{name}' takes 2 arguments but {} given", args.len()) });
        }
        let rhs = args.pop().map(Box::new);
        let lhs = args.pop().map(Box::new);
        match (lhs, rhs) {
            (Some(lhs), Some(rhs)) => Ok(Expr::Binary { op, lhs, rhs, span: (offset, self.base + self.pos) }),
            _ => Err(ExprError { offset, message: format!("function '{name}' takes 2 arguments") }),
        }
    }
}
