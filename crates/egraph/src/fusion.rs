//! The `fuse-elementwise` pass: groups maximal connected sets of elementwise ops into
//! `prim.FusionGroup` ops whose isolated region holds the group.
//!
//! Ops are visited in block order; each candidate joins the groups of its candidate producers
//! when the merged group stays legal:
//! - every member's result has the same shape (the group's iteration space; operands may
//!   broadcast into it) and a supported dtype (f32, f64, i32, i64, bool);
//! - no op outside the group uses a member's result before the group's last member (this rules
//!   out cycles through outside ops and keeps every use dominated once the group sits at its
//!   last member's place);
//! - no op between the group's first and last member may write memory (the group moves reads
//!   past it otherwise);
//! - the group stays within the size and argument caps.
//!
//! Views, reductions and anything not `ELEMENTWISE` stay outside. Constants feeding a group
//! (scalars and 0-d tensors) are copied into it rather than passed as arguments.
//!
//! Before grouping, splits of elementwise results are distributed (option `distribute-splits`),
//! at the aten stage and at the Edge stage alike (see [`SPLITS`]):
//! `ListUnpack(chunk(f(a, b)))` becomes, per piece `k`, `f(slice_k(a), slice_k(b))`, each
//! slice a view of an operand outside the elementwise ops (a bias broadcast along the split
//! dimension is sliced along its own matching dimension, or not at all when it is broadcast
//! there). Cutting an elementwise computation's iteration space into pieces computes every
//! element exactly as before, and the pieces then fuse with their users: the LSTM cell's bias
//! additions join its gates in one group, with the matrix products and the slices outside.

use crate::engine;
use dialect_aten::op;
use ir::{
    Attribute, BlockId, Context, DType, Diagnostic, Dim, InsertPoint, Location, Module, OpId, OpRef, OperationState, TensorType,
    Traits, Type, TypeKind, ValueId, ValueMap, WalkOrder,
};
use pass::{AnalysisManager, LogLevel, Pass, PassInfo, PassOptions, PassRegistry, PassResult};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

pub const NAME: &str = "fuse-elementwise";
pub const DESCRIPTION: &str = "Group connected elementwise operations into prim.FusionGroup ops";

/// Dtypes a fusion group computes in.
pub const SUPPORTED: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool];

/// The pass and its limits.
#[derive(Clone, Debug)]
pub struct FuseElementwise {
    pub min_size: usize,
    pub max_size: usize,
    pub max_args: usize,
    /// Distribute splits (`chunk`, `split`, `split_with_sizes`) over the elementwise ops that
    /// compute their input, so the pieces fuse with their users.
    pub distribute_splits: bool,
    options: String,
}

impl Default for FuseElementwise {
    fn default() -> Self {
        FuseElementwise { min_size: 2, max_size: 64, max_args: 32, distribute_splits: true, options: String::new() }
    }
}

/// Ops that cut a tensor into pieces along one dimension, unpacked by one `prim.ListUnpack`:
/// the aten ones as exported and Edge's (`lower-to-edge` turns `chunk` and `split` into
/// `split_with_sizes`). A split's pieces are cut with the `slice.Tensor` of its own dialect.
pub const SPLITS: &[OpRef] = &[op::CHUNK, op::SPLIT_TENSOR, op::SPLIT_WITH_SIZES];

/// Whether `name` is a split of [`SPLITS`] or an op mirroring one (`edge.split_with_sizes`).
fn is_split(ctx: &Context, name: &str) -> bool {
    let name = ctx.mirrored(name);
    SPLITS.iter().any(|s| s.is(name))
}

/// One formed group.
#[derive(Clone, Debug)]
pub struct GroupReport {
    pub ops: Vec<String>,
    pub inputs: usize,
    pub outputs: usize,
}

impl FuseElementwise {
    pub fn options() -> PassOptions {
        PassOptions::new()
            .int("min-size", 2, "Fewest ops in a group")
            .int("max-size", 64, "Most ops in a group")
            .int("max-args", 32, "Most arguments of a group")
            .bool("distribute-splits", true, "Distribute chunk/split over the elementwise ops computing their input")
    }

    pub fn with_options(opts: &PassOptions) -> Result<FuseElementwise, String> {
        let get = |n: &str, d: i64| -> Result<usize, String> {
            usize::try_from(opts.get_int(n).unwrap_or(d)).ok().filter(|&v| v > 0).ok_or_else(|| format!("{n} must be positive"))
        };
        Ok(FuseElementwise {
            min_size: get("min-size", 2)?,
            max_size: get("max-size", 64)?,
            max_args: get("max-args", 32)?,
            distribute_splits: opts.get_bool("distribute-splits").unwrap_or(true),
            options: opts.to_option_text(),
        })
    }

    /// Forms groups in every block under `root`.
    pub fn fuse(&self, ctx: &Context, m: &mut Module, root: OpId) -> Result<Vec<GroupReport>, Diagnostic> {
        let mut blocks = Vec::new();
        m.walk(root, WalkOrder::PreOrder, &mut |o| {
            // A `backend.kernel`'s region is the reference semantics of a kernel its backend
            // runs whole; grouping inside it would only change how the fallback runs.
            if m.op_name(o) == dialect_prim::FUSION_GROUP || m.op_name(o) == dialect_backend::KERNEL {
                return;
            }
            for &r in m.regions(o) {
                blocks.extend(m.region_blocks(r).iter().copied());
            }
        });
        if self.distribute_splits && !engine::writes_memory(ctx, m, root) {
            for &b in &blocks {
                self.distribute(ctx, m, b)?;
            }
        }
        let mut out = Vec::new();
        for b in blocks {
            // Blocks inside groups formed just now are skipped: their parent is a fusion group.
            if m.block_parent_op(b).is_some_and(|p| m.op_name(p) == dialect_prim::FUSION_GROUP) {
                continue;
            }
            for g in self.plan(ctx, m, b) {
                out.push(build_group(m, &g)?);
            }
        }
        Ok(out)
    }

    /// The groups of one block, each a list of ops in block order.
    ///
    /// Each group keeps what its legality depends on — its iteration space, its first and last
    /// member, its arguments, and a min-heap of the ops outside it that use its members — so
    /// a merge costs in proportion to the arguments and to the uses it settles, not to the
    /// group's size: long chains group in near-linear time.
    pub fn plan(&self, ctx: &Context, m: &Module, block: BlockId) -> Vec<Vec<OpId>> {
        let ops = m.block_ops(block);
        let index: HashMap<OpId, usize> = ops.iter().enumerate().map(|(i, &o)| (o, i)).collect();
        // writes[i]: ops that may write memory among the first i.
        let mut writes = vec![0usize; ops.len() + 1];
        for (i, &o) in ops.iter().enumerate() {
            let w = m.regions(o).iter().any(|_| true) && engine::writes_memory(ctx, m, o)
                || ctx.op_def(m.op_name(o)).is_none_or(|d| d.schema.as_ref().is_some_and(|s| s.is_mutable()));
            writes[i + 1] = writes[i] + usize::from(w);
        }
        let mut p = Planner { groups: Vec::new(), parent: Vec::new(), group_of: HashMap::new() };
        for (i, &o) in ops.iter().enumerate() {
            if !self.candidate(ctx, m, o) {
                continue;
            }
            let id = p.start(m, block, &index, o, i);
            let direct: Vec<usize> =
                m.operands(o).iter().filter_map(|&v| m.defining_op(v)).filter_map(|d| p.group_of.get(&d).copied()).collect();
            let mut producers: Vec<usize> = direct.into_iter().map(|g| p.find(g)).filter(|&g| g != id).collect();
            producers.sort_unstable();
            producers.dedup();
            // Latest producer groups first: they are the closest.
            for g in producers.into_iter().rev() {
                p.try_merge(self, m, g, id, i, &writes);
            }
        }
        let Planner { groups, parent, .. } = p;
        groups
            .into_iter()
            .enumerate()
            .filter(|&(g, ref grp)| parent[g] == g && grp.members.len() >= self.min_size)
            .map(|(_, grp)| {
                let mut members = grp.members;
                members.sort_by_key(|x| index.get(x).copied().unwrap_or(usize::MAX));
                members
            })
            .collect()
    }

    /// Distributes every split of an elementwise result in `block` (see the module docs);
    /// returns how many splits were distributed. The caller has checked that nothing in the
    /// function writes memory: the pieces become fresh tensors instead of views of one.
    pub fn distribute(&self, ctx: &Context, m: &mut Module, block: BlockId) -> Result<usize, Diagnostic> {
        let splits: Vec<OpId> = m.block_ops(block).into_iter().filter(|&o| is_split(ctx, m.op_name(o))).collect();
        let mut n = 0;
        for s in splits {
            if let Some(plan) = self.split_plan(ctx, m, block, s) {
                apply_split_plan(m, s, &plan)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// What distributing split `s` takes, or `None` when it does not apply.
    fn split_plan(&self, ctx: &Context, m: &Module, block: BlockId, s: OpId) -> Option<SplitPlan> {
        let (&x, [list]) = (m.operands(s).first()?, m.results(s)) else { return None };
        let [use_] = m.uses(*list) else { return None };
        let unpack = use_.op;
        if m.op_name(unpack) != dialect_prim::LIST_UNPACK || m.parent_block(unpack) != Some(block) {
            return None;
        }
        let xt = m.value_type(x).as_tensor()?;
        let xdims = xt.static_dims()?;
        let rank = xdims.len() as i64;
        let d = split_dim(ctx, m, s)?;
        let d = if d < 0 { d + rank } else { d };
        if !(0..rank).contains(&d) {
            return None;
        }
        let d = d as usize;
        // The pieces, from the unpacked types: same rank, same sizes but along `d`, covering it.
        let mut pieces = Vec::new();
        let mut start = 0i64;
        for &r in m.results(unpack) {
            let dims = m.value_type(r).as_tensor()?.static_dims()?;
            if dims.len() != xdims.len() || dims.iter().zip(&xdims).enumerate().any(|(i, (a, b))| i != d && a != b) {
                return None;
            }
            pieces.push((start, start + dims[d]));
            start += dims[d];
        }
        if start != xdims[d] || pieces.len() < 2 {
            return None;
        }
        // Worth it only when a piece feeds an elementwise op.
        let feeds = m.results(unpack).iter().any(|&r| m.uses(r).iter().any(|u| self.candidate(ctx, m, u.op)));
        // The elementwise ops computing `x` and used only by each other and the split.
        let e = m.defining_op(x)?;
        let same_space = |o: OpId| {
            m.parent_block(o) == Some(block)
                && self.candidate(ctx, m, o)
                && m.value_type(m.results(o)[0]).as_tensor().and_then(TensorType::static_dims).as_ref() == Some(&xdims)
        };
        if !feeds || !same_space(e) || m.uses(x).len() != 1 {
            return None;
        }
        let mut cone: HashSet<OpId> = HashSet::from([e]);
        loop {
            let mut grew = false;
            let members: Vec<OpId> = cone.iter().copied().collect();
            for o in members {
                for &v in m.operands(o) {
                    let Some(p) = m.defining_op(v) else { continue };
                    if cone.contains(&p) || !same_space(p) {
                        continue;
                    }
                    if m.results(p).iter().all(|&r| m.uses(r).iter().all(|u| cone.contains(&u.op))) {
                        cone.insert(p);
                        grew = true;
                    }
                }
            }
            if !grew {
                break;
            }
        }
        let order: HashMap<OpId, usize> = m.block_ops(block).into_iter().enumerate().map(|(i, o)| (o, i)).collect();
        let mut ops: Vec<OpId> = cone.iter().copied().collect();
        ops.sort_by_key(|o| order.get(o).copied().unwrap_or(usize::MAX));
        // Operands from outside: tensors sliced along their dimension matching `d` unless
        // they broadcast there; everything else taken as it is.
        let mut sliced: Vec<(ValueId, usize)> = Vec::new();
        for &o in &ops {
            for &v in m.operands(o) {
                if m.defining_op(v).is_some_and(|p| cone.contains(&p)) || sliced.iter().any(|(w, _)| *w == v) {
                    continue;
                }
                let TypeKind::Tensor(t) = m.value_type(v).kind() else { continue };
                let dims = t.static_dims()?;
                if dims.len() > xdims.len() {
                    return None;
                }
                let off = xdims.len() - dims.len();
                if dims.iter().enumerate().any(|(i, &n)| n != 1 && n != xdims[i + off]) {
                    return None;
                }
                if d >= off && dims[d - off] != 1 {
                    sliced.push((v, d - off));
                }
            }
        }
        let n = pieces.len();
        if ops.len() * n > self.max_size || sliced.len() * n > self.max_args {
            return None;
        }
        let dialect = ctx.op_def(m.op_name(s))?.dialect();
        let slice = ctx.mirror_in(dialect, op::SLICE_TENSOR)?.to_string();
        Some(SplitPlan { unpack, ops, sliced, pieces, dim: d, slice })
    }

    fn candidate(&self, ctx: &Context, m: &Module, o: OpId) -> bool {
        let Some(def) = ctx.op_def(m.op_name(o)) else { return false };
        if !def.has_trait(Traits::ELEMENTWISE) || !def.has_trait(Traits::PURE) || !engine::convertible(ctx, m, o) {
            return false;
        }
        let [r] = m.results(o) else { return false };
        let Some(t) = m.value_type(*r).as_tensor() else { return false };
        if t.shape.is_none() || !t.dtype.is_some_and(|d| SUPPORTED.contains(&d)) {
            return false;
        }
        m.operands(o).iter().all(|&v| match m.value_type(v).kind() {
            TypeKind::Tensor(t) => t.shape.is_some() && t.dtype.is_some_and(|d| SUPPORTED.contains(&d)),
            TypeKind::Int | TypeKind::Float | TypeKind::Bool => true,
            _ => false,
        })
    }
}

/// What the legality of a planned group depends on (see the module docs).
struct PlanGroup {
    members: Vec<OpId>,
    /// Block positions of the first and the last member.
    lo: usize,
    hi: usize,
    /// The iteration space: every member's result shape.
    space: Option<Vec<Dim>>,
    /// Never merged: a member is used outside the block, or an operand does not broadcast
    /// into the member's shape.
    sealed: bool,
    /// The values the group takes as arguments (see [`inputs_of`]).
    inputs: HashSet<ValueId>,
    /// Ops using a member's result (their block position and the op; ops in nested regions
    /// stand for their ancestor in the block), not members when they were recorded.
    users: BinaryHeap<Reverse<(usize, OpId)>>,
}

/// Groups being planned: merged groups are joined in a union-find forest over group ids.
struct Planner {
    groups: Vec<PlanGroup>,
    parent: Vec<usize>,
    group_of: HashMap<OpId, usize>,
}

impl Planner {
    fn find(&mut self, mut g: usize) -> usize {
        while self.parent[g] != g {
            self.parent[g] = self.parent[self.parent[g]];
            g = self.parent[g];
        }
        g
    }

    fn in_group(&mut self, o: OpId, g: usize) -> bool {
        match self.group_of.get(&o) {
            Some(&x) => self.find(x) == g,
            None => false,
        }
    }

    /// A new group of the single op `o` at block position `i`; returns its id.
    fn start(&mut self, m: &Module, block: BlockId, index: &HashMap<OpId, usize>, o: OpId, i: usize) -> usize {
        let space = m.value_type(m.results(o)[0]).as_tensor().and_then(|t| t.shape.clone());
        let mut sealed = false;
        let here = space.clone().unwrap_or_default();
        for &v in m.operands(o) {
            if let Some(Some(s)) = m.value_type(v).as_tensor().map(|t| t.shape.clone())
                && crate::analysis::broadcast_shapes(&[&s, &here]).as_ref() != Some(&here)
            {
                sealed = true;
            }
        }
        let mut users = BinaryHeap::new();
        for &r in m.results(o) {
            for u in m.uses(r) {
                let mut user = u.op;
                while m.parent_block(user) != Some(block) {
                    match m.parent_op(user) {
                        Some(p) => user = p,
                        None => {
                            sealed = true;
                            break;
                        }
                    }
                }
                match index.get(&user) {
                    Some(&k) if m.parent_block(user) == Some(block) => users.push(Reverse((k, user))),
                    _ => sealed = true,
                }
            }
        }
        let inputs: HashSet<ValueId> =
            m.operands(o).iter().copied().filter(|&v| !m.defining_op(v).is_some_and(|d| is_small_constant(m, d))).collect();
        let id = self.groups.len();
        self.groups.push(PlanGroup { members: vec![o], lo: i, hi: i, space, sealed, inputs, users });
        self.parent.push(id);
        self.group_of.insert(o, id);
        id
    }

    /// Merges group `g` into the group `cur` of the op at block position `at` (its last
    /// member) when the merged group is legal.
    fn try_merge(&mut self, f: &FuseElementwise, m: &Module, g: usize, cur: usize, at: usize, writes: &[usize]) -> bool {
        let (a, b) = (&self.groups[g], &self.groups[cur]);
        if a.sealed || b.sealed || a.space != b.space || a.members.len() + b.members.len() > f.max_size {
            return false;
        }
        // No write between the first and the last member.
        let lo = a.lo.min(b.lo);
        if writes[at + 1] - writes[lo] > 0 {
            return false;
        }
        // Arguments: those of either group not computed by the other.
        let mut inputs: HashSet<ValueId> = HashSet::with_capacity(a.inputs.len() + b.inputs.len());
        let candidates: Vec<ValueId> = a.inputs.iter().chain(b.inputs.iter()).copied().collect();
        for v in candidates {
            let inside = m.defining_op(v).is_some_and(|d| self.in_group(d, g) || self.in_group(d, cur));
            if !inside {
                inputs.insert(v);
            }
        }
        if inputs.len() > f.max_args {
            return false;
        }
        // No use of a member of `g` by an op outside the merged group up to `at` (the other
        // group's uses up to `at` are its own members: it ends at `at`). Settled uses, by
        // members of either group, are dropped; those by `cur`'s members are kept until the
        // merge is certain.
        let mut settled_cur = Vec::new();
        while let Some(&Reverse((k, user))) = self.groups[g].users.peek() {
            if k > at {
                break;
            }
            self.groups[g].users.pop();
            if self.in_group(user, g) {
                continue;
            }
            if self.in_group(user, cur) {
                settled_cur.push(Reverse((k, user)));
                continue;
            }
            // An outside use before the end: restore and refuse.
            self.groups[g].users.push(Reverse((k, user)));
            self.groups[g].users.extend(settled_cur);
            return false;
        }
        // Merge, the smaller collections into the larger.
        let mut src = std::mem::replace(
            &mut self.groups[g],
            PlanGroup { members: Vec::new(), lo: 0, hi: 0, space: None, sealed: true, inputs: HashSet::new(), users: BinaryHeap::new() },
        );
        let dst = &mut self.groups[cur];
        if src.members.len() > dst.members.len() {
            std::mem::swap(&mut src.members, &mut dst.members);
        }
        dst.members.append(&mut src.members);
        if src.users.len() > dst.users.len() {
            std::mem::swap(&mut src.users, &mut dst.users);
        }
        dst.users.append(&mut src.users);
        dst.lo = lo;
        dst.hi = at;
        dst.inputs = inputs;
        self.parent[g] = cur;
        true
    }
}

/// A split to distribute: the elementwise ops computing its input (in block order), the
/// operands to slice with their dimension, the pieces' bounds along the split dimension.
struct SplitPlan {
    unpack: OpId,
    ops: Vec<OpId>,
    sliced: Vec<(ValueId, usize)>,
    pieces: Vec<(i64, i64)>,
    dim: usize,
    /// The view cutting a piece out of an operand: `slice.Tensor` of the split's dialect.
    slice: String,
}

/// The dimension argument of a split, from its attribute or a constant operand.
fn split_dim(ctx: &Context, m: &Module, s: OpId) -> Option<i64> {
    let schema = ctx.op_def(m.op_name(s))?.schema.as_ref()?;
    let i = schema.args.iter().position(|a| a.name == "dim")?;
    let bound = dialect_aten::bind_args(schema, m, s).ok()?;
    match bound.get(i)? {
        dialect_aten::ArgSource::Const(Attribute::Int(d)) => Some(*d),
        dialect_aten::ArgSource::Operand(k) => {
            let c = m.defining_op(*m.operands(s).get(*k)?)?;
            match (m.op_name(c), m.attr(c, "value")) {
                (dialect_prim::CONSTANT, Some(Attribute::Int(d))) => Some(*d),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Rewrites `ListUnpack(split(f(...)))` into one copy of the elementwise ops per piece, over
/// slices of their outside operands, placed before the split; then erases the originals.
fn apply_split_plan(m: &mut Module, s: OpId, plan: &SplitPlan) -> Result<(), Diagnostic> {
    let err = |e: ir::IrError| Diagnostic::error(Location::Unknown, format!("fuse-elementwise: {e}"));
    let Some(&last) = plan.ops.last() else { return Ok(()) };
    let x = m.results(last)[0];
    let outs = m.results(plan.unpack).to_vec();
    let slice = plan.slice.as_str();
    for (k, &(start, end)) in plan.pieces.iter().enumerate() {
        let mut map = ValueMap::new();
        for &(v, dim) in &plan.sliced {
            let Some(t) = m.value_type(v).as_tensor() else { continue };
            let mut shape = t.shape.clone().unwrap_or_default();
            shape[dim] = Dim::Static(end - start);
            let ty = Type::tensor_of(TensorType { dtype: t.dtype, shape: Some(shape) });
            let loc = m.loc(s).clone();
            let st = OperationState::new(slice)
                .operands([v])
                .attr("dim", Attribute::Int(dim as i64))
                .attr("start", Attribute::Int(start))
                .attr("end", Attribute::Int(end))
                .results([ty])
                .loc(loc);
            let op = m.create_op(st);
            m.insert_op(op, InsertPoint::Before(s)).map_err(err)?;
            map.insert(v, m.results(op)[0]);
        }
        for &o in &plan.ops {
            let c = m.clone_op(o, &mut map);
            m.insert_op(c, InsertPoint::Before(s)).map_err(err)?;
            let r = m.results(c)[0];
            if let Some(t) = m.value_type(r).as_tensor() {
                let mut shape = t.shape.clone().unwrap_or_default();
                shape[plan.dim] = Dim::Static(end - start);
                let ty = Type::tensor_of(TensorType { dtype: t.dtype, shape: Some(shape) });
                m.set_value_type(r, ty);
            }
        }
        m.replace_all_uses(outs[k], map.lookup(x));
    }
    m.erase_op(plan.unpack).map_err(err)?;
    m.erase_op(s).map_err(err)?;
    for &o in plan.ops.iter().rev() {
        m.erase_op(o).map_err(err)?;
    }
    Ok(())
}

/// Whether `o` is a constant that groups copy rather than take as an argument.
fn is_small_constant(m: &Module, o: OpId) -> bool {
    engine::constant_of(m, o).is_some_and(|(t, _)| t.as_tensor().is_none_or(|tt| tt.rank() == Some(0)))
}

/// The values a group takes as arguments, in order of first use.
fn inputs_of(m: &Module, g: &[OpId]) -> Vec<ValueId> {
    let set: HashSet<OpId> = g.iter().copied().collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &o in g {
        for &v in m.operands(o) {
            let inside = m.defining_op(v).is_some_and(|d| set.contains(&d) || is_small_constant(m, d));
            if !inside && seen.insert(v) {
                out.push(v);
            }
        }
    }
    out
}

fn build_group(m: &mut Module, g: &[OpId]) -> Result<GroupReport, Diagnostic> {
    let err = |e: ir::IrError| Diagnostic::error(Location::Unknown, format!("fuse-elementwise: {e}"));
    let set: HashSet<OpId> = g.iter().copied().collect();
    let names: Vec<String> = g.iter().map(|&o| m.op_name(o).to_string()).collect();
    let inputs = inputs_of(m, g);
    let mut outputs: Vec<ValueId> = Vec::new();
    for &o in g {
        for &r in m.results(o) {
            if m.uses(r).iter().any(|u| !set.contains(&u.op)) {
                outputs.push(r);
            }
        }
    }
    let Some(&last) = g.last() else { return Err(Diagnostic::error(Location::Unknown, "empty fusion group")) };
    let in_types: Vec<Type> = inputs.iter().map(|&v| m.value_type(v).clone()).collect();
    let out_types: Vec<Type> = outputs.iter().map(|&v| m.value_type(v).clone()).collect();
    let loc = Location::fuse(g.iter().map(|&o| m.loc(o).clone()));
    let group = m.create_op(
        OperationState::new(dialect_prim::FUSION_GROUP).operands(inputs.iter().copied()).results(out_types).regions(1).loc(loc),
    );
    let region = m.regions(group)[0];
    let body = m.append_block(region, &in_types);
    let mut map = ValueMap::new();
    for (i, &v) in inputs.iter().enumerate() {
        let a = m.block_args(body)[i];
        map.insert(v, a);
    }
    // Constants used by the group are copied in first.
    let mut copied = HashSet::new();
    for &o in g {
        for v in m.operands(o).to_vec() {
            if let Some(d) = m.defining_op(v) {
                if !set.contains(&d) && is_small_constant(m, d) && copied.insert(d) {
                    let c = m.clone_op(d, &mut map);
                    m.insert_op(c, InsertPoint::End(body)).map_err(err)?;
                }
            }
        }
    }
    for &o in g {
        let c = m.clone_op(o, &mut map);
        m.insert_op(c, InsertPoint::End(body)).map_err(err)?;
    }
    let ret_vals: Vec<ValueId> = outputs.iter().map(|&v| map.lookup(v)).collect();
    let ret = m.create_op(OperationState::new(dialect_prim::RETURN).operands(ret_vals));
    m.insert_op(ret, InsertPoint::End(body)).map_err(err)?;
    m.insert_op(group, InsertPoint::After(last)).map_err(err)?;
    for (i, &v) in outputs.iter().enumerate() {
        let r = m.results(group)[i];
        m.replace_uses_where(v, r, |_, u| !set.contains(&u.op));
    }
    for &o in g.iter().rev() {
        m.erase_op(o).map_err(err)?;
    }
    // Constants left without users are dropped.
    for d in copied {
        if m.contains_op(d) && m.results(d).iter().all(|&r| !m.has_uses(r)) {
            let _ = m.erase_op(d);
        }
    }
    Ok(GroupReport { ops: names, inputs: inputs.len(), outputs: outputs.len() })
}

impl Pass for FuseElementwise {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn option_text(&self) -> String {
        self.options.clone()
    }

    fn run(&mut self, ctx: &Context, m: &mut Module, op: OpId, am: &mut AnalysisManager) -> Result<PassResult, Diagnostic> {
        let groups = self.fuse(ctx, m, op)?;
        am.record_rewrites(groups.len());
        for (i, g) in groups.iter().enumerate() {
            pass::log!(am, LogLevel::Dump, "group {i}: {} op(s), {} input(s), {} output(s)", g.ops.len(), g.inputs, g.outputs);
        }
        Ok(PassResult::from_changed(!groups.is_empty()))
    }
}

/// Registers `fuse-elementwise`.
pub fn register(r: &mut PassRegistry) {
    let info = PassInfo::new(NAME, DESCRIPTION, |o| Ok(Box::new(FuseElementwise::with_options(o)?) as Box<dyn Pass>))
        .options(FuseElementwise::options());
    let _ = r.register(info);
}
