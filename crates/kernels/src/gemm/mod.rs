//! Prepacked `f32` GEMM: matrix products with one operand fixed at compile time (the weight
//! of `mm`/`addmm`, the filter of a convolution), packed once into the panel layout the
//! microkernel streams, so a call packs nothing (Static Runtime's and fbgemm's prepacked
//! linear and convolution weights).
//!
//! The microkernel computes an `MR × NR` tile of `C` as a sum over `p` of a broadcast element
//! of `A` times a row vector of `B`: `A` is read element by element, from a packed row panel
//! (tiles of up to 14 rows with AVX-512) or in place at any strides (up to 8), `B` a row of
//! `NR` contiguous elements at a time. The rows of a product are split into blocks of even
//! height ([`block_rows`]). The two drivers differ only in which operand is packed:
//!
//! - [`PackedB`] (a constant right operand, the weight of a linear layer): `B` split into
//!   column panels of `NR`, each panel stored row after row (`k × NR`, zero-padded), so a
//!   tile streams one contiguous panel, and prefetches its share of the slice read after
//!   its own; `A` (the activations) is read in place, or, when `B` has many panels, packed
//!   per call into the row panels of [`PackedA`] (see [`PACK_A_MIN_PANELS`]).
//! - [`PackedA`] (a constant left operand, a convolution's weight matrix): `A` split into
//!   row panels of `mr ≤ MR` rows, each stored column after column (`k × mr`, zero-padded),
//!   so the broadcasts read consecutive elements; `B` (the im2col matrix or the input itself) is
//!   read in place, its last partial panel with masked loads.
//!
//! Tiles are computed panel by panel of `B` and, within a panel, over `k` in one block up to
//! 320 deep or in blocks of at most [`KC`], as even as possible (the `KC × NR` slice of `B` stays in L1 while every row block
//! of `A` passes over it, and a packed `B` is read front to back in one stream); the first
//! block applies the epilogue
//! (`alpha`, the bias of `addmm`/`linear`/convolution, `beta·C`), later blocks add to `C`.
//! The order of every sum is fixed by the shapes alone, so results are the same bits on every
//! run and on every thread. Kernels exist for AVX-512F (`NR` = 32) and AVX2+FMA (`NR` = 16),
//! chosen at run time; on other CPUs nothing is packed and products go through the
//! general GEMM (`matrixmultiply`).
//!
//! The module is split by concept: `pack` lays operands out in panels, `epilogue` says what a
//! product does with its sums, `products` holds the entry points, `drive` walks the tiles and
//! dispatches them to the microkernels of `crate::x86` (`avx512`, `avx2`).

mod drive;
mod epilogue;
mod pack;
mod products;
#[cfg(test)]
pub(crate) mod tests;

use crate::isa::Isa;
use crate::{Error, Result};

pub use epilogue::{Activation, Addend, Bias, Epilogue, HalfRounding, Post};
pub(crate) use epilogue::*;
pub use pack::{PackedA, PackedB, aligned_start};
pub(crate) use pack::*;
pub use products::{
    gemm_activations, gemm_packed_a, gemm_packed_a_panels, gemm_packed_a_panels_post, gemm_packed_a_post, gemm_packed_a_rows_post, gemm_packed_a_rows_split_post, gemm_packed_b,
    gemm_packed_b_post,
};
pub(crate) use drive::*;
pub use drive::prefetch_l1;
pub(crate) use products::*;

/// Most rows of a tile on any path.
pub(crate) const MAX_MR: usize = 14;

/// Deepest block of `k` (`k` is split into blocks as even as possible, see `drive::Raw::kc`):
/// one `KC × NR` slice of a `B` panel is 32 KiB with AVX-512, which
/// with a packed row block of `A` (at most `14 × KC`, 14 KiB) fits the 48 KiB L1, so the slice
/// stays there while the row blocks of `A` stream past it. Deeper blocks also halve the passes
/// that add a block's sums to `C` (`benches/gemm.rs`: 128 → 256 ran the LSTM product ≈ 5 %
/// faster).
pub const KC: usize = 256;

/// The microkernel's tile sizes on each instruction-set path. The generic path has no
/// microkernel (nothing is packed for it: [`PackedB::pack`] and [`PackedA::pack`] refuse it);
/// its sizes are AVX2's, so a layout computed for it is still a valid one.
pub trait Tiles {
    fn mr(self) -> usize;
    fn mr_in_place(self) -> usize;
    fn nr(self) -> usize;
}

impl Tiles for Isa {
    /// Most rows of a tile that reads a packed `A` (and of a [`PackedA`] panel): the
    /// accumulators (`MR × 2` vectors), the two vectors of `B` and a broadcast fill the vector
    /// registers (31 of 32 with AVX-512, 15 of 16 with AVX2). Each step of `k` loads the two
    /// vectors of `B` and `MR` broadcasts for `2·MR` multiply-adds; the loads are what keeps
    /// the FMA units from their peak, so the tallest tile that fits is the fastest.
    fn mr(self) -> usize {
        match self {
            Isa::Avx512 => 14,
            Isa::Avx2 | Isa::Generic => 6,
        }
    }

    /// Most rows of a tile that reads `A` in place: it keeps one pointer per row in a general
    /// register, so the tile is shorter than [`Tiles::mr`] where that would run out of them.
    fn mr_in_place(self) -> usize {
        match self {
            Isa::Avx512 => 8,
            Isa::Avx2 | Isa::Generic => 6,
        }
    }

    /// Columns of a tile (and of a [`PackedB`] panel).
    fn nr(self) -> usize {
        match self {
            Isa::Avx512 => 32,
            Isa::Avx2 | Isa::Generic => 16,
        }
    }
}

/// Rows per block when `m` rows are split into blocks of at most `max`: as even as possible,
/// so that no block is much shorter than the others (64 rows run as 13, 13, 13, 13 and 12
/// rather than four blocks of 14 and one of 8, whose tile would waste most of its loads).
pub(crate) fn block_rows(m: usize, max: usize) -> usize {
    if m == 0 { max } else { m.div_ceil(m.div_ceil(max)) }
}

/// Refuses a path this thread may not run, and the generic path, which has no microkernel:
/// every packed operand and every product is for a path whose microkernels the CPU runs.
pub(crate) fn check_isa(op: &'static str, isa: Isa) -> Result<()> {
    if isa == Isa::Generic || !isa.available() {
        return Err(Error::new(op, format!("internal error: the packed GEMM has no {isa} path here")));
    }
    Ok(())
}
