//! Pairwise distances (`_cdist_forward`, `_pdist_forward`) and dropout (`native_dropout`).

use dialect_aten::op;
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use ir::DType;

/// The p-norm of the differences between two rows; p = 0 counts differing elements, p = inf takes the max.
fn p_distance(a: &[f64], b: &[f64], p: f64) -> f64 {
    let diffs = a.iter().zip(b).map(|(x, y)| (x - y).abs());
    if p == 0.0 {
        diffs.filter(|d| *d != 0.0).count() as f64
    } else if p == 1.0 {
        diffs.sum()
    } else if p == 2.0 {
        diffs.map(|d| d * d).sum::<f64>().sqrt()
    } else if p.is_infinite() {
        diffs.fold(0.0, f64::max)
    } else {
        diffs.map(|d| d.powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

fn check_p(op: &'static str, p: f64) -> Result<()> {
    if p < 0.0 || p.is_nan() {
        return Err(KernelError::new(op, format!("p must be a non-negative number, got {p}")));
    }
    Ok(())
}

fn float_output(op: &'static str, t: &Tensor) -> Result<DType> {
    match t.dtype() {
        d @ (DType::F32 | DType::F64) => Ok(d),
        d => Err(KernelError::new(op, format!("expects a floating-point tensor, got {d}"))),
    }
}

/// `_cdist_forward(x1 [*, P, M], x2 [*, R, M], p, compute_mode) -> [*, P, R]`.
fn k_cdist(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_CDIST_FORWARD, args, 3)?;
    let (x1, x2) = (a.tensor(0)?, a.tensor(1)?);
    let p = a.float(2)?;
    check_p(a.op, p)?;
    let dtype = float_output(a.op, x1)?;
    if x2.dtype() != dtype {
        return Err(KernelError::new(a.op, format!("x1 is {dtype} but x2 is {}", x2.dtype())));
    }
    let (s1, s2) = (x1.sizes(), x2.sizes());
    if s1.len() < 2 || s2.len() < 2 || s1[s1.len() - 1] != s2[s2.len() - 1] {
        return Err(KernelError::new(a.op, format!("x1 {s1:?} and x2 {s2:?} must be [*, P, M] and [*, R, M]")));
    }
    let (p_rows, r_rows, m) = (s1[s1.len() - 2], s2[s2.len() - 2], s1[s1.len() - 1]);
    let batch = crate::tensor::shape::broadcast_shapes(&s1[..s1.len() - 2], &s2[..s2.len() - 2])?;
    let mut e1 = batch.clone();
    e1.extend([p_rows, m]);
    let mut e2 = batch.clone();
    e2.extend([r_rows, m]);
    let to_i64 = |v: &[usize]| v.iter().map(|&d| d as i64).collect::<Vec<_>>();
    let v1 = x1.expand(&to_i64(&e1))?.contiguous()?.to_vec_f64();
    let v2 = x2.expand(&to_i64(&e2))?.contiguous()?.to_vec_f64();
    let nb: usize = batch.iter().product();
    let mut out = Vec::with_capacity(nb * p_rows * r_rows);
    for b in 0..nb {
        for i in 0..p_rows {
            let row = &v1[(b * p_rows + i) * m..(b * p_rows + i + 1) * m];
            for j in 0..r_rows {
                out.push(p_distance(row, &v2[(b * r_rows + j) * m..(b * r_rows + j + 1) * m], p));
            }
        }
    }
    let mut shape = batch;
    shape.extend([p_rows, r_rows]);
    Ok(vec![IValue::Tensor(Tensor::from_vec(out, &shape)?.to_dtype(dtype)?)])
}

/// `_pdist_forward(self [N, M], p) -> [N*(N-1)/2]`: distances between every pair of rows i < j.
fn k_pdist(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::_PDIST_FORWARD, args, 1)?;
    let x = a.tensor(0)?;
    let p = if a.len() > 1 { a.float(1)? } else { 2.0 };
    check_p(a.op, p)?;
    let dtype = float_output(a.op, x)?;
    let [n, m] = x.sizes() else {
        return Err(KernelError::new(a.op, format!("expects a 2-D tensor, got shape {:?}", x.sizes())));
    };
    let (n, m) = (*n, *m);
    let v = x.contiguous()?.to_vec_f64();
    let mut out = Vec::with_capacity(n.saturating_sub(1) * n / 2);
    for i in 0..n {
        for j in i + 1..n {
            out.push(p_distance(&v[i * m..(i + 1) * m], &v[j * m..(j + 1) * m], p));
        }
    }
    let len = out.len();
    Ok(vec![IValue::Tensor(Tensor::from_vec(out, &[len])?.to_dtype(dtype)?)])
}

/// `native_dropout(input, p, train) -> (output, mask)`. Outside training, or with p = 0, it is the
/// identity with an all-true mask; with p = 1 everything is dropped; otherwise each element is
/// kept with probability 1 - p (drawn from this runtime's own generator, not PyTorch's) and
/// scaled by 1 / (1 - p).
fn k_native_dropout(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::NATIVE_DROPOUT, args, 2)?;
    let x = a.tensor(0)?;
    let p = a.float(1)?;
    if !(0.0..=1.0).contains(&p) {
        return Err(KernelError::new(a.op, format!("dropout probability must be in [0, 1], got {p}")));
    }
    let train = a.opt_bool(2)?.unwrap_or(true);
    let n = x.numel();
    let keep: Vec<bool> = if !train || p == 0.0 {
        vec![true; n]
    } else if p == 1.0 {
        vec![false; n]
    } else {
        (0..n).map(|_| super::random::next_uniform() >= p).collect()
    };
    let mask = Tensor::from_vec(keep.clone(), x.sizes())?;
    if !train {
        return Ok(vec![IValue::Tensor(x.clone()), IValue::Tensor(mask)]);
    }
    let scale = if p == 1.0 { 0.0 } else { 1.0 / (1.0 - p) };
    let vals: Vec<f64> = x.contiguous()?.to_vec_f64().iter().zip(&keep).map(|(v, k)| if *k { v * scale } else { 0.0 }).collect();
    let out = Tensor::from_vec(vals, x.sizes())?.to_dtype(x.dtype())?;
    Ok(vec![IValue::Tensor(out), IValue::Tensor(mask)])
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::_CDIST_FORWARD, k_cdist);
    r.register(op::_PDIST_FORWARD, k_pdist);
    r.register(op::NATIVE_DROPOUT, k_native_dropout);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(op: &str, args: &[IValue]) -> Vec<f64> {
        match &super::super::registry().call(op, args).unwrap()[0] {
            IValue::Tensor(t) => t.to_vec_f64(),
            other => panic!("not a tensor: {other:?}"),
        }
    }

    #[test]
    fn distances() {
        let x1 = Tensor::from_vec(vec![0.0f32, 0.0, 3.0, 4.0], &[2, 2]).unwrap();
        let x2 = Tensor::from_vec(vec![0.0f32, 0.0], &[1, 2]).unwrap();
        assert_eq!(run(op::_CDIST_FORWARD.name(), &[IValue::Tensor(x1.clone()), IValue::Tensor(x2.clone()), IValue::Float(2.0), IValue::None]), vec![0.0, 5.0]);
        assert_eq!(run(op::_CDIST_FORWARD.name(), &[IValue::Tensor(x1.clone()), IValue::Tensor(x2), IValue::Float(1.0), IValue::None]), vec![0.0, 7.0]);
        assert_eq!(run(op::_PDIST_FORWARD.name(), &[IValue::Tensor(x1.clone()), IValue::Float(f64::INFINITY)]), vec![4.0]);
        assert_eq!(run(op::_PDIST_FORWARD.name(), &[IValue::Tensor(x1), IValue::Float(0.0)]), vec![2.0]);
    }

    #[test]
    fn dropout_modes() {
        let x = Tensor::from_vec(vec![1.0f32; 1000], &[1000]).unwrap();
        assert!(run(op::NATIVE_DROPOUT.name(), &[IValue::Tensor(x.clone()), IValue::Float(0.5), IValue::Bool(false)]).iter().all(|&v| v == 1.0));
        assert!(run(op::NATIVE_DROPOUT.name(), &[IValue::Tensor(x.clone()), IValue::Float(1.0), IValue::Bool(true)]).iter().all(|&v| v == 0.0));
        let kept = run(op::NATIVE_DROPOUT.name(), &[IValue::Tensor(x), IValue::Float(0.25), IValue::Bool(true)]);
        assert!(kept.iter().all(|&v| v == 0.0 || (v - 4.0 / 3.0).abs() < 1e-6));
        let frac = kept.iter().filter(|&&v| v != 0.0).count() as f64 / 1000.0;
        assert!((0.65..0.85).contains(&frac), "kept {frac}");
    }
}
