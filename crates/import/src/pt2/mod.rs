//! `.pt2` archives written by `torch.export.save`: the JSON program and its weights.

mod archive;
pub mod schema;

pub use archive::{PayloadKind, Pt2Archive, WeightInfo};
pub use schema::ScalarType;
