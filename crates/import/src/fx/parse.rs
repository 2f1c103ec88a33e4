//! Line-oriented recursive-descent parser for FX graph text.

use std::collections::HashSet;

use super::ast::{FxArg, FxGraph, FxNode, FxOp};
use crate::ParseError;
use crate::error::MAX_NESTING;
use crate::pt2::schema::{Layout, MemoryFormat, ScalarType};

/// Parses the text of one FX graph (`graph():` header, node lines, `return` line).
pub fn parse(text: &str) -> Result<FxGraph, ParseError> {
    let mut parser = Parser::default();
    let mut last_line = 1;
    for (index, line) in text.lines().enumerate() {
        last_line = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        parser.line(Cursor::new(line, index + 1))?;
    }
    if !parser.saw_header {
        return Err(ParseError::new(last_line, 1, "expected `graph():`"));
    }
    let Some((mut output, output_line)) = parser.output else {
        let col = text.lines().last().map_or(1, |l| l.chars().count() + 1);
        return Err(ParseError::new(
            last_line,
            col,
            "graph has no `return` statement",
        ));
    };
    resolve_output_names(&mut output, &parser.defined);
    Ok(FxGraph {
        nodes: parser.nodes,
        output,
        output_line,
    })
}

#[derive(Default)]
struct Parser {
    saw_header: bool,
    nodes: Vec<FxNode>,
    defined: HashSet<String>,
    output: Option<(FxArg, usize)>,
}

impl Parser {
    fn line(&mut self, mut c: Cursor<'_>) -> Result<(), ParseError> {
        c.skip_ws();
        if !self.saw_header {
            if !c.eat("graph():") {
                return Err(c.error("expected `graph():`"));
            }
            self.saw_header = true;
            return c.expect_end();
        }
        if self.output.is_some() {
            return Err(c.error("unexpected text after the `return` statement"));
        }
        if c.peek() == Some('%') {
            let node = self.node(&mut c)?;
            self.nodes.push(node);
            return Ok(());
        }
        if c.eat_keyword("return") {
            let value = self.value(&mut c)?;
            c.expect_end()?;
            self.output = Some((value, c.line));
            return Ok(());
        }
        Err(c.error("expected a node `%name : … = …` or `return …`"))
    }

    fn node(&mut self, c: &mut Cursor<'_>) -> Result<FxNode, ParseError> {
        c.expect_char('%')?;
        let name_pos = c.pos;
        let name = c
            .identifier()
            .ok_or_else(|| c.error("expected a node name after `%`"))?;
        if self.defined.contains(name) {
            return Err(c.error_at(name_pos, format!("node `%{name}` is defined twice")));
        }
        c.skip_ws();
        c.expect_char(':')?;
        c.skip_ws();

        let mut type_annotation = None;
        if !c.rest().starts_with("[num_users=") && !c.rest().starts_with('=') {
            let rest = c.rest();
            let end = rest
                .find("[num_users=")
                .or_else(|| rest.find(" = "))
                .ok_or_else(|| c.error("expected `[num_users=N] = ` after the node name"))?;
            type_annotation = Some(rest[..end].trim().to_owned());
            c.pos += end;
            c.skip_ws();
        }
        let mut num_users = None;
        if c.eat("[num_users=") {
            let pos = c.pos;
            let digits = c.take_while(|ch| ch.is_ascii_digit());
            num_users = Some(
                digits
                    .parse()
                    .map_err(|_| c.error_at(pos, "expected a user count"))?,
            );
            c.expect_char(']')?;
            c.skip_ws();
        }
        c.expect_char('=')?;
        c.skip_ws();

        let op_pos = c.pos;
        let op = match c.identifier() {
            Some("placeholder") => FxOp::Placeholder,
            Some("get_attr") => FxOp::GetAttr,
            Some("call_function") => FxOp::CallFunction,
            Some("call_method") => FxOp::CallMethod,
            Some("call_module") => FxOp::CallModule,
            Some(other) => return Err(c.error_at(op_pos, format!("unknown opcode `{other}`"))),
            None => return Err(c.error("expected an opcode such as `call_function`")),
        };
        if !c.eat("[target=") {
            return Err(c.error("expected `[target=…]`"));
        }
        let target = c.bracketed_text()?.to_owned();

        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        c.skip_ws();
        if c.eat("(") {
            loop {
                c.skip_ws();
                if c.eat(")") {
                    break;
                }
                let key_pos = c.pos;
                let key = c
                    .identifier()
                    .ok_or_else(|| c.error("expected `args`, `kwargs` or `default`"))?;
                c.skip_ws();
                c.expect_char('=')?;
                c.skip_ws();
                let value_pos = c.pos;
                let value = self.value(c)?;
                match (key, value) {
                    ("args", FxArg::Tuple(items)) => args = items,
                    ("args", _) => return Err(c.error_at(value_pos, "`args` must be a tuple")),
                    ("kwargs", FxArg::Dict(entries)) => {
                        for (k, v) in entries {
                            match k {
                                FxArg::Word(k) | FxArg::Str(k) => kwargs.push((k, v)),
                                _ => {
                                    return Err(
                                        c.error_at(value_pos, "keyword names must be words")
                                    );
                                }
                            }
                        }
                    }
                    ("kwargs", _) => return Err(c.error_at(value_pos, "`kwargs` must be a dict")),
                    ("default", v) => kwargs.push(("default".to_owned(), v)),
                    (other, _) => {
                        return Err(c.error_at(key_pos, format!("unexpected `{other} =` in node")));
                    }
                }
                c.skip_ws();
                if c.eat(",") {
                    continue;
                }
                c.expect_char(')')?;
                break;
            }
        }
        c.expect_end()?;
        self.defined.insert(name.to_owned());
        Ok(FxNode {
            name: name.to_owned(),
            op,
            target,
            args,
            kwargs,
            num_users,
            type_annotation,
            line: c.line,
        })
    }

    /// One argument value, refusing values nested past [`MAX_NESTING`] levels (a stack
    /// overflow otherwise).
    fn value(&self, c: &mut Cursor<'_>) -> Result<FxArg, ParseError> {
        if c.depth >= MAX_NESTING {
            return Err(c.error(format!("nesting too deep (more than {MAX_NESTING} levels)")));
        }
        c.depth += 1;
        let value = self.value_at_depth(c);
        c.depth -= 1;
        value
    }

    fn value_at_depth(&self, c: &mut Cursor<'_>) -> Result<FxArg, ParseError> {
        c.skip_ws();
        let start = c.pos;
        match c.peek() {
            None => Err(c.error("expected a value")),
            Some('%') => {
                c.pos += 1;
                let name = c
                    .identifier()
                    .ok_or_else(|| c.error("expected a node name after `%`"))?;
                if !self.defined.contains(name) {
                    return Err(
                        c.error_at(start, format!("`%{name}` is not defined before this use"))
                    );
                }
                Ok(FxArg::Node(name.to_owned()))
            }
            Some('(') => {
                c.pos += 1;
                Ok(FxArg::Tuple(self.sequence(c, ')')?))
            }
            Some('[') => {
                c.pos += 1;
                Ok(FxArg::List(self.sequence(c, ']')?))
            }
            Some('{') => {
                c.pos += 1;
                self.dict(c)
            }
            Some('\'' | '"') => Ok(FxArg::Str(c.string_literal()?)),
            Some(_) => {
                let word = c.word();
                if word.is_empty() {
                    return Err(c.error("expected a value"));
                }
                if c.peek() == Some('(') {
                    c.pos += 1;
                    return self.call(c, word, start);
                }
                Ok(classify_word(word))
            }
        }
    }

    /// Comma-separated values up to `close`, allowing a trailing comma.
    fn sequence(&self, c: &mut Cursor<'_>, close: char) -> Result<Vec<FxArg>, ParseError> {
        let mut items = Vec::new();
        loop {
            c.skip_ws();
            if c.eat_char(close) {
                return Ok(items);
            }
            items.push(self.value(c)?);
            c.skip_ws();
            if c.eat_char(',') {
                continue;
            }
            if c.eat_char(close) {
                return Ok(items);
            }
            return Err(c.error(format!("expected `,` or `{close}`")));
        }
    }

    fn dict(&self, c: &mut Cursor<'_>) -> Result<FxArg, ParseError> {
        let mut entries = Vec::new();
        loop {
            c.skip_ws();
            if c.eat_char('}') {
                return Ok(FxArg::Dict(entries));
            }
            let key = self.value(c)?;
            c.skip_ws();
            c.expect_char(':')?;
            let value = self.value(c)?;
            entries.push((key, value));
            c.skip_ws();
            if c.eat_char(',') {
                continue;
            }
            c.expect_char('}')?;
            return Ok(FxArg::Dict(entries));
        }
    }

    /// `func(` has been read: positional and `key=value` arguments up to `)`.
    fn call(&self, c: &mut Cursor<'_>, func: &str, start: usize) -> Result<FxArg, ParseError> {
        let mut args = Vec::new();
        let mut kwargs = Vec::new();
        loop {
            c.skip_ws();
            if c.eat_char(')') {
                break;
            }
            let save = c.pos;
            let keyword = c.identifier().filter(|_| {
                c.skip_ws();
                c.peek() == Some('=')
            });
            match keyword {
                Some(key) => {
                    c.pos += 1;
                    kwargs.push((key.to_owned(), self.value(c)?));
                }
                None => {
                    c.pos = save;
                    args.push(self.value(c)?);
                }
            }
            c.skip_ws();
            if c.eat_char(',') {
                continue;
            }
            c.expect_char(')')?;
            break;
        }
        if func == "device" {
            return device(args, kwargs).ok_or_else(|| c.error_at(start, "malformed `device(…)`"));
        }
        Ok(FxArg::Call {
            func: func.to_owned(),
            args,
            kwargs,
        })
    }
}

fn device(args: Vec<FxArg>, kwargs: Vec<(String, FxArg)>) -> Option<FxArg> {
    let mut kind = None;
    let mut index = None;
    for (i, arg) in args.into_iter().enumerate() {
        match (i, arg) {
            (0, FxArg::Str(s) | FxArg::Word(s)) => kind = Some(s),
            (1, FxArg::Int(n)) => index = Some(n),
            _ => return None,
        }
    }
    for (key, value) in kwargs {
        match (key.as_str(), value) {
            ("type", FxArg::Str(s) | FxArg::Word(s)) => kind = Some(s),
            ("index", FxArg::Int(n)) => index = Some(n),
            ("index", FxArg::None) => index = None,
            _ => return None,
        }
    }
    let kind = kind?;
    // `device(type='cuda:0')` carries the index inside the type string.
    if let Some((k, i)) = kind.split_once(':') {
        return Some(FxArg::Device {
            kind: k.to_owned(),
            index: Some(i.parse().ok()?),
        });
    }
    Some(FxArg::Device { kind, index })
}

/// Turns a bare word into the literal it spells, or keeps it as a word.
fn classify_word(word: &str) -> FxArg {
    match word {
        "None" => return FxArg::None,
        "True" => return FxArg::Bool(true),
        "False" => return FxArg::Bool(false),
        "inf" => return FxArg::Float(f64::INFINITY),
        "-inf" => return FxArg::Float(f64::NEG_INFINITY),
        "nan" => return FxArg::Float(f64::NAN),
        _ => {}
    }
    if let Some(name) = word.strip_prefix("torch.") {
        if let Some(dtype) = dtype_named(name) {
            return FxArg::Dtype(dtype);
        }
        if let Some(layout) = layout_named(name) {
            return FxArg::Layout(layout);
        }
        if let Some(format) = memory_format_named(name) {
            return FxArg::MemoryFormat(format);
        }
    }
    let digits = word.strip_prefix('-').unwrap_or(word);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match word.parse() {
            Ok(n) => FxArg::Int(n),
            Err(_) => FxArg::BigInt(word.to_owned()),
        };
    }
    let looks_numeric = digits.starts_with(|ch: char| ch.is_ascii_digit())
        || (digits.starts_with('.') && digits[1..].starts_with(|ch: char| ch.is_ascii_digit()));
    if looks_numeric && let Ok(f) = word.parse::<f64>() {
        return FxArg::Float(f);
    }
    FxArg::Word(word.to_owned())
}

/// Dtype for the name after `torch.`, including PyTorch's aliases.
pub(crate) fn dtype_named(name: &str) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match name {
        "uint8" => Uint8,
        "int8" => Int8,
        "int16" | "short" => Int16,
        "int32" | "int" => Int32,
        "int64" | "long" => Int64,
        "float16" | "half" => Float16,
        "float32" | "float" => Float32,
        "float64" | "double" => Float64,
        "complex32" | "chalf" => ComplexHalf,
        "complex64" | "cfloat" => ComplexFloat,
        "complex128" | "cdouble" => ComplexDouble,
        "bool" => Bool,
        "bfloat16" => BFloat16,
        "uint16" => Uint16,
        "float8_e4m3fn" => Float8E4M3Fn,
        "float8_e5m2" => Float8E5M2,
        "float8_e4m3fnuz" => Float8E4M3FnUz,
        "float8_e5m2fnuz" => Float8E5M2FnUz,
        _ => return None,
    })
}

fn layout_named(name: &str) -> Option<Layout> {
    Some(match name {
        "strided" => Layout::Strided,
        "sparse_coo" => Layout::SparseCoo,
        "sparse_csr" => Layout::SparseCsr,
        "sparse_csc" => Layout::SparseCsc,
        "sparse_bsr" => Layout::SparseBsr,
        "sparse_bsc" => Layout::SparseBsc,
        "_mkldnn" => Layout::Mkldnn,
        _ => return None,
    })
}

fn memory_format_named(name: &str) -> Option<MemoryFormat> {
    Some(match name {
        "contiguous_format" => MemoryFormat::ContiguousFormat,
        "channels_last" => MemoryFormat::ChannelsLast,
        "channels_last_3d" => MemoryFormat::ChannelsLast3d,
        "preserve_format" => MemoryFormat::PreserveFormat,
        _ => return None,
    })
}

/// The `return` statement names nodes without `%`; turn those words into node references.
fn resolve_output_names(arg: &mut FxArg, defined: &HashSet<String>) {
    match arg {
        FxArg::Word(w) if defined.contains(w.as_str()) => *arg = FxArg::Node(std::mem::take(w)),
        FxArg::Tuple(items) | FxArg::List(items) => items
            .iter_mut()
            .for_each(|i| resolve_output_names(i, defined)),
        FxArg::Dict(entries) => entries
            .iter_mut()
            .for_each(|(_, v)| resolve_output_names(v, defined)),
        _ => {}
    }
}

/// A position in one line of text.
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
    line: usize,
    /// How many values enclose the current point.
    depth: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str, line: usize) -> Cursor<'a> {
        Cursor { text, pos: 0, line, depth: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        self.error_at(self.pos, message)
    }

    fn error_at(&self, pos: usize, message: impl Into<String>) -> ParseError {
        ParseError::new(self.line, self.text[..pos].chars().count() + 1, message)
    }

    fn skip_ws(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn eat_char(&mut self, ch: char) -> bool {
        if self.peek() == Some(ch) {
            self.pos += ch.len_utf8();
            true
        } else {
            false
        }
    }

    /// `word` followed by whitespace or the end of the line.
    fn eat_keyword(&mut self, word: &str) -> bool {
        let rest = self.rest();
        let Some(after) = rest.strip_prefix(word) else {
            return false;
        };
        if after.is_empty() || after.starts_with(char::is_whitespace) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn expect_char(&mut self, ch: char) -> Result<(), ParseError> {
        if self.eat_char(ch) {
            Ok(())
        } else {
            let found = self
                .peek()
                .map_or("end of line".to_owned(), |f| format!("`{f}`"));
            Err(self.error(format!("expected `{ch}`, found {found}")))
        }
    }

    fn expect_end(&mut self) -> Result<(), ParseError> {
        self.skip_ws();
        if self.pos == self.text.len() {
            Ok(())
        } else {
            Err(self.error("unexpected text at the end of the line"))
        }
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|ch: char| !f(ch)).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    /// A Python identifier (letters, digits, `_`), possibly dotted.
    fn identifier(&mut self) -> Option<&'a str> {
        if !self
            .peek()
            .is_some_and(|ch| ch.is_alphabetic() || ch == '_')
        {
            return None;
        }
        Some(self.take_while(|ch| ch.is_alphanumeric() || ch == '_' || ch == '.'))
    }

    /// A bare word: everything up to a delimiter. A `:` ends it only before whitespace, so
    /// that `cuda:0` stays one word while `dtype: x` does not.
    fn word(&mut self) -> &'a str {
        let rest = self.rest();
        let mut end = rest.len();
        for (i, ch) in rest.char_indices() {
            let stop = match ch {
                ',' | '(' | ')' | '[' | ']' | '{' | '}' | '=' => true,
                ':' => rest[i + 1..]
                    .chars()
                    .next()
                    .is_none_or(|n| n.is_whitespace() || ",)]}".contains(n)),
                ch => ch.is_whitespace(),
            };
            if stop {
                end = i;
                break;
            }
        }
        self.pos += end;
        &rest[..end]
    }

    /// Text up to the `]` closing an already opened `[`, with nested brackets.
    fn bracketed_text(&mut self) -> Result<&'a str, ParseError> {
        let rest = self.rest();
        let mut depth = 0usize;
        for (i, ch) in rest.char_indices() {
            match ch {
                '[' => depth += 1,
                ']' if depth == 0 => {
                    self.pos += i + 1;
                    return Ok(&rest[..i]);
                }
                ']' => depth -= 1,
                _ => {}
            }
        }
        Err(self.error_at(self.text.len(), "expected `]`"))
    }

    /// A single- or double-quoted Python string literal.
    fn string_literal(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        let quote = self.peek().unwrap_or('\'');
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, ch)) = chars.next() {
            match ch {
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some((_, esc)) = chars.next() else { break };
                    out.push(match esc {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        '0' => '\0',
                        other => other,
                    });
                }
                other => out.push(other),
            }
        }
        Err(self.error_at(start, "unterminated string literal"))
    }
}
