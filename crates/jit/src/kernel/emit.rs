//! Emitting a kernel: the Cranelift function of a typed graph (rows, SIMD body, padded or
//! scalar tail), its compilation and the per-thread compile context.

use super::*;
use super::guard::{broadcast_into, expand_strides};
use super::isa::{has_fma, isa_for};
use super::phases::{emit_phases, fission_plan, heavy};
use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::Instant;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{AbiParam, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, UserFuncName, Value, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module as _, default_libcall_names};
use ir::DType;

use crate::block::CodegenOptions;
use crate::codegen::{Access, ConstPool, Emitter, Hoist, Layout, Mode, PoolEntry, multi_use, vector_lanes};
use crate::error::JitError;
use crate::fission::{self, BLOCK_VECTORS, Plan};
use crate::group::{Graph, Group, NodeKind};
use crate::spec::KernelSpec;

impl Group {
    /// Compiles the group for inputs of the given spec.
    pub fn compile(&self, spec: &KernelSpec) -> Result<Kernel, JitError> {
        self.compile_with(spec, CodegenOptions::default())
    }

    /// Compiles the group for inputs of the given spec with the given code generation options.
    pub fn compile_with(&self, spec: &KernelSpec, options: CodegenOptions) -> Result<Kernel, JitError> {
        let start = Instant::now();
        let g = self.graph(spec)?;
        compile_graph(&g, spec, options, start)
    }
}

fn compile_graph(g: &Graph, spec: &KernelSpec, options: CodegenOptions, start: Instant) -> Result<Kernel, JitError> {
    let live = live_nodes(g);
    // Integer divisions may raise, so they run even when their value is unused.
    let raising: Vec<usize> = (0..g.nodes.len()).filter(|&i| can_raise(g, i)).collect();
    let shape = g.nodes[g.outputs[0]].shape.clone();
    for &o in &g.outputs {
        if g.nodes[o].shape != shape {
            return Err(JitError::Unsupported(format!(
                "outputs of different shapes ({:?} and {:?})",
                shape, g.nodes[o].shape
            )));
        }
    }
    let n_in = spec.inputs.len();
    let mut used = vec![false; n_in];
    let mut strides = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if let NodeKind::Input(k) = n.kind
            && live[i]
        {
            used[k] = true;
        }
    }
    // Used inputs addressed from another input's pointer: (that input, distance in bytes).
    let mut share: Vec<Option<(usize, i32)>> = vec![None; n_in];
    for (k, s) in spec.inputs.iter().enumerate() {
        let Some(a) = s.alias else { continue };
        let root = spec.inputs.get(a.of).filter(|r| a.of < k && r.alias.is_none());
        if root.is_none_or(|r| (r.dtype, &r.sizes, &r.strides) != (s.dtype, &s.sizes, &s.strides)) {
            return Err(JitError::Unsupported(format!("input {k}: alias of input {} of another layout", a.of)));
        }
        if used[k] {
            share[k] = Some((a.of, a.bytes));
        }
    }
    let needed = |k: usize| used[k] || share.iter().any(|s| s.is_some_and(|(r, _)| r == k));
    for (k, s) in spec.inputs.iter().enumerate() {
        if !needed(k) {
            strides.push(vec![0; shape.len()]);
            continue;
        }
        let e = expand_strides(&s.sizes, &s.strides, &shape)
            .ok_or_else(|| JitError::Unsupported(format!("input {k} of shape {:?} does not broadcast to {shape:?}", s.sizes)))?;
        strides.push(e);
    }
    for _ in &g.outputs {
        strides.push(runtime::tensor::contiguous_strides(&shape));
    }
    let layout = Layout::new(&shape, strides);
    let lanes = vector_lanes(g, &live, &layout, n_in, &used);
    let raising_op = raising.first().map(|&i| g.nodes[i].op);
    for &i in &raising {
        if broadcast_into(&g.nodes[i].shape, &shape).is_none() {
            return Err(JitError::Unsupported("an unused integer division does not broadcast to the output".into()));
        }
    }
    let mut result = build(g, &layout, &used, &share, lanes, options);
    let mut lanes_used = lanes;
    if let (Err(e), true) = (&result, lanes > 1) {
        if std::env::var_os("JIT_DEBUG").is_some() {
            eprintln!("jit: vector code failed ({e}); using scalar code");
        }
        // Some vector lowering is missing on this machine: fall back to scalar code.
        result = build(g, &layout, &used, &share, 1, options);
        lanes_used = 1;
    }
    let (module, entry, pool) = result?;
    let outputs = g.outputs.iter().map(|&o| (g.nodes[o].dtype, shape.clone())).collect();
    Ok(Kernel {
        entry,
        _code: Mutex::new(Code { module: Some(module) }),
        pool: [pool.clone(), pool],
        spec: spec.clone(),
        outputs,
        numel: layout.numel,
        lanes: lanes_used,
        compile_time: start.elapsed(),
        compiled_at: Instant::now(),
        raising_op,
    })
}

type Built = (JITModule, EntryFn, Vec<PoolEntry>);

/// Cranelift's per-function state (the function, its analyses, the register allocator's
/// context, the builder's scratch), kept per thread and reused by every compilation on it:
/// a compile clears it and keeps its allocations, so a thread's later kernels neither grow
/// nor free them again. A thread's first compilation builds it (and pays for it).
struct CompileContext {
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
}

thread_local! {
    static COMPILE_CONTEXT: RefCell<Option<CompileContext>> = const { RefCell::new(None) };
}

fn build(g: &Graph, layout: &Layout, used: &[bool], share: &[Option<(usize, i32)>], lanes: u8, options: CodegenOptions) -> Result<Built, JitError> {
    COMPILE_CONTEXT.with(|slot| {
        // A compilation on this thread is under way only if Cranelift re-entered the JIT,
        // which it does not; should it, the inner compilation gets a context of its own.
        let Ok(mut slot) = slot.try_borrow_mut() else {
            let mut fresh = CompileContext { ctx: cranelift_codegen::Context::new(), fctx: FunctionBuilderContext::new() };
            return build_guarded(|| build_inner(&mut fresh, g, layout, used, share, lanes, options));
        };
        let cc = slot.get_or_insert_with(|| CompileContext { ctx: cranelift_codegen::Context::new(), fctx: FunctionBuilderContext::new() });
        let r = build_guarded(|| build_inner(cc, g, layout, used, share, lanes, options));
        if r.is_err() {
            // A failed compilation may leave the builder mid-function: start the next afresh.
            *slot = None;
        }
        r
    })
}

/// Runs one compilation, turning a panic of the code generator into an error value.
fn build_guarded(compile: impl FnOnce() -> Result<Built, JitError>) -> Result<Built, JitError> {
    match catch_unwind(AssertUnwindSafe(compile)) {
        Ok(r) => r,
        Err(_) => Err(JitError::Codegen("code generator panicked".into())),
    }
}

#[allow(clippy::too_many_arguments)]
fn build_inner(
    cc: &mut CompileContext,
    g: &Graph,
    layout: &Layout,
    used: &[bool],
    share: &[Option<(usize, i32)>],
    lanes: u8,
    options: CodegenOptions,
) -> Result<Built, JitError> {
    // Heavy vector bodies with several transcendental functions run in phases over blocks of
    // vectors (see `fission`); whether every phase calls a block routine also picks the ISA.
    let multi_use = multi_use(g);
    let (plan, routine_fission) = fission_plan(g, &multi_use, layout.numel, lanes, options).map_or((None, false), |(p, r)| (Some(p), r));
    let isa = isa_for(routine_fission && layout.numel < fission::MIN_ELEMENTS)?;
    let mut module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let ptr = module.target_config().pointer_type();
    let CompileContext { ctx, fctx } = cc;
    module.clear_context(ctx);
    let mut sig = module.make_signature();
    for _ in 0..4 {
        sig.params.push(AbiParam::new(ptr));
    }
    let id = module
        .declare_function("fusion_kernel", Linkage::Export, &sig)
        .map_err(|e| JitError::Codegen(e.to_string()))?;
    ctx.func.signature = sig;
    ctx.func.name = UserFuncName::user(0, id.as_u32());
    let pool = {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let err = b.declare_var(types::I32);
        let pool = emit_function(&mut b, g, layout, used, share, lanes, ptr, err, options, plan.as_ref(), multi_use)?;
        b.seal_all_blocks();
        b.finalize(module.target_config());
        pool
    };
    let dump = std::env::var_os("JIT_DUMP").is_some();
    if dump {
        ctx.set_disasm(true);
    }
    module.define_function(id, ctx).map_err(|e| JitError::Codegen(format!("{e:?}")))?;
    if dump {
        if let Some(code) = ctx.compiled_code() {
            eprintln!("jit: {lanes}-lane kernel, {} bytes of code\n{}", code.code_info().total_size, code.vcode.as_deref().unwrap_or(""));
            if let Some(path) = std::env::var_os("JIT_DUMP_BIN") {
                if let Err(e) = outfile::write(std::path::Path::new(&path), code.code_buffer()) {
                    eprintln!("jit: {e}");
                }
            }
        }
    }
    module.clear_context(ctx);
    module.finalize_definitions().map_err(|e| JitError::Codegen(e.to_string()))?;
    let code = module.get_finalized_function(id);
    // SAFETY: `code` is the finalized entry of a function declared with four pointer-sized
    // parameters and no results, matching `EntryFn` under the platform's C calling convention.
    let entry = unsafe { std::mem::transmute::<*const u8, EntryFn>(code) };
    Ok((module, entry, pool))
}

/// Emits the kernel: `used` says which inputs the graph reads, `share` which of those are read
/// through another input's pointer at a byte distance (see `spec::Alias`), `options` whether
/// fissioned phases may call the block routines, `plan` the phases of a fissioned body and
/// `multi_use` as `codegen::multi_use`.
#[allow(clippy::too_many_arguments)]
fn emit_function(
    b: &mut FunctionBuilder,
    g: &Graph,
    layout: &Layout,
    used: &[bool],
    share: &[Option<(usize, i32)>],
    lanes: u8,
    ptr: types::Type,
    err: cranelift_frontend::Variable,
    options: CodegenOptions,
    plan: Option<&Plan>,
    multi_use: Vec<bool>,
) -> Result<Vec<PoolEntry>, JitError> {
    let n_in = used.len();
    let n_ops = layout.strides.len();
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (args, start, end, errp) = (params[0], params[1], params[2], params[3]);
    let zero32 = b.ins().iconst(types::I32, 0);
    b.def_var(err, zero32);
    let mut es: Vec<i64> = (0..n_ops)
        .map(|k| if k < n_in { dtype_of_input(g, k) } else { g.nodes[g.outputs[k - n_in]].dtype }.size_bytes() as i64)
        .collect();
    // Operands with a pointer of their own: the outputs, and the used inputs that are not read
    // through another's pointer, and those that others are read through (used or not).
    let mut own: Vec<bool> = (0..n_ops).map(|k| k >= n_in || (used[k] && share[k].is_none())).collect();
    for (k, s) in share.iter().enumerate() {
        if let Some((r, _)) = *s {
            own[r] = true;
            es[r] = es[k];
        }
    }
    // Heavy vector bodies read their constants from the pool (its address and its copy's follow
    // the operands' in `ptrs`).
    let pool_base = (lanes > 1 && heavy(g)).then(|| {
        [0, 1].map(|i| b.ins().load(ptr, MemFlagsData::trusted(), args, ((n_ops + i) * 8) as i32))
    });
    let row = b.create_block();
    let exit = b.create_block();
    let prelude = b.create_block();
    let empty = b.ins().icmp(IntCC::SignedGreaterThanOrEqual, start, end);
    let entry_end = b.ins().brif(empty, exit, &[], prelude, &[]);

    b.switch_to_block(prelude);
    let inner = layout.inner() as i64;
    let (row0, col0) = udiv_const(b, start, inner as u64);
    for _ in 0..3 {
        b.append_block_param(row, ptr);
    }
    b.ins().jump(row, &[row0.into(), col0.into(), start.into()]);

    // Row header: row pointers, the span of columns, and row-invariant inputs. The operands'
    // base addresses are loaded here rather than once in the entry block: reloading them per
    // row costs what reloading them from spill slots would, and keeps them out of the register
    // allocator's way across the loops.
    b.switch_to_block(row);
    let rp = b.block_params(row).to_vec();
    let (r, c, lin) = (rp[0], rp[1], rp[2]);
    let nd = layout.shape.len();
    let mut offs: Vec<Option<Value>> = vec![None; n_ops];
    let mut rem = r;
    for d in (0..nd - 1).rev() {
        let (q, idx) = udiv_const(b, rem, layout.shape[d] as u64);
        rem = q;
        // One product per distinct stride in bytes.
        let mut products: HashMap<i64, Value> = HashMap::new();
        for k in 0..n_ops {
            if !own[k] || layout.strides[k][d] == 0 {
                continue;
            }
            let bytes = layout.strides[k][d] as i64 * es[k];
            let t = *products.entry(bytes).or_insert_with(|| b.ins().imul_imm_s(idx, bytes));
            offs[k] = Some(match offs[k] {
                Some(o) => b.ins().iadd(o, t),
                None => t,
            });
        }
    }
    let mut row_ptr = vec![None; n_ops];
    for k in 0..n_ops {
        if own[k] {
            let p = b.ins().load(ptr, MemFlagsData::trusted(), args, (k * 8) as i32);
            row_ptr[k] = Some(match offs[k] {
                Some(o) => b.ins().iadd(p, o),
                None => p,
            });
        }
    }
    let inner_v = b.ins().iconst(ptr, inner);
    let left_row = b.ins().isub(inner_v, c);
    let left_all = b.ins().isub(end, lin);
    let span = b.ins().umin(left_row, left_all);
    let col_end = b.ins().iadd(c, span);
    let inner_stride: Vec<usize> = layout.strides.iter().map(|s| *s.last().unwrap_or(&0)).collect();

    let hoist = Hoist::before(entry_end);
    let mut em = Emitter { b, g, ptr, err, fma: has_fma(), pool: None, multi_use, hoist, phase: None, carry: Vec::new() };
    let next_row = em.b.create_block();
    // Light kernels keep a scalar tail (their body is small; the padding code would cost more
    // to compile than the body); heavy ones (a transcendental function, or many ops) run the
    // tail through the padded vector body, which halves what Cranelift compiles.
    // When every row holds whole vectors, the vector loop covers every row exactly (callers
    // split the space at multiples of `lanes`, see `EntryFn`): neither tail is emitted.
    let whole = lanes > 1 && inner % lanes as i64 == 0;
    let scalar_tail = lanes == 1 || (!heavy(g) && !whole);
    let padded_tail = lanes > 1 && !scalar_tail && !whole;
    // Per input: the operand whose pointer it is read through, and at what distance. The
    // padded tail copies each input to the stack and fissioned bodies take a pointer per
    // input, so there an alias gets a row pointer of its own.
    let mut read_via: Vec<(usize, i32)> = (0..n_in).map(|k| (k, 0)).collect();
    for (k, s) in share.iter().enumerate() {
        let Some((r, off)) = *s else { continue };
        if padded_tail || plan.is_some() {
            row_ptr[k] = row_ptr[r].map(|p| em.b.ins().iadd_imm_s(p, off as i64));
        } else {
            read_via[k] = (r, off);
        }
    }
    // Inputs that do not move along the row are loaded once per row.
    let mut invariant_scalar: HashMap<usize, Value> = HashMap::new();
    for k in 0..n_in {
        let (r, off) = read_via[k];
        if used[k] && inner_stride[k] == 0
            && let Some(p) = row_ptr[r]
        {
            let d = dtype_of_input(g, k);
            let v = em.load_at(Mode { lanes: 1 }, d, p, off);
            invariant_scalar.insert(k, v);
        }
    }
    let sloop = em.b.create_block();
    em.b.append_block_param(sloop, ptr);
    if lanes > 1 {
        // One vector body serves the row and its tail: the body takes the address of its
        // first element in every strided operand. The last `rem < lanes` elements run through
        // it over stack copies padded with the row's last element, and only `rem` results are
        // copied back (one body instead of a vector body and a scalar tail halves the code).
        let mode = Mode { lanes };
        let mut invariant_vec: HashMap<usize, Value> = HashMap::new();
        for (&k, &v) in &invariant_scalar {
            let d = dtype_of_input(g, k);
            invariant_vec.insert(k, em.broadcast(mode, d, v));
        }
        // Operands read or written through pointers of their own: strided inputs and the outputs.
        let moving: Vec<usize> = (0..n_ops).filter(|&k| row_ptr[k].is_some() && (k >= n_in || inner_stride[k] != 0)).collect();
        let slots: Vec<_> = if !padded_tail {
            Vec::new()
        } else {
            moving.iter().map(|_| em.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 4))).collect()
        };
        let vloop = em.b.create_block();
        em.b.append_block_param(vloop, ptr);
        let go = em.b.create_block();
        // Without the padded tail or phases, the body addresses every operand from its row
        // pointer and the column (an x86 address mode); otherwise it is a block of its own,
        // taking the address of its first element in every operand.
        let direct = !padded_tail && plan.is_none();
        let vbody = if direct { go } else { em.b.create_block() };
        if !direct {
            em.b.append_block_param(vbody, ptr); // j
            if padded_tail {
                em.b.append_block_param(vbody, types::I8); // 1 in the tail
            }
            if plan.is_some() {
                em.b.append_block_param(vbody, ptr); // vectors in the block
            }
            for _ in &moving {
                em.b.append_block_param(vbody, ptr);
            }
            // The pool's address: a parameter of the body that differs between the row's
            // vectors and the padded tail (the pool and its copy), so that its loads, pure as
            // they are, would not be hoisted out of the loop by an optimizer.
            if pool_base.is_some() {
                em.b.append_block_param(vbody, ptr);
            }
        }
        let tail = if scalar_tail {
            sloop
        } else if whole {
            next_row
        } else {
            let t = em.b.create_block();
            em.b.append_block_param(t, ptr);
            t
        };
        em.b.ins().jump(vloop, &[c.into()]);

        em.b.switch_to_block(vloop);
        let j = em.b.block_params(vloop)[0];
        let jn = em.b.ins().iadd_imm_s(j, lanes as i64);
        let fits = em.b.ins().icmp(IntCC::SignedLessThanOrEqual, jn, col_end);
        let tail_args: &[cranelift_codegen::ir::BlockArg] = if whole { &[] } else { &[j.into()] };
        em.b.ins().brif(fits, go, &[], tail, tail_args);
        em.b.switch_to_block(go);
        let column = j;
        let mut args: Vec<cranelift_codegen::ir::BlockArg> = vec![j.into()];
        if padded_tail {
            args.push(em.b.ins().iconst(types::I8, 0).into());
        }
        if plan.is_some() {
            let left = em.b.ins().isub(col_end, j);
            let vectors = em.b.ins().ushr_imm_u(left, lanes.trailing_zeros() as i64);
            let most = em.b.ins().iconst(ptr, BLOCK_VECTORS);
            args.push(em.b.ins().umin(vectors, most).into());
        }
        for &k in &moving {
            let off = scale(em.b, j, es[k]);
            let p = row_ptr[k].map(|p| em.b.ins().iadd(p, off)).unwrap_or(off);
            args.push(p.into());
        }
        if let Some([p, _]) = pool_base {
            args.push(p.into());
        }
        if !direct {
            em.b.ins().jump(vbody, &args);
        }

        if padded_tail {
            em.b.switch_to_block(tail);
            let j = em.b.block_params(tail)[0];
            let rem = em.b.ins().isub(col_end, j);
            let any = em.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rem, 0);
            let pad = em.b.create_block();
            em.b.ins().brif(any, pad, &[], next_row, &[]);
            em.b.switch_to_block(pad);
            let last = em.b.ins().iadd_imm_s(rem, -1);
            let one8 = em.b.ins().iconst(types::I8, 1);
            let mut args: Vec<cranelift_codegen::ir::BlockArg> = vec![j.into(), one8.into()];
            if plan.is_some() {
                args.push(em.b.ins().iconst(ptr, 1).into());
            }
            for (&k, &slot) in moving.iter().zip(&slots) {
                let sp = em.b.ins().stack_addr(ptr, slot, 0);
                if k < n_in {
                    let it = int_of_size(es[k]);
                    let off = scale(em.b, j, es[k]);
                    let src = row_ptr[k].map(|p| em.b.ins().iadd(p, off)).unwrap_or(off);
                    for i in 0..lanes as i64 {
                        let a = if i == 0 {
                            src
                        } else {
                            let ic = em.b.ins().iconst(ptr, i);
                            let idx = em.b.ins().umin(ic, last);
                            let o = scale(em.b, idx, es[k]);
                            em.b.ins().iadd(src, o)
                        };
                        let v = em.b.ins().load(it, MemFlagsData::trusted(), a, 0);
                        em.b.ins().store(MemFlagsData::trusted(), v, sp, (i * es[k]) as i32);
                    }
                }
                args.push(sp.into());
            }
            if let Some([_, p]) = pool_base {
                args.push(p.into());
            }
            em.b.ins().jump(vbody, &args);
        }

        let (j, in_tail, vectors, body_ptr, pool) = if direct {
            (column, None, None, row_ptr.clone(), pool_base.map(|[p, _]| p))
        } else {
            em.b.switch_to_block(vbody);
            let params = em.b.block_params(vbody).to_vec();
            let mut first = 1 + usize::from(padded_tail);
            let vectors = plan.as_ref().map(|_| params[first]);
            first += usize::from(plan.is_some());
            let mut body_ptr: Vec<Option<Value>> = vec![None; n_ops];
            for (i, &k) in moving.iter().enumerate() {
                body_ptr[k] = Some(params[first + i]);
            }
            let pool = pool_base.map(|_| params[first + moving.len()]);
            (params[0], padded_tail.then(|| params[1]), vectors, body_ptr, pool)
        };
        let mut body_access: Vec<Option<Access>> = vec![None; n_in];
        let mut body_off = vec![0; n_in];
        for k in 0..n_in {
            let (r, off) = read_via[k];
            if let Some(&v) = invariant_vec.get(&k) {
                body_access[k] = Some(Access::Invariant(v));
            } else if let Some(p) = body_ptr[r] {
                body_access[k] = Some(Access::Strided { row_ptr: p, stride_bytes: es[k] });
                body_off[k] = off;
            }
        }
        if let Some(base) = pool {
            em.pool = Some(ConstPool { base, data: Vec::new() });
        }
        let step = match (&plan, vectors) {
            (Some(plan), Some(nv)) => {
                emit_phases(&mut em, mode, plan, nv, &body_access, &body_ptr, &es, n_in, options)?;
                em.b.ins().imul_imm_s(nv, lanes as i64)
            }
            _ => {
                emit_body(&mut em, mode, direct.then_some(j), &body_access, &body_off, &body_ptr, &es, n_in)?;
                em.b.ins().iconst(ptr, lanes as i64)
            }
        };
        if scalar_tail {
            let jn = em.b.ins().iadd_imm_s(j, lanes as i64);
            em.b.ins().jump(vloop, &[jn.into()]);
        } else if let Some(in_tail) = in_tail {
            let copy = em.b.create_block();
            let next = em.b.create_block();
            em.b.ins().brif(in_tail, copy, &[], next, &[]);
            em.b.switch_to_block(next);
            let jn = em.b.ins().iadd(j, step);
            em.b.ins().jump(vloop, &[jn.into()]);
            // Copy back element 0 (rem >= 1), then element i while i < rem.
            em.b.switch_to_block(copy);
            let rem = em.b.ins().isub(col_end, j);
            let copy_back = |em: &mut Emitter, i: i64| {
                for (&k, &slot) in moving.iter().zip(&slots) {
                    if k < n_in {
                        continue;
                    }
                    let Some(dst) = row_ptr[k] else { continue };
                    let it = int_of_size(es[k]);
                    let v = em.b.ins().stack_load(ptr, it, slot, (i * es[k]) as i32);
                    let ji = em.b.ins().iadd_imm_s(j, i);
                    let off = scale(em.b, ji, es[k]);
                    let a = em.b.ins().iadd(dst, off);
                    em.b.ins().store(MemFlagsData::trusted(), v, a, 0);
                }
            };
            copy_back(&mut em, 0);
            for i in 1..(lanes as i64 - 1) {
                let more = em.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, rem, i);
                let blk = em.b.create_block();
                em.b.ins().brif(more, blk, &[], next_row, &[]);
                em.b.switch_to_block(blk);
                copy_back(&mut em, i);
            }
            em.b.ins().jump(next_row, &[]);
        } else {
            let jn = em.b.ins().iadd(j, step);
            em.b.ins().jump(vloop, &[jn.into()]);
        }
    } else {
        em.b.ins().jump(sloop, &[c.into()]);
    }
    if scalar_tail {
        // Scalar loop: the whole row, or the tail of the vector loop.

        let sbody = em.b.create_block();
        em.b.switch_to_block(sloop);
        let j = em.b.block_params(sloop)[0];
        let more = em.b.ins().icmp(IntCC::SignedLessThan, j, col_end);
        em.b.ins().brif(more, sbody, &[], next_row, &[]);
        em.b.switch_to_block(sbody);
        let accesses: Vec<Option<Access>> = (0..n_in)
            .map(|k| {
                if let Some(&v) = invariant_scalar.get(&k) {
                    Some(Access::Invariant(v))
                } else {
                    row_ptr[read_via[k].0].map(|p| Access::Strided { row_ptr: p, stride_bytes: inner_stride[k] as i64 * es[k] })
                }
            })
            .collect();
        let offsets: Vec<i32> = read_via.iter().map(|&(_, off)| off).collect();
        let out_es: Vec<i64> = (0..n_ops).map(|k| inner_stride[k] as i64 * es[k]).collect();
        emit_body(&mut em, Mode { lanes: 1 }, Some(j), &accesses, &offsets, &row_ptr, &out_es, n_in)?;
        let j1 = em.b.ins().iadd_imm_s(j, 1);
        em.b.ins().jump(sloop, &[j1.into()]);
    }

    em.b.switch_to_block(next_row);
    let lin2 = em.b.ins().iadd(lin, span);
    let r1 = em.b.ins().iadd_imm_s(r, 1);
    let zero = em.b.ins().iconst(ptr, 0);
    let again = em.b.ins().icmp(IntCC::SignedLessThan, lin2, end);
    em.b.ins().brif(again, row, &[r1.into(), zero.into(), lin2.into()], exit, &[]);

    em.b.switch_to_block(exit);
    // Only integer divisions set the error code; without one it stays 0, and reading it here
    // would carry it through every loop as a block parameter.
    if (0..g.nodes.len()).any(|i| can_raise(g, i)) {
        let e = em.b.use_var(err);
        let old = em.b.ins().load(types::I32, MemFlagsData::trusted(), errp, 0);
        let e = em.b.ins().bor(old, e);
        em.b.ins().store(MemFlagsData::trusted(), e, errp, 0);
    }
    em.b.ins().return_(&[]);
    Ok(em.pool.map(|p| p.data).unwrap_or_default())
}

/// Per node: whether the outputs (or an integer division, which may raise) depend on it.
pub(super) fn live_nodes(g: &Graph) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let mut stack: Vec<usize> = g.outputs.clone();
    stack.extend((0..g.nodes.len()).filter(|&i| can_raise(g, i)));
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut live[n], true) {
            continue;
        }
        g.nodes[n].kind.for_each_operand(|a| stack.push(a));
    }
    live
}

/// Whether node `i` is an integer division or remainder (which raises on a zero divisor).
pub(super) fn can_raise(g: &Graph, i: usize) -> bool {
    use crate::group::Binary::*;
    let n = &g.nodes[i];
    matches!(n.kind, NodeKind::Binary(DivTrunc | DivFloor | Rem | Fmod, _, _)) && !n.dtype.is_floating()
}

/// The integer type of an element of `bytes` bytes (to copy elements of any dtype).
pub(super) fn int_of_size(bytes: i64) -> types::Type {
    match bytes {
        1 => types::I8,
        2 => types::I16,
        4 => types::I32,
        _ => types::I64,
    }
}

pub(super) fn dtype_of_input(g: &Graph, k: usize) -> DType {
    g.nodes
        .iter()
        .find_map(|n| match n.kind {
            NodeKind::Input(i) if i == k => Some(n.dtype),
            _ => None,
        })
        .unwrap_or(DType::F32)
}

/// `x * k` for a constant `k` (a shift when `k` is a power of two).
pub(super) fn scale(b: &mut FunctionBuilder, x: Value, k: i64) -> Value {
    if k > 0 && (k as u64).is_power_of_two() {
        b.ins().ishl_imm_u(x, k.trailing_zeros() as i64)
    } else {
        b.ins().imul_imm_s(x, k)
    }
}

/// `(x / d, x % d)` for `0 <= x < 2^63` and a constant `d`, without a division instruction:
/// shifts for powers of two, otherwise Granlund and Montgomery's multiply by
/// `m = ceil(2^(63 + l) / d)` (`2^(l-1) < d <= 2^l`), which fits in 64 bits for 63-bit
/// dividends, and `x / d = (x m / 2^64) >> (l - 1)`. A dimension of size `d = 0` leaves no
/// element to compute, so the code never runs; it gets `(0, x)`.
pub(super) fn udiv_const(b: &mut FunctionBuilder, x: Value, d: u64) -> (Value, Value) {
    let ty = b.func.dfg.value_type(x);
    if d == 0 {
        return (b.ins().iconst(ty, 0), x);
    }
    if d.is_power_of_two() {
        let q = b.ins().ushr_imm_u(x, d.trailing_zeros() as i64);
        let r = b.ins().band_imm_u(x, (d - 1) as i64);
        return (q, r);
    }
    let (m, l) = div_magic(d);
    let mv = b.ins().iconst(ty, m as i64);
    let hi = b.ins().umulhi(x, mv);
    let q = b.ins().ushr_imm_u(hi, (l - 1) as i64);
    let qd = b.ins().imul_imm_s(q, d as i64);
    let r = b.ins().isub(x, qd);
    (q, r)
}

/// The multiplier and shift of [`udiv_const`] for a divisor `d` that is not a power of two.
pub(super) fn div_magic(d: u64) -> (u64, u32) {
    let l = 64 - (d - 1).leading_zeros();
    let m = ((1u128 << (63 + l)).div_ceil(d as u128)) as u64;
    (m, l)
}

/// Emits the computation of all outputs for column `j` of the current row (`None`: the
/// accesses' pointers are already at the element); input `k` is read `offsets[k]` bytes from
/// its access's address.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_body(
    em: &mut Emitter,
    mode: Mode,
    j: Option<Value>,
    accesses: &[Option<Access>],
    offsets: &[i32],
    row_ptr: &[Option<Value>],
    out_step: &[i64],
    n_in: usize,
) -> Result<(), JitError> {
    let mut cache = HashMap::new();
    let g = em.g;
    let mut values = Vec::new();
    // The address of element `j` of a row (the row's pointer itself without `j`).
    let at = |em: &mut Emitter<'_, '_>, p: Value, step: i64| match j {
        Some(j) => {
            let off = scale(em.b, j, step);
            em.b.ins().iadd(p, off)
        }
        None => p,
    };
    // Reads input `k` at column `j` of the row.
    let input = |em: &mut Emitter<'_, '_>, k: usize| -> Value {
        let d = dtype_of_input(g, k);
        match accesses.get(k).copied().flatten() {
            Some(Access::Invariant(v)) => v,
            Some(Access::Strided { row_ptr, stride_bytes }) => {
                let addr = at(em, row_ptr, stride_bytes);
                em.load_at(mode, d, addr, offsets[k])
            }
            // Unused inputs are never reached from a live node.
            None => em.iconst(mode.ty(DType::I32), 0),
        }
    };
    for &o in &g.outputs {
        values.push(em.node(mode, o, &mut cache, &input)?);
    }
    for i in 0..g.nodes.len() {
        if can_raise(g, i) {
            em.node(mode, i, &mut cache, &input)?;
        }
    }
    for (i, (&o, v)) in g.outputs.iter().zip(values).enumerate() {
        let k = n_in + i;
        let Some(p) = row_ptr[k] else { continue };
        let addr = at(em, p, out_step[k]);
        em.store(mode, g.nodes[o].dtype, v, addr);
    }
    Ok(())
}
