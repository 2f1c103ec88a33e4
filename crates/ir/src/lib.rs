//! Core IR: context, operations, regions, blocks, values, types, attributes, text format, verifier.

pub mod dtype;
pub mod schema;

pub use dtype::{DType, DTypeCategory};
