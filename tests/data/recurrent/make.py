"""Writes cases.json and io.safetensors: PyTorch 2.15's results for the recurrent layers and
cells (`aten.lstm.input`, `gru.input`, `rnn_tanh.input`, `rnn_relu.input` and the four cells),
which the project runs through their decompositions. Each case names the op with its
attributes and its operands: an integer is one input tensor, a list of integers a `Tensor[]`
operand of those inputs. tests/recurrent.rs runs the same calls and compares.
Run with PyTorch 2.15: python make.py"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add

def attrs(has_biases, layers, bidirectional, batch_first=None):
    s = f"has_biases = {str(has_biases).lower()}, num_layers = {layers} : i64, dropout = 0.0 : f64, train = false, bidirectional = {str(bidirectional).lower()}"
    if batch_first is not None:
        s += f", batch_first = {str(batch_first).lower()}"
    return "{" + s + "}"


def layer(kind, name, *, input_size=4, hidden=5, layers=1, bias=True, bidirectional=False, batch_first=False, shape=(3, 2), proj=0):
    d = 2 if bidirectional else 1
    extra = {"proj_size": proj} if proj else {}
    if kind == "lstm":
        m = torch.nn.LSTM(input_size, hidden, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional, **extra)
    elif kind == "gru":
        m = torch.nn.GRU(input_size, hidden, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    else:
        m = torch.nn.RNN(input_size, hidden, layers, nonlinearity=kind.split("_")[1], bias=bias, batch_first=batch_first, bidirectional=bidirectional)
    m.eval()
    x = torch.randn(*shape, input_size)
    batched = len(shape) == 2
    bsz = (shape[0] if batch_first else shape[1]) if batched else None
    hsize = proj if proj else hidden
    h0 = torch.randn(layers * d, bsz, hsize) if batched else torch.randn(layers * d, hsize)
    params = [p.detach() for p in m._flat_weights]
    with torch.no_grad():
        if kind == "lstm":
            c0 = torch.randn(layers * d, bsz, hidden) if batched else torch.randn(layers * d, hidden)
            out, (hn, cn) = m(x, (h0, c0))
            add(name, "aten.lstm.input " + attrs(bias, layers, bidirectional, batch_first), [x, [h0, c0], params], [out, hn, cn])
        else:
            out, hn = m(x, h0)
            add(name, f"aten.{kind}.input " + attrs(bias, layers, bidirectional, batch_first), [x, h0, params], [out, hn])


layer("lstm", "lstm_2layer_bidir_batch_first", layers=2, bidirectional=True, batch_first=True, shape=(2, 3))
layer("lstm", "lstm_nobias_unbatched", bias=False, shape=(4,))
layer("lstm", "lstm_proj", layers=2, proj=3, shape=(3, 2))
layer("gru", "gru_2layer_bidir", layers=2, bidirectional=True, shape=(4, 2))
layer("gru", "gru_nobias_batch_first", bias=False, batch_first=True, shape=(2, 3))
layer("rnn_tanh", "rnn_tanh_2layer", layers=2, shape=(3, 2))
layer("rnn_relu", "rnn_relu_bidir_unbatched", bidirectional=True, shape=(5,))

# The cells, with and without biases (PyTorch takes only batched inputs there).
X, H, C = torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 5)
for kind, gates in [("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)]:
    w_ih, w_hh = torch.randn(gates * 5, 4), torch.randn(gates * 5, 5)
    b_ih, b_hh = torch.randn(gates * 5), torch.randn(gates * 5)
    f = getattr(torch.ops.aten, f"{kind}_cell")
    for suffix, x, h, c, biases in [("", X, H, C, [b_ih, b_hh]), ("_nobias", X[:2], H[:2], C[:2], [])]:
        hx = [h, c] if kind == "lstm" else h
        out = f(x, hx, w_ih, w_hh, *biases)
        add(f"{kind}_cell{suffix}", f"aten.{kind}_cell", [x, hx, w_ih, w_hh, *biases], list(out) if kind == "lstm" else out)

CASES.save()
