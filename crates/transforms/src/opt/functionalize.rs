//! `functionalize`: in-place and out= aten ops become their functional counterparts, with explicit
//! write-back of mutated function arguments, as torch.export's functionalization does.
//!
//! `aten.add_.Tensor(x, y)` becomes `aten.add.Tensor(x', y)` (the name without the trailing `_`,
//! same overload); `aten.add.out(x, y, out=o)` becomes `aten.add.Tensor(x, y)` (overload
//! `Foo_out` → `Foo`, `out` → the default or `Tensor` overload with the same arguments). Later
//! uses read the newest value. A write through a `select.int` or `slice.Tensor` view scatters
//! back into its base (`select_scatter`, `slice_scatter`); through `alias`/`detach` it goes to
//! the base directly, and through `view`/`_unsafe_view` of a statically shaped base it is viewed
//! back to the base's shape. Views read after their base was written are recomputed from the
//! new base. Anything else (writes in nested regions, through other views or values of unknown
//! aliasing, ops without a functional counterpart) is an error naming the op.
//!
//! Each mutated function argument gets a new function result holding its final value, marked by
//! the argument's kind: `prim.buffer = "b"` → `prim.buffer_mutation = "b"`, `prim.param` →
//! `prim.param_mutation`, `prim.input` → `prim.input_mutation`; an unmarked argument is treated
//! as a user input named after its value (`arg<i>` without a name). The mutation results come
//! first, in argument order, then the original results, as in torch.export's graph signature.
//! Arguments are assumed not to alias one another.

use super::alias::{AliasDb, schema_writes};
use dialect_aten::op;
use ir::schema::FunctionSchema;
use ir::{Attribute, Context, Diagnostic, InsertPoint, Module, OpId, OperationState, Type, ValueId};
use pass::{AnalysisManager, LogLevel};
use std::collections::HashMap;
use std::sync::Arc;

/// How a view's result relates to its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ViewKind {
    /// Always a view.
    Always,
    /// A view or a copy depending on run-time layout (`reshape`, `contiguous`, `to`).
    Maybe,
}

struct State<'a> {
    ctx: &'a Context,
    db: AliasDb,
    /// View results: (input, view op, kind).
    view_of: HashMap<ValueId, (ValueId, OpId, ViewKind)>,
    /// The newest value of each root tensor.
    latest: HashMap<ValueId, ValueId>,
    /// The root each functional value stands for.
    owner: HashMap<ValueId, ValueId>,
    /// Recomputed views: (view, newest input) → recomputed value.
    regen: HashMap<(ValueId, ValueId), ValueId>,
    args: Vec<ValueId>,
    rewrites: usize,
}

fn diag(m: &Module, op: OpId, msg: String) -> Diagnostic {
    Diagnostic::error(m.loc(op).clone(), msg)
}

fn describe(m: &Module, v: ValueId) -> String {
    m.value_name(v).map(|n| format!("'%{n}'")).unwrap_or_else(|| "a value".to_string())
}

/// Functionalizes `func`; returns the number of ops rewritten.
pub fn run_functionalize(ctx: &Context, m: &mut Module, func: OpId, am: &mut AnalysisManager) -> Result<usize, Diagnostic> {
    let Some(entry) = m.regions(func).first().and_then(|&r| m.entry_block(r)) else { return Ok(0) };
    // In-place view ops change only how later reads see their tensor: those reads read the
    // functional view instead, and nothing is written back.
    let rewired = crate::lowering::fallback::rewire_inplace_views(ctx, m, func, &|_| false)?;
    for o in m.nested_ops(func) {
        if schema_writes(ctx, m, o) && m.parent_block(o) != Some(entry) {
            let parent = m.parent_op(o).map(|p| m.op_name(p).to_string()).unwrap_or_default();
            return Err(diag(
                m,
                o,
                format!("functionalize: '{}' writes inside a '{parent}' region; only writes in the function body are supported", m.op_name(o)),
            ));
        }
    }
    let mut st = State {
        ctx,
        db: AliasDb::new(ctx, m, func),
        view_of: HashMap::new(),
        latest: HashMap::new(),
        owner: HashMap::new(),
        regen: HashMap::new(),
        args: m.block_args(entry).to_vec(),
        rewrites: rewired,
    };
    for op in m.block_ops(entry) {
        if !m.contains_op(op) {
            continue;
        }
        st.substitute_operands(m, op)?;
        if schema_writes(ctx, m, op) {
            if !am.may_rewrite() {
                return Err(diag(m, op, "functionalize: the optimization limit stopped the pass before it finished".into()));
            }
            pass::log!(am, LogLevel::Update, "functionalizing '{}'", m.op_name(op));
            st.functionalize_op(m, op)?;
            continue;
        }
        st.record_view(m, op);
    }
    st.write_back(m, func, entry)?;
    Ok(st.rewrites)
}

impl State<'_> {
    fn schema(&self, m: &Module, op: OpId) -> Option<Arc<FunctionSchema>> {
        self.ctx.op_def(m.op_name(op)).and_then(|d| d.schema.clone())
    }

    fn record_view(&mut self, m: &Module, op: OpId) {
        let Some(schema) = self.schema(m, op) else { return };
        if m.results(op).len() != 1 || schema.returns.len() != 1 || schema.returns_alias_of(0) != Some(0) {
            return;
        }
        let ret = &schema.returns[0];
        if matches!(ret.ty, ir::schema::SchemaType::List { .. }) {
            return;
        }
        let Ok(binding) = dialect_aten::bind_args(&schema, m, op) else { return };
        let Some(dialect_aten::ArgSource::Operand(k)) = binding.first() else { return };
        let Some(&input) = m.operands(op).get(*k) else { return };
        let r = m.results(op)[0];
        let maybe = schema.name == "reshape"
            || schema.name == "contiguous"
            || schema.name.starts_with("to")
            || ret.alias.as_ref().is_some_and(|a| a.before.len() > 1);
        if schema.name.starts_with("to") {
            let dt = |v: ValueId| m.value_type(v).as_tensor().and_then(|t| t.dtype);
            if dt(input) != dt(r) || dt(r).is_none() {
                return;
            }
        }
        self.view_of.insert(r, (input, op, if maybe { ViewKind::Maybe } else { ViewKind::Always }));
    }

    /// The root tensor a value belongs to.
    fn root_of(&self, v: ValueId) -> ValueId {
        let mut cur = v;
        while let Some(&(p, _, _)) = self.view_of.get(&cur) {
            cur = p;
        }
        self.owner.get(&cur).copied().unwrap_or(cur)
    }

    /// The newest value of `v`, recomputing a view (just before `at`) when its base changed.
    fn read(&mut self, m: &mut Module, v: ValueId, at: OpId) -> Result<ValueId, Diagnostic> {
        if let Some(&(p, vop, kind)) = self.view_of.get(&v) {
            let p2 = self.read(m, p, at)?;
            if p2 == p {
                return Ok(v);
            }
            if let Some(&r) = self.regen.get(&(v, p2)) {
                return Ok(r);
            }
            if kind == ViewKind::Maybe {
                return Err(diag(
                    m,
                    at,
                    format!(
                        "functionalize: {} from '{}' may or may not alias its input, which is written before this use",
                        describe(m, v),
                        m.op_name(vop)
                    ),
                ));
            }
            let mut map = ir::ValueMap::new();
            map.insert(p, p2);
            let c = m.clone_op(vop, &mut map);
            m.insert_op(c, InsertPoint::Before(at)).map_err(|e| diag(m, at, e.to_string()))?;
            let nv = m.results(c)[0];
            self.view_of.insert(nv, (p2, c, kind));
            self.regen.insert((v, p2), nv);
            return Ok(nv);
        }
        let root = self.owner.get(&v).copied().unwrap_or(v);
        Ok(self.latest.get(&root).copied().unwrap_or(v))
    }

    /// Substitutes the newest values into `op`'s operands and into values its regions use from outside.
    fn substitute_operands(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        for i in 0..m.operands(op).len() {
            let v = m.operands(op)[i];
            let n = self.read(m, v, op)?;
            if n != v {
                m.set_operand(op, i, n).map_err(|e| diag(m, op, e.to_string()))?;
            }
        }
        if m.regions(op).is_empty() {
            return Ok(());
        }
        for inner in m.nested_ops(op) {
            for i in 0..m.operands(inner).len() {
                let v = m.operands(inner)[i];
                let outside = match m.value_def(v) {
                    ir::ValueDef::Result { op: d, .. } => !m.is_ancestor(op, d),
                    ir::ValueDef::BlockArg { block, .. } => m.block_parent_op(block).is_none_or(|p| !m.is_ancestor(op, p)),
                    ir::ValueDef::Placeholder => false,
                };
                if outside {
                    let n = self.read(m, v, op)?;
                    if n != v {
                        m.set_operand(inner, i, n).map_err(|e| diag(m, inner, e.to_string()))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The functional counterpart of a writing op, and the schema indices of its written arguments.
    fn counterpart(&self, m: &Module, op: OpId, schema: &FunctionSchema) -> Result<dialect_aten::Counterpart, Diagnostic> {
        match dialect_aten::functional_counterpart(self.ctx, schema) {
            Ok(c) if c.written.len() == 1 => Ok(c),
            Ok(c) => Err(diag(
                m,
                op,
                format!("functionalize: cannot functionalize '{}': it writes {} arguments", m.op_name(op), c.written.len()),
            )),
            Err(e) => Err(diag(m, op, format!("functionalize: cannot functionalize '{}': {e}", m.op_name(op)))),
        }
    }

    fn functionalize_op(&mut self, m: &mut Module, op: OpId) -> Result<(), Diagnostic> {
        let name = m.op_name(op).to_string();
        let schema = self.schema(m, op).ok_or_else(|| diag(m, op, format!("functionalize: '{name}' has no schema")))?;
        let counterpart = self.counterpart(m, op, &schema)?;
        let (functional, written) = (counterpart.op.clone(), counterpart.written.clone());
        let binding = dialect_aten::bind_args(&schema, m, op).map_err(|e| diag(m, op, format!("'{name}' {e}")))?;
        let Some(dialect_aten::ArgSource::Operand(wk)) = binding.get(written[0]).cloned() else {
            return Err(diag(m, op, format!("functionalize: the written argument of '{name}' is not an operand")));
        };
        let target = m.operands(op)[wk];
        if self.db.is_wildcard(target) && !self.args.contains(&self.root_of(target)) {
            return Err(diag(
                m,
                op,
                format!("functionalize: cannot functionalize '{name}': it writes {}, whose aliases are unknown", describe(m, target)),
            ));
        }
        let is_out = schema.is_out();
        let operands: Vec<ValueId> =
            m.operands(op).iter().enumerate().filter(|(i, _)| !is_out || *i != wk).map(|(_, &v)| v).collect();
        let drop_attr = if is_out { Some(schema.args[written[0]].name.clone()) } else { None };
        let mut attrs: Vec<(Arc<str>, Attribute)> =
            m.attributes(op).iter().filter(|(k, _)| drop_attr.as_deref() != Some(&**k)).cloned().collect();
        // A factory's out variant computes into `out`'s dtype (`eye.out` is `eye` of that dtype).
        let dtype_arg = self.ctx.op_def(&functional).and_then(|d| d.schema.as_ref()).and_then(|c| Some(c.args[counterpart.dtype_arg(c)?].name.clone()));
        if let (Some(name), Some(d)) = (dtype_arg, m.value_type(target).as_tensor().and_then(|t| t.dtype)) {
            attrs.push((name.as_str().into(), dialect_prim::kinds::dtype(d)));
        }
        let ty: Type = m.results(op).first().map(|&r| m.value_type(r).clone()).unwrap_or_else(|| m.value_type(target).clone());
        let mut state = OperationState::new(&functional).operands(operands).results([ty]).loc(m.loc(op).clone());
        state.attributes = attrs;
        let new_op = m.create_op(state);
        m.insert_op(new_op, InsertPoint::Before(op)).map_err(|e| diag(m, op, e.to_string()))?;
        let n = m.results(new_op)[0];
        // The in-place result is the written tensor itself: later uses see it through `target`.
        let results = m.results(op).to_vec();
        for r in results {
            m.replace_all_uses(r, target);
        }
        if m.value_type(target).as_tensor().is_some() {
            self.write(m, target, n, op)?;
        } else {
            // A written `Tensor[]` (`split_with_sizes_copy.out`): each tensor of the list holds
            // the functional result's element at its position.
            let elems = match m.value_def(target) {
                ir::ValueDef::Result { op: l, .. } if m.op_name(l) == dialect_prim::LIST_CONSTRUCT => m.operands(l).to_vec(),
                _ => {
                    return Err(diag(m, op, format!("functionalize: cannot functionalize '{name}': the list it writes is not built by 'prim.ListConstruct'")));
                }
            };
            let types: Vec<Type> = elems.iter().map(|&e| m.value_type(e).clone()).collect();
            let st = OperationState::new(dialect_prim::LIST_UNPACK).operands([n]).results(types).loc(m.loc(op).clone());
            let unpack = m.create_op(st);
            m.insert_op(unpack, InsertPoint::Before(op)).map_err(|e| diag(m, op, e.to_string()))?;
            for (e, v) in elems.into_iter().zip(m.results(unpack).to_vec()) {
                self.write(m, e, v, op)?;
            }
        }
        m.erase_op(op).map_err(|e| diag(m, op, e.to_string()))?;
        self.rewrites += 1;
        Ok(())
    }

    /// Records that `target` now holds `value`, scattering into bases of views (ops go before `at`).
    fn write(&mut self, m: &mut Module, target: ValueId, value: ValueId, at: OpId) -> Result<(), Diagnostic> {
        let Some(&(p, vop, kind)) = self.view_of.get(&target) else {
            let root = self.root_of(target);
            self.latest.insert(root, value);
            self.owner.insert(value, root);
            return Ok(());
        };
        let view_name = m.op_name(vop).to_string();
        let refuse = |m: &Module| {
            diag(
                m,
                at,
                format!("functionalize: cannot write back through the view '{view_name}' of {} (written by '{}')", describe(m, p), m.op_name(at)),
            )
        };
        if kind == ViewKind::Maybe {
            return Err(refuse(m));
        }
        let base = self.read(m, p, at)?;
        let base_ty = m.value_type(base).clone();
        let new_base = match op::by_name(&view_name).ok_or_else(|| refuse(m))? {
            op::ALIAS | op::DETACH => value,
            op::SELECT_INT | op::SLICE_TENSOR => {
                let scatter = if op::SELECT_INT.is(&view_name) { op::SELECT_SCATTER } else { op::SLICE_SCATTER };
                // The view's other arguments, operands or attributes alike, carry over by name.
                let mut operands = vec![base, value];
                operands.extend(m.operands(vop).iter().skip(1).copied());
                let mut st = OperationState::new(scatter).operands(operands).results([base_ty]).loc(m.loc(at).clone());
                st.attributes = m.attributes(vop).to_vec();
                let s = m.create_op(st);
                m.insert_op(s, InsertPoint::Before(at)).map_err(|e| diag(m, at, e.to_string()))?;
                m.results(s)[0]
            }
            op::VIEW | op::_UNSAFE_VIEW => {
                let Some(dims) = base_ty.as_tensor().and_then(|t| t.static_dims()) else { return Err(refuse(m)) };
                let st = OperationState::new(op::VIEW)
                    .operands([value])
                    .results([base_ty])
                    .attr("size", Attribute::ints(&dims))
                    .loc(m.loc(at).clone());
                let s = m.create_op(st);
                m.insert_op(s, InsertPoint::Before(at)).map_err(|e| diag(m, at, e.to_string()))?;
                m.results(s)[0]
            }
            _ => return Err(refuse(m)),
        };
        self.write(m, p, new_base, at)
    }

    /// Adds a function result for each mutated argument and returns the newest values.
    fn write_back(&mut self, m: &mut Module, func: OpId, entry: ir::BlockId) -> Result<(), Diagnostic> {
        let Some(ret) = m.last_op(entry).filter(|&t| m.op_name(t) == ir::builtin::RETURN) else {
            return Err(diag(m, func, "functionalize: the function does not end with 'func.return'".into()));
        };
        let arg_attrs: Vec<Attribute> = m
            .attr(func, ir::builtin::ARG_ATTRS)
            .and_then(Attribute::as_array)
            .map(<[_]>::to_vec)
            .unwrap_or_else(|| vec![Attribute::dict(Vec::new()); self.args.len()]);
        let mut new_results = Vec::new();
        let mut new_attrs = Vec::new();
        for (i, &a) in self.args.clone().iter().enumerate() {
            let v = self.read(m, a, ret)?;
            if v == a {
                continue;
            }
            let attrs = arg_attrs.get(i).cloned().unwrap_or_else(|| Attribute::dict(Vec::new()));
            let (key, name) = if let Some(n) = attrs.dict_get("prim.buffer").and_then(Attribute::as_str) {
                ("prim.buffer_mutation", n.to_string())
            } else if let Some(n) = attrs.dict_get("prim.param").and_then(Attribute::as_str) {
                ("prim.param_mutation", n.to_string())
            } else if let Some(n) = attrs.dict_get("prim.input").and_then(Attribute::as_str) {
                ("prim.input_mutation", n.to_string())
            } else if attrs.dict_get("prim.constant").is_some() {
                return Err(diag(m, func, format!("functionalize: the lifted constant argument #{i} is written")));
            } else {
                ("prim.input_mutation", m.value_name(a).map(str::to_string).unwrap_or_else(|| format!("arg{i}")))
            };
            new_results.push(v);
            new_attrs.push(Attribute::dict(vec![(key.into(), Attribute::str(&name))]));
        }
        if new_results.is_empty() {
            return Ok(());
        }
        let (inputs, results) = ir::builtin::function_signature(m, func)
            .ok_or_else(|| diag(m, func, "functionalize: the function has no valid type".into()))?;
        let old_res_attrs: Vec<Attribute> = m
            .attr(func, ir::builtin::RES_ATTRS)
            .and_then(Attribute::as_array)
            .map(<[_]>::to_vec)
            .unwrap_or_else(|| vec![Attribute::dict(Vec::new()); results.len()]);
        let mut types: Vec<Type> = new_results.iter().map(|&v| m.value_type(v).clone()).collect();
        types.extend(results);
        new_attrs.extend(old_res_attrs);
        let mut operands = new_results;
        operands.extend(m.operands(ret).iter().copied());
        m.set_operands(ret, operands);
        m.set_attr(func, ir::builtin::FUNCTION_TYPE, Attribute::Type(Type::function(inputs, types)));
        m.set_attr(func, ir::builtin::RES_ATTRS, Attribute::array(new_attrs));
        Ok(())
    }
}
