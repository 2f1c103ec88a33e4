//! Runs a kernel's loops compiled for the widest vector extension this CPU has.
//!
//! The crate is built for baseline x86-64 (SSE2, 4 `f32` lanes). [`widest`] calls its body
//! from a function compiled with AVX-512F (16 lanes) or AVX2 with FMA (8 lanes) when the
//! thread's ISA ([`Isa::current`]) is one of those, and compiled for the baseline on the
//! generic path; the body and everything it inlines is then
//! vectorized that wide. Only the vector width changes: Rust never contracts a multiply and an
//! add into a fused multiply-add, and each lane performs the same IEEE operations in the same
//! order, so the results are the same bits on every path (tests compare them with the baseline
//! path). Both wide paths have FMA (AVX-512F implies it) so that an explicit `mul_add` is one
//! instruction there; it rounds once on every path, the baseline's library call included.
//!
//! The body must be an `#[inline(always)]` closure that reaches its loops through
//! `#[inline(always)]` functions and closures: LLVM does not inline an ordinary closure into
//! the function with wider features (it tail-calls it), and a call that is not inlined runs
//! the callee as compiled for the baseline.

use crate::isa::Isa;

/// `body()`, compiled for the widest vector extension this thread may run ([`Isa::current`]).
#[inline(always)]
pub fn widest<R>(body: impl FnOnce() -> R) -> R {
    compiled_for(Isa::current(), body)
}

/// `body()`, compiled for `isa` when this thread may run it (for the baseline otherwise).
#[inline(always)]
pub fn compiled_for<R>(isa: Isa, body: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if isa == Isa::Avx512 && isa.available() {
            // SAFETY: the CPU supports AVX-512F (`available` is never above the host's ISA).
            return unsafe { on_avx512(body) };
        }
        if isa == Isa::Avx2 && isa.available() {
            // SAFETY: the CPU supports AVX2 and FMA (as above).
            return unsafe { on_avx2(body) };
        }
    }
    let _ = isa;
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn on_avx512<R>(body: impl FnOnce() -> R) -> R {
    body()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn on_avx2<R>(body: impl FnOnce() -> R) -> R {
    body()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop of the kind the kernels run (an `f64` affine step rounded to `f32`, a compare and
    /// select), checked bit for bit on every width this CPU has against the baseline.
    #[test]
    fn every_width_computes_the_same_bits() {
        let xs: Vec<f32> = (0..1037).map(|i| ((i * 7919) % 2003) as f32 * 0.013 - 13.0).collect();
        let run = |w: Isa| {
            compiled_for(
                w,
                #[inline(always)]
                || {
                    xs.iter()
                        .map(|&x| {
                            let y = (x as f64 * 0.731 + -1.25) as f32;
                            if y > 0.0 || y.is_nan() { y } else { 0.0 }
                        })
                        .map(f32::to_bits)
                        .collect::<Vec<_>>()
                },
            )
        };
        let base = run(Isa::Generic);
        for w in Isa::supported() {
            assert_eq!(run(w), base, "{w:?}");
        }
        assert!(base.iter().any(|&b| b != 0) && base.contains(&0));
    }
}

/// The sum of `L` interleaved partial sums (`L` a power of two), combined pairwise: lane `i`
/// takes lane `i + L/2`, then `i + L/4`, … down to one, the same order on every vector width.
#[inline(always)]
pub fn fold_lanes<T: Copy + std::ops::AddAssign, const L: usize>(mut acc: [T; L]) -> T {
    let mut width = L;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            let v = acc[i + width];
            acc[i] += v;
        }
    }
    acc[0]
}
