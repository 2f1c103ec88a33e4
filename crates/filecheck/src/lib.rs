//! An LLVM-compatible FileCheck
