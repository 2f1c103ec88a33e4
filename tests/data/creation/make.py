"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the creation and
rearrangement ops torch.export leaves that the project decomposes (`linspace` and `logspace` in
every overload, `unfold_copy`, `_chunk_cat`, `pad_sequence`, `combinations`, `_reshape_alias`,
`_reshape_from_tensor`, `_shape_as_tensor`, the masked indexing ops, `_to_cpu`, `to_dense`,
`_saturate_weight_to_fp16`, `flatten_dense_tensors`, `unflatten_dense_tensors`), written
through ../torch_cases.py ("list_out": the op returns a `Tensor[]`; "error": PyTorch refuses
the call). Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add
aten = torch.ops.aten

DT = {torch.float32: "f32", torch.float64: "f64", torch.bfloat16: "bf16", torch.float16: "f16", torch.int64: "i64", torch.int32: "i32"}


def dt(d):
    return f"#prim.dtype<{DT[d]}>"


# linspace with tensor bounds, and logspace in every overload
S0, E0 = torch.tensor(-1.5), torch.tensor(4.0)
for steps in [0, 1, 5, 8]:
    add(f"linspace_tt_{steps}", f"aten.linspace.Tensor_Tensor {{steps = {steps} : i64}}", [S0, E0],
        aten.linspace.Tensor_Tensor(S0, E0, steps))
add("linspace_tt_int_bounds", "aten.linspace.Tensor_Tensor {steps = 6 : i64}", [torch.tensor(2), torch.tensor(9)],
    aten.linspace.Tensor_Tensor(torch.tensor(2), torch.tensor(9), 6))
for d in [torch.float64, torch.bfloat16, torch.float16, torch.int64]:
    add(f"linspace_tt_{DT[d]}", f"aten.linspace.Tensor_Tensor {{steps = 7 : i64, dtype = {dt(d)}}}", [S0, E0],
        aten.linspace.Tensor_Tensor(S0, E0, 7, dtype=d))
add("linspace_st", "aten.linspace.Scalar_Tensor {start = 3 : i64, steps = 5 : i64}", [E0],
    aten.linspace.Scalar_Tensor(3, E0, 5))
add("linspace_ts", "aten.linspace.Tensor_Scalar {end = -2.5, steps = 4 : i64}", [S0],
    aten.linspace.Tensor_Scalar(S0, -2.5, 4))
add("linspace_tt_vector", "aten.linspace.Tensor_Tensor {steps = 3 : i64}", [torch.tensor([1.0, 2.0]), E0], error=True)

for steps in [0, 1, 5]:
    add(f"logspace_{steps}", f"aten.logspace {{start = -1.0, end = 2.0, steps = {steps} : i64}}", [],
        torch.logspace(-1.0, 2.0, steps))
add("logspace_base2", "aten.logspace {start = 0 : i64, end = 10 : i64, steps = 11 : i64, base = 2.0}", [],
    torch.logspace(0, 10, 11, base=2.0))
for d in [torch.float64, torch.bfloat16, torch.float16, torch.int64]:
    add(f"logspace_{DT[d]}", f"aten.logspace {{start = 0.5, end = 3.0, steps = 6 : i64, base = 3.0, dtype = {dt(d)}}}", [],
        torch.logspace(0.5, 3.0, 6, base=3.0, dtype=d))
add("logspace_tt", "aten.logspace.Tensor_Tensor {steps = 5 : i64, base = 2.0}", [S0, E0],
    aten.logspace.Tensor_Tensor(S0, E0, 5, 2.0))
add("logspace_st", "aten.logspace.Scalar_Tensor {start = 1 : i64, steps = 4 : i64}", [E0],
    aten.logspace.Scalar_Tensor(1, E0, 4))
add("logspace_ts", "aten.logspace.Tensor_Scalar {end = 0.5, steps = 4 : i64, dtype = #prim.dtype<f64>}", [S0],
    aten.logspace.Tensor_Scalar(S0, 0.5, 4, dtype=torch.float64))

# unfold_copy
X = torch.randn(3, 8)
add("unfold_copy", "aten.unfold_copy {dimension = 1 : i64, size = 3 : i64, step = 2 : i64}", [X], aten.unfold_copy(X, 1, 3, 2))
add("unfold_copy_dim0", "aten.unfold_copy {dimension = 0 : i64, size = 2 : i64, step = 1 : i64}", [X], aten.unfold_copy(X, 0, 2, 1))
XB = torch.randn(2, 5, 4).to(torch.bfloat16)
add("unfold_copy_bf16", "aten.unfold_copy {dimension = -1 : i64, size = 4 : i64, step = 3 : i64}", [XB], aten.unfold_copy(XB, -1, 4, 3))
X0 = torch.randn(0, 6)
add("unfold_copy_too_large", "aten.unfold_copy {dimension = 1 : i64, size = 9 : i64, step = 1 : i64}", [X], error=True)
add("unfold_copy_size0", "aten.unfold_copy {dimension = 1 : i64, size = 0 : i64, step = 3 : i64}", [X], aten.unfold_copy(X, 1, 0, 3))
add("unfold_copy_empty", "aten.unfold_copy {dimension = 1 : i64, size = 2 : i64, step = 2 : i64}", [X0], aten.unfold_copy(X0, 1, 2, 2))

# _chunk_cat
A, B = torch.randn(2, 5), torch.randn(2, 3)
add("chunk_cat_dim1", "aten._chunk_cat {dim = 1 : i64, num_chunks = 2 : i64}", [[A, B]], aten._chunk_cat([A, B], 1, 2))
B2 = torch.randn(4, 2)
add("chunk_cat_dim0", "aten._chunk_cat {dim = 0 : i64, num_chunks = 3 : i64}", [[A, B2]], aten._chunk_cat([A, B2], 0, 3))
C, D = torch.randn(3, 4, 2).half(), torch.randn(3, 7).half()
add("chunk_cat_f16", "aten._chunk_cat {dim = 1 : i64, num_chunks = 4 : i64}", [[C, D]], aten._chunk_cat([C, D], 1, 4))
add("chunk_cat_neg_dim", "aten._chunk_cat {dim = -1 : i64, num_chunks = 2 : i64}", [[A, B]], aten._chunk_cat([A, B], -1, 2))
add("chunk_cat_empty", "aten._chunk_cat {dim = 1 : i64, num_chunks = 2 : i64}", [[A, torch.randn(2, 0)]], error=True)

# pad_sequence
P = [torch.randn(3, 2), torch.randn(1, 2), torch.randn(4, 2)]
add("pad_sequence", "aten.pad_sequence", [P], aten.pad_sequence(P))
add("pad_sequence_batch_first", "aten.pad_sequence {batch_first = true, padding_value = -1.5}", [P],
    aten.pad_sequence(P, batch_first=True, padding_value=-1.5))
add("pad_sequence_left", "aten.pad_sequence {batch_first = true, padding_side = \"left\"}", [P],
    aten.pad_sequence(P, batch_first=True, padding_side="left"))
Q = [torch.randn(2).bfloat16(), torch.randn(0).bfloat16(), torch.randn(5).bfloat16()]
add("pad_sequence_bf16_empty", "aten.pad_sequence {padding_value = 2.0}", [Q], aten.pad_sequence(Q, padding_value=2.0))

# combinations
V = torch.randn(4)
add("combinations", "aten.combinations", [V], torch.combinations(V))
add("combinations_r3_repl", "aten.combinations {r = 3 : i64, with_replacement = true}", [V], torch.combinations(V, 3, True))
add("combinations_r0", "aten.combinations {r = 0 : i64}", [V], torch.combinations(V, 0))
add("combinations_r5", "aten.combinations {r = 5 : i64}", [V], torch.combinations(V, 5))
add("combinations_empty", "aten.combinations", [torch.randn(0)], torch.combinations(torch.randn(0)))
add("combinations_f16", "aten.combinations {r = 2 : i64, with_replacement = true}", [V.half()], torch.combinations(V.half(), 2, True))
add("combinations_matrix", "aten.combinations", [torch.randn(2, 2)], error=True)

# reshapes
M = torch.randn(2, 6)
add("reshape_alias", "aten._reshape_alias {size = [3, 4], stride = [4, 1]}", [M], aten._reshape_alias(M, [3, 4], [4, 1]))
add("reshape_alias_strided", "aten._reshape_alias {size = [6, 2], stride = [1, 6]}", [M], aten._reshape_alias(M, [6, 2], [1, 6]))
SH = torch.tensor([3, -1])
add("reshape_from_tensor", "aten._reshape_from_tensor", [M, SH], aten._reshape_from_tensor(M, SH))
add("reshape_from_tensor_3d", "aten._reshape_from_tensor", [M.half(), torch.tensor([2, 3, 2])],
    aten._reshape_from_tensor(M.half(), torch.tensor([2, 3, 2])))
for name, t in [("shape_as_tensor", torch.randn(2, 3, 4)), ("shape_as_tensor_empty", torch.randn(2, 0)),
                ("shape_as_tensor_scalar", torch.tensor(1.0))]:
    add(name, "aten._shape_as_tensor", [t], aten._shape_as_tensor(t))

# masked indexing: out-of-range indices where the mask is off
Y = torch.randn(4, 5)
I0 = torch.tensor([0, 3, 7, -9])
I1 = torch.tensor([4, 1, 2, 12])
MK = torch.tensor([True, True, False, False])
add("unsafe_masked_index", "aten._unsafe_masked_index {fill = 0.5}", [Y, MK, [I0, I1]], aten._unsafe_masked_index(Y, MK, [I0, I1], 0.5))
add("unsafe_masked_index_1d", "aten._unsafe_masked_index {fill = -1 : i64}", [Y.bfloat16(), MK[:, None], [I0]],
    aten._unsafe_masked_index(Y.bfloat16(), MK[:, None], [I0], -1))
I2 = torch.tensor([0, 3, 3, -2, 9])
M2 = torch.tensor([True, True, True, True, False])
W = torch.randn(5, 5)
add("unsafe_masked_index_put_accumulate", "aten._unsafe_masked_index_put_accumulate", [Y, M2, [I2], W],
    aten._unsafe_masked_index_put_accumulate(Y, M2, [I2], W))
I3 = torch.tensor([1, 1, 0, -1, 8])
W1 = torch.randn(5)
add("unsafe_masked_index_put_accumulate_2d", "aten._unsafe_masked_index_put_accumulate", [Y, M2, [I2, I3], W1],
    aten._unsafe_masked_index_put_accumulate(Y, M2, [I2, I3], W1))

# copies
T1, T2 = torch.randn(2, 3), torch.randn(4).half()
add("to_cpu", "aten._to_cpu", [[T1, T2]], aten._to_cpu([T1, T2]), list_out=True)
add("to_dense", "aten.to_dense", [T1], aten.to_dense(T1))
add("to_dense_bf16", "aten.to_dense", [T1.bfloat16()], aten.to_dense(T1.bfloat16()))

WT = torch.tensor([[1e6, -7e4, 3.0], [65504.0, -65505.0, 0.25]])
add("saturate_weight_to_fp16", "aten._saturate_weight_to_fp16", [WT], aten._saturate_weight_to_fp16(WT.clone()))

F = [torch.randn(2, 3), torch.randn(4), torch.randn(0, 2), torch.randn(1, 1, 2)]
add("flatten_dense_tensors", "aten.flatten_dense_tensors", [F], aten.flatten_dense_tensors(F))
add("flatten_dense_tensors_one", "aten.flatten_dense_tensors", [[F[0]]], aten.flatten_dense_tensors([F[0]]))
flat = torch.randn(12)
add("unflatten_dense_tensors", "aten.unflatten_dense_tensors", [flat, F], aten.unflatten_dense_tensors(flat, F), list_out=True)
add("unflatten_dense_tensors_bf16", "aten.unflatten_dense_tensors", [flat.bfloat16(), [F[1], F[0]]],
    aten.unflatten_dense_tensors(flat.bfloat16(), [F[1], F[0]]), list_out=True)

CASES.save()
