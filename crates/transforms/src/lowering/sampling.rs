//! Decompositions of the spatial sampling ops: `grid_sampler` (the 2-d or 3-d sampler its
//! input's rank names) and `affine_grid_generator` (each output position's normalized
//! coordinates, `[x, y, 1]` or `[x, y, z, 1]`, times the transposed affine matrices, one `bmm`).

use super::composite::static_shape;
use super::decompose::{DecompResult, DecompositionTable, cast, input, one};
use super::rewrite::{Arg, OpBuilder};
use super::stacking::{int, ints};
use dialect_aten::op;
use ir::{Attribute, DType, OpId, ValueId};

/// Adds the sampling decompositions to `t`.
pub(super) fn add(t: &mut DecompositionTable) {
    t.insert(op::GRID_SAMPLER, |b, op| {
        let (x, g) = (input(b, op, "input")?, input(b, op, "grid")?);
        let (mode, pad, align) = b.with_args(op, |a| (a.int("interpolation_mode"), a.int("padding_mode"), a.bool("align_corners")))?;
        let mode = mode.ok_or("grid_sampler: interpolation_mode must be constant")?;
        let pad = pad.ok_or("grid_sampler: padding_mode must be constant")?;
        let align = align.ok_or("grid_sampler: align_corners must be constant")?;
        let target = match b.rank(x) {
            Some(4) => op::GRID_SAMPLER_2D,
            Some(5) => op::GRID_SAMPLER_3D,
            Some(r) => return Err(format!("grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got input with {r} dimensions")),
            None => return Err("grid_sampler: the input's rank is unknown".into()),
        };
        if target == op::GRID_SAMPLER_3D && mode == 2 {
            return Err("grid_sampler(): bicubic interpolation only supports 4D input".into());
        }
        one(b.call(target, &[x.into(), g.into(), int(mode), int(pad), Arg::A(Attribute::Bool(align))]))
    })
    .insert(op::AFFINE_GRID_GENERATOR, affine_grid);
}

/// `n` evenly spaced coordinates from −1 to 1 (each scaled by `(n−1)/n` without
/// `align_corners`, so they name pixel centres), as a tensor of `dt`; `[0]` when `n` is 1.
fn coords(b: &mut OpBuilder, n: i64, align: bool, dt: DType) -> Result<ValueId, String> {
    let i = b.call(op::ARANGE, &[int(n), Arg::A(dialect_prim::kinds::dtype(DType::F64))])?;
    let (step, start) = if n <= 1 {
        (0.0, 0.0)
    } else {
        let s = 2.0 / (n - 1) as f64;
        let k = if align { 1.0 } else { (n - 1) as f64 / n as f64 };
        (s * k, -k)
    };
    let v = b.call(op::MUL_SCALAR, &[i.into(), Arg::A(Attribute::float(step))])?;
    let v = b.call(op::ADD_SCALAR, &[v.into(), Arg::A(Attribute::float(start))])?;
    cast(b, v, dt)
}

/// `affine_grid_generator(theta, size, align_corners)`: the `[N, H, W, 2]` (or `[N, D, H, W, 3]`)
/// sampling grid of the affine maps `theta` (`[N, 2, 3]` or `[N, 3, 4]`).
fn affine_grid(b: &mut OpBuilder, op: OpId) -> DecompResult {
    let theta = input(b, op, "theta")?;
    let (size, align) = b.with_args(op, |a| (a.ints("size"), a.bool("align_corners")))?;
    let size = size.ok_or("affine_grid_generator: size must be constant")?;
    let align = align.ok_or("affine_grid_generator: align_corners must be constant")?;
    let dt = b.dtype(theta).ok_or("affine_grid_generator: theta's dtype is unknown")?;
    if !dt.is_floating() {
        return Err(format!("affine_grid_generator: theta must be floating-point, got {}", dt.torch_name()));
    }
    let spatial: Vec<i64> = match size.len() {
        4 | 5 => size[2..].to_vec(),
        n => return Err(format!("affine_grid_generator: size must have 4 or 5 elements, got {n}")),
    };
    let k = spatial.len() as i64;
    let n = size[0];
    let ts = static_shape(b, theta, "affine_grid_generator")?;
    if ts != [n, k, k + 1] {
        return Err(format!("affine_grid_generator: expected theta of shape [{n}, {k}, {}], got {ts:?}", k + 1));
    }
    // The base grid `[*spatial, k + 1]`: x varies along the last spatial dim, then y, then z.
    let mut parts = Vec::new();
    let mut whole = spatial.clone();
    whole.push(1);
    for axis in 0..k as usize {
        // Coordinate `axis` (x first) runs along spatial dim `k − 1 − axis`.
        let d = k as usize - 1 - axis;
        let c = coords(b, spatial[d], align, dt)?;
        let mut shape = vec![1; k as usize + 1];
        shape[d] = spatial[d];
        let c = b.call(op::RESHAPE, &[c.into(), ints(&shape)])?;
        parts.push(b.call(op::EXPAND, &[c.into(), ints(&whole)])?);
    }
    parts.push(b.call(op::FULL, &[ints(&whole), Arg::A(Attribute::Int(1)), Arg::A(dialect_prim::kinds::dtype(dt))])?);
    let l = b.list(parts)?;
    let base = b.call(op::CAT, &[l.into(), int(-1)])?;
    let points: i64 = spatial.iter().product();
    let base = b.call(op::RESHAPE, &[base.into(), ints(&[1, points, k + 1])])?;
    let base = b.call(op::EXPAND, &[base.into(), ints(&[n, points, k + 1])])?;
    let tt = b.call(op::PERMUTE, &[theta.into(), ints(&[0, 2, 1])])?;
    let g = b.call(op::BMM, &[base.into(), tt.into()])?;
    let mut out = vec![n];
    out.extend(&spatial);
    out.push(k);
    one(b.call(op::RESHAPE, &[g.into(), ints(&out)]))
}
