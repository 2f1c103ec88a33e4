# Configuration of toy's lit suite for LLVM's own `lit` (pip install lit).
#
# The same suite runs under `cargo test -p toy --test lit`, whose settings
# (examples/toy/tests/lit.rs) this file mirrors: `.ir` tests, and toy-opt, toy-run and
# filecheck first on PATH.

import os

import lit.formats

config.name = "toy"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir"]
config.excludes = ["Inputs", "lit.cfg.py"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
workspace = os.path.dirname(os.path.dirname(os.path.dirname(config.test_source_root)))

# The directory holding toy-opt, toy-run and filecheck: DIALECT_TOOLS_DIR, or the debug build
# of the workspace (`cargo build -p toy -p driver`).
tools_dir = os.environ.get("DIALECT_TOOLS_DIR", os.path.join(workspace, "target", "debug"))
config.test_exec_root = os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(workspace, "target")), "toy-lit-py"
)
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]
)
for tool in ["toy-opt", "toy-run"]:
    if os.path.exists(os.path.join(tools_dir, tool)):
        config.available_features.add(tool)
    else:
        lit_config.warning("%s not found in %s" % (tool, tools_dir))

# Real MLIR, where installed, checks that toy's generic form is legal MLIR.
import shutil

for candidate in ["mlir-opt-22", "mlir-opt"]:
    found = shutil.which(candidate)
    if found:
        config.available_features.add("mlir-opt")
        config.substitutions.append(("%mlir-opt", found))
        break
