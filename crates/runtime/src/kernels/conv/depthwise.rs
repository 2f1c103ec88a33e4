//! Depthwise convolutions (as many groups as input and output channels, 1-d or 2-d, `f32`)
//! through the direct kernel `kernels::depthwise` instead of one GEMM per channel.

use super::*;
use ::kernels::depthwise::{Depthwise, depthwise};

impl Geometry {
    /// The direct kernel's geometry when this is a forward depthwise convolution of at most two
    /// spatial dims with a channel multiplier of 1.
    pub(super) fn depthwise(&self) -> Option<Depthwise> {
        let dw = !self.transposed
            && self.groups == self.cin
            && self.cout == self.cin
            && self.input[0] == 1
            && self.kernel[0] == 1
            && self.output[0] == 1;
        dw.then(|| Depthwise {
            channels: self.cin,
            input: [self.input[1], self.input[2]],
            output: [self.output[1], self.output[2]],
            kernel: [self.kernel[1], self.kernel[2]],
            stride: [self.stride[1], self.stride[2]],
            pad: [self.pad_lo[1], self.pad_lo[2]],
            dilation: [self.dilation[1], self.dilation[2]],
        })
    }
}

/// Runs the convolution through the direct depthwise kernel when `g` is a depthwise one and
/// the element type is `f32`; `None` when it is not (the caller takes the GEMM path).
pub(super) fn try_depthwise<T: ConvElem>(
    op: &'static str,
    g: &Geometry,
    x: &[T],
    w: &[T],
    bias: Option<&[T]>,
    out: &mut [T],
) -> Option<Result<()>> {
    let d = g.depthwise()?;
    let (x, w, out) = (as_f32(x)?, as_f32(w)?, as_f32_mut(out)?);
    let bias = match bias {
        Some(b) => Some(as_f32(b)?),
        None => None,
    };
    Some(depthwise(op, Isa::current(), &d, g.n, x, w, bias, Activation::None, out).map_err(Into::into))
}

fn as_f32<T: 'static>(s: &[T]) -> Option<&[f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: `T` is `f32`.
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f32>(), s.len()) })
}

fn as_f32_mut<T: 'static>(s: &mut [T]) -> Option<&mut [f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: `T` is `f32`.
        .then(|| unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<f32>(), s.len()) })
}
