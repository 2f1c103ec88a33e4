"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the symmetric-indefinite
LDLᵀ factorization (`linalg_ldl_factor`, `linalg_ldl_factor_ex`) and its solve
(`linalg_ldl_solve`): definite and indefinite matrices, matrices that need 2×2 pivot blocks,
batches, `f32` and `f64`, `hermitian`, singular matrices reported in `info`, broadcast
right-hand sides, and the calls PyTorch refuses, written through ../torch_cases.py.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
record = CASES.record
aten = torch.ops.aten


def sym(*shape, dtype=torch.float32):
    a = torch.randn(*shape, dtype=dtype)
    return a + a.mT


ZERO_DIAG = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])
PD = torch.randn(5, 5, dtype=torch.float64)
PD = PD @ PD.mT + torch.eye(5, dtype=torch.float64)
FACTOR_INPUTS = [
    ("indefinite", sym(4, 4)),
    ("zero_diagonal", ZERO_DIAG),
    ("positive_definite_f64", PD),
    ("indefinite_8_f64", sym(8, 8, dtype=torch.float64)),
    ("batch", sym(3, 6, 6)),
    ("one", torch.tensor([[-2.5]])),
    ("empty", torch.zeros(0, 0)),
    ("empty_batch", torch.zeros(0, 3, 3)),
    # Only the lower triangle is read.
    ("not_symmetric", torch.randn(4, 4)),
]
for name, a in FACTOR_INPUTS:
    record(f"factor_{name}", "aten.linalg_ldl_factor", [a], lambda: aten.linalg_ldl_factor(a))
    record(f"factor_ex_{name}", "aten.linalg_ldl_factor_ex", [a], lambda: aten.linalg_ldl_factor_ex(a))
a = sym(2, 5, 5)
record("factor_hermitian", "aten.linalg_ldl_factor {hermitian = true}", [a], lambda: aten.linalg_ldl_factor(a, hermitian=True))
SINGULAR = torch.zeros(2, 3, 3)
SINGULAR[0] = sym(3, 3)
record("factor_ex_singular", "aten.linalg_ldl_factor_ex", [SINGULAR], lambda: aten.linalg_ldl_factor_ex(SINGULAR))
record("factor_singular", "aten.linalg_ldl_factor", [SINGULAR], lambda: aten.linalg_ldl_factor(SINGULAR))
record("factor_ex_singular_checked", "aten.linalg_ldl_factor_ex {check_errors = true}", [SINGULAR],
       lambda: aten.linalg_ldl_factor_ex(SINGULAR, check_errors=True))
for name, a in [("f16", sym(3, 3).half()), ("int", torch.ones(3, 3, dtype=torch.int64)), ("rect", torch.randn(3, 4)),
                ("vector", torch.randn(3))]:
    record(f"factor_refused_{name}", "aten.linalg_ldl_factor", [a], lambda: aten.linalg_ldl_factor(a))

for name, a, b in [
    ("indefinite", sym(4, 4), torch.randn(4, 2)),
    ("zero_diagonal", ZERO_DIAG, torch.randn(3, 3)),
    ("f64", sym(7, 7, dtype=torch.float64), torch.randn(7, 1, dtype=torch.float64)),
    ("batch", sym(3, 5, 5), torch.randn(3, 5, 2)),
    ("broadcast_b", sym(2, 4, 4), torch.randn(4, 3)),
    ("broadcast_ld", sym(4, 4), torch.randn(2, 4, 3)),
]:
    ld, piv = torch.linalg.ldl_factor(a)
    record(f"solve_{name}", "aten.linalg_ldl_solve", [ld, piv, b], lambda: aten.linalg_ldl_solve(ld, piv, b))
ld, piv = torch.linalg.ldl_factor(sym(4, 4))
record("solve_wrong_rows", "aten.linalg_ldl_solve", [ld, piv, torch.randn(3, 2)], lambda: aten.linalg_ldl_solve(ld, piv, torch.randn(3, 2)))
record("solve_float_pivots", "aten.linalg_ldl_solve", [ld, piv.float(), torch.randn(4, 2)],
       lambda: aten.linalg_ldl_solve(ld, piv.float(), torch.randn(4, 2)))
record("solve_dtype_mismatch", "aten.linalg_ldl_solve", [ld, piv, torch.randn(4, 2, dtype=torch.float64)],
       lambda: aten.linalg_ldl_solve(ld, piv, torch.randn(4, 2, dtype=torch.float64)))

CASES.save()
