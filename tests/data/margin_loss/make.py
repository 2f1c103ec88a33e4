"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `multilabel_margin_loss`
and `multilabel_margin_loss_forward` (target lists ending at their first -1, full lists, empty
lists, repeated classes, 1-d and batched inputs, every reduction, f64, an empty batch, and the
calls PyTorch refuses), written through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


X = torch.randn(4, 5)
T = torch.tensor([[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [-1, 2, 3, 0, 0], [1, 1, 4, -1, 3]])
for red in range(3):
    add(f"loss_{red}", f"aten.multilabel_margin_loss {{reduction = {red} : i64}}", [X, T],
        lambda: torch.ops.aten.multilabel_margin_loss(X, T, red))
    add(f"forward_{red}", f"aten.multilabel_margin_loss_forward {{reduction = {red} : i64}}", [X, T],
        lambda: torch.ops.aten.multilabel_margin_loss_forward(X, T, red))
    add(f"vector_{red}", f"aten.multilabel_margin_loss_forward {{reduction = {red} : i64}}", [X[0], T[0]],
        lambda: torch.ops.aten.multilabel_margin_loss_forward(X[0], T[0], red))
add("f64", "aten.multilabel_margin_loss", [X.double(), T], lambda: torch.ops.aten.multilabel_margin_loss(X.double(), T))
add("empty_batch_sum", "aten.multilabel_margin_loss {reduction = 2 : i64}", [X[:0], T[:0]], lambda: torch.ops.aten.multilabel_margin_loss(X[:0], T[:0], 2))
add("empty_batch_none", "aten.multilabel_margin_loss_forward {reduction = 0 : i64}", [X[:0], T[:0]], lambda: torch.ops.aten.multilabel_margin_loss_forward(X[:0], T[:0], 0))
add("int_input", "aten.multilabel_margin_loss", [T, T], lambda: torch.ops.aten.multilabel_margin_loss(T, T))
add("shape_mismatch", "aten.multilabel_margin_loss", [X, T[:, :3]], lambda: torch.ops.aten.multilabel_margin_loss(X, T[:, :3]))

CASES.save()
