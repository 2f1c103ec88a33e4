//! Declarative assembly formats: the format language an op's custom syntax is written in, its checks, and custom directives.
//!
//! A format is a string such as ``operands regions attr-dict `:` same-or-functional-type``. It is
//! parsed and checked once, when the op is declared; the printer (`print/format.rs`) and the
//! parser (`parse/format.rs`) then interpret its elements. An op the format cannot express (a
//! wrong operand count, a condition that is not `i1`, …) prints in the generic form.

mod builtins;

use crate::Attribute;
use crate::context::{Context, Syntax};
use crate::module::{Module, OpId};
use std::fmt;
use std::sync::{Arc, OnceLock};

pub use crate::parse::format::{OpParser, ParsedOp};
pub use crate::print::format::OpPrinter;
pub(crate) use builtins::register as register_builtin_directives;

/// A malformed format string, or one that names what its context lacks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct FormatError {
    /// The 1-based column in the format string where the problem is.
    pub column: usize,
    pub message: String,
}

/// A custom directive `custom<Name>`: hooks that print and parse part of an op's syntax.
///
/// Directives are registered in the [`Context`] under their name before the ops that use them.
pub trait CustomDirective: Send + Sync {
    /// Whether the op can be printed with this directive; when not, the whole op prints generically.
    /// A format with a custom directive leaves the operands, results and regions its own elements
    /// do not mention to this check.
    fn expressible(&self, _ctx: &Context, _m: &Module, _op: OpId) -> bool {
        true
    }
    /// Prints this directive's part of `op` (nothing at all is fine).
    fn print(&self, p: &mut OpPrinter<'_, '_>, op: OpId);
    /// Parses this directive's part, adding what it reads to `st`.
    fn parse(&self, p: &mut OpParser<'_, '_>, st: &mut ParsedOp) -> Result<(), crate::diag::Diagnostic>;
    /// The attributes this directive prints itself, which `attr-dict` leaves out.
    fn attributes(&self) -> &[&str] {
        &[]
    }
}

/// One element of a format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Element {
    /// `` `text` ``: a keyword or punctuation printed and expected as is.
    Literal(String),
    /// `operands`: all operands as a comma-separated list.
    Operands,
    /// `operand(i)` or `operand(i, T)`: operand `i`, with a fixed type `T` when given.
    Operand { index: usize, fixed: Option<String> },
    /// `$name`: a named attribute, with its type.
    Attr(String),
    /// `untyped($name)`: a literal attribute without its type, typed by the op's single result.
    UntypedAttr(String),
    /// `attr-dict` / `attr-dict-with-keyword`: the attributes printed nowhere else.
    AttrDict { keyword: bool },
    /// `type(operands)`.
    OperandTypes,
    /// `type(results)`.
    ResultTypes,
    /// `functional-type(operands, results)`.
    FunctionalType,
    /// `same-or-functional-type`: `T` when there is one result and every operand has its type, else `(A, B) -> R`.
    SameOrFunctionalType,
    /// `regions`: all regions as `({...}, {...})`, nothing when there are none.
    Regions,
    /// `region(i)`: region `i` bare, as `{...}` (a single block without arguments).
    Region(usize),
    /// `custom<Name>`: a registered [`CustomDirective`].
    Custom(String),
    /// `( ... )?`: printed when its anchor (marked `^`, else its first operand, result, region or
    /// attribute element) is non-empty; parsed when its first element is there.
    Optional { elements: Vec<Element>, anchor: usize },
}

/// How a format states the operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Count {
    None,
    All,
    Exactly(usize),
}

/// A parsed and checked assembly format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssemblyFormat {
    source: String,
    elements: Vec<Element>,
    /// Columns of `operand(i, T)` types and `custom<..>` names, checked against a context on registration.
    fixed_types: Vec<(String, usize)>,
    customs: Vec<(String, usize)>,
    pub(crate) operands: Count,
    pub(crate) regions: Count,
    pub(crate) has_result_types: bool,
}

impl fmt::Display for AssemblyFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Punctuation a literal may be (braces are left to regions and attribute dictionaries, `%` to operands).
const PUNCTUATION: [&str; 14] = [",", "->", "(", ")", "[", "]", ":", "=", "<", ">", "?", "*", "+", "|"];

/// Whether a literal is a keyword (matched whole) rather than punctuation.
pub(crate) fn is_keyword(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|c0| c0.is_ascii_alphabetic() || c0 == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' || ch == '$' || ch == '-')
}

/// Whether a literal is printed without a space before it.
pub(crate) fn closes(e: &Element) -> bool {
    matches!(e, Element::Literal(s) if matches!(s.as_str(), ")" | "]" | ">" | ","))
}

/// Whether the element after a literal is printed without a space before it.
pub(crate) fn opens(e: &Element) -> bool {
    matches!(e, Element::Literal(s) if matches!(s.as_str(), "(" | "[" | "<"))
}


impl AssemblyFormat {
    /// Parses and checks a format string.
    pub fn parse(source: &str) -> Result<AssemblyFormat, FormatError> {
        let mut r = Reader { src: source, pos: 0, fixed_types: Vec::new(), customs: Vec::new(), columns: Vec::new() };
        let (elements, _) = r.elements(false)?;
        let mut f = AssemblyFormat {
            source: source.to_string(),
            elements,
            fixed_types: std::mem::take(&mut r.fixed_types),
            customs: std::mem::take(&mut r.customs),
            operands: Count::None,
            regions: Count::None,
            has_result_types: false,
        };
        f.check(&r.columns)?;
        Ok(f)
    }

    /// The format's text.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn elements(&self) -> &[Element] {
        &self.elements
    }

    /// The format of one of the named syntaxes, parsed once per process.
    pub fn of_syntax(s: Syntax) -> Result<Arc<AssemblyFormat>, FormatError> {
        static CACHE: [OnceLock<Result<Arc<AssemblyFormat>, FormatError>>; 6] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let i = s as usize;
        CACHE[i].get_or_init(|| AssemblyFormat::parse(s.format()).map(Arc::new)).clone()
    }

    /// Checks what needs a context: `custom<..>` directives are registered and fixed types parse.
    pub(crate) fn check_in(&self, ctx: &Context) -> Result<(), FormatError> {
        for (name, column) in &self.customs {
            if ctx.custom_directive(name).is_none() {
                return Err(FormatError { column: *column, message: format!("unknown custom directive '{name}'") });
            }
        }
        for (text, column) in &self.fixed_types {
            if let Err(d) = crate::parse::parse_type(ctx, text) {
                return Err(FormatError { column: *column, message: format!("bad type '{text}': {}", d.message) });
            }
        }
        Ok(())
    }

    fn flat(&self) -> impl Iterator<Item = &Element> {
        self.elements.iter().flat_map(|e| match e {
            Element::Optional { elements, .. } => elements.iter().collect::<Vec<_>>(),
            other => vec![other],
        })
    }

    /// The attributes printed by elements other than `attr-dict`.
    pub(crate) fn printed_attrs<'s>(&'s self, ctx: &'s Context) -> Vec<&'s str> {
        let mut out = Vec::new();
        for e in self.flat() {
            match e {
                Element::Attr(a) | Element::UntypedAttr(a) => out.push(a.as_str()),
                Element::Custom(n) => {
                    if let Some(d) = ctx.custom_directive(n) {
                        out.extend(d.attributes().iter().copied());
                    }
                }
                _ => {}
            }
        }
        out
    }

    pub(crate) fn has_custom(&self) -> bool {
        !self.customs.is_empty()
    }

    /// Whether `op` prints in this format so that it parses back the same; when not, it prints generically.
    pub(crate) fn expressible(&self, ctx: &Context, m: &Module, op: OpId) -> bool {
        let operands = m.operands(op);
        let regions = m.regions(op);
        let custom = self.has_custom();
        let count_ok = |c: Count, n: usize| match c {
            Count::None => custom || n == 0,
            Count::All => true,
            Count::Exactly(k) => n == k,
        };
        if !count_ok(self.operands, operands.len())
            || !count_ok(self.regions, regions.len())
            || (!self.has_result_types && !custom && !m.results(op).is_empty())
        {
            return false;
        }
        self.elements_fit(ctx, m, op, &self.elements)
    }

    /// Whether `e` would print something for `op` (the test of an optional group's anchor).
    pub(crate) fn present(m: &Module, op: OpId, e: &Element) -> bool {
        match e {
            Element::Operands | Element::OperandTypes => !m.operands(op).is_empty(),
            Element::ResultTypes => !m.results(op).is_empty(),
            Element::Regions => !m.regions(op).is_empty(),
            Element::Attr(a) | Element::UntypedAttr(a) => m.attr(op, a).is_some(),
            _ => false,
        }
    }

    /// Whether each element, and each optional group that will print, can show `op` unambiguously.
    fn elements_fit(&self, ctx: &Context, m: &Module, op: OpId, elements: &[Element]) -> bool {
        let operands = m.operands(op);
        elements.iter().enumerate().all(|(i, e)| match e {
            Element::Optional { elements: inner, anchor } => {
                if Self::present(m, op, &inner[*anchor]) {
                    // The group's first element is how the parser sees it, so it must print.
                    (matches!(inner[0], Element::Literal(_)) || Self::present(m, op, &inner[0]))
                        && self.elements_fit(ctx, m, op, inner)
                } else {
                    inner.iter().all(|e| !Self::present(m, op, e))
                }
            }
            Element::Attr(a) => m.attr(op, a).is_some(),
            // The literal reads back as the attribute only when the result's type is its own
            // (`0.0 : i64` would not parse, `5 : f64` would read back as a float).
            Element::UntypedAttr(a) => match (m.attr(op, a), m.results(op)) {
                (Some(v @ (Attribute::Bool(_) | Attribute::Int(_) | Attribute::Float(_) | Attribute::Dense(_))), [r]) => {
                    v.value_type().is_some_and(|t| t == *m.value_type(*r))
                }
                (Some(Attribute::SizedInt { .. } | Attribute::SizedFloat { .. }), _) => false,
                (Some(_), [_]) => true,
                _ => false,
            },
            // An empty type list reads back only where a `)` ends it.
            Element::ResultTypes => {
                !m.results(op).is_empty() || matches!(elements.get(i + 1), Some(Element::Literal(l)) if l == ")")
            }
            Element::Operand { index, fixed: Some(t) } => crate::parse::parse_type(ctx, t)
                .is_ok_and(|t| operands.get(*index).is_some_and(|&v| *m.value_type(v) == t)),
            Element::Region(i) => m.regions(op).get(*i).is_some_and(|&r| {
                let blocks = m.region_blocks(r);
                blocks.len() == 1 && m.block_args(blocks[0]).is_empty()
            }),
            Element::Custom(n) => ctx.custom_directive(n).is_some_and(|d| d.expressible(ctx, m, op)),
            _ => true,
        })
    }

    /// The structural rules a format must obey so that what it prints parses back the same.
    /// `columns` holds the column of each element of [`AssemblyFormat::flat`], in its order.
    fn check(&mut self, columns: &[usize]) -> Result<(), FormatError> {
        let flat: Vec<(&Element, usize)> = self.flat().zip(columns.iter().copied()).collect();
        let end = self.source.chars().count() + 1;
        let fail = |column: usize, message: &str| Err(FormatError { column, message: message.to_string() });
        let find = |pred: &dyn Fn(&Element) -> bool, nth: usize| flat.iter().filter(|(e, _)| pred(e)).nth(nth).map(|&(_, c)| c);
        let count = |pred: &dyn Fn(&Element) -> bool| flat.iter().filter(|(e, _)| pred(e)).count();
        let is_dict = |e: &Element| matches!(e, Element::AttrDict { .. });
        let is_all = |e: &Element| matches!(e, Element::Operands);
        let is_one = |e: &Element| matches!(e, Element::Operand { .. });
        let is_regions = |e: &Element| matches!(e, Element::Regions);
        let is_region = |e: &Element| matches!(e, Element::Region(_));
        let gives_operand_types =
            |e: &Element| matches!(e, Element::OperandTypes | Element::FunctionalType | Element::SameOrFunctionalType);
        let gives_result_types =
            |e: &Element| matches!(e, Element::ResultTypes | Element::FunctionalType | Element::SameOrFunctionalType);
        let is_fixed = |e: &Element| matches!(e, Element::Operand { fixed: Some(_), .. });
        if let Some(c) = find(&is_dict, 1) {
            return fail(c, "a format has only one 'attr-dict' or 'attr-dict-with-keyword'");
        }
        if count(&is_dict) == 0 {
            return fail(end, "a format needs exactly one 'attr-dict' or 'attr-dict-with-keyword'");
        }
        if let Some(c) = find(&is_all, 1) {
            return fail(c, "'operands' appears more than once");
        }
        if let (Some(_), Some(c)) = (find(&is_all, 0), find(&is_one, 0)) {
            return fail(c, "'operands' and 'operand(i)' cannot be mixed");
        }
        let indexed: Vec<(usize, usize)> =
            flat.iter().filter_map(|&(e, c)| if let Element::Operand { index, .. } = e { Some((*index, c)) } else { None }).collect();
        for &(index, c) in &indexed {
            if index >= indexed.len() || indexed.iter().filter(|(k, _)| *k == index).count() > 1 {
                return fail(c, "'operand(i)' must name operands 0, 1, … each once");
            }
        }
        let operands = match (indexed.len(), count(&is_all)) {
            (0, 0) => Count::None,
            (0, _) => Count::All,
            (n, _) => Count::Exactly(n),
        };
        if let Some(c) = find(&is_regions, 1).or(find(&is_regions, 0).and(find(&is_region, 0))) {
            return fail(c, "regions are given either once by 'regions' or each by 'region(i)'");
        }
        let bare: Vec<(usize, usize)> =
            flat.iter().filter_map(|&(e, c)| if let Element::Region(i) = e { Some((*i, c)) } else { None }).collect();
        if let Some(&(_, c)) = bare.iter().enumerate().find(|(k, (i, _))| k != i).map(|(_, b)| b) {
            return fail(c, "'region(i)' must name regions 0, 1, … in order");
        }
        let regions = match (bare.len(), count(&is_regions)) {
            (0, 0) => Count::None,
            (0, _) => Count::All,
            (n, _) => Count::Exactly(n),
        };
        if let Some(c) = find(&gives_operand_types, 1)
            .or(find(&gives_result_types, 1))
            .or(find(&is_fixed, 0).and(find(&gives_operand_types, 0)))
        {
            return fail(c, "operand and result types may each be given by one directive only");
        }
        let all_fixed = count(&is_fixed) == indexed.len();
        let typed = count(&gives_operand_types) > 0 || (!indexed.is_empty() && all_fixed);
        if operands != Count::None && !typed && !self.has_custom() {
            let c = find(&is_all, 0).or(find(&is_one, 0)).unwrap_or(end);
            return fail(c, "the operands' types are never given (add 'type(operands)' or a type directive)");
        }
        let has_result_types = count(&gives_result_types) > 0;
        let mut seen = Vec::new();
        for &(e, c) in &flat {
            if let Element::Attr(a) | Element::UntypedAttr(a) = e {
                if seen.contains(&a) {
                    return fail(c, &format!("attribute '{a}' appears more than once"));
                }
                seen.push(a);
            }
            if matches!(e, Element::UntypedAttr(_)) && !has_result_types {
                return fail(c, "'untyped' needs a directive that gives the result type");
            }
        }
        // Type directives about operands must come after the operands, whose count they need.
        let mut operands_seen = operands == Count::None;
        for &(e, c) in &flat {
            if is_all(e) || is_one(e) {
                operands_seen = true;
            } else if gives_operand_types(e) && !operands_seen {
                return fail(c, "a directive giving operand types must follow the operands");
            }
        }
        // `{` after `attr-dict` could be either the dictionary or a bare region.
        for w in flat.windows(2) {
            if matches!(w[0].0, Element::AttrDict { keyword: false }) && is_region(w[1].0) {
                return fail(w[1].1, "a bare region right after 'attr-dict' is ambiguous; use 'attr-dict-with-keyword'");
            }
        }
        self.operands = operands;
        self.regions = regions;
        self.has_result_types = has_result_types;
        Ok(())
    }
}

impl Syntax {
    /// The format string of a named syntax.
    pub fn format(self) -> &'static str {
        match self {
            Syntax::Default => "operands regions attr-dict `:` same-or-functional-type",
            Syntax::Constant => "untyped($value) attr-dict `:` type(results)",
            Syntax::IfElse => "operand(0, i1) (`->` `(` type(results) `)`)? region(0) `else` region(1) attr-dict",
            Syntax::Function => "custom<FunctionSignature> attr-dict-with-keyword custom<FunctionBody>",
            Syntax::Return => "(operands `:` type(operands))? attr-dict",
            Syntax::Module => "custom<ModuleName> attr-dict-with-keyword region(0)",
        }
    }
}

/// Reads a format string.
struct Reader<'s> {
    src: &'s str,
    pos: usize,
    fixed_types: Vec<(String, usize)>,
    customs: Vec<(String, usize)>,
    /// The column of each element outside groups and in them, in the order they are read.
    columns: Vec<usize>,
}

impl Reader<'_> {
    fn column(&self, at: usize) -> usize {
        self.src[..at.min(self.src.len())].chars().count() + 1
    }

    fn err<T>(&self, at: usize, message: impl Into<String>) -> Result<T, FormatError> {
        Err(FormatError { column: self.column(at), message: message.into() })
    }

    fn ws(&mut self) {
        while self.src[self.pos..].starts_with(|c: char| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, s: &str) -> bool {
        self.ws();
        if self.src[self.pos..].starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), FormatError> {
        if self.eat(s) { Ok(()) } else { self.err(self.pos, format!("expected '{s}'")) }
    }

    fn word(&mut self) -> &str {
        self.ws();
        let start = self.pos;
        while self.src[self.pos..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            self.pos += 1;
        }
        &self.src[start..self.pos]
    }

    fn index(&mut self) -> Result<usize, FormatError> {
        let at = self.pos;
        let w = self.word().to_string();
        w.parse().or_else(|_| self.err(at, format!("expected an index, found '{w}'")))
    }

    fn attr_name(&mut self) -> Result<String, FormatError> {
        let at = self.pos;
        self.expect("$")?;
        let start = self.pos;
        while self.src[self.pos..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
            self.pos += 1;
        }
        if start == self.pos {
            return self.err(at, "expected an attribute name after '$'");
        }
        Ok(self.src[start..self.pos].to_string())
    }

    /// Reads elements up to the end of the string, or of the group when `in_group`; returns them
    /// with the index of the element marked `^`, if any.
    fn elements(&mut self, in_group: bool) -> Result<(Vec<Element>, Option<usize>), FormatError> {
        let mut out = Vec::new();
        let mut anchor = None;
        loop {
            self.ws();
            if self.pos >= self.src.len() {
                if in_group {
                    return self.err(self.pos, "unclosed optional group: expected ')?'");
                }
                break;
            }
            if in_group && self.src[self.pos..].starts_with(")?") {
                self.pos += 2;
                break;
            }
            if self.eat("^") {
                if !in_group || out.is_empty() || anchor.is_some() {
                    return self.err(self.pos - 1, "'^' marks one element of an optional group as its anchor");
                }
                anchor = Some(out.len() - 1);
                continue;
            }
            let at = self.pos;
            let e = self.element(in_group)?;
            if !matches!(e, Element::Optional { .. }) {
                self.columns.push(self.column(at));
            }
            out.push(e);
        }
        Ok((out, anchor))
    }

    fn element(&mut self, in_group: bool) -> Result<Element, FormatError> {
        self.ws();
        let at = self.pos;
        let rest = &self.src[self.pos..];
        if rest.starts_with('`') {
            let Some(end) = rest[1..].find('`') else { return self.err(at, "unclosed literal: expected '`'") };
            let text = rest[1..1 + end].to_string();
            self.pos += end + 2;
            if !is_keyword(&text) && !PUNCTUATION.contains(&text.as_str()) {
                return self.err(at, format!("'{text}' is neither a keyword nor allowed punctuation"));
            }
            return Ok(Element::Literal(text));
        }
        if rest.starts_with('$') {
            return Ok(Element::Attr(self.attr_name()?));
        }
        if rest.starts_with('(') {
            if in_group {
                return self.err(at, "optional groups do not nest");
            }
            self.pos += 1;
            let (elements, marked) = self.elements(true)?;
            return self.group(at, elements, marked);
        }
        let word = self.word().to_string();
        let e = match word.as_str() {
            "operands" => Element::Operands,
            "regions" => Element::Regions,
            "attr-dict" => Element::AttrDict { keyword: false },
            "attr-dict-with-keyword" => Element::AttrDict { keyword: true },
            "same-or-functional-type" => Element::SameOrFunctionalType,
            "operand" => {
                self.expect("(")?;
                let index = self.index()?;
                let mut fixed = None;
                if self.eat(",") {
                    self.ws();
                    let start = self.pos;
                    let mut depth = 0usize;
                    while let Some(c) = self.src[self.pos..].chars().next() {
                        match c {
                            '(' | '<' | '[' => depth += 1,
                            ')' if depth == 0 => break,
                            ')' | '>' | ']' => depth = depth.saturating_sub(1),
                            _ => {}
                        }
                        self.pos += c.len_utf8();
                    }
                    let text = self.src[start..self.pos].trim().to_string();
                    if text.is_empty() {
                        return self.err(start, "expected a type after ','");
                    }
                    self.fixed_types.push((text.clone(), self.column(start)));
                    fixed = Some(text);
                }
                self.expect(")")?;
                Element::Operand { index, fixed }
            }
            "region" => {
                self.expect("(")?;
                let i = self.index()?;
                self.expect(")")?;
                Element::Region(i)
            }
            "untyped" => {
                self.expect("(")?;
                let a = self.attr_name()?;
                self.expect(")")?;
                Element::UntypedAttr(a)
            }
            "type" => {
                self.expect("(")?;
                let w = self.word().to_string();
                let e = match w.as_str() {
                    "operands" => Element::OperandTypes,
                    "results" => Element::ResultTypes,
                    _ => return self.err(at, format!("'type' takes 'operands' or 'results', not '{w}'")),
                };
                self.expect(")")?;
                e
            }
            "functional-type" => {
                self.expect("(")?;
                let ok = self.word() == "operands" && self.eat(",") && self.word() == "results";
                if !ok {
                    return self.err(at, "expected 'functional-type(operands, results)'");
                }
                self.expect(")")?;
                Element::FunctionalType
            }
            "custom" => {
                self.expect("<")?;
                let name_at = self.pos;
                let name = self.word().to_string();
                if name.is_empty() {
                    return self.err(name_at, "expected a custom directive name");
                }
                self.expect(">")?;
                self.customs.push((name.clone(), self.column(name_at)));
                Element::Custom(name)
            }
            "" => return self.err(at, format!("unexpected '{}'", rest.chars().next().unwrap_or(' '))),
            other => return self.err(at, format!("unknown directive '{other}'")),
        };
        Ok(e)
    }

    /// Checks an optional group and picks its anchor.
    fn group(&self, at: usize, elements: Vec<Element>, marked: Option<usize>) -> Result<Element, FormatError> {
        let Some(first) = elements.first() else { return self.err(at, "an optional group may not be empty") };
        if !matches!(first, Element::Literal(_) | Element::Operands | Element::Regions) {
            return self.err(at, "an optional group must begin with a literal, 'operands' or 'regions'");
        }
        let anchorable = |e: &Element| {
            matches!(e, Element::Operands | Element::ResultTypes | Element::Regions | Element::Attr(_) | Element::UntypedAttr(_))
        };
        if let Some(e) = elements.iter().find(|e| {
            matches!(e, Element::AttrDict { .. } | Element::Operand { .. } | Element::Region(_) | Element::Custom(_))
        }) {
            return self.err(at, format!("{e:?} cannot be optional"));
        }
        let anchor = match marked {
            Some(i) if anchorable(&elements[i]) => i,
            Some(_) => return self.err(at, "an anchor must be operands, type(results), regions or an attribute"),
            None => match elements.iter().position(anchorable) {
                Some(i) => i,
                None => return self.err(at, "an optional group needs an anchor: operands, type(results), regions or an attribute"),
            },
        };
        Ok(Element::Optional { elements, anchor })
    }
}
