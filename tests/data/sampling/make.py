"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `grid_sampler` (2-d and 3-d
inputs, bilinear/nearest/bicubic, zeros/border/reflection padding, align_corners, points
outside the input), `affine_grid_generator` (2-d and 3-d, align_corners) and the attention
and weight-norm ops that return intermediates (`_scaled_dot_product_attention_math`,
`_scaled_dot_product_flash_attention_for_cpu`, `_weight_norm_interface`), written through
../torch_cases.py. Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()


add = CASES.record


def flag(b):
    return "true" if b else "false"


X2 = torch.randn(2, 3, 5, 6)
G2 = torch.rand(2, 4, 7, 2) * 2.6 - 1.3
X3 = torch.randn(2, 2, 3, 4, 5)
G3 = torch.rand(2, 3, 2, 4, 3) * 2.6 - 1.3
for mode, mname in enumerate(["bilinear", "nearest", "bicubic"]):
    for pad, pname in enumerate(["zeros", "border", "reflection"]):
        for align in [False, True]:
            attrs = f"{{interpolation_mode = {mode} : i64, padding_mode = {pad} : i64, align_corners = {flag(align)}}}"
            add(f"gs2d_{mname}_{pname}_{align}", "aten.grid_sampler " + attrs, [X2, G2],
                lambda: torch.ops.aten.grid_sampler(X2, G2, mode, pad, align))
            # PyTorch's 3-d sampler computes nothing for bicubic (F.grid_sample refuses it).
            if mode != 2:
                add(f"gs3d_{mname}_{pname}_{align}", "aten.grid_sampler " + attrs, [X3, G3],
                    lambda: torch.ops.aten.grid_sampler(X3, G3, mode, pad, align))
add("gs3d_f64", "aten.grid_sampler {interpolation_mode = 0 : i64, padding_mode = 0 : i64, align_corners = false}",
    [X3.double(), G3.double()], lambda: torch.ops.aten.grid_sampler(X3.double(), G3.double(), 0, 0, False))
add("gs3d_empty_grid", "aten.grid_sampler {interpolation_mode = 0 : i64, padding_mode = 1 : i64, align_corners = false}",
    [X3, G3[:, :0]], lambda: torch.ops.aten.grid_sampler(X3, G3[:, :0], 0, 1, False))

T2 = torch.randn(3, 2, 3)
T3 = torch.randn(2, 3, 4)
for align in [False, True]:
    add(f"affine2d_{align}", f"aten.affine_grid_generator {{size = [3, 2, 4, 5], align_corners = {flag(align)}}}", [T2],
        lambda: torch.ops.aten.affine_grid_generator(T2, [3, 2, 4, 5], align))
    add(f"affine3d_{align}", f"aten.affine_grid_generator {{size = [2, 1, 3, 4, 2], align_corners = {flag(align)}}}", [T3],
        lambda: torch.ops.aten.affine_grid_generator(T3, [2, 1, 3, 4, 2], align))
    add(f"affine2d_one_{align}", f"aten.affine_grid_generator {{size = [3, 2, 1, 4], align_corners = {flag(align)}}}", [T2],
        lambda: torch.ops.aten.affine_grid_generator(T2, [3, 2, 1, 4], align))
add("affine2d_f64", "aten.affine_grid_generator {size = [3, 1, 4, 5], align_corners = false}", [T2.double()],
    lambda: torch.ops.aten.affine_grid_generator(T2.double(), [3, 1, 4, 5], False))

Q = torch.randn(2, 4, 5, 8)
K = torch.randn(2, 4, 6, 8)
V = torch.randn(2, 4, 6, 3)
M = torch.randn(5, 6)
B = torch.rand(5, 6) > 0.2
B[:, 0] = True
MATH = "aten._scaled_dot_product_attention_math"
add("sdpa_math", MATH, [Q, K, V], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, K, V))
add("sdpa_math_mask", MATH, [Q, K, V, M], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, K, V, M))
add("sdpa_math_bool_mask", MATH + " {scale = 0.25 : f64}", [Q, K, V, B], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, K, V, B, scale=0.25))
add("sdpa_math_causal", MATH + " {attn_mask = #prim.none, dropout_p = 0.0 : f64, is_causal = true}", [Q, K, V],
    lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, K, V, is_causal=True))
KG = torch.randn(2, 2, 6, 8)
VG = torch.randn(2, 2, 6, 3)
add("sdpa_math_gqa", MATH + " {enable_gqa = true}", [Q, KG, VG], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q, KG, VG, enable_gqa=True))
add("sdpa_math_f64", MATH, [Q.double(), K.double(), V.double()], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q.double(), K.double(), V.double()))
add("sdpa_math_empty", MATH, [Q[:, :, :0], K, V], lambda: torch.ops.aten._scaled_dot_product_attention_math(Q[:, :, :0], K, V))
FLASH = "aten._scaled_dot_product_flash_attention_for_cpu"
add("flash_cpu_head_sizes", FLASH, [Q, K, V], lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V))
V = torch.randn(2, 4, 6, 8)
add("flash_cpu", FLASH, [Q, K, V], lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V))
add("flash_cpu_causal", FLASH + " {is_causal = true, scale = 0.5 : f64}", [Q, K, V],
    lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V, is_causal=True, scale=0.5))
add("flash_cpu_mask", FLASH + " {dropout_p = 0.0 : f64, is_causal = false}", [Q, K, V, M], lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V, attn_mask=M))
add("flash_cpu_bool_mask", FLASH + " {dropout_p = 0.0 : f64, is_causal = false}", [Q, K, V, B],
    lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q, K, V, attn_mask=B))
add("flash_cpu_f64", FLASH, [Q.double(), K.double(), V.double()], lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(Q.double(), K.double(), V.double()))

WV = torch.randn(4, 3, 2)
for dim in [0, 1, 2, -1]:
    shape = [1] * 3 if dim == -1 else [WV.shape[d] if d == dim else 1 for d in range(3)]
    WG = torch.rand(shape) + 0.5
    add(f"weight_norm_{dim}", f"aten._weight_norm_interface {{dim = {dim} : i64}}", [WV, WG],
        lambda: torch.ops.aten._weight_norm_interface(WV, WG, dim))
WG = (torch.rand(4, 1, 1) + 0.5).double()
add("weight_norm_f64", "aten._weight_norm_interface {dim = 0 : i64}", [WV.double(), WG],
    lambda: torch.ops.aten._weight_norm_interface(WV.double(), WG, 0))

CASES.save()
