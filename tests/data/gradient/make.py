"""Writes cases.json and io.safetensors: PyTorch 2.15's results for every overload of
`gradient` (default, scalar and per-dim spacing, coordinate tensors, one dim or several,
edge_order 1 and 2, int64 and f64 inputs, and the calls PyTorch refuses), written through
../torch_cases.py ("list_out": the op returns a `Tensor[]`). Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
G = torch.ops.aten.gradient


def add(name, op, groups, fn):
    CASES.record(name, op, groups, lambda: list(fn()), list_out=True)


X = torch.randn(4, 5, 3)
for e in [1, 2]:
    add(f"scalarint_default_{e}", f"aten.gradient.scalarint {{edge_order = {e} : i64}}", [X], lambda: G.scalarint(X, edge_order=e))
    add(f"scalarint_dim_{e}", f"aten.gradient.scalarint {{spacing = 0.5 : f64, dim = 1 : i64, edge_order = {e} : i64}}", [X],
        lambda: G.scalarint(X, spacing=0.5, dim=1, edge_order=e))
    add(f"scalararray_{e}", f"aten.gradient.scalararray {{spacing = 2 : i64, dim = [2, 0], edge_order = {e} : i64}}", [X],
        lambda: G.scalararray(X, spacing=2, dim=[2, 0], edge_order=e))
    add(f"array_{e}", f"aten.gradient.array {{dim = [-1], edge_order = {e} : i64}}", [X], lambda: G.array(X, dim=[-1], edge_order=e))
    add(f"scalarrayint_{e}", f"aten.gradient.scalarrayint {{spacing = [0.5, 2.0, 3 : i64], edge_order = {e} : i64}}", [X],
        lambda: G.scalarrayint(X, spacing=[0.5, 2.0, 3], edge_order=e))
    add(f"scalarrayarray_{e}", f"aten.gradient.scalarrayarray {{spacing = [0.25, 4.0], dim = [0, 2], edge_order = {e} : i64}}", [X],
        lambda: G.scalarrayarray(X, spacing=[0.25, 4.0], dim=[0, 2], edge_order=e))
    C0 = torch.cumsum(torch.rand(4) + 0.1, 0)
    C2 = torch.cumsum(torch.rand(3) + 0.1, 0)
    add(f"tensorarray_{e}", f"aten.gradient.tensorarray {{dim = [0, 2], edge_order = {e} : i64}}", [X, [C0, C2]],
        lambda: G.tensorarray(X, spacing=[C0, C2], dim=[0, 2], edge_order=e))
    C1 = torch.cumsum(torch.rand(5) + 0.1, 0)
    add(f"tensorarrayint_{e}", f"aten.gradient.tensorarrayint {{dim = 1 : i64, edge_order = {e} : i64}}", [X, [C1]],
        lambda: G.tensorarrayint(X, spacing=[C1], dim=1, edge_order=e))
I = torch.randint(-9, 9, (3, 4))
add("int_input", "aten.gradient.scalarint", [I], lambda: G.scalarint(I))
add("int_input_int_spacing", "aten.gradient.scalararray {spacing = 2 : i64, dim = [1], edge_order = 2 : i64}", [I],
    lambda: G.scalararray(I, spacing=2, dim=[1], edge_order=2))
add("f64", "aten.gradient.scalarint {edge_order = 2 : i64}", [X.double()], lambda: G.scalarint(X.double(), edge_order=2))
V = torch.randn(6)
add("vector", "aten.gradient.scalarint", [V], lambda: G.scalarint(V))
add("too_short", "aten.gradient.scalarint {edge_order = 2 : i64}", [torch.randn(2, 4)], lambda: G.scalarint(torch.randn(2, 4), edge_order=2))
add("bad_edge_order", "aten.gradient.scalarint {edge_order = 3 : i64}", [X], lambda: G.scalarint(X, edge_order=3))
add("spacing_length", "aten.gradient.scalarrayint {spacing = [1.0, 2.0]}", [X], lambda: G.scalarrayint(X, spacing=[1.0, 2.0]))

CASES.save()
