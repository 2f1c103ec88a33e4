//! The project archive.

use std::path::Path;

use crate::{ImportError, Program};

pub fn load(_ctx: &ir::Context, path: &Path) -> Result<Program, ImportError> {
    Err(ImportError::UnknownFormat { path: path.to_path_buf() })
}
