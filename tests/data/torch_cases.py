"""The case writer the make.py scripts beside this file share: each case is one op applied to
recorded inputs, with PyTorch's results, in the format tests/torch_ops.rs reads (cases.json and
io.safetensors in the script's folder)."""

import json

from safetensors.torch import save_file


class Cases:
    def __init__(self):
        self.cases = []
        self.tensors = {}

    def add(self, name, op, groups, outs=None, error=False, **extra):
        """Records a case: `groups` is the op's operands, each a tensor or a list of tensors (a
        `Tensor[]` operand); `outs` is PyTorch's result or results, absent when PyTorch refuses
        the call (`error`); `extra` is written into the case as it is (`list_out`, `up_to_sign`)."""
        inputs, operands = [], []
        for g in groups:
            if isinstance(g, (list, tuple)):
                operands.append(list(range(len(inputs), len(inputs) + len(g))))
                inputs.extend(g)
            else:
                operands.append(len(inputs))
                inputs.append(g)
        for i, t in enumerate(inputs):
            self.tensors[f"{name}.in.{i}"] = t.detach().clone().contiguous()
        case = {"name": name, "op": op, "inputs": len(inputs), "operands": operands}
        if error:
            case["error"] = True
            case["outputs"] = 1
        else:
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            for i, t in enumerate(outs):
                self.tensors[f"{name}.out.{i}"] = t.detach().clone().contiguous()
            case["outputs"] = len(outs)
        case.update(extra)
        self.cases.append(case)

    def record(self, name, op, groups, fn, **extra):
        """Records `fn()` (PyTorch's call of the op) as a case, or the call as refused when it
        raises a RuntimeError."""
        try:
            out = fn()
        except RuntimeError:
            self.add(name, op, groups, error=True, **extra)
            return
        self.add(name, op, groups, out, **extra)

    def save(self):
        with open("cases.json", "w") as f:
            json.dump(self.cases, f, indent=1)
            f.write("\n")
        save_file(self.tensors, "io.safetensors")
