//! `linalg_matrix_exp`: the exponential of each square matrix of a batch, by scaling and
//! squaring around the degree-13 Padé approximant (`A` scaled by `2^−s` until its 1-norm is at
//! most θ₁₃ = 5.37, `exp(A/2^s)` from `(V − U)⁻¹(V + U)`, then squared `s` times). Computed in
//! `f64` for every floating dtype and rounded once.

use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;

const PADE13: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];
const THETA13: f64 = 5.371920351148152;

fn matmul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            if aik == 0.0 {
                continue;
            }
            for j in 0..n {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
    c
}

/// `Σ cᵢ·Mᵢ` plus `id·I`.
fn combo(terms: &[(f64, &[f64])], id: f64, n: usize) -> Vec<f64> {
    let mut r = vec![0.0; n * n];
    for (c, m) in terms {
        for (x, y) in r.iter_mut().zip(m.iter()) {
            *x += c * y;
        }
    }
    for i in 0..n {
        r[i * n + i] += id;
    }
    r
}

/// Solves `p·X = q` by Gaussian elimination with partial pivoting; `None` when `p` is singular.
fn solve(mut p: Vec<f64>, mut q: Vec<f64>, n: usize) -> Option<Vec<f64>> {
    for col in 0..n {
        let piv = (col..n).max_by(|&a, &b| p[a * n + col].abs().total_cmp(&p[b * n + col].abs()))?;
        if p[piv * n + col] == 0.0 {
            return None;
        }
        if piv != col {
            for j in 0..n {
                p.swap(piv * n + j, col * n + j);
                q.swap(piv * n + j, col * n + j);
            }
        }
        let d = p[col * n + col];
        for r in col + 1..n {
            let f = p[r * n + col] / d;
            if f == 0.0 {
                continue;
            }
            for j in col..n {
                p[r * n + j] -= f * p[col * n + j];
            }
            for j in 0..n {
                q[r * n + j] -= f * q[col * n + j];
            }
        }
    }
    for col in (0..n).rev() {
        let d = p[col * n + col];
        for j in 0..n {
            q[col * n + j] /= d;
        }
        for r in 0..col {
            let f = p[r * n + col];
            if f != 0.0 {
                for j in 0..n {
                    q[r * n + j] -= f * q[col * n + j];
                }
            }
        }
    }
    Some(q)
}

/// `exp(a)` of one `n × n` matrix.
fn expm(a: &[f64], n: usize) -> Vec<f64> {
    if a.iter().any(|v| !v.is_finite()) {
        return vec![f64::NAN; n * n];
    }
    let norm = (0..n).map(|j| (0..n).map(|i| a[i * n + j].abs()).sum::<f64>()).fold(0.0, f64::max);
    let s = if norm > THETA13 { (norm / THETA13).log2().ceil().max(0.0) as i32 } else { 0 };
    let scale = 0.5f64.powi(s);
    let a: Vec<f64> = a.iter().map(|v| v * scale).collect();
    let b = &PADE13;
    let a2 = matmul(&a, &a, n);
    let a4 = matmul(&a2, &a2, n);
    let a6 = matmul(&a4, &a2, n);
    let inner_u = combo(&[(b[13], &a6), (b[11], &a4), (b[9], &a2)], 0.0, n);
    let u_rest = combo(&[(b[7], &a6), (b[5], &a4), (b[3], &a2)], b[1], n);
    let u_in: Vec<f64> = matmul(&a6, &inner_u, n).iter().zip(&u_rest).map(|(x, y)| x + y).collect();
    let u = matmul(&a, &u_in, n);
    let inner_v = combo(&[(b[12], &a6), (b[10], &a4), (b[8], &a2)], 0.0, n);
    let v_rest = combo(&[(b[6], &a6), (b[4], &a4), (b[2], &a2)], b[0], n);
    let v: Vec<f64> = matmul(&a6, &inner_v, n).iter().zip(&v_rest).map(|(x, y)| x + y).collect();
    let p: Vec<f64> = v.iter().zip(&u).map(|(v, u)| v - u).collect();
    let q: Vec<f64> = v.iter().zip(&u).map(|(v, u)| v + u).collect();
    let Some(mut r) = solve(p, q, n) else { return vec![f64::NAN; n * n] };
    for _ in 0..s {
        r = matmul(&r, &r, n);
    }
    r
}

fn linalg_matrix_exp(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LINALG_MATRIX_EXP, args, 1)?;
    let x = a.tensor(0)?;
    let s = x.sizes();
    if s.len() < 2 || s[s.len() - 1] != s[s.len() - 2] {
        return Err(KernelError::new(a.op, format!("linalg.matrix_exp: A must be batches of square matrices, but they are {:?} matrices", &s[s.len().saturating_sub(2)..])));
    }
    let dt = x.dtype();
    if !dt.is_floating() {
        return Err(KernelError::new(a.op, format!("linalg.matrix_exp: Expected a floating point or complex tensor as input. Got {}", dt.torch_name())));
    }
    let n = s[s.len() - 1];
    let v = x.to_vec_f64();
    let mut out = Vec::with_capacity(v.len());
    if n > 0 {
        for m in v.chunks(n * n) {
            out.extend(expm(m, n));
        }
    }
    let r = Tensor::from_vec(out, s)?.to_dtype(dt)?;
    Ok(outs([r]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::LINALG_MATRIX_EXP, linalg_matrix_exp);
}
