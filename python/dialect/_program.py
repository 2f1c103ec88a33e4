"""``Program``: a compiled program, callable like the model it came from."""

from __future__ import annotations

from . import _pytree, _tensors


class Program:
    """A compiled program. Call it like the model: ``program(*args, **kwargs)``.

    Inputs are ``torch.Tensor``\\ s, NumPy arrays and Python ints, floats and bools, nested as the
    program was exported; they are read in place, not copied. Outputs come back in the program's
    output pytree (tuples, lists, dicts, a HuggingFace ``ModelOutput`` when its class can be
    imported, else a dict of its fields), as ``torch.Tensor``\\ s when any input was one and as NumPy
    arrays otherwise, sharing the runtime's memory. The GIL is released while the program runs,
    so several Python threads may call one program at once.
    """

    def __init__(self, native):
        self._native = native
        self._in_spec = native.in_spec
        self._out_spec = native.out_spec
        self._descriptions = _tensors.DescriptionCache()

    def _flat_inputs(self, args, kwargs):
        leaves = _pytree.flatten_args(self._in_spec, args, kwargs)
        as_torch = any(_tensors.is_torch_tensor(x) for x in leaves) or any(
            isinstance(x, (list, tuple)) and any(_tensors.is_torch_tensor(t) for t in x) for x in leaves
        )
        return [self._descriptions.describe(i, x) for i, x in enumerate(leaves)], as_torch

    def __call__(self, *args, **kwargs):
        flat, as_torch = self._flat_inputs(args, kwargs)
        outs = self._native.run(flat)
        outs = [_tensors.convert_output(o, as_torch) for o in outs]
        return _pytree.unflatten(self._out_spec, outs)

    @property
    def inputs(self):
        """The user inputs as ``(name, type)`` pairs, in flat order."""
        return self._native.inputs

    def ir(self, stage: str = "backend", *, generic: bool = False) -> str:
        """The program's IR text at ``stage``: ``"as-imported"``, ``"edge"`` (decomposed and
        lowered to Edge) or ``"backend"`` (what runs: fused and partitioned at -O1 and up)."""
        return self._native.ir(stage, generic)

    def stats(self) -> dict:
        """Import, lowering and compile times, fusion groups, and what the JIT did so far."""
        return self._native.stats()

    def bench(self, *args, iters: int = 100, warmup: int = 5, **kwargs) -> dict:
        """Times ``iters`` calls on these inputs after ``warmup`` untimed ones, as
        ``dialect-run --bench`` does: median, p10 and p90 in ms, allocations per call, threads
        and the ISA path."""
        flat, _ = self._flat_inputs(args, kwargs)
        return self._native.bench(flat, iters, warmup)

    def __repr__(self):
        names = ", ".join(n for n, _ in self.inputs)
        return f"<dialect.Program ({names})>"
