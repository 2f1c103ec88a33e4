"""The ``torch.compile`` backend: ``torch.compile(model, backend="dialect")``.

Dynamo captures each graph and calls :func:`backend` with it and example inputs. The backend
exports the graph for inference (``torch.export``, whose tracing is AOT autograd's, under
``torch.no_grad``), lowers it to core ATen with PyTorch's own decomposition table
(``run_decompositions``), serializes it in memory with ``torch.export.save`` and hands the bytes to
the same importer that reads ``.pt2`` files. Graph breaks, guards and recompiles stay Dynamo's;
each graph it captures is compiled here once.

Options go through ``torch.compile(..., options={...})``: ``opt_level`` (default 2), ``threads``
(default 1), ``backend`` (``"jit"`` or ``"interp"``) and ``freeze`` (default ``False``). Dynamo
passes a model's parameters to the graph on every call; with ``freeze=True`` they are read once,
at compile time, and compiled in as constants (so linear layers use weights packed once), as
Inductor's freezing does: later changes to the parameters are not seen.
"""

from __future__ import annotations

import itertools
import time

from . import _native
from ._program import Program
from . import serialize

_graph_ids = itertools.count()

#: One entry per graph compiled in this process: ``{"graph", "inputs", "frozen", "export_ms",
#: "compile_ms", "stats"}`` (``inputs``: the compiled program's inputs; ``frozen``: the graph
#: inputs compiled in as constants).
compile_log: list[dict] = []


def backend_with(**options):
    """The backend with options fixed: ``torch.compile(m, backend=backend_with(threads=2))``."""

    def configured(gm, example_inputs):
        return backend(gm, example_inputs, options=options)

    return configured


def backend(gm, example_inputs, options: dict | None = None, **kwargs):
    """Compiles one Dynamo graph; returns a callable with the graph's calling convention."""
    import torch

    options = dict(options or {})
    opt_level = int(options.pop("opt_level", 2))
    threads = int(options.pop("threads", 1))
    fusion = options.pop("backend", None)
    freeze = bool(options.pop("freeze", False))
    if options:
        raise _native.DialectError(f"unknown torch.compile option(s) for backend 'dialect': {sorted(options)}")
    for x in example_inputs:
        if not isinstance(x, (torch.Tensor, int, float, bool)):
            raise _native.DialectError(f"a graph input of type {type(x).__name__} is not supported")
    graph = next(_graph_ids)
    frozen = [i for i, x in enumerate(example_inputs) if freeze and isinstance(x, torch.nn.Parameter)]
    if frozen:
        module = _Frozen(gm, example_inputs, frozen)
        traced_inputs = [x for i, x in enumerate(example_inputs) if i not in frozen]
    else:
        module, traced_inputs = gm, list(example_inputs)
    t0 = time.perf_counter()
    with torch.no_grad():
        exported = torch.export.export(module, tuple(traced_inputs), strict=False)
        exported = exported.run_decompositions()
    data = serialize(exported)
    t1 = time.perf_counter()
    program = Program(_native.compile_bytes(data, "pt2", f"<dynamo graph {graph}>", opt_level, threads, fusion))
    t2 = time.perf_counter()
    compile_log.append({"graph": graph, "inputs": len(program.inputs), "frozen": len(frozen), "export_ms": (t1 - t0) * 1e3, "compile_ms": (t2 - t1) * 1e3, "stats": program.stats()})

    if frozen:
        skip = set(frozen)

        def run(*args):
            return program(*[x for i, x in enumerate(args) if i not in skip])

    else:

        def run(*args):
            return program(*args)

    run.program = program
    return run


def _Frozen(gm, example_inputs, frozen):
    """A module running the Dynamo graph ``gm`` with the inputs at positions ``frozen`` bound to
    copies of their example tensors, held as its parameters (which ``torch.export`` then stores
    with the program); it takes the other inputs in order."""
    import torch

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm
            self.n = len(example_inputs)
            self.names = {}
            for i in frozen:
                self.names[i] = f"frozen_{i}"
                self.register_parameter(self.names[i], torch.nn.Parameter(example_inputs[i].detach(), requires_grad=False))

        def forward(self, *dynamic):
            rest = iter(dynamic)
            args = [getattr(self, self.names[i]) if i in self.names else next(rest) for i in range(self.n)]
            return self.gm(*args)

    return Frozen()
