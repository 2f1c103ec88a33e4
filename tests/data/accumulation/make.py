"""Writes cases.json and io.safetensors: PyTorch 2.15's results for sums, means and products
over many bf16/f16 elements, where accumulating in the element type would give a
visibly different result (checked here against a sequential accumulation in that type), so
tests/torch_ops.rs proves that the runtime accumulates them in f32 as PyTorch does.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()

def sequential_sum(x, dtype):
    """The sum accumulated in `dtype` one element at a time."""
    acc = torch.zeros((), dtype=dtype)
    for v in x.flatten():
        acc = (acc + v).to(dtype)
    return acc


for dtype, tag, ulp in [(torch.bfloat16, "bf16", 2.0**-8), (torch.float16, "f16", 2.0**-11)]:
    x = (torch.rand(8192) * 0.5 + 0.75).to(dtype)
    s = torch.sum(x)
    assert abs(float(s) - float(sequential_sum(x, dtype))) > 8 * abs(float(s)) * ulp, "no difference to show"
    CASES.add(f"sum_{tag}", "aten.sum", [x], s)
    m = x.reshape(8, 1024)
    mean = torch.mean(m, dim=1)
    CASES.add(f"mean_{tag}", "aten.mean.dim {dim = [1], keepdim = false}", [m], mean)
    a, b = x[:4096].reshape(1, 4096), x[4096:].reshape(4096, 1)
    p = torch.mm(a, b)
    assert abs(float(p) - float(sequential_sum(a.flatten() * b.flatten(), dtype))) > 8 * abs(float(p)) * ulp
    CASES.add(f"mm_{tag}", "aten.mm", [a, b], p)

CASES.save()
