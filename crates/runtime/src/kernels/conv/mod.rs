//! Convolution kernels (`convolution`, `conv1d/2d/3d` with numeric or `"same"`/`"valid"`
//! padding, `conv_transpose1d/2d/3d`): 1-, 2- and 3-d, strided, padded, dilated, grouped and
//! transposed, with optional bias.
//!
//! Every convolution is lowered to GEMM per (batch, group): the forward case gathers input
//! patches into a column matrix (im2col; skipped for 1×1 kernels with unit stride and no
//! padding) and multiplies the group's weight rows by it; the transposed case multiplies the
//! transposed weight by the input and scatters the columns back into the output (col2im).
//! With a prepacked `f32` filter the column matrix is never built whole: each panel of
//! consecutive output positions is written in the packed GEMM's panel layout and multiplied
//! at once, and the panels split across the intra-op team; a small plane with many output
//! channels is computed pixel-major instead (`pixel_major`: positions as the product's rows,
//! the result copied back into planes). A depthwise convolution (one
//! filter per channel, `f32`) takes the direct kernel `kernels::depthwise` instead.
//! Lower-dimensional convolutions run as 3-d ones with leading unit dims. The same gather
//! and scatter back `im2col` and `col2im` (`F.unfold`/`F.fold`).

use dialect_aten::op;
use super::linalg::{MatView, Real, gemm, outs, widen_halves};
use ::kernels::Isa;
use ::kernels::gemm::{Activation, Bias, Epilogue, HalfRounding, PackedA, PackedB, Post, Tiles, aligned_start, gemm_packed_a_panels_post, gemm_packed_a_post};
use super::{Args, KernelRegistry};
use crate::tensor::{KernelError, Result, Tensor};
use crate::value::IValue;
use ir::DType;

mod depthwise;
mod gemm;
mod im2col;
mod ops;
mod packed;
mod pixel_major;
#[cfg(target_arch = "x86_64")]
mod x86;
#[cfg(test)]
mod tests;

use im2col::*;
use ops::*;
use packed::*;
use pixel_major::*;

pub(crate) use gemm::conv_compute;
pub(crate) use ops::{ConvArgs, Padding, geometry, out_geometry};
pub(crate) use packed::{PackedFilter, conv_compute_packed, conv_pool_applies, conv_pool_packed};
pub(crate) use pixel_major::static_positions;


/// Geometry of one convolution, already padded to three spatial dims.
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    pub n: usize,
    pub cin: usize,
    pub cout: usize,
    pub groups: usize,
    pub input: [usize; 3],
    pub kernel: [usize; 3],
    pub output: [usize; 3],
    pub stride: [usize; 3],
    pub pad_lo: [usize; 3],
    pub dilation: [usize; 3],
    pub transposed: bool,
}

/// The sizes of a convolution's result, `[N, C, spatial…]`, held inline so that working them
/// out on every call allocates nothing.
pub(crate) type ResultSizes = smallvec::SmallVec<[usize; 5]>;

impl Geometry {
    /// `[n, cout]` followed by the last `spatial` (≤ 3) output sizes.
    pub(crate) fn result_sizes(&self, spatial: usize) -> ResultSizes {
        let mut sizes = smallvec::smallvec![self.n, self.cout];
        sizes.extend_from_slice(&self.output[3 - spatial.min(3)..]);
        sizes
    }

    fn kernel_numel(&self) -> usize {
        self.kernel.iter().product()
    }
    fn in_numel(&self) -> usize {
        self.input.iter().product()
    }
    fn out_numel(&self) -> usize {
        self.output.iter().product()
    }
    /// Whether a forward convolution is a plain product of the filter and the input (1×1
    /// kernel, stride 1, no padding): no column tile is needed.
    fn direct(&self) -> bool {
        self.kernel_numel() == 1 && self.stride == [1, 1, 1] && self.pad_lo == [0, 0, 0] && self.in_numel() == self.out_numel()
    }
    /// Output rows per column tile of a forward convolution: as many as fit [`COL_TILE`]
    /// elements (at least one).
    fn band(&self) -> usize {
        let [od, oh, ow] = self.output;
        let rows = od * oh;
        if ow == 0 {
            return rows.max(1);
        }
        let per_row = (self.cin / self.groups) * self.kernel_numel() * ow;
        (COL_TILE / per_row.max(1)).clamp(1, rows.max(1))
    }
}

/// Element types convolution runs in: `f32`/`f64` through GEMM, `i64` (every integer dtype,
/// wrapping like PyTorch's integer convolution) through a plain loop.
pub(crate) trait ConvElem: Copy + PartialEq + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn plus(self, other: Self) -> Self;
    /// `c = a·b + beta·c` with `beta` zero or one.
    fn gemm(
        op: &'static str,
        a: MatView<'_, Self>,
        b: MatView<'_, Self>,
        beta: Self,
        c: &mut [Self],
        ldc: usize,
    ) -> Result<()>;
}

impl<T: Real> ConvElem for T {
    const ZERO: T = <T as Real>::ZERO;
    const ONE: T = <T as Real>::ONE;
    fn plus(self, other: T) -> T {
        self + other
    }
    fn gemm(op: &'static str, a: MatView<'_, T>, b: MatView<'_, T>, beta: T, c: &mut [T], ldc: usize) -> Result<()> {
        gemm(op, <T as Real>::ONE, a, b, beta, c, ldc)
    }
}

impl ConvElem for i64 {
    const ZERO: i64 = 0;
    const ONE: i64 = 1;
    fn plus(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
    fn gemm(
        op: &'static str,
        a: MatView<'_, i64>,
        b: MatView<'_, i64>,
        beta: i64,
        c: &mut [i64],
        ldc: usize,
    ) -> Result<()> {
        if a.cols != b.rows || (a.rows > 0 && (a.rows - 1) * ldc + b.cols > c.len()) {
            return Err(KernelError::new(op, "internal error: integer product shapes do not match"));
        }
        for i in 0..a.rows {
            for j in 0..b.cols {
                let mut acc = if beta == 0 { 0 } else { c[i * ldc + j] };
                for p in 0..a.cols {
                    acc = acc.wrapping_add(a.at(i, p).wrapping_mul(b.at(p, j)));
                }
                c[i * ldc + j] = acc;
            }
        }
        Ok(())
    }
}

pub fn register(r: &mut KernelRegistry) {
    r.register(op::IM2COL, im2col_op);
    r.register(op::COL2IM, col2im_op);
    r.register(op::CONVOLUTION, convolution);
    r.register(op::CONV1D, conv1d);
    r.register(op::CONV2D, conv2d);
    r.register(op::CONV3D, conv3d);
    r.register(op::CONV1D_PADDING, conv1d_padding);
    r.register(op::CONV2D_PADDING, conv2d_padding);
    r.register(op::CONV3D_PADDING, conv3d_padding);
    r.register(op::CONV_TRANSPOSE1D, conv_transpose1d);
    r.register(op::CONV_TRANSPOSE2D_INPUT, conv_transpose2d);
    r.register(op::CONV_TRANSPOSE3D_INPUT, conv_transpose3d);
}
