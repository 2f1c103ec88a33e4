//! Core IR: context, operations, regions, blocks, values, types, attributes, text format, verifier.

pub mod dtype;

pub use dtype::{DType, DTypeCategory};
