//! FX graph text, as `print(exported_program.graph)` writes it.
//!
//! ```text
//! graph():
//!     %x : [num_users=1] = placeholder[target=x]
//!     %add : [num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%x, 1), kwargs = {})
//!     return (add,)
//! ```
//!
//! FX prints non-node arguments with `str()`, so strings, devices and dtypes all come out as
//! bare words (`floor`, `cpu`, `torch.float32`). The parser classifies the words it can
//! recognise without a schema (numbers, `True`/`False`/`None`, dtypes, layouts, memory
//! formats) and keeps every other word as [`FxArg::Word`] for the importer to interpret against
//! the operator schema.

mod ast;
mod parse;

pub use ast::{FxArg, FxGraph, FxNode, FxOp};
pub use parse::parse;

use std::path::Path;

use crate::ImportError;

/// Reads and parses the FX text file at `path`.
pub fn parse_file(path: impl AsRef<Path>) -> Result<FxGraph, ImportError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text).map_err(|error| ImportError::Parse {
        path: path.to_path_buf(),
        error,
    })
}
