"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the convolution spellings
`_convolution.deprecated`, `_convolution_mode` ('same' with odd and even kernels, dilation,
groups, 1-d to 3-d; 'valid'; strides), `thnn_conv2d` and `slow_conv3d`, and the calls PyTorch
refuses, written through ../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


def mode(name, x, w, b, stride, pad, dil, groups):
    op = f"aten._convolution_mode {{stride = {stride}, padding = {json.dumps(pad)}, dilation = {dil}, groups = {groups} : i64}}"
    gs = [x, w] + ([b] if b is not None else [])
    if b is None:
        op = op.replace("{stride", "{bias = #prim.none, stride")
    add(name, op, gs, lambda: torch.ops.aten._convolution_mode(x, w, b, stride, pad, dil, groups))


X2 = torch.randn(2, 4, 7, 6)
W3 = torch.randn(6, 4, 3, 3)
W4 = torch.randn(6, 2, 4, 2)
B = torch.randn(6)
mode("same_odd", X2, W3, B, [1, 1], "same", [1, 1], 1)
mode("same_even_groups", X2, W4, B, [1, 1], "same", [1, 1], 2)
mode("same_dilated", X2, W4, None, [1], "same", [2, 3], 2)
mode("valid", X2, W3, B, [2, 1], "valid", [1, 1], 1)
mode("same_strided", X2, W3, B, [2, 2], "same", [1, 1], 1)
mode("bad_string", X2, W3, B, [1, 1], "full", [1, 1], 1)
X1 = torch.randn(2, 3, 9)
mode("same_1d_even", X1, torch.randn(5, 3, 4), torch.randn(5), [1], "same", [1], 1)
X3 = torch.randn(1, 2, 4, 5, 3)
mode("same_3d", X3, torch.randn(3, 2, 2, 3, 2), torch.randn(3), [1, 1, 1], "same", [1, 1, 1], 1)
mode("same_f64", X2.double(), W4.double(), B.double(), [1, 1], "same", [1, 1], 2)

DEP = ("aten._convolution.deprecated {stride = [2, 1], padding = [1, 0], dilation = [1, 2], transposed = false, "
       "output_padding = [0, 0], groups = 1 : i64, benchmark = false, deterministic = false, cudnn_enabled = true}")
add("deprecated", DEP, [X2, W3, B], lambda: torch.ops.aten._convolution.deprecated(X2, W3, B, [2, 1], [1, 0], [1, 2], False, [0, 0], 1, False, False, True))
TDEP = ("aten._convolution.deprecated {stride = [2, 2], padding = [1, 1], dilation = [1, 1], transposed = true, "
        "output_padding = [1, 0], groups = 1 : i64, benchmark = false, deterministic = false, cudnn_enabled = true}")
WT = torch.randn(4, 3, 3, 3)
BT = torch.randn(3)
add("deprecated_transposed", TDEP, [X2, WT, BT],
    lambda: torch.ops.aten._convolution.deprecated(X2, WT, BT, [2, 2], [1, 1], [1, 1], True, [1, 0], 1, False, False, True))
add("thnn_conv2d", "aten.thnn_conv2d {kernel_size = [3, 3], stride = [2, 1], padding = [1, 2]}", [X2, W3, B],
    lambda: torch.ops.aten.thnn_conv2d(X2, W3, [3, 3], B, [2, 1], [1, 2]))
add("thnn_conv2d_defaults", "aten.thnn_conv2d {kernel_size = [3, 3]}", [X2, W3], lambda: torch.ops.aten.thnn_conv2d(X2, W3, [3, 3]))
W33 = torch.randn(3, 2, 2, 3, 2)
SB = torch.randn(3)
add("slow_conv3d", "aten.slow_conv3d {kernel_size = [2, 3, 2], stride = [1, 2, 1], padding = [1, 0, 1]}", [X3, W33, SB],
    lambda: torch.ops.aten.slow_conv3d(X3, W33, [2, 3, 2], SB, [1, 2, 1], [1, 0, 1]))

CASES.save()
