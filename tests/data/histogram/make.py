"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `histogramdd` in its three
forms (a bin count per dim, one count for all dims, explicit edge tensors): ranges given and
taken from the data, points outside the range and on the last edge, per-point weights,
density, 1 to 3 dims, `f32` and `f64`, an empty input, a degenerate range, and the calls
PyTorch refuses, written through ../torch_cases.py. Each case's results are the histogram and
then the edges of every dim, which the op returns as one `Tensor[]` ("tail_list").
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
aten = torch.ops.aten


def add(name, op, groups, fn):
    try:
        hist, edges = fn()
    except RuntimeError:
        CASES.add(name, op, groups, error=True, tail_list=True)
        return
    CASES.add(name, op, groups, [hist, *edges], tail_list=True)


def flag(b):
    return "true" if b else "false"


def floats(v):
    return "[" + ", ".join(f"{float(f)!r} : f64" for f in v) + "]"


def attrs(bins=None, rng=None, density=False):
    parts = []
    if bins is not None:
        parts.append(f"bins = {bins}")
    parts.append("range = " + ("#prim.none" if rng is None else floats(rng)))
    parts.append(f"density = {flag(density)}")
    return " {" + ", ".join(parts) + "}"


HD = "aten.histogramdd"
X2 = torch.randn(50, 2)
X3 = torch.randn(4, 10, 3)
X1 = torch.rand(30, 1) * 4
W2 = torch.rand(50)
W3 = torch.rand(4, 10)
for density in [False, True]:
    d = density
    add(f"counts_2d_{d}", HD + attrs("[3, 4]", None, d), [X2], lambda: aten.histogramdd(X2, [3, 4], None, None, d))
    add(f"counts_range_{d}", HD + attrs("[4, 2]", [-1, 1, -0.5, 2], d), [X2],
        lambda: aten.histogramdd(X2, [4, 2], [-1.0, 1.0, -0.5, 2.0], None, d))
    add(f"counts_weight_{d}", HD + attrs("[3, 5]", None, d), [X2, W2], lambda: aten.histogramdd(X2, [3, 5], None, W2, d))
    add(f"counts_3d_weight_{d}", HD + attrs("[2, 3, 4]", [-2, 2, -1, 1, 0, 3], d), [X3, W3],
        lambda: aten.histogramdd(X3, [2, 3, 4], [-2.0, 2.0, -1.0, 1.0, 0.0, 3.0], W3, d))
    add(f"int_bins_{d}", HD + ".int_bins" + attrs("5 : i64", None, d), [X3], lambda: aten.histogramdd.int_bins(X3, 5, None, None, d))
    add(f"int_bins_weight_{d}", HD + ".int_bins" + attrs("4 : i64", [0, 2, -1, 1], d), [X2, W2],
        lambda: aten.histogramdd.int_bins(X2, 4, [0.0, 2.0, -1.0, 1.0], W2, d))
    E0 = torch.tensor([-2.0, -0.5, 0.0, 0.3, 2.0])
    E1 = torch.tensor([-1.0, 1.0, 1.5])
    add(f"edges_{d}", HD + ".TensorList_bins" + attrs(None, None, d), [X2, [E0, E1]],
        lambda: aten.histogramdd.TensorList_bins(X2, [E0, E1], None, None, d))
    add(f"edges_weight_{d}", HD + ".TensorList_bins" + attrs(None, None, d), [X2, [E0, E1], W2],
        lambda: aten.histogramdd.TensorList_bins(X2, [E0, E1], None, W2, d))
add("counts_1d", HD + attrs("[7]"), [X1], lambda: aten.histogramdd(X1, [7]))
# Points on interior edges and on the right edge (which the last bin includes).
XE = torch.tensor([[0.0, 0.0], [0.25, 1.0], [0.5, 0.5], [1.0, 1.0], [0.75, 0.25], [1.0, 0.0], [-0.1, 0.5], [0.5, 1.1]])
add("on_edges", HD + attrs("[4, 2]", [0, 1, 0, 1]), [XE], lambda: aten.histogramdd(XE, [4, 2], [0.0, 1.0, 0.0, 1.0]))
add("on_edges_tensors", HD + ".TensorList_bins" + attrs(), [XE, [torch.tensor([0.0, 0.25, 0.5, 1.0]), torch.tensor([0.0, 1.0])]],
    lambda: aten.histogramdd.TensorList_bins(XE, [torch.tensor([0.0, 0.25, 0.5, 1.0]), torch.tensor([0.0, 1.0])]))
add("f64", HD + attrs("[3, 3]", None, True), [X2.double(), W2.double()], lambda: aten.histogramdd(X2.double(), [3, 3], None, W2.double(), True))
add("f64_edges", HD + ".TensorList_bins" + attrs(), [X2.double(), [E0.double(), E1.double()]],
    lambda: aten.histogramdd.TensorList_bins(X2.double(), [E0.double(), E1.double()]))
add("empty_input", HD + attrs("[2, 3]"), [torch.randn(0, 2)], lambda: aten.histogramdd(torch.randn(0, 2), [2, 3]))
XC = torch.ones(6, 2)
add("degenerate_range", HD + attrs("[3, 2]"), [XC], lambda: aten.histogramdd(XC, [3, 2]))
add("equal_range_given", HD + attrs("[2, 2]", [1, 1, 0, 2], True), [XC], lambda: aten.histogramdd(XC, [2, 2], [1.0, 1.0, 0.0, 2.0], None, True))
add("nan_point_with_range", HD + attrs("[2, 2]", [-3, 3, -3, 3]), [torch.tensor([[float("nan"), 0.0], [0.5, 0.5]])],
    lambda: aten.histogramdd(torch.tensor([[float("nan"), 0.0], [0.5, 0.5]]), [2, 2], [-3.0, 3.0, -3.0, 3.0]))
# Refused: too few dims, bins not matching the last dim, a zero bin count, an inverted or
# non-finite range, NaN without a range, mismatched weight, mixed dtypes, integer and bf16 input.
add("one_dim_input", HD + attrs("[3]"), [torch.randn(5)], lambda: aten.histogramdd(torch.randn(5), [3]))
add("bins_len", HD + attrs("[3]"), [X2], lambda: aten.histogramdd(X2, [3]))
add("zero_bins", HD + attrs("[0, 3]"), [X2], lambda: aten.histogramdd(X2, [0, 3]))
add("inverted_range", HD + attrs("[2, 2]", [1, 0, 0, 1]), [X2], lambda: aten.histogramdd(X2, [2, 2], [1.0, 0.0, 0.0, 1.0]))
add("infinite_range", HD + attrs("[2, 2]", [0, float("inf"), 0, 1]), [X2], lambda: aten.histogramdd(X2, [2, 2], [0.0, float("inf"), 0.0, 1.0]))
add("nan_no_range", HD + attrs("[2, 2]"), [torch.tensor([[float("nan"), 0.0], [0.5, 0.5]])],
    lambda: aten.histogramdd(torch.tensor([[float("nan"), 0.0], [0.5, 0.5]]), [2, 2]))
add("weight_shape", HD + attrs("[2, 2]"), [X2, W2[:49]], lambda: aten.histogramdd(X2, [2, 2], None, W2[:49]))
add("weight_dtype", HD + attrs("[2, 2]"), [X2, W2.double()], lambda: aten.histogramdd(X2, [2, 2], None, W2.double()))
add("edges_dtype", HD + ".TensorList_bins" + attrs(), [X2, [E0.double(), E1]], lambda: aten.histogramdd.TensorList_bins(X2, [E0.double(), E1]))
add("edges_single", HD + ".TensorList_bins" + attrs(), [X2, [E0[:1], E1]], lambda: aten.histogramdd.TensorList_bins(X2, [E0[:1], E1]))
add("int_input", HD + attrs("[2, 2]"), [torch.ones(3, 2, dtype=torch.int64)], lambda: aten.histogramdd(torch.ones(3, 2, dtype=torch.int64), [2, 2]))
add("bf16_input", HD + attrs("[2, 2]"), [X2.bfloat16()], lambda: aten.histogramdd(X2.bfloat16(), [2, 2]))

CASES.save()
