"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the antialiased resizes
`_upsample_bilinear2d_aa`, `_upsample_bicubic2d_aa` and `_upsample_lanczos2d_aa` (what
torchvision's `resize(antialias=True)` exports) in their output-size and `.vec` forms:
downscaling and upscaling, non-square and one-sided resizes, align_corners both ways,
explicit scales, `f32`, `f64` and `uint8` (PyTorch's fixed-point path), an empty batch, and
the calls PyTorch refuses, written through ../torch_cases.py. Run with PyTorch 2.15:
python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.record
aten = torch.ops.aten


def flag(b):
    return "true" if b else "false"


def opt(v):
    return "#prim.none" if v is None else f"{v!r} : f64"


def ints(v):
    return "#prim.none" if v is None else "[" + ", ".join(str(i) for i in v) + "]"


def floats(v):
    return "#prim.none" if v is None else "[" + ", ".join(f"{f!r} : f64" for f in v) + "]"


X = torch.randn(2, 3, 13, 11)
XU8 = (torch.rand(2, 3, 13, 11) * 256).to(torch.uint8)
XU8_5 = (torch.rand(1, 5, 9, 16) * 256).to(torch.uint8)
MODES = [("bilinear", aten._upsample_bilinear2d_aa), ("bicubic", aten._upsample_bicubic2d_aa), ("lanczos", aten._upsample_lanczos2d_aa)]
SIZES = [("down", [5, 4]), ("up", [20, 17]), ("mixed", [6, 23]), ("width_only", [13, 4]), ("to_one", [1, 1])]

for mname, f in MODES:
    name = f"aten._upsample_{mname}2d_aa"
    for sname, size in SIZES:
        for align in [False, True]:
            attrs = f"{{output_size = {ints(size)}, align_corners = {flag(align)}}}"
            add(f"{mname}_{sname}_{align}", f"{name} {attrs}", [X], lambda: f(X, size, align, None, None))
    add(f"{mname}_f64", f"{name} {{output_size = [4, 7], align_corners = false}}", [X.double()],
        lambda: f(X.double(), [4, 7], False, None, None))
    for sname, size in [("down", [5, 4]), ("up", [20, 17]), ("mixed", [6, 23])]:
        for align in [False, True]:
            attrs = f"{{output_size = {ints(size)}, align_corners = {flag(align)}}}"
            add(f"{mname}_u8_{sname}_{align}", f"{name} {attrs}", [XU8], lambda: f(XU8, size, align, None, None))
    add(f"{mname}_u8_5ch", f"{name} {{output_size = [4, 6], align_corners = false}}", [XU8_5],
        lambda: f(XU8_5, [4, 6], False, None, None))
    add(f"{mname}_scales", f"{name} {{output_size = [5, 6], align_corners = false, scales_h = {opt(0.4)}, scales_w = {opt(0.6)}}}", [X],
        lambda: f(X, [5, 6], False, 0.4, 0.6))
    add(f"{mname}_same_size", f"{name} {{output_size = [13, 11], align_corners = false, scales_h = {opt(0.5)}, scales_w = {opt(2.0)}}}", [X],
        lambda: f(X, [13, 11], False, 0.5, 2.0))
    add(f"{mname}_empty_batch", f"{name} {{output_size = [4, 3], align_corners = false}}", [X[:0]],
        lambda: f(X[:0], [4, 3], False, None, None))
    add(f"{mname}_zero_channels", f"{name} {{output_size = [4, 3], align_corners = false}}", [X[:, :0]],
        lambda: f(X[:, :0], [4, 3], False, None, None))
    add(f"{mname}_zero_output", f"{name} {{output_size = [0, 3], align_corners = false}}", [X],
        lambda: f(X, [0, 3], False, None, None))
    add(f"{mname}_bf16", f"{name} {{output_size = [4, 3], align_corners = false}}", [X.bfloat16()],
        lambda: f(X.bfloat16(), [4, 3], False, None, None))
    add(f"{mname}_3d_input", f"{name} {{output_size = [4, 3], align_corners = false}}", [X[0]],
        lambda: f(X[0], [4, 3], False, None, None))
    fv = getattr(aten, f"_upsample_{mname}2d_aa").vec
    for sname, factors in [("half", [0.5, 0.5]), ("odd", [0.3, 1.7]), ("up", [2.0, 1.5])]:
        for align in [False, True]:
            attrs = f"{{output_size = #prim.none, align_corners = {flag(align)}, scale_factors = {floats(factors)}}}"
            add(f"{mname}_vec_{sname}_{align}", f"{name}.vec {attrs}", [X], lambda: fv(X, None, align, factors))
    add(f"{mname}_vec_size", f"{name}.vec {{output_size = [7, 3], align_corners = false, scale_factors = #prim.none}}", [XU8],
        lambda: fv(XU8, [7, 3], False, None))
    add(f"{mname}_vec_both", f"{name}.vec {{output_size = [7, 3], align_corners = false, scale_factors = [0.5 : f64, 0.5 : f64]}}", [X],
        lambda: fv(X, [7, 3], False, [0.5, 0.5]))

CASES.save()
