//! TorchScript IR text, as `str(torch.jit.script(fn).graph)` prints it.
//!
//! ```text
//! graph(%x.1 : Tensor,
//!       %n.1 : int):
//!   %5 : int = prim::Constant[value=1]()
//!   %y : Tensor = prim::If(%c) # file.py:10:4
//!     block0():
//!       -> (%x.1)
//!     block1():
//!       -> (%x.1)
//!   return (%y)
//! ```

mod ast;
pub(crate) mod lex;
mod parse;

pub use ast::{TsAttr, TsBlock, TsGraph, TsLoc, TsNode, TsTensorType, TsType};
pub use parse::parse;

use std::path::Path;

use crate::ImportError;

/// Reads and parses the TorchScript IR text file at `path`.
pub fn parse_file(path: impl AsRef<Path>) -> Result<TsGraph, ImportError> {
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
