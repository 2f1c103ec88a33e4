//! The Python package (`python/`, `crates/python`): builds and installs it into the project's
//! virtual environment (`.venv`, made by `.ci/python-env`; `DIALECT_PYTHON` names another
//! interpreter) with `pip install ./python`, as a user would, then runs its pytest suite, which
//! checks the fixture corpus and the zoo through `dialect.compile` and `torch.compile`.

use std::path::PathBuf;
use std::process::Command;

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DIALECT_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = support::workspace_root().join(".venv/bin/python");
    venv.is_file().then_some(venv)
}

#[test]
fn python_package() {
    let Some(python) = python() else {
        support::skip("python_package", "no .venv (run `bash .ci/python-env` to make it)", true);
        return;
    };
    let root = support::workspace_root();
    let has = |module: &str| {
        Command::new(&python).args(["-c", &format!("import {module}")]).status().is_ok_and(|s| s.success())
    };
    for module in ["maturin", "pytest", "numpy"] {
        if !has(module) {
            support::skip("python_package", &format!("{} lacks {module} (run `bash .ci/python-env`)", python.display()), true);
            return;
        }
    }
    // The build backend runs the `maturin` of the interpreter's environment, found on PATH as
    // an activated environment would put it; the build runs cargo on this workspace and must
    // not pick up the test's own build flags.
    let bin = python.parent().map(PathBuf::from).unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())))
        .expect("PATH entries hold no separator");
    let install = Command::new(&python)
        .current_dir(&root)
        .env("PATH", &path)
        .args(["-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-build-isolation", "--no-deps", "./python"])
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .status()
        .expect("pip runs");
    assert!(install.success(), "pip install ./python failed");
    let tests = Command::new(&python)
        .current_dir(&root)
        .args(["-m", "pytest", "-q", "-p", "no:logging", "-p", "no:cacheprovider", "python/tests"])
        .status()
        .expect("pytest runs");
    assert!(tests.success(), "the Python package's tests failed");
}
