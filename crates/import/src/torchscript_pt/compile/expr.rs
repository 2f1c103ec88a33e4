//! Expressions: names, literals, attributes, subscripts, operators (as the ATen ops Python's
//! operators mean for tensors and numbers) and constants folded where the branch they choose
//! must be known at compile time.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::{Attribute, OperationState, Type, ValueId};

use super::env::Sv;
use super::types::Ann;
use super::{Compiler, R};
use crate::convert::const_type;
use crate::torchscript_pt::lang::ast::{BinOp, CmpOp, Expr, ExprKind, UnaryOp};

/// Names that start a dotted builtin path.
const NAMESPACES: &[&str] = &["torch", "ops", "__torch__", "math", "CONSTANTS", "typing", "builtins"];

impl Compiler<'_> {
    /// A `prim.Constant` holding `a`.
    pub(crate) fn constant(&mut self, a: Attribute, at: usize) -> ValueId {
        let loc = self.loc(at);
        let ty = const_type(&a);
        let op = self.push(OperationState::new(dialect_prim::CONSTANT).attr("value", a.clone()).results([ty]).loc(loc));
        let v = self.m.results(op)[0];
        self.consts.insert(v, a);
        v
    }

    /// The constant `v` holds, when it is one this compiler made.
    pub(crate) fn const_of(&self, v: ValueId) -> Option<&Attribute> {
        self.consts.get(&v)
    }

    /// The IR value of `sv`; sugar that is not a value is an error.
    pub(crate) fn value(&mut self, sv: Sv, at: usize) -> R<ValueId> {
        match sv {
            Sv::Val(v) => Ok(v),
            Sv::Method(base, name) if matches!(*base, Sv::Val(_)) => {
                let Sv::Val(v) = *base else { return Err(self.err(at, "not a value")) };
                self.property(v, &name, at)
            }
            other => Err(self.err(at, format!("{} is used as a value", other.describe()))),
        }
    }

    /// `x.shape`, `x.dtype`, `x.device`, `x.T` and other properties of a value.
    fn property(&mut self, v: ValueId, name: &str, at: usize) -> R<ValueId> {
        let op = match name {
            "shape" => "size",
            "dtype" | "device" | "is_cuda" | "requires_grad" | "ndim" | "is_quantized" => {
                return Err(self.err(at, format!("the tensor property `{name}` is not supported")));
            }
            "T" => "numpy_T",
            "mT" => "mT",
            "real" | "imag" => name,
            _ => return Err(self.err(at, format!("a value has no attribute `{name}`"))),
        };
        let r = self.call_aten(op, vec![v], vec![], at)?;
        self.value(r, at)
    }

    pub(crate) fn expr(&mut self, e: &Expr) -> R<Sv> {
        let at = e.at;
        match &e.kind {
            ExprKind::Name(n) => {
                if let Some(v) = self.lookup(n) {
                    return Ok(v);
                }
                match n.as_str() {
                    "inf" => Ok(Sv::Val(self.constant(Attribute::float(f64::INFINITY), at))),
                    "nan" => Ok(Sv::Val(self.constant(Attribute::float(f64::NAN), at))),
                    n if NAMESPACES.contains(&n) || super::call::is_builtin(n) => Ok(Sv::Namespace(n.to_owned())),
                    _ => Err(self.err(at, format!("`{n}` is not defined"))),
                }
            }
            ExprKind::Int(i) => Ok(Sv::Val(self.constant(Attribute::Int(*i), at))),
            ExprKind::Float(f) => Ok(Sv::Val(self.constant(Attribute::float(*f), at))),
            ExprKind::Str(s) => Ok(Sv::Val(self.constant(Attribute::str(s), at))),
            ExprKind::Bool(b) => Ok(Sv::Val(self.constant(Attribute::Bool(*b), at))),
            ExprKind::None => Ok(Sv::Val(self.constant(dialect_prim::kinds::none(), at))),
            ExprKind::Ellipsis => Err(self.err(at, "`...` is not supported here")),
            ExprKind::Tuple(items) => {
                let vals = items.iter().map(|i| self.expr(i).and_then(|v| self.value(v, i.at))).collect::<R<Vec<_>>>()?;
                Ok(Sv::Val(self.tuple(vals, at)))
            }
            ExprKind::List(items) => {
                let vals = items.iter().map(|i| self.expr(i).and_then(|v| self.value(v, i.at))).collect::<R<Vec<_>>>()?;
                let types: Vec<Type> = vals.iter().map(|&v| self.m.value_type(v).clone()).collect();
                let elem = if types.is_empty() {
                    Type::unknown_tensor()
                } else {
                    self.unify(&types).unwrap_or_else(dialect_prim::kinds::any_type)
                };
                Ok(Sv::Val(self.list(vals, elem, at)))
            }
            ExprKind::Dict(items) => {
                let mut out = Vec::new();
                for (k, v) in items {
                    let key = self.expr(k).and_then(|kv| self.value(kv, k.at))?;
                    let key = self.const_of(key).cloned().ok_or_else(|| self.err(k.at, "dict keys must be constants"))?;
                    let val = self.expr(v)?;
                    out.push((key, val));
                }
                Ok(Sv::Dict(out))
            }
            ExprKind::Attribute(base, name) => {
                let b = self.expr(base)?;
                self.attribute(b, name, at)
            }
            ExprKind::Call { func, args, kwargs } => self.call(e, func, args, kwargs),
            ExprKind::Subscript(base, index) => {
                let b = self.expr(base)?;
                self.subscript(b, index, at)
            }
            ExprKind::Slice(..) => Err(self.err(at, "a slice outside a subscript")),
            ExprKind::Binary(op, l, r) => {
                let a = self.expr(l).and_then(|v| self.value(v, l.at))?;
                let b = self.expr(r).and_then(|v| self.value(v, r.at))?;
                self.binary(*op, a, b, at)
            }
            ExprKind::Unary(op, x) => {
                let v = self.expr(x)?;
                let v = self.value(v, x.at)?;
                match op {
                    UnaryOp::Pos => Ok(Sv::Val(v)),
                    UnaryOp::Not => {
                        let b = self.truth(Sv::Val(v), x.at)?;
                        if let Some(Attribute::Bool(c)) = self.const_of(b) {
                            let c = !*c;
                            return Ok(Sv::Val(self.constant(Attribute::Bool(c), at)));
                        }
                        self.call_aten("__not__", vec![b], vec![], at)
                    }
                    UnaryOp::Neg => match self.const_of(v).cloned() {
                        Some(Attribute::Int(i)) => Ok(Sv::Val(self.constant(Attribute::Int(i.wrapping_neg()), at))),
                        Some(Attribute::Float(f)) => Ok(Sv::Val(self.constant(Attribute::float(-f.get()), at))),
                        _ => self.call_aten("neg", vec![v], vec![], at),
                    },
                    UnaryOp::Invert => self.call_aten("bitwise_not", vec![v], vec![], at),
                }
            }
            ExprKind::Compare(first, rest) => {
                let mut l = self.expr(first).and_then(|v| self.value(v, first.at))?;
                let mut result: Option<ValueId> = None;
                for (op, r) in rest {
                    let rv = self.expr(r).and_then(|v| self.value(v, r.at))?;
                    let c = self.compare(*op, l, rv, at)?;
                    result = Some(match result {
                        None => c,
                        Some(prev) => self.logical(true, prev, c, at)?,
                    });
                    l = rv;
                }
                Ok(Sv::Val(result.ok_or_else(|| self.err(at, "empty comparison"))?))
            }
            ExprKind::BoolOp(and, l, r) => {
                let a = self.expr(l)?;
                let a = self.truth(a, l.at)?;
                match self.const_of(a) {
                    Some(Attribute::Bool(c)) if *c == *and => {
                        let b = self.expr(r)?;
                        return Ok(Sv::Val(self.truth(b, r.at)?));
                    }
                    Some(Attribute::Bool(c)) => {
                        let c = *c;
                        return Ok(Sv::Val(self.constant(Attribute::Bool(c), at)));
                    }
                    _ => {}
                }
                let (temp, blocks) = self.begin_if(a, at);
                let outer = self.block;
                let (eval, short) = if *and { (blocks[0], blocks[1]) } else { (blocks[1], blocks[0]) };
                self.block = eval;
                let rv = self.expr(r).and_then(|v| self.truth(v, r.at));
                self.block = outer;
                let rv = rv?;
                crate::convert::insert(&mut self.m, eval, OperationState::new(dialect_prim::YIELD).operands([rv]));
                let k = {
                    let op = crate::convert::insert(
                        &mut self.m,
                        short,
                        OperationState::new(dialect_prim::CONSTANT).attr("value", Attribute::Bool(!*and)).results([Type::bool()]),
                    );
                    self.m.results(op)[0]
                };
                crate::convert::insert(&mut self.m, short, OperationState::new(dialect_prim::YIELD).operands([k]));
                Ok(Sv::Val(self.finish_if(temp, vec![Type::bool()])[0]))
            }
            ExprKind::IfExp { cond, then, orelse } => {
                let c = self.expr(cond)?;
                let c = self.truth(c, cond.at)?;
                if let Some(Attribute::Bool(b)) = self.const_of(c).cloned() {
                    return self.expr(if b { then } else { orelse });
                }
                let (temp, blocks) = self.begin_if(c, at);
                let outer = self.block;
                let mut vals = Vec::new();
                for (b, x) in blocks.iter().zip([then, orelse]) {
                    self.block = *b;
                    let v = self.expr(x).and_then(|v| self.value(v, x.at));
                    self.block = outer;
                    vals.push(v?);
                }
                let types: Vec<Type> = vals.iter().map(|&v| self.m.value_type(v).clone()).collect();
                let ty = self.unify(&types).ok_or_else(|| self.err(at, "the two sides of a conditional expression have different types"))?;
                for (b, v) in blocks.iter().zip(&vals) {
                    crate::convert::insert(&mut self.m, *b, OperationState::new(dialect_prim::YIELD).operands([*v]));
                }
                Ok(Sv::Val(self.finish_if(temp, vec![ty])[0]))
            }
            ExprKind::Unsupported(what) => Err(self.err(at, format!("{what} is not supported"))),
        }
    }

    /// `prim.TupleConstruct` of `vals`.
    pub(crate) fn tuple(&mut self, vals: Vec<ValueId>, at: usize) -> ValueId {
        let types: Vec<Type> = vals.iter().map(|&v| self.m.value_type(v).clone()).collect();
        let loc = self.loc(at);
        let op = self.push(OperationState::new(dialect_prim::TUPLE_CONSTRUCT).operands(vals).results([Type::tuple(types)]).loc(loc));
        self.m.results(op)[0]
    }

    /// `prim.ListConstruct` of `vals` with element type `elem`.
    pub(crate) fn list(&mut self, vals: Vec<ValueId>, elem: Type, at: usize) -> ValueId {
        let loc = self.loc(at);
        let op = self.push(OperationState::new(dialect_prim::LIST_CONSTRUCT).operands(vals).results([dialect_prim::kinds::list(elem)]).loc(loc));
        self.m.results(op)[0]
    }

    /// `base.name`.
    fn attribute(&mut self, base: Sv, name: &str, at: usize) -> R<Sv> {
        match base {
            Sv::Module(path) => self.module_attr(&path, name, at),
            Sv::Namespace(ns) if ns == "CONSTANTS" => self.archive_constant(name, at),
            Sv::Namespace(ns) => {
                let q = format!("{ns}.{name}");
                if q.starts_with("__torch__.") && self.function(&q)?.is_some() {
                    return Ok(Sv::Func(q));
                }
                Ok(Sv::Namespace(q))
            }
            Sv::Val(_) => Ok(Sv::Method(Box::new(base), name.to_owned())),
            other => Err(self.err(at, format!("{} has no attribute `{name}`", other.describe()))),
        }
    }

    /// `base[index]`.
    fn subscript(&mut self, base: Sv, index: &Expr, at: usize) -> R<Sv> {
        match base {
            Sv::Dict(items) => {
                let k = self.expr(index).and_then(|v| self.value(v, index.at))?;
                let key = self.const_of(k).cloned().ok_or_else(|| self.err(index.at, "a dict is indexed by constants only"))?;
                items
                    .into_iter()
                    .find(|(kk, _)| *kk == key)
                    .map(|(_, v)| v)
                    .ok_or_else(|| self.err(index.at, format!("the dict has no key {key}")))
            }
            Sv::Module(path) => {
                let k = self.expr(index).and_then(|v| self.value(v, index.at))?;
                let subs = self.submodules(&path);
                let name = match self.const_of(k) {
                    Some(Attribute::Int(i)) => {
                        let n = subs.len() as i64;
                        let i = if *i < 0 { *i + n } else { *i };
                        usize::try_from(i).ok().and_then(|i| subs.get(i).cloned())
                    }
                    Some(Attribute::Str(s)) => Some(s.to_string()),
                    _ => None,
                }
                .ok_or_else(|| self.err(index.at, "a module list is indexed by an in-range constant"))?;
                let mut p = path;
                p.push(name);
                Ok(Sv::Module(p))
            }
            Sv::Val(v) => {
                let ty = self.m.value_type(v).clone();
                match ty.pk() {
                    PK::Tuple(items) => {
                        let k = self.expr(index).and_then(|x| self.value(x, index.at))?;
                        let Some(Attribute::Int(i)) = self.const_of(k).cloned() else {
                            return Err(self.err(index.at, "a tuple is indexed by a constant"));
                        };
                        let n = items.len() as i64;
                        let j = if i < 0 { i + n } else { i };
                        if !(0..n).contains(&j) {
                            return Err(self.err(index.at, format!("tuple index {i} is out of range")));
                        }
                        Ok(Sv::Val(self.tuple_items(v, items.len(), at)?[j as usize]))
                    }
                    PK::Tensor(_) => self.tensor_index(v, index, at),
                    _ => {
                        if let ExprKind::Slice(lo, hi, step) = &index.kind {
                            let mut args = vec![v];
                            for b in [lo, hi, step] {
                                let x = match b {
                                    Some(e) => self.expr(e).and_then(|x| self.value(x, e.at))?,
                                    None => self.constant(dialect_prim::kinds::none(), at),
                                };
                                args.push(x);
                            }
                            return self.call_aten("slice", args, vec![], at);
                        }
                        let k = self.expr(index).and_then(|x| self.value(x, index.at))?;
                        self.call_aten("__getitem__", vec![v, k], vec![], at)
                    }
                }
            }
            other => Err(self.err(at, format!("{} cannot be indexed", other.describe()))),
        }
    }

    /// `x[i]`, `x[a:b]`, `x[None]` and tuples of them on a tensor, one dimension at a time.
    fn tensor_index(&mut self, mut v: ValueId, index: &Expr, at: usize) -> R<Sv> {
        let parts: Vec<&Expr> = match &index.kind {
            ExprKind::Tuple(items) => items.iter().collect(),
            _ => vec![index],
        };
        let mut dim = 0i64;
        for p in parts {
            match &p.kind {
                ExprKind::Slice(lo, hi, step) => {
                    let d = self.constant(Attribute::Int(dim), at);
                    let mut args = vec![v, d];
                    for b in [lo, hi] {
                        args.push(match b {
                            Some(e) => self.expr(e).and_then(|x| self.value(x, e.at))?,
                            None => self.constant(dialect_prim::kinds::none(), at),
                        });
                    }
                    args.push(match step {
                        Some(e) => self.expr(e).and_then(|x| self.value(x, e.at))?,
                        None => self.constant(Attribute::Int(1), at),
                    });
                    let r = self.call_aten("slice", args, vec![], at)?;
                    v = self.value(r, at)?;
                    dim += 1;
                }
                ExprKind::None => {
                    let d = self.constant(Attribute::Int(dim), at);
                    let r = self.call_aten("unsqueeze", vec![v, d], vec![], at)?;
                    v = self.value(r, at)?;
                    dim += 1;
                }
                _ => {
                    let i = self.expr(p).and_then(|x| self.value(x, p.at))?;
                    if !matches!(self.m.value_type(i).pk(), PK::Int) {
                        return Err(self.err(p.at, "tensor indexing by anything but integers, slices and None is not supported"));
                    }
                    let d = self.constant(Attribute::Int(dim), at);
                    let r = self.call_aten("select", vec![v, d, i], vec![], at)?;
                    v = self.value(r, at)?;
                }
            }
        }
        Ok(Sv::Val(v))
    }

    /// The ATen op of a binary operator.
    pub(crate) fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId, at: usize) -> R<Sv> {
        let scalars = !self.is_tensor(a) && !self.is_tensor(b);
        let name = match op {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
            BinOp::FloorDiv if scalars => "floordiv",
            BinOp::FloorDiv => "floor_divide",
            BinOp::Mod => "remainder",
            BinOp::Pow => "pow",
            BinOp::MatMul => "matmul",
            BinOp::BitAnd => "__and__",
            BinOp::BitOr => "__or__",
            BinOp::BitXor => "__xor__",
            BinOp::LShift => "__lshift__",
            BinOp::RShift => "__rshift__",
        };
        // A number on the left of a tensor operator is the tensor method of the right operand.
        if !self.is_tensor(a) && self.is_tensor(b) {
            return match op {
                BinOp::Add | BinOp::Mul | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => self.call_aten(name, vec![b, a], vec![], at),
                BinOp::Sub => self.call_aten("rsub", vec![b, a], vec![], at),
                BinOp::Div => {
                    let r = self.call_aten("reciprocal", vec![b], vec![], at)?;
                    let r = self.value(r, at)?;
                    self.call_aten("mul", vec![r, a], vec![], at)
                }
                _ => self.call_aten(name, vec![a, b], vec![], at),
            };
        }
        self.call_aten(name, vec![a, b], vec![], at)
    }

    /// `x op= v`: tensors are updated in place (`add_`), other values rebound.
    pub(crate) fn augmented(&mut self, op: BinOp, current: Sv, rhs: Sv, at: usize) -> R<Sv> {
        let a = self.value(current, at)?;
        let b = self.value(rhs, at)?;
        if self.is_tensor(a) {
            let name = match op {
                BinOp::Add => "add_",
                BinOp::Sub => "sub_",
                BinOp::Mul => "mul_",
                BinOp::Div => "div_",
                BinOp::FloorDiv => "floor_divide_",
                BinOp::Mod => "remainder_",
                BinOp::Pow => "pow_",
                BinOp::BitAnd => "bitwise_and_",
                BinOp::BitOr => "bitwise_or_",
                BinOp::BitXor => "bitwise_xor_",
                _ => return Err(self.err(at, "this augmented assignment on a tensor is not supported")),
            };
            return self.call_aten(name, vec![a, b], vec![], at);
        }
        if matches!(self.m.value_type(a).pk(), PK::List(_)) && op == BinOp::Add {
            return self.call_aten("add", vec![a, b], vec![], at);
        }
        self.binary(op, a, b, at)
    }

    fn compare(&mut self, op: CmpOp, a: ValueId, b: ValueId, at: usize) -> R<ValueId> {
        let name = match op {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
            CmpOp::Is => return self.is_none_check(a, b, false, at),
            CmpOp::IsNot => return self.is_none_check(a, b, true, at),
            CmpOp::In | CmpOp::NotIn => {
                let r = self.call_aten("__contains__", vec![b, a], vec![], at)?;
                let r = self.value(r, at)?;
                if op == CmpOp::In {
                    return Ok(r);
                }
                let r = self.call_aten("__not__", vec![r], vec![], at)?;
                return self.value(r, at);
            }
        };
        let r = self.call_aten(name, vec![a, b], vec![], at)?;
        self.value(r, at)
    }

    /// `a is b` / `a is not b`, folded when the types decide it (a value that cannot be None is
    /// not None; a None-typed value is).
    pub(crate) fn is_none_check(&mut self, a: ValueId, b: ValueId, negate: bool, at: usize) -> R<ValueId> {
        use dialect_aten::fold::{identical_by_none, none_by_type};
        let fold = identical_by_none(none_by_type(self.m.value_type(a).pk()), none_by_type(self.m.value_type(b).pk()));
        if let Some(is) = fold {
            return Ok(self.constant(Attribute::Bool(is != negate), at));
        }
        let r = self.call_aten(if negate { "__isnot__" } else { "__is__" }, vec![a, b], vec![], at)?;
        self.value(r, at)
    }

    /// `a and b` / `a or b` of two bools, folded when either is constant.
    fn logical(&mut self, and: bool, a: ValueId, b: ValueId, at: usize) -> R<ValueId> {
        match (self.const_of(a), self.const_of(b)) {
            (Some(Attribute::Bool(x)), _) if *x == and => return Ok(b),
            (Some(Attribute::Bool(x)), _) => {
                let x = *x;
                return Ok(self.constant(Attribute::Bool(x), at));
            }
            _ => {}
        }
        let r = self.call_aten(if and { "__and__" } else { "__or__" }, vec![a, b], vec![], at)?;
        self.value(r, at)
    }

    /// The truth of a condition: bools as they are, tensors by `aten.Bool.Tensor`, numbers
    /// compared with zero, optionals by `is not None`.
    pub(crate) fn truth(&mut self, sv: Sv, at: usize) -> R<ValueId> {
        let v = self.value(sv, at)?;
        let ty = self.m.value_type(v).clone();
        match ty.pk() {
            PK::Bool => Ok(v),
            PK::None => Ok(self.constant(Attribute::Bool(false), at)),
            PK::Optional(_) => {
                let none = self.constant(dialect_prim::kinds::none(), at);
                self.is_none_check(v, none, true, at)
            }
            PK::Int | PK::Float => match self.const_of(v).cloned() {
                Some(Attribute::Int(i)) => Ok(self.constant(Attribute::Bool(i != 0), at)),
                Some(Attribute::Float(f)) => Ok(self.constant(Attribute::Bool(f.get() != 0.0), at)),
                _ => {
                    let r = self.call_aten("Bool", vec![v], vec![], at)?;
                    self.value(r, at)
                }
            },
            PK::Tensor(_) | PK::Any => {
                let r = self.call_aten("Bool", vec![v], vec![], at)?;
                self.value(r, at)
            }
            PK::List(_) | PK::Str => {
                let n = self.call_aten("len", vec![v], vec![], at)?;
                let n = self.value(n, at)?;
                let zero = self.constant(Attribute::Int(0), at);
                self.compare(CmpOp::Ne, n, zero, at)
            }
            _ => Err(self.err(at, format!("a value of type {ty} is not a condition"))),
        }
    }

    pub(crate) fn is_tensor(&self, v: ValueId) -> bool {
        self.m.value_type(v).as_tensor().is_some()
    }

    /// `annotate(T, value)`: an empty list or None gets the type; `number` makes a Scalar of a
    /// tensor; a dict literal stays a dict.
    pub(crate) fn annotate(&mut self, ty: &Expr, value: &Expr) -> R<Sv> {
        let ann = self.annotation(ty)?;
        let v = self.expr(value)?;
        match ann {
            Ann::Dict => match v {
                Sv::Dict(_) => Ok(v),
                _ => Err(self.err(value.at, "a `Dict` annotation of anything but a dict literal is not supported")),
            },
            Ann::Number => {
                let x = self.value(v, value.at)?;
                if let Some(&inner) = self.wrapped.get(&x) {
                    return Ok(Sv::Val(inner));
                }
                if self.is_tensor(x) { self.call_aten("ScalarImplicit", vec![x], vec![], value.at) } else { Ok(Sv::Val(x)) }
            }
            Ann::Class(c) => Err(self.err(ty.at, format!("values of class `{c}` are not supported"))),
            Ann::Ty(t) => {
                let x = self.value(v, value.at)?;
                let have = self.m.value_type(x).clone();
                if have == t {
                    return Ok(Sv::Val(x));
                }
                // An empty list takes the annotated element type; a None the optional type.
                if let Some(items) = self.construct_items(x, dialect_prim::LIST_CONSTRUCT)
                    && let PK::List(elem) = t.pk()
                {
                    return Ok(Sv::Val(self.list(items, elem.clone(), value.at)));
                }
                if matches!(have.pk(), PK::None) && matches!(t.pk(), PK::Optional(_)) {
                    return Ok(Sv::Val(x));
                }
                if self.unify(&[t.clone(), have.clone()]).as_ref() == Some(&t) || matches!(t.pk(), PK::Any) {
                    return Ok(Sv::Val(x));
                }
                Err(self.err(value.at, format!("a value of type {have} annotated as {t}")))
            }
        }
    }
}
