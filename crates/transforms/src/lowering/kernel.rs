//! What the passes that form a `backend.kernel` from a matched set of ops share (`fuse-attention`,
//! `fuse-epilogue`): finding the anchors of their patterns outside fused regions, and moving a
//! match into the region of a new `backend.kernel {kernel = "<name>"}`, so that the region stays
//! the kernel's reference semantics.

use ir::{Attribute, Diagnostic, InsertPoint, Module, OpId, OperationState, Type, ValueId, ValueMap, WalkOrder};

/// A set of ops of one block to become a `backend.kernel`.
pub(crate) struct KernelMatch {
    /// The ops moved into the region (any order: they are moved in their block's order).
    pub ops: Vec<OpId>,
    /// The kernel's operands, which become the region's arguments.
    pub operands: Vec<ValueId>,
    /// The value the kernel replaces; the region returns it.
    pub result: ValueId,
    /// Attributes of the kernel besides `kernel`.
    pub attrs: Vec<(&'static str, Attribute)>,
    /// A constant also used outside the match: cloned into the region rather than moved.
    pub shared: Option<OpId>,
}

/// Replaces `f` by a `backend.kernel {kernel = name}` placed after its last op; returns it.
pub(crate) fn outline_kernel(m: &mut Module, name: &str, f: KernelMatch) -> Result<OpId, Diagnostic> {
    let mut order: Vec<(usize, OpId)> = f.ops.iter().map(|&o| (m.index_in_block(o).unwrap_or(0), o)).collect();
    order.sort_unstable();
    let ops: Vec<OpId> = order.into_iter().map(|(_, o)| o).collect();
    let Some(&last) = ops.last() else { return Err(Diagnostic::error(m.loc(m.top()).clone(), format!("an empty {name} match"))) };
    let loc = m.loc(last).clone();
    let err = |e: ir::IrError| Diagnostic::error(loc.clone(), e.to_string());
    let mut st = OperationState::new(dialect_backend::KERNEL)
        .operands(f.operands.iter().copied())
        .results([m.value_type(f.result).clone()])
        .attr(dialect_backend::kernels::ATTR, Attribute::str(name))
        .regions(1)
        .loc(loc.clone());
    for (k, a) in f.attrs {
        st = st.attr(k, a);
    }
    let k = m.create_op(st);
    m.insert_op(k, InsertPoint::After(last)).map_err(err)?;
    m.replace_all_uses(f.result, m.results(k)[0]);
    let in_types: Vec<Type> = f.operands.iter().map(|&v| m.value_type(v).clone()).collect();
    let region = m.regions(k)[0];
    let body = m.append_block(region, &in_types);
    let mut map = ValueMap::new();
    if let Some(c) = f.shared {
        let copy = m.clone_op(c, &mut map);
        m.insert_op(copy, InsertPoint::End(body)).map_err(err)?;
    }
    for &o in &ops {
        m.move_to_end(o, body).map_err(err)?;
    }
    let in_body = move |m: &Module, u: ir::Use| m.parent_op(u.op) == Some(k);
    let args = m.block_args(body).to_vec();
    for (&v, &a) in f.operands.iter().zip(&args) {
        m.replace_uses_where(v, a, in_body);
    }
    if let Some(c) = f.shared
        && let Some(copy) = map.get(m.results(c)[0])
    {
        m.replace_uses_where(m.results(c)[0], copy, in_body);
    }
    let ret = m.create_op(OperationState::new(dialect_backend::RETURN).operands([f.result]).loc(loc.clone()));
    m.insert_op(ret, InsertPoint::End(body)).map_err(err)?;
    Ok(k)
}

/// Outlines, as kernels named `name`, the matches `matcher` finds at every op nested in
/// `root` that `anchor` accepts and that is not already inside a fused region (a kernel or a
/// fusion group); returns how many.
pub(crate) fn fuse_matches(
    m: &mut Module,
    root: OpId,
    name: &str,
    anchor: impl Fn(&Module, OpId) -> bool,
    matcher: impl Fn(&Module, OpId) -> Option<KernelMatch>,
) -> Result<usize, Diagnostic> {
    let mut anchors = Vec::new();
    m.walk(root, WalkOrder::PreOrder, &mut |o| {
        if anchor(m, o) {
            anchors.push(o);
        }
    });
    let mut n = 0;
    for op in anchors {
        if m.parent_op(op).is_some_and(|p| {
            let name = m.op_name(p);
            name == dialect_backend::KERNEL || name == dialect_prim::FUSION_GROUP
        }) {
            continue;
        }
        if let Some(f) = matcher(m, op) {
            outline_kernel(m, name, f)?;
            n += 1;
        }
    }
    Ok(n)
}
