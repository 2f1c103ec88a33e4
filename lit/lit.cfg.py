# Configuration of the project's lit suite for LLVM's own `lit` (pip install lit).
#
# The same suite runs under `cargo test -p integration-tests --test lit`, whose settings
# (tests/lit.rs) this file mirrors: suffixes, features, excluded
# directories and the tools put first on PATH. See lit/README.md.

import os

import lit.formats

config.name = "dialect"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir", ".mlir"]
# `Inputs` directories are excluded by lit itself; these are files, not tests.
config.excludes = ["Inputs", "README.md", "lit.cfg.py"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
workspace = os.path.dirname(config.test_source_root)

# The directory holding dialect-opt, dialect-run and filecheck: DIALECT_TOOLS_DIR, or the
# debug build of the workspace (`cargo build -p driver`).
tools_dir = os.environ.get(
    "DIALECT_TOOLS_DIR", os.path.join(workspace, "target", "debug")
)
config.test_exec_root = os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(workspace, "target")), "lit-py"
)

config.environment["PATH"] = os.pathsep.join(
    [tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))]
)

for tool in ["dialect-opt", "dialect-run"]:
    if os.path.exists(os.path.join(tools_dir, tool)):
        config.available_features.add(tool)
    else:
        lit_config.warning("%s not found in %s" % (tool, tools_dir))

# Real MLIR, where installed, checks that our generic form stays legal MLIR.
import shutil

for candidate in ["mlir-opt-22", "mlir-opt"]:
    found = shutil.which(candidate)
    if found:
        config.available_features.add("mlir-opt")
        config.substitutions.append(("%mlir-opt", found))
        break

fixtures = os.path.join(os.path.dirname(workspace), "shared", "fixtures")
if os.path.isdir(fixtures):
    config.available_features.add("shared-fixtures")
elif os.environ.get("CI", "").lower() in ("true", "1"):
    lit_config.fatal(
        "CI is set but the shared fixtures are missing at %s" % fixtures
    )
