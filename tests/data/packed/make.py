"""Writes cases.json and io.safetensors: PyTorch 2.15's results for `_pad_packed_sequence`
(the interpreter's kernel unpacking a packed batch) and the recurrent layers over packed
batches (`lstm.data`, `gru.data`, `rnn_tanh.data`, `rnn_relu.data`: layers, directions, biases,
LSTM projections), on batches packed by `torch.nn.utils.rnn.pack_padded_sequence`, written
through ../torch_cases.py ("error": PyTorch refuses the call). Run with PyTorch 2.15:
python make.py"""

import os
import sys

import torch
from torch.nn.utils.rnn import pack_padded_sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_cases import Cases  # noqa: E402

torch.manual_seed(0)
CASES = Cases()
add = CASES.add
aten = torch.ops.aten


def packed(steps, batch, features, lengths, dtype=torch.float32):
    x = torch.randn(steps, batch, *features).to(dtype)
    p = pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=False)
    return p.data, p.batch_sizes


D, BS = packed(4, 3, [2], [4, 2, 1])
for name, bf, pad, total in [("pad_packed", False, 0.0, 0), ("pad_packed_batch_first", True, -1.5, 0),
                             ("pad_packed_total_length", False, 2.0, 6), ("pad_packed_batch_first_total", True, 0.0, 5)]:
    attrs = f"{{batch_first = {str(bf).lower()}, padding_value = {pad}, total_length = {total} : i64}}"
    add(name, f"aten._pad_packed_sequence {attrs}", [D, BS], aten._pad_packed_sequence(D, BS, bf, pad, total))
D1, BS1 = packed(3, 2, [], [3, 3])
add("pad_packed_full_1d", "aten._pad_packed_sequence {batch_first = false, padding_value = 0.0, total_length = 0 : i64}", [D1, BS1],
    aten._pad_packed_sequence(D1, BS1, False, 0.0, 0))
D2, BS2 = packed(5, 4, [2, 3], [5, 1, 3, 2], torch.bfloat16)
add("pad_packed_bf16", "aten._pad_packed_sequence {batch_first = true, padding_value = 1 : i64, total_length = 0 : i64}", [D2, BS2],
    aten._pad_packed_sequence(D2, BS2, True, 1, 0))
D3, BS3 = packed(3, 2, [4], [2, 3], torch.float16)
add("pad_packed_f16", "aten._pad_packed_sequence {batch_first = false, padding_value = 0.5, total_length = 3 : i64}", [D3, BS3],
    aten._pad_packed_sequence(D3, BS3, False, 0.5, 3))
add("pad_packed_total_too_short", "aten._pad_packed_sequence {batch_first = false, padding_value = 0.0, total_length = 2 : i64}",
    [D, BS], error=True)


# The recurrent layers over packed batches, with each module's own parameters.
def layer_case(name, kind, layers, bidir, bias, proj=0, dtype=torch.float32):
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn_tanh": torch.nn.RNN, "rnn_relu": torch.nn.RNN}[kind]
    extra = {"nonlinearity": kind[4:]} if kind.startswith("rnn") else {}
    if proj:
        extra["proj_size"] = proj
    m = cls(3, 4, num_layers=layers, bidirectional=bidir, bias=bias, **extra).to(dtype)
    data, bs = packed(5, 3, [3], [5, 2, 4], dtype)
    dirs = 2 if bidir else 1
    hout = proj or 4
    h0 = torch.randn(layers * dirs, 3, hout).to(dtype)
    params = [p.detach() for p in m._flat_weights]
    attrs = f"{{has_biases = {str(bias).lower()}, num_layers = {layers} : i64, dropout = 0.0, train = false, bidirectional = {str(bidir).lower()}}}"
    if kind == "lstm":
        c0 = torch.randn(layers * dirs, 3, 4).to(dtype)
        outs = aten.lstm.data(data, bs, [h0, c0], params, bias, layers, 0.0, False, bidir)
        add(name, f"aten.lstm.data {attrs}", [data, bs, [h0, c0], params], outs)
    else:
        outs = getattr(aten, kind).data(data, bs, h0, params, bias, layers, 0.0, False, bidir)
        add(name, f"aten.{kind}.data {attrs}", [data, bs, h0, params], outs)


with torch.no_grad():
    layer_case("lstm_data", "lstm", 1, False, True)
    layer_case("lstm_data_bidirectional_2layers", "lstm", 2, True, True)
    layer_case("lstm_data_projection", "lstm", 2, True, False, proj=2)
    layer_case("gru_data", "gru", 2, False, True)
    layer_case("gru_data_bidirectional", "gru", 1, True, False)
    layer_case("rnn_tanh_data", "rnn_tanh", 1, True, True)
    layer_case("rnn_relu_data", "rnn_relu", 2, False, True)
    layer_case("rnn_tanh_data_f64", "rnn_tanh", 1, False, True, dtype=torch.float64)

CASES.save()
