//! Cranelift code generation: one loop nest over the coalesced iteration space, a 128-bit SIMD
//! inner loop with a scalar tail where the layout allows it, and the elementwise operations.
//!
//! The generated function has the signature
//! `extern "C" fn(ptrs: *const *mut u8, start: i64, end: i64, err: *mut u32)`: `ptrs` holds the
//! base address (offset included) of every input, then every output; the kernel computes the
//! elements with linear (row-major) indices `start..end` of the iteration space, so callers can
//! split the space into chunks (at multiples of 64 elements: a kernel whose rows hold whole
//! vectors has no code for partial ones); `err` receives a non-zero code if an integer
//! division by zero occurred.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::cursor::{Cursor, FuncCursor};
use cranelift_codegen::ir::{AbiParam, Block, Inst, InstBuilder, MemFlagsData, Signature, StackSlot, Type, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use ir::DType;

use crate::error::JitError;
use crate::group::{Binary, Cmp, Const, Graph, NodeId, NodeKind, Unary};
use crate::shims;

mod ops;

/// The iteration space after merging dimensions that are contiguous for every operand.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Layout {
    /// Sizes of the coalesced dims, outermost first (at least one dim).
    pub shape: Vec<usize>,
    /// Per operand (inputs, then outputs): strides in elements for each coalesced dim.
    pub strides: Vec<Vec<usize>>,
    pub numel: usize,
}

impl Layout {
    /// Builds the layout of an iteration space `shape` given the operands' strides over it
    /// (already expanded to `shape`, zero for broadcast dims).
    pub fn new(shape: &[usize], strides: Vec<Vec<usize>>) -> Layout {
        let numel = shape.iter().product();
        // Drop size-1 dims, then merge dim d into d+1 when every operand is contiguous across them.
        let keep: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        let mut sh: Vec<usize> = keep.iter().map(|&d| shape[d]).collect();
        let mut st: Vec<Vec<usize>> = strides.iter().map(|s| keep.iter().map(|&d| s[d]).collect()).collect();
        let mut d = sh.len();
        while d >= 2 {
            let (o, i) = (d - 2, d - 1);
            if st.iter().all(|s| s[o] == s[i] * sh[i]) {
                sh[o] *= sh[i];
                sh.remove(i);
                for s in &mut st {
                    s.remove(o);
                }
            }
            d -= 1;
        }
        if sh.is_empty() {
            sh.push(1);
            for s in &mut st {
                s.push(0);
            }
        }
        Layout { shape: sh, strides: st, numel }
    }

    pub fn inner(&self) -> usize {
        *self.shape.last().unwrap_or(&1)
    }
}

/// The lane count of the vector loop: 4 for 32-bit kernels, 2 for 64-bit ones, 1 for none.
pub(crate) fn vector_lanes(g: &Graph, live: &[bool], layout: &Layout, n_inputs: usize, used: &[bool]) -> u8 {
    let mut width = 0usize;
    for (i, n) in g.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        if n.dtype != DType::Bool {
            let w = n.dtype.size_bytes();
            if width != 0 && width != w {
                return 1;
            }
            width = w;
        }
        let scalar_only = match &n.kind {
            NodeKind::Unary(u, _) => match u {
                Unary::Lib(_) => true,
                Unary::PowF(e) => !matches!(*e, 2.0 | 3.0 | 0.5 | -0.5 | -1.0 | -2.0),
                Unary::Exp | Unary::Log | Unary::Tanh | Unary::Sigmoid | Unary::Erf | Unary::Sin | Unary::Cos
                | Unary::GeluErf | Unary::GeluTanh | Unary::Silu => n.dtype == DType::F64,
                _ => false,
            },
            NodeKind::Binary(b, _, _) => {
                matches!(b, Binary::DivTrunc | Binary::DivFloor | Binary::Rem | Binary::Fmod | Binary::Pow)
            }
            _ => false,
        };
        if scalar_only {
            return 1;
        }
    }
    // Every operand must be unit-stride or broadcast in the inner dim.
    let inner = layout.strides.len();
    for (k, s) in layout.strides.iter().enumerate() {
        let is_used = if k < n_inputs { used[k] } else { true };
        let last = *s.last().unwrap_or(&0);
        if is_used && last > 1 {
            return 1;
        }
    }
    let _ = inner;
    match width {
        8 => 2,
        _ => 4,
    }
}

/// Emission state for one function.
pub(crate) struct Emitter<'a, 'b> {
    pub b: &'a mut FunctionBuilder<'b>,
    pub g: &'a Graph,
    pub ptr: Type,
    pub err: Variable,
    /// The target has fused multiply-add: polynomial evaluation in the inline transcendental
    /// functions and `NodeKind::MulAdd` (value-1 `addcmul`) use it; the other elementwise ops
    /// never do, so they round like the interpreter.
    pub fma: bool,
    /// Vector constants of the kernel, read from memory (see [`ConstPool`]); `None` emits them
    /// as constants hoisted out of the loops (see [`Hoist`]).
    pub pool: Option<ConstPool>,
    /// Per graph node: whether more than one node (or output) uses it.
    pub multi_use: Vec<bool>,
    /// Where constants outside the pool are materialized (see [`Hoist`]).
    pub hoist: Hoist,
    /// The loop of the phase being emitted in a fissioned body (see `fission`); `None` in
    /// other bodies.
    pub phase: Option<PhaseLoop>,
    /// Values an inline function needs after a [`Emitter::split`] below it (see
    /// [`Emitter::carried`]).
    pub carry: Vec<Value>,
}

/// The loop over a block's vectors of one phase of a fissioned body.
#[derive(Clone, Copy)]
pub(crate) struct PhaseLoop {
    /// The node the phase computes; only its own expansion may split the phase.
    pub root: NodeId,
    /// The loop's header, whose parameter is `off`.
    pub head: Block,
    /// Byte offset of the current vector (16 bytes per vector) in the block.
    pub off: Value,
    /// The block's size in bytes of vectors (`16 × vectors`).
    pub end: Value,
    /// The body's scratch buffers: one stack slot of `entries` buffers of
    /// `BLOCK_VECTORS` vectors each, and the address of the current vector in the first.
    pub scratch: StackSlot,
    pub entries: u32,
    pub at: Value,
    /// Whether the expansion being emitted may split the phase.
    pub split: bool,
}

/// Constants materialized once, before the kernel's loops, and shared by every use.
///
/// Cranelift's mid-end optimizer (its e-graph pass: GVN, loop-invariant code motion,
/// algebraic rewrites) does not run on kernels (`opt_level=none`, a third less compile time):
/// the emitter places code where it should run instead. What the optimizer did for kernels
/// was hoisting and merging constants, so scalar and vector constants are created here, ahead
/// of the entry block's terminator, once per type and bit pattern; address arithmetic is
/// emitted already simplified (shifts for element sizes, no offset for pointers already at
/// the element, divisions by constants as multiplications, see `udiv_const` in `kernel.rs`).
pub(crate) struct Hoist {
    /// The entry block's terminator, before which constants are inserted.
    before: Inst,
    consts: HashMap<(Type, u64), Value>,
}

impl Hoist {
    /// Constants inserted before `before`, an instruction that dominates every use.
    pub fn before(before: Inst) -> Hoist {
        Hoist { before, consts: HashMap::new() }
    }
}

/// Per node of `g`: whether it has more than one user (an output counts as a user).
pub(crate) fn multi_use(g: &Graph) -> Vec<bool> {
    let mut uses = vec![0u32; g.nodes.len()];
    for n in &g.nodes {
        n.kind.for_each_operand(|a| uses[a] += 1);
    }
    for &o in &g.outputs {
        uses[o] += 1;
    }
    uses.into_iter().map(|u| u > 1).collect()
}

/// The byte offset of scratch buffer `k` of a fissioned body (see [`PhaseLoop`]).
pub(crate) fn scratch_entry(k: u32) -> i32 {
    (k as i64 * crate::fission::BLOCK_VECTORS * 16) as i32
}

/// A kernel's vector constants as a table in memory, one 16-byte entry per use.
///
/// A constant hoisted out of the loop (see [`Hoist`]) takes a register for the whole loop; a
/// body with more constants than the 16 XMM registers (a few inline transcendental functions)
/// then spills them and reloads them from the stack at every use (and stores them again on the
/// loop's back edge). A read-only load from this table is placed right before its use
/// and its value lives only that long, so the body keeps no register per constant and has no
/// stack traffic. Such a load also folds into its user as a memory operand when Cranelift's
/// use analysis counts it as used once, which it does only if no value downstream of it is
/// used several times (near a body's outputs, in practice); elsewhere it costs one load, as
/// the reload did. Every use gets its own entry: loads of one address would be merged into one
/// value with several uses, which never folds.
pub(crate) struct ConstPool {
    /// The table's address (a parameter of the loop body's block).
    pub base: Value,
    pub data: Vec<PoolEntry>,
}

/// One 16-byte, 16-aligned entry of a [`ConstPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
pub(crate) struct PoolEntry(pub [u8; 16]);

/// How values of one loop body are represented.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Mode {
    pub lanes: u8,
}

/// How an input is read in a loop body.
#[derive(Clone, Copy)]
pub(crate) enum Access {
    /// Element `j` of the row is at `row_ptr + j * stride_bytes`.
    Strided { row_ptr: Value, stride_bytes: i64 },
    /// The value is the same for every element of the row (already loaded).
    Invariant(Value),
}

pub(crate) fn lane_type(d: DType) -> Type {
    match d {
        DType::F32 => types::F32,
        DType::F64 => types::F64,
        DType::I32 => types::I32,
        DType::I64 => types::I64,
        _ => types::I8,
    }
}

impl Mode {
    /// The cranelift type of a value of dtype `d` (bools are masks in vectors, 0/1 `i8` scalars).
    pub fn ty(self, d: DType) -> Type {
        match (self.lanes, d) {
            (1, d) => lane_type(d),
            (4, DType::F32) => types::F32X4,
            (4, DType::I32 | DType::Bool) => types::I32X4,
            (2, DType::F64) => types::F64X2,
            (2, DType::I64 | DType::Bool) => types::I64X2,
            (4, _) => types::I32X4,
            _ => types::I64X2,
        }
    }

    pub fn vector(self) -> bool {
        self.lanes > 1
    }
}

fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl Emitter<'_, '_> {
    // ----- constants and helpers -----

    pub fn fconst(&mut self, t: Type, v: f64) -> Value {
        let lane = t.lane_type();
        if t.is_vector() {
            let bits = if lane == types::F32 { (v as f32).to_bits() as u64 } else { v.to_bits() };
            if let Some(c) = self.pool_load(t, bits) {
                return c;
            }
        }
        let bits = if lane == types::F32 { (v as f32).to_bits() as u64 } else { v.to_bits() };
        self.hoisted(t, bits, |pos| {
            let s = if lane == types::F32 { pos.ins().f32const(v as f32) } else { pos.ins().f64const(v) };
            if t.is_vector() { pos.ins().splat(t, s) } else { s }
        })
    }

    /// The constant of type `t` and bits `bits`, built by `make` at the hoisting point the
    /// first time it is asked for (see [`Hoist`]).
    fn hoisted(&mut self, t: Type, bits: u64, make: impl FnOnce(&mut FuncCursor) -> Value) -> Value {
        if let Some(&v) = self.hoist.consts.get(&(t, bits)) {
            return v;
        }
        let mut pos = FuncCursor::new(self.b.func).at_inst(self.hoist.before);
        let v = make(&mut pos);
        self.hoist.consts.insert((t, bits), v);
        v
    }

    pub fn iconst(&mut self, t: Type, v: i64) -> Value {
        let lane = t.lane_type();
        // Immediates of narrow types are given zero-extended.
        let v = if lane.bits() < 64 { v & ((1i64 << lane.bits()) - 1) } else { v };
        if t.is_vector()
            && let Some(c) = self.pool_load(t, v as u64)
        {
            return c;
        }
        self.hoisted(t, v as u64, |pos| {
            let s = pos.ins().iconst(lane, v);
            if t.is_vector() { pos.ins().splat(t, s) } else { s }
        })
    }

    /// A vector of type `t` with every lane `bits` (the lane's low bits), loaded from a new
    /// entry of the constant pool; `None` without a pool.
    fn pool_load(&mut self, t: Type, bits: u64) -> Option<Value> {
        let lane_bytes = t.lane_type().bytes() as usize;
        let mut entry = [0u8; 16];
        for chunk in entry.chunks_mut(lane_bytes) {
            chunk.copy_from_slice(&bits.to_le_bytes()[..lane_bytes]);
        }
        let pool = self.pool.as_mut()?;
        let off = i32::try_from(pool.data.len() * 16).ok()?;
        pool.data.push(PoolEntry(entry));
        let base = pool.base;
        let flags = MemFlagsData::new().with_notrap().with_aligned().with_readonly().with_can_move();
        Some(self.b.ins().load(t, flags, base, off))
    }

    /// `if m { a } else { b }` for a mask `m` of the matching kind.
    pub fn sel(&mut self, m: Value, a: Value, b: Value) -> Value {
        let t = self.b.func.dfg.value_type(a);
        if t.is_vector() {
            let mt = self.b.func.dfg.value_type(m);
            let m = if mt != t { self.b.ins().bitcast(t, MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little), m) } else { m };
            self.b.ins().bitselect(m, a, b)
        } else {
            self.b.ins().select(m, a, b)
        }
    }

    pub fn bitcast(&mut self, t: Type, v: Value) -> Value {
        self.b.ins().bitcast(t, MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little), v)
    }

    fn const_value(&mut self, mode: Mode, d: DType, c: Const) -> Value {
        let t = mode.ty(d);
        match (d, c) {
            (DType::Bool, c) => {
                let on = match c {
                    Const::Bool(b) => b,
                    Const::Int(i) => i != 0,
                    Const::Float(f) => f != 0.0,
                };
                if mode.vector() { self.iconst(t, if on { -1 } else { 0 }) } else { self.iconst(t, on as i64) }
            }
            (d, Const::Float(f)) if d.is_floating() => self.fconst(t, f),
            (d, Const::Int(i)) if d.is_floating() => self.fconst(t, i as f64),
            (d, Const::Bool(b)) if d.is_floating() => self.fconst(t, b as i64 as f64),
            (_, Const::Int(i)) => self.iconst(t, i),
            (_, Const::Bool(b)) => self.iconst(t, b as i64),
            (_, Const::Float(f)) => self.iconst(t, f as i64),
        }
    }

    /// Calls `f` (an `extern "C"` function of the given scalar parameter types) by address.
    fn call(&mut self, addr: usize, params: &[Type], ret: Type, args: &[Value]) -> Value {
        let mut sig = Signature::new(self.b.func.signature.call_conv);
        for &p in params {
            sig.params.push(AbiParam::new(p));
        }
        sig.returns.push(AbiParam::new(ret));
        let sref = self.b.import_signature(sig);
        let callee = self.b.ins().iconst(self.ptr, addr as i64);
        let inst = self.b.ins().call_indirect(sref, callee, args);
        self.b.inst_results(inst)[0]
    }

    /// Calls a scalar function lane by lane on a vector (or once on a scalar).
    pub fn call_lanes(&mut self, addr: usize, args: &[Value]) -> Value {
        let t = self.b.func.dfg.value_type(args[0]);
        let lane = t.lane_type();
        if !t.is_vector() {
            let params = vec![lane; args.len()];
            return self.call(addr, &params, lane, args);
        }
        let mut out = args[0];
        for l in 0..t.lane_count() as u8 {
            let xs: Vec<Value> = args.iter().map(|&a| self.b.ins().extractlane(a, l)).collect();
            let params = vec![lane; xs.len()];
            let r = self.call(addr, &params, lane, &xs);
            out = self.b.ins().insertlane(out, r, l);
        }
        out
    }

    // ----- phases of fissioned bodies -----

    /// Ends the current phase loop of a fissioned body and starts the next one, passing
    /// `vals` and the carried values to it through scratch buffers on the stack (replaced by
    /// the new loop's loads of them). A no-op outside the expansion of a phase's root (see
    /// [`PhaseLoop`]). Inline functions call it between the long stages of their dependency
    /// chains: short loops with independent iterations overlap in the out-of-order core.
    pub fn split(&mut self, vals: &mut [Value]) {
        let Some(PhaseLoop { head, off, end, scratch, mut entries, at, split: true, .. }) = self.phase else {
            return;
        };
        let ptr = self.ptr;
        let mut stored = Vec::with_capacity(self.carry.len() + vals.len());
        for &v in self.carry.iter().chain(vals.iter()) {
            let t = self.b.func.dfg.value_type(v);
            let entry = scratch_entry(entries);
            entries += 1;
            self.b.ins().store(MemFlagsData::trusted(), v, at, entry);
            stored.push((entry, t));
        }
        self.b.func.sized_stack_slots[scratch].size = entries * scratch_entry(1) as u32;
        let next = self.b.ins().iadd_imm_s(off, 16);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, next, end);
        let after = self.b.create_block();
        self.b.ins().brif(more, head, &[next.into()], after, &[]);
        self.b.switch_to_block(after);
        let head = self.b.create_block();
        self.b.append_block_param(head, ptr);
        let zero = self.b.ins().iconst(ptr, 0);
        self.b.ins().jump(head, &[zero.into()]);
        self.b.switch_to_block(head);
        let off = self.b.block_params(head)[0];
        let base = self.b.ins().stack_addr(ptr, scratch, 0);
        let at = self.b.ins().iadd(base, off);
        let mut loaded = stored.into_iter().map(|(entry, t)| self.b.ins().load(t, MemFlagsData::trusted(), at, entry)).collect::<Vec<_>>().into_iter();
        for c in self.carry.iter_mut().chain(vals.iter_mut()) {
            if let Some(v) = loaded.next() {
                *c = v;
            }
        }
        if let Some(p) = self.phase.as_mut() {
            p.head = head;
            p.off = off;
            p.at = at;
            p.entries = entries;
        }
    }

    /// Runs `f` with `x` carried across the splits below it; returns `f`'s result and `x`
    /// as valid after them.
    pub fn carried<T>(&mut self, x: Value, f: impl FnOnce(&mut Self) -> T) -> (T, Value) {
        let k = self.carry.len();
        self.carry.push(x);
        let r = f(self);
        let x = self.carry.get(k).copied().unwrap_or(x);
        self.carry.truncate(k);
        (r, x)
    }

    /// Allows or forbids splits (see [`Emitter::split`]) while node `n` is expanded: only a
    /// phase's root, and only f32 vector `exp`, `tanh` and `sigmoid` (whose expansions carry
    /// every value they use across their splits).
    fn allow_split(&mut self, n: NodeId, on: bool) {
        if let Some(p) = self.phase.as_mut() {
            p.split = on && p.root == n;
        }
    }

    // ----- loads and stores -----

    /// Loads element(s) of dtype `d` at `addr` in `mode`.
    pub fn load(&mut self, mode: Mode, d: DType, addr: Value) -> Value {
        self.load_at(mode, d, addr, 0)
    }

    /// Loads element(s) of dtype `d` at `addr + offset` (bytes) in `mode`.
    pub fn load_at(&mut self, mode: Mode, d: DType, addr: Value, offset: i32) -> Value {
        if !mode.vector() {
            return self.b.ins().load(lane_type(d), flags(), addr, offset);
        }
        if d != DType::Bool {
            return self.b.ins().load(mode.ty(d), flags(), addr, offset);
        }
        // Bools: `lanes` bytes widened to a mask.
        let mt = mode.ty(DType::Bool);
        if mode.lanes == 4 {
            let w = self.b.ins().load(types::I32, flags(), addr, offset);
            let v = self.b.ins().scalar_to_vector(types::I32X4, w);
            let v = self.bitcast(types::I8X16, v);
            let v = self.b.ins().swiden_low(v);
            let v = self.b.ins().swiden_low(v);
            let z = self.iconst(mt, 0);
            self.b.ins().icmp(IntCC::NotEqual, v, z)
        } else {
            let w = self.b.ins().load(types::I16, flags(), addr, offset);
            let v = self.b.ins().scalar_to_vector(types::I16X8, w);
            let v = self.bitcast(types::I8X16, v);
            let v = self.b.ins().swiden_low(v);
            let v = self.b.ins().swiden_low(v);
            let v = self.b.ins().swiden_low(v);
            let z = self.iconst(mt, 0);
            self.b.ins().icmp(IntCC::NotEqual, v, z)
        }
    }

    /// Turns a scalar (row-invariant) value into the representation of `mode`.
    pub fn broadcast(&mut self, mode: Mode, d: DType, s: Value) -> Value {
        if !mode.vector() {
            return s;
        }
        let t = mode.ty(d);
        if d == DType::Bool {
            let lane = t.lane_type();
            let w = self.b.ins().uextend(lane, s);
            let m = self.b.ins().ineg(w);
            return self.b.ins().splat(t, m);
        }
        self.b.ins().splat(t, s)
    }

    pub fn store(&mut self, mode: Mode, d: DType, v: Value, addr: Value) {
        if !mode.vector() {
            self.b.ins().store(flags(), v, addr, 0);
            return;
        }
        if d != DType::Bool {
            self.b.ins().store(flags(), v, addr, 0);
            return;
        }
        let t = mode.ty(DType::Bool);
        let one = self.iconst(t, 1);
        let v = self.b.ins().band(v, one);
        if mode.lanes == 4 {
            let v = self.b.ins().snarrow(v, v);
            let v = self.b.ins().snarrow(v, v);
            let v = self.bitcast(types::I32X4, v);
            let w = self.b.ins().extractlane(v, 0);
            self.b.ins().store(flags(), w, addr, 0);
        } else {
            // Two 64-bit lanes: Cranelift's x86 backend has no `snarrow` of `i64x2`, so the
            // two 0/1 lanes are taken out and packed into two bytes.
            let lo = self.b.ins().extractlane(v, 0);
            let hi = self.b.ins().extractlane(v, 1);
            let hi = self.b.ins().ishl_imm_u(hi, 8);
            let w = self.b.ins().bor(lo, hi);
            let w = self.b.ins().ireduce(types::I16, w);
            self.b.ins().store(flags(), w, addr, 0);
        }
    }
}

/// Loop blocks of the generated function (kept for readability of `kernel.rs`).
#[allow(dead_code)]
pub(crate) struct Blocks {
    pub row: Block,
    pub exit: Block,
}
