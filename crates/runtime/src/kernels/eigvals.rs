//! `linalg_eigvals` of real square matrices: the complex eigenvalues, by reduction to upper
//! Hessenberg form with Householder reflections and then Francis' implicitly double-shifted QR
//! iteration on the active block until every eigenvalue has deflated to a 1×1 or 2×2 block.
//! Eigenvalues are listed by their position on the diagonal of the resulting quasi-triangular
//! Schur form (a complex pair with the positive imaginary part first), the order LAPACK's
//! `geev` gives for matrices that balancing does not permute.

use dialect_aten::op;
use ir::DType;

use super::complex::from_c64;
use super::{Args, KernelRegistry, ret};
use crate::tensor::{C64, KernelError, Result};
use crate::value::IValue;

/// Row-major `n × n` matrix reduced in place to upper Hessenberg form (similar to the input).
fn hessenberg(a: &mut [f64], n: usize) {
    for k in 0..n.saturating_sub(2) {
        // Reflector zeroing a[k+2.., k].
        let norm: f64 = (k + 1..n).map(|i| a[i * n + k] * a[i * n + k]).sum::<f64>().sqrt();
        if norm == 0.0 {
            continue;
        }
        let x0 = a[(k + 1) * n + k];
        let alpha = if x0 > 0.0 { -norm } else { norm };
        let mut v: Vec<f64> = (k + 1..n).map(|i| a[i * n + k]).collect();
        v[0] -= alpha;
        let vtv: f64 = v.iter().map(|x| x * x).sum();
        if vtv == 0.0 {
            continue;
        }
        // A ← (I − 2vvᵀ/vᵀv) A (I − 2vvᵀ/vᵀv), acting on rows/columns k+1..n.
        for j in 0..n {
            let s: f64 = v.iter().enumerate().map(|(i, vi)| vi * a[(k + 1 + i) * n + j]).sum();
            let f = 2.0 * s / vtv;
            for (i, vi) in v.iter().enumerate() {
                a[(k + 1 + i) * n + j] -= f * vi;
            }
        }
        for i in 0..n {
            let s: f64 = v.iter().enumerate().map(|(j, vj)| vj * a[i * n + k + 1 + j]).sum();
            let f = 2.0 * s / vtv;
            for (j, vj) in v.iter().enumerate() {
                a[i * n + k + 1 + j] -= f * vj;
            }
        }
        for i in k + 2..n {
            a[i * n + k] = 0.0;
        }
    }
}

/// The eigenvalues of the 2×2 block `[[p, q], [r, s]]`, the upper-left one first.
fn block_eigenvalues(p: f64, q: f64, r: f64, s: f64) -> (C64, C64) {
    if r == 0.0 {
        return (C64::new(p, 0.0), C64::new(s, 0.0));
    }
    if q == 0.0 {
        return (C64::new(s, 0.0), C64::new(p, 0.0));
    }
    let half = 0.5 * (p - s);
    let disc = half * half + q * r;
    if disc >= 0.0 {
        let z = half + disc.sqrt().copysign(half);
        let first = s + z;
        let second = if z != 0.0 { s - q * r / z } else { first };
        (C64::new(first, 0.0), C64::new(second, 0.0))
    } else {
        let re = 0.5 * (p + s);
        let im = (-disc).sqrt();
        (C64::new(re, im), C64::new(re, -im))
    }
}

/// Applies the reflector `I − 2vvᵀ/vᵀv` (`v` of length `m` at rows/columns `k..k+m`) from the
/// left to columns `cols` and from the right to rows `rows`.
fn reflect(a: &mut [f64], n: usize, k: usize, v: &[f64], cols: std::ops::RangeInclusive<usize>, rows: std::ops::RangeInclusive<usize>) {
    let vtv: f64 = v.iter().map(|x| x * x).sum();
    if vtv == 0.0 {
        return;
    }
    for j in cols {
        let s: f64 = v.iter().enumerate().map(|(i, vi)| vi * a[(k + i) * n + j]).sum();
        let f = 2.0 * s / vtv;
        for (i, vi) in v.iter().enumerate() {
            a[(k + i) * n + j] -= f * vi;
        }
    }
    for i in rows {
        let s: f64 = v.iter().enumerate().map(|(j, vj)| vj * a[i * n + k + j]).sum();
        let f = 2.0 * s / vtv;
        for (j, vj) in v.iter().enumerate() {
            a[i * n + k + j] -= f * vj;
        }
    }
}

/// A reflector vector taking `x` to a multiple of the first unit vector.
fn reflector(x: &[f64]) -> Vec<f64> {
    let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut v = x.to_vec();
    if norm != 0.0 {
        v[0] += norm.copysign(x[0]);
    }
    v
}

/// The eigenvalues of the Hessenberg matrix `a`, by Schur-form position.
fn hessenberg_qr(name: &str, a: &mut [f64], n: usize) -> Result<Vec<C64>> {
    let mut w = vec![C64::default(); n];
    let at = |a: &[f64], i: usize, j: usize| a[i * n + j];
    let mut hi = n;
    let mut iter = 0usize;
    while hi > 0 {
        let h = hi - 1;
        // The start of the active block: the lowest negligible subdiagonal entry above `h`.
        let mut l = h;
        while l > 0 {
            let s = at(a, l - 1, l - 1).abs() + at(a, l, l).abs();
            if at(a, l, l - 1).abs() <= f64::EPSILON * s || at(a, l, l - 1) == 0.0 {
                a[l * n + l - 1] = 0.0;
                break;
            }
            l -= 1;
        }
        if l == h {
            w[h] = C64::new(at(a, h, h), 0.0);
            hi -= 1;
            iter = 0;
            continue;
        }
        if l + 1 == h {
            let (e1, e2) = block_eigenvalues(at(a, h - 1, h - 1), at(a, h - 1, h), at(a, h, h - 1), at(a, h, h));
            w[h - 1] = e1;
            w[h] = e2;
            hi -= 2;
            iter = 0;
            continue;
        }
        iter += 1;
        if iter > 60 * n.max(1) {
            return Err(KernelError::new(name.to_string(), "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues"));
        }
        // Shifts: the eigenvalues of the trailing 2×2 block (sum `s`, product `t`), or an
        // exceptional pair every tenth iteration to break cycles.
        let (s, t) = if iter % 10 == 0 {
            let e = at(a, h, h - 1).abs() + at(a, h - 1, h - 2).abs();
            (1.5 * e + at(a, h, h), e * e)
        } else {
            let (p, q, r, u) = (at(a, h - 1, h - 1), at(a, h - 1, h), at(a, h, h - 1), at(a, h, h));
            (p + u, p * u - q * r)
        };
        // First column of (H − σ₁)(H − σ₂), then the bulge chased down the block.
        let mut x = at(a, l, l) * at(a, l, l) + at(a, l, l + 1) * at(a, l + 1, l) - s * at(a, l, l) + t;
        let mut y = at(a, l + 1, l) * (at(a, l, l) + at(a, l + 1, l + 1) - s);
        let mut z = at(a, l + 1, l) * at(a, l + 2, l + 1);
        for k in l..h {
            let m = if k + 2 <= h { 3 } else { 2 };
            let v = if m == 3 { reflector(&[x, y, z]) } else { reflector(&[x, y]) };
            let col0 = if k > l { k - 1 } else { l };
            reflect(a, n, k, &v, col0..=h, l..=(k + 3).min(h));
            if k > l {
                a[(k + 1) * n + k - 1] = 0.0;
                if m == 3 {
                    a[(k + 2) * n + k - 1] = 0.0;
                }
            }
            if k + 1 < h {
                x = at(a, k + 1, k);
                y = at(a, k + 2, k);
                z = if k + 3 <= h { at(a, k + 3, k) } else { 0.0 };
            }
        }
    }
    Ok(w)
}

/// The eigenvalues of one row-major `n × n` real matrix.
pub(crate) fn eigenvalues(name: &str, mut a: Vec<f64>, n: usize) -> Result<Vec<C64>> {
    if a.iter().any(|v| !v.is_finite()) {
        return Err(KernelError::new(name.to_string(), "linalg.eigvals: input tensor should not contain infs or NaNs."));
    }
    hessenberg(&mut a, n);
    hessenberg_qr(name, &mut a, n)
}

fn k_eigvals(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::LINALG_EIGVALS, args, 1)?;
    let x = a.tensor(0)?;
    let name = a.op;
    let out_dtype = match x.dtype() {
        DType::F32 => DType::C64,
        DType::F64 => DType::C128,
        d if d.is_complex() => return Err(KernelError::new(name, format!("eigenvalues of {} matrices are not supported", d.torch_name()))),
        d => return Err(KernelError::new(name, format!("linalg.eigvals: Expected a floating point or complex tensor as input. Got {}", d.torch_name()))),
    };
    if x.dim() < 2 {
        return Err(KernelError::new(name, format!("linalg.eigvals: The input tensor A must have at least 2 dimensions.")));
    }
    let s = x.sizes();
    let n = s[s.len() - 1];
    if s[s.len() - 2] != n {
        return Err(KernelError::new(name, format!("linalg.eigvals: A must be batches of square matrices, but they are {} by {} matrices", s[s.len() - 2], n)));
    }
    let data = x.to_vec_f64();
    let mut out = Vec::with_capacity(data.len() / n.max(1));
    if n > 0 {
        for m in data.chunks(n * n) {
            out.extend(eigenvalues(name, m.to_vec(), n)?);
        }
    }
    ret(from_c64(out, &s[..s.len() - 1], out_dtype)?)
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::LINALG_EIGVALS, k_eigvals);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_has_a_conjugate_pair_and_triangular_keeps_its_diagonal() {
        let w = eigenvalues("t", vec![0.0, -1.0, 1.0, 0.0], 2).unwrap();
        assert_eq!(w, vec![C64::new(0.0, 1.0), C64::new(0.0, -1.0)]);
        let w = eigenvalues("t", vec![2.0, 1.0, 5.0, 0.0, 3.0, 4.0, 0.0, 0.0, -1.0], 3).unwrap();
        let mut re: Vec<f64> = w.iter().map(|z| z.re).collect();
        re.sort_by(f64::total_cmp);
        for (g, want) in re.iter().zip([-1.0, 2.0, 3.0]) {
            assert!((g - want).abs() < 1e-12, "{re:?}");
        }
    }

    #[test]
    fn eigenvalues_sum_to_the_trace_and_multiply_to_the_determinant() {
        let a = vec![4.0, 1.0, -2.0, 2.0, 1.0, 3.0, 0.5, -1.0, 2.0, 7.0, 1.0, 0.0, 3.0, -2.0, 1.0, 5.0];
        let w = eigenvalues("t", a.clone(), 4).unwrap();
        let trace: f64 = (0..4).map(|i| a[i * 4 + i]).sum();
        let sum: C64 = w.iter().sum();
        assert!((sum.re - trace).abs() < 1e-9 && sum.im.abs() < 1e-9, "{w:?}");
    }
}
