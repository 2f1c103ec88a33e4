"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `_sobol_engine_draw` (the
Gray-code Sobol step `torch.quasirandom.SobolEngine` exports, with its direction numbers and
state as inputs: fresh and scrambled engines, continuing after earlier draws, `f32` and `f64`
points, no points) and `_rowwise_prune` (the pruned rows of an embedding table and the
compressed-index mapping, `int32` and `int64` mappings, several table dtypes, all or no rows
kept), and the calls PyTorch refuses, written through ../torch_cases.py.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.record
aten = torch.ops.aten

SD = "aten._sobol_engine_draw"


def draw(name, engine, n, num_generated, dtype=None, dname=None):
    state, quasi, dim = engine.sobolstate, engine.quasi.clone(), engine.dimension
    dt = "#prim.none" if dname is None else f"#prim.dtype<{dname}>"
    attrs = f" {{n = {n} : i64, dimension = {dim} : i64, num_generated = {num_generated} : i64, dtype = {dt}}}"
    add(name, SD + attrs, [quasi, state], lambda: aten._sobol_engine_draw(quasi, n, state, dim, num_generated, dtype))


E5 = torch.quasirandom.SobolEngine(5)
draw("sobol_fresh", E5, 16, 0)
draw("sobol_f64", E5, 9, 0, torch.float64, "f64")
draw("sobol_f32_named", E5, 3, 0, torch.float32, "f32")
E5.draw(37)
draw("sobol_continued", E5, 20, E5.num_generated)
E40 = torch.quasirandom.SobolEngine(40, scramble=True, seed=3)
E40.draw(5)
draw("sobol_scrambled", E40, 33, E40.num_generated, torch.float64, "f64")
draw("sobol_none", E5, 0, E5.num_generated)
draw("sobol_bf16", E5, 4, 0, torch.bfloat16, "bf16")
Q5, S5 = E5.quasi.clone(), E5.sobolstate
add("sobol_int32_state", SD + " {n = 4 : i64, dimension = 5 : i64, num_generated = 0 : i64, dtype = #prim.none}", [Q5, S5.int()],
    lambda: aten._sobol_engine_draw(Q5, 4, S5.int(), 5, 0, None))

RP = "aten._rowwise_prune"
W = torch.randn(6, 4)
M = torch.tensor([True, False, True, True, False, True])
add("prune_i64", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, M], lambda: aten._rowwise_prune(W, M, torch.int64))
add("prune_i32", RP + " {compressed_indices_dtype = #prim.dtype<i32>}", [W, M], lambda: aten._rowwise_prune(W, M, torch.int32))
add("prune_f64", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W.double(), M], lambda: aten._rowwise_prune(W.double(), M, torch.int64))
add("prune_bf16", RP + " {compressed_indices_dtype = #prim.dtype<i32>}", [W.bfloat16(), M], lambda: aten._rowwise_prune(W.bfloat16(), M, torch.int32))
add("prune_f16", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W.half(), M], lambda: aten._rowwise_prune(W.half(), M, torch.int64))
WI = torch.randint(-5, 5, (6, 3))
add("prune_int_table", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [WI, M], lambda: aten._rowwise_prune(WI, M, torch.int64))
add("prune_all", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, torch.ones(6, dtype=torch.bool)],
    lambda: aten._rowwise_prune(W, torch.ones(6, dtype=torch.bool), torch.int64))
add("prune_none", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, torch.zeros(6, dtype=torch.bool)],
    lambda: aten._rowwise_prune(W, torch.zeros(6, dtype=torch.bool), torch.int64))
add("prune_2d_mask", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, M.reshape(2, 3)],
    lambda: aten._rowwise_prune(W, M.reshape(2, 3), torch.int64))
add("prune_empty_cols", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W[:, :0], M], lambda: aten._rowwise_prune(W[:, :0], M, torch.int64))
add("prune_3d_table", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W.reshape(6, 2, 2), M],
    lambda: aten._rowwise_prune(W.reshape(6, 2, 2), M, torch.int64))
add("prune_mask_len", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, M[:5]], lambda: aten._rowwise_prune(W, M[:5], torch.int64))
add("prune_float_index_dtype", RP + " {compressed_indices_dtype = #prim.dtype<f32>}", [W, M], lambda: aten._rowwise_prune(W, M, torch.float32))
add("prune_int_mask", RP + " {compressed_indices_dtype = #prim.dtype<i64>}", [W, M.long()], lambda: aten._rowwise_prune(W, M.long(), torch.int64))

CASES.save()
