//! Fused attention: `softmax(mask(scale(q·kᵀ)))·v` over strided `f32` operands, the native
//! implementation of `backend.kernel {kernel = "attention"}`.
//!
//! The op's region holds the unfused ops (the product of the queries and the transposed keys,
//! the optional scale, the optional mask, the row softmax, the product with the values and
//! the optional permute and copy of the result); its attributes, written by the pass that
//! formed it (`fuse-attention`), say which of them are present:
//!
//! - `scale` (a multiplier) or `divisor`: the scores are multiplied (divided) by it, in `f32`;
//! - `mask = "fill" | "keep" | "add"` with `fill`: `where(mask, fill, s)`, `where(mask, s,
//!   fill)` or `s + mask`; `mask_heads` is the second of the four dims the scores have where
//!   the mask applies (0 when they have three), which the mask is broadcast against;
//! - `output = "bmm" | "split" | "permuted"` with `out_heads`: the result is the second product
//!   (`[N, L, Ev]`), its view as `[N/h, h, L, Ev]`, or that view permuted to `[N/h, L, h, Ev]`
//!   (contiguous, as the copy that follows the permute makes it);
//! - `safe_softmax = true`: the softmax is `_safe_softmax`'s, whose rows of scores that are all
//!   `-inf` give zero probabilities (not NaN).
//!
//! The operands are the queries `[…, L, E]`, the transposed keys `[…, E, S]` and the values
//! `[…, S, Ev]`, each of rank 3 or 4 (the leading dims merged into `N` batches), and the mask:
//! the views the unfused program copies before its products, read here in place at their
//! strides. Each task computes a block of query rows of one batch: the scores with the packed
//! GEMM (`packed::gemm_activations`), scale and mask in one pass, the rows softmaxed with the
//! interpreter's own row routine (so a fully masked row is NaN, as PyTorch's math path gives,
//! or zeros after a safe softmax),
//! the product with the values, then the rows copied into the output's layout. Blocks depend
//! only on the shapes, and each is computed whole by one thread, so the result has the same
//! bits on any number of threads. Scratch lives in per-thread buffers; a call allocates only
//! its output.

use std::sync::Arc;

use ir::{Attribute, DType, Module, OpId};

use super::linalg::MatView;
use ::kernels::Isa;
use ::kernels::transpose::transpose_into;
use ::kernels::gemm::{self as packed, Epilogue};
use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use crate::tensor::{KernelError, Result, Tensor};

mod compute;
mod layout;
mod rows;
#[cfg(test)]
mod tests;

use layout::*;
use rows::*;

pub(crate) use compute::attention;


const OP: &str = "attention";

/// How the scores are scaled before the mask.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scale {
    None,
    Mul(f32),
    Div(f32),
}

/// How the mask applies to the scaled scores.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Mask {
    None,
    /// `where(mask, fill, s)`: a boolean mask, true where the score is replaced.
    Fill(f32),
    /// `where(mask, s, fill)`: a boolean mask, true where the score is kept.
    Keep(f32),
    /// `s + mask`: an `f32` mask.
    Add,
}

/// The layout of the result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// `[N, L, Ev]`, as the second batched product gives it.
    Bmm,
    /// `[N/h, h, L, Ev]`.
    Split(usize),
    /// `[N/h, L, h, Ev]`: heads side by side in each row.
    Permuted(usize),
}

/// What one fused attention computes (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spec {
    pub scale: Scale,
    pub mask: Mask,
    /// The second dim of the scores where the mask applies, when they have four; 0 for three.
    pub mask_heads: usize,
    pub output: Output,
    /// Rows of scores that are all `-inf` give zero probabilities (`_safe_softmax`).
    pub safe: bool,
}

impl Spec {
    /// The spec a `backend.kernel {kernel = "attention"}` op's attributes describe.
    pub(crate) fn of_op(m: &Module, op: OpId) -> std::result::Result<Spec, String> {
        let float = |k: &str| m.attr(op, k).and_then(Attribute::as_number);
        let int = |k: &str| -> std::result::Result<usize, String> {
            let v = m.attr(op, k).and_then(|a| a.as_int()).ok_or_else(|| format!("attribute '{k}' is missing"))?;
            usize::try_from(v).map_err(|_| format!("attribute '{k}' is negative"))
        };
        let scale = match (float("scale"), float("divisor")) {
            (None, None) => Scale::None,
            (Some(s), None) => Scale::Mul(s as f32),
            (None, Some(d)) => Scale::Div(d as f32),
            (Some(_), Some(_)) => return Err("both 'scale' and 'divisor' are given".into()),
        };
        let mask_kind = m.attr(op, "mask").and_then(|a| a.as_str()).unwrap_or("none");
        let fill = || float("fill").map(|f| f as f32).ok_or_else(|| "attribute 'fill' is missing".to_string());
        let mask = match mask_kind {
            "none" => Mask::None,
            "fill" => Mask::Fill(fill()?),
            "keep" => Mask::Keep(fill()?),
            "add" => Mask::Add,
            other => return Err(format!("unknown mask kind '{other}'")),
        };
        let mask_heads = if mask == Mask::None { 0 } else { int("mask_heads")? };
        let output = match m.attr(op, "output").and_then(|a| a.as_str()).unwrap_or("bmm") {
            "bmm" => Output::Bmm,
            "split" => Output::Split(int("out_heads")?.max(1)),
            "permuted" => Output::Permuted(int("out_heads")?.max(1)),
            other => return Err(format!("unknown output layout '{other}'")),
        };
        let safe = match m.attr(op, "safe_softmax") {
            None => false,
            Some(a) => a.as_bool().ok_or("attribute 'safe_softmax' is not a boolean")?,
        };
        Ok(Spec { scale, mask, mask_heads, output, safe })
    }
}


/// `backend.kernel {kernel = "attention"}` as a [`FusionKernel`]: runs [`attention`], declining
/// the calls it does not handle.
#[derive(Debug)]
pub(crate) struct AttentionKernel {
    spec: Spec,
}

impl FusionKernel for AttentionKernel {
    fn run(&self, inputs: &[Tensor], alloc: &mut dyn OutputAlloc) -> Result<FusionOutcome> {
        Ok(match attention(&self.spec, inputs, alloc)? {
            Some(t) => FusionOutcome::Ran(vec![t]),
            None => FusionOutcome::Declined("operands the attention kernel does not handle".into()),
        })
    }
}

/// The native implementation of the `backend.kernel` op `op` named `name`, if there is one:
/// `Err` with the reason when there is none (unknown name, attributes it does not read, a
/// result count other than one); the op's region is then interpreted.
pub(crate) fn native_kernel(name: &str, m: &Module, op: OpId) -> std::result::Result<Arc<dyn FusionKernel>, String> {
    match name {
        dialect_backend::kernels::ATTENTION => {
            if m.results(op).len() != 1 {
                return Err(format!("attention gives one result, the op has {}", m.results(op).len()));
            }
            Ok(Arc::new(AttentionKernel { spec: Spec::of_op(m, op)? }))
        }
        other => Err(format!("no native kernel named '{other}'")),
    }
}
