"""Compile time and speed of ``torch.compile(backend="dialect")`` against Inductor on the zoo.

For each model of ``../shared/zoo``: the first call through each backend (Dynamo's capture, the
backend's compile, one run; ``torch._dynamo.reset()`` before each and Inductor's on-disk caches
disabled, so nothing is reused), the
backend's own share of it, and the median time of later calls, with eager PyTorch's for
reference, and this backend's with the model's parameters frozen (``options={"freeze": True}``).
Prints a Markdown table.

    python python/bench/torch_compile.py [--threads N] [--iters N] [MODEL ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

# Inductor keeps compiled graphs and kernels in an on-disk cache across processes; a first call
# served from it is not a compile. Measure cold compiles.
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch
from safetensors.torch import load_file

import dialect
import dialect.dynamo

try:
    import transformers.modeling_outputs  # noqa: F401  (registers output classes for torch.export.load)
except ImportError:
    pass

ZOO = Path(__file__).resolve().parents[2].parent / "shared" / "zoo"


def inputs_of(directory: Path, exported):
    io = load_file(str(directory / "io.safetensors"))
    n = sum(1 for k in io if k.startswith("in."))
    values = [io[f"in.{i}"] for i in range(n)]
    spec = exported.call_spec.in_spec
    kwargs_spec = spec.children_specs[1] if spec is not None else None
    if kwargs_spec is not None and kwargs_spec.context:
        return (), dict(zip(kwargs_spec.context, values))
    return tuple(values), {}


def median_ms(fn, args, kwargs, iters):
    for _ in range(3):
        fn(*args, **kwargs)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def first_call_ms(module, backend, args, kwargs):
    torch._dynamo.reset()
    compiled = torch.compile(module, backend=backend)
    t = time.perf_counter()
    compiled(*args, **kwargs)
    return (time.perf_counter() - t) * 1e3, compiled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--iters", type=int, default=50)
    opts = parser.parse_args()
    torch.set_num_threads(opts.threads)
    names = opts.models or sorted(p.name for p in ZOO.iterdir() if (p / "model.pt2").is_file())
    rows = []
    with torch.no_grad():
        for name in names:
            directory = ZOO / name
            exported = torch.export.load(str(directory / "model.pt2"))
            module = exported.module()
            args, kwargs = inputs_of(directory, exported)
            before = len(dialect.dynamo.compile_log)
            ours_first, ours = first_call_ms(module, dialect.dynamo.backend_with(threads=opts.threads), args, kwargs)
            graphs = dialect.dynamo.compile_log[before:]
            export_ms = sum(g["export_ms"] for g in graphs)
            compile_ms = sum(g["compile_ms"] for g in graphs)
            ours_run = median_ms(ours, args, kwargs, opts.iters)
            _, frozen = first_call_ms(module, dialect.dynamo.backend_with(threads=opts.threads, freeze=True), args, kwargs)
            frozen_run = median_ms(frozen, args, kwargs, opts.iters)
            inductor_first, inductor = first_call_ms(module, "inductor", args, kwargs)
            inductor_run = median_ms(inductor, args, kwargs, opts.iters)
            eager_run = median_ms(module, args, kwargs, opts.iters)
            rows.append((name, len(graphs), ours_first, export_ms, compile_ms, inductor_first, eager_run, inductor_run, ours_run, frozen_run))
            print(json.dumps(rows[-1]), flush=True)
    print()
    print(f"threads: {opts.threads}; ISA path: {dialect.isa()}")
    print()
    print("| model | graphs | dialect first call ms | of which export + decompose ms | of which dialect compile ms | Inductor first call ms | eager ms | Inductor ms | dialect ms | dialect, frozen ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.0f} | {r[3]:.0f} | {r[4]:.1f} | {r[5]:.0f} | {r[6]:.3f} | {r[7]:.3f} | {r[8]:.3f} | {r[9]:.3f} |")


if __name__ == "__main__":
    main()
