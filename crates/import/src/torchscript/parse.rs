//! Recursive-descent parser for TorchScript IR text.

use std::collections::HashSet;

use super::ast::{TsAttr, TsBlock, TsGraph, TsLoc, TsNode, TsTensorType, TsType};
use super::lex::{Lines, Tok, Token, lex};
use crate::ParseError;
use crate::error::MAX_NESTING;

/// Parses the text of one TorchScript graph.
pub fn parse(text: &str) -> Result<TsGraph, ParseError> {
    let lines = Lines::new(text);
    let tokens = lex(text, &lines)?;
    let mut p = Parser {
        text,
        lines,
        tokens,
        pos: 0,
        scopes: vec![HashSet::new()],
        depth: 0,
    };
    p.graph()
}

/// Scalar type names that introduce a specialised tensor type, as in `Float(2, 3)`.
const TENSOR_TYPE_NAMES: &[&str] = &[
    "Tensor",
    "Float",
    "Double",
    "Half",
    "BFloat16",
    "Long",
    "Int",
    "Short",
    "Char",
    "Byte",
    "Bool",
    "ComplexHalf",
    "ComplexFloat",
    "ComplexDouble",
    "QInt8",
    "QUInt8",
    "QInt32",
];

/// How a block ends.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Return,
    Arrow,
}

struct Parser<'a> {
    text: &'a str,
    lines: Lines<'a>,
    tokens: Vec<Token>,
    pos: usize,
    /// Values visible at the current point, innermost block last.
    scopes: Vec<HashSet<String>>,
    /// How many types, attribute lists and blocks enclose the current point.
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn offset(&self) -> usize {
        self.tokens[self.pos].start
    }

    fn bump(&mut self) -> Tok {
        let tok = self.tokens[self.pos].tok.clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        tok
    }

    fn error(&self, message: impl Into<String>) -> ParseError {
        self.lines.error(self.offset(), message)
    }

    fn describe(tok: &Tok) -> String {
        match tok {
            Tok::Value(v) => format!("`%{v}`"),
            Tok::Ident(s) | Tok::Number(s) => format!("`{s}`"),
            Tok::Str(s) => format!("string {s:?}"),
            Tok::Comment(_) => "a comment".to_owned(),
            Tok::Arrow => "`->`".to_owned(),
            Tok::Newline => "end of line".to_owned(),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Eof => "end of input".to_owned(),
        }
    }

    fn expected(&self, what: &str) -> ParseError {
        self.error(format!(
            "expected {what}, found {}",
            Self::describe(self.peek())
        ))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if *self.peek() == Tok::Punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), ParseError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }

    fn skip_newlines(&mut self) {
        while *self.peek() == Tok::Newline {
            self.bump();
        }
    }

    /// End of a statement: an optional location comment, then a newline or the end.
    fn end_of_line(&mut self) -> Result<Option<TsLoc>, ParseError> {
        let loc = match self.peek() {
            Tok::Comment(c) => {
                let loc = parse_loc(c);
                self.bump();
                loc
            }
            _ => None,
        };
        match self.peek() {
            Tok::Newline => {
                self.bump();
                Ok(loc)
            }
            Tok::Eof => Ok(loc),
            _ => Err(self.expected("end of line")),
        }
    }

    fn define(&mut self, name: String, offset: usize) -> Result<(), ParseError> {
        if self.scopes.iter().any(|s| s.contains(&name)) {
            return Err(self
                .lines
                .error(offset, format!("value `%{name}` is defined twice")));
        }
        self.scopes.last_mut().map(|s| s.insert(name));
        Ok(())
    }

    /// A `%value` use, which must be visible here.
    fn use_value(&mut self) -> Result<String, ParseError> {
        let offset = self.offset();
        match self.bump() {
            Tok::Value(name) => {
                if !self.scopes.iter().any(|s| s.contains(&name)) {
                    return Err(self
                        .lines
                        .error(offset, format!("use of undefined value `%{name}`")));
                }
                Ok(name)
            }
            _ => {
                self.pos -= 1;
                Err(self.expected("a value `%name`"))
            }
        }
    }

    /// `%name : Type` with the name defined in the current scope.
    fn typed_param(&mut self) -> Result<(String, TsType), ParseError> {
        let offset = self.offset();
        let Tok::Value(name) = self.peek().clone() else {
            return Err(self.expected("a value `%name`"));
        };
        self.bump();
        self.expect_punct(':')?;
        let ty = self.ty()?;
        self.define(name.clone(), offset)?;
        Ok((name, ty))
    }

    /// `(%a : T, %b : U)` possibly spread over several lines.
    fn params(&mut self) -> Result<Vec<(String, TsType)>, ParseError> {
        self.expect_punct('(')?;
        let mut params = Vec::new();
        self.skip_newlines();
        if self.eat_punct(')') {
            return Ok(params);
        }
        loop {
            self.skip_newlines();
            params.push(self.typed_param()?);
            self.skip_newlines();
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')')?;
            return Ok(params);
        }
    }

    /// `(%a, %b)`, or a single bare `%a`.
    fn value_list(&mut self) -> Result<Vec<String>, ParseError> {
        if !self.eat_punct('(') {
            return Ok(vec![self.use_value()?]);
        }
        let mut values = Vec::new();
        self.skip_newlines();
        if self.eat_punct(')') {
            return Ok(values);
        }
        loop {
            self.skip_newlines();
            values.push(self.use_value()?);
            self.skip_newlines();
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')')?;
            return Ok(values);
        }
    }

    fn graph(&mut self) -> Result<TsGraph, ParseError> {
        self.skip_newlines();
        if *self.peek() != Tok::Ident("graph".into()) {
            return Err(self.expected("`graph(`"));
        }
        self.bump();
        let inputs = self.params()?;
        self.expect_punct(':')?;
        self.end_of_line()?;
        let body = self.block_body(Vec::new(), End::Return)?;
        self.skip_newlines();
        if *self.peek() != Tok::Eof {
            return Err(self.expected("end of input after `return`"));
        }
        Ok(TsGraph { inputs, body })
    }

    fn block_body(
        &mut self,
        params: Vec<(String, TsType)>,
        end: End,
    ) -> Result<TsBlock, ParseError> {
        let mut nodes = Vec::new();
        loop {
            self.skip_newlines();
            match (self.peek(), end) {
                (Tok::Ident(word), End::Return) if word == "return" => {
                    self.bump();
                    let returns = self.value_list()?;
                    self.end_of_line()?;
                    return Ok(TsBlock {
                        params,
                        nodes,
                        returns,
                    });
                }
                (Tok::Arrow, End::Arrow) => {
                    self.bump();
                    let returns = self.value_list()?;
                    self.end_of_line()?;
                    return Ok(TsBlock {
                        params,
                        nodes,
                        returns,
                    });
                }
                (Tok::Eof, End::Return) => return Err(self.error("graph has no `return`")),
                (Tok::Eof, End::Arrow) => return Err(self.error("block has no `-> (…)`")),
                _ => nodes.push(self.node()?),
            }
        }
    }

    fn node(&mut self) -> Result<TsNode, ParseError> {
        let (line, _) = self.lines.position(self.offset());
        let mut outputs = Vec::new();
        let mut output_offsets = Vec::new();
        if matches!(self.peek(), Tok::Value(_)) {
            loop {
                let offset = self.offset();
                let Tok::Value(name) = self.bump() else {
                    self.pos -= 1;
                    return Err(self.expected("a value `%name`"));
                };
                self.expect_punct(':')?;
                outputs.push((name, self.ty()?));
                output_offsets.push(offset);
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.expect_punct('=')?;
        } else {
            // A node without outputs prints as ` = prim::RaiseException(…)`.
            self.eat_punct('=');
        }
        let kind = match self.peek() {
            Tok::Ident(k) if k.contains("::") => k.clone(),
            _ => return Err(self.expected("a node kind such as `aten::add`")),
        };
        self.bump();
        let attrs = if self.eat_punct('[') {
            self.attrs()?
        } else {
            Vec::new()
        };
        let inputs = if *self.peek() == Tok::Punct('(') {
            self.value_list()?
        } else {
            return Err(self.expected("`(` and the node's inputs"));
        };
        let loc = self.end_of_line()?;

        let mut blocks = Vec::new();
        loop {
            self.skip_newlines();
            let is_block = matches!(self.peek(), Tok::Ident(w)
                if w.strip_prefix("block").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())));
            if !is_block {
                break;
            }
            self.bump();
            self.scopes.push(HashSet::new());
            let block = self.block_header_and_body();
            self.scopes.pop();
            blocks.push(block?);
        }
        for ((name, _), offset) in outputs.iter().zip(output_offsets) {
            self.define(name.clone(), offset)?;
        }
        Ok(TsNode {
            outputs,
            kind,
            attrs,
            inputs,
            blocks,
            loc,
            line,
        })
    }

    fn block_header_and_body(&mut self) -> Result<TsBlock, ParseError> {
        self.nested(Self::block_at_depth)
    }

    fn block_at_depth(&mut self) -> Result<TsBlock, ParseError> {
        let params = self.params()?;
        self.expect_punct(':')?;
        self.end_of_line()?;
        self.block_body(params, End::Arrow)
    }

    /// `name=value, …]` after the opening `[`.
    fn attrs(&mut self) -> Result<Vec<(String, TsAttr)>, ParseError> {
        let mut attrs = Vec::new();
        if self.eat_punct(']') {
            return Ok(attrs);
        }
        loop {
            let Tok::Ident(name) = self.peek().clone() else {
                return Err(self.expected("an attribute name"));
            };
            self.bump();
            self.expect_punct('=')?;
            attrs.push((name, self.attr_value()?));
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(']')?;
            return Ok(attrs);
        }
    }

    fn attr_value(&mut self) -> Result<TsAttr, ParseError> {
        self.nested(Self::attr_value_at_depth)
    }

    fn attr_value_at_depth(&mut self) -> Result<TsAttr, ParseError> {
        let start = self.offset();
        match self.peek().clone() {
            Tok::Number(n) => {
                self.bump();
                number_attr(&n).ok_or_else(|| self.lines.error(start, format!("bad number `{n}`")))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(TsAttr::Str(s))
            }
            Tok::Ident(w) => {
                self.bump();
                Ok(match w.as_str() {
                    "inf" => TsAttr::Float(f64::INFINITY),
                    "nan" => TsAttr::Float(f64::NAN),
                    _ => TsAttr::Word(w),
                })
            }
            Tok::Punct('-')
                if self
                    .tokens
                    .get(self.pos + 1)
                    .is_some_and(|t| t.tok == Tok::Ident("inf".into())) =>
            {
                self.pos += 2;
                Ok(TsAttr::Float(f64::NEG_INFINITY))
            }
            Tok::Punct('[') => {
                self.bump();
                let mut items = Vec::new();
                if self.eat_punct(']') {
                    return Ok(TsAttr::List(items));
                }
                loop {
                    items.push(self.attr_value()?);
                    if self.eat_punct(',') {
                        continue;
                    }
                    self.expect_punct(']')?;
                    return Ok(TsAttr::List(items));
                }
            }
            Tok::Punct('{') => {
                let mut depth = 0usize;
                loop {
                    match self.bump() {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Tok::Eof => return Err(self.lines.error(start, "unterminated `{`")),
                        _ => {}
                    }
                }
                let end = self.tokens[self.pos - 1].end;
                Ok(TsAttr::Tensor(self.text[start..end].to_owned()))
            }
            Tok::Punct('<') => {
                while !matches!(self.bump(), Tok::Punct('>') | Tok::Eof | Tok::Newline) {}
                let end = self.tokens[self.pos - 1].end;
                if !self.text[start..end].ends_with('>') {
                    return Err(self.lines.error(start, "unterminated `<`"));
                }
                Ok(TsAttr::Tensor(self.text[start..end].to_owned()))
            }
            _ => Err(self.expected("an attribute value")),
        }
    }

    /// Runs `f` one nesting level deeper, refusing input nested past [`MAX_NESTING`] levels
    /// (a stack overflow otherwise).
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, ParseError>) -> Result<T, ParseError> {
        if self.depth >= MAX_NESTING {
            return Err(self.error(format!("nesting too deep (more than {MAX_NESTING} levels)")));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn ty(&mut self) -> Result<TsType, ParseError> {
        self.nested(Self::ty_at_depth)
    }

    fn ty_at_depth(&mut self) -> Result<TsType, ParseError> {
        let mut ty = match self.peek().clone() {
            Tok::Punct('(') => {
                self.bump();
                let mut items = Vec::new();
                if !self.eat_punct(')') {
                    loop {
                        items.push(self.ty()?);
                        if self.eat_punct(',') {
                            continue;
                        }
                        self.expect_punct(')')?;
                        break;
                    }
                }
                TsType::Tuple(items)
            }
            Tok::Ident(name) => {
                self.bump();
                if TENSOR_TYPE_NAMES.contains(&name.as_str()) {
                    if *self.peek() == Tok::Punct('(') {
                        let mut detail = self.tensor_detail()?;
                        detail.dtype = (name != "Tensor").then_some(name);
                        TsType::Tensor(Some(detail))
                    } else if name == "Tensor" {
                        TsType::Tensor(None)
                    } else {
                        TsType::Tensor(Some(TsTensorType {
                            dtype: Some(name),
                            ..Default::default()
                        }))
                    }
                } else if self.eat_punct('(') {
                    let mut args = Vec::new();
                    if !self.eat_punct(')') {
                        loop {
                            args.push(self.ty()?);
                            if self.eat_punct(',') {
                                continue;
                            }
                            self.expect_punct(')')?;
                            break;
                        }
                    }
                    TsType::Generic { name, args }
                } else {
                    TsType::Named(name)
                }
            }
            _ => return Err(self.expected("a type")),
        };
        loop {
            if *self.peek() == Tok::Punct('[')
                && self
                    .tokens
                    .get(self.pos + 1)
                    .is_some_and(|t| t.tok == Tok::Punct(']'))
            {
                self.pos += 2;
                ty = TsType::List(Box::new(ty));
            } else if self.eat_punct('?') {
                ty = TsType::Optional(Box::new(ty));
            } else {
                return Ok(ty);
            }
        }
    }

    /// `(2, *, strides=[3, 1], requires_grad=0, device=cpu)`.
    fn tensor_detail(&mut self) -> Result<TsTensorType, ParseError> {
        self.expect_punct('(')?;
        let mut detail = TsTensorType::default();
        if self.eat_punct(')') {
            return Ok(detail);
        }
        loop {
            match self.peek().clone() {
                Tok::Ident(key) => {
                    self.bump();
                    self.expect_punct('=')?;
                    match key.as_str() {
                        "strides" => {
                            self.expect_punct('[')?;
                            let mut strides = Vec::new();
                            if !self.eat_punct(']') {
                                loop {
                                    strides.push(self.dim()?);
                                    if self.eat_punct(',') {
                                        continue;
                                    }
                                    self.expect_punct(']')?;
                                    break;
                                }
                            }
                            detail.strides = Some(strides);
                        }
                        "requires_grad" => {
                            detail.requires_grad = Some(match self.bump() {
                                Tok::Number(n) if n == "0" => false,
                                Tok::Number(n) if n == "1" => true,
                                _ => {
                                    self.pos -= 1;
                                    return Err(self.expected("`0` or `1`"));
                                }
                            });
                        }
                        "device" => {
                            let Tok::Ident(mut device) = self.bump() else {
                                self.pos -= 1;
                                return Err(self.expected("a device"));
                            };
                            if self.eat_punct(':') {
                                let Tok::Number(index) = self.bump() else {
                                    self.pos -= 1;
                                    return Err(self.expected("a device index"));
                                };
                                device = format!("{device}:{index}");
                            }
                            detail.device = Some(device);
                        }
                        _ => {
                            self.pos -= 2;
                            return Err(
                                self.error(format!("unknown tensor type attribute `{key}`"))
                            );
                        }
                    }
                }
                _ => detail.sizes.push(self.dim()?),
            }
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')')?;
            return Ok(detail);
        }
    }

    /// A dimension: an integer, or `*` for unknown.
    fn dim(&mut self) -> Result<Option<i64>, ParseError> {
        let offset = self.offset();
        match self.bump() {
            Tok::Punct('*') => Ok(None),
            Tok::Number(n) => n.parse().map(Some).map_err(|_| {
                self.lines
                    .error(offset, format!("expected an integer, found `{n}`"))
            }),
            _ => {
                self.pos -= 1;
                Err(self.expected("a dimension (integer or `*`)"))
            }
        }
    }
}

fn number_attr(text: &str) -> Option<TsAttr> {
    if let Ok(i) = text.parse::<i64>() {
        return Some(TsAttr::Int(i));
    }
    // TorchScript prints `1.` for a float with no fraction.
    let f = text
        .parse::<f64>()
        .or_else(|_| format!("{text}0").parse::<f64>())
        .ok()?;
    Some(TsAttr::Float(f))
}

/// `file.py:12:4` at the end of a comment, if it has that form.
fn parse_loc(comment: &str) -> Option<TsLoc> {
    let (rest, col) = comment.rsplit_once(':')?;
    let (file, line) = rest.rsplit_once(':')?;
    let file = file.trim();
    if file.is_empty() {
        return None;
    }
    Some(TsLoc {
        file: file.to_owned(),
        line: line.parse().ok()?,
        col: col.trim().parse().ok()?,
    })
}
