"""Every exported program of the corpus and every zoo model, compiled from Python three ways —
a path, an ``ExportedProgram``, ``torch.compile(backend="dialect")`` — matches PyTorch."""

from __future__ import annotations

import pytest

from conftest import Case, assert_close, fixture_names, leaves, needs_transformers, shared_dir

torch = pytest.importorskip("torch")
import dialect  # noqa: E402
import dialect.dynamo  # noqa: E402

FIXTURES = fixture_names("fixtures", "export")
ZOO = fixture_names("zoo")


def check_outputs(case: Case, got, call: int = 0, what: str = ""):
    want = case.expected(call)
    flat = leaves(got)
    assert len(flat) == len(want), f"{what}: {len(flat)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(flat, want)):
        assert_close(g, w, case.rtol, case.atol, f"{what} out.{i}")


def run_calls(case: Case, fn, args, kwargs, what):
    calls = case.meta.get("calls", 1)
    for call in range(calls):
        check_outputs(case, fn(*args, **kwargs), call, f"{what} call {call + 1}")


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("opt_level", [0, 2])
def test_fixture_from_path(name, opt_level):
    case = Case(shared_dir("fixtures", "export", name))
    program = dialect.load(case.dir / "model.pt2", opt_level=opt_level)
    args, kwargs = case.call_args(program)
    run_calls(case, program, args, kwargs, f"{name} -O{opt_level}")


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_exported_program(name):
    case = Case(shared_dir("fixtures", "export", name))
    program = dialect.compile(case.exported())
    args, kwargs = case.call_args(program)
    run_calls(case, program, args, kwargs, name)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_torch_compile(name):
    case = Case(shared_dir("fixtures", "export", name))
    module = case.exported().module()
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="dialect")
    args, kwargs = case.call_args(dialect.compile(case.exported(), opt_level=0))
    before = len(dialect.dynamo.compile_log)
    run_calls(case, compiled, args, kwargs, name)
    assert len(dialect.dynamo.compile_log) > before, "the backend compiled no graph"


@pytest.mark.parametrize("name", ZOO)
def test_zoo_exported_program(name):
    needs_transformers(name)
    case = Case(shared_dir("zoo", name))
    program = dialect.compile(case.exported())
    args, kwargs = case.call_args(program)
    got = program(*args, **kwargs)
    check_outputs(case, got, what=name)
    eager = case.exported().module()(*args, **kwargs)
    assert type(got) is type(eager), f"{name}: output is a {type(got).__name__}, PyTorch's a {type(eager).__name__}"


@pytest.mark.parametrize("name", ZOO)
@pytest.mark.parametrize("freeze", [False, True])
def test_zoo_torch_compile(name, freeze):
    needs_transformers(name)
    case = Case(shared_dir("zoo", name))
    module = case.exported().module()
    args, kwargs = case.call_args(dialect.compile(case.exported(), opt_level=0))
    eager = module(*args, **kwargs)
    torch._dynamo.reset()
    compiled = torch.compile(module, backend="dialect", options={"freeze": freeze})
    got = compiled(*args, **kwargs)
    check_outputs(case, got, what=name)
    for i, (g, e) in enumerate(zip(leaves(got), leaves(eager))):
        assert_close(g, e, case.rtol, case.atol, f"{name} against eager, out.{i}")
