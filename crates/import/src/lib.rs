//! Importers for torch.export archives, FX text and TorchScript IR text.
//!
//! The readers in this crate turn each input format into a faithful Rust data model that does
//! not depend on the IR: [`pt2`] for `.pt2` archives written by `torch.export.save`, [`fx`] for
//! the FX graph text that `print(ep.graph)` produces, and [`torchscript`] for the TorchScript IR
//! text of `str(torch.jit.script(fn).graph)`. Conversion of these models into IR lives beside
//! them.

pub mod fx;
pub mod pt2;
pub mod torchscript;

mod error;

pub use error::{ImportError, ParseError};
