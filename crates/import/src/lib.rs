//! Importers for torch.export archives, FX text and TorchScript IR text, and the project's own
//! program archive.
//!
//! The readers in this crate turn each input format into a faithful Rust data model that does
//! not depend on the IR: [`pt2`] for `.pt2` archives written by `torch.export.save`, [`fx`] for
//! the FX graph text that `print(ep.graph)` produces, and [`torchscript`] for the TorchScript IR
//! text of `str(torch.jit.script(fn).graph)`, and [`torchscript_pt`] for the archives of
//! `torch.jit.save` (`.pt`: module state, constants and sources, not yet compiled). [`convert`] turns those models into verified IR
//! ([`Program`]); [`archive`] saves and loads programs; [`import_file`] is the one entry point
//! tools use. `docs/import.md` describes the IR conventions.

pub mod archive;
pub mod convert;
pub mod fx;
pub mod program;
pub mod pt2;
pub mod torchscript;
pub mod torchscript_pt;
pub mod treespec;

mod error;
mod file;
mod overload;
mod mapped;
mod zipread;

pub use error::{ImportError, ParseError};
pub use file::{Format, import_bytes, import_file};
pub use program::{Program, Weight, Weights};
pub use treespec::{DictKey, TreeSpec};
