//! FX graph text to IR.

use std::path::Path;

use crate::ImportError;
use crate::fx::FxGraph;

pub fn convert_graph(_ctx: &ir::Context, _graph: &FxGraph, path: &Path) -> Result<ir::Module, ImportError> {
    Err(ImportError::UnknownFormat { path: path.to_path_buf() })
}
