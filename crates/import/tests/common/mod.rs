//! Locating the shared fixture corpus from the tests.

use std::path::PathBuf;

/// The fixture folder `<workspace>/../shared/fixtures`, or `None` (with a printed reason) when
/// it is absent. Under `CI=true` a missing corpus is a failure, not a skip.
pub fn fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures");
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("fixture corpus not found at {}", dir.display());
    }
    eprintln!("skipping: fixture corpus not found at {}", dir.display());
    None
}

/// Sorted paths matching `<fixtures>/<group>/*/<file>`.
#[allow(dead_code)]
pub fn cases(group: &str, file: &str) -> Vec<PathBuf> {
    let Some(root) = fixtures() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root.join(group)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path().join(file))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}
