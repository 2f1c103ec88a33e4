//! Linearization: a function body becomes blocks of instructions over a register file.
//!
//! Every SSA value gets a register. Kernels are looked up once here; argument binding is
//! precomputed from the op's schema (`bind_args`); constants become values at compile time.
//! A liveness pass per block marks each register operand as moved (its last use), borrowed or
//! cloned, and lists the registers to clear after instructions whose nested blocks held the
//! last use, so values die as early as possible.
//!
//! One file because it is one pass: every kind of op becomes instructions through the same
//! state (`Lin`), in the function's order, and the liveness marks depend on all of them.

use dialect_prim::kinds::{Kind as PK, TypeExt as _};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dialect_aten::{ArgSource, bind_args, op};
use ir::{Context, Module, OpId, Traits, Type, ValueId};

use super::convert::{attr_for_schema, attr_value};
use super::run::{Frame, instr_regs};
use super::{Arg, Block, Candidate, Function, Instr, Kind, ListKind, Mode, Reg, SymOp, out, prepack};
use crate::exec::{ExecError, MissingKernel, loc_string};
use crate::fusion::{FusionCompiler, FusionDecision, FusionKernel};
use crate::kernels::KernelRegistry;
use crate::value::IValue;

/// Options of linearization.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinearizeOptions<'f> {
    /// Attach out-variants to ops that have one (needed by the memory plan).
    pub out_variants: bool,
    /// Offered every `prim.FusionGroup`.
    pub fusion: Option<&'f dyn FusionCompiler>,
}

/// Linearizes the body of `func`. `frozen[i]`, when set, is the value of function argument
/// `i` fixed at compile time (a parameter, a buffer that is never written, a lifted constant).
/// Returns the function and the register of each function argument.
pub(crate) fn linearize(
    m: &Module,
    ctx: &Context,
    func: OpId,
    frozen: &[Option<IValue>],
    registry: &KernelRegistry,
    opts: LinearizeOptions<'_>,
) -> Result<(Function, Vec<Reg>, Vec<FusionDecision>), ExecError> {
    let region = *m.regions(func).first().ok_or_else(|| ExecError::Unsupported {
        what: "a function without a body".into(),
        loc: loc_string(m.loc(func)),
    })?;
    let entry = m.entry_block(region).ok_or_else(|| ExecError::Unsupported {
        what: "a function without an entry block".into(),
        loc: loc_string(m.loc(func)),
    })?;
    if m.region_blocks(region).len() != 1 {
        return Err(ExecError::Unsupported {
            what: "a function body with more than one block".into(),
            loc: loc_string(m.loc(func)),
        });
    }
    let mut lin = Lin {
        m,
        ctx,
        registry,
        opts,
        regs: HashMap::new(),
        consts: HashMap::new(),
        num_regs: 0,
        slots: 0,
        missing: Vec::new(),
        top_candidates: Vec::new(),
        fusion: Vec::new(),
        reg_value: Vec::new(),
        written: HashMap::new(),
        scratch: Frame::scratch(),
        hoisted: 0,
    };
    let args: Vec<ValueId> = m.block_args(entry).to_vec();
    let mut arg_regs = Vec::with_capacity(args.len());
    for (i, &a) in args.iter().enumerate() {
        let r = lin.reg(a);
        arg_regs.push(r);
        if let Some(Some(v)) = frozen.get(i) {
            lin.consts.insert(a, v.clone());
        }
    }
    let body = lin.block(entry, true)?;
    if !lin.missing.is_empty() {
        return Err(ExecError::NoKernel(lin.missing));
    }
    let mut const_regs: Vec<(Reg, IValue)> = lin.consts.iter().map(|(v, c)| (lin.regs[v], c.clone())).collect();
    const_regs.sort_by_key(|(r, _)| *r);
    let function = Function {
        body,
        num_regs: lin.num_regs as usize,
        const_regs,
        kernel_slots: lin.slots,
        candidates: lin.top_candidates,
        hoisted: lin.hoisted,
    };
    Ok((function, arg_regs, lin.fusion))
}

struct Lin<'a> {
    m: &'a Module,
    ctx: &'a Context,
    registry: &'a KernelRegistry,
    opts: LinearizeOptions<'a>,
    regs: HashMap<ValueId, Reg>,
    /// Values known at compile time (constants and frozen arguments).
    consts: HashMap<ValueId, IValue>,
    num_regs: u32,
    slots: usize,
    missing: Vec<MissingKernel>,
    top_candidates: Vec<Candidate>,
    /// What the fusion compiler made of each fusion group, in program order.
    fusion: Vec<FusionDecision>,
    /// The value of each register.
    reg_value: Vec<ValueId>,
    /// Whether any op may write the storage of a value (through any alias of it), by value.
    written: HashMap<ValueId, bool>,
    /// Runs the instructions hoisted out of the function.
    scratch: Frame,
    /// Number of ops computed here, once, instead of on every call.
    hoisted: usize,
}

/// Liveness of the values of one block.
struct Liveness {
    /// Position of the last op (terminator included) using each value defined in the block.
    last: HashMap<ValueId, usize>,
    /// Values used inside the nested regions of each op.
    nested: Vec<HashSet<ValueId>>,
    defined: HashSet<ValueId>,
}

/// Whether ops named `name` are fused: a region that is their semantics, run as one
/// instruction (a fusion group, a `backend.kernel`).
fn is_fused(name: &str) -> bool {
    name == dialect_prim::FUSION_GROUP || name == super::partition::KERNEL
}

fn is_terminator(name: &str) -> bool {
    matches!(name, ir::builtin::RETURN | dialect_prim::YIELD | dialect_prim::RETURN | super::partition::RETURN)
}

/// Whether the interpreter runs ops named `name` without help: a kernel in `reg` (an Edge op's
/// is its ATen op's), or an op of no schema (structural ops, which the interpreter runs itself or
/// reports as unsupported).
pub(crate) fn has_kernel(reg: &KernelRegistry, ctx: &Context, name: &str) -> bool {
    reg.contains(kernel_name(name)) || sym_op(name).is_some() || ctx.op_def(name).is_none_or(|d| d.schema.is_none())
}

/// The op with the same arguments whose one result is the first result of `name`, for ops
/// whose other results cost more than the first (max pooling's indices): run in its place when
/// nothing reads those results.
fn values_only_kernel(name: &str) -> Option<&'static str> {
    match name {
        n if n == op::MAX_POOL2D_WITH_INDICES.name() => Some(op::MAX_POOL2D.name()),
        n if n == op::MAX_POOL3D_WITH_INDICES.name() => Some(op::MAX_POOL3D.name()),
        _ => None,
    }
}

/// The name a kernel is registered under: an Edge op runs the kernel of the ATen op it mirrors.
fn kernel_name(name: &str) -> &str {
    match dialect_edge::aten_op(name) {
        Some(aten) => aten.name(),
        None => name,
    }
}

impl<'a> Lin<'a> {
    fn reg(&mut self, v: ValueId) -> Reg {
        if let Some(&r) = self.regs.get(&v) {
            return r;
        }
        let r = self.num_regs;
        self.num_regs += 1;
        self.regs.insert(v, r);
        self.reg_value.push(v);
        r
    }

    fn err_unsupported(&self, op: OpId, what: String) -> ExecError {
        ExecError::Unsupported { what, loc: loc_string(self.m.loc(op)) }
    }

    fn liveness(&self, b: ir::BlockId, ops: &[OpId]) -> Liveness {
        let m = self.m;
        let mut defined: HashSet<ValueId> = m.block_args(b).iter().copied().collect();
        let mut last = HashMap::new();
        let mut nested = Vec::with_capacity(ops.len());
        for (j, &op) in ops.iter().enumerate() {
            let mut inner = HashSet::new();
            for &r in m.regions(op) {
                for &nb in m.region_blocks(r) {
                    for o in m.block_ops(nb) {
                        m.walk(o, ir::WalkOrder::PreOrder, &mut |x| inner.extend(m.operands(x).iter().copied()));
                    }
                }
            }
            for &v in m.operands(op).iter().chain(inner.iter()) {
                last.insert(v, j);
            }
            nested.push(inner);
            defined.extend(m.results(op).iter().copied());
        }
        Liveness { last, nested, defined }
    }

    /// Modes of the value operands `vals` of op `j`, and the registers to free after it.
    fn modes(&self, live: &Liveness, j: usize, vals: &[ValueId]) -> Vec<Mode> {
        let mut seen = HashSet::new();
        vals.iter()
            .map(|v| {
                if !seen.insert(*v) {
                    return Mode::Clone;
                }
                let dies_here = live.defined.contains(v)
                    && !self.consts.contains_key(v)
                    && live.last.get(v) == Some(&j)
                    && !live.nested.get(j).is_some_and(|n| n.contains(v));
                if dies_here { Mode::Move } else { Mode::Borrow }
            })
            .collect()
    }

    fn frees(&self, live: &Liveness, j: usize, op: OpId, moved: &[ValueId]) -> Vec<Reg> {
        let m = self.m;
        let mut out = Vec::new();
        for (&v, &l) in &live.last {
            if l == j && live.defined.contains(&v) && !self.consts.contains_key(&v) && !moved.contains(&v) {
                if let Some(&r) = self.regs.get(&v) {
                    out.push(r);
                }
            }
        }
        for &r in m.results(op) {
            if !m.has_uses(r) && !self.consts.contains_key(&r) {
                if let Some(&reg) = self.regs.get(&r) {
                    out.push(reg);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Register arguments for value operands with their modes.
    fn value_args(&mut self, live: &Liveness, j: usize, vals: &[ValueId]) -> (Vec<Arg>, Vec<ValueId>) {
        let modes = self.modes(live, j, vals);
        let mut moved = Vec::new();
        let args = vals
            .iter()
            .zip(modes)
            .map(|(&v, mode)| {
                if mode == Mode::Move {
                    moved.push(v);
                }
                Arg::Reg { reg: self.reg(v), mode }
            })
            .collect();
        (args, moved)
    }

    fn block(&mut self, b: ir::BlockId, top: bool) -> Result<Block, ExecError> {
        let m = self.m;
        let ops = m.block_ops(b);
        let live = self.liveness(b, &ops);
        let mut block = Block::default();
        for &a in m.block_args(b) {
            let r = self.reg(a);
            block.args.push(r);
            if !m.has_uses(a) {
                block.entry_free.push(r);
            }
        }
        let mut op_index: HashMap<OpId, usize> = HashMap::new();
        let mut terminated = false;
        for (j, &op) in ops.iter().enumerate() {
            let name = m.op_name(op);
            if is_terminator(name) {
                if j + 1 != ops.len() {
                    return Err(self.err_unsupported(op, format!("`{name}` before the end of its block")));
                }
                let vals = m.operands(op).to_vec();
                let (args, _) = self.value_args(&live, j, &vals);
                // Constants yielded or returned are cloned out of their registers.
                block.results = args
                    .into_iter()
                    .zip(&vals)
                    .map(|(a, v)| match a {
                        Arg::Reg { reg, .. } if self.consts.contains_key(v) => Arg::Reg { reg, mode: Mode::Clone },
                        other => other,
                    })
                    .collect();
                terminated = true;
                continue;
            }
            for &r in m.results(op) {
                self.reg(r);
            }
            // Constants produce no instruction.
            if let Some(instr) = self.instr(op, j, &live)? {
                op_index.insert(op, block.instrs.len());
                block.instrs.push(instr);
            }
        }
        // A block without a terminator yields nothing.
        let _ = terminated;
        if top && self.opts.out_variants {
            self.candidates(&ops, &op_index, &live, &mut block);
        }
        Ok(block)
    }

    /// Marks the planning candidates of the top-level block: the first result of each
    /// instruction that writes into storage it is given, when every value that may share that
    /// storage (the result, views of it, views of those, ...) is read only by top-level
    /// instructions, never returned or captured by a nested block. The candidate's lifetime
    /// ends at the last reader of any of those values, so the slab region stays reserved
    /// while a view of it can still be read.
    fn candidates(&mut self, ops: &[OpId], op_index: &HashMap<OpId, usize>, live: &Liveness, block: &mut Block) {
        let m = self.m;
        for &op in ops {
            let Some(&i) = op_index.get(&op) else { continue };
            // A compiled fusion group writes its result into storage it is given, as an
            // out-variant does (when the kernel declines a call, the interpreted result is fresh).
            let writes_out = match &block.instrs[i].kind {
                Kind::Kernel { out: Some(o), .. } => !o.is_view(),
                Kind::Fusion { kernel: Some(_), .. } => m.results(op).len() == 1,
                _ => false,
            };
            let Some(&v) = m.results(op).first() else { continue };
            if !writes_out || !m.has_uses(v) {
                continue;
            }
            let Some(last) = self.alias_end(v, ops, op_index, live) else { continue };
            let idx = self.top_candidates.len();
            self.top_candidates.push(Candidate { reg: self.regs[&v], def: i, last });
            block.instrs[i].home = Some(idx);
        }
    }

    /// The index of the last top-level instruction that reads `v` or a value that may alias
    /// it; `None` when one of them escapes (returned, read inside a nested block, or read by
    /// an op that produced no instruction). Every result of a reader is assumed to alias its
    /// operands unless the op is known to return fresh storage (`fresh_result`).
    fn alias_end(&self, v: ValueId, ops: &[OpId], op_index: &HashMap<OpId, usize>, live: &Liveness) -> Option<usize> {
        let m = self.m;
        let mut stack = vec![v];
        let mut seen: HashSet<ValueId> = HashSet::from([v]);
        let mut end = 0;
        while let Some(w) = stack.pop() {
            for u in m.uses(w) {
                op_index.get(&u.op)?;
                if fresh_result(kernel_name(m.op_name(u.op))) || fresh_group_results(m, u.op) {
                    continue;
                }
                for &r in m.results(u.op) {
                    if seen.insert(r) {
                        stack.push(r);
                    }
                }
            }
            if let Some(&p) = live.last.get(&w) {
                end = end.max(p);
            }
        }
        ops.get(end).and_then(|o| op_index.get(o)).copied()
    }

    fn instr(&mut self, op: OpId, j: usize, live: &Liveness) -> Result<Option<Instr>, ExecError> {
        let m = self.m;
        let name: Arc<str> = Arc::from(m.op_name(op));
        let loc = m.loc(op).clone();
        let outs: Vec<Reg> = m.results(op).iter().map(|&r| self.regs[&r]).collect();
        let operands = m.operands(op).to_vec();
        let mk = |kind: Kind, args: Vec<Arg>, free: Vec<Reg>| Instr {
            kind,
            args,
            outs: outs.clone(),
            free,
            home: None,
            name: name.clone(),
            loc: loc.clone(),
        };
        let simple = |this: &mut Self, kind: Kind| -> Instr {
            let (args, moved) = this.value_args(live, j, &operands);
            let free = this.frees(live, j, op, &moved);
            mk(kind, args, free)
        };
        let n = &*name;
        let kind = match n {
            dialect_prim::CONSTANT => {
                let attr = m.attr(op, "value").ok_or_else(|| self.err_unsupported(op, "`prim.Constant` without a value".into()))?;
                let Some(&res) = m.results(op).first() else { return Ok(None) };
                let v = attr_value(attr, Some(m.value_type(res)))
                    .map_err(|e| self.err_unsupported(op, format!("`prim.Constant`: {e}")))?;
                self.consts.insert(res, v);
                return Ok(None);
            }
            dialect_prim::LIST_CONSTRUCT => {
                let ty = m.results(op).first().map(|&r| m.value_type(r).clone());
                Kind::ListConstruct(list_kind(ty.as_ref()))
            }
            dialect_prim::LIST_UNPACK => Kind::ListUnpack,
            dialect_prim::TUPLE_CONSTRUCT => Kind::TupleConstruct,
            dialect_prim::TUPLE_UNPACK => Kind::TupleUnpack,
            dialect_prim::TUPLE_INDEX => {
                let i = m.attr(op, "index").and_then(|a| a.as_int()).filter(|&i| i >= 0);
                Kind::TupleIndex(i.ok_or_else(|| self.err_unsupported(op, "`prim.TupleIndex` without an index".into()))? as usize)
            }
            dialect_prim::UNINITIALIZED => Kind::Uninitialized,
            dialect_prim::RAISE_EXCEPTION => Kind::Raise,
            dialect_prim::IF => {
                let regions = m.regions(op).to_vec();
                if regions.len() != 2 {
                    return Err(self.err_unsupported(op, "`prim.If` without two regions".into()));
                }
                let then_block = self.region_block(op, regions[0])?;
                let else_block = self.region_block(op, regions[1])?;
                Kind::If { then_block, else_block }
            }
            dialect_prim::LOOP => {
                let r = *m.regions(op).first().ok_or_else(|| self.err_unsupported(op, "`prim.Loop` without a body".into()))?;
                Kind::Loop { body: self.region_block(op, r)? }
            }
            dialect_prim::FUSION_GROUP | super::partition::KERNEL => {
                let r = *m.regions(op).first().ok_or_else(|| self.err_unsupported(op, format!("`{n}` without a body")))?;
                let body = self.region_block(op, r)?;
                let slot = self.slots;
                self.slots += 1;
                let kernel = if n == super::partition::KERNEL {
                    // A fused kernel defined inline: its native implementation when the runtime
                    // has one for its name and attributes, its region interpreted otherwise (and
                    // for any call the implementation declines), as a fusion group's.
                    let kname = m.attr(op, dialect_backend::kernels::ATTR).and_then(|a| a.as_str()).unwrap_or("");
                    use super::fused_conv::{CONV_CAT_KERNEL, CONV_KERNEL, CONV_POOL_KERNEL};
                    if [prepack::LINEAR_KERNEL, CONV_KERNEL, CONV_CAT_KERNEL, CONV_POOL_KERNEL].contains(&kname) {
                        // Its weight is packed now, from the operand's compile-time value.
                        let consts: Vec<Option<IValue>> = operands.iter().map(|v| self.consts.get(v).cloned()).collect();
                        match kname {
                            prepack::LINEAR_KERNEL => prepack::linear_kernel(m, op, &consts).ok(),
                            CONV_KERNEL => super::fused_conv::conv_kernel(m, op, &consts).ok(),
                            CONV_CAT_KERNEL => super::fused_conv::conv_cat_kernel(m, op, &consts).ok(),
                            _ => super::fused_conv::conv_pool_kernel(m, op, &consts).ok(),
                        }
                    } else {
                        crate::kernels::attention::native_kernel(kname, m, op).ok()
                    }
                } else {
                    self.fusion_kernel(op)
                };
                let instr = simple(self, Kind::Fusion { body, kernel, slot });
                if self.hoist(op, &instr) {
                    return Ok(None);
                }
                return Ok(Some(instr));
            }
            _ => {
                if let Some(s) = sym_op(n) {
                    Kind::Sym(s)
                } else {
                    return self.kernel(op, j, live, name.clone(), loc.clone(), outs.clone());
                }
            }
        };
        Ok(Some(simple(self, kind)))
    }

    /// Offers a fusion group to the fusion compiler and records the decision.
    fn fusion_kernel(&mut self, op: OpId) -> Option<Arc<dyn FusionKernel>> {
        let compiler = self.opts.fusion?;
        let m = self.m;
        let ops = m
            .regions(op)
            .iter()
            .flat_map(|&r| m.region_blocks(r).to_vec())
            .flat_map(|b| m.block_ops(b))
            .filter(|&o| !matches!(m.op_name(o), dialect_prim::CONSTANT | dialect_prim::RETURN))
            .count();
        let (kernel, declined) = match compiler.compile_group(m, op) {
            Ok(k) => (Some(k), None),
            Err(reason) => (None, Some(reason)),
        };
        self.fusion.push(FusionDecision { loc: loc_string(m.loc(op)), ops, declined });
        kernel
    }

    fn region_block(&mut self, op: OpId, r: ir::RegionId) -> Result<Block, ExecError> {
        let blocks = self.m.region_blocks(r).to_vec();
        match blocks.as_slice() {
            [b] => self.block(*b, false),
            _ => Err(self.err_unsupported(op, format!("`{}` with a region of {} blocks", self.m.op_name(op), blocks.len()))),
        }
    }

    fn kernel(
        &mut self,
        op: OpId,
        j: usize,
        live: &Liveness,
        name: Arc<str>,
        loc: ir::Location,
        outs: Vec<Reg>,
    ) -> Result<Option<Instr>, ExecError> {
        let m = self.m;
        let def = self.ctx.op_def(&name);
        let schema = def.and_then(|d| d.schema.clone());
        let mut kname = kernel_name(&name);
        let mut outs = outs;
        if let Some(values_only) = values_only_kernel(kname).filter(|k| self.registry.contains(k)) {
            // Results nothing reads are not computed: the kernel of the op without them runs.
            if m.results(op).iter().skip(1).all(|&r| !m.has_uses(r)) {
                kname = values_only;
                outs.truncate(1);
            }
        }
        let Some(f) = self.registry.get(&kname) else {
            if schema.is_some() || ir::dialect_namespace(kname) == dialect_aten::DIALECT {
                self.missing.push(MissingKernel { op: name.to_string(), loc: loc_string(&loc) });
                // Keep compiling so every missing kernel is reported at once.
                return Ok(Some(Instr {
                    kind: Kind::Uninitialized,
                    args: Vec::new(),
                    outs,
                    free: Vec::new(),
                    home: None,
                    name,
                    loc,
                }));
            }
            return Err(ExecError::Unsupported { what: format!("op `{name}`"), loc: loc_string(&loc) });
        };
        if !m.regions(op).is_empty() {
            return Err(self.err_unsupported(op, format!("`{name}` with regions")));
        }
        let operands = m.operands(op).to_vec();
        // (position in the argument list, operand value) of register arguments.
        let mut args: Vec<Arg> = Vec::new();
        let mut reg_vals: Vec<(usize, ValueId)> = Vec::new();
        match &schema {
            Some(schema) => {
                let srcs = bind_args(schema, m, op).map_err(|e| ExecError::Bind {
                    op: name.to_string(),
                    loc: loc_string(&loc),
                    message: e.to_string(),
                })?;
                for (k, src) in srcs.into_iter().enumerate() {
                    match src {
                        ArgSource::Operand(i) => {
                            let Some(&v) = operands.get(i) else {
                                return Err(ExecError::Bind {
                                    op: name.to_string(),
                                    loc: loc_string(&loc),
                                    message: format!("operand {i} is missing"),
                                });
                            };
                            reg_vals.push((args.len(), v));
                            args.push(Arg::Const(IValue::None));
                        }
                        ArgSource::Const(a) => {
                            let ty = &schema.args[k].ty;
                            let v = attr_for_schema(&a, ty).map_err(|e| ExecError::Unsupported {
                                what: format!("argument '{}' of `{name}`: {e}", schema.args[k].name),
                                loc: loc_string(&loc),
                            })?;
                            args.push(Arg::Const(v));
                        }
                    }
                }
            }
            None => {
                for &v in &operands {
                    reg_vals.push((args.len(), v));
                    args.push(Arg::Const(IValue::None));
                }
            }
        }
        // Constants and frozen values go straight into the argument list.
        let mut live_vals = Vec::new();
        for &(pos, v) in &reg_vals {
            match self.consts.get(&v) {
                Some(c) => args[pos] = Arg::Const(c.clone()),
                None => live_vals.push((pos, v)),
            }
        }
        let vals: Vec<ValueId> = live_vals.iter().map(|&(_, v)| v).collect();
        let (reg_args, moved) = self.value_args(live, j, &vals);
        for ((pos, _), a) in live_vals.iter().zip(reg_args) {
            args[*pos] = a;
        }
        let free = self.frees(live, j, op, &moved);
        let slot = self.slots;
        self.slots += 1;
        // A product with a prepacked operand runs through its out-variant whether or not
        // there is a memory plan, so planned and unplanned runs compute the same numbers.
        let variant = out::lookup(&kname);
        let input = operands.first().and_then(|&v| m.value_type(v).as_tensor()?.static_dims());
        let packed = variant.and_then(|o| prepack::prepack(o, &args, input.as_deref()));
        let out = if self.opts.out_variants || packed.is_some() { variant } else { None };
        // Complex operands and results are looked for on each call only where the static types
        // leave them possible: a complex or unknown tensor dtype, or a complex dtype constant.
        let complex = operands.iter().chain(m.results(op)).any(|&v| crate::kernels::complex::may_be_complex(m.value_type(v)))
            || args.iter().any(|a| matches!(a, Arg::Const(c) if crate::kernels::complex::first_complex(std::slice::from_ref(c)).is_some()));
        let instr = Instr { kind: Kind::Kernel { f, slot, out, packed, complex }, args, outs, free, home: None, name, loc };
        if live_vals.is_empty() && self.hoist(op, &instr) {
            return Ok(None);
        }
        Ok(Some(instr))
    }

    /// Hoisting: an instruction whose operands are all known at compile time (constants,
    /// frozen weights, values hoisted before it) runs here, once, and its results become
    /// constants of the function, so no instruction runs for it on any call. It runs through
    /// the path a call would take (out-variant, prepacked operand, fusion kernel), so the
    /// constant has the bits a call would compute. Only deterministic ops without side effects
    /// are hoisted ([`Lin::hoistable`]), only when no op may write a constant operand or a
    /// result (through any alias of it) and no result, or alias of one, is returned or yielded
    /// (a caller could write into a returned tensor), and only while results stay small
    /// unless they share an operand's storage. A transposed 2-d float view (`permute`/`t` of a
    /// weight, the `B` operand of `mm`/`addmm`) is stored as a contiguous copy: the matrix
    /// product then streams rows instead of gathering a column per element when packing.
    /// An instruction that fails here is kept: it reports its error when it runs. Returns
    /// whether the op was hoisted.
    fn hoist(&mut self, op: OpId, ins: &Instr) -> bool {
        /// Elements a hoisted result that does not share an operand's storage may have.
        const MAX_HOISTED: usize = 1 << 20;
        let m = self.m;
        let results = m.results(op);
        if results.is_empty() || !self.hoistable(op) {
            return false;
        }
        let operands = m.operands(op);
        if !operands.iter().all(|v| self.consts.contains_key(v)) {
            return false;
        }
        if operands.iter().any(|&v| self.may_be_written(v)) {
            return false;
        }
        for &r in results {
            let (written, escapes) = self.alias_flow(r);
            if written || escapes {
                return false;
            }
        }
        // The registers the instruction reads: its operands and the constants of nested blocks.
        let mut regs = Vec::new();
        if !matches!(ins.kind, Kind::Kernel { .. }) {
            instr_regs(ins, &mut regs);
            regs.sort_unstable();
            regs.dedup();
        }
        let inputs: Vec<(Reg, IValue)> = regs
            .into_iter()
            .filter_map(|r| {
                let v = self.reg_value.get(r as usize)?;
                Some((r, self.consts.get(v)?.clone()))
            })
            .collect();
        let Ok(outs) = self.scratch.eval_detached(ins, self.num_regs as usize, self.slots, &inputs) else { return false };
        if outs.len() != results.len() {
            return false;
        }
        let mut operand_storages = Vec::new();
        for v in operands {
            if let Some(IValue::Tensor(t)) = self.consts.get(v) {
                operand_storages.push(t.storage().clone());
            }
        }
        let shares = |t: &crate::tensor::Tensor| operand_storages.iter().any(|s| Arc::ptr_eq(s, t.storage()));
        let transposing = [op::PERMUTE, op::T, op::TRANSPOSE_INT].iter().any(|o| o.is(kernel_name(m.op_name(op))));
        let mut hoisted = Vec::with_capacity(outs.len());
        for v in outs {
            let v = match v {
                IValue::Tensor(t) => {
                    if transposing && t.dim() == 2 && t.dtype().is_floating() && !t.is_contiguous() && t.strides()[0] == 1 {
                        match t.contiguous() {
                            Ok(c) => IValue::Tensor(c),
                            Err(_) => return false,
                        }
                    } else if !shares(&t) && t.numel() > MAX_HOISTED {
                        return false;
                    } else {
                        IValue::Tensor(t)
                    }
                }
                IValue::TensorList(ts) if ts.iter().any(|t| !shares(t) && t.numel() > MAX_HOISTED) => return false,
                IValue::OptionalTensorList(ts) if ts.iter().flatten().any(|t| !shares(t) && t.numel() > MAX_HOISTED) => {
                    return false;
                }
                other => other,
            };
            hoisted.push(v);
        }
        for (&r, v) in results.iter().zip(hoisted) {
            self.consts.insert(r, v);
        }
        self.hoisted += 1;
        true
    }

    /// Whether `op` computes the same results on every call and does nothing else: a kernel
    /// declared pure (no written argument, not random) that does not return uninitialised
    /// memory (`empty` and its kin), or a fused op (a fusion group, a `backend.kernel`) whose
    /// body holds only such ops, lists of them and fused ops of such bodies (a `conv_cat` or
    /// `conv_pool` kernel's `conv` kernels: the walk goes through their bodies too).
    fn hoistable(&self, op: OpId) -> bool {
        let m = self.m;
        let name = m.op_name(op);
        if is_fused(name) {
            let mut ok = true;
            for &r in m.regions(op) {
                for &b in m.region_blocks(r) {
                    for o in m.block_ops(b) {
                        m.walk(o, ir::WalkOrder::PreOrder, &mut |x| {
                            let n = m.op_name(x);
                            ok &= matches!(n, dialect_prim::CONSTANT | dialect_prim::RETURN | super::partition::RETURN | dialect_prim::LIST_CONSTRUCT)
                                || is_fused(n)
                                || self.pure_kernel(n);
                        });
                    }
                }
            }
            return ok;
        }
        m.regions(op).is_empty() && self.pure_kernel(name)
    }

    fn pure_kernel(&self, name: &str) -> bool {
        let Some(def) = self.ctx.op_def(name) else { return false };
        let Some(schema) = &def.schema else { return false };
        let base = schema.name.trim_start_matches('_');
        def.has_trait(Traits::PURE) && !schema.is_mutable() && !base.starts_with("empty") && !base.starts_with("new_empty")
    }

    /// Whether some op may write the storage of `v` through `v` or a value that may alias it.
    fn may_be_written(&mut self, v: ValueId) -> bool {
        if let Some(&w) = self.written.get(&v) {
            return w;
        }
        let (w, _) = self.alias_flow(v);
        self.written.insert(v, w);
        w
    }

    /// Follows `v` through every op result that may share its storage (a result with an
    /// alias annotation in the op's schema — views, `Tensor(a)[]` lists —, a container, a
    /// fused op's result its body may pass through) and says whether any of those values
    /// may be written (an op with a written argument, an op without a schema, a control-flow
    /// op taking it, a fused op whose body writes or is not deterministic) and whether any is
    /// returned or yielded.
    fn alias_flow(&self, v: ValueId) -> (bool, bool) {
        let m = self.m;
        let (mut written, mut escapes) = (false, false);
        let mut stack = vec![v];
        let mut seen: HashSet<ValueId> = HashSet::from([v]);
        while let Some(w) = stack.pop() {
            for u in m.uses(w) {
                let name = m.op_name(u.op);
                let results = m.results(u.op);
                let follow: Vec<ValueId> = if is_terminator(name) {
                    escapes = true;
                    Vec::new()
                } else if is_fused(name) {
                    written |= !self.hoistable(u.op);
                    (0..results.len()).filter(|&k| self.group_result_may_alias(u.op, k)).map(|k| results[k]).collect()
                } else if !m.regions(u.op).is_empty() {
                    written = true;
                    Vec::new()
                } else if ir::dialect_namespace(name) == dialect_prim::DIALECT {
                    results.to_vec()
                } else {
                    match self.ctx.op_def(name).and_then(|d| d.schema.as_deref()) {
                        Some(s) if !s.is_mutable() => {
                            (0..results.len()).filter(|&k| result_may_alias(s, k)).map(|k| results[k]).collect()
                        }
                        _ => {
                            written = true;
                            Vec::new()
                        }
                    }
                };
                if written && escapes {
                    return (true, true);
                }
                for r in follow {
                    if seen.insert(r) {
                        stack.push(r);
                    }
                }
            }
        }
        (written, escapes)
    }

    /// Whether result `k` of fused op `op` may share storage with an operand: its body returns
    /// a block argument or a result its op's schema lets alias an operand.
    fn group_result_may_alias(&self, op: OpId, k: usize) -> bool {
        let m = self.m;
        let Some(&region) = m.regions(op).first() else { return true };
        let &[body] = m.region_blocks(region) else { return true };
        let Some(&ret) = m.block_ops(body).last() else { return true };
        let Some(&v) = m.operands(ret).get(k) else { return true };
        let Some(d) = m.defining_op(v) else { return true };
        let Some(idx) = m.results(d).iter().position(|&r| r == v) else { return true };
        match self.ctx.op_def(m.op_name(d)).and_then(|def| def.schema.as_deref()) {
            Some(s) => result_may_alias(s, idx),
            None => m.op_name(d) != dialect_prim::CONSTANT,
        }
    }
}

/// Whether result `k` of an op with schema `s` may share storage with an argument: it carries
/// an alias annotation (`-> Tensor(a)`, `-> Tensor(a)[]`) or is beyond the declared returns.
fn result_may_alias(s: &ir::schema::FunctionSchema, k: usize) -> bool {
    s.returns.get(k).is_none_or(|r| r.alias.is_some())
}

/// Kernels whose results never share storage with their operands (their results end the
/// alias chains the planner follows).
fn fresh_result(kname: &str) -> bool {
    out::lookup(kname).is_some_and(|o| !o.is_view())
        || [op::BMM, op::CONVOLUTION, op::_LOG_SOFTMAX, op::DIV_TENSOR, op::_ADAPTIVE_AVG_POOL2D].iter().any(|o| o.is(kname))
}

/// Whether `op` is a fusion group (or a `backend.kernel`) whose results never share storage with its operands. A
/// compiled kernel writes its results into storage it is given (fresh or planned); when it
/// declines a call, the results are those of the region's ops, so every value the region
/// returns must be computed there by a kernel with a fresh result (a returned block argument,
/// or an op that may return its input, keeps the group in the alias chain).
fn fresh_group_results(m: &Module, op: OpId) -> bool {
    let ret_name = match m.op_name(op) {
        dialect_prim::FUSION_GROUP => dialect_prim::RETURN,
        super::partition::KERNEL => super::partition::RETURN,
        _ => return false,
    };
    let Some(&region) = m.regions(op).first() else { return false };
    let &[body] = m.region_blocks(region) else { return false };
    let Some(&ret) = m.block_ops(body).last() else { return false };
    m.op_name(ret) == ret_name
        && m.operands(ret).iter().all(|&v| {
            m.defining_op(v).is_some_and(|d| m.parent_block(d) == Some(body) && fresh_result(kernel_name(m.op_name(d))))
        })
}

fn list_kind(ty: Option<&Type>) -> ListKind {
    let Some(PK::List(e)) = ty.map(dialect_prim::kinds::kind) else { return ListKind::Generic };
    match e.pk() {
        PK::Tensor(_) => ListKind::Tensor,
        PK::Optional(inner) if inner.is_tensor() => ListKind::OptionalTensor,
        PK::Int => ListKind::Int,
        PK::Float => ListKind::Float,
        PK::Bool => ListKind::Bool,
        _ => ListKind::Generic,
    }
}

fn sym_op(name: &str) -> Option<SymOp> {
    Some(match name {
        dialect_prim::ADD => SymOp::Add,
        dialect_prim::SUB => SymOp::Sub,
        dialect_prim::MUL => SymOp::Mul,
        dialect_prim::FLOORDIV => SymOp::FloorDiv,
        dialect_prim::MOD => SymOp::Mod,
        dialect_prim::MAX => SymOp::Max,
        dialect_prim::EQ => SymOp::Eq,
        dialect_prim::NE => SymOp::Ne,
        dialect_prim::LT => SymOp::Lt,
        dialect_prim::LE => SymOp::Le,
        dialect_prim::GT => SymOp::Gt,
        dialect_prim::GE => SymOp::Ge,
        _ => return None,
    })
}
