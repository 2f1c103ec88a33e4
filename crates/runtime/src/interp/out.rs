//! Out-variants: a few ops computed straight into planned storage (Static Runtime's out
//! variants), so that steady-state runs allocate nothing for their results.
//!
//! Each out-variant covers the common layout of its op (floating-point, contiguous, simple
//! broadcasting) and reports when it does not apply; the instruction then calls the op's
//! registered kernel instead. Matrix products go through the kernels' own GEMM entry point,
//! so planned and unplanned runs compute the same numbers.

use ir::DType;

use crate::kernels::elementwise::{FloatFn, apply_f32_into, apply_f64_into};
use crate::kernels::linalg::{MatView, Real, gemm};
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
}

/// The out-variant of an op name, if there is one.
pub(crate) fn lookup(name: &str) -> Option<OutOp> {
    Some(match name {
        "aten.mm" => OutOp::Mm,
        "aten.addmm" => OutOp::Addmm,
        "aten.relu" => OutOp::Relu,
        "aten.add.Tensor" => OutOp::Add,
        "aten.sub.Tensor" => OutOp::Sub,
        "aten.mul.Tensor" => OutOp::Mul,
        "aten.sigmoid" => OutOp::Sigmoid,
        "aten.tanh" => OutOp::Tanh,
        "aten.gelu" => OutOp::Gelu,
        "aten.bmm" => OutOp::Bmm,
        "aten.convolution" => OutOp::Convolution,
        _ => return None,
    })
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

fn scalar_or(v: Option<&IValue>, default: f64) -> f64 {
    match v {
        Some(IValue::Int(i)) => *i as f64,
        Some(IValue::Float(f)) => *f,
        Some(IValue::Bool(b)) => *b as u8 as f64,
        _ => default,
    }
}

/// Computes `op` into `out`, whose dtype and shape are `meta(op, args)`. `out` must be a
/// contiguous tensor that nothing else references.
pub(crate) fn compute(op: OutOp, name: &'static str, args: &[IValue], out: &Tensor) -> Result<()> {
    match out.dtype() {
        DType::F32 => compute_t::<f32>(op, name, args, out),
        DType::F64 => compute_t::<f64>(op, name, args, out),
        d => Err(KernelError::new(name, format!("out-variant does not support {}", d.torch_name()))),
    }
}

fn tensor_arg<'a>(name: &'static str, args: &'a [IValue], i: usize) -> Result<&'a Tensor> {
    args.get(i)
        .ok_or_else(|| KernelError::new(name, format!("missing argument {i}")))?
        .as_tensor()
        .map_err(|e| e.in_op(name))
}

fn mat<'a, T: Real>(name: &'static str, t: &'a Tensor) -> Result<MatView<'a, T>> {
    let data = t.storage_slice::<T>()?;
    MatView::new(name, data, t.offset(), t.sizes()[0], t.sizes()[1], t.strides()[0], t.strides()[1])
}

fn compute_t<T: Real>(op: OutOp, name: &'static str, args: &[IValue], out: &Tensor) -> Result<()> {
    match op {
        OutOp::Mm => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let (av, bv) = (mat::<T>(name, a)?, mat::<T>(name, b)?);
            let n = b.sizes()[1];
            // SAFETY: `out` is a planned tensor no other handle references (checked by the caller).
            let c = unsafe { out.as_mut_slice::<T>()? };
            gemm(name, T::ONE, av, bv, T::ZERO, c, n)
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
            gemm(name, T::of(alpha), av, bv, T::of(beta), c, n)
        }
        OutOp::Bmm => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let (ad, bd) = (a.storage_slice::<T>()?, b.storage_slice::<T>()?);
            let ([batch, m, k], n) = ([a.sizes()[0], a.sizes()[1], a.sizes()[2]], b.sizes()[2]);
            let (sa, sb) = (a.strides(), b.strides());
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            for bi in 0..batch {
                let av = MatView::new(name, ad, a.offset() + bi * sa[0], m, k, sa[1], sa[2])?;
                let bv = MatView::new(name, bd, b.offset() + bi * sb[0], k, n, sb[1], sb[2])?;
                gemm(name, T::ONE, av, bv, T::ZERO, &mut c[bi * m * n..(bi + 1) * m * n], n)?;
            }
            Ok(())
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
            crate::kernels::conv::conv_compute(name, &g, x.as_slice::<T>()?, w.as_slice::<T>()?, bias, c)
        }
        OutOp::Relu => {
            let a = tensor_arg(name, args, 0)?;
            let src = a.as_slice::<T>()?;
            // SAFETY: as above; `a` is a different storage (its lifetime overlaps `out`'s).
            let c = unsafe { out.as_mut_slice::<T>()? };
            for (o, &x) in c.iter_mut().zip(src) {
                *o = if x > T::ZERO || x.is_nan() { x } else { T::ZERO };
            }
            Ok(())
        }
        OutOp::Sigmoid => unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Sigmoid, out),
        OutOp::Tanh => unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Tanh, out),
        OutOp::Gelu => {
            let tanh = gelu_mode(args.get(1)).ok_or_else(|| KernelError::new(name, "approximate must be 'none' or 'tanh'"))?;
            unary_into::<T, _>(name, tensor_arg(name, args, 0)?, &Gelu { tanh }, out)
        }
        OutOp::Add | OutOp::Sub | OutOp::Mul => {
            let (a, b) = (tensor_arg(name, args, 0)?, tensor_arg(name, args, 1)?);
            let sa = a.as_slice::<T>()?;
            let sb = b.as_slice::<T>()?;
            let alpha = scalar_or(args.get(2), 1.0);
            // SAFETY: as above.
            let c = unsafe { out.as_mut_slice::<T>()? };
            let f = |x: T, y: T| -> T {
                match op {
                    OutOp::Add if alpha == 1.0 => x + y,
                    OutOp::Add => x + T::of(alpha) * y,
                    OutOp::Sub if alpha == 1.0 => x - y,
                    OutOp::Sub => x - T::of(alpha) * y,
                    _ => x * y,
                }
            };
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
            Ok(())
        }
    }
}
