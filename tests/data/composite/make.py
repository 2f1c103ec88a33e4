"""Writes cases.json and io.safetensors: PyTorch 2.15's results for composite ops that the
project runs only through their decompositions (no kernel of their own). Each case is one op
applied to random inputs; tests/composite_ops.rs runs the same op and compares.
Run with PyTorch 2.15: python make.py"""

import json

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(0)
A = torch.randn(3, 4)
B = torch.randn(3, 4)
P = torch.rand(3, 4) * 0.9 + 0.05  # probabilities
T = (torch.rand(3, 4) > 0.5).float()  # targets in {0, 1}
V = torch.randn(4)
W = torch.randn(5)
X4 = torch.randn(1, 8, 2, 3)
PR = torch.rand(4) * 0.5  # prelu weights

# (name, ir op with attributes, input tensors, reference)
CASES = [
    ("celu", 'aten.celu {alpha = 1.5 : f64}', [A], lambda a: F.celu(a, 1.5)),
    ("selu", "aten.selu", [A], F.selu),
    ("glu", "aten.glu {dim = -1 : i64}", [A], lambda a: F.glu(a, -1)),
    ("hardshrink", "aten.hardshrink {lambd = 0.5 : f64}", [A], lambda a: F.hardshrink(a, 0.5)),
    ("softshrink", "aten.softshrink {lambd = 0.5 : f64}", [A], lambda a: F.softshrink(a, 0.5)),
    ("threshold", "aten.threshold {threshold = 0.1 : f64, value = -2.0 : f64}", [A], lambda a: F.threshold(a, 0.1, -2.0)),
    ("log_sigmoid", "aten.log_sigmoid", [A], F.logsigmoid),
    ("logaddexp", "aten.logaddexp", [A, B], torch.logaddexp),
    ("logaddexp2", "aten.logaddexp2", [A, B], torch.logaddexp2),
    ("logit", "aten.logit {eps = 0.01 : f64}", [P], lambda p: torch.logit(p, 0.01)),
    ("heaviside", "aten.heaviside", [A, B], torch.heaviside),
    ("outer", "aten.outer", [V, W], torch.outer),
    ("addr", "aten.addr {beta = 0.5 : f64, alpha = 2.0 : f64}", [torch.randn(4, 5), V, W], lambda m, v, w: torch.addr(m, v, w, beta=0.5, alpha=2.0)),
    ("trace", "aten.trace", [torch.randn(4, 4)], torch.trace),
    ("mse_loss", "aten.mse_loss {reduction = 1 : i64}", [A, B], F.mse_loss),
    ("l1_loss_sum", "aten.l1_loss {reduction = 2 : i64}", [A, B], lambda a, b: F.l1_loss(a, b, reduction="sum")),
    ("smooth_l1_loss", "aten.smooth_l1_loss {reduction = 0 : i64, beta = 0.5 : f64}", [A, B], lambda a, b: F.smooth_l1_loss(a, b, reduction="none", beta=0.5)),
    ("huber_loss", "aten.huber_loss {reduction = 1 : i64, delta = 0.7 : f64}", [A, B], lambda a, b: F.huber_loss(a, b, delta=0.7)),
    ("binary_cross_entropy", "aten.binary_cross_entropy {reduction = 1 : i64}", [P, T], F.binary_cross_entropy),
    ("binary_cross_entropy_with_logits", "aten.binary_cross_entropy_with_logits {reduction = 1 : i64}", [A, T], F.binary_cross_entropy_with_logits),
    ("kl_div", "aten.kl_div {reduction = 1 : i64, log_target = false}", [torch.log(P), P.flip(0)], lambda x, y: F.kl_div(x, y, reduction="mean")),
    ("xlogy", "aten.xlogy.Tensor", [T, P], torch.xlogy),
    ("cosine_similarity", "aten.cosine_similarity {dim = 1 : i64, eps = 1.0e-8 : f64}", [A, B], lambda a, b: F.cosine_similarity(a, b, 1)),
    ("pairwise_distance", "aten.pairwise_distance {p = 2.0 : f64, eps = 1.0e-6 : f64, keepdim = false}", [A, B], F.pairwise_distance),
    ("nansum", "aten.nansum", [torch.where(A > 1, torch.nan, A)], torch.nansum),
    ("isclose", "aten.isclose {rtol = 0.1 : f64, atol = 0.1 : f64, equal_nan = false}", [A, A + B * 0.1], lambda a, b: torch.isclose(a, b, 0.1, 0.1)),
    ("fliplr", "aten.fliplr", [A], torch.fliplr),
    ("tile", "aten.tile {dims = [2, 1, 2]}", [A], lambda a: torch.tile(a, (2, 1, 2))),
    ("prelu", "aten.prelu", [torch.randn(2, 4, 3), PR], F.prelu),
    ("float_power", "aten.float_power.Tensor_Scalar {exponent = 2.5 : f64}", [P], lambda p: torch.float_power(p, 2.5)),
    ("hann_window", "aten.hann_window {window_length = 8 : i64}", [], lambda: torch.hann_window(8)),
    ("diff", "aten.diff {n = 2 : i64, dim = -1 : i64}", [A], lambda a: torch.diff(a, n=2, dim=-1)),
    ("channel_shuffle", "aten.channel_shuffle {groups = 2 : i64}", [X4], lambda x: F.channel_shuffle(x, 2)),
    ("pixel_shuffle", "aten.pixel_shuffle {upscale_factor = 2 : i64}", [X4], lambda x: F.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", "aten.pixel_unshuffle {downscale_factor = 2 : i64}", [torch.randn(1, 2, 4, 6)], lambda x: F.pixel_unshuffle(x, 2)),
    ("arctan2", "aten.arctan2", [A, B], torch.arctan2),
    ("clip", "aten.clip {min = -0.5 : f64, max = 0.5 : f64}", [A], lambda a: torch.clip(a, -0.5, 0.5)),
]

tensors = {}
cases = []
for name, op, inputs, ref in CASES:
    for i, t in enumerate(inputs):
        tensors[f"{name}.in.{i}"] = t.clone().contiguous()
    out = ref(*inputs)
    tensors[f"{name}.out"] = out.clone().contiguous()
    cases.append({"name": name, "op": op, "inputs": len(inputs)})

save_file(tensors, "io.safetensors")
with open("cases.json", "w") as f:
    json.dump(cases, f, indent=1)
print(len(cases), "cases")
