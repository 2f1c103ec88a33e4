//! The TorchScript source of `forward`: one statement per op, every aten op spelled
//! `ops.<namespace>.<name>(…)` with all of its schema's arguments (positional ones by position,
//! keyword-only ones by name, constants as literals of the argument's type), so that
//! TorchScript's overload resolution picks the overload the IR names; `prim.If` and
//! `prim.Loop` as `if`/`for`/`while`; values named after their IR names (made identifiers,
//! unique). Emitting what was emitted once more gives the same text.

use dialect_prim::kinds::{Attr as PA, AttrExt as _, Kind as PK, TypeExt as _};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use dialect_aten::{ArgSource, bind_args};
use ir::schema::SchemaType;
use ir::{Attribute, BlockId, DenseAttr, Module, OpId, Type, ValueId};

use super::overload::{self, Given, Ty};

/// What one argument of `forward` is in the saved module.
#[derive(Clone, Debug)]
pub(super) enum ArgRole {
    /// State read from the module or the constants table: the expression that reads it
    /// (`self.fc1.weight`, `CONSTANTS.c0`).
    State(String),
    /// A user input, by its parameter name in the saved `forward`.
    Input(String),
}

/// What one result of `forward` is.
#[derive(Clone, Copy, Debug)]
pub(super) enum ResultRole {
    /// A user output, returned.
    Output,
    /// The new value of the state or input of this argument: copied into it before returning.
    Mutation(usize),
}

/// A construct the emitter cannot express, at an op.
#[derive(Debug)]
pub(super) struct EmitError {
    pub at: String,
    pub message: String,
}

/// The method text and the tensor constants the body introduced (`CONSTANTS.c<first + i>`).
pub(super) struct Method {
    pub text: String,
    pub dense_constants: Vec<DenseAttr>,
}

type R<T> = Result<T, EmitError>;

/// Names that the emitted code uses for itself, and Python's keywords: never a value's name.
const RESERVED: &[&str] = &[
    "self", "torch", "ops", "CONSTANTS", "annotate", "getattr", "range", "int", "float", "bool", "str", "unchecked_cast",
    "uninitialized", "max", "Tensor", "List", "Tuple", "Optional", "Dict", "Any", "Device", "NoneType", "Module", "Final",
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or",
    "pass", "raise", "return", "try", "while", "with", "yield", "print", "len", "isinstance", "fork", "wait", "math",
];

/// Whether `name` can be written as `.name` (an identifier that is not a keyword or one of ours).
pub(super) fn is_plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name)
}

/// `expr.name`, or `getattr(expr, "name")` when `name` is not an identifier.
pub(super) fn attribute(expr: &str, name: &str) -> String {
    if is_plain_identifier(name) && !name.starts_with("__") {
        format!("{expr}.{name}")
    } else {
        format!("getattr({expr}, {})", str_literal(name))
    }
}

/// A Python string literal.
pub(super) fn str_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A float literal that reads back as the same `f64`.
fn float_literal(f: f64) -> String {
    if f.is_nan() {
        "float(\"nan\")".into()
    } else if f == f64::INFINITY {
        "float(\"inf\")".into()
    } else if f == f64::NEG_INFINITY {
        "float(\"-inf\")".into()
    } else {
        format!("{f:?}")
    }
}

/// An int literal; `i64::MIN` has none (its magnitude is past `i64`), so it is computed.
fn int_literal(i: i64) -> String {
    if i == i64::MIN { format!("{} - 1", i + 1) } else { i.to_string() }
}

/// The TorchScript spelling of an IR type.
pub(super) fn py_type(t: &Type) -> Result<String, String> {
    Ok(match t.pk() {
        PK::Tensor(_) => "Tensor".into(),
        PK::Int => "int".into(),
        PK::Float => "float".into(),
        PK::Bool => "bool".into(),
        PK::Str => "str".into(),
        PK::None => "NoneType".into(),
        PK::Device => "Device".into(),
        PK::Any => "Any".into(),
        PK::List(e) => format!("List[{}]", py_type(e)?),
        PK::Optional(e) => format!("Optional[{}]", py_type(e)?),
        PK::Tuple(items) if items.is_empty() => "Tuple[()]".into(),
        PK::Tuple(items) => format!("Tuple[{}]", items.iter().map(py_type).collect::<Result<Vec<_>, _>>()?.join(", ")),
        PK::Function { .. } | PK::Other => {
            return Err(format!("type `{t}` has no TorchScript spelling"));
        }
    })
}

/// The TorchScript spelling of a schema type, for the element type of an empty list.
fn schema_py_type(t: &SchemaType) -> Result<&'static str, String> {
    Ok(match t.unwrap_optional() {
        SchemaType::Int | SchemaType::SymInt => "int",
        SchemaType::Float | SchemaType::SymFloat => "float",
        SchemaType::Bool | SchemaType::SymBool => "bool",
        SchemaType::Tensor => "Tensor",
        SchemaType::Str => "str",
        other => return Err(format!("an empty list of `{other}`")),
    })
}

/// A constant argument as a literal of the schema type `ty`.
fn literal(a: &Attribute, ty: &SchemaType) -> Result<String, String> {
    let inner = ty.unwrap_optional();
    match a.pa() {
        PA::None => return Ok("None".into()),
        PA::DType(d) => return Ok(d.scalar_type_code().to_string()),
        PA::Device(d) => return Ok(format!("torch.device({})", str_literal(d))),
        PA::Other(_) => {}
    }
    Ok(match a {
        Attribute::Bool(b) => if *b { "True" } else { "False" }.into(),
        Attribute::Int(i) if matches!(inner, SchemaType::Float | SchemaType::SymFloat) => float_literal(*i as f64),
        Attribute::Int(i) => int_literal(*i),
        Attribute::Float(f) => float_literal(f.get()),
        Attribute::Str(s) if matches!(inner, SchemaType::Device) => format!("torch.device({})", str_literal(s)),
        Attribute::Str(s) => str_literal(s),
        Attribute::Array(items) => {
            let elem = match inner {
                SchemaType::List { elem, .. } => elem.as_ref(),
                other => return Err(format!("a list given for an argument of type `{other}`")),
            };
            if items.is_empty() {
                format!("annotate(List[{}], [])", schema_py_type(elem)?)
            } else {
                let items = items.iter().map(|i| literal(i, elem)).collect::<Result<Vec<_>, _>>()?;
                format!("[{}]", items.join(", "))
            }
        }
        other => return Err(format!("constant `{other}` for an argument of type `{ty}` has no TorchScript literal")),
    })
}

/// The TorchScript type of the literal [`literal`] writes for `a`.
fn literal_ty(a: &Attribute, ty: &SchemaType) -> Ty {
    let inner = ty.unwrap_optional();
    match a.pa() {
        PA::None => return Ty::None,
        PA::DType(_) => return Ty::Int,
        PA::Device(_) => return Ty::Device,
        PA::Other(_) => {}
    }
    match a {
        Attribute::Bool(_) => Ty::Bool,
        Attribute::Int(_) if matches!(inner, SchemaType::Float | SchemaType::SymFloat) => Ty::Float,
        Attribute::Int(_) => Ty::Int,
        Attribute::Float(_) => Ty::Float,
        Attribute::Str(_) if matches!(inner, SchemaType::Device) => Ty::Device,
        Attribute::Str(_) => Ty::Str,
        Attribute::Array(_) => Ty::of_schema(inner),
        _ => Ty::Other,
    }
}

/// Turns `name` into an identifier: other characters become `_`, a leading digit gets one.
fn sanitize(name: &str) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

struct Emitter<'a> {
    ctx: &'a ir::Context,
    m: &'a Module,
    names: HashMap<ValueId, String>,
    taken: HashSet<String>,
    out: String,
    dense_constants: Vec<DenseAttr>,
    first_constant: usize,
    /// The number of the next name made up for a value without one (`_0`, `_1`, …).
    next_temp: usize,
}

/// Emits `def forward(self, …)` of `func` for the class `self_class`; `first_constant` is the
/// index the first tensor constant of the body gets in `CONSTANTS`.
pub(super) fn forward(
    ctx: &ir::Context,
    m: &Module,
    func: OpId,
    self_class: &str,
    args: &[ArgRole],
    results: &[ResultRole],
    first_constant: usize,
) -> R<Method> {
    let at_func = |message: String| EmitError { at: "`func.func @forward`".into(), message };
    let (_, result_types) = ir::builtin::function_signature(m, func).ok_or_else(|| at_func("has no function type".into()))?;
    let block = m.regions(func).first().and_then(|&r| m.entry_block(r)).ok_or_else(|| at_func("has no body".into()))?;
    let block_args = m.block_args(block).to_vec();
    if block_args.len() != args.len() {
        return Err(at_func(format!("has {} arguments but {} roles", block_args.len(), args.len())));
    }
    let mut e = Emitter {
        ctx,
        m,
        names: HashMap::new(),
        taken: RESERVED.iter().map(|s| s.to_string()).collect(),
        out: String::new(),
        dense_constants: Vec::new(),
        first_constant,
        next_temp: 0,
    };
    // Parameters first, so that they keep their names.
    let mut params = Vec::new();
    for (&v, role) in block_args.iter().zip(args) {
        if let ArgRole::Input(name) = role {
            let name = e.fresh(name);
            e.names.insert(v, name.clone());
            let ty = py_type(m.value_type(v)).map_err(at_func)?;
            params.push(format!("{name}: {ty}"));
        }
    }
    let mut outputs = Vec::new();
    for (k, role) in results.iter().enumerate() {
        if let ResultRole::Output = role {
            outputs.push(result_types.get(k).ok_or_else(|| at_func(format!("result {k} has no type")))?.clone());
        }
    }
    let ret_ty = match &outputs[..] {
        [one] => py_type(one).map_err(at_func)?,
        many => py_type(&Type::tuple(many.to_vec())).map_err(at_func)?,
    };
    let mut head = format!("  def forward(self: {self_class}");
    for p in &params {
        let _ = write!(head, ",\n    {p}");
    }
    let _ = writeln!(head, ") -> {ret_ty}:");
    e.out = head;
    // State the body reads, bound to locals named after the arguments.
    for (&v, role) in block_args.iter().zip(args) {
        if let ArgRole::State(expr) = role {
            let mutated = results.iter().any(|r| matches!(r, ResultRole::Mutation(i) if block_args.get(*i) == Some(&v)));
            if m.has_uses(v) || mutated {
                let name = e.name(v);
                e.line(2, &format!("{name} = {expr}"));
            }
        }
    }
    let term = e.block(block, 2)?;
    let returned = m.operands(term).to_vec();
    if returned.len() != results.len() {
        return Err(at_func(format!("returns {} values but has {} results", returned.len(), results.len())));
    }
    // A returned value that is itself a mutated argument would see the copy: return a clone.
    let mutated: Vec<ValueId> = results
        .iter()
        .filter_map(|r| match r {
            ResultRole::Mutation(i) => block_args.get(*i).copied(),
            ResultRole::Output => None,
        })
        .collect();
    let mut out_names = Vec::new();
    for (&v, role) in returned.iter().zip(results) {
        if let ResultRole::Output = role {
            let name = e.name(v);
            if mutated.contains(&v) {
                let copy = e.fresh(&format!("{name}_out"));
                e.line(2, &format!("{copy} = ops.aten.clone({name}, memory_format=None)"));
                out_names.push(copy);
            } else {
                out_names.push(name);
            }
        }
    }
    for (&v, role) in returned.iter().zip(results) {
        if let ResultRole::Mutation(i) = role {
            let target = block_args.get(*i).copied().ok_or_else(|| at_func(format!("a mutation names argument {i}, which does not exist")))?;
            if target != v {
                let (t, v) = (e.name(target), e.name(v));
                e.line(2, &format!("ops.aten.copy_({t}, {v}, False)"));
            }
        }
    }
    match &out_names[..] {
        [one] => e.line(2, &format!("return {one}")),
        many => e.line(2, &format!("return {}", tuple_expr(many))),
    }
    Ok(Method { text: e.out, dense_constants: e.dense_constants })
}

/// `(a, b)`, `(a,)`, `()`.
fn tuple_expr(items: &[String]) -> String {
    match items {
        [one] => format!("({one},)"),
        many => format!("({})", many.join(", ")),
    }
}

/// `a, b` as assignment targets (`a,` for one).
fn targets(items: &[String]) -> String {
    match items {
        [one] => format!("{one},"),
        many => many.join(", "),
    }
}

/// `a = x` or `a, b = x, y`: each name takes the value at its position.
fn parallel(names: &[String], values: &[String]) -> String {
    format!("{} = {}", names.join(", "), values.join(", "))
}

impl Emitter<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// A name not used yet, made from `base`.
    fn fresh(&mut self, base: &str) -> String {
        let base = sanitize(base);
        let mut name = base.clone();
        let mut n = 0;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.taken.insert(name.clone());
        name
    }

    /// The Python name of `v`, given on first use.
    fn name(&mut self, v: ValueId) -> String {
        if let Some(n) = self.names.get(&v) {
            return n.clone();
        }
        let name = match self.m.value_name(v) {
            Some(base) => self.fresh(base),
            None => loop {
                let candidate = format!("_{}", self.next_temp);
                self.next_temp += 1;
                if !self.taken.contains(&candidate) {
                    self.taken.insert(candidate.clone());
                    break candidate;
                }
            },
        };
        self.names.insert(v, name.clone());
        name
    }

    fn err(&self, op: OpId, message: impl Into<String>) -> EmitError {
        EmitError {
            at: format!("`{}` at {}", self.m.op_name(op), self.m.loc(op)),
            message: message.into(),
        }
    }

    /// Emits the ops of `block` but its terminator, which it returns.
    fn block(&mut self, block: BlockId, indent: usize) -> R<OpId> {
        let ops = self.m.block_ops(block);
        let Some((&term, body)) = ops.split_last() else {
            return Err(EmitError { at: "a block".into(), message: "has no terminator".into() });
        };
        for &op in body {
            self.op(op, indent)?;
        }
        Ok(term)
    }

    fn result_names(&mut self, op: OpId) -> Vec<String> {
        self.m.results(op).to_vec().into_iter().map(|r| self.name(r)).collect()
    }

    fn operand_names(&mut self, op: OpId) -> Vec<String> {
        self.m.operands(op).to_vec().into_iter().map(|v| self.name(v)).collect()
    }

    /// `results = expr`, or the bare expression when the op has no results.
    fn assign(&mut self, op: OpId, indent: usize, expr: &str) {
        let names = self.result_names(op);
        match &names[..] {
            [] => self.line(indent, expr),
            [one] => self.line(indent, &format!("{one} = {expr}")),
            many => self.line(indent, &format!("{} = {expr}", many.join(", "))),
        }
    }

    fn op(&mut self, op: OpId, indent: usize) -> R<()> {
        let name = self.m.op_name(op).to_owned();
        let operands = self.operand_names(op);
        let binary = |sym: &str| format!("{} {sym} {}", operands[0], operands[1]);
        let expr = match name.as_str() {
            dialect_prim::CONSTANT => {
                // Constants are written where they are used, as literals.
                let literal = self.constant(op)?;
                let r = self.m.results(op)[0];
                self.names.insert(r, literal);
                return Ok(());
            }
            dialect_prim::LIST_CONSTRUCT => self.list(op, &operands)?,
            dialect_prim::TUPLE_CONSTRUCT => tuple_expr(&operands),
            dialect_prim::LIST_UNPACK | dialect_prim::TUPLE_UNPACK => {
                let names = self.result_names(op);
                self.line(indent, &format!("{} = {}", targets(&names), operands[0]));
                return Ok(());
            }
            dialect_prim::TUPLE_INDEX => {
                let i = self.m.attr(op, "index").and_then(Attribute::as_int).ok_or_else(|| self.err(op, "has no `index`"))?;
                format!("{}[{i}]", operands[0])
            }
            dialect_prim::ADD if operands.len() == 2 => binary("+"),
            dialect_prim::SUB if operands.len() == 2 => binary("-"),
            dialect_prim::MUL if operands.len() == 2 => binary("*"),
            dialect_prim::FLOORDIV if operands.len() == 2 => binary("//"),
            dialect_prim::MOD if operands.len() == 2 => binary("%"),
            dialect_prim::EQ if operands.len() == 2 => binary("=="),
            dialect_prim::NE if operands.len() == 2 => binary("!="),
            dialect_prim::LT if operands.len() == 2 => binary("<"),
            dialect_prim::LE if operands.len() == 2 => binary("<="),
            dialect_prim::GT if operands.len() == 2 => binary(">"),
            dialect_prim::GE if operands.len() == 2 => binary(">="),
            dialect_prim::MAX if operands.len() == 2 => format!("max({}, {})", operands[0], operands[1]),
            dialect_prim::UNINITIALIZED => {
                let r = self.m.results(op)[0];
                format!("uninitialized({})", py_type(self.m.value_type(r)).map_err(|e| self.err(op, e))?)
            }
            dialect_prim::RAISE_EXCEPTION => format!("ops.prim.RaiseException({})", operands.join(", ")),
            dialect_prim::IF => return self.if_op(op, indent),
            dialect_prim::LOOP => return self.loop_op(op, indent),
            _ => self.call(op, &operands)?,
        };
        self.assign(op, indent, &expr);
        Ok(())
    }

    fn constant(&mut self, op: OpId) -> R<String> {
        let value = self.m.attr(op, "value").ok_or_else(|| self.err(op, "has no `value`"))?;
        let ty = self.m.results(op).first().map(|&r| self.m.value_type(r).clone()).ok_or_else(|| self.err(op, "has no result"))?;
        Ok(match (value.pa(), ty.pk()) {
            (PA::Other(Attribute::Dense(d)), _) => {
                let index = self.first_constant + self.dense_constants.len();
                self.dense_constants.push(d.clone());
                format!("CONSTANTS.c{index}")
            }
            (PA::Other(Attribute::Int(i)), PK::Float) => float_literal(*i as f64),
            (PA::Other(Attribute::Int(i)), _) => int_literal(*i),
            (PA::Other(Attribute::Float(f)), _) => float_literal(f.get()),
            (PA::Other(Attribute::Bool(b)), _) => if *b { "True" } else { "False" }.into(),
            (PA::None, _) => "None".into(),
            (PA::Other(Attribute::Str(s)), PK::Device) => format!("torch.device({})", str_literal(s)),
            (PA::Device(s), _) => format!("torch.device({})", str_literal(s)),
            (PA::Other(Attribute::Str(s)), _) => str_literal(s),
            (PA::DType(d), _) => d.scalar_type_code().to_string(),
            (_, _) => return Err(self.err(op, format!("constant `{value}` has no TorchScript literal"))),
        })
    }

    fn list(&mut self, op: OpId, operands: &[String]) -> R<String> {
        let r = self.m.results(op)[0];
        let elem = match self.m.value_type(r).pk() {
            PK::List(e) => e.clone(),
            _ => return Err(self.err(op, "does not build a list")),
        };
        // A literal list's type is read from its elements; other element types are spelled out.
        let plain = matches!(elem.pk(), PK::Tensor(_) | PK::Int | PK::Float | PK::Bool | PK::Str);
        let ty = match self.list_type_from_uses(r) {
            Some(ty) => ty,
            None if plain && !operands.is_empty() => return Ok(format!("[{}]", operands.join(", "))),
            None if matches!(elem.pk(), PK::Any) => {
                return Err(self.err(op, "a list whose element type is unknown (`!prim.any`) and that no operator argument types"));
            }
            None => format!("List[{}]", py_type(&elem).map_err(|e| self.err(op, e))?),
        };
        if ty == "List[Tensor]" && !operands.is_empty() {
            return Ok(format!("[{}]", operands.join(", ")));
        }
        Ok(format!("annotate({ty}, [{}])", operands.join(", ")))
    }

    /// The list type the operator arguments that take `list` declare, when they agree and
    /// TorchScript can spell it (`Tensor?[] indices` gives `List[Optional[Tensor]]`).
    fn list_type_from_uses(&self, list: ValueId) -> Option<String> {
        let mut found: Option<String> = None;
        for u in self.m.uses(list) {
            let schema = self.ctx.op_def(self.m.op_name(u.op)).and_then(|d| d.schema.clone())?;
            let binding = bind_args(&schema, self.m, u.op).ok()?;
            let arg = schema.args.iter().zip(&binding).find(|(_, s)| **s == ArgSource::Operand(u.index)).map(|(a, _)| a)?;
            let SchemaType::List { elem, .. } = arg.ty.unwrap_optional() else { return None };
            let spelled = match elem.as_ref() {
                SchemaType::Optional(inner) => format!("Optional[{}]", schema_py_type(inner).ok()?),
                other => schema_py_type(other).ok()?.to_string(),
            };
            let ty = format!("List[{spelled}]");
            if found.as_ref().is_some_and(|f| *f != ty) {
                return None;
            }
            found = Some(ty);
        }
        found
    }

    /// An op with a schema: `ops.aten.add(x, y, alpha=1)`.
    fn call(&mut self, op: OpId, operands: &[String]) -> R<String> {
        let name = self.m.op_name(op);
        let schema = self
            .ctx
            .op_def(name)
            .and_then(|d| d.schema.clone())
            .ok_or_else(|| self.err(op, "has no TorchScript spelling (no operator schema)"))?;
        let binding = bind_args(&schema, self.m, op).map_err(|e| self.err(op, e.to_string()))?;
        if schema.namespace == "aten" && schema.name == "_local_scalar_dense" {
            // TorchScript types the result as a number; the IR's type says which.
            let r = self.m.results(op)[0];
            let conv = match self.m.value_type(r).pk() {
                PK::Bool => "bool",
                PK::Int => "int",
                PK::Float => "float",
                _ => return Err(self.err(op, "a scalar read of a type other than i1, i64 or f64")),
            };
            return Ok(format!("{conv}({})", operands[0]));
        }
        let mut parts = Vec::with_capacity(schema.args.len());
        let mut given = Vec::with_capacity(schema.args.len());
        for (arg, src) in schema.args.iter().zip(binding) {
            let (text, ty) = match src {
                ArgSource::Operand(i) => {
                    let v = self.m.operands(op)[i];
                    (operands[i].clone(), self.operand_ty(v, &arg.ty))
                }
                ArgSource::Const(a) => {
                    let text = literal(&a, &arg.ty).map_err(|e| self.err(op, format!("argument `{}`: {e}", arg.name)))?;
                    (text, literal_ty(&a, &arg.ty))
                }
            };
            parts.push(if arg.kwarg_only { format!("{}={text}", arg.name) } else { text });
            given.push(Given { keyword: arg.kwarg_only.then(|| arg.name.clone()), ty });
        }
        let rivals = overload::rivals(&schema, dialect_aten::schemas(), &given).map_err(|()| {
            let types: Vec<String> = given.iter().map(|g| format!("{:?}", g.ty)).collect();
            self.err(op, format!("its arguments ({}) do not fit `{}` without conversions", types.join(", "), schema.qualified_name()))
        })?;
        if !rivals.is_empty() {
            let names: Vec<String> = rivals.iter().map(|s| format!("`{}`", s.qualified_name())).collect();
            return Err(self.err(op, format!("TorchScript could resolve the call to {} as well; no spelling picks `{}` alone", names.join(", "), schema.qualified_name())));
        }
        Ok(format!("ops.{}.{}({})", schema.namespace, schema.name, parts.join(", ")))
    }

    /// The TorchScript type of the operand `v` passed for an argument of type `arg`: a list
    /// that was spelled out for its argument has that argument's type.
    fn operand_ty(&self, v: ValueId, arg: &SchemaType) -> Ty {
        let ty = Ty::of(self.m.value_type(v));
        let built_here = self.m.defining_op(v).is_some_and(|d| self.m.op_name(d) == dialect_prim::LIST_CONSTRUCT);
        match (&ty, built_here) {
            (Ty::List(_), true) => match self.list_type_from_uses(v) {
                Some(_) => Ty::of_schema(arg.unwrap_optional()),
                None => ty,
            },
            _ => ty,
        }
    }

    fn if_op(&mut self, op: OpId, indent: usize) -> R<()> {
        let cond = self.name(self.m.operands(op)[0]);
        let results = self.result_names(op);
        let regions = self.m.regions(op).to_vec();
        for (k, &region) in regions.iter().enumerate() {
            let head = if k == 0 { format!("if {cond}:") } else { "else:".to_string() };
            self.line(indent, &head);
            let block = self.m.entry_block(region).ok_or_else(|| self.err(op, "has a region without a block"))?;
            let start = self.out.len();
            let term = self.block(block, indent + 1)?;
            let yielded = self.operand_names(term);
            if yielded.len() != results.len() {
                return Err(self.err(op, "a branch yields a different number of values than the op has results"));
            }
            if !results.is_empty() {
                self.line(indent + 1, &parallel(&results, &yielded));
            } else if self.out.len() == start {
                self.line(indent + 1, "pass");
            }
        }
        Ok(())
    }

    /// `for i in range(n):` when the loop always continues; `while c:` when it has no trip
    /// count and does not read its counter; any other loop is refused.
    fn loop_op(&mut self, op: OpId, indent: usize) -> R<()> {
        let operands = self.m.operands(op).to_vec();
        let region = self.m.regions(op)[0];
        let block = self.m.entry_block(region).ok_or_else(|| self.err(op, "has no body"))?;
        let body_args = self.m.block_args(block).to_vec();
        let results = self.m.results(op).to_vec();
        let carried = &operands[2..];
        if body_args.len() != carried.len() + 1 || results.len() != carried.len() {
            return Err(self.err(op, "the body's arguments or the results do not match the carried values"));
        }
        let term = self.m.last_op(block).ok_or_else(|| self.err(op, "has an empty body"))?;
        let yielded = self.m.operands(term).to_vec();
        let is_true = |e: &Self, v: ValueId| {
            e.m.defining_op(v)
                .is_some_and(|d| e.m.op_name(d) == dialect_prim::CONSTANT && e.m.attr(d, "value") == Some(&Attribute::Bool(true)))
        };
        let trip_max = self
            .m
            .defining_op(operands[0])
            .is_some_and(|d| self.m.op_name(d) == dialect_prim::CONSTANT && self.m.attr(d, "value") == Some(&Attribute::Int(i64::MAX)));
        let always = is_true(self, operands[1]) && yielded.first().is_some_and(|&c| is_true(self, c));
        // The carried values and the results share one name per position.
        let mut names = Vec::with_capacity(results.len());
        for (&r, &a) in results.iter().zip(&body_args[1..]) {
            let n = self.name(r);
            self.names.insert(a, n.clone());
            names.push(n);
        }
        let inits: Vec<String> = carried.iter().map(|&v| self.name(v)).collect();
        if !names.is_empty() {
            self.line(indent, &parallel(&names, &inits));
        }
        if always {
            let trip = self.name(operands[0]);
            let i = self.name(body_args[0]);
            self.line(indent, &format!("for {i} in range({trip}):"));
        } else if trip_max && !self.m.has_uses(body_args[0]) {
            let cond = self.fresh("cond");
            let init = self.name(operands[1]);
            self.line(indent, &format!("{cond} = {init}"));
            self.line(indent, &format!("while {cond}:"));
            names.insert(0, cond);
        } else {
            return Err(self.err(op, "a loop with both a trip count and a condition (or one reading its counter without a trip count) has no emitted form"));
        }
        let start = self.out.len();
        self.block(block, indent + 1)?;
        let mut next: Vec<String> = yielded.iter().map(|&v| self.name(v)).collect();
        if always {
            next.remove(0);
        }
        if !names.is_empty() {
            self.line(indent + 1, &parallel(&names, &next));
        } else if self.out.len() == start {
            self.line(indent + 1, "pass");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_back() {
        assert_eq!(float_literal(0.25), "0.25");
        assert_eq!(float_literal(1.0), "1.0");
        assert_eq!(float_literal(1e-5).parse::<f64>().unwrap(), 1e-5);
        assert_eq!(float_literal(f64::NEG_INFINITY), "float(\"-inf\")");
        assert_eq!(str_literal("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(int_literal(i64::MIN), "-9223372036854775807 - 1");
        assert_eq!(int_literal(-3), "-3");
        assert_eq!(sanitize("x.1"), "x_1");
        assert_eq!(sanitize("0"), "_0");
        assert_eq!(attribute("self", "fc1"), "self.fc1");
        assert_eq!(attribute("self", "0"), "getattr(self, \"0\")");
        assert_eq!(attribute("self", "in"), "getattr(self, \"in\")");
        let int_list = SchemaType::List { elem: Box::new(SchemaType::Int), size: None };
        assert_eq!(literal(&Attribute::ints(&[]), &int_list).unwrap(), "annotate(List[int], [])");
        assert_eq!(literal(&Attribute::ints(&[1, -2]), &int_list).unwrap(), "[1, -2]");
        assert_eq!(literal(&Attribute::Int(2), &SchemaType::Float).unwrap(), "2.0");
        assert_eq!(literal(&dialect_prim::kinds::dtype(ir::DType::F32), &SchemaType::ScalarType.optional()).unwrap(), "6");
    }
}
