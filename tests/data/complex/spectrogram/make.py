"""Writes model.pt2 (a torch.export program computing a magnitude spectrogram with `torch.stft`,
and the complex spectrum itself) and io.safetensors (its input in.0 and PyTorch's outputs
out.0, the magnitudes, and out.1, the complex64 spectrum). Run with PyTorch 2.15: python make.py"""

import torch
from safetensors.torch import save_file


class Spectrogram(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(64))

    def forward(self, x):
        s = torch.stft(x, 64, hop_length=16, window=self.window, return_complex=True)
        return s.abs(), s


torch.manual_seed(0)
x = torch.randn(2, 400)
m = Spectrogram()
ep = torch.export.export(m, (x,))
torch.export.save(ep, "model.pt2")
mag, spec = m(x)
save_file({"in.0": x, "out.0": mag.contiguous(), "out.1": spec.contiguous()}, "io.safetensors")
print(ep.graph)
