"""Writes model.pt2 (a torch.export program calling the custom operator mylib::scaled_add),
io.safetensors (its inputs in.0, in.1 and PyTorch's output out.0) and ops.txt (the operator's
schema, as --op-library reads it). Run with PyTorch 2.15: python make.py"""

import torch
from safetensors.torch import save_file


@torch.library.custom_op("mylib::scaled_add", mutates_args=())
def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return x + alpha * y


@scaled_add.register_fake
def _(x, y, alpha):
    return torch.empty_like(x)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(torch.ops.mylib.scaled_add(x, y, 0.5)) * 2.0


torch.manual_seed(0)
x, y = torch.randn(3, 4), torch.randn(3, 4)
ep = torch.export.export(Model(), (x, y))
torch.export.save(ep, "model.pt2")
save_file({"in.0": x, "in.1": y, "out.0": Model()(x, y)}, "io.safetensors")
with open("ops.txt", "w") as f:
    f.write("# The custom operator of model.pt2, in PyTorch's schema syntax.\n")
    f.write(str(torch.ops.mylib.scaled_add.default._schema) + "\n")
print(ep.graph)
