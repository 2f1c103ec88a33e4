"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `repeat_interleave` with a
tensor of repeats (over a dim or flattened, one repeat for all, zero repeats, `output_size`),
`embedding_bag` (sum, mean and max bags, per-sample weights, `include_last_offset`, a padding
index) and `max_unpool2d`/`max_unpool3d` (the indices of a max pool, batched and not), and
the calls PyTorch refuses, written through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


RI = "aten.repeat_interleave.self_Tensor"
X = torch.randn(3, 4)
R3 = torch.tensor([2, 0, 3])
add("ri_dim0", RI + " {dim = 0 : i64}", [X, R3], lambda: torch.repeat_interleave(X, R3, dim=0))
R4 = torch.tensor([1, 2, 0, 1], dtype=torch.int32)
add("ri_dim1_i32", RI + " {dim = -1 : i64}", [X, R4], lambda: torch.repeat_interleave(X, R4, dim=-1))
R12 = torch.randint(0, 3, (12,))
add("ri_flat", RI, [X, R12], lambda: torch.repeat_interleave(X, R12))
add("ri_single", RI + " {dim = 1 : i64}", [X, torch.tensor([3])], lambda: torch.repeat_interleave(X, torch.tensor([3]), dim=1))
add("ri_scalar_rep", RI + " {dim = 0 : i64}", [X, torch.tensor(2)], lambda: torch.repeat_interleave(X, torch.tensor(2), dim=0))
add("ri_output_size", RI + " {dim = 0 : i64, output_size = 5 : i64}", [X, R3], lambda: torch.repeat_interleave(X, R3, dim=0, output_size=5))
add("ri_int_input", RI + " {dim = 0 : i64}", [torch.arange(6).reshape(3, 2), R3], lambda: torch.repeat_interleave(torch.arange(6).reshape(3, 2), R3, dim=0))
add("ri_bf16", RI + " {dim = 0 : i64}", [X.bfloat16(), R3], lambda: torch.repeat_interleave(X.bfloat16(), R3, dim=0))
add("ri_all_zero", RI + " {dim = 0 : i64}", [X, torch.zeros(3, dtype=torch.int64)], lambda: torch.repeat_interleave(X, torch.zeros(3, dtype=torch.int64), dim=0))
add("ri_empty", RI + " {dim = 1 : i64}", [torch.randn(0, 2), torch.tensor([1, 2])], lambda: torch.repeat_interleave(torch.randn(0, 2), torch.tensor([1, 2]), dim=1))
add("ri_wrong_len", RI + " {dim = 0 : i64}", [X, R4], lambda: torch.repeat_interleave(X, R4, dim=0))
add("ri_negative", RI + " {dim = 0 : i64}", [X, torch.tensor([1, -1, 2])], lambda: torch.repeat_interleave(X, torch.tensor([1, -1, 2]), dim=0))
add("ri_float_repeats", RI + " {dim = 0 : i64}", [X, R3.float()], lambda: torch.repeat_interleave(X, R3.float(), dim=0))

W = torch.randn(10, 3)
I = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
O = torch.tensor([0, 3, 3, 6])
PSW = torch.rand(8)
EB = "aten.embedding_bag"
for mode in range(3):
    add(f"eb_mode{mode}", f"{EB} {{mode = {mode} : i64}}", [W, I, O], lambda: torch.ops.aten.embedding_bag(W, I, O, mode=mode))
    add(f"eb_last_mode{mode}", f"{EB} {{mode = {mode} : i64, include_last_offset = true}}", [W, I, torch.tensor([0, 3, 6, 8])],
        lambda: torch.ops.aten.embedding_bag(W, I, torch.tensor([0, 3, 6, 8]), mode=mode, include_last_offset=True))
    add(f"eb_pad_mode{mode}", f"{EB}.padding_idx {{scale_grad_by_freq = false, mode = {mode} : i64, sparse = false, per_sample_weights = #prim.none, include_last_offset = false, padding_idx = 4 : i64}}",
        [W, I, O], lambda: torch.ops.aten.embedding_bag.padding_idx(W, I, O, False, mode, False, None, False, 4))
PSWA = "scale_grad_by_freq = false, sparse = false"
add("eb_psw", f"{EB} {{{PSWA}, mode = 0 : i64}}", [W, I, O, PSW], lambda: torch.ops.aten.embedding_bag(W, I, O, mode=0, per_sample_weights=PSW))
add("eb_pad_none", f"{EB}.padding_idx {{scale_grad_by_freq = false, mode = 1 : i64, sparse = false, per_sample_weights = #prim.none, include_last_offset = false, padding_idx = #prim.none}}",
    [W, I, O], lambda: torch.ops.aten.embedding_bag.padding_idx(W, I, O, False, 1, False, None, False, None))
add("eb_psw_mean", f"{EB} {{{PSWA}, mode = 1 : i64}}", [W, I, O, PSW], lambda: torch.ops.aten.embedding_bag(W, I, O, mode=1, per_sample_weights=PSW))
add("eb_f64", f"{EB} {{mode = 1 : i64}}", [W.double(), I, O], lambda: torch.ops.aten.embedding_bag(W.double(), I, O, mode=1))

P = torch.randn(2, 3, 6, 8)
pv, pi = torch.nn.functional.max_pool2d(P, 2, return_indices=True)
add("unpool2d", "aten.max_unpool2d {output_size = [6, 8]}", [pv, pi], lambda: torch.ops.aten.max_unpool2d(pv, pi, [6, 8]))
add("unpool2d_larger", "aten.max_unpool2d {output_size = [7, 9]}", [pv, pi], lambda: torch.ops.aten.max_unpool2d(pv, pi, [7, 9]))
add("unpool2d_unbatched", "aten.max_unpool2d {output_size = [6, 8]}", [pv[0], pi[0]], lambda: torch.ops.aten.max_unpool2d(pv[0], pi[0], [6, 8]))
add("unpool2d_bf16", "aten.max_unpool2d {output_size = [6, 8]}", [pv.bfloat16(), pi], lambda: torch.ops.aten.max_unpool2d(pv.bfloat16(), pi, [6, 8]))
add("unpool2d_empty_batch", "aten.max_unpool2d {output_size = [6, 8]}", [pv[:0], pi[:0]], lambda: torch.ops.aten.max_unpool2d(pv[:0], pi[:0], [6, 8]))
add("unpool2d_int32_idx", "aten.max_unpool2d {output_size = [6, 8]}", [pv, pi.int()], lambda: torch.ops.aten.max_unpool2d(pv, pi.int(), [6, 8]))
add("unpool2d_bad_index", "aten.max_unpool2d {output_size = [2, 2]}", [pv, pi], lambda: torch.ops.aten.max_unpool2d(pv, pi, [2, 2]))
Q = torch.randn(1, 2, 4, 4, 6)
qv, qi = torch.nn.functional.max_pool3d(Q, 2, return_indices=True)
add("unpool3d", "aten.max_unpool3d {output_size = [4, 4, 6], stride = [2, 2, 2], padding = [0, 0, 0]}", [qv, qi],
    lambda: torch.ops.aten.max_unpool3d(qv, qi, [4, 4, 6], [2, 2, 2], [0, 0, 0]))
add("unpool3d_unbatched_f64", "aten.max_unpool3d {output_size = [4, 4, 6], stride = [2, 2, 2], padding = [0, 0, 0]}", [qv[0].double(), qi[0]],
    lambda: torch.ops.aten.max_unpool3d(qv[0].double(), qi[0], [4, 4, 6], [2, 2, 2], [0, 0, 0]))
add("unpool3d_bad_stride", "aten.max_unpool3d {output_size = [4, 4, 6], stride = [0, 2, 2], padding = [0, 0, 0]}", [qv, qi],
    lambda: torch.ops.aten.max_unpool3d(qv, qi, [4, 4, 6], [0, 2, 2], [0, 0, 0]))

CASES.save()
