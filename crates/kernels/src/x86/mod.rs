//! Microkernels written with x86-64 intrinsics, one module per instruction set. The portable
//! forms of the same kernels live with their drivers (`crate::gemm`, `crate::gemv`) and run on
//! the generic path.

pub(crate) mod avx2;
pub(crate) mod avx512;
