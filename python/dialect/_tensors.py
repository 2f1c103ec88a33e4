"""Tensors across the boundary without copies.

An input ``torch.Tensor`` or NumPy array is described to the native module by its owner, data
address, dtype, sizes and element strides; the runtime reads its memory in place and keeps the
owner alive while it holds it. An output is a native tensor whose ``__array_interface__`` NumPy
shares, and ``torch.from_numpy`` shares in turn. Only what the runtime cannot address is copied:
tensors off the CPU, arrays with negative or unaligned strides, or of a byte order or element type
it lacks.
"""

from __future__ import annotations

import numpy as np

from ._native import DialectError, Tensor

# NumPy's element types the runtime has, by PyTorch's name.
_NUMPY_DTYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int8): "int8",
    np.dtype(np.int16): "int16",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.float16): "float16",
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
}


_TORCH_TENSOR = None


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def is_torch_tensor(x) -> bool:
    global _TORCH_TENSOR
    if _TORCH_TENSOR is None:
        torch = _torch()
        # A class no value is an instance of, when PyTorch is absent.
        _TORCH_TENSOR = torch.Tensor if torch is not None else type("NoTorch", (), {})
    return isinstance(x, _TORCH_TENSOR)


class DescriptionCache:
    """The descriptions of a program's last inputs, by position. A call that passes the same
    tensor object again at a position (Dynamo passes a model's parameters on every call), still
    over the same memory and shape, reuses its description: the runtime reads the tensor's memory
    in place, so what the description points at is the tensor's current contents."""

    def __init__(self):
        self._entries = {}

    def describe(self, i, x):
        if is_torch_tensor(x):
            hit = self._entries.get(i)
            if hit is not None and hit[0] is x and hit[1] == x.data_ptr() and hit[2] == x.shape:
                return hit[3]
            d = describe(x)
            self._entries[i] = (x, x.data_ptr(), x.shape, d)
            return d
        return describe(x)


def describe(x):
    """The native module's description of one flat input (see ``values::input`` in the crate)."""
    if isinstance(x, np.ndarray):
        return _describe_numpy(x)
    if isinstance(x, np.generic):
        return _describe_numpy(np.asarray(x))
    if is_torch_tensor(x):
        return _describe_torch(x)
    if x is None or isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, (list, tuple)) and all(is_torch_tensor(t) or isinstance(t, np.ndarray) for t in x):
        return [describe(t) for t in x]
    raise DialectError(f"unsupported input of type {type(x).__name__}")


def _describe_numpy(a: np.ndarray):
    native = a.dtype.newbyteorder("=")
    dtype = _NUMPY_DTYPES.get(native)
    if dtype is None:
        raise DialectError(f"unsupported NumPy element type {a.dtype}")
    if a.dtype != native:
        a = a.astype(native)
    item = a.itemsize
    if any(s < 0 or s % item for s in a.strides) or a.ctypes.data % item:
        a = np.ascontiguousarray(a)
    strides = [s // item for s in a.strides]
    return (a, a.ctypes.data, dtype, list(a.shape), strides)


def _describe_torch(t):
    torch = _torch()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.layout != torch.strided:
        t = t.to_dense()
    dtype = str(t.dtype).removeprefix("torch.")
    return (t, t.data_ptr(), dtype, list(t.shape), list(t.stride()))


def to_numpy(native):
    """A NumPy array sharing a native output's memory (bfloat16 as its ``uint16`` bits)."""
    return np.asarray(native)


def to_torch(native):
    """A ``torch.Tensor`` sharing a native output's memory."""
    torch = _torch()
    t = torch.from_numpy(np.asarray(native))
    if native.dtype == "bfloat16":
        t = t.view(torch.bfloat16)
    return t


def convert_output(x, as_torch: bool):
    """Turns the native module's flat outputs into tensors of the caller's kind."""
    if isinstance(x, list):
        return [convert_output(v, as_torch) for v in x]
    if isinstance(x, Tensor):
        if as_torch:
            return to_torch(x)
        if x.dtype == "bfloat16":
            if _torch() is None:
                raise DialectError("a bfloat16 output needs PyTorch (NumPy has no bfloat16)")
            return to_torch(x)
        return to_numpy(x)
    return x
