//! Result shapes shared by several rules: reductions, pooling windows, views and matrix
//! products.

use super::*;

pub(super) fn reduce_shape(
    shape: &[Dim],
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<Vec<Dim>, String> {
    let rank = shape.len();
    let mut sel = vec![false; rank];
    match dims {
        None | Some([]) => sel.iter_mut().for_each(|s| *s = true),
        Some(ds) => {
            for &d in ds {
                let i = norm_dim(d, rank.max(1))
                    .ok_or_else(|| format!("dimension {d} out of range for rank {rank}"))?;
                if i < rank {
                    sel[i] = true;
                }
            }
        }
    }
    Ok(shape
        .iter()
        .zip(&sel)
        .filter_map(|(d, &s)| {
            if s {
                keepdim.then_some(Dim::Static(1))
            } else {
                Some(d.clone())
            }
        })
        .collect())
}

pub(super) fn pool_out(
    input: &Dim,
    k: i64,
    s: i64,
    p: i64,
    d: i64,
    ceil: bool,
) -> Result<Dim, String> {
    let Dim::Static(n) = input else {
        return Ok(Dim::Unknown);
    };
    if s <= 0 {
        return Err(format!("stride must be positive, got {s}"));
    }
    let eff = n + 2 * p - d * (k - 1) - 1;
    if eff < 0 {
        return Err(format!(
            "input size {n} is too small for kernel {k} with padding {p} and dilation {d}"
        ));
    }
    let mut out = if ceil {
        (eff + s - 1) / s + 1
    } else {
        eff / s + 1
    };
    if ceil && (out - 1) * s >= n + p {
        out -= 1;
    }
    Ok(Dim::Static(out))
}

pub(super) fn pick(list: &[i64], i: usize, default: i64) -> i64 {
    match list.len() {
        0 => default,
        1 => list[0],
        _ => list.get(i).copied().unwrap_or(default),
    }
}

/// The result shape of `view`/`reshape` to `sizes` (one may be -1).
pub fn view_shape(input: Option<&[Dim]>, sizes: &[Dim]) -> Result<Vec<Dim>, String> {
    let infer_at: Vec<usize> = sizes
        .iter()
        .enumerate()
        .filter(|(_, d)| **d == Dim::Static(-1))
        .map(|(i, _)| i)
        .collect();
    if infer_at.len() > 1 {
        return Err("only one dimension can be inferred (-1)".into());
    }
    let mut out = sizes.to_vec();
    let numel = input.map(dim_product);
    if let Some(&i) = infer_at.first() {
        let known: Vec<Dim> = sizes
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, d)| d.clone())
            .collect();
        let known = dim_product(&known);
        out[i] = match &numel {
            Some(n) if *n != Dim::Unknown && known != Dim::Unknown => dim_div_exact(n, &known)
                .ok_or_else(|| {
                    format!(
                        "shape {} is invalid for input of {n} elements",
                        show_shape(sizes)
                    )
                })?,
            _ => Dim::Unknown,
        };
    } else if let (Some(Dim::Static(n)), Dim::Static(k)) = (&numel, dim_product(sizes)) {
        if *n != k {
            return Err(format!(
                "shape {} is invalid for input of {n} elements",
                show_shape(sizes)
            ));
        }
    }
    Ok(out)
}

pub(super) fn matmul_shape(x: &[Dim], y: &[Dim], r: &Ranges) -> Result<Vec<Dim>, String> {
    let check = |a: &Dim, b: &Dim| -> Result<(), String> {
        if let (Dim::Static(p), Dim::Static(q)) = (a, b) {
            if p != q {
                return Err(format!(
                    "contraction dimensions differ: {p} vs {q} (shapes {} and {})",
                    show_shape(x),
                    show_shape(y)
                ));
            }
        }
        Ok(())
    };
    match (x.len(), y.len()) {
        (0, _) | (_, 0) => Err("matmul operands must have at least one dimension".into()),
        (1, 1) => {
            check(&x[0], &y[0])?;
            Ok(vec![])
        }
        (2, 1) => {
            check(&x[1], &y[0])?;
            Ok(vec![x[0].clone()])
        }
        (1, 2) => {
            check(&x[0], &y[0])?;
            Ok(vec![y[1].clone()])
        }
        (2, 2) => {
            check(&x[1], &y[0])?;
            Ok(vec![x[0].clone(), y[1].clone()])
        }
        (n, 1) => {
            check(&x[n - 1], &y[0])?;
            Ok(x[..n - 1].to_vec())
        }
        (1, n) => {
            check(&x[0], &y[n - 2])?;
            let mut out = y[..n - 2].to_vec();
            out.push(y[n - 1].clone());
            Ok(out)
        }
        (p, q) => {
            check(&x[p - 1], &y[q - 2])?;
            let mut out = broadcast_shapes(&x[..p - 2], &y[..q - 2], r)?;
            out.push(x[p - 2].clone());
            out.push(y[q - 1].clone());
            Ok(out)
        }
    }
}
