//! Padding kernels: `constant_pad_nd` (negative pads crop), `reflection_pad1d/2d/3d`,
//! `replication_pad1d/2d/3d`, and the non-core `pad` with its constant, reflect, replicate
//! and circular modes.
//!
//! Pads are given as (before, after) pairs starting from the last dim, as in `F.pad`. Every
//! mode is an index map from output to input positions along each padded dim (or "no
//! source" for constant fill), applied to a contiguous copy of the input; all dtypes work.

use dialect_aten::op;
use super::linalg::outs;
use super::{Args, KernelRegistry};
use crate::tensor::shape::contiguous_strides;
use crate::tensor::{KernelError, Result, Scalar, Tensor};
use crate::value::IValue;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Constant,
    Reflect,
    Replicate,
    Circular,
}

/// Input position of output position `o` along a dim of `size` padded by `before`, or `None`
/// where the output is constant fill.
fn source(mode: Mode, o: i64, before: i64, size: i64) -> Option<usize> {
    let i = o - before;
    let j = match mode {
        Mode::Constant => {
            if i < 0 || i >= size {
                return None;
            }
            i
        }
        Mode::Reflect => {
            let mut i = i;
            if i < 0 {
                i = -i;
            }
            if i >= size {
                i = 2 * (size - 1) - i;
            }
            i
        }
        Mode::Replicate => i.clamp(0, size - 1),
        Mode::Circular => i.rem_euclid(size),
    };
    Some(j as usize)
}

/// Pads the trailing `pad.len() / 2` dims of `x`.
fn pad_impl(op: &'static str, x: &Tensor, pad: &[i64], mode: Mode, value: Scalar) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(KernelError::new(op, format!("padding length must be divisible by 2, got {}", pad.len())));
    }
    let k = pad.len() / 2;
    if k > x.dim() {
        return Err(KernelError::new(
            op,
            format!("padding length {} is too large for a {}-D input {:?}", pad.len(), x.dim(), x.sizes()),
        ));
    }
    let sizes = x.sizes();
    let nd = sizes.len();
    let mut out_sizes = sizes.to_vec();
    // maps[d] for padded dims: output position -> input position.
    let mut maps: Vec<Option<Vec<Option<usize>>>> = vec![None; nd];
    for j in 0..k {
        let d = nd - 1 - j;
        let (before, after) = (pad[2 * j], pad[2 * j + 1]);
        let size = sizes[d] as i64;
        let new = size
            .checked_add(before)
            .and_then(|v| v.checked_add(after))
            .ok_or_else(|| KernelError::new(op, format!("padding ({before}, {after}) is out of range")))?;
        if new < 0 || (new == 0 && mode != Mode::Constant) {
            return Err(KernelError::new(
                op,
                format!(
                    "the input size {size} at dim {d}, plus padding ({before}, {after}), gives an invalid output size {new}"
                ),
            ));
        }
        match mode {
            Mode::Reflect if before >= size || after >= size => {
                return Err(KernelError::new(
                    op,
                    format!("padding ({before}, {after}) should be less than the input size {size} at dim {d}"),
                ));
            }
            Mode::Replicate | Mode::Circular if size == 0 => {
                return Err(KernelError::new(op, format!("cannot pad an empty dim {d}")));
            }
            Mode::Circular if before > size || after > size => {
                return Err(KernelError::new(
                    op,
                    format!("padding ({before}, {after}) should be at most the input size {size} at dim {d}"),
                ));
            }
            _ => {}
        }
        out_sizes[d] = new as usize;
    }
    // Allocate the output first (fallibly) so that absurd pads fail cleanly.
    let out_t = Tensor::zeros(x.dtype(), &out_sizes)?;
    if out_t.numel() == 0 {
        return Ok(out_t);
    }
    for j in 0..k {
        let d = nd - 1 - j;
        let (before, size) = (pad[2 * j], sizes[d] as i64);
        maps[d] = Some((0..out_sizes[d] as i64).map(|o| source(mode, o, before, size)).collect());
    }
    let in_strides = contiguous_strides(sizes);
    crate::dispatch_all_dtypes!(x.dtype(), T => {
        let src = x.to_vec::<T>()?;
        let fill: T = value.to_element();
        let total: usize = out_sizes.iter().product();
        let mut out = Vec::new();
        out.try_reserve_exact(total).map_err(|_| KernelError::new(op, format!("cannot allocate output {out_sizes:?}")))?;
        let mut pos = vec![0usize; nd];
        for _ in 0..total {
            let mut off = Some(0usize);
            for d in 0..nd {
                let p = match &maps[d] {
                    Some(m) => m[pos[d]],
                    None => Some(pos[d]),
                };
                off = match (off, p) {
                    (Some(o), Some(p)) => Some(o + p * in_strides[d]),
                    _ => None,
                };
            }
            out.push(off.map_or(fill, |o| src[o]));
            for d in (0..nd).rev() {
                pos[d] += 1;
                if pos[d] < out_sizes[d] {
                    break;
                }
                pos[d] = 0;
            }
        }
        Tensor::from_vec(out, &out_sizes)
    })
}

fn constant_pad_nd(args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op::CONSTANT_PAD_ND, args, 2)?;
    let value = a.opt_scalar(2)?.unwrap_or(Scalar::Int(0));
    Ok(outs([pad_impl(a.op, a.tensor(0)?, &a.int_list(1)?, Mode::Constant, value)?]))
}

/// `reflection_padNd` / `replication_padNd`: `k` padded dims on a `k+1`- or `k+2`-D input.
fn mode_pad(op: &'static str, k: usize, mode: Mode, args: &[IValue]) -> Result<Vec<IValue>> {
    let a = Args::new(op, args, 2)?;
    let x = a.tensor(0)?;
    let pad = a.int_list(1)?;
    if pad.len() != 2 * k {
        return Err(KernelError::new(op, format!("expected {} padding values, got {}", 2 * k, pad.len())));
    }
    if x.dim() != k + 1 && x.dim() != k + 2 {
        return Err(KernelError::new(op, format!("expected a {}-D or {}-D input, got {:?}", k + 1, k + 2, x.sizes())));
    }
    Ok(outs([pad_impl(op, x, &pad, mode, Scalar::Int(0))?]))
}

fn reflection_pad1d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REFLECTION_PAD1D.name(), 1, Mode::Reflect, args)
}
fn reflection_pad2d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REFLECTION_PAD2D.name(), 2, Mode::Reflect, args)
}
fn reflection_pad3d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REFLECTION_PAD3D.name(), 3, Mode::Reflect, args)
}
fn replication_pad1d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REPLICATION_PAD1D.name(), 1, Mode::Replicate, args)
}
fn replication_pad2d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REPLICATION_PAD2D.name(), 2, Mode::Replicate, args)
}
fn replication_pad3d(args: &[IValue]) -> Result<Vec<IValue>> {
    mode_pad(op::REPLICATION_PAD3D.name(), 3, Mode::Replicate, args)
}

/// `pad(self, pad, mode="constant", value=None)`.
fn pad(args: &[IValue]) -> Result<Vec<IValue>> {
    const OP: &str = op::PAD.name();
    let a = Args::new(OP, args, 2)?;
    let mode = match a.opt_str(2)?.unwrap_or("constant") {
        "constant" => Mode::Constant,
        "reflect" => Mode::Reflect,
        "replicate" => Mode::Replicate,
        "circular" => Mode::Circular,
        other => return Err(KernelError::new(OP, format!("unsupported padding mode '{other}'"))),
    };
    let value = a.opt_float(3)?;
    if value.is_some_and(|v| v != 0.0) && mode != Mode::Constant {
        return Err(KernelError::new(OP, "padding mode doesn't take in value argument"));
    }
    let value = value.map_or(Scalar::Int(0), Scalar::Float);
    Ok(outs([pad_impl(OP, a.tensor(0)?, &a.int_list(1)?, mode, value)?]))
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::CONSTANT_PAD_ND, constant_pad_nd);
    r.register(op::REFLECTION_PAD1D, reflection_pad1d);
    r.register(op::REFLECTION_PAD2D, reflection_pad2d);
    r.register(op::REFLECTION_PAD3D, reflection_pad3d);
    r.register(op::REPLICATION_PAD1D, replication_pad1d);
    r.register(op::REPLICATION_PAD2D, replication_pad2d);
    r.register(op::REPLICATION_PAD3D, replication_pad3d);
    r.register(op::PAD, pad);
}
