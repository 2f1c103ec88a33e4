"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the special functions
`special_i0`, `special_polygamma` (n from 0 to 4), `special_gammainc` and `special_gammaincc`
(broadcast operands, edge values: zeros, infinities, NaN, negative arguments), f32 and f64, and
integer inputs (computed as float32), and `matrix_exp` (small and large norms, batches, 0-size), written through ../torch_cases.py.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


X = torch.cat([torch.linspace(-20, 20, 41), torch.tensor([0.0, 0.5, -0.5, 80.0, float("inf"), float("-inf"), float("nan")])])
add("i0", "aten.special_i0", [X], lambda: torch.special.i0(X))
add("i0_f64", "aten.special_i0", [X.double()], lambda: torch.special.i0(X.double()))
add("i0_int", "aten.special_i0", [torch.arange(-5, 6)], lambda: torch.special.i0(torch.arange(-5, 6)))
add("i0_empty", "aten.special_i0", [torch.randn(0, 3)], lambda: torch.special.i0(torch.randn(0, 3)))
add("i0_bf16", "aten.special_i0", [X[:30].bfloat16()], lambda: torch.special.i0(X[:30].bfloat16()))
P = torch.cat([torch.rand(20) * 10 + 0.05, torch.tensor([-2.5, -0.5, -1.5, 0.0, -3.0, 100.0])])
for n in range(5):
    add(f"polygamma_{n}", f"aten.special_polygamma {{n = {n} : i64}}", [P], lambda: torch.special.polygamma(n, P))
    add(f"polygamma_{n}_f64", f"aten.special_polygamma {{n = {n} : i64}}", [P.double()], lambda: torch.special.polygamma(n, P.double()))
add("polygamma_int", "aten.special_polygamma {n = 1 : i64}", [torch.arange(1, 6)], lambda: torch.special.polygamma(1, torch.arange(1, 6)))
A = torch.tensor([0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 0.1])[:, None]
Y = torch.tensor([0.0, 0.01, 0.3, 1.0, 2.5, 8.0, 20.0, 60.0])
add("gammainc", "aten.special_gammainc", [A, Y], lambda: torch.special.gammainc(A, Y))
add("gammaincc", "aten.special_gammaincc", [A, Y], lambda: torch.special.gammaincc(A, Y))
add("gammainc_f64", "aten.special_gammainc", [A.double(), Y.double()], lambda: torch.special.gammainc(A.double(), Y.double()))
add("gammaincc_f64", "aten.special_gammaincc", [A.double(), Y.double()], lambda: torch.special.gammaincc(A.double(), Y.double()))
E = torch.tensor([0.0, -1.0, 1.0, float("inf"), float("nan"), 2.0, 0.0])
F = torch.tensor([1.0, 1.0, -1.0, 2.0, 1.0, float("inf"), 0.0])
add("gammainc_edges", "aten.special_gammainc", [E, F], lambda: torch.special.gammainc(E, F))
add("gammaincc_edges", "aten.special_gammaincc", [E, F], lambda: torch.special.gammaincc(E, F))
add("gammainc_bf16", "aten.special_gammainc", [A.bfloat16(), Y.bfloat16()], lambda: torch.special.gammainc(A.bfloat16(), Y.bfloat16()))
add("gammainc_int", "aten.special_gammainc", [torch.arange(1, 4), torch.arange(0, 3)], lambda: torch.special.gammainc(torch.arange(1, 4), torch.arange(0, 3)))
M = torch.randn(3, 4, 4)
add("matrix_exp", "aten.matrix_exp", [M], lambda: torch.matrix_exp(M))
add("matrix_exp_large", "aten.matrix_exp", [M * 6], lambda: torch.matrix_exp(M * 6))
add("matrix_exp_f64", "aten.matrix_exp", [M.double() * 3], lambda: torch.matrix_exp(M.double() * 3))
add("matrix_exp_1x1", "aten.matrix_exp", [torch.tensor([[0.7]])], lambda: torch.matrix_exp(torch.tensor([[0.7]])))
add("matrix_exp_empty", "aten.matrix_exp", [torch.randn(2, 0, 0)], lambda: torch.matrix_exp(torch.randn(2, 0, 0)))
add("matrix_exp_batch_empty", "aten.matrix_exp", [torch.randn(0, 3, 3)], lambda: torch.matrix_exp(torch.randn(0, 3, 3)))
add("matrix_exp_not_square", "aten.matrix_exp", [torch.randn(2, 3)], lambda: torch.matrix_exp(torch.randn(2, 3)))
add("matrix_exp_int", "aten.matrix_exp", [torch.ones(2, 2, dtype=torch.int64)], lambda: torch.matrix_exp(torch.ones(2, 2, dtype=torch.int64)))

CASES.save()
