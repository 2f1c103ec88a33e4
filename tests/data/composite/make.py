"""Writes cases.json and io.safetensors: PyTorch 2.15's results for composite ops that the
project runs only through their decompositions (no kernel of their own). Each case is one op
applied to random inputs; tests/composite_ops.rs runs the same op and compares (a case PyTorch
refuses is marked "error" and must fail there too).
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

# Cases whose inputs form one Tensor[] operand (LIST_IN), or whose op returns several tensors,
# as a tuple (MULTI) or as a Tensor[] (LIST_OUT).
LIST_IN, MULTI, LIST_OUT = {"list_in": True}, {}, {"list_out": True}
S = torch.tensor(0.7)  # a 0-d tensor
I2 = torch.randint(0, 9, (2, 3))
LP = torch.log_softmax(torch.randn(5, 4), 1)  # log-probabilities, 5 samples of 4 classes
TG = torch.tensor([0, 3, 1, 3, 2])  # their classes
LP3 = torch.log_softmax(torch.randn(2, 4, 3, 2), 1)
TG3 = torch.randint(0, 4, (2, 3, 2))
CW = torch.rand(4) + 0.5  # class weights
Y = torch.tensor([1.0, -1.0, 1.0])  # ±1 targets for 3 samples
AN = torch.where(A > 1, torch.nan, A)
MORE = [
    ("vstack", "aten.vstack", [V, torch.randn(2, 4)], lambda *t: torch.vstack(t), LIST_IN),
    ("vstack_int", "aten.vstack", [I2, I2 + 1], lambda *t: torch.vstack(t), LIST_IN),
    ("hstack_1d", "aten.hstack", [V, W], lambda *t: torch.hstack(t), LIST_IN),
    ("hstack_2d", "aten.hstack", [A, torch.randn(3, 2)], lambda *t: torch.hstack(t), LIST_IN),
    ("dstack", "aten.dstack", [V, V + 1], lambda *t: torch.dstack(t), LIST_IN),
    ("dstack_2d", "aten.dstack", [A, B], lambda *t: torch.dstack(t), LIST_IN),
    ("column_stack", "aten.column_stack", [torch.randn(3), A, S.expand(3).clone()], lambda *t: torch.column_stack(t), LIST_IN),
    ("row_stack", "aten.row_stack", [A, B], lambda *t: torch.vstack(t), LIST_IN),
    ("atleast_1d", "aten.atleast_1d.Sequence", [S, V], lambda *t: torch.atleast_1d(t), {**LIST_IN, **LIST_OUT}),
    ("atleast_2d", "aten.atleast_2d.Sequence", [S, V, A], lambda *t: torch.atleast_2d(t), {**LIST_IN, **LIST_OUT}),
    ("atleast_3d", "aten.atleast_3d.Sequence", [S, V, A, X4], lambda *t: torch.atleast_3d(t), {**LIST_IN, **LIST_OUT}),
    ("meshgrid", "aten.meshgrid", [V, W, S], lambda *t: torch.meshgrid(*t, indexing="ij"), {**LIST_IN, **LIST_OUT}),
    ("meshgrid_xy", 'aten.meshgrid.indexing {indexing = "xy"}', [V, W, torch.randn(2)], lambda *t: torch.meshgrid(*t, indexing="xy"), {**LIST_IN, **LIST_OUT}),
    ("broadcast_tensors", "aten.broadcast_tensors", [V, torch.randn(3, 1), S], lambda *t: torch.broadcast_tensors(*t), {**LIST_IN, **LIST_OUT}),
    ("block_diag", "aten.block_diag", [A, V, S, torch.randn(2, 2)], lambda *t: torch.block_diag(*t), LIST_IN),
    ("kron", "aten.kron", [A, torch.randn(2, 3)], torch.kron),
    ("kron_ranks", "aten.kron", [V, torch.randn(2, 2, 3)], torch.kron),
    ("diag_vector", "aten.diag {diagonal = 1 : i64}", [V], lambda v: torch.diag(v, 1)),
    ("diag_vector_below", "aten.diag {diagonal = -2 : i64}", [I2[0]], lambda v: torch.diag(v, -2)),
    ("diag_matrix", "aten.diag {diagonal = -1 : i64}", [A], lambda a: torch.diag(a, -1)),
    ("diag_embed", "aten.diag_embed {offset = 1 : i64, dim1 = 0 : i64, dim2 = 2 : i64}", [A], lambda a: torch.diag_embed(a, 1, 0, 2)),
    ("diag_embed_default", "aten.diag_embed", [A], torch.diag_embed),
    ("diagflat", "aten.diagflat {offset = -1 : i64}", [torch.randn(2, 2)], lambda a: torch.diagflat(a, -1)),
    ("rot90", "aten.rot90 {k = 1 : i64, dims = [0, 1]}", [A], lambda a: torch.rot90(a, 1, [0, 1])),
    ("rot90_k3", "aten.rot90 {k = -1 : i64, dims = [2, 0]}", [torch.randn(2, 3, 4)], lambda a: torch.rot90(a, -1, [2, 0])),
    ("rot90_k2", "aten.rot90 {k = 2 : i64, dims = [0, 1]}", [A], lambda a: torch.rot90(a, 2, [0, 1])),
    ("take_along_dim", "aten.take_along_dim {dim = 1 : i64}", [A, torch.randint(0, 4, (1, 5))], lambda a, i: torch.take_along_dim(a, i, 1)),
    ("take_along_dim_flat", "aten.take_along_dim", [A, torch.randint(0, 12, (5,))], torch.take_along_dim),
    ("repeat_interleave", "aten.repeat_interleave.self_int {repeats = 3 : i64, dim = 1 : i64}", [A], lambda a: torch.repeat_interleave(a, 3, 1)),
    ("repeat_interleave_flat", "aten.repeat_interleave.self_int {repeats = 2 : i64}", [I2], lambda a: torch.repeat_interleave(a, 2)),
    ("one_hot", "aten.one_hot {num_classes = 10 : i64}", [I2], lambda i: F.one_hot(i, 10)),
    ("cross", "aten.cross {dim = 1 : i64}", [torch.randn(2, 3), torch.randn(2, 3)], lambda a, b: torch.cross(a, b, 1)),
    ("linalg_cross", "aten.linalg_cross {dim = 0 : i64}", [torch.randn(3, 2), torch.randn(3, 1)], lambda a, b: torch.linalg.cross(a, b, dim=0)),
    ("tensordot", "aten.tensordot {dims_self = [0, 2], dims_other = [1, 0]}", [torch.randn(2, 3, 4), torch.randn(4, 2, 5)], lambda a, b: torch.tensordot(a, b, ([0, 2], [1, 0]))),
    ("var_mean", "aten.var_mean {unbiased = false}", [A], lambda a: torch.var_mean(a, unbiased=False), MULTI),
    ("var_mean_dim", "aten.var_mean.dim {dim = [1], unbiased = true, keepdim = true}", [A], lambda a: torch.var_mean(a, 1, unbiased=True, keepdim=True), MULTI),
    ("std_mean", "aten.std_mean", [A], torch.std_mean, MULTI),
    ("std_mean_dim", "aten.std_mean.dim {dim = [0], unbiased = false, keepdim = false}", [A], lambda a: torch.std_mean(a, 0, unbiased=False), MULTI),
    ("std_mean_correction", "aten.std_mean.correction {dim = [1], correction = 2 : i64, keepdim = false}", [A], lambda a: torch.std_mean(a, 1, correction=2), MULTI),
    ("nanmean", "aten.nanmean {dim = [1], keepdim = false}", [AN], lambda a: torch.nanmean(a, 1)),
    ("nanmean_all", "aten.nanmean", [AN], torch.nanmean),
    ("instance_norm", "aten.instance_norm {use_input_stats = true, momentum = 0.1 : f64, eps = 1.0e-5 : f64, cudnn_enabled = false}", [X4, torch.randn(8), torch.randn(8)], lambda x, w, b: F.instance_norm(x, weight=w, bias=b)),
    ("renorm", "aten.renorm {p = 2.0 : f64, dim = 0 : i64, maxnorm = 1.0 : f64}", [A], lambda a: torch.renorm(a, 2, 0, 1.0)),
    ("renorm_p1", "aten.renorm {p = 1.0 : f64, dim = 1 : i64, maxnorm = 1.5 : f64}", [A], lambda a: torch.renorm(a, 1, 1, 1.5)),
    ("nll_loss", "aten.nll_loss {reduction = 1 : i64, ignore_index = 3 : i64}", [LP, TG], lambda x, t: F.nll_loss(x, t, ignore_index=3)),
    ("nll_loss_weight", "aten.nll_loss {reduction = 1 : i64, ignore_index = -100 : i64}", [LP, TG, CW], lambda x, t, w: F.nll_loss(x, t, w)),
    ("nll_loss_weight_ignore_none", "aten.nll_loss {reduction = 0 : i64, ignore_index = 1 : i64}", [LP, TG, CW], lambda x, t, w: F.nll_loss(x, t, w, ignore_index=1, reduction="none")),
    ("nll_loss_sum", "aten.nll_loss {reduction = 2 : i64, ignore_index = -100 : i64}", [LP, TG], lambda x, t: F.nll_loss(x, t, reduction="sum")),
    ("nll_loss_unbatched", "aten.nll_loss {reduction = 1 : i64, ignore_index = -100 : i64}", [LP[0], TG[1]], F.nll_loss),
    ("nll_loss2d", "aten.nll_loss2d {reduction = 1 : i64, ignore_index = 2 : i64}", [LP3, TG3, CW], lambda x, t, w: F.nll_loss(x, t, w, ignore_index=2)),
    ("nll_loss_nd", "aten.nll_loss_nd {reduction = 0 : i64, ignore_index = -100 : i64}", [LP3, TG3], lambda x, t: F.nll_loss(x, t, reduction="none")),
    ("cross_entropy", "aten.cross_entropy_loss {reduction = 1 : i64, ignore_index = -100 : i64, label_smoothing = 0.0 : f64}", [A.T.contiguous(), TG[:4].clamp(max=2)], F.cross_entropy),
    ("cross_entropy_weight", "aten.cross_entropy_loss {reduction = 1 : i64, ignore_index = 0 : i64, label_smoothing = 0.0 : f64}", [LP3 * 3, TG3, CW], lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=0)),
    ("margin_ranking_loss", "aten.margin_ranking_loss {margin = 0.3 : f64, reduction = 1 : i64}", [V[:3], W[:3], Y], lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.3)),
    ("hinge_embedding_loss", "aten.hinge_embedding_loss {margin = 0.8 : f64, reduction = 0 : i64}", [A, torch.sign(B)], lambda a, y: F.hinge_embedding_loss(a, y, 0.8, reduction="none")),
    ("soft_margin_loss", "aten.soft_margin_loss {reduction = 1 : i64}", [A, torch.sign(B)], F.soft_margin_loss),
    ("cosine_embedding_loss", "aten.cosine_embedding_loss {margin = 0.2 : f64, reduction = 0 : i64}", [A, B, Y], lambda a, b, y: F.cosine_embedding_loss(a, b, y, 0.2, reduction="none")),
    ("poisson_nll_loss", "aten.poisson_nll_loss {log_input = true, full = false, eps = 1.0e-8 : f64, reduction = 1 : i64}", [A, P * 3], F.poisson_nll_loss),
    ("poisson_nll_loss_full", "aten.poisson_nll_loss {log_input = false, full = true, eps = 1.0e-8 : f64, reduction = 0 : i64}", [P, P * 3], lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True, reduction="none")),
    ("triplet_margin_loss", "aten.triplet_margin_loss {margin = 1.0 : f64, p = 2.0 : f64, eps = 1.0e-6 : f64, swap = false, reduction = 1 : i64}", [A, B, A * 0.5], F.triplet_margin_loss),
    ("triplet_margin_loss_p1_swap", "aten.triplet_margin_loss {margin = 2.0 : f64, p = 1.0 : f64, eps = 1.0e-6 : f64, swap = true, reduction = 0 : i64}", [A, B, A * 0.5], lambda a, p, n: F.triplet_margin_loss(a, p, n, 2.0, 1.0, swap=True, reduction="none")),
    ("special_entr", "aten.special_entr", [torch.cat([A.flatten(), torch.tensor([0.0, torch.nan])])], torch.special.entr),
    ("special_ndtr", "aten.special_ndtr", [A * 3], torch.special.ndtr),
    ("special_log_ndtr", "aten.special_log_ndtr", [torch.tensor([-60.0, -25.0, -19.0, -5.0, -1.0, 0.0, 0.5, 3.0, 12.0])], torch.special.log_ndtr),
    ("special_log_ndtr_f64", "aten.special_log_ndtr", [torch.tensor([-40.0, -21.0, -2.5, 7.0], dtype=torch.float64)], torch.special.log_ndtr),
    ("special_xlog1py", "aten.special_xlog1py", [T, P], torch.special.xlog1py),
    ("special_xlog1py_self_scalar", "aten.special_xlog1py.self_scalar {self = 2.0 : f64}", [P], lambda p: torch.special.xlog1py(2.0, p)),
    ("special_xlog1py_other_scalar", "aten.special_xlog1py.other_scalar {other = 3 : i64}", [I2], lambda i: torch.special.xlog1py(i, 3)),
    ("xlogy_scalar_other", "aten.xlogy.Scalar_Other {other = 0.5 : f64}", [T], lambda t: torch.xlogy(t, 0.5)),
    ("xlogy_scalar_self", "aten.xlogy.Scalar_Self {self = 0 : i64}", [torch.tensor([1.0, torch.nan, 0.0, 2.0], dtype=torch.float64)], lambda y: torch.xlogy(0, y)),
    ("special_xlogy_other_scalar", "aten.special_xlogy.other_scalar {other = 2.5 : f64}", [A], lambda a: torch.special.xlogy(a, 2.5)),
    ("float_power_scalar", "aten.float_power.Scalar {self = 1.5 : f64}", [A], lambda a: torch.float_power(1.5, a)),
    ("nll_loss_forward", "aten.nll_loss_forward {reduction = 1 : i64, ignore_index = 3 : i64}", [LP, TG, CW], lambda x, t, w: torch.ops.aten.nll_loss_forward(x, t, w, 1, 3), MULTI),
    ("nll_loss_forward_none", "aten.nll_loss_forward {reduction = 0 : i64, ignore_index = -100 : i64}", [LP, TG], lambda x, t: torch.ops.aten.nll_loss_forward(x, t, None, 0, -100), MULTI),
    ("nll_loss2d_forward_sum", "aten.nll_loss2d_forward {reduction = 2 : i64, ignore_index = 1 : i64}", [LP3, TG3], lambda x, t: torch.ops.aten.nll_loss2d_forward(x, t, None, 2, 1), MULTI),
    ("norm_scalar", "aten.norm.Scalar {p = 3 : i64}", [A], lambda a: torch.ops.aten.norm.Scalar(a, 3)),
    ("norm_dim", "aten.norm.ScalarOpt_dim {p = 1.5 : f64, dim = [1], keepdim = true}", [A], lambda a: torch.ops.aten.norm.ScalarOpt_dim(a, 1.5, [1], True)),
    ("norm_dim_inf", "aten.norm.ScalarOpt_dim {p = 0x7FF0000000000000 : f64, dim = [0]}", [A], lambda a: torch.ops.aten.norm.ScalarOpt_dim(a, float("inf"), [0])),
    ("norm_dtype", "aten.norm.ScalarOpt_dtype {p = 2 : i64, dtype = #prim.dtype<f64>}", [A], lambda a: torch.ops.aten.norm.ScalarOpt_dtype(a, 2, dtype=torch.float64)),
    ("frobenius_norm", "aten.frobenius_norm.dim {dim = [0, 1], keepdim = false}", [A], lambda a: torch.ops.aten.frobenius_norm.dim(a, [0, 1])),
    ("trapezoid_dx", "aten.trapezoid.dx {dx = 0.5 : f64, dim = 1 : i64}", [A], lambda y: torch.trapezoid(y, dx=0.5, dim=1)),
    ("trapz_x", "aten.trapz.x {dim = 0 : i64}", [A, torch.tensor([0.0, 0.5, 1.5])], lambda y, x: torch.trapz(y, x, dim=0)),
    ("trapezoid_x_full", "aten.trapezoid.x {dim = -1 : i64}", [A, torch.rand(3, 4).cumsum(1)], lambda y, x: torch.trapezoid(y, x)),
    ("sum_to_size", "aten.sum_to_size {size = [4, 1]}", [torch.randn(2, 4, 3)], lambda x: x.sum_to_size(4, 1)),
    ("safe_softmax", "aten._safe_softmax {dim = 1 : i64}", [torch.where(torch.arange(12).reshape(3, 4) < 4, -torch.inf, A)], lambda x: torch.ops.aten._safe_softmax(x, 1)),
    ("cumulative_trapezoid_dx", "aten.cumulative_trapezoid.dx {dx = 2 : i64, dim = 0 : i64}", [A], lambda y: torch.cumulative_trapezoid(y, dx=2, dim=0)),
    ("cumulative_trapezoid_x", "aten.cumulative_trapezoid.x {dim = -1 : i64}", [A, torch.tensor([0.0, 0.5, 1.5, 1.75])], lambda y, x: torch.cumulative_trapezoid(y, x)),
    ("norm_except_dim", "aten.norm_except_dim {pow = 2 : i64, dim = 1 : i64}", [torch.randn(2, 3, 4)], lambda v: torch.norm_except_dim(v, 2, 1)),
    ("norm_except_dim_all", "aten.norm_except_dim {pow = 3 : i64, dim = -1 : i64}", [A], lambda v: torch.norm_except_dim(v, 3, -1)),
    ("weight_norm", "aten._weight_norm {dim = 0 : i64}", [torch.randn(4, 3, 2), torch.rand(4, 1, 1)], lambda v, g: torch._weight_norm(v, g, 0)),
    ("euclidean_dist", "aten._euclidean_dist", [torch.randn(4, 3), torch.randn(5, 3)], torch.ops.aten._euclidean_dist),
    ("prelu_kernel", "aten._prelu_kernel", [torch.randn(2, 4, 3), PR.reshape(4, 1)], torch.ops.aten._prelu_kernel),
    ("rrelu_eval", "aten.rrelu {lower = 0.1 : f64, upper = 0.3 : f64, training = false}", [A], lambda a: F.rrelu(a, 0.1, 0.3, training=False)),
    ("chain_matmul", "aten.chain_matmul", [A, torch.randn(4, 2), torch.randn(2, 5)], lambda *m: torch.linalg.multi_dot(m), LIST_IN),
    ("bilinear", "aten.bilinear", [torch.randn(2, 3, 4), torch.randn(2, 3, 5), torch.randn(6, 4, 5), torch.randn(6)], F.bilinear),
    ("max_pool1d_with_indices", "aten.max_pool1d_with_indices {kernel_size = [3], stride = [2], padding = [1], dilation = [1], ceil_mode = true}", [torch.randn(2, 3, 8)], lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True, return_indices=True), MULTI),
    ("vander", "aten.vander", [V], torch.vander),
    ("vander_int", "aten.vander {N = 3 : i64, increasing = true}", [I2[0].int()], lambda x: torch.vander(x, 3, True)),
    ("dim_arange", "aten._dim_arange {dim = 1 : i64}", [A], lambda a: torch._dim_arange(a, 1)),
    ("log_sigmoid_forward", "aten.log_sigmoid_forward", [A], torch.ops.aten.log_sigmoid_forward, MULTI),
    ("fused_rms_norm", "aten._fused_rms_norm {normalized_shape = [4]}", [torch.randn(2, 3, 4), torch.randn(4)], lambda x, w: torch.ops.aten._fused_rms_norm(x, [4], w, None), MULTI),
    ("fused_rms_norm_eps", "aten._fused_rms_norm {normalized_shape = [3, 4], eps = 0.1 : f64}", [torch.randn(2, 3, 4)], lambda x: torch.ops.aten._fused_rms_norm(x, [3, 4], None, 0.1), MULTI),
    ("pad_circular", "aten._pad_circular {pad = [2, 1, 1, 0]}", [torch.randn(1, 2, 3, 4)], lambda x: torch.ops.aten._pad_circular(x, [2, 1, 1, 0])),
    ("pad_enum_reflect", "aten._pad_enum {pad = [2, 1], mode = 0 : i64}", [torch.randn(1, 2, 5)], lambda x: torch.ops.aten._pad_enum(x, [2, 1], 0)),
    ("pad_enum_replicate", "aten._pad_enum {pad = [1, 2, 2, 0], mode = 1 : i64}", [torch.randn(1, 2, 3, 4)], lambda x: torch.ops.aten._pad_enum(x, [1, 2, 2, 0], 1)),
    ("pad_enum_circular", "aten._pad_enum {pad = [1, 3], mode = 2 : i64}", [torch.randn(2, 2, 4)], lambda x: torch.ops.aten._pad_enum(x, [1, 3], 2)),
    ("pad_enum_constant", "aten._pad_enum {pad = [1, 2], mode = 3 : i64, value = 9.0 : f64}", [A], lambda x: torch.ops.aten._pad_enum(x, [1, 2], 3, 9.0)),
    ("cov", "aten.cov {correction = 0 : i64}", [A], lambda x: torch.cov(x, correction=0)),
    ("cov_int", "aten.cov {correction = 1 : i64}", [I2.int()], torch.cov),
    ("cov_vector", "aten.cov {correction = 1 : i64}", [W], torch.cov),
    ("corrcoef", "aten.corrcoef", [A], torch.corrcoef),
    ("multi_margin_loss", "aten.multi_margin_loss {p = 1 : i64, margin = 1.0 : f64, reduction = 1 : i64}", [A, torch.tensor([1, 0, 3])], F.multi_margin_loss),
    ("multi_margin_loss_p2_weight", "aten.multi_margin_loss {p = 2 : i64, margin = 0.5 : f64, reduction = 0 : i64}", [A, torch.tensor([1, 0, 3]), CW], lambda x, y, w: F.multi_margin_loss(x, y, 2, 0.5, w, reduction="none")),
    ("multi_margin_loss_unbatched", "aten.multi_margin_loss {p = 1 : i64, margin = 1.0 : f64, reduction = 0 : i64}", [V, torch.tensor(2)], lambda x, y: F.multi_margin_loss(x, y, reduction="none")),
    # PyTorch refuses these; the decompositions must refuse them too.
    ("var_mean_int", "aten.var_mean", [I2], torch.var_mean),
    ("std_mean_int", "aten.std_mean.dim {dim = [1], unbiased = true, keepdim = false}", [I2], lambda i: torch.std_mean(i, 1)),
    ("nanmean_int", "aten.nanmean", [I2], torch.nanmean),
    ("one_hot_int32", "aten.one_hot {num_classes = 10 : i64}", [I2.int()], lambda i: F.one_hot(i, 10)),
    ("norm_int", "aten.norm.Scalar {p = 2 : i64}", [I2], lambda i: torch.ops.aten.norm.Scalar(i, 2)),
    ("renorm_int", "aten.renorm {p = 2.0 : f64, dim = 0 : i64, maxnorm = 1.0 : f64}", [I2], lambda a: torch.renorm(a, 2, 0, 1.0)),
]

tensors = {}
cases = []
for name, op, inputs, ref, *form in CASES + MORE:
    for i, t in enumerate(inputs):
        tensors[f"{name}.in.{i}"] = t.clone().contiguous()
    case = {"name": name, "op": op, "inputs": len(inputs), **(form[0] if form else {})}
    try:
        out = ref(*inputs)
    except (RuntimeError, NotImplementedError):
        case["error"] = True
        cases.append(case)
        continue
    if isinstance(out, torch.Tensor):
        tensors[f"{name}.out"] = out.clone().contiguous()
    else:
        for i, o in enumerate(out):
            tensors[f"{name}.out.{i}"] = o.clone().contiguous()
        case["outputs"] = len(out)
    cases.append(case)

save_file(tensors, "io.safetensors")
with open("cases.json", "w") as f:
    json.dump(cases, f, indent=1)
print(len(cases), "cases")
