//! Out-variants: a few ops computed straight into planned storage (Static Runtime's out
//! variants), so that steady-state runs allocate nothing for their results.
//!
//! Each out-variant covers the common layout of its op (floating-point, contiguous, simple
//! broadcasting) and reports when it does not apply; the instruction then calls the op's
//! registered kernel instead. Matrix products go through the kernels' own GEMM entry point,
//! so planned and unplanned runs compute the same numbers.

use dialect_aten::op;
use ir::{DType, OpRef};

use crate::kernels::Args;
use crate::kernels::elementwise::{FloatFn, apply_f32_into, apply_f64_into};
use crate::kernels::linalg::{MatView, Real, gemm, gemm_batched};
use crate::kernels::unary::{Gelu, Sigmoid, Tanh};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;

/// Most dimensions an out-variant result may have (the shape is kept on the stack).
pub(crate) const MAX_RANK: usize = 8;

/// An op with an out-variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutOp {
    Mm,
    Addmm,
    Relu,
    Add,
    Sub,
    Mul,
    Sigmoid,
    Tanh,
    Gelu,
    Bmm,
    Convolution,
    /// `clone`: a contiguous copy of any layout and dtype.
    Clone,
    /// `_to_copy` on the CPU: a contiguous copy of any layout, converted to a dtype.
    ToCopy,
    /// `_softmax` along the last dim of a contiguous `f32` tensor.
    Softmax,
    /// `native_layer_norm`; the mean and inverse std are made only when read.
    LayerNorm,
    /// Batch norm with running statistics (`_native_batch_norm_legit_no_training`, and
    /// `native_batch_norm` with `training=False`); the empty statistics are made only when read.
    BatchNormEval,
    /// `view`/`_unsafe_view` of a contiguous tensor: no result storage, the layout is reused
    /// from the instruction's previous call.
    View,
    /// `permute`, likewise.
    Permute,
    /// `slice.Tensor`, likewise (the result's offset is computed per call).
    Slice,
}

impl OutOp {
    /// Whether the op makes a view of its input (its result aliases the input; nothing is
    /// written and nothing is planned).
    pub(crate) fn is_view(self) -> bool {
        matches!(self, OutOp::View | OutOp::Permute | OutOp::Slice)
    }
}

/// Every out-variant with the ops it computes, the first one naming it in messages: the one
/// declaration both directions of the correspondence are read from.
const OUT_VARIANTS: &[(OutOp, &[OpRef])] = &[
    (OutOp::Mm, &[op::MM]),
    (OutOp::Addmm, &[op::ADDMM]),
    (OutOp::Relu, &[op::RELU]),
    (OutOp::Add, &[op::ADD_TENSOR]),
    (OutOp::Sub, &[op::SUB_TENSOR]),
    (OutOp::Mul, &[op::MUL_TENSOR]),
    (OutOp::Sigmoid, &[op::SIGMOID]),
    (OutOp::Tanh, &[op::TANH]),
    (OutOp::Gelu, &[op::GELU]),
    (OutOp::Bmm, &[op::BMM]),
    (OutOp::Convolution, &[op::CONVOLUTION]),
    (OutOp::Clone, &[op::CLONE]),
    (OutOp::ToCopy, &[op::_TO_COPY]),
    (OutOp::Softmax, &[op::_SOFTMAX]),
    (OutOp::LayerNorm, &[op::NATIVE_LAYER_NORM]),
    (OutOp::BatchNormEval, &[op::_NATIVE_BATCH_NORM_LEGIT_NO_TRAINING, op::NATIVE_BATCH_NORM]),
    (OutOp::View, &[op::VIEW, op::_UNSAFE_VIEW]),
    (OutOp::Permute, &[op::PERMUTE]),
    (OutOp::Slice, &[op::SLICE_TENSOR]),
];

/// The out-variant of the op whose kernel is registered as `name`, if there is one.
pub(crate) fn lookup(name: &str) -> Option<OutOp> {
    OUT_VARIANTS.iter().find(|(_, ops)| ops.iter().any(|o| o.is(name))).map(|&(v, _)| v)
}

impl OutOp {
    /// The op an out-variant computes, for messages.
    pub(crate) fn op(self) -> OpRef {
        // Every variant is declared in the table; the first entry is a valid fallback.
        OUT_VARIANTS.iter().find(|(v, _)| *v == self).map_or(op::MM, |(_, ops)| ops[0])
    }
}

/// The dtype and shape of a result, without heap allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub dtype: DType,
    pub rank: usize,
    pub sizes: [usize; MAX_RANK],
}

impl Meta {
    pub fn sizes(&self) -> &[usize] {
        &self.sizes[..self.rank]
    }

    pub fn nbytes(&self) -> usize {
        self.sizes().iter().product::<usize>() * self.dtype.size_bytes()
    }

    pub(crate) fn of(dtype: DType, sizes: &[usize]) -> Option<Meta> {
        if sizes.len() > MAX_RANK {
            return None;
        }
        let mut m = Meta { dtype, rank: sizes.len(), sizes: [0; MAX_RANK] };
        m.sizes[..sizes.len()].copy_from_slice(sizes);
        Some(m)
    }
}

fn float_tensor(v: &IValue) -> Option<&Tensor> {
    match v {
        IValue::Tensor(t) if matches!(t.dtype(), DType::F32 | DType::F64) => Some(t),
        _ => None,
    }
}

/// Whether `b` broadcasts onto `a`'s shape in a way the loops below handle: same shape, a
/// single element, or a suffix of `a`'s shape (both contiguous).
fn simple_broadcast(a: &Tensor, b: &Tensor) -> bool {
    a.is_contiguous()
        && b.is_contiguous()
        && (b.numel() == 1 && b.dim() <= a.dim() || a.sizes().ends_with(b.sizes()) && b.numel() > 0)
}

/// The result's dtype and shape when the out-variant applies to `args`, `None` otherwise.
pub(crate) fn meta(op: OutOp, args: &[IValue]) -> Option<Meta> {
    match op {
        OutOp::View | OutOp::Permute | OutOp::Slice => None,
        OutOp::Mm => {
            let (a, b) = (float_tensor(args.first()?)?, float_tensor(args.get(1)?)?);
            if a.dim() != 2 || b.dim() != 2 || a.dtype() != b.dtype() || a.sizes()[1] != b.sizes()[0] {
                return None;
            }
            Meta::of(a.dtype(), &[a.sizes()[0], b.sizes()[1]])
        }
        OutOp::Addmm => {
            let (s, a, b) = (float_tensor(args.first()?)?, float_tensor(args.get(1)?)?, float_tensor(args.get(2)?)?);
            if a.dim() != 2 || b.dim() != 2 || a.dtype() != b.dtype() || s.dtype() != a.dtype() {
                return None;
            }
            if a.sizes()[1] != b.sizes()[0] || !scalar_arg(args.get(3)) || !scalar_arg(args.get(4)) {
                return None;
            }
            let (m, n) = (a.sizes()[0], b.sizes()[1]);
            let ok_self = s.is_contiguous()
                && (s.numel() == 1 && s.dim() <= 2 || s.sizes() == [n] || s.sizes() == [1, n] || s.sizes() == [m, n]);
            if !ok_self {
                return None;
            }
            Meta::of(a.dtype(), &[m, n])
        }
        OutOp::Relu => {
            let a = float_tensor(args.first()?)?;
            if !a.is_contiguous() {
                return None;
            }
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::Sigmoid | OutOp::Tanh => {
            let a = float_tensor(args.first()?)?;
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::Gelu => {
            let a = float_tensor(args.first()?)?;
            gelu_mode(args.get(1))?;
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::Bmm => {
            let (a, b) = (float_tensor(args.first()?)?, float_tensor(args.get(1)?)?);
            if a.dim() != 3 || b.dim() != 3 || a.dtype() != b.dtype() {
                return None;
            }
            let (sa, sb) = (a.sizes(), b.sizes());
            if sa[0] != sb[0] || sa[2] != sb[1] {
                return None;
            }
            Meta::of(a.dtype(), &[sa[0], sa[1], sb[2]])
        }
        OutOp::Convolution => {
            let (_, sizes) = crate::kernels::conv::out_geometry(args)?;
            Meta::of(args.first()?.as_tensor().ok()?.dtype(), &sizes)
        }
        OutOp::Add | OutOp::Sub | OutOp::Mul => {
            let (a, b) = (float_tensor(args.first()?)?, float_tensor(args.get(1)?)?);
            if a.dtype() != b.dtype() || !simple_broadcast(a, b) {
                return None;
            }
            if op != OutOp::Mul && !scalar_arg(args.get(2)) {
                return None;
            }
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::Clone => {
            let IValue::Tensor(a) = args.first()? else { return None };
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::ToCopy => {
            let a = Args::new(op::_TO_COPY, args, 1).ok()?;
            let t = a.tensor(0).ok()?;
            // Another device is the registered kernel's error.
            if !matches!(args.get(3), None | Some(IValue::None)) {
                return None;
            }
            Meta::of(a.opt_dtype(1).ok()?.unwrap_or(t.dtype()), t.sizes())
        }
        OutOp::Softmax => {
            let a = float_tensor(args.first()?)?;
            let last = matches!(args.get(1)?, IValue::Int(d) if *d == -1 || *d == a.dim() as i64 - 1);
            if a.dtype() != DType::F32 || a.dim() == 0 || !last || !a.is_contiguous() {
                return None;
            }
            Meta::of(a.dtype(), a.sizes())
        }
        OutOp::LayerNorm => {
            let x = float_tensor(args.first()?)?;
            let IValue::IntList(shape) = args.get(1)? else { return None };
            let nd = shape.len();
            if !x.is_contiguous() || nd == 0 || nd > x.dim() {
                return None;
            }
            let trailing = &x.sizes()[x.dim() - nd..];
            if trailing.iter().zip(shape.iter()).any(|(&s, &n)| s as i64 != n) || !matches!(args.get(4)?, IValue::Float(_)) {
                return None;
            }
            let inner: usize = trailing.iter().product();
            if !param_ok(args.get(2), x.dtype(), inner) || !param_ok(args.get(3), x.dtype(), inner) {
                return None;
            }
            Meta::of(x.dtype(), x.sizes())
        }
        OutOp::BatchNormEval => {
            let x = float_tensor(args.first()?)?;
            // `native_batch_norm(x, w, b, rm, rv, training, momentum, eps)` or
            // `_native_batch_norm_legit_no_training(x, w, b, rm, rv, momentum, eps)`.
            let eps_at = match args.len() {
                8 if matches!(args.get(5), Some(IValue::Bool(false))) => 7,
                7 => 6,
                _ => return None,
            };
            if !x.is_contiguous() || x.dim() < 2 || !matches!(args.get(eps_at)?, IValue::Float(_)) {
                return None;
            }
            let c = x.sizes()[1];
            let stats = [args.get(3), args.get(4)];
            if stats.iter().any(|s| !matches!(s, Some(IValue::Tensor(_))) || !param_ok(*s, x.dtype(), c)) {
                return None;
            }
            if !param_ok(args.get(1), x.dtype(), c) || !param_ok(args.get(2), x.dtype(), c) {
                return None;
            }
            Meta::of(x.dtype(), x.sizes())
        }
    }
}

/// An optional per-feature parameter the norm out-variants read directly: absent, or a
/// contiguous tensor of the input's dtype with `n` elements.
fn param_ok(v: Option<&IValue>, dtype: DType, n: usize) -> bool {
    match v {
        None | Some(IValue::None) => true,
        Some(IValue::Tensor(t)) => t.dtype() == dtype && t.is_contiguous() && t.numel() == n,
        _ => false,
    }
}

/// The elements of an optional parameter accepted by `param_ok`.
fn opt_param<T: Real>(args: &[IValue], i: usize) -> Result<Option<&[T]>> {
    match args.get(i) {
        Some(IValue::Tensor(t)) => Ok(Some(t.as_slice::<T>()?)),
        _ => Ok(None),
    }
}

/// GELU's `approximate` argument: `Some(true)` for "tanh", `Some(false)` for "none" or absent.
fn gelu_mode(v: Option<&IValue>) -> Option<bool> {
    match v {
        None | Some(IValue::None) => Some(false),
        Some(IValue::Str(s)) if &**s == "none" => Some(false),
        Some(IValue::Str(s)) if &**s == "tanh" => Some(true),
        _ => None,
    }
}

/// Applies a float function to `a` into `out` (same dtype, any layout of `a`).
fn unary_into<T: Real, F: FloatFn>(name: &'static str, a: &Tensor, f: &F, out: &Tensor) -> Result<()> {
    // SAFETY: `out` is planned or fresh storage no other handle references (checked by the
    // caller), distinct from `a`'s (their lifetimes overlap, so the plan never shares them).
    match out.dtype() {
        DType::F32 => apply_f32_into(a, f, unsafe { out.as_mut_slice::<f32>()? }),
        DType::F64 => apply_f64_into(a, f, unsafe { out.as_mut_slice::<f64>()? }),
        d => Err(KernelError::new(name, format!("out-variant does not support {}", d.torch_name()))),
    }
}

fn scalar_arg(v: Option<&IValue>) -> bool {
    matches!(v, None | Some(IValue::None | IValue::Int(_) | IValue::Float(_) | IValue::Bool(_)))
}

pub(super) fn scalar_or(v: Option<&IValue>, default: f64) -> f64 {
    match v {
        Some(IValue::Int(i)) => *i as f64,
        Some(IValue::Float(f)) => *f,
        Some(IValue::Bool(b)) => *b as u8 as f64,
        _ => default,
    }
}

/// The further results of an out-variant (the statistics of the norms), made only when read.
pub(crate) type Extra = [Option<Tensor>; 2];

/// Computes `op` into `out`, whose dtype and shape are `meta(op, args)`. `out` must be a
/// contiguous tensor that nothing else references. `want[k]` says whether result `k + 1` of a
/// multi-result op is read; those are returned fresh (an unread one is not made).
pub(crate) fn compute(op: OutOp, name: &'static str, args: &[IValue], out: &Tensor, want: [bool; 2]) -> Result<Extra> {
    if op == OutOp::Clone {
        let a = tensor_arg(name, args, 0)?;
        // SAFETY: `out` is planned or fresh storage no other handle references (checked by the
        // caller); `a` lives over the whole instruction, so the plan never places them together.
        crate::dispatch_dtype!(out.dtype(), T => a.copy_to_slice::<T>(unsafe { out.as_mut_slice::<T>()? })?);
        return Ok([None, None]);
    }
    if op == OutOp::ToCopy {
        let a = tensor_arg(name, args, 0)?;
        // SAFETY: as for `clone`.
        crate::dispatch_all_dtypes!(a.dtype(), S => crate::dispatch_all_dtypes!(out.dtype(), D => {
            a.cast_into::<S, D>(unsafe { out.as_mut_slice::<D>()? })?
        }));
        return Ok([None, None]);
    }
    match out.dtype() {
        DType::F32 => compute_t::<f32>(op, name, args, out, want),
        DType::F64 => compute_t::<f64>(op, name, args, out, want),
        d => Err(KernelError::new(name, format!("out-variant does not support {}", d.torch_name()))),
    }
}

pub(super) fn tensor_arg<'a>(name: &'static str, args: &'a [IValue], i: usize) -> Result<&'a Tensor> {
    args.get(i)
        .ok_or_else(|| KernelError::new(name, format!("missing argument {i}")))?
        .as_tensor()
        .map_err(|e| e.in_op(name))
}

/// The 2-d tensor `t` as a matrix view of its storage.
pub(super) fn mat<'a, T: Real>(name: &'static str, t: &'a Tensor) -> Result<MatView<'a, T>> {
    let data = t.storage_slice::<T>()?;
    Ok(MatView::new(name, data, t.offset(), t.sizes()[0], t.sizes()[1], t.strides()[0], t.strides()[1])?)
}

fn compute_t<T: Real>(op: OutOp, name: &'static str, args: &[IValue], out: &Tensor, want: [bool; 2]) -> Result<Extra> {
    match op {
        OutOp::Clone | OutOp::ToCopy | OutOp::View | OutOp::Permute | OutOp::Slice => {
            Err(KernelError::new(name, "internal error: not an out-variant that computes"))
        }
        OutOp::Softmax => {
            let src = tensor_arg(name, args, 0)?.as_slice::<f32>()?;
            // SAFETY: as for the other out-variants below.
            let o = unsafe { out.as_mut_slice::<f32>()? };
            crate::kernels::reduce::softmax_f32_rows_into(src, *out.sizes().last().unwrap_or(&1), o);
            Ok([None, None])
        }
        OutOp::LayerNorm => {
            let x = tensor_arg(name, args, 0)?;
            let nd = match args.get(1) {
                Some(IValue::IntList(s)) => s.len(),
                _ => return Err(KernelError::new(name, "normalized_shape must be a list of ints")),
            };
            let eps = scalar_or(args.get(4), 1e-5);
            let (w, b) = (opt_param::<T>(args, 2)?, opt_param::<T>(args, 3)?);
            let axis = x.dim() - nd;
            // SAFETY: as below; `x` is a different storage.
            let y = unsafe { out.as_mut_slice::<T>()? };
            let mut stat_sizes = [1usize; MAX_RANK];
            stat_sizes[..axis].copy_from_slice(&x.sizes()[..axis]);
            let stat_sizes = &stat_sizes[..x.dim()];
            let outer: usize = x.sizes()[..axis].iter().product();
            let mean_t = if want[0] { Some(Tensor::zeros(T::DTYPE, stat_sizes)?) } else { None };
            let rstd_t = if want[1] { Some(Tensor::zeros(T::DTYPE, stat_sizes)?) } else { None };
            // SAFETY: the statistics are fresh tensors made just above.
            let means = mean_t.as_ref().map(|t| unsafe { t.as_mut_slice::<T>() }).transpose()?;
            let rstds = rstd_t.as_ref().map(|t| unsafe { t.as_mut_slice::<T>() }).transpose()?;
            crate::kernels::norm::layer_norm_rows(x.as_slice::<T>()?, y, outer, w, b, eps, means, rstds);
            Ok([mean_t, rstd_t])
        }
        OutOp::BatchNormEval => {
            let x = tensor_arg(name, args, 0)?;
            let eps = scalar_or(args.get(if args.len() == 8 { 7 } else { 6 }), 1e-5);
            let (w, b) = (opt_param::<T>(args, 1)?, opt_param::<T>(args, 2)?);
            let (rm, rv) = (opt_param::<T>(args, 3)?, opt_param::<T>(args, 4)?);
            let (Some(rm), Some(rv)) = (rm, rv) else {
                return Err(KernelError::new(name, "running_mean and running_var must be given when not training"));
            };
            // SAFETY: as below; `x` is a different storage.
            let y = unsafe { out.as_mut_slice::<T>()? };
            let (n, c) = (x.sizes()[0], x.sizes()[1]);
            let invstd = |ch: usize| 1.0 / (rv[ch].to_f64() + eps).sqrt();
            crate::kernels::norm::batch_norm_rows(x.as_slice::<T>()?, y, n, c, w, b, |ch| rm[ch].to_f64(), invstd);
            let empty = |k: usize| want[k].then(|| Tensor::zeros(T::DTYPE, &[0])).transpose();
            Ok([empty(0)?, empty(1)?])
        }
        OutOp::Mm => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let (av, bv) = (mat::<T>(name, a)?, mat::<T>(name, b)?);
            let n = b.sizes()[1];
            // SAFETY: `out` is a planned tensor no other handle references (checked by the caller).
            let c = unsafe { out.as_mut_slice::<T>()? };
            gemm(name, T::ONE, av, bv, T::ZERO, c, n)?;
            Ok([None, None])
        }
        OutOp::Addmm => {
            let (s, a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?, tensor_arg(name, args, 2)?);
            let beta = scalar_or(args.get(3), 1.0);
            let alpha = scalar_or(args.get(4), 1.0);
            let (av, bv) = (mat::<T>(name, a)?, mat::<T>(name, b)?);
            let n = b.sizes()[1];
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            if beta != 0.0 {
                let src = s.as_slice::<T>()?;
                if src.len() == c.len() {
                    c.copy_from_slice(src);
                } else if src.len() == 1 {
                    c.fill(src[0]);
                } else {
                    for row in c.chunks_mut(n.max(1)) {
                        row.copy_from_slice(src);
                    }
                }
            }
            gemm(name, T::of(alpha), av, bv, T::of(beta), c, n)?;
            Ok([None, None])
        }
        OutOp::Bmm => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let (ad, bd) = (a.storage_slice::<T>()?, b.storage_slice::<T>()?);
            let ([batch, m, k], n) = ([a.sizes()[0], a.sizes()[1], a.sizes()[2]], b.sizes()[2]);
            let (sa, sb) = (a.strides(), b.strides());
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            let views = |bi: usize| -> Result<(MatView<'_, T>, MatView<'_, T>)> {
                Ok((
                    MatView::new(name, ad, a.offset() + bi * sa[0], m, k, sa[1], sa[2])?,
                    MatView::new(name, bd, b.offset() + bi * sb[0], k, n, sb[1], sb[2])?,
                ))
            };
            gemm_batched(name, batch, (m, k, n), T::ONE, T::ZERO, views, c)?;
            Ok([None, None])
        }
        OutOp::Convolution => {
            let (g, _) = crate::kernels::conv::out_geometry(args)
                .ok_or_else(|| KernelError::new(name, "internal error: the out-variant does not apply"))?;
            let (x, w) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let bias = match args.get(2) {
                Some(IValue::Tensor(b)) => Some(b.as_slice::<T>()?),
                _ => None,
            };
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            crate::kernels::conv::conv_compute(name, &g, x.as_slice::<T>()?, w.as_slice::<T>()?, bias, c)?;
            Ok([None, None])
        }
        OutOp::Relu => {
            let a = tensor_arg(name, args, 0)?;
            let src = a.as_slice::<T>()?;
            // SAFETY: as above; `a` is a different storage (its lifetime overlaps `out`'s).
            let c = unsafe { out.as_mut_slice::<T>()? };
            crate::kernels::wide::widest(
                #[inline(always)]
                || {
                    for (o, &x) in c.iter_mut().zip(src) {
                        *o = if x > T::ZERO || x.is_nan() { x } else { T::ZERO };
                    }
                },
            );
            Ok([None, None])
        }
        OutOp::Sigmoid => unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Sigmoid, out).map(|()| [None, None]),
        OutOp::Tanh => unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Tanh, out).map(|()| [None, None]),
        OutOp::Gelu => {
            let tanh = gelu_mode(args.get(1)).ok_or_else(|| KernelError::new(name, "approximate must be 'none' or 'tanh'"))?;
            unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Gelu { tanh }, out).map(|()| [None, None])
        }
        OutOp::Add | OutOp::Sub | OutOp::Mul => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let sa = a.as_slice::<T>()?;
            let sb = b.as_slice::<T>()?;
            let alpha = scalar_or(args.get(2), 1.0);
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            // One loop per operation, so no element pays for choosing it.
            let k = T::of(alpha);
            crate::kernels::wide::widest(
                #[inline(always)]
                || match op {
                    OutOp::Add if alpha == 1.0 => zip_broadcast(c, sa, sb, |x, y| x + y),
                    OutOp::Add => zip_broadcast(c, sa, sb, |x, y| x + k * y),
                    OutOp::Sub if alpha == 1.0 => zip_broadcast(c, sa, sb, |x, y| x - y),
                    OutOp::Sub => zip_broadcast(c, sa, sb, |x, y| x - k * y),
                    _ => zip_broadcast(c, sa, sb, |x, y| x * y),
                },
            );
            Ok([None, None])
        }
    }
}

/// `c = f(a, b)` where `b` has `a`'s length, one element, or divides it (a trailing-dims
/// broadcast: `b` repeats along `a`), as [`meta`]'s `simple_broadcast` admits.
#[inline(always)]
fn zip_broadcast<T: Real>(c: &mut [T], sa: &[T], sb: &[T], f: impl Fn(T, T) -> T) {
    if sb.len() == sa.len() {
        for ((o, &x), &y) in c.iter_mut().zip(sa).zip(sb) {
            *o = f(x, y);
        }
    } else if sb.len() == 1 {
        let y = sb[0];
        for (o, &x) in c.iter_mut().zip(sa) {
            *o = f(x, y);
        }
    } else {
        let n = sb.len();
        for (orow, arow) in c.chunks_mut(n).zip(sa.chunks(n)) {
            for ((o, &x), &y) in orow.iter_mut().zip(arow).zip(sb) {
                *o = f(x, y);
            }
        }
    }
}

/// The layout of a view op's result: its dtype and sizes, strides and storage offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ViewLayout {
    pub meta: Meta,
    pub strides: [usize; MAX_RANK],
    pub offset: usize,
}

/// The layout of a view op's result when the fast path applies: `view` of a contiguous
/// tensor (one size may be -1), `permute`, and `slice.Tensor` (with `Tensor::slice`'s
/// clamping of the bounds). `None` leaves the op to its kernel (which also reports bad
/// arguments).
pub(crate) fn view_layout(op: OutOp, args: &[IValue]) -> Option<ViewLayout> {
    let IValue::Tensor(a) = args.first()? else { return None };
    if op == OutOp::Slice {
        return slice_layout(a, args);
    }
    let IValue::IntList(list) = args.get(1)? else { return None };
    if list.len() > MAX_RANK {
        return None;
    }
    let mut strides = [0usize; MAX_RANK];
    let at = |meta: Option<Meta>, strides| Some(ViewLayout { meta: meta?, strides, offset: a.offset() });
    match op {
        OutOp::View => {
            if !a.is_contiguous() {
                return None;
            }
            let mut sizes = [0usize; MAX_RANK];
            let mut infer = None;
            let mut known = 1usize;
            for (i, &s) in list.iter().enumerate() {
                match s {
                    -1 if infer.is_none() => infer = Some(i),
                    s if s >= 0 => {
                        sizes[i] = s as usize;
                        known = known.checked_mul(s as usize)?;
                    }
                    _ => return None,
                }
            }
            let numel = a.numel();
            if let Some(i) = infer {
                if known == 0 || numel % known != 0 {
                    return None;
                }
                sizes[i] = numel / known;
            } else if known != numel {
                return None;
            }
            let rank = list.len();
            let mut acc = 1usize;
            for d in (0..rank).rev() {
                strides[d] = acc;
                acc = acc.saturating_mul(sizes[d].max(1));
            }
            at(Meta::of(a.dtype(), &sizes[..rank]), strides)
        }
        OutOp::Permute => {
            let rank = a.dim();
            if list.len() != rank {
                return None;
            }
            let mut sizes = [0usize; MAX_RANK];
            let mut used = [false; MAX_RANK];
            for (i, &d) in list.iter().enumerate() {
                let d = if d < 0 { d + rank as i64 } else { d };
                if d < 0 || d >= rank as i64 || std::mem::replace(&mut used[d as usize], true) {
                    return None;
                }
                sizes[i] = a.sizes()[d as usize];
                strides[i] = a.strides()[d as usize];
            }
            at(Meta::of(a.dtype(), &sizes[..rank]), strides)
        }
        _ => None,
    }
}

/// [`view_layout`] of `slice.Tensor(a, dim, start, end, step)`.
fn slice_layout(a: &Tensor, args: &[IValue]) -> Option<ViewLayout> {
    let int_or = |i: usize, default: Option<i64>| match args.get(i) {
        None | Some(IValue::None) => Some(default),
        Some(IValue::Int(v)) => Some(Some(*v)),
        _ => None,
    };
    let rank = a.dim();
    let dim = int_or(1, Some(0))??;
    let (start, end, step) = (int_or(2, None)?, int_or(3, None)?, int_or(4, Some(1))??);
    if rank == 0 || rank > MAX_RANK || step <= 0 {
        return None;
    }
    let d = if dim < 0 { dim + rank as i64 } else { dim };
    if !(0..rank as i64).contains(&d) {
        return None;
    }
    let d = d as usize;
    let len = a.sizes()[d] as i64;
    let clamp = |v: i64| (if v < 0 { v + len } else { v }).clamp(0, len);
    let s = start.map_or(0, clamp);
    let e = end.map_or(len, clamp).max(s);
    let n = (e - s + step - 1) / step;
    let mut meta = Meta::of(a.dtype(), a.sizes())?;
    meta.sizes[d] = n as usize;
    // An empty result is left to the kernel: its offset may lie past an empty storage.
    if meta.sizes().contains(&0) {
        return None;
    }
    let mut strides = [0usize; MAX_RANK];
    strides[..rank].copy_from_slice(a.strides());
    strides[d] = a.strides()[d].checked_mul(step as usize)?;
    let offset = if n == 0 { a.offset() } else { a.offset() + s as usize * a.strides()[d] };
    Some(ViewLayout { meta, strides, offset })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's layout of `slice.Tensor` is the kernel's, for every bound the kernel
    /// clamps (negative, past the end, empty), every step, and a base that is itself a view.
    #[test]
    fn slice_layouts_match_the_kernel() {
        let base = Tensor::from_vec((0..60).map(|i| i as f32).collect::<Vec<_>>(), &[3, 4, 5]).unwrap();
        let views = [base.clone(), base.slice(2, Some(1), None, 2).unwrap(), base.slice(0, Some(1), Some(3), 1).unwrap()];
        let bounds = [None, Some(-7), Some(-2), Some(0), Some(1), Some(3), Some(9)];
        let mut checked = 0;
        for a in &views {
            for dim in -3..3i64 {
                for &start in &bounds {
                    for &end in &bounds {
                        for step in 1..4i64 {
                            let args = [
                                IValue::Tensor(a.clone()),
                                IValue::Int(dim),
                                start.map_or(IValue::None, IValue::Int),
                                end.map_or(IValue::None, IValue::Int),
                                IValue::Int(step),
                            ];
                            let want = a.slice(dim, start, end, step).unwrap();
                            let Some(got) = view_layout(OutOp::Slice, &args) else {
                                assert_eq!(want.numel(), 0, "{args:?}");
                                continue;
                            };
                            assert_eq!(got.meta.sizes(), want.sizes(), "{args:?}");
                            assert_eq!(&got.strides[..got.meta.rank], want.strides(), "{args:?}");
                            assert_eq!(got.offset, want.offset(), "{args:?}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 3 * 6 * 7 * 7, "{checked}");
    }

    /// Arguments the kernel rejects, and empty results (whose offset the kernel may place past
    /// an empty storage), are left to the kernel.
    #[test]
    fn bad_slices_are_left_to_the_kernel() {
        let a = IValue::Tensor(Tensor::from_vec(vec![0f32; 6], &[2, 3]).unwrap());
        let scalar = IValue::Tensor(Tensor::from_vec(vec![1f32], &[]).unwrap());
        let empty = IValue::Tensor(Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap());
        for args in [
            vec![a.clone(), IValue::Int(2), IValue::None, IValue::None, IValue::Int(1)],
            vec![a.clone(), IValue::Int(-3), IValue::None, IValue::None, IValue::Int(1)],
            vec![a.clone(), IValue::Int(0), IValue::None, IValue::None, IValue::Int(0)],
            vec![a.clone(), IValue::Int(0), IValue::Float(1.0), IValue::None, IValue::Int(1)],
            vec![scalar, IValue::Int(0), IValue::None, IValue::None, IValue::Int(1)],
            vec![a.clone(), IValue::Int(1), IValue::Int(2), IValue::Int(1), IValue::Int(1)],
            vec![empty, IValue::Int(1), IValue::Int(1), IValue::None, IValue::Int(1)],
        ] {
            assert_eq!(view_layout(OutOp::Slice, &args), None, "{args:?}");
        }
    }
}
