//! Finding the test files of a suite.

use std::path::{Path, PathBuf};

use crate::error::{LitError, Result};

/// The test files under `root` with one of `suffixes`, sorted.
///
/// Directories named `Inputs` (auxiliary files of tests) and hidden entries are skipped.
/// A `root` that is a file is returned as the only test.
pub fn discover_with_suffixes(root: &Path, suffixes: &[String]) -> Result<Vec<PathBuf>> {
    let metadata = std::fs::metadata(root).map_err(|err| LitError::io(root, err))?;
    if metadata.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut tests = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|err| LitError::io(&dir, err))?;
        for entry in entries {
            let entry = entry.map_err(|err| LitError::io(&dir, err))?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let file_type = entry.file_type().map_err(|err| LitError::io(&path, err))?;
            // Follow symlinks to decide what an entry is.
            let is_dir = file_type.is_dir() || (file_type.is_symlink() && path.is_dir());
            if is_dir {
                if name != "Inputs" {
                    pending.push(path);
                }
            } else if path
                .extension()
                .is_some_and(|ext| suffixes.iter().any(|s| ext.to_string_lossy() == s.as_str()))
            {
                tests.push(path);
            }
        }
    }
    tests.sort();
    Ok(tests)
}

/// The `*.ir` and `*.mlir` test files under `root`, sorted; see [`discover_with_suffixes`].
pub fn discover(root: &Path) -> Result<Vec<PathBuf>> {
    discover_with_suffixes(root, &["ir".to_string(), "mlir".to_string()])
}
