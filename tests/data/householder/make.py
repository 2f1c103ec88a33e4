"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the real linear-algebra ops
given tolerance tensors (`linalg_matrix_rank.tol_tensor`/`.atol_rtol_tensor`,
`linalg_pinv.rcond_tensor`/`.atol_rtol_tensor`) and for the product of Householder reflectors
(`orgqr`, `linalg_householder_product`), written through ../torch_cases.py ("error": PyTorch
refuses the call). Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add
aten = torch.ops.aten


def low_rank(*shape, rank, dtype=torch.float32):
    *batch, m, n = shape
    return (torch.randn(*batch, m, rank, dtype=dtype) @ torch.randn(*batch, rank, n, dtype=dtype))


A = low_rank(2, 4, 3, rank=2)
A64 = low_rank(5, 4, rank=3, dtype=torch.float64)
G = torch.randn(3, 5)
SYM = low_rank(2, 4, 4, rank=2)
SYM = SYM + SYM.mT
T0 = torch.tensor(1e-3)
TB = torch.tensor([1e-3, 10.0])

add("matrix_rank_tol_tensor", "aten.linalg_matrix_rank.tol_tensor", [A, T0], aten.linalg_matrix_rank.tol_tensor(A, T0))
add("matrix_rank_tol_tensor_batch", "aten.linalg_matrix_rank.tol_tensor", [A, TB], aten.linalg_matrix_rank.tol_tensor(A, TB))
add("matrix_rank_tol_tensor_f64", "aten.linalg_matrix_rank.tol_tensor", [A64, torch.tensor(1e-9, dtype=torch.float64)],
    aten.linalg_matrix_rank.tol_tensor(A64, torch.tensor(1e-9, dtype=torch.float64)))
add("matrix_rank_atol_rtol_none", "aten.linalg_matrix_rank.atol_rtol_tensor", [G], aten.linalg_matrix_rank.atol_rtol_tensor(G))
add("matrix_rank_atol", "aten.linalg_matrix_rank.atol_rtol_tensor", [A, TB], aten.linalg_matrix_rank.atol_rtol_tensor(A, atol=TB))
add("matrix_rank_rtol", "aten.linalg_matrix_rank.atol_rtol_tensor {atol = #prim.none}", [A, torch.tensor(0.5)],
    aten.linalg_matrix_rank.atol_rtol_tensor(A, rtol=torch.tensor(0.5)))
add("matrix_rank_atol_rtol", "aten.linalg_matrix_rank.atol_rtol_tensor", [A, torch.tensor(0.0), torch.tensor(0.3)],
    aten.linalg_matrix_rank.atol_rtol_tensor(A, atol=torch.tensor(0.0), rtol=torch.tensor(0.3)))
add("matrix_rank_hermitian", "aten.linalg_matrix_rank.tol_tensor {hermitian = true}", [SYM, T0],
    aten.linalg_matrix_rank.tol_tensor(SYM, T0, hermitian=True))

add("pinv_rcond_tensor", "aten.linalg_pinv.rcond_tensor", [G, torch.tensor(1e-5)], aten.linalg_pinv.rcond_tensor(G, torch.tensor(1e-5)))
add("pinv_rcond_tensor_low_rank", "aten.linalg_pinv.rcond_tensor", [A, torch.tensor([1e-4, 0.5])],
    aten.linalg_pinv.rcond_tensor(A, torch.tensor([1e-4, 0.5])))
add("pinv_rcond_tensor_f64", "aten.linalg_pinv.rcond_tensor", [A64, torch.tensor(1e-10, dtype=torch.float64)],
    aten.linalg_pinv.rcond_tensor(A64, torch.tensor(1e-10, dtype=torch.float64)))
add("pinv_rcond_tensor_hermitian", "aten.linalg_pinv.rcond_tensor {hermitian = true}", [SYM, torch.tensor(1e-4)],
    aten.linalg_pinv.rcond_tensor(SYM, torch.tensor(1e-4), hermitian=True))
add("pinv_atol_rtol_tensor", "aten.linalg_pinv.atol_rtol_tensor", [A, torch.tensor(1e-3)],
    aten.linalg_pinv.atol_rtol_tensor(A, atol=torch.tensor(1e-3)))
add("pinv_atol_rtol_tensor_none", "aten.linalg_pinv.atol_rtol_tensor", [G], aten.linalg_pinv.atol_rtol_tensor(G))

for name, shape, dtype in [("orgqr", (5, 3), torch.float32), ("orgqr_square_batch", (2, 4, 4), torch.float32),
                           ("orgqr_f64", (6, 4), torch.float64)]:
    a, tau = torch.geqrf(torch.randn(*shape, dtype=dtype))
    add(name, "aten.orgqr", [a, tau], torch.orgqr(a, tau))
a, tau = torch.geqrf(torch.randn(5, 4))
add("orgqr_fewer_reflectors", "aten.orgqr", [a, tau[:2].contiguous()], torch.orgqr(a, tau[:2]))
add("householder_product", "aten.linalg_householder_product", [a, tau], torch.linalg.householder_product(a, tau))
add("orgqr_wide", "aten.orgqr", [torch.randn(2, 3), torch.randn(2)], error=True)

CASES.save()
