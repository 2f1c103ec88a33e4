//! `.pt2` archives written by `torch.export.save`: the JSON program and its weights.

mod archive;
pub mod schema;

pub use crate::convert::pt2::{convert_program, import};
pub use archive::{PayloadKind, Pt2Archive, WeightInfo};
pub use schema::ScalarType;
