"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `einsum` (contractions,
outer and batch products, repeated subscripts taking diagonals, ellipses broadcasting,
implicit outputs, sums, 0-size dimensions, bf16/f16 and int64 operands, and equations
PyTorch refuses), written through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


def add(name, eq, *xs, dtype=None):
    if dtype is not None:
        xs = [x.to(dtype) for x in xs]
    op = "aten.einsum {equation = " + json.dumps(eq) + "}"
    try:
        out = torch.einsum(eq, *xs)
    except RuntimeError:
        CASES.add(name, op, [list(xs)], error=True)
        return
    CASES.add(name, op, [list(xs)], out)


r = torch.randn
add("matmul", "ij,jk->ik", r(3, 4), r(4, 5))
add("matmul_implicit", "ij,jk", r(3, 4), r(4, 5))
add("transpose_implicit", "ba", r(3, 4))
add("upper_before_lower", "bA,aB", r(2, 3), r(4, 5))
add("bmm", "bij,bjk->bik", r(2, 3, 4), r(2, 4, 5))
add("outer", "i,j->ij", r(3), r(4))
add("dot", "i,i->", r(5), r(5))
add("dot_implicit", "i,i", r(5), r(5))
add("trace", "ii", r(4, 4))
add("diagonal", "ii->i", r(4, 4))
add("diag_3", "iji->ij", r(3, 2, 3))
add("sum_all", "ijk->", r(2, 3, 4))
add("sum_dim", "ijk->ki", r(2, 3, 4))
add("identity", "ij->ij", r(2, 3))
add("three", "ij,jk,kl->il", r(2, 3), r(3, 4), r(4, 2))
add("three_shared", "bi,bj,bk->bijk", r(2, 3), r(2, 2), r(2, 4))
add("ellipsis_batch", "...ij,...jk->...ik", r(2, 1, 3, 4), r(5, 4, 6))
add("ellipsis_middle", "i...j,j...->i...", r(2, 3, 4), r(4, 3))
add("ellipsis_implicit", "...ij,...jk", r(2, 3, 4), r(4, 5))
add("ellipsis_sum", "...i->i", r(2, 3, 4))
add("broadcast_one", "ij,j->i", r(3, 1), r(5))
add("bilinear", "bn,anm,bm->ba", r(2, 3), r(4, 3, 5), r(2, 5))
add("spaces", " i j , j k -> i k ", r(2, 3), r(3, 2))
add("scalar_operand", ",ij->ij", r(()), r(2, 3))
add("zero_size_contract", "ij,jk->ik", r(3, 0), r(0, 4))
add("zero_size_keep", "ij,jk->ik", r(0, 3), r(3, 4))
add("int64", "ij,jk->ik", torch.randint(-5, 5, (3, 4)), torch.randint(-5, 5, (4, 2)))
add("bf16", "bij,bjk->bik", r(2, 3, 8), r(2, 8, 5), dtype=torch.bfloat16)
add("f16", "ij,j->i", r(3, 8), r(8), dtype=torch.float16)
add("f64", "ii,ij->j", r(3, 3), r(3, 2), dtype=torch.float64)
add("wrong_count", "ij,jk->ik", r(3, 4))
add("mismatch", "ij,jk->ik", r(3, 4), r(5, 2))
add("bad_output", "ij->k", r(3, 4))
add("repeated_output", "ij->ii", r(3, 4))
add("repeat_size_mismatch", "ii->i", r(3, 4))
add("rank_mismatch", "ijk->i", r(3, 4))

CASES.save()
