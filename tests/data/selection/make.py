"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the selection ops the
project runs through their decompositions (`where(condition)`, `nonzero_numpy`, `argwhere`,
`isin`, `split_with_sizes_copy`) and the multivariate log-gamma (`mvlgamma`,
`special_multigammaln`), written through ../torch_cases.py ("list_out": the op returns a
`Tensor[]`). Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add

X = torch.randn(3, 4)
C = X > 0.3
I = torch.randint(0, 6, (3, 5))
add("where_condition", "aten.where", [C], torch.where(C), list_out=True)
add("where_float", "aten.where", [torch.where(C, X, 0)], torch.where(torch.where(C, X, 0)), list_out=True)
add("nonzero_numpy", "aten.nonzero_numpy", [I], torch.ops.aten.nonzero_numpy(I), list_out=True)
add("argwhere", "aten.argwhere", [X > 0], torch.argwhere(X > 0))
T = torch.tensor([1, 3, 5, 8])
add("isin", "aten.isin.Tensor_Tensor", [I, T], torch.isin(I, T))
add("isin_invert", "aten.isin.Tensor_Tensor {invert = true}", [I, T.reshape(2, 2)], torch.isin(I, T.reshape(2, 2), invert=True))
add("isin_float", "aten.isin.Tensor_Tensor", [torch.tensor([0.5, 1.0, 2.5]), torch.tensor([1.0, 2.5])], torch.isin(torch.tensor([0.5, 1.0, 2.5]), torch.tensor([1.0, 2.5])))
add("isin_scalar", "aten.isin.Tensor_Scalar {test_element = 3 : i64}", [I], torch.isin(I, 3))
add("isin_scalar_tensor", "aten.isin.Scalar_Tensor {element = 5 : i64, invert = true}", [T], torch.isin(5, T, invert=True))
S = torch.randn(2, 6, 3)
add("split_with_sizes_copy", "aten.split_with_sizes_copy {split_sizes = [1, 3, 2], dim = 1 : i64}", [S],
    torch.split_with_sizes_copy(S, [1, 3, 2], 1), list_out=True)
P = torch.rand(3, 4) * 4 + 1.5
add("mvlgamma", "aten.mvlgamma {p = 3 : i64}", [P], torch.mvlgamma(P, 3))
add("special_multigammaln", "aten.special_multigammaln {p = 1 : i64}", [P.double()], torch.special.multigammaln(P.double(), 1))

CASES.save()
