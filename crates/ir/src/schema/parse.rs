//! The schema parser: a hand-written recursive-descent parser over the characters of one line.
//! One file because it is one grammar: its productions call each other and share one cursor.

use super::{
    AliasInfo, Argument, DefaultValue, FunctionSchema, OpName, Return, SchemaError, SchemaType,
};

/// Nesting deeper than this (types in types, lists in lists) is rejected instead of recursing.
const MAX_DEPTH: usize = 64;

/// Parses one schema, `ns::name.overload(args) -> returns`.
pub fn parse_schema(text: &str) -> Result<FunctionSchema, SchemaError> {
    let mut p = Parser::new(text);
    let schema = p.schema()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.err("unexpected text after the returns"));
    }
    Ok(schema)
}

/// Parses one type without alias annotations, such as `int[2]?` or `Dict(str, Tensor)`.
pub fn parse_type(text: &str) -> Result<SchemaType, SchemaError> {
    let mut p = Parser::new(text);
    p.skip_ws();
    let ty = p.ty()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.err("unexpected text after the type"));
    }
    Ok(ty)
}

/// Parses one default value, such as `[0, 1]`, `-inf`, `"mean"` or `None`.
pub fn parse_default(text: &str) -> Result<DefaultValue, SchemaError> {
    let mut p = Parser::new(text);
    p.skip_ws();
    let value = p.default_value()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(p.err("unexpected text after the default value"));
    }
    Ok(value)
}

pub(super) fn parse_op_name(text: &str) -> Result<OpName, SchemaError> {
    let bad = |message: &str| SchemaError {
        column: 1,
        message: message.to_string(),
    };
    let body = text.strip_prefix("torch.ops.").unwrap_or(text);
    let (namespace, name, overload) = if let Some((ns, rest)) = body.split_once("::") {
        match rest.split_once('.') {
            Some((name, overload)) => (ns, name, overload),
            None => (ns, rest, ""),
        }
    } else {
        let parts: Vec<&str> = body.split('.').collect();
        match parts.as_slice() {
            [ns, name] => (*ns, *name, ""),
            [ns, name, overload] => (*ns, *name, *overload),
            _ => {
                return Err(bad(
                    "expected an op name `namespace.name` or `namespace.name.overload`",
                ));
            }
        }
    };
    let overload = if overload == "default" { "" } else { overload };
    for (part, what) in [(namespace, "namespace"), (name, "name")] {
        if !is_ident(part) {
            return Err(bad(&format!("invalid {what} `{part}` in op name `{text}`")));
        }
    }
    if !overload.is_empty() && !is_ident(overload) {
        return Err(bad(&format!(
            "invalid overload `{overload}` in op name `{text}`"
        )));
    }
    Ok(OpName {
        namespace: namespace.to_string(),
        name: name.to_string(),
        overload: overload.to_string(),
    })
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_ident_start) && chars.all(is_ident_char)
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Where an alias annotation stood in a type's suffix chain: after `slot` suffixes.
struct Annotation {
    slot: usize,
    column: usize,
    info: AliasInfo,
}

#[derive(Clone, Copy, PartialEq)]
enum Suffix {
    List(Option<usize>),
    Optional,
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

type PResult<T> = Result<T, SchemaError>;

impl Parser {
    fn new(text: &str) -> Parser {
        Parser {
            chars: text.chars().collect(),
            pos: 0,
            depth: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn looking_at(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn err(&self, message: impl Into<String>) -> SchemaError {
        self.err_at(self.pos, message)
    }

    fn err_at(&self, pos: usize, message: impl Into<String>) -> SchemaError {
        SchemaError {
            column: pos + 1,
            message: message.into(),
        }
    }

    /// A description of the character at the cursor, for error messages.
    fn found(&self) -> String {
        match self.peek() {
            Some(c) => format!("`{c}`"),
            None => "end of input".to_string(),
        }
    }

    fn expect(&mut self, c: char, context: &str) -> PResult<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(format!("expected `{c}` {context}, found {}", self.found())))
        }
    }

    fn ident(&mut self, what: &str) -> PResult<String> {
        match self.peek() {
            Some(c) if is_ident_start(c) => {
                let start = self.pos;
                while self.peek().is_some_and(is_ident_char) {
                    self.pos += 1;
                }
                Ok(self.chars[start..self.pos].iter().collect())
            }
            _ => Err(self.err(format!("expected {what}, found {}", self.found()))),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err(self.err(format!("nesting deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    /// Rejects a type that would nest deeper than [`MAX_DEPTH`] with `extra` more suffixes, so
    /// that printing, comparing and dropping it cannot exhaust the stack.
    fn check_nesting(&self, base: &SchemaType, extra: usize) -> PResult<()> {
        if nesting(base) + extra > MAX_DEPTH {
            Err(self.err(format!("type nested deeper than {MAX_DEPTH} levels")))
        } else {
            Ok(())
        }
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn schema(&mut self) -> PResult<FunctionSchema> {
        self.skip_ws();
        let first = self.ident("an operator name")?;
        let (namespace, name) = if self.looking_at("::") {
            self.pos += 2;
            (first, self.ident("an operator name after `::`")?)
        } else {
            (String::new(), first)
        };
        let overload = if self.peek() == Some('.') {
            self.pos += 1;
            self.ident("an overload name after `.`")?
        } else {
            String::new()
        };
        self.skip_ws();
        self.expect('(', "to open the argument list")?;
        let (args, is_vararg) = self.arguments()?;
        self.skip_ws();
        if !self.looking_at("->") {
            return Err(self.err(format!(
                "expected `->` before the returns, found {}",
                self.found()
            )));
        }
        self.pos += 2;
        self.skip_ws();
        let (returns, is_varret) = self.returns()?;
        Ok(FunctionSchema {
            namespace,
            name,
            overload,
            args,
            returns,
            is_vararg,
            is_varret,
        })
    }

    /// The argument list after `(`, through `)`.
    fn arguments(&mut self) -> PResult<(Vec<Argument>, bool)> {
        let mut args = Vec::new();
        let mut kwarg_only = false;
        let mut is_vararg = false;
        self.skip_ws();
        if self.peek() == Some(')') {
            self.pos += 1;
            return Ok((args, false));
        }
        loop {
            self.skip_ws();
            if is_vararg {
                return Err(self.err("`...` must be the last argument"));
            }
            if self.looking_at("...") {
                self.pos += 3;
                is_vararg = true;
            } else if self.peek() == Some('*') {
                if kwarg_only {
                    return Err(self.err("the kwarg-only marker `*` appears twice"));
                }
                self.pos += 1;
                kwarg_only = true;
                self.skip_ws();
                if self.peek() != Some(',') {
                    return Err(self.err(format!(
                        "expected `,` and an argument after `*`, found {}",
                        self.found()
                    )));
                }
            } else {
                args.push(self.argument(kwarg_only)?);
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    break;
                }
                _ => {
                    return Err(self.err(format!(
                        "expected `,` or `)` after an argument, found {}",
                        self.found()
                    )));
                }
            }
        }
        Ok((args, is_vararg))
    }

    fn argument(&mut self, kwarg_only: bool) -> PResult<Argument> {
        let (ty, alias) = self.annotated_type()?;
        let before_name = self.pos;
        self.skip_ws();
        if self.pos == before_name && self.peek().is_some_and(is_ident_start) {
            return Err(self.err("expected a space between the type and the argument name"));
        }
        let name = self.ident("an argument name")?;
        self.skip_ws();
        let default = if self.peek() == Some('=') {
            self.pos += 1;
            self.skip_ws();
            Some(self.default_value()?)
        } else {
            None
        };
        Ok(Argument {
            name,
            ty,
            default,
            kwarg_only,
            alias,
        })
    }

    fn returns(&mut self) -> PResult<(Vec<Return>, bool)> {
        if self.looking_at("...") {
            self.pos += 3;
            return Ok((Vec::new(), true));
        }
        if self.peek() != Some('(') {
            return Ok((vec![self.return_item()?], false));
        }
        self.pos += 1;
        let mut returns = Vec::new();
        let mut is_varret = false;
        self.skip_ws();
        if self.peek() == Some(')') {
            self.pos += 1;
            return Ok((returns, false));
        }
        loop {
            self.skip_ws();
            if is_varret {
                return Err(self.err("`...` must be the last return"));
            }
            if self.looking_at("...") {
                self.pos += 3;
                is_varret = true;
            } else {
                returns.push(self.return_item()?);
            }
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    break;
                }
                _ => {
                    return Err(self.err(format!(
                        "expected `,` or `)` after a return, found {}",
                        self.found()
                    )));
                }
            }
        }
        Ok((returns, is_varret))
    }

    fn return_item(&mut self) -> PResult<Return> {
        let (ty, alias) = self.annotated_type()?;
        let after_type = self.pos;
        self.skip_ws();
        let name = if self.pos > after_type && self.peek().is_some_and(is_ident_start) {
            Some(self.ident("a return name")?)
        } else {
            self.pos = after_type;
            None
        };
        Ok(Return { name, ty, alias })
    }

    /// A type with alias annotations, as arguments and returns spell it: `Tensor(a!)`,
    /// `Tensor(a)[]`, `t[](a!)`, `t(a)?`, `Dict(str, t)(a!)`.
    fn annotated_type(&mut self) -> PResult<(SchemaType, Option<AliasInfo>)> {
        let base = self.base_type()?;
        let mut suffixes = Vec::new();
        let mut annotations: Vec<Annotation> = Vec::new();
        loop {
            match self.peek() {
                Some('(') => {
                    let column = self.pos;
                    if annotations.last().is_some_and(|a| a.slot == suffixes.len()) {
                        return Err(self.err("two alias annotations in a row"));
                    }
                    let info = self.alias_annotation()?;
                    annotations.push(Annotation {
                        slot: suffixes.len(),
                        column,
                        info,
                    });
                }
                Some('[') | Some('?') => {
                    self.check_nesting(&base, suffixes.len() + 1)?;
                    suffixes.push(self.suffix()?);
                }
                _ => break,
            }
        }
        // The canonical places: before the last list suffix (the elements), and after the
        // type with its trailing `?` removed, or after that `?` (the value itself).
        let n = suffixes.len();
        let optional = suffixes.last() == Some(&Suffix::Optional);
        let core = n - usize::from(optional);
        let list_at_end = core > 0 && matches!(suffixes[core - 1], Suffix::List(_));
        let mut outer: Option<AliasInfo> = None;
        let mut contained: Option<AliasInfo> = None;
        for a in annotations {
            if list_at_end && a.slot == core - 1 {
                contained = Some(a.info);
            } else if a.slot == core || (optional && a.slot == n) {
                if outer.is_some() {
                    return Err(
                        self.err_at(a.column, "a second alias annotation for the same value")
                    );
                }
                outer = Some(a.info);
            } else {
                return Err(self.err_at(
                    a.column,
                    "an alias annotation may only follow the element type of a list or the whole type",
                ));
            }
        }
        let alias = match (outer, contained) {
            (None, None) => None,
            (Some(mut o), c) => {
                o.contained = c.map(Box::new);
                Some(o)
            }
            (None, Some(c)) => Some(AliasInfo {
                contained: Some(Box::new(c)),
                ..AliasInfo::default()
            }),
        };
        Ok((apply_suffixes(base, &suffixes), alias))
    }

    /// `(a)`, `(a!)`, `(a|b)`, `(*)`, `(a -> *)`, `(a! -> a|b)`.
    fn alias_annotation(&mut self) -> PResult<AliasInfo> {
        self.expect('(', "to open an alias annotation")?;
        self.skip_ws();
        let before = self.alias_sets()?;
        self.skip_ws();
        let mut is_write = false;
        if self.peek() == Some('!') {
            self.pos += 1;
            is_write = true;
            self.skip_ws();
        }
        let after = if self.looking_at("->") {
            self.pos += 2;
            self.skip_ws();
            let after = self.alias_sets()?;
            self.skip_ws();
            if self.peek() == Some('!') {
                if is_write {
                    return Err(self.err("the write mark `!` appears twice"));
                }
                self.pos += 1;
                is_write = true;
                self.skip_ws();
            }
            after
        } else {
            before.clone()
        };
        self.expect(')', "to close the alias annotation")?;
        Ok(AliasInfo {
            before,
            after,
            is_write,
            contained: None,
        })
    }

    fn alias_sets(&mut self) -> PResult<Vec<String>> {
        let mut sets = Vec::new();
        loop {
            self.skip_ws();
            if self.peek() == Some('*') {
                self.pos += 1;
                sets.push(AliasInfo::WILDCARD.to_string());
            } else {
                sets.push(self.ident("an alias set name or `*`")?);
            }
            self.skip_ws();
            if self.peek() == Some('|') {
                self.pos += 1;
            } else {
                return Ok(sets);
            }
        }
    }

    /// `[]`, `[N]` or `?`.
    fn suffix(&mut self) -> PResult<Suffix> {
        if self.peek() == Some('?') {
            self.pos += 1;
            return Ok(Suffix::Optional);
        }
        self.expect('[', "to open a list type")?;
        self.skip_ws();
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let size = if self.pos > start {
            let digits: String = self.chars[start..self.pos].iter().collect();
            Some(
                digits
                    .parse::<usize>()
                    .map_err(|_| self.err_at(start, "list size too large"))?,
            )
        } else {
            None
        };
        self.skip_ws();
        self.expect(']', "to close the list type")?;
        Ok(Suffix::List(size))
    }

    /// A type without alias annotations: a base type and its `[]`, `[N]`, `?` suffixes.
    fn ty(&mut self) -> PResult<SchemaType> {
        let base = self.base_type()?;
        let mut suffixes = Vec::new();
        while matches!(self.peek(), Some('[') | Some('?')) {
            self.check_nesting(&base, suffixes.len() + 1)?;
            suffixes.push(self.suffix()?);
        }
        Ok(apply_suffixes(base, &suffixes))
    }

    fn base_type(&mut self) -> PResult<SchemaType> {
        self.enter()?;
        let result = self.base_type_inner();
        self.leave();
        result
    }

    fn base_type_inner(&mut self) -> PResult<SchemaType> {
        if self.peek() == Some('(') {
            self.pos += 1;
            return Ok(SchemaType::Tuple(self.type_list("a tuple type")?));
        }
        let start = self.pos;
        let mut name = self.ident("a type")?;
        if name == "__torch__" {
            while self.peek() == Some('.') {
                self.pos += 1;
                name.push('.');
                name.push_str(&self.ident("a class name after `.`")?);
            }
            return Ok(SchemaType::Class(name));
        }
        let parameterized = matches!(
            name.as_str(),
            "Dict" | "Future" | "Await" | "RRef" | "Union"
        );
        if parameterized {
            self.expect('(', &format!("after `{name}`"))?;
            let params = self.type_list(&format!("`{name}(...)`"))?;
            let want = if name == "Dict" { 2 } else { 1 };
            if params.is_empty() || (name != "Union" && params.len() != want) {
                return Err(self.err_at(
                    start,
                    format!(
                        "`{name}` takes {want} type parameter(s), found {}",
                        params.len()
                    ),
                ));
            }
            let mut params = params.into_iter();
            let mut next = || Box::new(params.next().unwrap_or(SchemaType::Any));
            return Ok(match name.as_str() {
                "Dict" => {
                    let key = next();
                    SchemaType::Dict(key, next())
                }
                "Future" => SchemaType::Future(next()),
                "Await" => SchemaType::Await(next()),
                "RRef" => SchemaType::RRef(next()),
                _ => SchemaType::Union(params.collect()),
            });
        }
        if let Some((_, ty)) = SchemaType::BUILTINS
            .iter()
            .find(|(spelling, _)| *spelling == name)
        {
            return Ok(ty.clone());
        }
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Ok(SchemaType::Var(name));
        }
        Err(self.err_at(start, format!("unknown type `{name}`")))
    }

    /// Comma-separated types after an opening `(`, through the closing `)`.
    fn type_list(&mut self, context: &str) -> PResult<Vec<SchemaType>> {
        let mut types = Vec::new();
        self.skip_ws();
        if self.peek() == Some(')') {
            self.pos += 1;
            return Ok(types);
        }
        loop {
            self.skip_ws();
            types.push(self.ty()?);
            self.skip_ws();
            match self.peek() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(types);
                }
                _ => {
                    return Err(self.err(format!(
                        "expected `,` or `)` in {context}, found {}",
                        self.found()
                    )));
                }
            }
        }
    }

    fn default_value(&mut self) -> PResult<DefaultValue> {
        self.enter()?;
        let result = self.default_value_inner();
        self.leave();
        result
    }

    fn default_value_inner(&mut self) -> PResult<DefaultValue> {
        match self.peek() {
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.peek() == Some(']') {
                    self.pos += 1;
                    return Ok(DefaultValue::List(items));
                }
                loop {
                    self.skip_ws();
                    items.push(self.default_value()?);
                    self.skip_ws();
                    match self.peek() {
                        Some(',') => self.pos += 1,
                        Some(']') => {
                            self.pos += 1;
                            return Ok(DefaultValue::List(items));
                        }
                        _ => {
                            return Err(self.err(format!(
                                "expected `,` or `]` in a list default, found {}",
                                self.found()
                            )));
                        }
                    }
                }
            }
            Some(q @ ('"' | '\'')) => Ok(DefaultValue::Str(self.string(q)?)),
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => self.number(),
            Some(c) if is_ident_start(c) => {
                let word = self.ident("a default value")?;
                Ok(match word.as_str() {
                    "None" => DefaultValue::None,
                    "True" => DefaultValue::Bool(true),
                    "False" => DefaultValue::Bool(false),
                    "inf" => DefaultValue::Float(f64::INFINITY),
                    "nan" => DefaultValue::Float(f64::NAN),
                    _ => DefaultValue::Ident(word),
                })
            }
            _ => Err(self.err(format!("expected a default value, found {}", self.found()))),
        }
    }

    fn number(&mut self) -> PResult<DefaultValue> {
        let start = self.pos;
        let negative = match self.peek() {
            Some('-') => {
                self.pos += 1;
                true
            }
            Some('+') => {
                self.pos += 1;
                false
            }
            _ => false,
        };
        if self.peek().is_some_and(is_ident_start) {
            let word = self.ident("a number")?;
            let value = match word.as_str() {
                "inf" => f64::INFINITY,
                "nan" => f64::NAN,
                _ => return Err(self.err_at(start, format!("invalid number `{word}`"))),
            };
            return Ok(DefaultValue::Float(if negative { -value } else { value }));
        }
        let digits_start = self.pos;
        let mut is_float = false;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.peek() == Some('.') {
            is_float = true;
            self.pos += 1;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        let mantissa_len = self.pos - digits_start - usize::from(is_float);
        if mantissa_len == 0 {
            return Err(self.err_at(start, "expected digits in a number"));
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            is_float = true;
            self.pos += 1;
            if matches!(self.peek(), Some('-' | '+')) {
                self.pos += 1;
            }
            let exp_start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.pos += 1;
            }
            if self.pos == exp_start {
                return Err(self.err("expected digits in the exponent"));
            }
        }
        if self.peek().is_some_and(is_ident_char) {
            return Err(self.err(format!("unexpected {} in a number", self.found())));
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if is_float {
            text.parse::<f64>()
                .map(DefaultValue::Float)
                .map_err(|_| self.err_at(start, format!("invalid number `{text}`")))
        } else {
            text.parse::<i64>()
                .map(DefaultValue::Int)
                .map_err(|_| self.err_at(start, format!("integer `{text}` out of range")))
        }
    }

    fn string(&mut self, quote: char) -> PResult<String> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err_at(start, "unterminated string"));
            };
            self.pos += 1;
            if c == quote {
                return Ok(out);
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let escape_at = self.pos - 1;
            let Some(e) = self.peek() else {
                return Err(self.err_at(start, "unterminated string"));
            };
            self.pos += 1;
            let decoded = match e {
                '\\' | '\'' | '"' | '?' => e,
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                'a' => '\u{7}',
                'b' => '\u{8}',
                'f' => '\u{c}',
                'v' => '\u{b}',
                '0'..='7' => {
                    let mut value = e.to_digit(8).unwrap_or(0);
                    for _ in 0..2 {
                        match self.peek().and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                value = value * 8 + d;
                                self.pos += 1;
                            }
                            None => break,
                        }
                    }
                    char::from_u32(value)
                        .ok_or_else(|| self.err_at(escape_at, "invalid octal escape"))?
                }
                'x' => {
                    let mut value = 0u32;
                    let mut count = 0;
                    while count < 2 {
                        match self.peek().and_then(|d| d.to_digit(16)) {
                            Some(d) => {
                                value = value * 16 + d;
                                self.pos += 1;
                                count += 1;
                            }
                            None => break,
                        }
                    }
                    if count == 0 {
                        return Err(self.err_at(escape_at, "expected hex digits after `\\x`"));
                    }
                    char::from_u32(value)
                        .ok_or_else(|| self.err_at(escape_at, "invalid hex escape"))?
                }
                other => {
                    return Err(self.err_at(escape_at, format!("unknown escape `\\{other}`")));
                }
            };
            out.push(decoded);
        }
    }
}

fn apply_suffixes(base: SchemaType, suffixes: &[Suffix]) -> SchemaType {
    suffixes.iter().fold(base, |ty, s| match s {
        Suffix::List(size) => SchemaType::List {
            elem: Box::new(ty),
            size: *size,
        },
        Suffix::Optional => SchemaType::Optional(Box::new(ty)),
    })
}

/// How deeply a type nests (`int` is 1, `int[]?` is 3).
fn nesting(ty: &SchemaType) -> usize {
    let deepest = |types: &[SchemaType]| types.iter().map(nesting).max().unwrap_or(0);
    1 + match ty {
        SchemaType::List { elem: t, .. }
        | SchemaType::Optional(t)
        | SchemaType::Future(t)
        | SchemaType::Await(t)
        | SchemaType::RRef(t) => nesting(t),
        SchemaType::Dict(k, v) => nesting(k).max(nesting(v)),
        SchemaType::Tuple(types) | SchemaType::Union(types) => deepest(types),
        _ => 0,
    }
}
