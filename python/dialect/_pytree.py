"""Pytrees: flattening a call's arguments as the program's input spec says, and nesting its flat
outputs as the output spec says. Specs come from the native module as nested tuples:
``("leaf",)``, ``("none",)``, ``("tuple", [..])``, ``("list", [..])``, ``("dict", [(key, spec)])``,
``("other", type_name, context, [..])``.
"""

from __future__ import annotations

import importlib
import json

from ._native import DialectError


def flatten_args(spec, args, kwargs):
    """The flat leaves of ``(args, kwargs)`` in the order of ``spec``; without a spec (a program
    from text), the positional arguments, one per input (a list for a ``Tensor[]`` input)."""
    if spec is None or spec[0] != "tuple" or len(spec[1]) != 2:
        if kwargs:
            raise DialectError("this program takes positional inputs only")
        return list(args)
    args_spec, kwargs_spec = spec[1]
    out = []
    _flatten(args_spec, tuple(args), out, "args")
    if kwargs_spec[0] == "dict":
        names = [k for k, _ in kwargs_spec[1]]
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise DialectError(f"unexpected keyword argument(s) {', '.join(unknown)}; the program takes {names}")
        for key, sub in kwargs_spec[1]:
            if key not in kwargs:
                raise DialectError(f"missing keyword argument '{key}'")
            _flatten(sub, kwargs[key], out, key)
    elif kwargs:
        raise DialectError("this program takes no keyword arguments")
    return out


def _flatten(spec, x, out, where):
    kind = spec[0]
    if kind == "leaf":
        out.append(x)
    elif kind == "none":
        if x is not None:
            raise DialectError(f"{where}: expected None, got {type(x).__name__}")
    elif kind in ("tuple", "list"):
        if not isinstance(x, (tuple, list)) or len(x) != len(spec[1]):
            n = len(x) if isinstance(x, (tuple, list)) else "a " + type(x).__name__
            raise DialectError(f"{where}: expected {len(spec[1])} item(s), got {n}")
        for i, (sub, v) in enumerate(zip(spec[1], x)):
            _flatten(sub, v, out, f"{where}[{i}]")
    elif kind == "dict":
        if not isinstance(x, dict):
            raise DialectError(f"{where}: expected a dict, got {type(x).__name__}")
        for key, sub in spec[1]:
            if key not in x:
                raise DialectError(f"{where}: missing key {key!r}")
            _flatten(sub, x[key], out, f"{where}[{key!r}]")
    else:
        children = spec[3]
        values = list(x.values()) if isinstance(x, dict) else list(x)
        if len(values) != len(children):
            raise DialectError(f"{where}: expected {len(children)} field(s) of {spec[1]}, got {len(values)}")
        for i, (sub, v) in enumerate(zip(children, values)):
            _flatten(sub, v, out, f"{where}[{i}]")


def unflatten(spec, leaves):
    """Nests ``leaves`` as ``spec`` says; without a spec, one leaf is returned as it is and
    several as a tuple."""
    if spec is None:
        return leaves[0] if len(leaves) == 1 else tuple(leaves)
    return _build(spec, iter(leaves))


def _build(spec, it):
    kind = spec[0]
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(_build(s, it) for s in spec[1])
    if kind == "list":
        return [_build(s, it) for s in spec[1]]
    if kind == "dict":
        return {k: _build(s, it) for k, s in spec[1]}
    _, type_name, context, children = spec
    values = [_build(s, it) for s in children]
    return _rebuild_other(type_name, context, values)


def _rebuild_other(type_name, context, values):
    """A node of another type: its class (a HuggingFace ``ModelOutput``, a named tuple) when it
    can be imported, else a dict of its fields (or a tuple, when its fields have no names)."""
    keys = _context_keys(context, len(values))
    cls = _find_class(type_name)
    if cls is not None:
        try:
            if keys is not None:
                return cls(**dict(zip(keys, values)))
            return cls(*values)
        except Exception:
            pass
    if keys is not None:
        return dict(zip(keys, values))
    return tuple(values)


def _context_keys(context, n):
    try:
        keys = json.loads(context)
    except (TypeError, ValueError):
        return None
    if isinstance(keys, list) and len(keys) == n and all(isinstance(k, str) for k in keys):
        return keys
    return None


def _find_class(type_name):
    module_name, _, attr = type_name.rpartition(".")
    if not module_name:
        return None
    try:
        module = importlib.import_module(module_name)
    except Exception:
        return None
    return getattr(module, attr, None)
