//! Statements: assignment, `if`, `for`, `while`, `return`, `break`, `continue`, `raise`,
//! `assert`; branches and loops become `prim.If`/`prim.Loop` with the names they change as
//! results or carried values.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use ir::{Attribute, InsertPoint, OperationState, Type, ValueId};

use super::env::{Frame, Sv};
use super::{CONT, Compiler, R, RET};
use crate::convert::{insert, join_types, name_value};
use crate::torchscript_pt::lang::ast::{CmpOp, Expr, ExprKind, Stmt, StmtKind};

/// Whether `stmts` may leave their list early: a `return`, a `raise`, or a `break`/`continue`
/// of the enclosing loop (not one of a loop nested inside).
fn exits(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Raise(_) => true,
        StmtKind::If { then, orelse, .. } => exits(then) || exits(orelse),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => returns(body),
        _ => false,
    })
}

/// Whether `stmts` contain a `return` at any depth.
fn returns(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::If { then, orelse, .. } => returns(then) || returns(orelse),
        StmtKind::For { body, .. } | StmtKind::While { body, .. } => returns(body),
        _ => false,
    })
}

/// Whether `stmts` break out of their loop.
fn breaks(stmts: &[Stmt]) -> bool {
    stmts.iter().any(|s| match &s.kind {
        StmtKind::Break => true,
        StmtKind::If { then, orelse, .. } => breaks(then) || breaks(orelse),
        _ => false,
    })
}

/// The name a condition proves not None, and the side of the `if` (0: then, 1: else) where it
/// holds: `x is not None`, `torch.__isnot__(x, None)`, `isinstance(x, T)` on the then side;
/// `x is None`, `torch.__is__(x, None)` on the else side.
fn refinement(cond: &Expr) -> Option<(String, usize)> {
    let name_of = |e: &Expr| match &e.kind {
        ExprKind::Name(n) => Some(n.clone()),
        _ => None,
    };
    match &cond.kind {
        ExprKind::Compare(x, rest) => match rest.as_slice() {
            [(CmpOp::IsNot, n)] if n.kind == ExprKind::None => Some((name_of(x)?, 0)),
            [(CmpOp::Is, n)] if n.kind == ExprKind::None => Some((name_of(x)?, 1)),
            _ => None,
        },
        ExprKind::Call { func, args, .. } => match (func.dotted().as_deref(), args.as_slice()) {
            (Some("torch.__isnot__" | "ops.aten.__isnot__"), [x, n]) if n.kind == ExprKind::None => Some((name_of(x)?, 0)),
            (Some("torch.__is__" | "ops.aten.__is__"), [x, n]) if n.kind == ExprKind::None => Some((name_of(x)?, 1)),
            (Some("isinstance"), [x, _]) => Some((name_of(x)?, 0)),
            _ => None,
        },
        _ => None,
    }
}

/// The names `stmts` may rebind: assignment targets, loop variables, and lists they mutate.
fn assigned(stmts: &[Stmt], out: &mut Vec<String>) {
    fn target(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Name(n) if !out.contains(n) => out.push(n.clone()),
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| target(i, out)),
            ExprKind::Subscript(base, _) => target(base, out),
            _ => {}
        }
    }
    fn mutated(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Call { func, args, kwargs } => {
                if let Some(list) = super::call::mutated_list(func, args) {
                    target(list, out);
                }
                mutated(func, out);
                args.iter().for_each(|a| mutated(a, out));
                kwargs.iter().for_each(|(_, a)| mutated(a, out));
            }
            ExprKind::Attribute(b, _) | ExprKind::Unary(_, b) => mutated(b, out),
            ExprKind::Binary(_, a, b) | ExprKind::BoolOp(_, a, b) | ExprKind::Subscript(a, b) => {
                mutated(a, out);
                mutated(b, out);
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().for_each(|i| mutated(i, out)),
            ExprKind::Compare(a, rest) => {
                mutated(a, out);
                rest.iter().for_each(|(_, r)| mutated(r, out));
            }
            ExprKind::IfExp { cond, then, orelse } => {
                mutated(cond, out);
                mutated(then, out);
                mutated(orelse, out);
            }
            _ => {}
        }
    }
    for s in stmts {
        match &s.kind {
            StmtKind::Assign { targets, value } => {
                targets.iter().for_each(|t| target(t, out));
                mutated(value, out);
            }
            StmtKind::AnnAssign { target: t, value, .. } => {
                target(t, out);
                if let Some(v) = value {
                    mutated(v, out);
                }
            }
            StmtKind::AugAssign { target: t, value, .. } => {
                target(t, out);
                mutated(value, out);
            }
            StmtKind::Expr(e) => mutated(e, out),
            StmtKind::If { cond, then, orelse } => {
                mutated(cond, out);
                assigned(then, out);
                assigned(orelse, out);
            }
            StmtKind::For { target: t, iter, body } => {
                target(t, out);
                mutated(iter, out);
                assigned(body, out);
            }
            StmtKind::While { cond, body } => {
                mutated(cond, out);
                assigned(body, out);
            }
            _ => {}
        }
    }
}

impl Compiler<'_> {
    /// The binding of `name`, innermost scope first.
    pub(crate) fn lookup(&self, name: &str) -> Option<Sv> {
        self.frames.iter().rev().find_map(|f| f.get(name).cloned())
    }

    /// Binds `name` in the innermost scope.
    pub(crate) fn bind(&mut self, name: &str, v: Sv) {
        if let Sv::Val(id) = v
            && self.m.value_name(id).is_none()
            && !name.starts_with('$')
        {
            name_value(&mut self.m, id, name);
        }
        if let Some(f) = self.frames.last_mut() {
            f.set(name, v);
        }
    }

    /// Compiles a function body in the current scope and returns what it returns.
    pub(crate) fn body(&mut self, body: &[Stmt], at: usize) -> R<Sv> {
        let implicit = [Stmt { kind: StmtKind::Return(None), at }];
        self.stmts(&[body, &implicit])?;
        self.lookup(RET).ok_or_else(|| self.err(at, "the function does not return a value on every path"))
    }

    /// Compiles the statement lists of `conts` in order: a branch that may exit takes the rest
    /// of them into its sides.
    fn stmts(&mut self, conts: &[&[Stmt]]) -> R<()> {
        let Some((first, rest)) = conts.split_first() else { return Ok(()) };
        for (i, s) in first.iter().enumerate() {
            if self.frames.last().is_some_and(|f| f.dead) {
                return Ok(());
            }
            match &s.kind {
                StmtKind::If { cond, then, orelse } if exits(then) || exits(orelse) => {
                    let mut k: Vec<&[Stmt]> = vec![&first[i + 1..]];
                    k.extend_from_slice(rest);
                    return self.if_stmt(s.at, cond, then, orelse, &k);
                }
                StmtKind::Return(e) => {
                    if self.loops > 0 {
                        return Err(self.err(s.at, "`return` inside a loop is not supported"));
                    }
                    let v = match e {
                        Some(e) => self.expr(e)?,
                        None => Sv::Val(self.constant(dialect_prim::kinds::none(), s.at)),
                    };
                    self.bind(RET, v);
                    return Ok(());
                }
                StmtKind::Break | StmtKind::Continue => {
                    if self.loops == 0 {
                        return Err(self.err(s.at, "`break` or `continue` outside a loop"));
                    }
                    if s.kind == StmtKind::Break {
                        let f = self.constant(Attribute::Bool(false), s.at);
                        self.bind(&format!("{CONT}{}", self.loops), Sv::Val(f));
                    }
                    return Ok(());
                }
                StmtKind::Raise(e) => {
                    self.raise(e.as_ref(), s.at)?;
                    return Ok(());
                }
                _ => self.stmt(s)?,
            }
        }
        self.stmts(rest)
    }

    /// Emits `prim.RaiseException` and marks the rest of the scope unreachable.
    pub(crate) fn raise(&mut self, e: Option<&Expr>, at: usize) -> R<()> {
        let message = match e {
            None => "Exception".to_owned(),
            Some(Expr { kind: ExprKind::Call { func, args, .. }, .. }) => {
                let class = func.dotted().unwrap_or_else(|| "Exception".into());
                match args.first().map(|a| &a.kind) {
                    Some(ExprKind::Str(s)) => format!("{class}: {s}"),
                    _ => class,
                }
            }
            Some(other) => other.dotted().unwrap_or_else(|| "Exception".into()),
        };
        let msg = self.constant(Attribute::str(&message), at);
        self.raise_value(msg, at);
        Ok(())
    }

    /// `prim.RaiseException(msg)`; what follows in this scope is unreachable.
    pub(crate) fn raise_value(&mut self, msg: ValueId, at: usize) {
        let loc = self.loc(at);
        self.push(OperationState::new(dialect_prim::RAISE_EXCEPTION).operands([msg]).loc(loc));
        if let Some(f) = self.frames.last_mut() {
            f.dead = true;
        }
    }

    fn stmt(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Expr(e) => {
                self.expr(e)?;
            }
            StmtKind::Pass => {}
            StmtKind::Assign { targets, value } => {
                let v = self.expr(value)?;
                for t in targets {
                    self.assign(t, v.clone())?;
                }
            }
            StmtKind::AnnAssign { target, ty, value } => {
                let Some(value) = value else { return Ok(()) };
                let v = self.annotate(ty, value)?;
                self.assign(target, v)?;
            }
            StmtKind::AugAssign { target, op, value } => {
                let current = self.expr(target)?;
                let rhs = self.expr(value)?;
                let v = self.augmented(*op, current, rhs, s.at)?;
                self.assign(target, v)?;
            }
            StmtKind::If { cond, then, orelse } => self.if_stmt(s.at, cond, then, orelse, &[])?,
            StmtKind::For { target, iter, body } => self.for_stmt(s.at, target, iter, body)?,
            StmtKind::While { cond, body } => self.while_stmt(s.at, cond, body)?,
            StmtKind::Assert { cond, msg } => self.assert(s.at, cond, msg.as_ref())?,
            StmtKind::Del(targets) => {
                for t in targets {
                    match &t.kind {
                        ExprKind::Name(n) if self.lookup(n).is_some() => {
                            if let Some(f) = self.frames.last_mut() {
                                f.remove(n);
                            }
                        }
                        _ => return Err(self.err(t.at, "`del` of anything but a local name is not supported")),
                    }
                }
            }
            StmtKind::Unsupported(what) => return Err(self.err(s.at, format!("{what} is not supported"))),
            StmtKind::Return(_) | StmtKind::Break | StmtKind::Continue | StmtKind::Raise(_) => {
                unreachable_stmt(self, s)?;
            }
        }
        Ok(())
    }

    /// Binds `target` (a name, or a tuple of targets to unpack into) to `v`.
    pub(crate) fn assign(&mut self, target: &Expr, v: Sv) -> R<()> {
        match &target.kind {
            ExprKind::Name(n) => {
                self.bind(n, v);
                Ok(())
            }
            ExprKind::Tuple(items) | ExprKind::List(items) => {
                let parts = self.unpack(&v, items.len(), target.at)?;
                for (t, p) in items.iter().zip(parts) {
                    self.assign(t, p)?;
                }
                Ok(())
            }
            ExprKind::Attribute(_, name) => Err(self.err(target.at, format!("assigning the module attribute `{name}` is not supported"))),
            ExprKind::Subscript(..) => Err(self.err(target.at, "item assignment (`x[i] = v`) is not supported")),
            _ => Err(self.err(target.at, "cannot assign to this expression")),
        }
    }

    /// The `n` parts of a tuple or list value.
    pub(crate) fn unpack(&mut self, v: &Sv, n: usize, at: usize) -> R<Vec<Sv>> {
        let Sv::Val(v) = v else { return Err(self.err(at, format!("cannot unpack {}", v.describe()))) };
        let v = *v;
        let vt = self.m.value_type(v).clone();
        let parts = match vt.pk() {
            PK::Tuple(items) => {
                if items.len() != n {
                    return Err(self.err(at, format!("cannot unpack a tuple of {} into {n} names", items.len())));
                }
                self.tuple_items(v, n, at)?
            }
            PK::List(elem) => match self.construct_items(v, dialect_prim::LIST_CONSTRUCT) {
                Some(items) if items.len() == n => items,
                Some(items) => return Err(self.err(at, format!("cannot unpack a list of {} into {n} names", items.len()))),
                None => {
                    let loc = self.loc(at);
                    let op = self.push(
                        OperationState::new(dialect_prim::LIST_UNPACK).operands([v]).results(vec![elem.clone(); n]).loc(loc),
                    );
                    self.m.results(op).to_vec()
                }
            },
            _ => return Err(self.err(at, format!("cannot unpack a value of type {}", self.m.value_type(v)))),
        };
        Ok(parts.into_iter().map(Sv::Val).collect())
    }

    /// The `n` items of tuple value `v`.
    pub(crate) fn tuple_items(&mut self, v: ValueId, n: usize, at: usize) -> R<Vec<ValueId>> {
        if let Some(items) = self.construct_items(v, dialect_prim::TUPLE_CONSTRUCT) {
            return Ok(items);
        }
        let vt = self.m.value_type(v).clone();
        let PK::Tuple(types) = vt.pk() else {
            return Err(self.err(at, "not a tuple"));
        };
        debug_assert_eq!(types.len(), n);
        let loc = self.loc(at);
        let op = self.push(OperationState::new(dialect_prim::TUPLE_UNPACK).operands([v]).results(types.to_vec()).loc(loc));
        Ok(self.m.results(op).to_vec())
    }

    fn assert(&mut self, at: usize, cond: &Expr, msg: Option<&Expr>) -> R<()> {
        let c = self.expr(cond)?;
        let c = self.truth(c, cond.at)?;
        if self.const_of(c) == Some(&Attribute::Bool(true)) {
            return Ok(());
        }
        let text = match msg.map(|m| &m.kind) {
            Some(ExprKind::Str(s)) => format!("AssertionError: {s}"),
            _ => "AssertionError: ".to_owned(),
        };
        let (_, blocks) = self.begin_if(c, at);
        let outer = self.block;
        self.block = blocks[1];
        let msg = self.constant(Attribute::str(&text), at);
        let loc = self.loc(at);
        self.push(OperationState::new(dialect_prim::RAISE_EXCEPTION).operands([msg]).loc(loc));
        for b in blocks {
            insert(&mut self.m, b, OperationState::new(dialect_prim::YIELD));
        }
        self.block = outer;
        Ok(())
    }

    /// A `prim.If` on `c` without results, at the end of the current block; its two blocks.
    pub(crate) fn begin_if(&mut self, c: ValueId, at: usize) -> (ir::OpId, [ir::BlockId; 2]) {
        let loc = self.loc(at);
        let op = self.push(OperationState::new(dialect_prim::IF).operands([c]).regions(2).loc(loc));
        let regions = self.m.regions(op).to_vec();
        let a = self.m.append_block(regions[0], &[]);
        let b = self.m.append_block(regions[1], &[]);
        (op, [a, b])
    }

    /// Replaces result-less `prim.If` `temp` by one returning `types`, moving its blocks.
    pub(crate) fn finish_if(&mut self, temp: ir::OpId, types: Vec<Type>) -> Vec<ValueId> {
        let st = OperationState::new(dialect_prim::IF)
            .operands(self.m.operands(temp).to_vec())
            .results(types)
            .regions(2)
            .loc(self.m.loc(temp).clone());
        let op = self.m.create_op(st);
        // Inserting a fresh op before one that is in a block cannot fail.
        let _ = self.m.insert_op(op, InsertPoint::Before(temp));
        let (old, new) = (self.m.regions(temp).to_vec(), self.m.regions(op).to_vec());
        for (o, n) in old.into_iter().zip(new) {
            self.m.take_region_blocks(o, n);
        }
        let _ = self.m.erase_op(temp);
        self.m.results(op).to_vec()
    }

    /// `if cond: then else: orelse`, followed (in each side) by the statements of `k`.
    fn if_stmt(&mut self, at: usize, cond: &Expr, then: &[Stmt], orelse: &[Stmt], k: &[&[Stmt]]) -> R<()> {
        let c = self.expr(cond)?;
        let c = self.truth(c, cond.at)?;
        if let Some(Attribute::Bool(b)) = self.const_of(c).cloned() {
            let mut all: Vec<&[Stmt]> = vec![if b { then } else { orelse }];
            all.extend_from_slice(k);
            return self.stmts(&all);
        }
        let refined = refinement(cond);
        let (temp, blocks) = self.begin_if(c, at);
        let outer = self.block;
        let mut sides = Vec::new();
        for (side, (b, body)) in blocks.iter().zip([then, orelse]).enumerate() {
            self.block = *b;
            self.frames.push(Frame::default());
            // `x is not None` (or `isinstance`) makes an optional `x` its element type on the
            // side where it holds.
            if let Some((name, holds_on)) = &refined
                && *holds_on == side
                && let Some(Sv::Val(v)) = self.lookup(name)
                && matches!(self.m.value_type(v).pk(), PK::Optional(_))
            {
                let r = self.refine(v, None, cond.at);
                self.bind(name, Sv::Val(r));
                if let Some(f) = self.frames.last_mut() {
                    f.refined.push((name.clone(), Sv::Val(r)));
                }
            }
            let mut all: Vec<&[Stmt]> = vec![body];
            all.extend_from_slice(k);
            let r = self.stmts(&all);
            let frame = self.frames.pop().unwrap_or_default();
            r?;
            sides.push(frame);
        }
        self.block = outer;
        self.merge(temp, blocks, &sides, at)
    }

    /// Joins the scopes of an `if`'s two sides: every name either side rebinds that is bound on
    /// both paths becomes a result of the `prim.If`.
    pub(crate) fn merge(&mut self, temp: ir::OpId, blocks: [ir::BlockId; 2], sides: &[Frame], at: usize) -> R<()> {
        let mut names: Vec<String> = Vec::new();
        for f in sides {
            for (n, _) in f.names() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        let mut outs: Vec<(String, [Option<ValueId>; 2], Type)> = Vec::new();
        let mut direct: Vec<(String, Sv)> = Vec::new();
        for n in names {
            // A name a side only narrowed (`x is not None`) keeps its outer binding there.
            let own = |f: &Frame| f.get(&n).filter(|v| !f.refined.iter().any(|(r, rv)| *r == n && rv == *v)).cloned();
            let vals: Vec<Option<Sv>> = sides.iter().map(|f| own(f).or_else(|| self.lookup(&n))).collect();
            let live: Vec<&Sv> = sides.iter().zip(&vals).filter(|(f, _)| !f.dead).filter_map(|(_, v)| v.as_ref()).collect();
            let live_sides = sides.iter().filter(|f| !f.dead).count();
            if live.len() < live_sides || live.is_empty() {
                continue; // bound on one path only: not visible after the branch
            }
            if live.iter().all(|v| *v == live[0]) && (live.len() == 2 || !matches!(live[0], Sv::Val(_))) {
                direct.push((n, live[0].clone()));
                continue;
            }
            let mut ids = [None, None];
            let mut types = Vec::new();
            for (i, v) in vals.iter().enumerate() {
                if sides[i].dead {
                    continue;
                }
                match v {
                    Some(Sv::Val(id)) => {
                        ids[i] = Some(*id);
                        types.push(self.m.value_type(*id).clone());
                    }
                    Some(other) => {
                        return Err(self.err(at, format!("`{n}` is {} on one side of the branch and differs on the other", other.describe())));
                    }
                    None => {}
                }
            }
            let ty = self.unify(&types).ok_or_else(|| {
                let shown: Vec<String> = types.iter().map(Type::to_string).collect();
                self.err(at, format!("`{n}` has different types on the two sides of the branch ({})", shown.join(" and ")))
            })?;
            outs.push((n, ids, ty));
        }
        for (i, b) in blocks.iter().enumerate() {
            let mut yields = Vec::new();
            for (_, ids, ty) in &outs {
                let v = match ids[i] {
                    Some(v) => v,
                    None => {
                        let op = insert(&mut self.m, *b, OperationState::new(dialect_prim::UNINITIALIZED).results([ty.clone()]));
                        self.m.results(op)[0]
                    }
                };
                yields.push(v);
            }
            insert(&mut self.m, *b, OperationState::new(dialect_prim::YIELD).operands(yields));
        }
        let types = outs.iter().map(|(_, _, t)| t.clone()).collect();
        let results = self.finish_if(temp, types);
        for ((n, _, _), v) in outs.iter().zip(results) {
            self.bind(n, Sv::Val(v));
        }
        for (n, v) in direct {
            self.bind(&n, v);
        }
        if sides.iter().all(|f| f.dead)
            && let Some(f) = self.frames.last_mut()
        {
            f.dead = true;
        }
        Ok(())
    }

    /// The type values of `types` share: equal types, None with `T` as `Optional[T]`, tensors
    /// as what they have in common.
    pub(crate) fn unify(&self, types: &[Type]) -> Option<Type> {
        let first = types.first()?;
        if types.iter().all(|t| t == first) {
            return Some(first.clone());
        }
        let some: Vec<&Type> = types.iter().filter(|t| !matches!(t.pk(), PK::None)).collect();
        let has_none = some.len() < types.len();
        let inner: Vec<Type> = some
            .iter()
            .map(|t| match t.pk() {
                PK::Optional(e) => e.clone(),
                _ => (*t).clone(),
            })
            .collect();
        let any_optional = has_none || some.iter().any(|t| matches!(t.pk(), PK::Optional(_)));
        let base = if inner.iter().all(|t| *t == inner[0]) {
            inner[0].clone()
        } else if inner.iter().all(|t| t.as_tensor().is_some()) {
            join_types(&inner)
        } else if inner.iter().all(|t| matches!(t.pk(), PK::List(e) if e.as_tensor().is_some())) {
            dialect_prim::kinds::list(Type::unknown_tensor())
        } else {
            return None;
        };
        Some(if any_optional { super::types::optional(base) } else { base })
    }

    fn for_stmt(&mut self, at: usize, target: &Expr, iter: &Expr, body: &[Stmt]) -> R<()> {
        // `range(…)` counts; anything else is iterated.
        if let ExprKind::Call { func, args, kwargs } = &iter.kind
            && func.dotted().as_deref() == Some("range")
            && self.lookup("range").is_none()
        {
            if !kwargs.is_empty() || args.is_empty() || args.len() > 3 {
                return Err(self.err(iter.at, "`range` takes one to three positional arguments"));
            }
            let vals = args.iter().map(|a| self.expr(a).and_then(|v| self.value(v, a.at))).collect::<R<Vec<_>>>()?;
            let (start, stop, step) = match vals.as_slice() {
                [stop] => (None, *stop, 1),
                [start, stop] => (Some(*start), *stop, 1),
                [start, stop, step, ..] => match self.const_of(*step) {
                    Some(Attribute::Int(s)) if *s != 0 => (Some(*start), *stop, *s),
                    _ => return Err(self.err(args[2].at, "`range` needs a constant, non-zero step")),
                },
                [] => return Err(self.err(iter.at, "`range` needs an argument")),
            };
            let trip = match start {
                None => stop,
                Some(s) => self.range_trip(s, stop, step, at)?,
            };
            let cond = self.constant(Attribute::Bool(true), at);
            return self.build_loop(at, trip, cond, None, body, &mut |c, i| {
                let v = match start {
                    None => i,
                    Some(s) => {
                        let step_v = c.constant(Attribute::Int(step), at);
                        let scaled = c.int_op(dialect_prim::MUL, i, step_v, at);
                        c.int_op(dialect_prim::ADD, s, scaled, at)
                    }
                };
                c.assign(target, Sv::Val(v))
            });
        }
        let it = self.expr(iter)?;
        match &it {
            Sv::Module(path) => {
                // A `ModuleList`/`Sequential`: unrolled, one copy of the body per submodule.
                let subs = self.submodules(path);
                for name in subs {
                    let mut p = path.clone();
                    p.push(name);
                    self.unrolled(target, Sv::Module(p), body)?;
                }
                Ok(())
            }
            Sv::Val(v) => {
                let v = *v;
                let vt = self.m.value_type(v).clone();
                match vt.pk() {
                    PK::Tuple(items) => {
                        for part in self.tuple_items(v, items.len(), at)? {
                            self.unrolled(target, Sv::Val(part), body)?;
                        }
                        Ok(())
                    }
                    PK::List(_) | PK::Tensor(_) => {
                        let len = self.call_aten("len", vec![v], vec![], at)?;
                        let trip = self.value(len, at)?;
                        let cond = self.constant(Attribute::Bool(true), at);
                        let is_list = matches!(self.m.value_type(v).pk(), PK::List(_));
                        self.build_loop(at, trip, cond, None, body, &mut |c, i| {
                            let item = if is_list {
                                c.call_aten("__getitem__", vec![v, i], vec![], at)?
                            } else {
                                let zero = c.constant(Attribute::Int(0), at);
                                c.call_aten("select", vec![v, zero, i], vec![], at)?
                            };
                            c.assign(target, item)
                        })
                    }
                    _ => Err(self.err(iter.at, format!("cannot iterate over a value of type {vt}"))),
                }
            }
            other => Err(self.err(iter.at, format!("cannot iterate over {}", other.describe()))),
        }
    }

    /// One unrolled copy of a loop body with `target` bound to `item`.
    fn unrolled(&mut self, target: &Expr, item: Sv, body: &[Stmt]) -> R<()> {
        if breaks(body) || body.iter().any(|s| matches!(s.kind, StmtKind::Continue)) {
            return Err(self.err(target.at, "`break`/`continue` in a loop over modules or a tuple is not supported"));
        }
        self.assign(target, item)?;
        self.stmts(&[body])
    }

    /// The trip count of `range(start, stop, step)`: `max(0, ceil((stop - start) / step))`.
    fn range_trip(&mut self, start: ValueId, stop: ValueId, step: i64, at: usize) -> R<ValueId> {
        let (lo, hi, s) = if step > 0 { (start, stop, step) } else { (stop, start, -step) };
        let span = self.int_op(dialect_prim::SUB, hi, lo, at);
        let bias = self.constant(Attribute::Int(s - 1), at);
        let span = self.int_op(dialect_prim::ADD, span, bias, at);
        let s = self.constant(Attribute::Int(s), at);
        let n = self.int_op(dialect_prim::FLOORDIV, span, s, at);
        let zero = self.constant(Attribute::Int(0), at);
        Ok(self.int_op(dialect_prim::MAX, n, zero, at))
    }

    /// A SymInt op of prim on two ints.
    pub(crate) fn int_op(&mut self, name: &str, a: ValueId, b: ValueId, at: usize) -> ValueId {
        let loc = self.loc(at);
        let op = self.push(OperationState::new(name).operands([a, b]).results([Type::int()]).loc(loc));
        self.m.results(op)[0]
    }

    fn while_stmt(&mut self, at: usize, cond: &Expr, body: &[Stmt]) -> R<()> {
        let c = self.expr(cond)?;
        let c = self.truth(c, cond.at)?;
        if self.const_of(c) == Some(&Attribute::Bool(false)) {
            return Ok(());
        }
        let trip = self.constant(Attribute::Int(i64::MAX), at);
        self.build_loop(at, trip, c, Some(cond), body, &mut |_, _| Ok(()))
    }

    /// `prim.Loop(trip, cond, carried…)` around `body`. `bind` binds the loop variable from the
    /// iteration count; `recheck` is a `while` condition evaluated after each iteration.
    fn build_loop(
        &mut self,
        at: usize,
        trip: ValueId,
        cond: ValueId,
        recheck: Option<&Expr>,
        body: &[Stmt],
        bind: &mut dyn FnMut(&mut Self, ValueId) -> R<()>,
    ) -> R<()> {
        let depth = self.loops + 1;
        let cont = format!("{CONT}{depth}");
        let mut names = Vec::new();
        assigned(body, &mut names);
        if breaks(body) {
            let t = self.constant(Attribute::Bool(true), at);
            self.bind(&cont, Sv::Val(t));
            names.push(cont.clone());
        }
        let mut carried: Vec<(String, ValueId, Type)> = Vec::new();
        for n in names {
            match self.lookup(&n) {
                Some(Sv::Val(v)) => {
                    let t = self.m.value_type(v).clone();
                    let t = if t.as_tensor().is_some() { Type::unknown_tensor() } else { t };
                    carried.push((n, v, t));
                }
                Some(_) | None => {}
            }
        }
        let loc = self.loc(at);
        let mut operands = vec![trip, cond];
        operands.extend(carried.iter().map(|c| c.1));
        let op = self.push(
            OperationState::new(dialect_prim::LOOP)
                .operands(operands)
                .results(carried.iter().map(|c| c.2.clone()))
                .regions(1)
                .loc(loc),
        );
        let region = self.m.regions(op)[0];
        let mut arg_types = vec![Type::int()];
        arg_types.extend(carried.iter().map(|c| c.2.clone()));
        let blk = self.m.append_block(region, &arg_types);
        let args = self.m.block_args(blk).to_vec();
        let outer = self.block;
        self.block = blk;
        self.frames.push(Frame::default());
        for ((n, _, _), a) in carried.iter().zip(&args[1..]) {
            self.bind(n, Sv::Val(*a));
        }
        self.loops += 1;
        let r = (|| -> R<Vec<ValueId>> {
            bind(self, args[0])?;
            self.stmts(&[body])?;
            let dead = self.frames.last().is_some_and(|f| f.dead);
            let keep_going = match (self.lookup(&cont), recheck) {
                (Some(Sv::Val(flag)), Some(c)) => self.and_then(flag, c, at)?,
                (Some(Sv::Val(flag)), None) => flag,
                (_, Some(c)) => {
                    let v = self.expr(c)?;
                    self.truth(v, c.at)?
                }
                (_, None) => self.constant(Attribute::Bool(true), at),
            };
            let mut yields = vec![keep_going];
            for (n, _, t) in &carried {
                let v = match self.lookup(n) {
                    Some(Sv::Val(v)) => v,
                    _ if dead => {
                        let op = self.push(OperationState::new(dialect_prim::UNINITIALIZED).results([t.clone()]));
                        self.m.results(op)[0]
                    }
                    _ => return Err(self.err(at, format!("`{n}` is not a value at the end of the loop body"))),
                };
                let vt = self.m.value_type(v);
                let fits = vt == t || (vt.as_tensor().is_some() && t.as_tensor().is_some()) || self.unify(&[t.clone(), vt.clone()]).as_ref() == Some(t);
                if !fits {
                    return Err(self.err(at, format!("`{n}` changes type in the loop ({t} before, {vt} after an iteration)")));
                }
                yields.push(v);
            }
            Ok(yields)
        })();
        self.loops -= 1;
        self.frames.pop();
        self.block = outer;
        let yields = r?;
        insert(&mut self.m, blk, OperationState::new(dialect_prim::YIELD).operands(yields));
        let results = self.m.results(op).to_vec();
        for ((n, _, _), v) in carried.iter().zip(results) {
            self.bind(n, Sv::Val(v));
        }
        if self.lookup(&cont).is_some()
            && let Some(f) = self.frames.last_mut()
        {
            f.remove(&cont);
        }
        Ok(())
    }

    /// `flag and cond`, evaluating `cond` only when `flag` holds.
    fn and_then(&mut self, flag: ValueId, cond: &Expr, at: usize) -> R<ValueId> {
        let (temp, blocks) = self.begin_if(flag, at);
        let outer = self.block;
        self.block = blocks[0];
        let r = self.expr(cond).and_then(|v| self.truth(v, cond.at));
        self.block = outer;
        let c = r?;
        insert(&mut self.m, blocks[0], OperationState::new(dialect_prim::YIELD).operands([c]));
        let f = {
            let op = insert(
                &mut self.m,
                blocks[1],
                OperationState::new(dialect_prim::CONSTANT).attr("value", Attribute::Bool(false)).results([Type::bool()]),
            );
            self.m.results(op)[0]
        };
        insert(&mut self.m, blocks[1], OperationState::new(dialect_prim::YIELD).operands([f]));
        Ok(self.finish_if(temp, vec![Type::bool()])[0])
    }
}

/// Control statements are handled by `stmts` before `stmt` sees them.
fn unreachable_stmt(c: &Compiler<'_>, s: &Stmt) -> R<()> {
    Err(c.err(s.at, "internal error: a control statement reached the simple-statement compiler"))
}

