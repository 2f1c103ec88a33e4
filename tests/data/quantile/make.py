"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `quantile` and
`nanquantile` (tensor and float quantiles, over one dimension or all, keepdim, every
interpolation mode, NaNs, f64, and the calls PyTorch refuses: integer and half inputs, empty
inputs, q out of range), written through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


def attrs(dim, keepdim, interp, q=None):
    a = []
    if q is not None:
        a.append(f"q = {float(q)!r} : f64")
    if dim is not None:
        a.append(f"dim = {dim} : i64")
    if keepdim:
        a.append("keepdim = true")
    if interp != "linear":
        a.append("interpolation = " + json.dumps(interp))
    return " {" + ", ".join(a) + "}" if a else ""


def add(name, x, q, dim=None, keepdim=False, interp="linear", nan=False):
    base = "nanquantile" if nan else "quantile"
    fn = torch.nanquantile if nan else torch.quantile
    if isinstance(q, float):
        op = f"aten.{base}.scalar" + attrs(dim, keepdim, interp, q)
        groups = [x]
    else:
        op = f"aten.{base}" + attrs(dim, keepdim, interp)
        groups = [x, q]
    try:
        out = fn(x, q, dim=dim, keepdim=keepdim, interpolation=interp)
    except RuntimeError:
        CASES.add(name, op, groups, error=True)
        return
    CASES.add(name, op, groups, out)


X = torch.randn(4, 7)
Q = torch.tensor([0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
for interp in ["linear", "lower", "higher", "midpoint", "nearest"]:
    add(f"all_{interp}", X, Q, interp=interp)
    add(f"dim1_{interp}", X, Q, dim=1, interp=interp)
    add(f"scalar_dim0_{interp}", X, 0.3, dim=0, interp=interp)
    N = X.clone()
    N[1, 2] = float("nan")
    N[3, :] = float("nan")
    add(f"nan_{interp}", N, Q, dim=1, interp=interp)
    add(f"nanq_{interp}", N, Q, dim=1, interp=interp, nan=True)
    add(f"nanq_all_{interp}", N, 0.4, interp=interp, nan=True)
# Ties at half ranks: `nearest` rounds half to even.
add("nearest_half", torch.arange(6.0), torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9]), interp="nearest")
Y = torch.randn(2, 3, 5)
add("keepdim_dim", Y, Q, dim=1, keepdim=True)
add("keepdim_none", Y, Q, keepdim=True)
add("keepdim_scalar", Y, 0.75, dim=-1, keepdim=True)
add("q_rank0", Y, torch.tensor(0.6), dim=2)
add("q_rank0_all", Y, torch.tensor(0.6))
add("scalar_input", torch.tensor(2.5), Q)
add("scalar_input_dim", torch.tensor(2.5), 0.5, dim=0, keepdim=True)
add("f64", Y.double(), Q.double(), dim=0)
add("nan_f64", N.double(), 0.5, dim=0, nan=True)
add("one_element_rows", torch.randn(3, 1), Q, dim=1)
add("int_input", torch.arange(6), 0.5)
add("bf16_input", Y.bfloat16(), 0.5)
add("f16_input", Y.half(), Q.half())
add("q_dtype", Y, Q.double())
add("q_out_of_range", Y, 1.5)
add("empty", torch.randn(0, 3), 0.5, dim=1)
add("q_rank2", Y, Q.reshape(2, 3))

CASES.save()
