//! Fissioned bodies: one short loop per phase over a block of vectors, or a call of a block
//! routine (AVX-512) for the phases that have one.

use super::emit::{dtype_of_input, live_nodes, scale};
use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, Signature, StackSlot, StackSlotData, StackSlotKind, Value};
use ir::DType;

use crate::block::{self, BlockFn, CodegenOptions};
use crate::codegen::{Access, Emitter, Mode, PhaseLoop, scratch_entry};
use crate::error::JitError;
use crate::fission::{self, Plan};
use crate::group::{Binary, Graph, NodeId, NodeKind, Unary};

/// Emits a fissioned vector body (see `fission`): for `nv` (at least 1) vectors from the
/// operands' pointers on, one loop per phase, each computing its cut for every vector into a
/// scratch buffer on the stack, and a last loop computing and storing the outputs. The loops
/// count the byte offset of a vector (16 bytes); operands of narrower vectors (bools) scale it.
///
/// With `options.block_routines`, a phase whose cut has a block routine (see `block`) is a
/// call of that routine over the block instead: its argument is read from an input or an
/// earlier cut's buffer where it is one, or computed into the cut's own buffer, which the
/// routine then overwrites with the results. The arguments of consecutive such phases are
/// computed in one loop (a phase reading a cut whose call is still pending starts a new
/// group), so a block makes one pass over its inputs for all of them. Such a body first
/// prefetches every operand's next block (see `Phases::prefetch_next`).
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_phases(
    em: &mut Emitter,
    mode: Mode,
    plan: &Plan,
    nv: Value,
    accesses: &[Option<Access>],
    out_ptr: &[Option<Value>],
    es: &[i64],
    n_in: usize,
    options: CodegenOptions,
) -> Result<(), JitError> {
    let g = em.g;
    let end = em.b.ins().ishl_imm_u(nv, 4);
    // One stack slot holds every scratch buffer: the cuts' first, then the splits' (it grows
    // as `Emitter::split` adds buffers).
    let entries = plan.cuts.len() as u32;
    let scratch = em.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, entries * scratch_entry(1) as u32, 4));
    let routines: Vec<Option<RoutinePhase>> = plan
        .cuts
        .iter()
        .map(|&c| if options.block_routines && mode.lanes == 4 { routine_phase(g, c) } else { None })
        .collect();
    let ph = Phases { mode, plan, routines: &routines, accesses, scratch, end, nv };
    if routines.iter().any(Option::is_some) {
        ph.prefetch_next(em, out_ptr, es);
    }
    let mut pending: Vec<usize> = Vec::new();
    for (phase, reads) in plan.reads.iter().enumerate() {
        let routine = routines.get(phase).copied().flatten();
        if routine.is_none() || reads.iter().any(|k| pending.contains(k)) {
            ph.calls(em, &pending)?;
            pending.clear();
        }
        if routine.is_some() {
            pending.push(phase);
            continue;
        }
        let root = plan.cuts.get(phase).copied().unwrap_or(usize::MAX);
        let (mut cache, at_scratch) = ph.open(em, root, reads);
        let off = em.phase.map_or(at_scratch, |p| p.off);
        let input = |em: &mut Emitter<'_, '_>, k: usize| ph.input(em, off, k);
        if phase < plan.cuts.len() {
            let v = em.node(mode, root, &mut cache, &input)?;
            // The root's expansion may have split the phase: store in the loop it ended in.
            let at = em.phase.map_or(at_scratch, |p| p.at);
            em.b.ins().store(MemFlagsData::trusted(), v, at, scratch_entry(phase as u32));
        } else {
            let mut values = Vec::with_capacity(g.outputs.len());
            for &o in &g.outputs {
                values.push(em.node(mode, o, &mut cache, &input)?);
            }
            for (k, (&o, v)) in g.outputs.iter().zip(values).enumerate() {
                let Some(p) = out_ptr[n_in + k] else { continue };
                let a = ph.at(em, off, p, es[n_in + k] * mode.lanes as i64);
                em.store(mode, g.nodes[o].dtype, v, a);
            }
        }
        ph.close(em);
    }
    em.phase = None;
    Ok(())
}

/// A phase of a fissioned body computed by a block routine (see `block`): the routine and the
/// node whose values it maps; for a capped `exp` (`clamp(exp(x), max=c)`, see `fission`) the
/// `exp` node too, whose values the cut's buffer then holds (its readers apply the clamp).
#[derive(Clone, Copy)]
pub(super) struct RoutinePhase {
    f: BlockFn,
    arg: NodeId,
    exp: Option<NodeId>,
}

/// The block routine computing cut `root`, if it has one on this host.
pub(super) fn routine_phase(g: &Graph, root: NodeId) -> Option<RoutinePhase> {
    let f32_node = |n: NodeId| g.nodes[n].dtype == DType::F32;
    if !f32_node(root) {
        return None;
    }
    match g.nodes[root].kind {
        NodeKind::Unary(u, a) if f32_node(a) => block::routine(u).map(|f| RoutinePhase { f, arg: a, exp: None }),
        NodeKind::Binary(Binary::ClampHi, e, _) => match g.nodes[e].kind {
            NodeKind::Unary(Unary::Exp, x) if f32_node(e) && f32_node(x) => {
                block::routine(Unary::Exp).map(|f| RoutinePhase { f, arg: x, exp: Some(e) })
            }
            _ => None,
        },
        _ => None,
    }
}

/// What the loops and calls of one fissioned body share.
pub(super) struct Phases<'p> {
    mode: Mode,
    plan: &'p Plan,
    routines: &'p [Option<RoutinePhase>],
    accesses: &'p [Option<Access>],
    scratch: StackSlot,
    /// The block's size in bytes of vectors (16 per vector), and in vectors.
    end: Value,
    nv: Value,
}

impl Phases<'_> {
    /// Starts a loop over the block's vectors computing `root` (`usize::MAX`: no cut, which
    /// no expansion may split), with the cuts `reads` loaded from scratch into the returned
    /// cache; also returns the current vector's address in the scratch slot.
    pub(super) fn open(&self, em: &mut Emitter, root: NodeId, reads: &[usize]) -> (HashMap<NodeId, Value>, Value) {
        let ptr = em.ptr;
        let head = em.b.create_block();
        em.b.append_block_param(head, ptr);
        let zero = em.b.ins().iconst(ptr, 0);
        em.b.ins().jump(head, &[zero.into()]);
        em.b.switch_to_block(head);
        let off = em.b.block_params(head)[0];
        let base = em.b.ins().stack_addr(ptr, self.scratch, 0);
        let at = em.b.ins().iadd(base, off);
        // Buffers added by earlier splits stay allocated (the slot only grows).
        let entries = em.b.func.sized_stack_slots[self.scratch].size / scratch_entry(1) as u32;
        em.phase = Some(PhaseLoop { root, head, off, end: self.end, scratch: self.scratch, entries, at, split: false });
        let mut cache = HashMap::new();
        for &k in reads {
            let c = self.plan.cuts[k];
            let v = em.b.ins().load(self.mode.ty(em.g.nodes[c].dtype), MemFlagsData::trusted(), at, scratch_entry(k as u32));
            // A capped `exp` computed by a routine left `exp`'s values: the clamp is applied here.
            let node = self.routines[k].and_then(|r| r.exp).unwrap_or(c);
            cache.insert(node, v);
        }
        (cache, at)
    }

    /// Ends the loop [`Phases::open`] started (or the last one its root's expansion split
    /// it into).
    pub(super) fn close(&self, em: &mut Emitter) {
        let Some(p) = em.phase else { return };
        let next = em.b.ins().iadd_imm_s(p.off, 16);
        let more = em.b.ins().icmp(IntCC::UnsignedLessThan, next, p.end);
        let after = em.b.create_block();
        em.b.ins().brif(more, p.head, &[next.into()], after, &[]);
        em.b.switch_to_block(after);
    }

    /// The address of the vector at byte offset `off` (of 16-byte vectors) in an operand of
    /// `bytes` bytes per vector starting at `p`.
    pub(super) fn at(&self, em: &mut Emitter, off: Value, p: Value, bytes: i64) -> Value {
        let o = if bytes == 16 {
            off
        } else if bytes > 0 && (bytes as u64).is_power_of_two() && bytes < 16 {
            em.b.ins().ushr_imm_u(off, (16 / bytes).trailing_zeros() as i64)
        } else {
            let v = em.b.ins().ushr_imm_u(off, 4);
            scale(em.b, v, bytes)
        };
        em.b.ins().iadd(p, o)
    }

    /// Input `k` at the vector of byte offset `off`.
    pub(super) fn input(&self, em: &mut Emitter, off: Value, k: usize) -> Value {
        let d = dtype_of_input(em.g, k);
        match self.accesses.get(k).copied().flatten() {
            Some(Access::Invariant(v)) => v,
            Some(Access::Strided { row_ptr, stride_bytes }) => {
                let a = self.at(em, off, row_ptr, stride_bytes * self.mode.lanes as i64);
                em.load(self.mode, d, a)
            }
            // Unused inputs are never reached from a live node.
            None => em.iconst(self.mode.ty(DType::I32), 0),
        }
    }

    /// Prefetches the next block of every operand read or written through a pointer (its
    /// `nv` vectors after this block's). The phases interrupt an operand's stream for most of
    /// a block's time (the routines read only scratch), so the hardware prefetcher, which
    /// runs only a little ahead of the accesses, leaves the next block's loads to miss.
    pub(super) fn prefetch_next(&self, em: &mut Emitter, out_ptr: &[Option<Value>], es: &[i64]) {
        let ptr = em.ptr;
        let n_in = self.accesses.len();
        let mut targets = Vec::new();
        for a in self.accesses.iter().flatten() {
            if let Access::Strided { row_ptr, stride_bytes } = *a {
                targets.push((row_ptr, stride_bytes, false));
            }
        }
        for (k, p) in out_ptr.iter().enumerate().skip(n_in) {
            if let Some(p) = *p {
                targets.push((p, es[k], true));
            }
        }
        let mut sig = Signature::new(em.b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(ptr); 2]);
        let sref = em.b.import_signature(sig);
        for (p, elem_bytes, write) in targets {
            let Some(f) = block::prefetch(write) else { return };
            let bytes = em.b.ins().imul_imm_s(self.nv, elem_bytes * self.mode.lanes as i64);
            let callee = em.b.ins().iconst(ptr, f as usize as i64);
            em.b.ins().call_indirect(sref, callee, &[p, bytes]);
        }
    }

    /// Emits the pending routine phases: one loop computing the arguments that are neither an
    /// input's block nor an earlier cut's buffer into the phases' own buffers, then one call
    /// per phase. The phases read only cuts whose values are complete (see `emit_phases`).
    pub(super) fn calls(&self, em: &mut Emitter, pending: &[usize]) -> Result<(), JitError> {
        if pending.is_empty() {
            return Ok(());
        }
        let ptr = em.ptr;
        let g = em.g;
        let buffer = |em: &mut Emitter, k: usize| em.b.ins().stack_addr(ptr, self.scratch, scratch_entry(k as u32));
        let phases: Vec<(usize, RoutinePhase)> = pending.iter().filter_map(|&p| self.routines[p].map(|r| (p, r))).collect();
        let mut src: Vec<Option<Value>> = Vec::with_capacity(phases.len());
        let mut computed = Vec::new();
        for &(p, r) in &phases {
            let direct = match g.nodes[r.arg].kind {
                NodeKind::Input(k) => match self.accesses.get(k).copied().flatten() {
                    Some(Access::Strided { row_ptr, stride_bytes: 4 }) => Some(row_ptr),
                    _ => None,
                },
                _ => match self.plan.cuts.iter().position(|&c| c == r.arg) {
                    // A buffer holding a capped `exp`'s unclamped values is not the argument.
                    Some(k) if self.routines[k].is_none_or(|r| r.exp.is_none()) => Some(buffer(em, k)),
                    _ => None,
                },
            };
            if direct.is_none() {
                computed.push((p, r.arg));
            }
            src.push(direct);
        }
        if !computed.is_empty() {
            let mut reads: Vec<usize> = computed.iter().flat_map(|&(p, _)| self.plan.reads[p].iter().copied()).collect();
            reads.sort_unstable();
            reads.dedup();
            let (mut cache, at) = self.open(em, usize::MAX, &reads);
            let off = em.phase.map_or(at, |p| p.off);
            let input = |em: &mut Emitter<'_, '_>, k: usize| self.input(em, off, k);
            for &(p, arg) in &computed {
                let v = em.node(self.mode, arg, &mut cache, &input)?;
                em.b.ins().store(MemFlagsData::trusted(), v, at, scratch_entry(p as u32));
            }
            self.close(em);
            em.phase = None;
        }
        let n = em.b.ins().ishl_imm_u(self.nv, self.mode.lanes.trailing_zeros() as i64);
        let mut sig = Signature::new(em.b.func.signature.call_conv);
        sig.params.extend([AbiParam::new(ptr); 3]);
        let sref = em.b.import_signature(sig);
        for (&(p, r), s) in phases.iter().zip(src) {
            // In bounds: every buffer holds `BLOCK_VECTORS` vectors and a block has at most
            // that many (`nv`), so `n` values fit in the cut's buffer and in an earlier cut's;
            // an input's block is `nv` whole vectors of the row from its pointer on (or the
            // padded tail's copy of one vector), inside the storage the guard checked.
            let dst = buffer(em, p);
            let src = s.unwrap_or(dst);
            let callee = em.b.ins().iconst(ptr, r.f as usize as i64);
            em.b.ins().call_indirect(sref, callee, &[src, dst, n]);
        }
        Ok(())
    }
}

/// The fission plan of a kernel of `numel` elements (see `fission`; `multi_use` as
/// `codegen::multi_use`), and whether each of its cuts calls a block routine; `None` when the
/// body runs unfissioned.
pub(super) fn fission_plan(g: &Graph, multi_use: &[bool], numel: usize, lanes: u8, options: CodegenOptions) -> Option<(Plan, bool)> {
    if lanes <= 1 || !heavy(g) {
        return None;
    }
    let plan = fission::plan(g, &live_nodes(g), multi_use)?;
    // Routines serve 4-lane (f32) bodies only; see `emit_phases`.
    let routines = options.block_routines && lanes == 4 && plan.cuts.iter().all(|&c| routine_phase(g, c).is_some());
    let min = if routines { fission::MIN_ELEMENTS_ROUTINES } else { fission::MIN_ELEMENTS };
    (numel >= min).then_some((plan, routines))
}

/// Whether a kernel's body is large enough that one padded vector body beats a vector body and
/// a scalar tail in compile time: it calls an inline transcendental function or has many ops.
pub(super) fn heavy(g: &Graph) -> bool {
    g.nodes.len() > 16 || g.nodes.iter().any(|n| matches!(n.kind, NodeKind::Unary(u, _) if fission::transcendental(u)))
}
