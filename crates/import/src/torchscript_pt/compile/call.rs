//! Calls: inlined TorchScript functions and methods, Python builtins, the special forms of the
//! printed code (`annotate`, `unchecked_cast`, `getattr`, `isinstance`, …), and ATen operators
//! resolved against the registry's schemas with TorchScript's implicit conversions.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use std::collections::HashMap;

use ir::schema::SchemaType;
use ir::{Attribute, OperationState, Type, ValueId};

use super::env::{Frame, Sv};
use super::types::Ann;
use super::{Compiler, FnRef, MAX_INLINE, R};
use crate::overload::resolve;
use crate::convert::{Arg, aten_op_name, emit_aten, scalar_tensor, type_of_schema};
use crate::torchscript_pt::lang::ast::{Expr, ExprKind};

/// Python builtins the compiler knows, with the ATen op each one calls.
const BUILTINS: &[(&str, &str)] = &[
    ("int", "Int"),
    ("float", "Float"),
    ("bool", "Bool"),
    ("str", "str"),
    ("len", "len"),
    ("abs", "abs"),
    ("min", "min"),
    ("max", "max"),
    ("round", "round"),
    ("divmod", "divmod"),
    ("ord", "ord"),
    ("chr", "chr"),
    ("list", "list"),
];

/// Names of special forms and builtins resolved by the call compiler.
const SPECIAL: &[&str] = &[
    "annotate", "unchecked_cast", "uninitialized", "isinstance", "getattr", "hasattr", "range", "print", "Exception",
    "AssertionError", "RuntimeError", "ValueError", "TypeError", "IndexError", "KeyError", "NotImplementedError",
];

/// Whether `name` is a builtin the call compiler resolves.
pub(crate) fn is_builtin(name: &str) -> bool {
    SPECIAL.contains(&name) || BUILTINS.iter().any(|(b, _)| *b == name)
}

/// List methods that mutate their list, and which of them the compiler rebinds.
const LIST_MUTATORS: &[&str] = &["append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort", "_set_item"];

/// The list expression a call mutates: `torch.append(xs, v)`, `xs.append(v)`.
pub(crate) fn mutated_list<'e>(func: &'e Expr, args: &'e [Expr]) -> Option<&'e Expr> {
    let dotted = func.dotted();
    if let Some(d) = &dotted
        && let Some(m) = d.strip_prefix("torch.").or_else(|| d.strip_prefix("ops.aten."))
        && LIST_MUTATORS.contains(&m)
    {
        return args.first();
    }
    match &func.kind {
        ExprKind::Attribute(base, m) if LIST_MUTATORS.contains(&m.as_str()) && !matches!(base.dotted().as_deref(), Some("torch" | "ops.aten")) => {
            Some(base)
        }
        _ => None,
    }
}

impl Compiler<'_> {
    /// Compiles a call expression `e` = `func(args, kwargs)`.
    pub(crate) fn call(&mut self, e: &Expr, func: &Expr, args: &[Expr], kwargs: &[(String, Expr)]) -> R<Sv> {
        let at = e.at;
        let name = func.dotted();
        let shadowed = |c: &Self, n: &str| c.lookup(n).is_some();
        if let Some(n) = name.as_deref().filter(|n| !shadowed(self, n.split('.').next().unwrap_or(n))) {
            match (n, args) {
                ("annotate", [ty, v]) => return self.annotate(ty, v),
                ("unchecked_cast", [ty, v]) => return self.unchecked_cast(ty, v),
                ("uninitialized", [ty]) => {
                    let t = self.value_type(ty)?;
                    let op = self.push(OperationState::new(dialect_prim::UNINITIALIZED).results([t]).loc(self.loc(at)));
                    return Ok(Sv::Val(self.m.results(op)[0]));
                }
                ("isinstance", [v, ty]) => return self.isinstance(v, ty),
                ("getattr", [obj, attr, ..]) | ("hasattr", [obj, attr]) => {
                    let ExprKind::Str(a) = &attr.kind else {
                        return Err(self.err(attr.at, "`getattr` needs a constant attribute name"));
                    };
                    let o = self.expr(obj)?;
                    if n == "hasattr" {
                        let has = match &o {
                            Sv::Module(p) => self.module_attr(p, a, at).is_ok(),
                            _ => false,
                        };
                        return Ok(Sv::Val(self.constant(Attribute::Bool(has), at)));
                    }
                    return match o {
                        Sv::Module(p) => self.module_attr(&p, a, at),
                        other => Err(self.err(at, format!("`getattr` of {}", other.describe()))),
                    };
                }
                ("range", _) => return Err(self.err(at, "`range` is supported only as the iterable of a `for` loop")),
                ("print", _) => {
                    // Output to stdout is not a program result; the arguments still compile.
                    for a in args {
                        self.expr(a)?;
                    }
                    return Ok(Sv::Val(self.constant(dialect_prim::kinds::none(), at)));
                }
                ("torch.warn" | "ops.aten.warn", _) => {
                    // Warnings do not change results; they are compiled for their errors only.
                    for a in args {
                        self.expr(a)?;
                    }
                    return Ok(Sv::Val(self.constant(dialect_prim::kinds::none(), at)));
                }
                ("torch.device", [d]) => {
                    let v = self.expr(d).and_then(|v| self.value(v, d.at))?;
                    return match self.const_of(v).cloned() {
                        Some(Attribute::Str(s)) => Ok(Sv::Val(self.constant(dialect_prim::kinds::device(&s), at))),
                        _ => Err(self.err(d.at, "`torch.device` needs a constant string")),
                    };
                }
                ("ops.prim.RaiseException", [msg, ..]) => {
                    let m = self.expr(msg).and_then(|v| self.value(v, msg.at))?;
                    self.raise_value(m, at);
                    return Ok(Sv::Val(self.constant(dialect_prim::kinds::none(), at)));
                }
                ("ops.prim.NumToTensor", [x]) => {
                    let v = self.expr(x).and_then(|v| self.value(v, x.at))?;
                    let arg = match self.const_of(v).cloned() {
                        Some(a) => Arg::Const(a),
                        None => Arg::Value(v),
                    };
                    let loc = self.loc(at);
                    let t = scalar_tensor(&mut self.m, self.block, arg, &loc).map_err(|m| self.err(at, m))?;
                    self.wrapped.insert(t, v);
                    return Ok(Sv::Val(t));
                }
                ("torch.__is__" | "torch.__isnot__" | "ops.aten.__is__" | "ops.aten.__isnot__", [a, b]) => {
                    let x = self.expr(a).and_then(|v| self.value(v, a.at))?;
                    let y = self.expr(b).and_then(|v| self.value(v, b.at))?;
                    return Ok(Sv::Val(self.is_none_check(x, y, n.ends_with("isnot__"), at)?));
                }
                ("ops.prim.unchecked_cast" | "torch.jit._unwrap_optional", [v]) => {
                    let x = self.expr(v)?;
                    let x = self.value(x, v.at)?;
                    return Ok(Sv::Val(self.refine(x, None, at)));
                }
                _ => {}
            }
            if let Some(list) = mutated_list(func, args) {
                return self.mutate_list(func, list, args, kwargs, at);
            }
        }
        let callee = self.expr(func)?;
        match callee {
            Sv::Func(q) => {
                let f = self.function(&q)?.ok_or_else(|| self.err(func.at, format!("no function `{q}`")))?;
                let (a, k) = self.sugared_args(args, kwargs)?;
                self.inline(f, None, a, k, at)
            }
            Sv::Module(path) => self.call_method(path, "forward", args, kwargs, at),
            Sv::Method(base, m) => match *base {
                Sv::Module(path) => self.call_method(path, &m, args, kwargs, at),
                Sv::Val(v) => {
                    let (mut a, k) = self.value_args(args, kwargs)?;
                    a.insert(0, v);
                    self.call_aten(&m, a, k, at)
                }
                other => Err(self.err(at, format!("cannot call a method of {}", other.describe()))),
            },
            Sv::Namespace(ns) => {
                let op = if let Some((_, aten)) = BUILTINS.iter().find(|(b, _)| *b == ns) {
                    (*aten).to_owned()
                } else if let Some(op) = ns.strip_prefix("torch.").or_else(|| ns.strip_prefix("ops.aten.")).or_else(|| ns.strip_prefix("math.")) {
                    if op.contains('.') {
                        return Err(self.err(func.at, format!("`{ns}` is not supported")));
                    }
                    op.to_owned()
                } else if SPECIAL.contains(&ns.as_str()) {
                    return Err(self.err(at, format!("`{ns}(…)` with these arguments is not supported")));
                } else if ns.starts_with("__torch__.") {
                    return Err(self.err(func.at, format!("`{ns}` is not a function of this archive (constructing class objects is not supported)")));
                } else {
                    return Err(self.err(func.at, format!("unknown function `{ns}`")));
                };
                let (a, k) = self.value_args(args, kwargs)?;
                // `int(t)` of a number wrapped by `NumToTensor` is that number: traced programs
                // spell sizes this way, and shapes stay known only if it is seen through.
                if let ([t], true, "Int" | "Float") = (a.as_slice(), k.is_empty(), op.as_str())
                    && let Some(&inner) = self.wrapped.get(t)
                {
                    let same = matches!((op.as_str(), self.m.value_type(inner).pk()), ("Int", PK::Int) | ("Float", PK::Float));
                    if same {
                        return Ok(Sv::Val(inner));
                    }
                }
                // Casting a constant folds, so that conditions on it stay known.
                if let ([v], true) = (a.as_slice(), k.is_empty())
                    && let Some(folded) = self.fold_cast(&op, *v, at)
                {
                    return Ok(Sv::Val(folded));
                }
                self.call_aten(&op, a, k, at)
            }
            other => Err(self.err(func.at, format!("{} is not callable", other.describe()))),
        }
    }

    /// `int(3)`, `float(2)`, `bool(0)`, `float("-inf")` of constants.
    fn fold_cast(&mut self, op: &str, v: ValueId, at: usize) -> Option<ValueId> {
        let c = self.const_of(v)?.clone();
        let a = match (op, &c) {
            ("Int", Attribute::Int(_)) | ("Float", Attribute::Float(_)) | ("Bool", Attribute::Bool(_)) => c,
            ("Int", Attribute::Bool(b)) => Attribute::Int(*b as i64),
            ("Int", Attribute::Str(t)) => Attribute::Int(t.trim().parse().ok()?),
            ("Float", Attribute::Str(t)) => Attribute::float(t.trim().parse().ok()?),
            ("Int", Attribute::Float(f)) if f.get().is_finite() => Attribute::Int(f.get().trunc() as i64),
            ("Float", Attribute::Int(i)) => Attribute::float(*i as f64),
            ("Bool", Attribute::Int(i)) => Attribute::Bool(*i != 0),
            _ => return None,
        };
        Some(self.constant(a, at))
    }

    /// `unchecked_cast(T, v)`: `v` seen as `T` (an optional known not to be None).
    fn unchecked_cast(&mut self, ty: &Expr, v: &Expr) -> R<Sv> {
        let x = self.expr(v)?;
        let x = self.value(x, v.at)?;
        let t = match self.annotation(ty)? {
            Ann::Ty(t) => Some(t),
            Ann::Number => Some(dialect_prim::kinds::any_type()),
            _ => return Err(self.err(ty.at, "`unchecked_cast` to this type is not supported")),
        };
        Ok(Sv::Val(self.refine(x, t, v.at)))
    }

    /// `x` with its optional type narrowed to `ty` (or to the optional's element type).
    pub(crate) fn refine(&mut self, x: ValueId, ty: Option<Type>, at: usize) -> ValueId {
        let have = self.m.value_type(x).clone();
        let want = match (ty, have.pk()) {
            (Some(t), _) => t,
            (None, PK::Optional(e)) => e.clone(),
            (None, _) => return x,
        };
        if have == want || !matches!(have.pk(), PK::Optional(_) | PK::Any) {
            return x;
        }
        // `aten._unwrap_optional` is the identity on a value that is present.
        let loc = self.loc(at);
        let op = self.push(
            OperationState::new(dialect_aten::op::_UNWRAP_OPTIONAL).operands([x]).results([want]).loc(loc),
        );
        self.m.results(op)[0]
    }

    fn isinstance(&mut self, v: &Expr, ty: &Expr) -> R<Sv> {
        let x = self.expr(v)?;
        let ann = self.annotation(ty)?;
        let is = match (&x, ann) {
            (Sv::Module(p), Ann::Class(c)) => self.module_class(p).as_deref() == Some(c.as_str()),
            (Sv::Val(id), Ann::Ty(t)) => {
                let have = self.m.value_type(*id).clone();
                // `isinstance(x, T)` of an optional `T` is `x is not None`.
                if let PK::Optional(inner) = have.pk()
                    && (*inner == t || inner.as_tensor().is_some() && t.as_tensor().is_some())
                {
                    let none = self.constant(dialect_prim::kinds::none(), v.at);
                    return Ok(Sv::Val(self.is_none_check(*id, none, true, v.at)?));
                }
                if matches!(have.pk(), PK::Optional(_) | PK::Any) && !matches!(t.pk(), PK::Optional(_)) {
                    return Err(self.err(v.at, format!("`isinstance` of a value of type {have} is not decided at compile time")));
                }
                have == t || (have.as_tensor().is_some() && t.as_tensor().is_some())
            }
            (Sv::Dict(_), Ann::Dict) => true,
            _ => false,
        };
        Ok(Sv::Val(self.constant(Attribute::Bool(is), v.at)))
    }

    /// `xs.append(v)` / `torch.append(xs, v)` / `extend`: rebinds the name `xs` to the new list.
    fn mutate_list(&mut self, func: &Expr, list: &Expr, args: &[Expr], kwargs: &[(String, Expr)], at: usize) -> R<Sv> {
        let method = match &func.kind {
            ExprKind::Attribute(_, m) => m.clone(),
            _ => String::new(),
        };
        let ExprKind::Name(name) = &list.kind else {
            return Err(self.err(list.at, format!("`{method}` on a list that is not a local variable is not supported")));
        };
        if self.params.contains(name) {
            return Err(self.err(list.at, format!("`{method}` on the list argument `{name}` (mutating a caller's list) is not supported")));
        }
        let function_style = std::ptr::eq(list, args.first().map_or(std::ptr::null(), |a| a as *const Expr));
        let rest = if function_style { &args[1..] } else { args };
        if !kwargs.is_empty() {
            return Err(self.err(at, format!("keyword arguments to `{method}` are not supported")));
        }
        let l = self.expr(list).and_then(|v| self.value(v, list.at))?;
        let elem = match self.m.value_type(l).pk() {
            PK::List(e) => e.clone(),
            _ => return Err(self.err(list.at, format!("`{method}` of a value that is not a list"))),
        };
        for frame in &self.frames {
            for (other, sv) in frame.names() {
                if other != name && *sv == Sv::Val(l) && !other.starts_with('$') {
                    return Err(self.err(list.at, format!("`{method}` on the list `{name}`, which `{other}` also names (aliased list mutation) is not supported")));
                }
            }
        }
        let new = match (method.as_str(), rest) {
            ("append", [v]) => {
                let x = self.expr(v).and_then(|s| self.value(s, v.at))?;
                let one = self.list(vec![x], elem, v.at);
                self.call_aten("add", vec![l, one], vec![], at)?
            }
            ("extend", [v]) => {
                let x = self.expr(v).and_then(|s| self.value(s, v.at))?;
                self.call_aten("add", vec![l, x], vec![], at)?
            }
            (m, _) => return Err(self.err(at, format!("the list method `{m}` with these arguments is not supported"))),
        };
        self.bind(name, new.clone());
        Ok(new)
    }

    /// Arguments as compile-time values (modules may be passed to inlined functions).
    fn sugared_args(&mut self, args: &[Expr], kwargs: &[(String, Expr)]) -> R<(Vec<Sv>, Vec<(String, Sv)>)> {
        let a = args.iter().map(|x| self.expr(x)).collect::<R<Vec<_>>>()?;
        let k = kwargs.iter().map(|(n, x)| Ok((n.clone(), self.expr(x)?))).collect::<R<Vec<_>>>()?;
        Ok((a, k))
    }

    /// Arguments as IR values.
    fn value_args(&mut self, args: &[Expr], kwargs: &[(String, Expr)]) -> R<(Vec<ValueId>, Vec<(String, ValueId)>)> {
        let a = args.iter().map(|x| self.expr(x).and_then(|v| self.value(v, x.at))).collect::<R<Vec<_>>>()?;
        let k = kwargs
            .iter()
            .map(|(n, x)| Ok((n.clone(), self.expr(x).and_then(|v| self.value(v, x.at))?)))
            .collect::<R<Vec<_>>>()?;
        Ok((a, k))
    }

    /// Calls method `name` of the module at `path`, inlined.
    fn call_method(&mut self, path: Vec<String>, name: &str, args: &[Expr], kwargs: &[(String, Expr)], at: usize) -> R<Sv> {
        let class = self.module_class(&path).ok_or_else(|| self.err(at, "no such module"))?;
        let f = self.method(&class, name)?.ok_or_else(|| self.err(at, format!("`{class}` has no method `{name}`")))?;
        let (a, k) = self.sugared_args(args, kwargs)?;
        self.inline(f, Some(Sv::Module(path)), a, k, at)
    }

    /// Compiles function `f` in place with its parameters bound to the arguments.
    fn inline(&mut self, f: FnRef, this: Option<Sv>, args: Vec<Sv>, kwargs: Vec<(String, Sv)>, at: usize) -> R<Sv> {
        if self.inline_depth >= MAX_INLINE {
            return Err(self.err(at, format!("calls nested deeper than {MAX_INLINE} (recursion is not supported)")));
        }
        let holder = f.def.clone();
        let def = holder.def();
        let mut params = def.params.iter();
        let mut frame = Frame::default();
        if let Some(s) = this {
            match params.next() {
                Some(p) if p.name == "self" => frame.set("self", s),
                _ => return Err(self.err(at, format!("method `{}` does not take `self`", def.name))),
            }
        }
        let params: Vec<_> = params.collect();
        if args.len() > params.len() {
            return Err(self.err(at, format!("`{}` takes {} arguments but {} were given", def.name, params.len(), args.len())));
        }
        let mut bound: Vec<Option<Sv>> = args.into_iter().map(Some).collect();
        bound.resize(params.len(), None);
        for (k, v) in kwargs {
            let i = params
                .iter()
                .position(|p| p.name == k)
                .ok_or_else(|| self.err(at, format!("`{}` has no parameter `{k}`", def.name)))?;
            if bound[i].replace(v).is_some() {
                return Err(self.err(at, format!("`{}` got two values for `{k}`", def.name)));
            }
        }
        let saved_file = std::mem::replace(&mut self.file, f.file);
        let mut out = Ok(());
        for (p, b) in params.iter().zip(bound) {
            let v = match b {
                Some(v) => v,
                None => match &p.default {
                    Some(d) => match self.expr(d) {
                        Ok(v) => v,
                        Err(e) => {
                            out = Err(e);
                            break;
                        }
                    },
                    None => {
                        out = Err(self.err(def.at, format!("`{}` is missing the argument `{}`", def.name, p.name)));
                        break;
                    }
                },
            };
            // A float parameter takes an int argument converted, as TorchScript does.
            let v = match (&v, &p.ty) {
                (Sv::Val(x), Some(t)) if matches!(self.m.value_type(*x).pk(), PK::Int) && t.dotted().as_deref() == Some("float") => {
                    match self.call_aten("Float", vec![*x], vec![], p.at) {
                        Ok(v) => v,
                        Err(e) => {
                            out = Err(e);
                            break;
                        }
                    }
                }
                _ => v,
            };
            frame.set(&p.name, v);
        }
        if let Err(e) = out {
            self.file = saved_file;
            return Err(e);
        }
        let saved_frames = std::mem::replace(&mut self.frames, vec![frame]);
        let saved_params = std::mem::replace(&mut self.params, params.iter().map(|p| p.name.clone()).collect());
        let saved_loops = std::mem::replace(&mut self.loops, 0);
        self.inline_depth += 1;
        let r = self.body(&def.body, def.at);
        let dead = self.frames.first().is_some_and(|f| f.dead);
        self.inline_depth -= 1;
        self.loops = saved_loops;
        self.params = saved_params;
        self.frames = saved_frames;
        self.file = saved_file;
        if dead && let Some(f) = self.frames.last_mut() {
            f.dead = true;
        }
        r
    }

    /// Calls `aten::<name>` with the overload TorchScript would choose for these arguments.
    pub(crate) fn call_aten(&mut self, name: &str, args: Vec<ValueId>, kwargs: Vec<(String, ValueId)>, at: usize) -> R<Sv> {
        let types: Vec<Type> = args.iter().map(|&v| self.m.value_type(v).clone()).collect();
        let kw_types: Vec<(String, Type)> = kwargs.iter().map(|(k, v)| (k.clone(), self.m.value_type(*v).clone())).collect();
        let (schema, slots) = resolve(name, &types, &kw_types, false).map_err(|m| self.err(at, m))?;
        let op_name = aten_op_name(&schema.name, &schema.overload);
        if self.ctx.op_def(&op_name).is_none() {
            return Err(self.err(at, format!("`{op_name}` is not registered")));
        }
        if schema.is_vararg {
            // `format(str, ...)`: every argument is an operand, in order.
            if !kwargs.is_empty() {
                return Err(self.err(at, format!("keyword arguments to `{op_name}` are not supported")));
            }
            let results: Vec<Type> = schema.returns.iter().map(|r| subst(&r.ty, &HashMap::new())).collect();
            let loc = self.loc(at);
            let op = self.push(OperationState::new(&op_name).operands(args).results(results).loc(loc));
            return Ok(match self.m.results(op) {
                [r] => Sv::Val(*r),
                _ => Sv::Val(self.constant(dialect_prim::kinds::none(), at)),
            });
        }
        let mut given: Vec<Option<ValueId>> = vec![None; schema.args.len()];
        for (slot, v) in slots.iter().zip(args.iter().copied().chain(kwargs.iter().map(|(_, v)| *v))) {
            given[*slot] = Some(v);
        }
        let mut vars = HashMap::new();
        for (a, g) in schema.args.iter().zip(&given) {
            if let Some(v) = g {
                bind_vars(&a.ty, self.m.value_type(*v), &mut vars);
            }
        }
        let results: Vec<Type> = schema.returns.iter().map(|r| subst(&r.ty, &vars)).collect();
        let arg_list: Vec<Option<Arg>> = given.iter().map(|g| g.map(|v| self.arg_of(v))).collect();
        let loc = self.loc(at);
        let op = emit_aten(&mut self.m, self.block, &op_name, schema, arg_list, results, &loc, Vec::new()).map_err(|m| self.err(at, m))?;
        let rs = self.m.results(op).to_vec();
        Ok(match rs.as_slice() {
            [] => Sv::Val(self.constant(dialect_prim::kinds::none(), at)),
            [r] => Sv::Val(*r),
            _ => Sv::Val(self.tuple(rs, at)),
        })
    }

    /// How `v` is passed to an op: a constant as an attribute, a list built here by its items.
    fn arg_of(&self, v: ValueId) -> Arg {
        if let Some(c) = self.const_of(v) {
            return Arg::Const(c.clone());
        }
        if let Some(items) = self.construct_items(v, dialect_prim::LIST_CONSTRUCT)
            && !items.is_empty()
            && items.iter().all(|i| self.const_of(*i).is_some())
        {
            return Arg::List(items.iter().map(|i| self.arg_of(*i)).collect());
        }
        Arg::Value(v)
    }
}

/// Records what the type variables of `s` stand for, given a value of type `t`.
fn bind_vars(s: &SchemaType, t: &Type, vars: &mut HashMap<String, Type>) {
    match (s, t.pk()) {
        (SchemaType::Var(n), _) => {
            vars.entry(n.clone()).or_insert_with(|| t.clone());
        }
        (SchemaType::List { elem, .. }, PK::List(e)) => bind_vars(elem, e, vars),
        (SchemaType::Optional(inner), PK::Optional(e)) => bind_vars(inner, e, vars),
        (SchemaType::Optional(inner), _) => bind_vars(inner, t, vars),
        (SchemaType::Tuple(items), PK::Tuple(ts)) => {
            for (a, b) in items.iter().zip(ts) {
                bind_vars(a, b, vars);
            }
        }
        _ => {}
    }
}

/// The IR type of schema type `s` with its type variables replaced.
fn subst(s: &SchemaType, vars: &HashMap<String, Type>) -> Type {
    match s {
        SchemaType::Var(n) => vars.get(n).cloned().unwrap_or_else(dialect_prim::kinds::any_type),
        SchemaType::List { elem, .. } => dialect_prim::kinds::list(subst(elem, vars)),
        SchemaType::Optional(e) => dialect_prim::kinds::optional(subst(e, vars)),
        SchemaType::Tuple(items) => Type::tuple(items.iter().map(|i| subst(i, vars)).collect()),
        other => type_of_schema(other),
    }
}
