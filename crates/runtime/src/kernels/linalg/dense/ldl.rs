//! The LDLᵀ factorization of symmetric matrices with Bunch–Kaufman pivoting, as LAPACK's
//! `sytrf`/`sytrs` compute it with the lower triangle (what `linalg_ldl_factor`,
//! `linalg_ldl_factor_ex` and `linalg_ldl_solve` run on the CPU).
//!
//! `LD` holds the unit lower-triangular `L` below the diagonal and the block-diagonal `D` (1×1
//! and 2×2 blocks) on and next to it; the strict upper triangle is zero. `pivots` are LAPACK's
//! 1-based interchanges: a positive `p` at `k` swapped rows and columns `k` and `p` for a 1×1
//! block; `-p` at both `k` and `k+1` swapped `k+1` and `p` for the 2×2 block at `k`. For real
//! dtypes the `hermitian` flag changes nothing. A zero pivot block is reported in `info` (its
//! 1-based index) and is an error only when asked for.

use super::*;

/// The pivot-growth bound of Bunch and Kaufman: `(1 + √17) / 8`.
const ALPHA: f64 = 0.640_388_203_202_208_3;

/// Index (among `idx`) of the first entry of largest magnitude, as BLAS's `i*amax` picks it.
fn argmax_abs(idx: impl Iterator<Item = usize>, val: impl Fn(usize) -> f64) -> (usize, f64) {
    let mut best = (usize::MAX, -1.0);
    for i in idx {
        let v = val(i).abs();
        if v > best.1 || best.0 == usize::MAX {
            best = (i, v);
        }
    }
    best
}

/// Factors the `n × n` row-major matrix `a` in place (only its lower triangle is read) and
/// returns LAPACK's pivots and `info`.
fn factor(a: &mut [f64], n: usize) -> (Vec<i32>, i32) {
    let at = |i: usize, j: usize| i * n + j;
    let mut piv = vec![0i32; n];
    let mut info = 0i32;
    let mut k = 0;
    while k < n {
        let mut kstep = 1;
        let absakk = a[at(k, k)].abs();
        let (imax, colmax) = if k + 1 < n { argmax_abs(k + 1..n, |i| a[at(i, k)]) } else { (k, 0.0) };
        let kp;
        if absakk.max(colmax) == 0.0 || absakk.is_nan() {
            if info == 0 {
                info = k as i32 + 1;
            }
            kp = k;
        } else {
            if absakk >= ALPHA * colmax {
                kp = k;
            } else {
                // The largest off-diagonal magnitude in row/column `imax` of the trailing matrix.
                let (_, mut rowmax) = argmax_abs(k..imax, |j| a[at(imax, j)]);
                if imax + 1 < n {
                    rowmax = rowmax.max(argmax_abs(imax + 1..n, |j| a[at(j, imax)]).1);
                }
                if absakk >= ALPHA * colmax * (colmax / rowmax) {
                    kp = k;
                } else if a[at(imax, imax)].abs() >= ALPHA * rowmax {
                    kp = imax;
                } else {
                    kp = imax;
                    kstep = 2;
                }
            }
            let kk = k + kstep - 1;
            if kp != kk {
                // Symmetric interchange of `kk` and `kp` within the trailing lower triangle.
                for i in kp + 1..n {
                    a.swap(at(i, kk), at(i, kp));
                }
                for j in kk + 1..kp {
                    a.swap(at(j, kk), at(kp, j));
                }
                a.swap(at(kk, kk), at(kp, kp));
                if kstep == 2 {
                    a.swap(at(k + 1, k), at(kp, k));
                }
            }
            if kstep == 1 {
                let r1 = 1.0 / a[at(k, k)];
                for j in k + 1..n {
                    let t = -r1 * a[at(j, k)];
                    for i in j..n {
                        a[at(i, j)] += a[at(i, k)] * t;
                    }
                }
                for i in k + 1..n {
                    a[at(i, k)] *= r1;
                }
            } else if k + 2 < n {
                let d21 = a[at(k + 1, k)];
                let d11 = a[at(k + 1, k + 1)] / d21;
                let d22 = a[at(k, k)] / d21;
                let t = 1.0 / (d11 * d22 - 1.0);
                let d21 = t / d21;
                for j in k + 2..n {
                    let wk = d21 * (d11 * a[at(j, k)] - a[at(j, k + 1)]);
                    let wkp1 = d21 * (d22 * a[at(j, k + 1)] - a[at(j, k)]);
                    for i in j..n {
                        a[at(i, j)] -= a[at(i, k)] * wk + a[at(i, k + 1)] * wkp1;
                    }
                    a[at(j, k)] = wk;
                    a[at(j, k + 1)] = wkp1;
                }
            }
        }
        if kstep == 1 {
            piv[k] = kp as i32 + 1;
        } else {
            piv[k] = -(kp as i32 + 1);
            piv[k + 1] = -(kp as i32 + 1);
        }
        k += kstep;
    }
    for i in 0..n {
        for j in i + 1..n {
            a[at(i, j)] = 0.0;
        }
    }
    (piv, info)
}

/// `linalg_ldl_factor(self, hermitian)` (`(LD, pivots)`) and
/// `linalg_ldl_factor_ex(self, hermitian, check_errors)` (`(LD, pivots, info)`). As in PyTorch,
/// a singular `D` is an error only for `linalg_ldl_factor` and for `_ex` with `check_errors`.
pub(super) fn ldl_factor(op: &'static str, args: &[IValue], with_info: bool) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 1)?;
    let t = a.tensor(0)?;
    let check = !with_info || a.opt_bool(2)?.unwrap_or(false);
    let b = read_square(op, t)?;
    let n = b.rows;
    let (mut lds, mut pivots, mut infos) = (Vec::with_capacity(b.data.len()), Vec::new(), Vec::new());
    for i in 0..b.count() {
        let mut m = b.matrix(i).to_vec();
        let (piv, info) = factor(&mut m, n);
        if check && info > 0 {
            let batch = if b.lead.is_empty() { String::new() } else { format!("(Batch element {i}): ") };
            return Err(KernelError::new(op, format!("{batch}The factorization could not be completed because the input is not invertible: D[{info},{info}] is zero")));
        }
        lds.extend(m);
        pivots.extend(piv);
        infos.push(info);
    }
    let mut r = vec![write(t.dtype(), t.sizes(), lds)?, Tensor::from_vec(pivots, &with_tail(&b.lead, &[n]))?];
    if with_info {
        r.push(Tensor::from_vec(infos, &b.lead)?);
    }
    Ok(outs(r))
}

/// Solves `A·X = B` in place from one matrix's `LD` and pivots, as `sytrs` does with the
/// lower triangle: `L·D·Y = P·B`, then `Lᵀ·(P·X) = Y`.
fn solve_one(ld: &[f64], piv: &[i64], n: usize, x: &mut [f64], k: usize) -> std::result::Result<(), String> {
    let at = |i: usize, j: usize| i * n + j;
    let pivot = |p: i64| usize::try_from(p.abs() - 1).ok().filter(|&p| p < n).ok_or_else(|| format!("pivot {p} is out of range for {n} rows"));
    let swap_rows = |x: &mut [f64], r: usize, s: usize| {
        if r != s {
            for j in 0..k {
                x.swap(r * k + j, s * k + j);
            }
        }
    };
    let mut r = 0;
    while r < n {
        if piv[r] > 0 {
            swap_rows(x, r, pivot(piv[r])?);
            for i in r + 1..n {
                for j in 0..k {
                    x[i * k + j] -= ld[at(i, r)] * x[r * k + j];
                }
            }
            for j in 0..k {
                x[r * k + j] /= ld[at(r, r)];
            }
            r += 1;
        } else {
            if r + 1 >= n || piv[r + 1] != piv[r] {
                return Err(format!("pivots {} at row {r} do not describe a 2×2 block", piv[r]));
            }
            swap_rows(x, r + 1, pivot(piv[r])?);
            for i in r + 2..n {
                for j in 0..k {
                    x[i * k + j] -= ld[at(i, r)] * x[r * k + j] + ld[at(i, r + 1)] * x[(r + 1) * k + j];
                }
            }
            let akm1k = ld[at(r + 1, r)];
            let akm1 = ld[at(r, r)] / akm1k;
            let ak = ld[at(r + 1, r + 1)] / akm1k;
            let denom = akm1 * ak - 1.0;
            for j in 0..k {
                let bkm1 = x[r * k + j] / akm1k;
                let bk = x[(r + 1) * k + j] / akm1k;
                x[r * k + j] = (ak * bkm1 - bk) / denom;
                x[(r + 1) * k + j] = (akm1 * bk - bkm1) / denom;
            }
            r += 2;
        }
    }
    let mut r = n;
    while r > 0 {
        let c = r - 1;
        let block = if piv[c] > 0 { 1 } else { 2 };
        for col in c + 1 - block..=c {
            for i in c + 1..n {
                for j in 0..k {
                    x[col * k + j] -= ld[at(i, col)] * x[i * k + j];
                }
            }
        }
        swap_rows(x, c, pivot(piv[c])?);
        r -= block;
    }
    Ok(())
}

/// `linalg_ldl_solve(LD, pivots, B, hermitian)`: `A·X = B` from `linalg_ldl_factor`'s result,
/// batch dimensions broadcast.
pub(super) fn ldl_solve(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::LINALG_LDL_SOLVE.name();
    let a = Args::new(OP, args, 3)?;
    let (tld, tp, tb) = (a.tensor(0)?, a.tensor(1)?, a.tensor(2)?);
    if tp.dtype() != DType::I32 {
        return Err(KernelError::new(OP, format!("Expected pivots to be integers. Got {}", tp.dtype().torch_name())));
    }
    if tld.dtype() != tb.dtype() {
        return Err(KernelError::new(OP, format!("LD dtype {} does not match B dtype {}", tld.dtype().torch_name(), tb.dtype().torch_name())));
    }
    let (ld, bm) = (read_square(OP, tld)?, read(OP, tb)?);
    let n = ld.rows;
    let bad = || KernelError::new(OP, format!("Incompatible shapes of LD, pivots and B: {:?}, {:?} and {:?}", tld.sizes(), tp.sizes(), tb.sizes()));
    if bm.rows != n || tp.sizes() != with_tail(&ld.lead, &[n]).as_slice() {
        return Err(bad());
    }
    let piv = tp.to_vec_i64();
    let lead = crate::tensor::broadcast_shapes(&bm.lead, &ld.lead).map_err(|_| bad())?;
    let k = bm.cols;
    let mut out = Vec::with_capacity(lead.iter().product::<usize>() * n * k);
    for i in 0..lead.iter().product() {
        let (ib, il) = (broadcast_index(i, &lead, &bm.lead), broadcast_index(i, &lead, &ld.lead));
        let mut x = bm.matrix(ib).to_vec();
        solve_one(ld.matrix(il), &piv[il * n..(il + 1) * n], n, &mut x, k).map_err(|m| KernelError::new(OP, m))?;
        out.extend(x);
    }
    Ok(outs([write(tb.dtype(), &with_tail(&lead, &[n, k]), out)?]))
}
