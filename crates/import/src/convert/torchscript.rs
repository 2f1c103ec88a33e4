//! TorchScript IR text to IR.

use std::path::Path;

use crate::ImportError;
use crate::torchscript::TsGraph;

pub fn convert_graph(_ctx: &ir::Context, _graph: &TsGraph, path: &Path) -> Result<ir::Module, ImportError> {
    Err(ImportError::UnknownFormat { path: path.to_path_buf() })
}
