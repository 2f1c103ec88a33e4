//! `grid_sampler_3d`: samples `[N, C, D, H, W]` volumes at the normalized `(x, y, z)` points of
//! a `[N, D_out, H_out, W_out, 3]` grid, trilinearly (mode 0) or at the nearest voxel (mode 1,
//! ties to even), with zeros, border or reflection padding, the coordinates mapped as
//! `grid_sampler_2d` maps them (`resample`). Values are interpolated in `f32` for
//! `f16`/`bf16`/`f32` and in `f64` for `f64`.

use super::linalg::{Real, compute_dtype, outs, with_real};
use super::resample::{GridPad, compute_coord, round_even, unnormalize};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use dialect_aten::op;

/// The voxel at integer position `(x, y, z)` of a volume, 0 outside.
#[inline(always)]
fn at<T: Real>(v: &[T], x: i64, y: i64, z: i64, (w, h, d): (usize, usize, usize)) -> T {
    if x >= 0 && y >= 0 && z >= 0 && (x as usize) < w && (y as usize) < h && (z as usize) < d {
        v[(z as usize * h + y as usize) * w + x as usize]
    } else {
        T::ZERO
    }
}

fn sample<T: Real>(v: &[T], dims: (usize, usize, usize), g: [T; 3], mode: i64, pad: GridPad, align: bool) -> T {
    let (w, h, d) = dims;
    let ix = compute_coord(unnormalize(g[0], w, align), w, pad, align);
    let iy = compute_coord(unnormalize(g[1], h, align), h, pad, align);
    let iz = compute_coord(unnormalize(g[2], d, align), d, pad, align);
    if ix.is_nan() || iy.is_nan() || iz.is_nan() {
        return if mode == 1 { T::ZERO } else { T::NAN };
    }
    if mode == 1 {
        let r = |c: T| round_even(c).to_f64() as i64;
        return at(v, r(ix), r(iy), r(iz), dims);
    }
    let (x0, y0, z0) = (ix.floor(), iy.floor(), iz.floor());
    let (fx, fy, fz) = (ix - x0, iy - y0, iz - z0);
    let (xi, yi, zi) = (x0.to_f64() as i64, y0.to_f64() as i64, z0.to_f64() as i64);
    let mut acc = T::ZERO;
    for dz in 0..2 {
        let wz = if dz == 0 { T::ONE - fz } else { fz };
        for dy in 0..2 {
            let wy = if dy == 0 { T::ONE - fy } else { fy };
            for dx in 0..2 {
                let wx = if dx == 0 { T::ONE - fx } else { fx };
                acc += at(v, xi + dx, yi + dy, zi + dz, dims) * (wx * wy * wz);
            }
        }
    }
    acc
}

fn grid_sampler_3d(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::GRID_SAMPLER_3D.name();
    let a = Args::new(OP, args, 5)?;
    let (x, grid) = (a.tensor(0)?, a.tensor(1)?);
    let mode = a.int(2)?;
    let pad = GridPad::from_arg(OP, a.int(3)?)?;
    match mode {
        0 | 1 => {}
        2 => return Err(KernelError::new(OP, "bicubic interpolation only supports 4D input")),
        m => return Err(KernelError::new(OP, format!("unknown interpolation mode {m}"))),
    }
    let align = a.bool(4)?;
    if x.dim() != 5 || grid.dim() != 5 || grid.sizes()[4] != 3 || grid.sizes()[0] != x.sizes()[0] {
        return Err(KernelError::new(
            OP,
            format!("expected input [N, C, D, H, W] and grid [N, D_out, H_out, W_out, 3], got {:?} and {:?}", x.sizes(), grid.sizes()),
        ));
    }
    if x.dtype() != grid.dtype() {
        return Err(KernelError::new(OP, "input and grid must have the same dtype"));
    }
    let s = x.sizes();
    let (n, c, d, h, w) = (s[0], s[1], s[2], s[3], s[4]);
    if d == 0 || h == 0 || w == 0 {
        return Err(KernelError::new(OP, format!("input {:?} has an empty spatial dim", x.sizes())));
    }
    let gs = grid.sizes();
    let pts = gs[1] * gs[2] * gs[3];
    let dt = x.dtype();
    let ct = compute_dtype(OP, dt)?;
    let (xw, gw) = (x.cast_to(ct)?.contiguous()?, grid.cast_to(ct)?.contiguous()?);
    let vol = d * h * w;
    let r = with_real!(OP, dt, T => {
        let xd = xw.as_slice::<T>()?;
        let gd = gw.as_slice::<T>()?;
        Tensor::build::<T>(&[n, c, gs[1], gs[2], gs[3]], |out| {
            for b in 0..n {
                for p in 0..pts {
                    let g = (b * pts + p) * 3;
                    let pt = [gd[g], gd[g + 1], gd[g + 2]];
                    for ch in 0..c {
                        let v = &xd[(b * c + ch) * vol..(b * c + ch + 1) * vol];
                        out[(b * c + ch) * pts + p] = sample(v, (w, h, d), pt, mode, pad, align);
                    }
                }
            }
            Ok(())
        })?
    });
    Ok(outs([r.cast_to(dt)?]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::GRID_SAMPLER_3D, grid_sampler_3d);
}
