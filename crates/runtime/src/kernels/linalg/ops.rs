//! The matrix-product ops (`mm`, `bmm`, `addmm`, `baddbmm`, `mv`, `addmv`, `dot`, `matmul`,
//! `linear`): argument checking, broadcasting of batches and biases, and their kernels.

use super::*;

pub(super) fn expect_dim(op: &'static str, what: &str, t: &Tensor, d: usize) -> Result<()> {
    if t.dim() != d {
        return Err(KernelError::new(op, format!("{what} must be a {d}-D tensor, got {}-D {:?}", t.dim(), t.sizes())));
    }
    Ok(())
}

/// Whole-tensor matrix operand of a 2-D tensor.
pub(super) fn mat2d(t: &Tensor) -> Operand<'_> {
    operand(t, vec![], t.sizes()[0], t.sizes()[1], t.strides()[0], t.strides()[1])
}

/// A tensor broadcast to `sizes` as a contiguous tensor of `dtype` (for `self` of addmm-like
/// ops).
pub(super) fn broadcast_init(op: &'static str, t: &Tensor, sizes: &[usize], dtype: DType) -> Result<Tensor> {
    if t.dtype() != dtype {
        return Err(KernelError::new(
            op,
            format!("self has dtype {} but the product has {}", t.dtype().torch_name(), dtype.torch_name()),
        ));
    }
    let out = Tensor::zeros(dtype, sizes)?;
    // `copy_` broadcasts `t` to `sizes` and errors if it cannot.
    out.copy_(t).map_err(|e| KernelError::new(op, e.message))?;
    Ok(out)
}

pub(super) fn mm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::MM.name();
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        expect_dim(OP, "self", t[0], 2)?;
        expect_dim(OP, "mat2", t[1], 2)?;
        batched_product(OP, &[], &mat2d(t[0]), &mat2d(t[1]), Scalar::Int(1), Scalar::Int(0), None)
    })?;
    Ok(outs([r]))
}

pub(super) fn addmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::ADDMM.name();
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (s, x, y) = (t[0], t[1], t[2]);
        expect_dim(OP, "mat1", x, 2)?;
        expect_dim(OP, "mat2", y, 2)?;
        let sizes = [x.sizes()[0], y.sizes()[1]];
        let init = broadcast_init(OP, s, &sizes, x.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        batched_product(OP, &[], &mat2d(x), &mat2d(y), alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

pub(super) fn bmm_operands<'t>(op: &'static str, x: &'t Tensor, y: &'t Tensor) -> Result<(Vec<usize>, Operand<'t>, Operand<'t>)> {
    expect_dim(op, "batch1", x, 3)?;
    expect_dim(op, "batch2", y, 3)?;
    if x.sizes()[0] != y.sizes()[0] {
        return Err(KernelError::new(op, format!("batch sizes differ: {:?} and {:?}", x.sizes(), y.sizes())));
    }
    let (xs, xt) = (x.sizes(), x.strides());
    let (ys, yt) = (y.sizes(), y.strides());
    Ok((
        vec![xs[0]],
        operand(x, vec![xt[0]], xs[1], xs[2], xt[1], xt[2]),
        operand(y, vec![yt[0]], ys[1], ys[2], yt[1], yt[2]),
    ))
}

pub(super) fn bmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::BMM.name();
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        let (batch, x, y) = bmm_operands(OP, t[0], t[1])?;
        batched_product(OP, &batch, &x, &y, Scalar::Int(1), Scalar::Int(0), None)
    })?;
    Ok(outs([r]))
}

pub(super) fn baddbmm(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::BADDBMM.name();
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (batch, x, y) = bmm_operands(OP, t[1], t[2])?;
        let sizes = [batch[0], x.rows, y.cols];
        let init = broadcast_init(OP, t[0], &sizes, x.t.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        batched_product(OP, &batch, &x, &y, alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

/// `[m, k] · [k]` as a product with a one-column matrix, reshaped to `[m]`.
pub(super) fn mv_impl(
    op: &'static str,
    m: &Tensor,
    v: &Tensor,
    alpha: Scalar,
    beta: Scalar,
    init: Option<&Tensor>,
) -> Result<Tensor> {
    expect_dim(op, "mat", m, 2)?;
    expect_dim(op, "vec", v, 1)?;
    let vo = operand(v, vec![], v.sizes()[0], 1, v.strides()[0], 1);
    let init2 = init.map(|t| reshape_contiguous(t, &[m.sizes()[0], 1])).transpose()?;
    let r = batched_product(op, &[], &mat2d(m), &vo, alpha, beta, init2.as_ref())?;
    reshape_contiguous(&r, &[m.sizes()[0]])
}

/// A contiguous tensor with new sizes over the same storage (`view` of a contiguous tensor).
pub(crate) fn reshape_contiguous(t: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    let c = t.contiguous()?;
    let strides = crate::tensor::contiguous_strides(sizes);
    Tensor::from_storage(c.storage().clone(), c.dtype(), sizes, &strides, c.offset())
}

pub(super) fn mv(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::MV.name();
    let a = Args::new(OP, args, 2)?;
    let r =
        widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| mv_impl(OP, t[0], t[1], Scalar::Int(1), Scalar::Int(0), None))?;
    Ok(outs([r]))
}

pub(super) fn addmv(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::ADDMV.name();
    let a = Args::new(OP, args, 3)?;
    let beta = a.opt_scalar(3)?.unwrap_or(Scalar::Int(1));
    let alpha = a.opt_scalar(4)?.unwrap_or(Scalar::Int(1));
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?, a.tensor(2)?], |t| {
        let (s, m, v) = (t[0], t[1], t[2]);
        expect_dim(OP, "mat", m, 2)?;
        let init = broadcast_init(OP, s, &[m.sizes()[0]], m.dtype())?;
        let init = if beta.to_f64() == 0.0 { None } else { Some(init) };
        mv_impl(OP, m, v, alpha, beta, init.as_ref())
    })?;
    Ok(outs([r]))
}

pub(super) fn dot(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::DOT.name();
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| {
        let (x, y) = (t[0], t[1]);
        expect_dim(OP, "self", x, 1)?;
        expect_dim(OP, "tensor", y, 1)?;
        if x.sizes()[0] != y.sizes()[0] {
            return Err(KernelError::new(
                OP,
                format!("inconsistent tensor size: {} and {} elements", x.sizes()[0], y.sizes()[0]),
            ));
        }
        let xo = operand(x, vec![], 1, x.sizes()[0], 0, x.strides()[0]);
        let yo = operand(y, vec![], y.sizes()[0], 1, y.strides()[0], 0);
        let r = batched_product(OP, &[], &xo, &yo, Scalar::Int(1), Scalar::Int(0), None)?;
        reshape_contiguous(&r, &[])
    })?;
    Ok(outs([r]))
}

/// `torch.matmul`: dot, mv, vector-matrix, mm, or a broadcast batched product.
pub(crate) fn matmul_tensors(op: &'static str, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (dx, dy) = (x.dim(), y.dim());
    if dx == 0 || dy == 0 {
        return Err(KernelError::new(op, "both arguments to matmul need to be at least 1D"));
    }
    // Logical matrices: a vector on the left is a 1×k row, on the right a k×1 column.
    let (xs, xt) = (x.sizes(), x.strides());
    let (ys, yt) = (y.sizes(), y.strides());
    let (m, k, rsa, csa, xb, xbs) = if dx == 1 {
        (1, xs[0], 0, xt[0], &xs[..0], &xt[..0])
    } else {
        (xs[dx - 2], xs[dx - 1], xt[dx - 2], xt[dx - 1], &xs[..dx - 2], &xt[..dx - 2])
    };
    let (k2, n, rsb, csb, yb, ybs) = if dy == 1 {
        (ys[0], 1, yt[0], 0, &ys[..0], &yt[..0])
    } else {
        (ys[dy - 2], ys[dy - 1], yt[dy - 2], yt[dy - 1], &ys[..dy - 2], &yt[..dy - 2])
    };
    if k != k2 {
        return Err(KernelError::new(op, format!("shapes {xs:?} and {ys:?} cannot be multiplied ({k} vs {k2})")));
    }
    let batch = crate::tensor::broadcast_shapes(xb, yb).map_err(|e| KernelError::new(op, e.message))?;
    let bstrides = |b: &[usize], s: &[usize]| -> Vec<usize> {
        let pad = batch.len() - b.len();
        (0..batch.len()).map(|d| if d < pad || b[d - pad] == 1 { 0 } else { s[d - pad] }).collect()
    };
    let ao = operand(x, bstrides(xb, xbs), m, k, rsa, csa);
    let bo = operand(y, bstrides(yb, ybs), k, n, rsb, csb);
    let r = batched_product(op, &batch, &ao, &bo, Scalar::Int(1), Scalar::Int(0), None)?;
    let mut sizes = batch.clone();
    if dx > 1 {
        sizes.push(m);
    }
    if dy > 1 {
        sizes.push(n);
    }
    reshape_contiguous(&r, &sizes)
}

pub(super) fn matmul(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::MATMUL.name();
    let a = Args::new(OP, args, 2)?;
    let r = widen_halves(&[a.tensor(0)?, a.tensor(1)?], |t| matmul_tensors(OP, t[0], t[1]))?;
    Ok(outs([r]))
}

/// `y = x · wᵀ + b` over the last dim of `x`.
pub(crate) fn linear_tensors(op: &'static str, x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if x.dim() == 0 {
        return Err(KernelError::new(op, "input must have at least one dimension"));
    }
    let inf = *x.sizes().last().unwrap_or(&0);
    let (outf, wo) = match w.dim() {
        2 => {
            if w.sizes()[1] != inf {
                return Err(KernelError::new(
                    op,
                    format!("input {:?} and weight {:?} cannot be multiplied", x.sizes(), w.sizes()),
                ));
            }
            (Some(w.sizes()[0]), operand(w, vec![], inf, w.sizes()[0], w.strides()[1], w.strides()[0]))
        }
        1 => {
            if w.sizes()[0] != inf {
                return Err(KernelError::new(
                    op,
                    format!("input {:?} and weight {:?} cannot be multiplied", x.sizes(), w.sizes()),
                ));
            }
            (None, operand(w, vec![], inf, 1, w.strides()[0], 0))
        }
        d => return Err(KernelError::new(op, format!("weight must be 1-D or 2-D, got {d}-D"))),
    };
    let lead: Vec<usize> = x.sizes()[..x.dim() - 1].to_vec();
    let rows: usize = lead.iter().product();
    // Flatten the leading dims of x into rows (a copy only when they do not merge).
    let xc;
    let xo = if x.dim() == 1 {
        operand(x, vec![], 1, inf, 0, x.strides()[0])
    } else if x.dim() == 2 {
        operand(x, vec![], rows, inf, x.strides()[0], x.strides()[1])
    } else {
        xc = x.contiguous()?;
        operand(&xc, vec![], rows, inf, inf, 1)
    };
    let n = outf.unwrap_or(1);
    let init = match bias {
        Some(b) => Some(broadcast_init(op, b, &[rows, n], x.dtype())?),
        None => None,
    };
    let r = batched_product(op, &[], &xo, &wo, Scalar::Int(1), Scalar::Int(1), init.as_ref())?;
    let mut sizes = lead;
    if let Some(o) = outf {
        sizes.push(o);
    }
    reshape_contiguous(&r, &sizes)
}

pub(super) fn linear(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINEAR.name();
    let a = Args::new(OP, args, 2)?;
    let (x, w, b) = (a.tensor(0)?, a.tensor(1)?, a.opt_tensor(2)?);
    let mut ts = vec![x, w];
    ts.extend(b);
    let r = widen_halves(&ts, |t| linear_tensors(OP, t[0], t[1], t.get(2).copied()))?;
    Ok(outs([r]))
}
