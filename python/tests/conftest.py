"""Shared helpers: the ground-truth corpus in ``../shared`` (beside the project root), and
comparison with PyTorch's recorded outputs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"


def shared_dir(*parts) -> Path:
    """A directory of ``../shared``; skips the test where it is absent, fails under CI."""
    path = SHARED.joinpath(*parts)
    if not path.is_dir():
        message = f"{path} is absent (the ground-truth corpus lives beside the project root)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def fixture_names(*parts):
    """The case names under ``../shared/<parts>``, or none where it is absent (the test that
    asks for the directory then reports why)."""
    path = SHARED.joinpath(*parts)
    if not path.is_dir():
        return ["(absent)"]
    return sorted(p.name for p in path.iterdir() if (p / "model.pt2").is_file())


class Case:
    """One exported program with PyTorch's inputs and outputs."""

    def __init__(self, directory: Path):
        from safetensors.torch import load_file

        self.dir = directory
        self.meta = json.loads((directory / "meta.json").read_text())
        self.io = load_file(str(directory / "io.safetensors"))
        n = sum(1 for k in self.io if k.startswith("in."))
        self.inputs = [self.io[f"in.{i}"] for i in range(n)]
        tol = self.meta.get("tolerance", {})
        self.rtol = tol.get("rtol", 1e-4)
        self.atol = tol.get("atol", 1e-5)

    def expected(self, call: int = 0):
        prefix = "out." if call == 0 else f"call{call + 1}.out."
        n = sum(1 for k in self.io if k.startswith(prefix))
        return [self.io[f"{prefix}{i}"] for i in range(n)]

    def exported(self, which: str = "model.pt2"):
        import torch

        _register_model_outputs()
        return torch.export.load(str(self.dir / which))

    def call_args(self, program_or_spec):
        """Positional and keyword arguments as the export took them (transformers models take
        keyword arguments, in the input spec's order)."""
        spec = program_or_spec._in_spec if hasattr(program_or_spec, "_in_spec") else program_or_spec
        if spec is not None and spec[0] == "tuple" and spec[1][1][0] == "dict" and spec[1][1][1]:
            names = [k for k, _ in spec[1][1][1]]
            return (), dict(zip(names, self.inputs))
        return tuple(self.inputs), {}


def _register_model_outputs():
    """Importing transformers' output classes registers them as pytree nodes, which
    ``torch.export.load`` needs for the programs of transformers models."""
    try:
        import transformers.modeling_outputs  # noqa: F401
    except ImportError:
        pass


def leaves(tree):
    import torch.utils._pytree as pytree

    return pytree.tree_leaves(tree)


def assert_close(got, want, rtol, atol, what=""):
    import torch

    got = torch.as_tensor(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {tuple(got.shape)}, expected {tuple(want.shape)}"
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got.double(), want.double(), rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}")
    else:
        assert torch.equal(got, want), f"{what}: values differ"


def require(module: str):
    """Imports ``module``; skips the test where it is not installed, fails under CI (which
    installs it)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        message = f"{module} is not installed"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


def needs_transformers(name: str):
    if name.startswith("hf_"):
        require("transformers")
