//! Core IR: context, operations, regions, blocks, values, types, attributes, text format, verifier.
//!
//! A [`Context`] holds registered dialects and op definitions; a [`Module`] owns one
//! `builtin.module` op and everything nested in it, stored in slotmaps keyed by [`OpId`],
//! [`ValueId`], [`BlockId`] and [`RegionId`]. [`parse_module`] and [`print_module`] read and write
//! MLIR's text syntax; [`verify`] checks structural and per-op rules.

pub mod attributes;
pub mod builder;
pub mod builtin;
pub mod context;
pub mod diag;
pub mod dtype;
pub mod extension;
pub mod format;
pub mod interface;
pub mod location;
pub mod module;
pub mod parse;
pub mod print;
pub mod schema;
pub mod split;
pub mod types;
pub mod verify;

pub use attributes::{Attribute, DenseAttr, FloatType, IntType};
pub use builder::Builder;
pub use context::{Arity, AttrKind, Context, OpDef, Syntax, Traits, dialect_namespace};
pub use diag::{Diagnostic, Severity};
pub use dtype::{DType, DTypeCategory};
pub use extension::{DialectParser, DialectValue, KindDef, print_angle_list};
pub use format::{AssemblyFormat, CustomDirective, FormatError};
pub use interface::OpRef;
pub use location::Location;
pub use module::{
    BlockId, InsertPoint, IrError, Module, OpId, OperationState, RegionId, Use, ValueDef, ValueId, ValueMap, WalkOrder,
};
pub use parse::{parse_attribute, parse_module, parse_type};
pub use print::{PrintOptions, print_module, print_op};
pub use types::{Dim, TensorType, Type, TypeKind};
pub use verify::{verify, verify_op};
