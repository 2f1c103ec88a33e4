//! What a product does with its sums: the epilogue (`alpha`, a bias, `beta·C`) applied as a
//! tile is stored, the post-ops (a residual addend, an activation) once its sums are complete,
//! and the checks of their operands.

use super::*;

/// A bias added to every product.
#[derive(Clone, Copy, Debug)]
pub enum Bias<'a> {
    None,
    /// `bias[j]` added to column `j` (a linear layer's bias; `n` elements).
    PerColumn(&'a [f32]),
    /// `bias[i]` added to row `i` (a convolution's per-channel bias; `m` elements).
    PerRow(&'a [f32]),
}

/// What a product does with its sums: `C = alpha·A·B + bias_scale·bias + beta·C`. With
/// `beta == 0`, `C` is not read (NaNs in it do not propagate).
#[derive(Clone, Copy, Debug)]
pub struct Epilogue<'a> {
    pub alpha: f32,
    pub beta: f32,
    pub bias: Bias<'a>,
    pub bias_scale: f32,
}

impl Epilogue<'_> {
    /// `C = A·B`.
    pub const PLAIN: Epilogue<'static> = Epilogue { alpha: 1.0, beta: 0.0, bias: Bias::None, bias_scale: 1.0 };
}

/// An elementwise function applied to a product's results once every sum is complete, with
/// the bits of the ops it stands for (as the interpreter and the JIT compute them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    None,
    /// The exact GELU, with the interpreter's bits (`fastmath::gelu_erf_f32`).
    Gelu,
    /// `relu`, with the interpreter's bits: `x` when `x > 0` or NaN, `+0` otherwise.
    Relu,
    /// `clamp(x, lo, hi)` (`relu6`, `hardtanh`): `min(max(x, lo), hi)`, NaN kept.
    Clamp(f32, f32),
    /// `hardswish` as this project's decomposition computes it: `x · (clamp(x + 3, 0, 6) / 6)`,
    /// each step rounded to `f32`.
    Hardswish,
    /// `hardswish` as PyTorch's core decomposition computes it: `(x · clamp(x + 3, 0, 6)) / 6`.
    HardswishProductFirst,
}

impl Activation {
    /// The activation of one value.
    #[inline(always)]
    pub fn apply(self, v: f32) -> f32 {
        let clamp = |v: f32, lo: f32, hi: f32| if v.is_nan() { v } else { v.max(lo).min(hi) };
        match self {
            Activation::None => v,
            Activation::Gelu => crate::fastmath::gelu_erf_f32(v),
            Activation::Relu => {
                if v > 0.0 || v.is_nan() {
                    v
                } else {
                    0.0
                }
            }
            Activation::Clamp(lo, hi) => clamp(v, lo, hi),
            Activation::Hardswish => v * (clamp(v + 3.0, 0.0, 6.0) / 6.0),
            Activation::HardswishProductFirst => v * clamp(v + 3.0, 0.0, 6.0) / 6.0,
        }
    }

    /// `dst[i] = apply(src[i])` over the shorter of the two, with the activation chosen once
    /// so each loop is one activation's and vectorizes.
    #[inline(always)]
    pub fn apply_row(self, src: &[f32], dst: &mut [f32]) {
        #[inline(always)]
        fn each(act: Activation, src: &[f32], dst: &mut [f32]) {
            for (o, &v) in dst.iter_mut().zip(src) {
                *o = act.apply(v);
            }
        }
        match self {
            Activation::None => each(Activation::None, src, dst),
            Activation::Gelu => each(Activation::Gelu, src, dst),
            Activation::Relu => each(Activation::Relu, src, dst),
            Activation::Clamp(lo, hi) => each(Activation::Clamp(lo, hi), src, dst),
            Activation::Hardswish => each(Activation::Hardswish, src, dst),
            Activation::HardswishProductFirst => each(Activation::HardswishProductFirst, src, dst),
        }
    }
}

/// A matrix added to a product's results (a residual connection): element `(i, j)` at
/// `data[i·ld + j]`.
#[derive(Clone, Copy, Debug)]
pub struct Addend<'a> {
    pub data: &'a [f32],
    pub ld: usize,
    /// Whether the addend is the left operand of the sum (`r + v` rather than `v + r`: the
    /// same number, but NaN payloads propagate from the left operand).
    pub first: bool,
}

/// What a product does with each result `v` of its [`Epilogue`] once the sum over all of `k`
/// is complete: `act(v + addend)`, the addend and activation each optional. Applied to a tile
/// while it is in registers, so a residual add or an activation after a linear layer costs no
/// pass over the result; the operations are those of the separate ops, in their order, so the
/// bits are theirs.
///
/// A half-precision program's convolution runs in `f32` between casts to `f16` and back
/// (`widen-half-products`); [`HalfRounding`] applies those casts' rounding here instead, so its
/// results stay `f32` holding `f16` values: `round(act(round(v) + addend))`, either rounding
/// optional.
#[derive(Clone, Copy, Debug)]
pub struct Post<'a> {
    pub addend: Option<Addend<'a>>,
    pub act: Activation,
    pub half: HalfRounding,
}

/// Where the post-ops round through `f16` ([`crate::halves::round_to_f16`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HalfRounding {
    /// The epilogue's result, before the addend and the activation.
    pub product: bool,
    /// The post-ops' result.
    pub result: bool,
}

impl HalfRounding {
    /// No rounding.
    pub const NONE: HalfRounding = HalfRounding { product: false, result: false };

    fn any(self) -> bool {
        self.product || self.result
    }
}

/// One `f32` rounded to the nearest `f16` and back, as [`crate::halves::round_to_f16`] rounds.
fn round_one(v: f32) -> f32 {
    let mut x = [v];
    crate::halves::round_to_f16(&mut x);
    x[0]
}

impl Post<'_> {
    /// Nothing after the epilogue.
    pub const NONE: Post<'static> = Post { addend: None, act: Activation::None, half: HalfRounding::NONE };

    /// Whether there is anything to apply.
    pub fn is_none(&self) -> bool {
        self.addend.is_none() && self.act == Activation::None && !self.half.any()
    }

    /// The post-ops of one element: `v` is the epilogue's result at row `i`, column `j`.
    #[inline(always)]
    pub fn apply(&self, i: usize, j: usize, v: f32) -> f32 {
        let v = if self.half.product { round_one(v) } else { v };
        let v = match self.addend {
            Some(r) if r.first => r.data[i * r.ld + j] + v,
            Some(r) => v + r.data[i * r.ld + j],
            None => v,
        };
        let v = self.act.apply(v);
        if self.half.result { round_one(v) } else { v }
    }

    /// Applies the post-ops to the `m × n` results in `c` (rows `ldc` apart), after a product
    /// that did not (a single row's matrix-vector product).
    pub fn apply_to(&self, op: &'static str, m: usize, n: usize, c: &mut [f32], ldc: usize) -> Result<()> {
        if self.is_none() {
            return Ok(());
        }
        check_addend(op, m, n, self)?;
        if m > 0 && n > 0 && (ldc < n || (m - 1).checked_mul(ldc).and_then(|x| x.checked_add(n)).is_none_or(|l| l > c.len())) {
            return Err(Error::new(op, "output buffer is too small"));
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        if let Some(isa) = Isa::simd() {
            // Strips of a tile's width, through the tiles' own vector post-ops.
            for j0 in (0..n).step_by(isa.nr()) {
                let p = self.tile(c[j0..].as_mut_ptr(), ldc, 0, j0, isa.nr().min(n - j0));
                // SAFETY: `c` holds `m` rows of `n` elements `ldc` apart (checked above), the
                // addend as many `add_ld` apart (`check_addend`), and the strip's columns are
                // within `n`; `isa` was detected on this CPU.
                unsafe { post_tile(isa, m, &p) };
            }
            return Ok(());
        }
        for i in 0..m {
            for (j, x) in c[i * ldc..i * ldc + n].iter_mut().enumerate() {
                *x = self.apply(i, j, *x);
            }
        }
        Ok(())
    }

    /// The post-ops of the tile of `cols` columns from row `i0`, column `j0` of the result,
    /// stored at `c` (its rows `ldc` apart).
    pub(crate) fn tile(&self, c: *mut f32, ldc: usize, i0: usize, j0: usize, cols: usize) -> PostTile {
        let (addend, add_ld, add_first) = match self.addend {
            Some(r) => (r.data.as_ptr().wrapping_add(i0 * r.ld + j0), r.ld, r.first),
            None => (std::ptr::null(), 0, false),
        };
        PostTile { cols, c, ldc, addend, add_ld, add_first, act: self.act, half: self.half }
    }

    /// Rows `i..` of the same post-ops.
    pub(crate) fn rows_from(&self, i: usize) -> Post<'_> {
        self.from(i, 0)
    }

    /// The same post-ops for the part of the result from row `i`, column `j` on (the addend
    /// read from its element `(i, j)`; empty when that is past its end).
    pub fn from(&self, i: usize, j: usize) -> Post<'_> {
        let addend = self.addend.map(|r| {
            let start = i.saturating_mul(r.ld).saturating_add(j).min(r.data.len());
            Addend { data: &r.data[start..], ..r }
        });
        Post { addend, act: self.act, half: self.half }
    }
}

/// Checks that `c` holds `C` (`m` rows of `ldc ≥ n`) and that the bias covers it, then settles
/// the products with nothing to multiply: `true` when `C` is empty, or when `k == 0` and the
/// epilogue alone has been applied.
pub(crate) fn settled(op: &'static str, mnk: (usize, usize, usize), ep: &Epilogue<'_>, c: &mut [f32], ldc: usize) -> Result<bool> {
    settled_post(op, mnk, ep, &Post::NONE, c, ldc)
}

/// [`settled`] with post-ops (applied after the epilogue of an empty sum).
pub(crate) fn settled_post(
    op: &'static str,
    (m, n, k): (usize, usize, usize),
    ep: &Epilogue<'_>,
    post: &Post<'_>,
    c: &mut [f32],
    ldc: usize,
) -> Result<bool> {
    if m > 0 && n > 0 && (ldc < n || (m - 1).checked_mul(ldc).and_then(|x| x.checked_add(n)).is_none_or(|l| l > c.len())) {
        return Err(Error::new(op, "output buffer is too small"));
    }
    check_bias(op, m, n, ep)?;
    if m == 0 || n == 0 {
        return Ok(true);
    }
    if k == 0 {
        epilogue_only(m, n, ep, c, ldc);
        post.apply_to(op, m, n, c, ldc)?;
        return Ok(true);
    }
    Ok(false)
}

/// Checks that the addend of `post` covers an `m × n` output.
pub(crate) fn check_addend(op: &'static str, m: usize, n: usize, post: &Post<'_>) -> Result<()> {
    match post.addend {
        Some(r)
            if m > 0
                && n > 0
                && (r.ld < n || (m - 1).checked_mul(r.ld).and_then(|x| x.checked_add(n)).is_none_or(|l| l > r.data.len())) =>
        {
            Err(Error::new(op, "the addend is smaller than the output"))
        }
        _ => Ok(()),
    }
}

/// Checks that the bias covers an `m × n` output.
pub(crate) fn check_bias(op: &'static str, m: usize, n: usize, ep: &Epilogue<'_>) -> Result<()> {
    match ep.bias {
        Bias::PerColumn(b) if b.len() < n => Err(Error::new(op, "bias is shorter than the output rows")),
        Bias::PerRow(b) if b.len() < m => Err(Error::new(op, "bias is shorter than the output columns")),
        _ => Ok(()),
    }
}

/// The epilogue of an empty sum (`k == 0`).
pub(crate) fn epilogue_only(m: usize, n: usize, ep: &Epilogue<'_>, c: &mut [f32], ldc: usize) {
    for i in 0..m {
        for j in 0..n {
            let dst = &mut c[i * ldc + j];
            let mut v = ep.alpha * 0.0;
            match ep.bias {
                Bias::PerColumn(b) => v += ep.bias_scale * b[j],
                Bias::PerRow(b) => v += ep.bias_scale * b[i],
                Bias::None => {}
            }
            if ep.beta != 0.0 {
                v += ep.beta * *dst;
            }
            *dst = v;
        }
    }
}

/// A per-row bias from row `i` on (other biases unchanged).
pub(crate) fn bias_from(bias: Bias<'_>, i: usize) -> Bias<'_> {
    match bias {
        Bias::PerRow(x) => Bias::PerRow(&x[i..]),
        other => other,
    }
}
