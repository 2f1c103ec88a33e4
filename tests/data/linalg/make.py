"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the real linear-algebra ops
(the factorization kernels and the decompositions built on products and norms). Each case names
the op with its attributes and its operands (an integer is one input tensor, a list of integers
a `Tensor[]` operand); "up_to_sign" names results whose columns ("columns") or rows ("rows")
are determined only up to sign (eigenvectors, singular vectors), which tests/torch_ops.rs
compares after giving each the sign of its largest entry; "error" marks a call PyTorch refuses.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add

def spd(*shape, dtype=torch.float32):
    a = torch.randn(*shape, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


A = torch.randn(2, 3, 3)
A64 = torch.randn(4, 4, dtype=torch.float64)
SING = torch.tensor([[1.0, 2.0, 0.0], [4.0, 5.0, 0.0], [2.0, 4.0, 0.0]])  # a zero column: exactly singular
SYM = spd(2, 4, 4)
NEG = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # determinant -1

add("linalg_inv", "aten.linalg_inv", [A], torch.linalg.inv(A))
add("inverse_f64", "aten.inverse", [A64], torch.inverse(A64))
add("linalg_inv_singular", "aten.linalg_inv", [SING], error=True)
add("linalg_det", "aten.linalg_det", [A], torch.linalg.det(A))
add("det_f64", "aten.det", [A64], torch.det(A64))
add("det_singular", "aten.linalg_det", [SING], torch.linalg.det(SING))
add("linalg_slogdet", "aten.linalg_slogdet", [A], torch.linalg.slogdet(A))
add("slogdet_singular", "aten.slogdet", [SING], torch.slogdet(SING))
add("logdet", "aten.logdet", [SYM], torch.logdet(SYM))
add("logdet_negative", "aten.logdet", [NEG], torch.logdet(NEG))
add("logdet_singular", "aten.logdet", [SING], torch.logdet(SING))
add("det_f16", "aten.linalg_det", [A.half()], error=True)
add("det_not_square", "aten.linalg_det", [torch.randn(2, 3)], error=True)

B = torch.randn(2, 3, 2)
add("linalg_solve", "aten.linalg_solve", [A, B], torch.linalg.solve(A, B))
V = torch.randn(3)
add("linalg_solve_vector", "aten.linalg_solve", [A, V], torch.linalg.solve(A, V))
BV = torch.randn(2, 3)
add("linalg_solve_batched_vectors", "aten.linalg_solve", [A, BV], torch.linalg.solve(A, BV))
BR = torch.randn(2, 2, 3)
add("linalg_solve_right", "aten.linalg_solve {left = false}", [A, BR], torch.linalg.solve(A, BR, left=False))
A1, B5 = torch.randn(3, 3), torch.randn(5, 1, 3, 2)
add("linalg_solve_broadcast", "aten.linalg_solve", [A1, B5], torch.linalg.solve(A1, B5))
add("linalg_solve_singular", "aten.linalg_solve", [SING, V], error=True)
add("linalg_solve_ex", "aten.linalg_solve_ex", [A, B], torch.linalg.solve_ex(A, B))

add("linalg_cholesky", "aten.linalg_cholesky", [SYM], torch.linalg.cholesky(SYM))
S64 = spd(3, 3, dtype=torch.float64)
add("linalg_cholesky_upper", "aten.linalg_cholesky {upper = true}", [S64], torch.linalg.cholesky(S64, upper=True))
add("linalg_cholesky_not_pd", "aten.linalg_cholesky", [SING], error=True)

add("linalg_eigh", "aten.linalg_eigh", [SYM], torch.linalg.eigh(SYM), up_to_sign={"1": "columns"})
NS = torch.randn(4, 4, dtype=torch.float64)
add("linalg_eigh_upper", 'aten.linalg_eigh {UPLO = "U"}', [NS], torch.linalg.eigh(NS, UPLO="U"), up_to_sign={"1": "columns"})
add("linalg_eigvalsh", "aten.linalg_eigvalsh", [SYM], torch.linalg.eigvalsh(SYM))

T = torch.randn(2, 4, 3)
add("linalg_svd_thin", "aten.linalg_svd {full_matrices = false}", [T], torch.linalg.svd(T, full_matrices=False), up_to_sign={"0": "columns", "2": "rows"})
T43 = torch.randn(4, 3, dtype=torch.float64)
add("linalg_svd_full", "aten.linalg_svd", [T43], torch.linalg.svd(T43), up_to_sign={"0": "columns", "2": "rows"})
W = torch.randn(3, 4)
add("linalg_svd_wide_full", "aten.linalg_svd", [W], torch.linalg.svd(W), up_to_sign={"0": "columns", "2": "rows"})
add("linalg_svdvals", "aten.linalg_svdvals", [T], torch.linalg.svdvals(T))
add("svd", "aten.svd", [T], torch.svd(T), up_to_sign={"0": "columns", "2": "columns"})

W35 = torch.randn(3, 5)
add("linalg_pinv", "aten.linalg_pinv.atol_rtol_float", [W35], torch.linalg.pinv(W35))
add("pinverse", "aten.pinverse", [T], torch.pinverse(T))
LR = torch.randn(4, 2) @ torch.randn(2, 4)  # rank 2
add("linalg_pinv_rank_deficient", "aten.linalg_pinv.atol_rtol_float {rtol = 1.0e-4 : f64}", [LR], torch.linalg.pinv(LR, rtol=1e-4))

add("matrix_power_3", "aten.matrix_power {n = 3 : i64}", [A], torch.matrix_power(A, 3))
add("matrix_power_neg2", "aten.linalg_matrix_power {n = -2 : i64}", [A], torch.linalg.matrix_power(A, -2))
add("matrix_power_0", "aten.matrix_power {n = 0 : i64}", [A], torch.matrix_power(A, 0))
add("matrix_power_1", "aten.linalg_matrix_power {n = 1 : i64}", [A64], torch.linalg.matrix_power(A64, 1))

X = torch.randn(3, 4, 5)
add("vector_norm_2", "aten.linalg_vector_norm", [X], torch.linalg.vector_norm(X))
add("vector_norm_1_dim", "aten.linalg_vector_norm {ord = 1 : i64, dim = [1], keepdim = true}", [X], torch.linalg.vector_norm(X, 1, dim=1, keepdim=True))
add("vector_norm_3_dims", "aten.linalg_vector_norm {ord = 3.0 : f64, dim = [0, 2]}", [X], torch.linalg.vector_norm(X, 3.0, dim=(0, 2)))
add("vector_norm_0", "aten.linalg_vector_norm {ord = 0 : i64, dim = [-1]}", [torch.where(X > 0.5, X, 0)], torch.linalg.vector_norm(torch.where(X > 0.5, X, 0), 0, dim=-1))
for ordv, text in [(1, "1 : i64"), (-1, "-1 : i64"), (2, "2 : i64"), (-2, "-2 : i64")]:
    add(f"matrix_norm_{ordv}".replace("-", "neg"), f"aten.linalg_matrix_norm {{ord = {text}}}", [X], torch.linalg.matrix_norm(X, ordv))
add("matrix_norm_fro", 'aten.linalg_matrix_norm.str_ord', [X], torch.linalg.matrix_norm(X))
add("matrix_norm_nuc_keepdim", 'aten.linalg_matrix_norm.str_ord {ord = "nuc", dim = [0, 2], keepdim = true}', [X], torch.linalg.matrix_norm(X, "nuc", dim=(0, 2), keepdim=True))
add("matrix_norm_1_dims", "aten.linalg_matrix_norm {ord = 1 : i64, dim = [2, 0]}", [X], torch.linalg.matrix_norm(X, 1, dim=(2, 0)))
add("linalg_norm_default", "aten.linalg_norm", [X], torch.linalg.norm(X))
M = torch.randn(4, 3)
add("linalg_norm_2_matrix", "aten.linalg_norm {ord = 2 : i64}", [M], torch.linalg.norm(M, 2))
add("linalg_norm_dim", "aten.linalg_norm {ord = 1.5 : f64, dim = [1]}", [M], torch.linalg.norm(M, 1.5, dim=1))
add("linalg_norm_nuc", 'aten.linalg_norm.ord_str {ord = "nuc"}', [M], torch.linalg.norm(M, "nuc"))

MD = [torch.randn(4), torch.randn(4, 3), torch.randn(3, 5), torch.randn(5)]
add("multi_dot_vectors", "aten.linalg_multi_dot", [MD], torch.linalg.multi_dot(MD))
MM = [torch.randn(2, 4), torch.randn(4, 3), torch.randn(3, 5)]
add("multi_dot", "aten.linalg_multi_dot", [MM], torch.linalg.multi_dot(MM))
Y = torch.randn(4, 5)
add("linalg_vecdot", "aten.linalg_vecdot {dim = 1 : i64}", [X, Y], torch.linalg.vecdot(X, Y, dim=1))
R = torch.randn(5, 2)
add("linalg_matmul", "aten.linalg_matmul", [X, R], torch.linalg.matmul(X, R))

# Norms, condition numbers and ranks from singular values; baddbmm with a result dtype.
add("nuclear_norm", "aten.nuclear_norm", [T], torch.nuclear_norm(T))
add("nuclear_norm_dim", "aten.nuclear_norm.dim {dim = [0, 2], keepdim = true}", [X], torch.nuclear_norm(X, dim=(0, 2), keepdim=True))
add("linalg_cond", "aten.linalg_cond", [A], torch.linalg.cond(A))
add("linalg_cond_neg2", "aten.linalg_cond {p = -2 : i64}", [T], torch.linalg.cond(T, -2))
add("linalg_cond_1", "aten.linalg_cond {p = 1 : i64}", [A64], torch.linalg.cond(A64, 1))
add("linalg_cond_fro", 'aten.linalg_cond.p_str {p = "fro"}', [A], torch.linalg.cond(A, "fro"))
LR3 = torch.stack([LR, torch.randn(4, 4)])
add("linalg_matrix_rank", "aten.linalg_matrix_rank.atol_rtol_float", [LR3], torch.linalg.matrix_rank(LR3))
add("linalg_matrix_rank_tol", "aten.linalg_matrix_rank {tol = 0.5 : f64}", [LR3], torch.linalg.matrix_rank(LR3, tol=0.5))
BH = [torch.randn(2, 3, 5).bfloat16(), torch.randn(2, 3, 4).bfloat16(), torch.randn(2, 4, 5).bfloat16()]
# PyTorch runs `baddbmm.dtype` on CUDA only, where bf16 operands are multiplied in f32: the
# reference is the f32 product of the same values.
add("baddbmm_dtype", "aten.baddbmm.dtype {out_dtype = #prim.dtype<f32>, beta = 0.5 : f64, alpha = 2.0 : f64}", BH,
    torch.baddbmm(*[t.float() for t in BH], beta=0.5, alpha=2.0))

# LU factors and solves with them; tensor inverses and solves; Vandermonde matrices.
add("linalg_lu_factor", "aten.linalg_lu_factor", [T], torch.linalg.lu_factor(T))
add("linalg_lu_factor_singular", "aten.linalg_lu_factor", [SING], error=True)
add("lu_with_info_singular", "aten._lu_with_info", [SING], torch.ops.aten._lu_with_info(SING, True, False))
LUF = torch.linalg.lu_factor(A)
BS = torch.randn(2, 3, 4)
add("lu_solve", "aten.lu_solve", [BS, LUF[0], LUF[1]], torch.lu_solve(BS, LUF[0], LUF[1]))
TI = torch.randn(4, 6, 8, 3)
add("linalg_tensorinv", "aten.linalg_tensorinv", [TI], torch.linalg.tensorinv(TI))
TS, TB = torch.randn(2, 3, 6), torch.randn(2, 3)
add("linalg_tensorsolve", "aten.linalg_tensorsolve", [TS, TB], torch.linalg.tensorsolve(TS, TB))
TS2 = torch.randn(6, 2, 3)
add("linalg_tensorsolve_dims", "aten.linalg_tensorsolve {dims = [0]}", [TS2, TB], torch.linalg.tensorsolve(TS2, TB, dims=(0,)))
VX = torch.tensor([[1, 2, 3], [-1, 0, 2]])
add("linalg_vander", "aten.linalg_vander", [VX], torch.linalg.vander(VX))
add("linalg_vander_n", "aten.linalg_vander {N = 5 : i64}", [V], torch.linalg.vander(V, N=5))

CASES.save()
