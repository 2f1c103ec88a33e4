//! Parsing an op written in its assembly format, and the parser interface custom directives read through.

use super::attributes::Literal;
use super::*;
use crate::builtin::{ARG_ATTRS, FUNCTION_TYPE, RES_ATTRS, SYM_NAME};
use crate::context::Traits;
use crate::format::{AssemblyFormat, Element, is_keyword};
use crate::types::TypeKind;

/// What has been read of an op so far: operands, types, attributes and regions.
pub struct ParsedOp {
    operands: Vec<Option<OperandRef>>,
    operand_types: Vec<Option<Type>>,
    result_types: Vec<Type>,
    attrs: Vec<(Arc<str>, Attribute)>,
    /// Attributes stored after those of `attr-dict` (a function's symbol and type).
    trailing: Vec<(Arc<str>, Attribute)>,
    /// `untyped($a)` literals, typed by the result once it is known: name, literal, position.
    untyped: Vec<(String, Literal, usize)>,
    /// The op whose regions collect the parsed regions.
    holder: OpId,
    /// A function's named entry arguments, and whether every argument was named.
    entry_args: Vec<(String, Location, Type)>,
    all_named: bool,
    isolated: bool,
}

impl ParsedOp {
    /// Adds an attribute, stored in the order it was read.
    pub fn add_attr(&mut self, name: &str, value: Attribute) {
        self.attrs.push((name.into(), value));
    }

    /// How many operands have been read.
    pub fn num_operands(&self) -> usize {
        self.operands.len()
    }

    /// Sets the type of operand `i` (read already or not).
    pub fn set_operand_type(&mut self, i: usize, ty: Type) {
        if self.operand_types.len() <= i {
            self.operands.resize_with(i + 1, || None);
            self.operand_types.resize(i + 1, None);
        }
        self.operand_types[i] = Some(ty);
    }

    /// Sets the result types.
    pub fn set_result_types(&mut self, types: Vec<Type>) {
        self.result_types = types;
    }

    fn push_operand(&mut self, index: usize, r: OperandRef, ty: Option<Type>) {
        if self.operands.len() <= index {
            self.operands.resize_with(index + 1, || None);
            self.operand_types.resize(index + 1, None);
        }
        self.operands[index] = Some(r);
        if ty.is_some() {
            self.operand_types[index] = ty;
        }
    }
}

/// What a custom directive reads through: tokens, types, attributes, operands and regions.
pub struct OpParser<'p, 'a> {
    p: &'p mut Parser<'a>,
}

impl OpParser<'_, '_> {
    /// Eats punctuation `s` after whitespace.
    pub fn eat(&mut self, s: &str) -> bool {
        self.p.eat(s)
    }

    /// Eats the keyword `s` (not followed by an identifier character).
    pub fn eat_keyword(&mut self, s: &str) -> bool {
        self.p.eat_kw(s)
    }

    pub fn expect(&mut self, s: &str) -> PResult<()> {
        self.p.expect(s)
    }

    pub fn parse_type(&mut self) -> PResult<Type> {
        self.p.parse_type()
    }

    pub fn parse_attribute(&mut self) -> PResult<Attribute> {
        self.p.parse_attr()
    }

    /// A symbol name after `@`: an identifier or a quoted string.
    pub fn symbol_name(&mut self) -> PResult<String> {
        self.p.symbol_name()
    }

    /// Reads an operand reference (`%x`, `%3#1`) and appends it to `st`; its type is given
    /// with [`ParsedOp::set_operand_type`].
    pub fn parse_operand(&mut self, st: &mut ParsedOp) -> PResult<()> {
        let r = self.p.parse_operand_ref()?;
        st.push_operand(st.operands.len(), r, None);
        Ok(())
    }

    /// Reads a region `{...}` and appends it to the op.
    pub fn parse_region(&mut self, st: &mut ParsedOp) -> PResult<()> {
        let r = self.p.m.add_region(st.holder);
        self.p.parse_region(r, st.isolated, &[])
    }

    /// An error at the cursor.
    pub fn error(&self, message: impl Into<String>) -> Diagnostic {
        self.p.err(message)
    }

    /// `[vis] @name(%arg: T {attrs}, ...) -> (R {attrs})`.
    pub(crate) fn function_signature(&mut self, st: &mut ParsedOp) -> PResult<()> {
        let p = &mut *self.p;
        if let Some(vis) = ["private", "public", "nested"].into_iter().find(|v| p.eat_kw(v)) {
            st.add_attr("sym_visibility", Attribute::str(vis));
        }
        p.ws();
        if !p.eat("@") {
            return Err(p.err(format!("expected '@' and a function name{}", p.found())));
        }
        let sym = p.symbol_name()?;
        p.expect("(")?;
        let mut inputs = Vec::new();
        let mut arg_attrs = Vec::new();
        st.all_named = true;
        p.ws();
        if !p.eat(")") {
            loop {
                p.ws();
                let name = if p.peek() == b'%' {
                    let l = p.here();
                    p.pos += 1;
                    let n = p.suffix_id().ok_or_else(|| p.err("expected argument name"))?.to_string();
                    p.expect(":")?;
                    Some((n, l))
                } else {
                    None
                };
                let t = p.parse_type()?;
                p.ws();
                let d = if p.peek() == b'{' { p.parse_attr_dict_body()? } else { Vec::new() };
                arg_attrs.push(Attribute::dict(d));
                if p.eat_kw("loc") {
                    let _ = p.parse_loc_body(None)?;
                }
                match name {
                    Some((n, l)) => st.entry_args.push((n, l, t.clone())),
                    None => st.all_named = false,
                }
                inputs.push(t);
                if !p.eat(",") {
                    break;
                }
            }
            p.expect(")")?;
        }
        let mut results = Vec::new();
        let mut res_attrs = Vec::new();
        if p.eat("->") {
            p.ws();
            let paren = p.peek() == b'(' && !p.looks_like_function_type();
            if paren {
                p.pos += 1;
                p.ws();
                if !p.eat(")") {
                    loop {
                        results.push(p.parse_type()?);
                        p.ws();
                        let d = if p.peek() == b'{' { p.parse_attr_dict_body()? } else { Vec::new() };
                        res_attrs.push(Attribute::dict(d));
                        if !p.eat(",") {
                            break;
                        }
                    }
                    p.expect(")")?;
                }
            } else {
                results.push(p.parse_type()?);
                res_attrs.push(Attribute::dict(Vec::new()));
            }
        }
        st.trailing.push((SYM_NAME.into(), Attribute::str(&sym)));
        st.trailing.push((FUNCTION_TYPE.into(), Attribute::Type(Type::function(inputs, results))));
        if arg_attrs.iter().any(|a| matches!(a, Attribute::Dict(d) if !d.is_empty())) {
            st.trailing.push((ARG_ATTRS.into(), Attribute::array(arg_attrs)));
        }
        if res_attrs.iter().any(|a| matches!(a, Attribute::Dict(d) if !d.is_empty())) {
            st.trailing.push((RES_ATTRS.into(), Attribute::array(res_attrs)));
        }
        Ok(())
    }

    /// A function's optional body, whose entry arguments the signature named.
    pub(crate) fn function_body(&mut self, st: &mut ParsedOp) -> PResult<()> {
        let p = &mut *self.p;
        let r = p.m.add_region(st.holder);
        p.ws();
        if p.peek() == b'{' {
            if !st.all_named {
                return Err(p.err("a function with a body needs named arguments ('%name: type')"));
            }
            let args = std::mem::take(&mut st.entry_args);
            p.parse_region(r, true, &args)?;
        }
        Ok(())
    }
}

impl<'a> Parser<'a> {
    /// Parses the rest of a custom op `name` (after its name) in `format`.
    pub(super) fn parse_formatted_op(&mut self, name: &str, format: &AssemblyFormat, loc: Location) -> PResult<OpId> {
        let holder = self.m.create_op(OperationState::new(MODULE));
        let mut st = ParsedOp {
            operands: Vec::new(),
            operand_types: Vec::new(),
            result_types: Vec::new(),
            attrs: Vec::new(),
            trailing: Vec::new(),
            untyped: Vec::new(),
            holder,
            entry_args: Vec::new(),
            all_named: true,
            isolated: self.ctx.has_trait(name, Traits::ISOLATED_FROM_ABOVE),
        };
        let start = self.pos;
        self.parse_elements(format.elements(), &mut st)?;
        let mut refs = Vec::with_capacity(st.operands.len());
        let mut types = Vec::with_capacity(st.operands.len());
        for (r, t) in st.operands.into_iter().zip(st.operand_types) {
            match (r, t) {
                (Some(r), Some(t)) => {
                    refs.push(r);
                    types.push(t);
                }
                _ => return Err(self.err_at(start, format!("the format of '{name}' gives no type for an operand"))),
            }
        }
        let mut attrs = st.attrs;
        attrs.extend(st.trailing);
        for (a, lit, pos) in st.untyped {
            let [ty] = st.result_types.as_slice() else {
                return Err(self.err_at(pos, "an untyped literal needs exactly one result to take its type from"));
            };
            let v = self.type_literal(lit, ty, pos)?;
            attrs.push((a.into(), v));
        }
        self.finish_op(name, &refs, &types, st.result_types, attrs, holder, loc)
    }

    fn parse_elements(&mut self, elements: &[Element], st: &mut ParsedOp) -> PResult<()> {
        for e in elements {
            self.parse_element(e, st)?;
        }
        Ok(())
    }

    fn eat_literal(&mut self, s: &str) -> bool {
        if is_keyword(s) { self.eat_kw(s) } else { self.eat(s) }
    }

    /// Whether operands follow: `%a, %b#1` not ending in `=`, which would make it the next op's results.
    fn at_operands(&mut self) -> bool {
        self.ws();
        if self.peek() != b'%' {
            return false;
        }
        let save = self.pos;
        while self.peek() == b'%' {
            self.pos += 1;
            let _ = self.suffix_id();
            if matches!(self.peek(), b'#' | b':') && self.peek_at(1).is_ascii_digit() {
                self.pos += 1;
                while self.peek().is_ascii_digit() {
                    self.pos += 1;
                }
            }
            if !self.eat(",") {
                break;
            }
            self.ws();
        }
        self.ws();
        let results = self.peek() == b'=';
        self.pos = save;
        !results
    }

    /// Whether `(` and then `{` follow: a parenthesized region list.
    fn at_region_list(&mut self) -> bool {
        self.ws();
        if self.peek() != b'(' {
            return false;
        }
        let save = self.pos;
        self.pos += 1;
        self.ws();
        let yes = self.peek() == b'{';
        self.pos = save;
        yes
    }

    fn parse_element(&mut self, e: &Element, st: &mut ParsedOp) -> PResult<()> {
        match e {
            Element::Literal(s) => {
                if !self.eat_literal(s) {
                    return Err(self.err(format!("expected '{s}'{}", self.found())));
                }
            }
            Element::Optional { elements, .. } => {
                let present = match &elements[0] {
                    Element::Literal(s) => self.eat_literal(s),
                    Element::Operands => self.at_operands(),
                    Element::Regions => self.at_region_list(),
                    _ => false,
                };
                if present {
                    let rest = if matches!(elements[0], Element::Literal(_)) { &elements[1..] } else { &elements[..] };
                    self.parse_elements(rest, st)?;
                }
            }
            Element::Operands => {
                if !self.at_operands() {
                    return Ok(());
                }
                for r in self.parse_operand_refs()? {
                    st.push_operand(st.operands.len(), r, None);
                }
            }
            Element::Operand { index, fixed } => {
                let r = self.parse_operand_ref()?;
                let ty = match fixed {
                    Some(t) => Some(crate::parse::parse_type(self.ctx, t).map_err(|d| self.err(d.message))?),
                    None => None,
                };
                st.push_operand(*index, r, ty);
            }
            Element::Attr(a) => {
                let v = self.parse_attr()?;
                st.add_attr(a, v);
            }
            Element::UntypedAttr(a) => {
                self.ws();
                let pos = self.pos;
                let lit = self.parse_untyped_literal()?;
                st.untyped.push((a.clone(), lit, pos));
            }
            Element::AttrDict { keyword } => {
                self.ws();
                let present = if *keyword { self.eat_kw("attributes") } else { self.peek() == b'{' };
                if present {
                    let d = self.parse_attr_dict_body()?;
                    st.attrs.extend(d);
                }
            }
            Element::OperandTypes => {
                for i in 0..st.operands.len() {
                    if i > 0 {
                        self.expect(",")?;
                    }
                    st.operand_types[i] = Some(self.parse_type()?);
                }
            }
            Element::ResultTypes => {
                self.ws();
                st.result_types.clear();
                if self.peek() != b')' {
                    loop {
                        st.result_types.push(self.parse_type()?);
                        if !self.eat(",") {
                            break;
                        }
                    }
                }
            }
            Element::FunctionalType | Element::SameOrFunctionalType => {
                self.ws();
                let tpos = self.pos;
                let ty = self.parse_type()?;
                let n = st.operands.len();
                let (inputs, results) = match ty.kind() {
                    TypeKind::Function { inputs, results } => (inputs.clone(), results.clone()),
                    _ if matches!(e, Element::SameOrFunctionalType) => (vec![ty.clone(); n], vec![ty.clone()]),
                    _ => return Err(self.err_at(tpos, "expected a function type '(inputs) -> results'")),
                };
                if inputs.len() != n {
                    return Err(self.err_at(tpos, format!("expected {n} operand type(s) but had {}", inputs.len())));
                }
                for (slot, t) in st.operand_types.iter_mut().zip(inputs) {
                    *slot = Some(t);
                }
                st.result_types = results;
            }
            Element::Regions => {
                if self.at_region_list() {
                    self.expect("(")?;
                    loop {
                        let r = self.m.add_region(st.holder);
                        self.parse_region(r, st.isolated, &[])?;
                        if !self.eat(",") {
                            break;
                        }
                    }
                    self.expect(")")?;
                }
            }
            Element::Region(_) => {
                let r = self.m.add_region(st.holder);
                self.parse_region(r, st.isolated, &[])?;
            }
            Element::Custom(name) => {
                let Some(d) = self.ctx.custom_directive(name).cloned() else {
                    return Err(self.err(format!("unknown custom directive '{name}'")));
                };
                d.parse(&mut OpParser { p: self }, st)?;
            }
        }
        Ok(())
    }
}
