"""Compile and run PyTorch programs with the dialect compiler.

Three ways in:

* ``dialect.load(path)`` / ``dialect.compile(path)``: a ``.pt2`` archive, a program archive
  (``.dar``), FX text, TorchScript IR text or IR text;
* ``dialect.compile(exported_program)``: a ``torch.export.ExportedProgram``, serialized in memory
  by PyTorch's own serializer;
* ``torch.compile(model, backend="dialect")``: the Dynamo backend in :mod:`dialect.dynamo`.

Each returns a :class:`Program`: call it with ``torch.Tensor``\\ s, NumPy arrays and Python scalars.
"""

from __future__ import annotations

import io
import os

from . import _native
from ._native import DialectError
from ._program import Program

__all__ = ["DialectError", "Program", "compile", "load", "isa"]

_EXTENSION_FORMATS = {
    ".pt2": "pt2",
    ".dar": "archive",
    ".fx": "fx",
    ".ts": "torchscript",
    ".ir": "ir",
    ".mlir": "ir",
}


def isa() -> str:
    """The instruction-set path the kernels take in this process (``DIALECT_ISA`` lowers it)."""
    return _native.isa()


def load(path, *, format: str | None = None, opt_level: int = 2, threads: int = 1, backend: str | None = None) -> Program:
    """Compiles the program in the file at ``path``.

    ``format`` (``pt2``, ``archive``, ``fx``, ``torchscript``, ``ir``) is taken from the file's
    extension when not given. ``opt_level`` 0 runs the program as imported; 1 and up decompose,
    optimize, lower to Edge, fuse and partition it (``dialect-run -O<n>``). ``threads`` is the
    number of threads each call splits its kernels across. ``backend`` is ``"jit"`` (fusion groups
    compiled to native code; the default at level 2 and up) or ``"interp"``.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(path)
    native = _native.compile_path(path, format, opt_level, threads, backend)
    return Program(native)


def compile(obj, *, format: str | None = None, opt_level: int = 2, threads: int = 1, backend: str | None = None) -> Program:
    """Compiles ``obj``: a path, a ``torch.export.ExportedProgram`` or IR text.

    An ``ExportedProgram`` is serialized in memory with ``torch.export.save`` (no file is written)
    and read by the same importer as a ``.pt2`` file. A string that names no existing file is
    parsed as text in ``format`` (default ``ir``). The keyword arguments are :func:`load`'s.
    """
    if isinstance(obj, (str, os.PathLike)) and _is_path(obj):
        return load(obj, format=format, opt_level=opt_level, threads=threads, backend=backend)
    if isinstance(obj, str):
        data = obj.encode("utf-8")
        native = _native.compile_bytes(data, format or "ir", "<string>", opt_level, threads, backend)
        return Program(native)
    if isinstance(obj, (bytes, bytearray)):
        native = _native.compile_bytes(bytes(obj), format or "pt2", "<bytes>", opt_level, threads, backend)
        return Program(native)
    if _is_exported_program(obj):
        return Program(_native.compile_bytes(serialize(obj), "pt2", "<ExportedProgram>", opt_level, threads, backend))
    raise TypeError(f"dialect.compile takes a path, an ExportedProgram, IR text or .pt2 bytes, not {type(obj).__name__}")


def serialize(exported) -> bytes:
    """The ``.pt2`` bytes of an ``ExportedProgram``, written by PyTorch's serializer into memory."""
    import torch

    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    return buffer.getvalue()


def _is_path(obj) -> bool:
    if isinstance(obj, os.PathLike):
        return True
    # A one-line string that names an existing file is a path; IR text spans lines.
    return "\n" not in obj and os.path.exists(obj)


def _is_exported_program(obj) -> bool:
    try:
        from torch.export import ExportedProgram
    except ImportError:
        return False
    return isinstance(obj, ExportedProgram)
