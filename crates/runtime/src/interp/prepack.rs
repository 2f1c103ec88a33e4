//! Prepacked weights: the constant operand of an `f32` matrix product (the weight of
//! `mm`/`addmm`, the filter of a convolution) packed once, when the program is compiled, into
//! the layout of the prepacked GEMM (`kernels::packed`), and shared by every runtime of the
//! program (an `Arc` in the instruction).
//!
//! A prepacked instruction runs through its out-variant: `out::meta` still decides whether the
//! call is of the usual form (so planned and unplanned results come from the same code), and
//! [`compute`] then multiplies with the packed operand. The original constant stays in the
//! argument list, so the registered kernel remains the fallback for anything else.
//!
//! The same packed weights serve the `backend.kernel {kernel = "linear"}` that
//! `fuse-epilogue` forms from `addmm` and the op that consumes its result (a residual add, an
//! activation): [`linear_kernel`] packs the kernel's constant weight when the program is
//! compiled, and each call applies the consumer to the product's tiles in its epilogue
//! (`packed::Post`).

use dialect_aten::op;
use std::sync::Arc;

use ir::{DType, Module, OpId, OpRef};

use super::Arg;
use super::out::{OutOp, mat, scalar_or, tensor_arg};
use crate::kernels::conv::{ConvArgs, PackedFilter, Padding, conv_compute_packed, out_geometry, static_positions};
use ::kernels::gemv::{Columns, gemv};
use crate::kernels::linalg::MatView;
use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use ::kernels::Isa;
use ::kernels::gemm::{Activation, Addend, Bias, Epilogue, PackedB, Post, gemm_packed_b_post};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// A prepacked constant operand.
#[derive(Debug)]
pub(crate) enum Prepacked {
    /// The right operand (`mat2`) of `mm`/`addmm`.
    Rhs(PackedB),
    /// The weight of a forward convolution.
    Filter(PackedFilter),
}

fn const_f32(arg: Option<&Arg>, dim: usize) -> Option<&Tensor> {
    match arg {
        Some(Arg::Const(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() == dim => Some(t),
        _ => None,
    }
}

/// Packs the constant operand of an instruction whose out-variant is `op`, when there is one
/// this CPU has a prepacked kernel for; `input` is the static shape of its first operand, when
/// known (a convolution's filter is packed for its number of output positions).
pub(crate) fn prepack(op: OutOp, args: &[Arg], input: Option<&[i64]>) -> Option<Arc<Prepacked>> {
    let isa = Isa::simd()?;
    prepack_for(isa, op, args, input)
}

/// [`prepack`] for a given instruction-set path.
pub(crate) fn prepack_for(isa: Isa, op: OutOp, args: &[Arg], input: Option<&[i64]>) -> Option<Arc<Prepacked>> {
    let packed = match op {
        OutOp::Mm | OutOp::Addmm => {
            let b = const_f32(args.get(if op == OutOp::Mm { 1 } else { 2 }), 2)?;
            Prepacked::Rhs(PackedB::pack("prepack", isa, mat("prepack", b).ok()?).ok()?)
        }
        OutOp::Convolution => {
            let w = match args.get(1) {
                Some(Arg::Const(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() >= 3 => t,
                _ => return None,
            };
            let forward = matches!(args.get(6), Some(Arg::Const(IValue::Bool(false))));
            let groups = match args.get(8) {
                Some(Arg::Const(IValue::Int(g))) if *g > 0 => *g as usize,
                _ => return None,
            };
            if !forward {
                return None;
            }
            let ints = |i: usize| match args.get(i) {
                Some(Arg::Const(v)) => v.as_int_list().ok(),
                _ => None,
            };
            let conv_args = || -> Option<ConvArgs> {
                Some(ConvArgs {
                    stride: ints(3)?.into(),
                    padding: Padding::Explicit(ints(4)?.into()),
                    dilation: ints(5)?.into(),
                    transposed: false,
                    output_padding: ints(7)?.into(),
                    groups: groups as i64,
                })
            };
            let packed = match input.zip(conv_args()).and_then(|(x, a)| static_positions(x, w.sizes(), &a)) {
                Some(positions) => PackedFilter::pack_for("prepack", isa, w, groups, positions),
                None => PackedFilter::pack("prepack", isa, w, groups),
            };
            Prepacked::Filter(packed.ok()?)
        }
        _ => return None,
    };
    Some(Arc::new(packed))
}

/// Computes the out-variant `op` into `out` (whose dtype and shape `out::meta` gave) with the
/// prepacked operand; calls that do not fit it (an `f64` call) take the plain out-variant. A
/// single row (a batch-1 linear layer) is a matrix-vector product over the same panels
/// (`kernels::gemv`).
pub(crate) fn compute(p: &Prepacked, op: OutOp, name: &'static str, args: &[IValue], out: &Tensor) -> Result<()> {
    if out.dtype() != DType::F32 {
        return super::out::compute(op, name, args, out, [false, false]).map(drop);
    }
    match (p, op) {
        (Prepacked::Rhs(b), OutOp::Mm | OutOp::Addmm) => {
            let a = tensor_arg(name, args, if op == OutOp::Mm { 0 } else { 1 })?;
            if a.dtype() != DType::F32 || a.dim() != 2 {
                return super::out::compute(op, name, args, out, [false, false]).map(drop);
            }
            let av = mat(name, a)?;
            let n = b.cols();
            // SAFETY: `out` is a planned or fresh tensor no other handle references (checked by
            // the caller), distinct from the operands (their lifetimes overlap).
            let c = unsafe { out.as_mut_slice::<f32>()? };
            let product = |ep: &Epilogue<'_>, c: &mut [f32]| product(name, av, b, ep, &Post::NONE, c);
            if op == OutOp::Mm {
                return product(&Epilogue::PLAIN, c);
            }
            let s = tensor_arg(name, args, 0)?;
            let beta = scalar_or(args.get(3), 1.0) as f32;
            let alpha = scalar_or(args.get(4), 1.0) as f32;
            let src = s.as_slice::<f32>()?;
            if let Some(ep) = linear_epilogue(src, n, beta, alpha) {
                return product(&ep, c);
            }
            if src.len() == c.len() {
                c.copy_from_slice(src);
            } else if src.len() == 1 {
                c.fill(src[0]);
            } else {
                return super::out::compute(op, name, args, out, [false, false]).map(drop);
            }
            product(&Epilogue { alpha, beta, bias: Bias::None, bias_scale: 1.0 }, c)
        }
        (Prepacked::Filter(w), OutOp::Convolution) => {
            let (g, _) =
                out_geometry(args).ok_or_else(|| KernelError::new(name, "internal error: the out-variant does not apply"))?;
            let x = tensor_arg(name, args, 0)?;
            let bias = match args.get(2) {
                Some(IValue::Tensor(b)) => Some(b.as_slice::<f32>()?),
                _ => None,
            };
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<f32>()? };
            conv_compute_packed(name, &g, x.as_slice::<f32>()?, w, bias, &Post::NONE, c)
        }
        _ => Err(KernelError::new(name, "internal error: a prepacked operand of another op")),
    }
}

/// The epilogue of `addmm(self, a, b)` (`n` columns) with `beta` and `alpha` when `self`
/// (`src`) is not read (`beta` is 0) or is one row broadcast down the result, the bias of a
/// linear layer; `None` for any other `self`.
fn linear_epilogue(src: &[f32], n: usize, beta: f32, alpha: f32) -> Option<Epilogue<'_>> {
    if beta == 0.0 {
        Some(Epilogue { alpha, ..Epilogue::PLAIN })
    } else if src.len() == n && n != 1 || src.len() == 1 && n == 1 {
        Some(Epilogue { alpha, beta: 0.0, bias: Bias::PerColumn(src), bias_scale: beta })
    } else {
        None
    }
}

/// `c = post(ep(a·b))` (`c` of `b.cols()` columns): a single row's matrix-vector product, then
/// the post-ops over it; more rows through the prepacked GEMM, the post-ops on each tile.
fn product(name: &'static str, a: MatView<'_, f32>, b: &PackedB, ep: &Epilogue<'_>, post: &Post<'_>, c: &mut [f32]) -> Result<()> {
    let n = b.cols();
    if a.rows == 1 {
        batch1(name, a, b, ep, c)?;
        Ok(post.apply_to(name, 1, n, c, n)?)
    } else {
        Ok(gemm_packed_b_post(name, a, b, ep, post, c, n)?)
    }
}

/// `c = ep(a·b)` for a single row `a` (`1 × k`), over the panels of `b`.
fn batch1(name: &'static str, a: MatView<'_, f32>, b: &PackedB, ep: &Epilogue<'_>, c: &mut [f32]) -> Result<()> {
    let cols = Columns::packed(name, b)?;
    if a.cols != cols.rows() {
        return Err(KernelError::new(name, format!("cannot multiply 1x{} and {}x{} matrices", a.cols, cols.rows(), cols.cols())));
    }
    let strided: Vec<f32>;
    let x = if a.cs == 1 || a.cols <= 1 {
        &a.data[a.off..a.off + a.cols]
    } else {
        strided = (0..a.cols).map(|p| a.at(0, p)).collect();
        &strided
    };
    let n = cols.cols();
    let y = c.get_mut(..n).ok_or_else(|| KernelError::new(name, "output buffer is too small"))?;
    Ok(gemv(name, x, cols, ep, y)?)
}

/// The name of the fused linear layer `fuse-epilogue` forms.
pub(crate) const LINEAR_KERNEL: &str = dialect_backend::kernels::LINEAR;

/// The native `backend.kernel {kernel = "linear"}`: `addmm(bias, x, w)` with a constant `w`
/// (packed here, once), its result viewed to the kernel's result shape, then the op the
/// kernel's `epilogue` attribute names: `"add"` (a residual operand, the fourth, added on the
/// side `residual` says: `"lhs"` for `add(r, ·)`, `"rhs"` for `add(·, r)`), `"gelu"` (exact)
/// or `"relu"`.
#[derive(Debug)]
struct LinearKernel {
    packed: PackedB,
    /// The constant `w` was packed from; a call with another `w` declines.
    weight: Tensor,
    beta: f32,
    alpha: f32,
    /// `Some(first)` with a residual operand.
    residual: Option<bool>,
    act: Activation,
    /// The sizes of the result (`m × n` elements, `n` the last).
    sizes: Vec<usize>,
}

/// The native implementation of the `linear` kernel `op`, whose operands' compile-time values
/// are `consts` (`None` for a value known only at run time); `Err` with the reason when there
/// is none (the region is then interpreted): an attribute it does not read, a weight that is
/// not a constant `f32` matrix, a result shape that is not static, a CPU without a prepacked
/// path.
pub(crate) fn linear_kernel(m: &Module, op: OpId, consts: &[Option<IValue>]) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    let attr = |k: &str| m.attr(op, k).and_then(|a| a.as_str());
    let (residual, act, operands) = match attr("epilogue") {
        Some("add") => match residual_side(m, op)? {
            Some(first) => (Some(first), Activation::None, 4),
            None => return Err("an add epilogue without a residual side".into()),
        },
        Some("gelu") => (None, Activation::Gelu, 3),
        Some("relu") => (None, Activation::Relu, 3),
        other => return Err(format!("unknown epilogue {other:?}")),
    };
    if m.operands(op).len() != operands || m.results(op).len() != 1 {
        return Err(format!("a linear kernel with {} operands and {} results", m.operands(op).len(), m.results(op).len()));
    }
    // `beta` and `alpha` are those of the region's product.
    let addmm = region_op(m, op, op::ADDMM)?;
    let scalar = |k: &str| m.attr(addmm, k).map_or(Some(1.0), |a| a.as_number()).map(|x| x as f32);
    let (beta, alpha) = scalar("beta").zip(scalar("alpha")).ok_or("addmm with a non-numeric beta or alpha")?;
    let sizes: Vec<usize> = m
        .value_type(m.results(op)[0])
        .as_tensor()
        .and_then(|t| t.static_dims())
        .ok_or("a result of unknown shape")?
        .into_iter()
        .map(|d| d as usize)
        .collect();
    let weight = match consts.get(2) {
        Some(Some(IValue::Tensor(t))) if t.dtype() == DType::F32 && t.dim() == 2 => t.clone(),
        _ => return Err("the weight is not a constant f32 matrix".into()),
    };
    let isa = Isa::simd().ok_or("this CPU has no prepacked path")?;
    let n = weight.sizes()[1];
    let packed = mat("linear", &weight).and_then(|v| Ok(PackedB::pack("linear", isa, v)?)).map_err(|e| e.to_string())?;
    if sizes.last() != Some(&n) {
        return Err(format!("a result of shape {sizes:?} from a product of {n} columns"));
    }
    Ok(Arc::new(LinearKernel { packed, weight, beta, alpha, residual, act, sizes }))
}

/// The first op of kind `kind` in the region of the fused kernel `op`.
pub(crate) fn region_op(m: &Module, op: OpId, kind: OpRef) -> std::result::Result<OpId, String> {
    let body = m.regions(op).first().and_then(|&r| m.region_blocks(r).first().copied()).ok_or("a kernel without a body")?;
    m.block_ops(body)
        .into_iter()
        .find(|&o| dialect_edge::as_aten(m.op_name(o)) == Some(kind))
        .ok_or_else(|| format!("no {} in the kernel's region", kind.name()))
}

/// The fused kernel's `residual` attribute: `Some(true)` when the residual is the left operand
/// of the sum (`"lhs"`), `Some(false)` for the right (`"rhs"`), `None` without one.
pub(crate) fn residual_side(m: &Module, op: OpId) -> std::result::Result<Option<bool>, String> {
    match m.attr(op, "residual").map(|a| a.as_str()) {
        None => Ok(None),
        Some(Some("lhs")) => Ok(Some(true)),
        Some(Some("rhs")) => Ok(Some(false)),
        Some(other) => Err(format!("unknown residual side {other:?}")),
    }
}

/// Whether `w` is `packed_from` itself (the same storage, offset, sizes and strides): a fused
/// kernel's call with the constant it packed when the program was compiled.
pub(crate) fn is_same_tensor(w: &Tensor, packed_from: &Tensor) -> bool {
    Arc::ptr_eq(w.storage(), packed_from.storage())
        && w.offset() == packed_from.offset()
        && w.sizes() == packed_from.sizes()
        && w.strides() == packed_from.strides()
}

/// The rows of `t` (of sizes `sizes`, the last `n`) as an `m × n` matrix with unit column
/// stride: its storage from the first element on and the distance between rows; `None` when
/// its layout is not of that form (the leading dims do not step by whole rows).
fn rows_of<'t>(t: &'t Tensor, sizes: &[usize]) -> Option<(&'t [f32], usize)> {
    if t.sizes() != sizes || t.dtype() != DType::F32 {
        return None;
    }
    let rank = sizes.len();
    let n = *sizes.last()?;
    if n > 1 && t.strides()[rank - 1] != 1 {
        return None;
    }
    // Row `r` of the matrix is at `r·ld`: each leading dim must step by the rows below it.
    let ld = (0..rank - 1).rev().find(|&d| sizes[d] > 1).map_or(n, |d| t.strides()[d]);
    let mut rows_below = 1;
    for d in (0..rank - 1).rev() {
        if sizes[d] > 1 && t.strides()[d] != ld.checked_mul(rows_below)? {
            return None;
        }
        rows_below = rows_below.checked_mul(sizes[d])?;
    }
    Some((t.storage_slice::<f32>().ok()?.get(t.offset()..)?, ld))
}

impl FusionKernel for LinearKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        const OP: &str = "linear";
        let decline = |why: &str| Ok(FusionOutcome::Declined(why.to_string()));
        let [bias, x, w, rest @ ..] = inputs else { return decline("too few operands") };
        if !is_same_tensor(w, &self.weight) {
            return decline("a weight other than the packed constant");
        }
        if x.dtype() != DType::F32 || x.dim() != 2 || bias.dtype() != DType::F32 {
            return decline("operands other than an f32 matrix and bias");
        }
        let (m, n) = (x.sizes()[0], self.packed.cols());
        if m.checked_mul(n) != Some(self.sizes.iter().product()) {
            return decline("a product of another shape");
        }
        // A bias whose elements are not one slice reads as none, which only `beta` 0 accepts.
        let Some(ep) = linear_epilogue(bias.as_slice::<f32>().unwrap_or(&[]), n, self.beta, self.alpha) else {
            return decline("a bias other than one row");
        };
        let copy: Tensor;
        let addend = match (self.residual, rest) {
            (None, []) => None,
            (Some(first), [r]) => {
                if r.sizes() != self.sizes.as_slice() || r.dtype() != DType::F32 {
                    return decline("a residual that is not an f32 tensor of the result's shape");
                }
                let (data, ld) = match rows_of(r, &self.sizes) {
                    Some(rows) => rows,
                    None => {
                        // Rows that are not contiguous (a transposed residual): a copy that is.
                        copy = r.contiguous()?;
                        rows_of(&copy, &self.sizes)
                            .ok_or_else(|| KernelError::new(OP, "internal error: a contiguous copy without rows"))?
                    }
                };
                Some(Addend { data, ld, first })
            }
            _ => return decline("an operand count other than the kernel's"),
        };
        let post = Post { addend, act: self.act, ..Post::NONE };
        let av = mat(OP, x)?;
        let out = alloc.output(0, DType::F32, &self.sizes)?;
        // SAFETY: `out` is a fresh or planned tensor no other handle references; the memory
        // plan never gives an instruction's result the storage of a value it reads (their
        // lifetimes overlap at the instruction), so it is distinct from every operand.
        let c = unsafe { out.as_mut_slice::<f32>()? };
        product(OP, av, &self.packed, &ep, &post, c)?;
        Ok(FusionOutcome::Ran(vec![out]))
    }
}
