"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `ctc_loss` (lengths as
int lists and as tensors, padded and concatenated targets, unbatched input, repeated labels,
empty targets, every reduction, zero_infinity, f64, and the calls PyTorch refuses), written
through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


T, N, C = 8, 3, 5
LP = torch.randn(T, N, C).log_softmax(-1)
TG = torch.tensor([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]])
IL = [8, 6, 7]
TL = [4, 2, 0]
ILT, TLT = torch.tensor(IL), torch.tensor(TL)
CAT = torch.cat([TG[b, : TL[b]] for b in range(N)])
for red in range(3):
    add(f"intlist_{red}", f"aten.ctc_loss.IntList {{input_lengths = {IL}, target_lengths = {TL}, reduction = {red} : i64}}", [LP, TG],
        lambda: torch.ops.aten.ctc_loss.IntList(LP, TG, IL, TL, 0, red))
    add(f"tensor_{red}", f"aten.ctc_loss.Tensor {{reduction = {red} : i64}}", [LP, CAT, ILT, TLT],
        lambda: torch.ops.aten.ctc_loss.Tensor(LP, CAT, ILT, TLT, 0, red))
add("blank_last", "aten.ctc_loss.IntList {input_lengths = [8, 8, 8], target_lengths = [3, 3, 2], blank = 4 : i64, reduction = 2 : i64}",
    [LP, TG[:, :3] % 4], lambda: torch.ops.aten.ctc_loss.IntList(LP, TG[:, :3] % 4, [8, 8, 8], [3, 3, 2], 4, 2))
# Four labels with a repeat need five steps; three steps make the loss infinite.
add("impossible", "aten.ctc_loss.IntList {input_lengths = [3, 8, 8], target_lengths = [4, 2, 1], reduction = 0 : i64}", [LP, TG],
    lambda: torch.ops.aten.ctc_loss.IntList(LP, TG, [3, 8, 8], [4, 2, 1], 0, 0))
add("zero_infinity", "aten.ctc_loss.IntList {input_lengths = [3, 8, 8], target_lengths = [4, 2, 1], reduction = 1 : i64, zero_infinity = true}", [LP, TG],
    lambda: torch.ops.aten.ctc_loss.IntList(LP, TG, [3, 8, 8], [4, 2, 1], 0, 1, True))
add("f64", f"aten.ctc_loss.IntList {{input_lengths = {IL}, target_lengths = {TL}}}", [LP.double(), TG],
    lambda: torch.ops.aten.ctc_loss.IntList(LP.double(), TG, IL, TL))
U = LP[:, 0]
add("unbatched", "aten.ctc_loss.IntList {input_lengths = [7], target_lengths = [3], reduction = 0 : i64}", [U, TG[0, :3]],
    lambda: torch.ops.aten.ctc_loss.IntList(U, TG[0, :3], [7], [3], 0, 0))
add("input_too_long", "aten.ctc_loss.IntList {input_lengths = [9, 8, 8], target_lengths = [1, 1, 1]}", [LP, TG],
    lambda: torch.ops.aten.ctc_loss.IntList(LP, TG, [9, 8, 8], [1, 1, 1]))
add("int_log_probs", "aten.ctc_loss.IntList {input_lengths = [8, 8, 8], target_lengths = [1, 1, 1]}", [TG.reshape(4, 3, 1), TG],
    lambda: torch.ops.aten.ctc_loss.IntList(TG.reshape(4, 3, 1), TG, [8, 8, 8], [1, 1, 1]))

CASES.save()
