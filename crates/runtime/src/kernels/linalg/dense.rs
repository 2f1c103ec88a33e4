//! Real dense linear algebra over batches of matrices (`f32`, `f64`), the kernels PyTorch runs
//! on LAPACK: LU with partial pivoting (`linalg_inv`, `inverse`, `linalg_det`, `det`,
//! `linalg_slogdet`, `slogdet`, `logdet`, `linalg_solve`, `linalg_solve_ex`, `linalg_lu_factor`,
//! `_lu_with_info`, `lu_solve`), Cholesky
//! (`linalg_cholesky`), the symmetric eigendecomposition by cyclic Jacobi rotations
//! (`linalg_eigh`, `linalg_eigvalsh`) and the singular value decomposition by one-sided Jacobi
//! (`linalg_svd`, `linalg_svdvals`, `svd`, `linalg_pinv`, `pinverse`); `ldl.rs` holds the
//! symmetric-indefinite LDLᵀ factorization (`linalg_ldl_factor`, `linalg_ldl_solve`).
//!
//! Every matrix is factored in `f64` and the results are written in the input's dtype; leading
//! dimensions are batches. A singular matrix is an error for `linalg_inv` and `linalg_solve`,
//! gives a zero determinant (sign 0 and `-inf` for `slogdet`, `-inf` for `logdet`, NaN for a
//! negative determinant's `logdet`), and a matrix that is not positive-definite is an error for
//! `linalg_cholesky`, each as in PyTorch. Eigenvectors and singular vectors are determined up to
//! sign, as LAPACK's are.

use super::*;

mod ldl;

/// A batch of `rows × cols` matrices read in `f64`, row-major, one after another.
struct Batch {
    /// The leading (batch) dimensions.
    lead: Vec<usize>,
    rows: usize,
    cols: usize,
    data: Vec<f64>,
}

impl Batch {
    fn count(&self) -> usize {
        self.lead.iter().product()
    }

    fn matrix(&self, i: usize) -> &[f64] {
        let n = self.rows * self.cols;
        &self.data[i * n..(i + 1) * n]
    }
}

/// Reads `t` as a batch of matrices; the dtype must be `f32` or `f64`.
fn read(op: &'static str, t: &Tensor) -> Result<Batch> {
    match t.dtype() {
        DType::F32 | DType::F64 => {}
        DType::F16 | DType::BF16 => return Err(KernelError::new(op, format!("Low precision dtypes not supported. Got {}", t.dtype().torch_name()))),
        d => return Err(KernelError::new(op, format!("not implemented for dtype {}", d.torch_name()))),
    }
    if t.dim() < 2 {
        return Err(KernelError::new(op, format!("The input tensor A must have at least 2 dimensions, got {}-D", t.dim())));
    }
    let s = t.sizes();
    Ok(Batch { lead: s[..s.len() - 2].to_vec(), rows: s[s.len() - 2], cols: s[s.len() - 1], data: t.to_vec_f64() })
}

/// Reads `t` as a batch of square matrices.
fn read_square(op: &'static str, t: &Tensor) -> Result<Batch> {
    let b = read(op, t)?;
    if b.rows != b.cols {
        return Err(KernelError::new(op, format!("A must be batches of square matrices, but they are {} by {} matrices", b.rows, b.cols)));
    }
    Ok(b)
}

/// A tensor of `dtype` with `sizes` from `f64` values.
fn write(dtype: DType, sizes: &[usize], data: Vec<f64>) -> Result<Tensor> {
    Tensor::from_vec(data, sizes)?.to_dtype(dtype)
}

fn with_tail(lead: &[usize], tail: &[usize]) -> Vec<usize> {
    lead.iter().chain(tail).copied().collect()
}

/// An LU factorization `P·A = L·U` of an `m × n` matrix, in place: `U` on and above the
/// diagonal, `L`'s multipliers below it; `perm[i]` is the row of `A` in row `i`, and `swaps[k]`
/// the row swapped with row `k` at step `k` (LAPACK's `ipiv`, 0-based).
struct Lu {
    n: usize,
    lu: Vec<f64>,
    perm: Vec<usize>,
    swaps: Vec<usize>,
    /// The permutation's sign.
    sign: f64,
    /// The first zero pivot (1-based), 0 when none, as LAPACK's `info`.
    info: usize,
}

fn lu(a: &[f64], n: usize) -> Lu {
    lu_rect(a, n, n)
}

fn lu_rect(a: &[f64], m: usize, n: usize) -> Lu {
    let mut lu = a.to_vec();
    let mut perm: Vec<usize> = (0..m).collect();
    let mut swaps = Vec::with_capacity(m.min(n));
    let (mut sign, mut info) = (1.0, 0);
    for k in 0..m.min(n) {
        let p = (k..m).fold(k, |p, i| if lu[i * n + k].abs() > lu[p * n + k].abs() { i } else { p });
        swaps.push(p);
        if p != k {
            for j in 0..n {
                lu.swap(k * n + j, p * n + j);
            }
            perm.swap(k, p);
            sign = -sign;
        }
        let pivot = lu[k * n + k];
        if pivot == 0.0 {
            if info == 0 {
                info = k + 1;
            }
            continue;
        }
        for i in k + 1..m {
            let f = lu[i * n + k] / pivot;
            lu[i * n + k] = f;
            if f != 0.0 {
                for j in k + 1..n {
                    lu[i * n + j] -= f * lu[k * n + j];
                }
            }
        }
    }
    Lu { n, lu, perm, swaps, sign, info }
}

impl Lu {
    /// Solves `A·X = B` for `B` of `n × k` (row-major); a zero pivot divides by zero, as
    /// LAPACK's triangular solve does.
    fn solve(&self, b: &[f64], k: usize) -> Vec<f64> {
        let n = self.n;
        let x: Vec<f64> = (0..n).flat_map(|i| b[self.perm[i] * k..(self.perm[i] + 1) * k].to_vec()).collect();
        substitute(&self.lu, n, x, k)
    }

    /// `(sign, log|det|)`: sign 0 and `-inf` for a singular matrix.
    fn slogdet(&self) -> (f64, f64) {
        if self.info != 0 {
            return (0.0, f64::NEG_INFINITY);
        }
        let (mut sign, mut log) = (self.sign, 0.0);
        for i in 0..self.n {
            let d = self.lu[i * self.n + i];
            if d < 0.0 {
                sign = -sign;
            }
            log += d.abs().ln();
        }
        (sign, log)
    }

    fn det(&self) -> f64 {
        (0..self.n).fold(self.sign, |acc, i| acc * self.lu[i * self.n + i])
    }
}

/// Solves `L·U·X = B` for the permuted right-hand side `x` (`n × k`, row-major) with the
/// factors packed in `lu` (`L` unit lower, `U` upper); a zero pivot divides by zero, as
/// LAPACK's triangular solve does.
fn substitute(lu: &[f64], n: usize, mut x: Vec<f64>, k: usize) -> Vec<f64> {
    for i in 0..n {
        for p in 0..i {
            let f = lu[i * n + p];
            if f != 0.0 {
                for j in 0..k {
                    x[i * k + j] -= f * x[p * k + j];
                }
            }
        }
    }
    for i in (0..n).rev() {
        for p in i + 1..n {
            let f = lu[i * n + p];
            if f != 0.0 {
                for j in 0..k {
                    x[i * k + j] -= f * x[p * k + j];
                }
            }
        }
        let d = lu[i * n + i];
        for j in 0..k {
            x[i * k + j] /= d;
        }
    }
    x
}

fn identity(n: usize) -> Vec<f64> {
    let mut m = vec![0.0; n * n];
    for i in 0..n {
        m[i * n + i] = 1.0;
    }
    m
}

fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; a.len()];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

/// `linalg_inv(A)` and `inverse(self)`: an error naming the first zero pivot when `A` is singular.
fn inv(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let b = read_square(op, t)?;
    let n = b.rows;
    let mut out = Vec::with_capacity(b.data.len());
    for i in 0..b.count() {
        let f = lu(b.matrix(i), n);
        if f.info != 0 {
            return Err(KernelError::new(
                op,
                format!("The diagonal element {} is zero, the inversion could not be completed because the input matrix is singular.", f.info),
            ));
        }
        out.extend(f.solve(&identity(n), n));
    }
    Ok(outs([write(t.dtype(), t.sizes(), out)?]))
}

/// `linalg_det(A)` and `det(self)`.
fn det(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let b = read_square(op, t)?;
    let out = (0..b.count()).map(|i| lu(b.matrix(i), b.rows).det()).collect();
    Ok(outs([write(t.dtype(), &b.lead, out)?]))
}

/// `linalg_slogdet(A)`, `slogdet(self)` (`(sign, logabsdet)`) and `logdet(self)`.
fn slogdet(op: &'static str, args: &[IValue], log_only: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let b = read_square(op, t)?;
    let (signs, logs): (Vec<f64>, Vec<f64>) = (0..b.count()).map(|i| lu(b.matrix(i), b.rows).slogdet()).unzip();
    if log_only {
        let v = signs.iter().zip(&logs).map(|(&s, &l)| if s < 0.0 { f64::NAN } else { l }).collect();
        return Ok(outs([write(t.dtype(), &b.lead, v)?]));
    }
    Ok(outs([write(t.dtype(), &b.lead, signs)?, write(t.dtype(), &b.lead, logs)?]))
}

/// `linalg_solve(A, B, left)` and `linalg_solve_ex` (with `info`): `A·X = B` (`X·A = B` when
/// not `left`), batches broadcast; `B` is a vector (or a batch of vectors) when it has one
/// dimension, or one fewer than `A` with `A`'s leading sizes.
fn solve(op: &'static str, args: &[IValue], with_info: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let (ta, tb) = (a.tensor(0)?, a.tensor(1)?);
    let left = a.opt_bool(2)?.unwrap_or(true);
    let check = with_info && a.opt_bool(3)?.unwrap_or(false);
    if ta.dtype() != tb.dtype() {
        return Err(KernelError::new(op, format!("Expected A and B to have the same dtype, but found A of type {} and B of type {} instead", ta.dtype().torch_name(), tb.dtype().torch_name())));
    }
    let am = read_square(op, ta)?;
    let n = am.rows;
    let vector = tb.dim() == 1 || (tb.dim() + 1 == ta.dim() && tb.sizes() == &ta.sizes()[..ta.dim() - 1]);
    let bt = if vector { tb.unsqueeze(-1)? } else { tb.clone() };
    let bm = read(op, &bt)?;
    let bad = || KernelError::new(op, format!("Incompatible shapes of A and B for the equation {}: {:?} and {:?}", if left { "AX = B" } else { "XA = B" }, ta.sizes(), tb.sizes()));
    // `X·A = B` is `Aᵀ·Xᵀ = Bᵀ`: B's matrices are transposed in and X's out.
    let (b_rows, k) = if left || vector { (bm.rows, bm.cols) } else { (bm.cols, bm.rows) };
    if b_rows != n {
        return Err(bad());
    }
    let lead = crate::tensor::broadcast_shapes(&am.lead, &bm.lead).map_err(|_| bad())?;
    let count: usize = lead.iter().product();
    let (mut out, mut infos) = (Vec::with_capacity(count * n * k), Vec::with_capacity(count));
    for i in 0..count {
        let ia = broadcast_index(i, &lead, &am.lead);
        let ib = broadcast_index(i, &lead, &bm.lead);
        let mat = if left { am.matrix(ia).to_vec() } else { transpose(am.matrix(ia), n, n) };
        let rhs = if left || vector { bm.matrix(ib).to_vec() } else { transpose(bm.matrix(ib), bm.rows, bm.cols) };
        let f = lu(&mat, n);
        if f.info != 0 && (!with_info || check) {
            return Err(KernelError::new(op, "The solver failed because the input matrix is singular."));
        }
        infos.push(f.info as i32);
        let x = f.solve(&rhs, k);
        out.extend(if left || vector { x } else { transpose(&x, n, k) });
    }
    let sizes = if vector {
        with_tail(&lead, &[n])
    } else if left {
        with_tail(&lead, &[n, k])
    } else {
        with_tail(&lead, &[k, n])
    };
    let x = write(ta.dtype(), &sizes, out)?;
    if with_info {
        return Ok(outs([x, Tensor::from_vec(infos, &lead)?]));
    }
    Ok(outs([x]))
}

/// The index into a batch of `sizes` (broadcast to `lead`) of the `i`-th batch of `lead`.
fn broadcast_index(i: usize, lead: &[usize], sizes: &[usize]) -> usize {
    let (mut rem, mut idx, mut stride) = (i, 0, 1);
    let off = lead.len() - sizes.len();
    for d in (0..lead.len()).rev() {
        let c = rem % lead[d];
        rem /= lead[d];
        if d >= off {
            let s = sizes[d - off];
            if s != 1 {
                idx += c * stride;
            }
            stride *= s;
        }
    }
    idx
}

/// `linalg_cholesky(A, upper)`: `A = L·Lᵀ` from `A`'s lower triangle (`Lᵀ` when `upper`).
fn cholesky(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINALG_CHOLESKY.name();
    let a = Args::new(OP, args, 1)?;
    let t = a.tensor(0)?;
    let upper = a.opt_bool(1)?.unwrap_or(false);
    let b = read_square(OP, t)?;
    let n = b.rows;
    let mut out = Vec::with_capacity(b.data.len());
    for m in 0..b.count() {
        let a = b.matrix(m);
        let mut l = vec![0.0; n * n];
        for j in 0..n {
            let d = a[j * n + j] - (0..j).map(|p| l[j * n + p] * l[j * n + p]).sum::<f64>();
            if d.is_nan() || d <= 0.0 {
                return Err(KernelError::new(
                    OP,
                    format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {} is not positive-definite).", j + 1),
                ));
            }
            let d = d.sqrt();
            l[j * n + j] = d;
            for i in j + 1..n {
                let s = a[i * n + j] - (0..j).map(|p| l[i * n + p] * l[j * n + p]).sum::<f64>();
                l[i * n + j] = s / d;
            }
        }
        out.extend(if upper { transpose(&l, n, n) } else { l });
    }
    Ok(outs([write(t.dtype(), t.sizes(), out)?]))
}

/// The symmetric eigendecomposition of `a` (`n × n`, symmetric) by cyclic Jacobi rotations:
/// eigenvalues ascending, eigenvectors as the columns of the row-major `n × n` result.
fn jacobi_eigh(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut a = a.to_vec();
    let mut v = identity(n);
    let scale: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _sweep in 0..100 {
        let off: f64 = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| a[i * n + j] * a[i * n + j]).sum();
        if off.sqrt() <= f64::EPSILON * scale * 1e-3 || off == 0.0 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = a[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * n + q] - a[p * n + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k * n + p], a[k * n + q]);
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p * n + k], a[q * n + k]);
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for k in 0..n {
                    let (vkp, vkq) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[i * n + i].total_cmp(&a[j * n + j]));
    let w = order.iter().map(|&i| a[i * n + i]).collect();
    let mut vs = vec![0.0; n * n];
    for (c, &src) in order.iter().enumerate() {
        for r in 0..n {
            vs[r * n + c] = v[r * n + src];
        }
    }
    (w, vs)
}

/// `linalg_eigh(A, UPLO)` (`(eigenvalues, eigenvectors)`) and `linalg_eigvalsh`: `A`'s lower
/// (`"L"`) or upper (`"U"`) triangle read as a symmetric matrix.
fn eigh(op: &'static str, args: &[IValue], vectors: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let lower = match a.opt_str(1)?.unwrap_or("L") {
        "L" | "l" => true,
        "U" | "u" => false,
        other => return Err(KernelError::new(op, format!("Expected UPLO argument to be 'L' or 'U', but got {other}"))),
    };
    let b = read_square(op, t)?;
    let n = b.rows;
    let (mut ws, mut vs) = (Vec::new(), Vec::new());
    for m in 0..b.count() {
        let src = b.matrix(m);
        let mut s = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                let (r, c) = if (i >= j) == lower { (i, j) } else { (j, i) };
                s[i * n + j] = src[r * n + c];
            }
        }
        let (w, v) = jacobi_eigh(&s, n);
        ws.extend(w);
        vs.extend(v);
    }
    let w = write(t.dtype(), &with_tail(&b.lead, &[n]), ws)?;
    if vectors {
        return Ok(outs([w, write(t.dtype(), t.sizes(), vs)?]));
    }
    Ok(outs([w]))
}

/// The thin SVD of `a` (`m × n`) by one-sided Jacobi: `(U [m × k], S [k], V [n × k])` with
/// `k = min(m, n)`, singular values descending; `full` completes `U` to `m × m` and `V` to
/// `n × n` with orthonormal columns.
fn jacobi_svd(a: &[f64], m: usize, n: usize, full: bool) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m < n {
        let (v, s, u) = jacobi_svd(&transpose(a, m, n), n, m, full);
        return (u, s, v);
    }
    // Columns of `w` (m × n) are rotated until orthogonal; `v` (n × n) accumulates the rotations.
    let mut w = transpose(a, m, n); // row `j` of `w` is column `j` of `a`.
    let mut v = identity(n); // row `j` is column `j` of V.
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (wp, wq) = (&w[p * m..(p + 1) * m], &w[q * m..(q + 1) * m]);
                let alpha: f64 = wp.iter().map(|x| x * x).sum();
                let beta: f64 = wq.iter().map(|x| x * x).sum();
                let gamma: f64 = wp.iter().zip(wq).map(|(x, y)| x * y).sum();
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let t = if zeta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for mat in [(&mut w, m), (&mut v, n)] {
                    let (x, len) = mat;
                    for k in 0..len {
                        let (xp, xq) = (x[p * len + k], x[q * len + k]);
                        x[p * len + k] = c * xp - s * xq;
                        x[q * len + k] = s * xp + c * xq;
                    }
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n).map(|j| w[j * m..(j + 1) * m].iter().map(|x| x * x).sum::<f64>().sqrt()).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| norms[j].total_cmp(&norms[i]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let mut ucols: Vec<Vec<f64>> = Vec::new();
    let mut vcols: Vec<Vec<f64>> = Vec::new();
    let tiny = s.first().copied().unwrap_or(0.0) * f64::EPSILON * m as f64;
    for (&j, &sj) in order.iter().zip(&s) {
        vcols.push(v[j * n..(j + 1) * n].to_vec());
        // A zero singular value's left vector is any unit vector orthogonal to the others.
        ucols.push(if sj > tiny { w[j * m..(j + 1) * m].iter().map(|x| x / sj).collect() } else { Vec::new() });
    }
    let ucols = complete(ucols, m, if full { m } else { n });
    let vcols = complete(vcols, n, n);
    let cols_to_matrix = |cols: &[Vec<f64>], rows: usize| -> Vec<f64> {
        let k = cols.len();
        let mut out = vec![0.0; rows * k];
        for (c, col) in cols.iter().enumerate() {
            for r in 0..rows {
                out[r * k + c] = col[r];
            }
        }
        out
    };
    (cols_to_matrix(&ucols, m), s, cols_to_matrix(&vcols, n))
}

/// Fills the empty columns of `cols` and appends more up to `want`, each a unit vector of
/// length `len` orthogonal to the others (Gram–Schmidt over the standard basis).
fn complete(mut cols: Vec<Vec<f64>>, len: usize, want: usize) -> Vec<Vec<f64>> {
    cols.resize(want, Vec::new());
    let mut basis = 0;
    for c in 0..want {
        if !cols[c].is_empty() {
            continue;
        }
        while basis < len {
            let mut e = vec![0.0; len];
            e[basis] = 1.0;
            basis += 1;
            for _ in 0..2 {
                for other in cols.iter().filter(|o| !o.is_empty()) {
                    let d: f64 = other.iter().zip(&e).map(|(x, y)| x * y).sum();
                    for (ei, oi) in e.iter_mut().zip(other) {
                        *ei -= d * oi;
                    }
                }
            }
            let norm = e.iter().map(|x| x * x).sum::<f64>().sqrt();
            if norm > 1e-6 {
                cols[c] = e.iter().map(|x| x / norm).collect();
                break;
            }
        }
    }
    cols
}

/// The SVD of every matrix of `t`: `(lead, m, n, U, S, V)` with `U`, `V` as [`jacobi_svd`]
/// returns them, concatenated over the batch.
#[allow(clippy::type_complexity)]
fn svd_all(op: &'static str, t: &Tensor, full: bool) -> Result<(Vec<usize>, usize, usize, Vec<f64>, Vec<f64>, Vec<f64>)> {
    let b = read(op, t)?;
    let (m, n) = (b.rows, b.cols);
    let (mut us, mut ss, mut vs) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..b.count() {
        let (u, s, v) = jacobi_svd(b.matrix(i), m, n, full);
        us.extend(u);
        ss.extend(s);
        vs.extend(v);
    }
    Ok((b.lead, m, n, us, ss, vs))
}

/// Transposes each `rows × cols` matrix of a batch.
fn transpose_each(data: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    data.chunks(rows * cols).flat_map(|m| transpose(m, rows, cols)).collect()
}

/// `linalg_svd(A, full_matrices)`: `(U, S, Vh)`.
fn linalg_svd(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINALG_SVD.name();
    let a = Args::new(OP, args, 1)?;
    let t = a.tensor(0)?;
    let full = a.opt_bool(1)?.unwrap_or(true);
    let (lead, m, n, u, s, v) = svd_all(OP, t, full)?;
    let k = m.min(n);
    let (uc, vc) = if full { (m, n) } else { (k, k) };
    let vh = transpose_each(&v, n, vc);
    let dt = t.dtype();
    Ok(outs([write(dt, &with_tail(&lead, &[m, uc]), u)?, write(dt, &with_tail(&lead, &[k]), s)?, write(dt, &with_tail(&lead, &[vc, n]), vh)?]))
}

/// `linalg_svdvals(A)`.
fn svdvals(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINALG_SVDVALS.name();
    let t = Args::new(OP, args, 1)?.tensor(0)?;
    let (lead, m, n, _, s, _) = svd_all(OP, t, false)?;
    Ok(outs([write(t.dtype(), &with_tail(&lead, &[m.min(n)]), s)?]))
}

/// `svd(self, some, compute_uv)`: `(U, S, V)` (`V`, not its transpose); without `compute_uv`,
/// `U` and `V` are zero-filled as in PyTorch.
fn svd(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::SVD.name();
    let a = Args::new(OP, args, 1)?;
    let t = a.tensor(0)?;
    let some = a.opt_bool(1)?.unwrap_or(true);
    let compute_uv = a.opt_bool(2)?.unwrap_or(true);
    let (lead, m, n, u, s, v) = svd_all(OP, t, !some)?;
    let k = m.min(n);
    let (uc, vc) = if some { (k, k) } else { (m, n) };
    let dt = t.dtype();
    let s = write(dt, &with_tail(&lead, &[k]), s)?;
    if !compute_uv {
        return Ok(outs([Tensor::zeros(dt, &with_tail(&lead, &[m, uc]))?, s, Tensor::zeros(dt, &with_tail(&lead, &[n, vc]))?]));
    }
    Ok(outs([write(dt, &with_tail(&lead, &[m, uc]), u)?, s, write(dt, &with_tail(&lead, &[n, vc]), v)?]))
}

/// The pseudo-inverse `V·diag(1/s)·Uᵀ` over the singular values above
/// `max(atol, rtol·s_max)`.
fn pinv_with(op: &'static str, t: &Tensor, atol: f64, rtol: f64) -> Result<Tensor> {
    let (lead, m, n, u, s, v) = svd_all(op, t, false)?;
    let k = m.min(n);
    let mut out = Vec::with_capacity(lead.iter().product::<usize>() * n * m);
    for b in 0..lead.iter().product() {
        let (u, s, v) = (&u[b * m * k..(b + 1) * m * k], &s[b * k..(b + 1) * k], &v[b * n * k..(b + 1) * n * k]);
        let cut = atol.max(rtol * s.first().copied().unwrap_or(0.0));
        let mut p = vec![0.0; n * m];
        for (c, &sc) in s.iter().enumerate() {
            if sc <= cut || sc == 0.0 {
                continue;
            }
            for i in 0..n {
                let vi = v[i * k + c] / sc;
                for j in 0..m {
                    p[i * m + j] += vi * u[j * k + c];
                }
            }
        }
        out.extend(p);
    }
    write(t.dtype(), &with_tail(&lead, &[n, m]), out)
}

/// The default relative tolerance of `linalg_pinv`: the dtype's epsilon times `max(m, n)`.
fn default_rtol(t: &Tensor) -> f64 {
    let eps = if t.dtype() == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let s = t.sizes();
    let mn = if s.len() >= 2 { s[s.len() - 2].max(s[s.len() - 1]) } else { 1 };
    eps * mn as f64
}

/// `linalg_pinv(self, rcond, hermitian)` and `pinverse(self, rcond)`: `rcond` is the relative tolerance.
fn pinv_rcond(op: &'static str, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let rcond = a.opt_float(1)?.unwrap_or(1e-15);
    Ok(outs([pinv_with(op, t, 0.0, rcond)?]))
}

/// `linalg_pinv.atol_rtol_float(self, atol, rtol, hermitian)`: with neither tolerance, `rtol`
/// is the dtype's epsilon times `max(m, n)`; with only `atol`, `rtol` is 0.
fn pinv_atol_rtol(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINALG_PINV_ATOL_RTOL_FLOAT.name();
    let a = Args::new(OP, args, 1)?;
    let t = a.tensor(0)?;
    let (atol, rtol) = (a.opt_float(1)?, a.opt_float(2)?);
    let rtol = match (atol, rtol) {
        (_, Some(r)) => r,
        (Some(a), None) if a > 0.0 => 0.0,
        _ => default_rtol(t),
    };
    Ok(outs([pinv_with(OP, t, atol.unwrap_or(0.0), rtol)?]))
}

/// `linalg_lu_factor(A, pivot)` (`(LU, pivots)`; a zero pivot is an error) and
/// `_lu_with_info(self, pivot, check_errors)` (`(LU, pivots, info)`, never an error, as in
/// PyTorch): LAPACK's packed factors and 1-based row swaps of each `m × n` matrix.
fn lu_factor(op: &'static str, args: &[IValue], with_info: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    if !a.opt_bool(1)?.unwrap_or(true) {
        return Err(KernelError::new(op, "LU without pivoting is not implemented on the CPU"));
    }
    let b = read(op, t)?;
    let (m, n) = (b.rows, b.cols);
    let (mut lus, mut pivots, mut infos) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..b.count() {
        let f = lu_rect(b.matrix(i), m, n);
        if f.info != 0 && !with_info {
            let k = f.info;
            return Err(KernelError::new(op, format!("U[{k},{k}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")));
        }
        lus.extend(f.lu);
        pivots.extend(f.swaps.iter().map(|&p| p as i32 + 1));
        infos.push(f.info as i32);
    }
    let mut r = vec![write(t.dtype(), t.sizes(), lus)?, Tensor::from_vec(pivots, &with_tail(&b.lead, &[m.min(n)]))?];
    if with_info {
        r.push(Tensor::from_vec(infos, &b.lead)?);
    }
    Ok(outs(r))
}

/// `lu_solve(B, LU, pivots)`: `A·X = B` from `A`'s packed LU factors and 1-based row swaps,
/// batches broadcast.
fn lu_solve(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LU_SOLVE.name();
    let a = Args::new(OP, args, 3)?;
    let (tb, tlu, tp) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    let (bm, lum) = (read(OP, tb)?, read_square(OP, tlu)?);
    let n = lum.rows;
    let piv = tp.to_vec_i64();
    let bad = || KernelError::new(OP, format!("Incompatible shapes of B, LU and pivots: {:?}, {:?} and {:?}", tb.sizes(), tlu.sizes(), tp.sizes()));
    if bm.rows != n || piv.len() != lum.count() * n {
        return Err(bad());
    }
    let lead = crate::tensor::broadcast_shapes(&bm.lead, &lum.lead).map_err(|_| bad())?;
    let k = bm.cols;
    let mut out = Vec::new();
    for i in 0..lead.iter().product() {
        let (ib, il) = (broadcast_index(i, &lead, &bm.lead), broadcast_index(i, &lead, &lum.lead));
        let mut x = bm.matrix(ib).to_vec();
        for (r, &p) in piv[il * n..(il + 1) * n].iter().enumerate() {
            let p = usize::try_from(p - 1).ok().filter(|&p| p < n).ok_or_else(|| KernelError::new(OP, format!("pivot {p} is out of range for {n} rows")))?;
            for j in 0..k {
                x.swap(r * k + j, p * k + j);
            }
        }
        out.extend(substitute(lum.matrix(il), n, x, k));
    }
    Ok(outs([write(tb.dtype(), &with_tail(&lead, &[n, k]), out)?]))
}

pub(super) fn register(r: &mut KernelRegistry) {
    r.register(op::LINALG_INV, |a| inv(op::LINALG_INV.name(), a));
    r.register(op::INVERSE, |a| inv(op::INVERSE.name(), a));
    r.register(op::LINALG_DET, |a| det(op::LINALG_DET.name(), a));
    r.register(op::DET, |a| det(op::DET.name(), a));
    r.register(op::LINALG_SLOGDET, |a| slogdet(op::LINALG_SLOGDET.name(), a, false));
    r.register(op::SLOGDET, |a| slogdet(op::SLOGDET.name(), a, false));
    r.register(op::LOGDET, |a| slogdet(op::LOGDET.name(), a, true));
    r.register(op::LINALG_SOLVE, |a| solve(op::LINALG_SOLVE.name(), a, false));
    r.register(op::LINALG_SOLVE_EX, |a| solve(op::LINALG_SOLVE_EX.name(), a, true));
    r.register(op::LINALG_CHOLESKY, cholesky);
    r.register(op::LINALG_EIGH, |a| eigh(op::LINALG_EIGH.name(), a, true));
    r.register(op::LINALG_EIGVALSH, |a| eigh(op::LINALG_EIGVALSH.name(), a, false));
    r.register(op::LINALG_SVD, linalg_svd);
    r.register(op::LINALG_SVDVALS, svdvals);
    r.register(op::SVD, svd);
    r.register(op::LINALG_PINV, |a| pinv_rcond(op::LINALG_PINV.name(), a));
    r.register(op::PINVERSE, |a| pinv_rcond(op::PINVERSE.name(), a));
    r.register(op::LINALG_PINV_ATOL_RTOL_FLOAT, pinv_atol_rtol);
    r.register(op::LINALG_LU_FACTOR, |a| lu_factor(op::LINALG_LU_FACTOR.name(), a, false));
    r.register(op::_LU_WITH_INFO, |a| lu_factor(op::_LU_WITH_INFO.name(), a, true));
    r.register(op::LU_SOLVE, lu_solve);
    r.register(op::LINALG_LDL_FACTOR, |a| ldl::ldl_factor(op::LINALG_LDL_FACTOR.name(), a, false));
    r.register(op::LINALG_LDL_FACTOR_EX, |a| ldl::ldl_factor(op::LINALG_LDL_FACTOR_EX.name(), a, true));
    r.register(op::LINALG_LDL_SOLVE, ldl::ldl_solve);
}
