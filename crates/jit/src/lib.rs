//! Cranelift backend compiling fusion groups to native CPU kernels
