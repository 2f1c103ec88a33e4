"""For each pair of arguments ARCHIVE FIXTURE_DIR: loads the saved TorchScript archive with
`torch.jit.load`, runs `forward` on the fixture's inputs (`io.safetensors`: `in.*`) as many
times as `meta.json`'s `calls` says, and compares the flattened results with `out.*` (and
`call2.out.*`) at the fixture's tolerance. Prints one JSON line per pair: the archive, the
overloads of the loaded graph's operator calls and what differed."""

import json
import sys

import torch
from safetensors.torch import load_file


def flatten(value, out):
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for v in value:
            flatten(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            flatten(v, out)
    elif isinstance(value, (bool, int, float)):
        out.append(torch.tensor(value))
    else:
        raise TypeError(f"unexpected output {type(value).__name__}")
    return out


def overloads(block, out):
    for node in block.nodes():
        kind = node.kind()
        if not kind.startswith("prim::") and node.schema() != "(no schema)":
            head = node.schema().split("(", 1)[0]
            out.append(head.replace("::", "."))
        for b in node.blocks():
            overloads(b, out)
    return out


def check(archive, fixture):
    module = torch.jit.load(archive)
    io = load_file(f"{fixture}/io.safetensors")
    meta = json.load(open(f"{fixture}/meta.json"))
    # A non-tensor argument (TorchScript archive fixtures) is given by its value in meta.json.
    inputs = [spec["value"] if "value" in spec else io[f"in.{i}"] for i, spec in enumerate(meta["inputs"])]
    tol = meta["tolerance"]
    failures = []
    with torch.no_grad():
        for call in range(meta.get("calls", 1)):
            prefix = "out." if call == 0 else f"call{call + 1}.out."
            got = flatten(module(*inputs), [])
            want = [io[k] for k in sorted((k for k in io if k.startswith(prefix)), key=lambda k: int(k[len(prefix):]))]
            if len(got) != len(want):
                failures.append(f"call {call + 1}: {len(got)} outputs, expected {len(want)}")
                continue
            for i, (g, w) in enumerate(zip(got, want)):
                if g.dtype != w.dtype or g.shape != w.shape:
                    failures.append(f"call {call + 1} output {i}: {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}")
                elif not torch.allclose(g, w, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True):
                    err = (g.double() - w.double()).abs().max().item()
                    failures.append(f"call {call + 1} output {i}: max error {err}")
    graph = module.forward.graph
    print(json.dumps({"archive": archive, "overloads": overloads(graph, []), "failures": failures}), flush=True)


torch.set_num_threads(1)
args = sys.argv[1:]
for k in range(0, len(args) - 1, 2):
    check(args[k], args[k + 1])
