"""The Python API: inputs of every kind, output pytrees, zero copies, IR stages, statistics,
benchmarks, errors, and one program called from several threads."""

from __future__ import annotations

import tempfile
import threading
import time

import numpy as np
import pytest

import dialect
from conftest import Case, assert_close, shared_dir

ADD_IR = """
func.func @forward(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %a: f64) -> tensor<2x3xf32> {
  %s = aten.add.Tensor %x, %y {alpha = 1 : i64} : tensor<2x3xf32>
  %m = aten.mul.Scalar %s, %a : (tensor<2x3xf32>, f64) -> tensor<2x3xf32>
  func.return %m : tensor<2x3xf32>
}
"""


FUSED_IR = """
func.func @forward(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %s = aten.add.Tensor %x, %y {alpha = 1 : i64} : tensor<2x3xf32>
  %m = aten.mul.Tensor %s, %x : tensor<2x3xf32>
  %t = aten.tanh %m : tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}
"""


def chain_ir(n: int, size: int) -> str:
    """A function of `n` chained square matrix products: long enough to run for a while."""
    t = f"tensor<{size}x{size}xf32>"
    lines = [f"func.func @forward(%x: {t}, %w: {t}) -> {t} {{"]
    prev = "%x"
    for i in range(n):
        lines.append(f"  %p{i} = aten.mm {prev}, %w : ({t}, {t}) -> {t}")
        prev = f"%p{i}"
    lines.append(f"  func.return {prev} : {t}")
    lines.append("}")
    return "\n".join(lines)


def test_ir_text_with_numpy_and_scalars():
    program = dialect.compile(ADD_IR, opt_level=0)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), dtype=np.float32)
    out = program(x, y, 0.5)
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, (x + y) * 0.5)


def test_numpy_views_and_foreign_layouts():
    program = dialect.compile(ADD_IR, opt_level=2)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = base[::2, ::2]  # strided view: read in place
    y = np.ascontiguousarray(base[1::2, 1::2][::-1])  # made contiguous by the caller
    yb = y.astype(">f4")  # big-endian: converted
    out = program(x, yb, 2.0)
    np.testing.assert_array_equal(out, (x + y) * 2.0)


def test_outputs_share_memory_with_the_runtime():
    program = dialect.compile(ADD_IR, opt_level=0)
    x = np.ones((2, 3), dtype=np.float32)
    native = program._native.run([dialect._tensors.describe(x), dialect._tensors.describe(x), 1.0])[0]
    array = np.asarray(native)
    assert array.__array_interface__["data"][0] == native.__array_interface__["data"][0]
    assert array.base is native


def test_torch_inputs_give_torch_outputs_without_copies():
    torch = pytest.importorskip("torch")
    program = dialect.compile(ADD_IR, opt_level=2)
    x = torch.randn(2, 3)
    y = torch.randn(2, 3)
    out = program(x, y, 3.0)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, (x + y) * 3.0)
    # The input's storage is read in place: its description points at the tensor's own memory.
    desc = dialect._tensors.describe(x)
    assert desc[1] == x.data_ptr()
    assert desc[0].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_bfloat16_round_trip():
    torch = pytest.importorskip("torch")
    ir = """
func.func @forward(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %y = aten.neg %x : tensor<4xbf16>
  func.return %y : tensor<4xbf16>
}
"""
    x = torch.tensor([1.5, -2.0, 0.25, 3.0], dtype=torch.bfloat16)
    out = dialect.compile(ir, opt_level=0)(x)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, -x)


def test_pytree_outputs_and_keyword_inputs():
    torch = pytest.importorskip("torch")
    case = Case(shared_dir("fixtures", "export", "multi_out"))
    program = dialect.load(case.dir / "model.pt2")
    out = program(*case.inputs)
    assert isinstance(out, dict) and list(out) == ["sum", "pair"]
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    eager = case.exported().module()(*case.inputs)
    assert_close(out["pair"][1][1], eager["pair"][1][1], 1e-5, 1e-6, "pair[1][1]")
    # NumPy inputs: NumPy outputs in the same tree.
    out_np = program(*[t.numpy() for t in case.inputs])
    assert isinstance(out_np["pair"][1][0], np.ndarray)


def test_keyword_arguments_follow_the_input_spec():
    case = Case(shared_dir("zoo", "hf_bert"))
    pytest.importorskip("torch")
    from conftest import require

    require("transformers")
    program = dialect.compile(case.exported())
    names = [n for n, _ in program.inputs]
    assert names == ["input_ids", "attention_mask"]
    kwargs = dict(zip(names, case.inputs))
    reversed_kwargs = dict(reversed(list(kwargs.items())))
    a = program(**kwargs)
    b = program(**reversed_kwargs)
    assert (a.last_hidden_state == b.last_hidden_state).all()
    with pytest.raises(dialect.DialectError, match="missing keyword argument 'attention_mask'"):
        program(input_ids=case.inputs[0])
    with pytest.raises(dialect.DialectError, match="unexpected keyword"):
        program(**kwargs, labels=case.inputs[0])


def test_stages_stats_and_bench():
    program = dialect.compile(FUSED_IR, opt_level=2)
    assert "aten.add.Tensor" in program.ir("as-imported")
    assert "edge." in program.ir("edge")
    backend = program.ir("backend")
    assert "func.func @forward" in backend
    assert '"func.func"' in program.ir("backend", generic=True)
    with pytest.raises(dialect.DialectError, match="unknown stage 'llvm'"):
        program.ir("llvm")
    x = np.ones((2, 3), dtype=np.float32)
    np.testing.assert_allclose(program(x, x), np.tanh((x + x) * x), rtol=1e-6)
    stats = program.stats()
    assert stats["backend"] == "jit"
    assert stats["fusion_groups"] >= 1 and stats["fusion_groups_compiled"] == stats["fusion_groups"]
    assert stats["native_calls"] >= 1
    assert stats["import_ms"] >= 0 and stats["compile_ms"] >= 0
    bench = program.bench(x, x, iters=10, warmup=1)
    assert bench["calls"] == 10
    assert 0 < bench["p10_ms"] <= bench["median_ms"] <= bench["p90_ms"]
    assert bench["isa"] == dialect.isa()


def test_errors_carry_the_diagnostic_and_its_location():
    with pytest.raises(dialect.DialectError, match=r"<string>:3:\d+"):
        dialect.compile("func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n  %y = aten.nosuchop %x : tensor<2xf32>\n}\n")
    with pytest.raises(FileNotFoundError):
        dialect.load("/nonexistent/model.pt2")
    with pytest.raises(dialect.DialectError, match="not a zip|zip"):
        dialect.compile(b"definitely not a zip archive", format="pt2")
    with pytest.raises(dialect.DialectError, match="unknown program format"):
        dialect.compile(ADD_IR, format="onnx")
    with pytest.raises(dialect.DialectError, match="opt_level"):
        dialect.compile(ADD_IR, opt_level=7)
    program = dialect.compile(ADD_IR, opt_level=0)
    x = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(dialect.DialectError, match="expected 3 input"):
        program(x, x)
    with pytest.raises(dialect.DialectError, match="does not match|shape|size"):
        program(np.ones((5, 3), dtype=np.float32), x, 1.0)
    with pytest.raises(dialect.DialectError, match="unsupported NumPy element type"):
        program(np.ones((2, 3), dtype=np.complex64), x, 1.0)
    with pytest.raises(TypeError):
        dialect.compile(42)


def test_exported_program_leaves_no_files_behind(monkeypatch):
    torch = pytest.importorskip("torch")
    case = Case(shared_dir("fixtures", "export", "mlp"))
    exported = case.exported()
    with tempfile.TemporaryDirectory() as scratch:
        monkeypatch.setenv("TMPDIR", scratch)
        monkeypatch.setattr(tempfile, "tempdir", scratch)
        program = dialect.compile(exported)
        out = program(*case.inputs)
        import os

        assert os.listdir(scratch) == []
    assert_close(out, case.expected()[0], case.rtol, case.atol, "mlp")
    assert isinstance(out, torch.Tensor)


def test_threads_share_one_program():
    rng = np.random.default_rng(0)
    program = dialect.compile(chain_ir(3, 64), opt_level=2, threads=1)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    inputs = [rng.standard_normal((64, 64)).astype(np.float32) for _ in range(8)]
    expected = [program(x, w) for x in inputs]
    failures = []

    def worker(offset):
        for k in range(50):
            i = (k + offset) % len(inputs)
            got = program(inputs[i], w)
            if not np.array_equal(got, expected[i]):
                failures.append((offset, k))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_the_gil_is_released_while_a_program_runs():
    # One call runs for a good while; another Python thread must run during it. With the GIL
    # held for the whole call, no iteration of that thread could fall inside the call's middle.
    program = dialect.compile(chain_ir(24, 512), opt_level=0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, 512)).astype(np.float32)
    w = (rng.standard_normal((512, 512)) / 23).astype(np.float32)
    program(x, w)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.01)
    start = time.perf_counter()
    program(x, w)
    end = time.perf_counter()
    stop.set()
    t.join()
    span = end - start
    middle = [x for x in ticks if start + 0.25 * span < x < end - 0.25 * span]
    assert span > 0.02, f"the call took only {span * 1e3:.1f} ms; make the program longer"
    assert middle, f"no other Python thread ran during a {span * 1e3:.0f} ms call"


def test_torch_compile_options():
    torch = pytest.importorskip("torch")
    import dialect.dynamo

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x):
            return torch.relu(self.lin(x)) * 2

    net = Net().eval()
    x = torch.randn(3, 8)
    torch._dynamo.reset()
    compiled = torch.compile(net, backend="dialect", options={"opt_level": 0, "threads": 2, "backend": "interp"})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), net(x))
    log = dialect.dynamo.compile_log[-1]
    assert log["stats"]["backend"] == "interp"
    # Frozen parameters: compiled in as constants, the program takes the input alone.
    torch._dynamo.reset()
    frozen = torch.compile(net, backend="dialect", options={"freeze": True})
    with torch.no_grad():
        torch.testing.assert_close(frozen(x), net(x))
        torch.testing.assert_close(frozen(2 * x), net(2 * x))
    log = dialect.dynamo.compile_log[-1]
    assert log["frozen"] == 2 and log["inputs"] == 1, log
    torch._dynamo.reset()
    bad = torch.compile(net, backend="dialect", options={"opt-level": 2})
    with pytest.raises(Exception, match="unknown torch.compile option"):
        bad(x)


def test_every_text_format_loads(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    # FX text (a graph without state or tensor types, so it runs as imported).
    case = Case(shared_dir("fixtures", "export", "pointwise"))
    fx = dialect.load(case.dir / "graph.fx.txt", opt_level=0)
    assert_close(fx(*case.inputs), case.expected()[0], case.rtol, case.atol, "pointwise from FX text")

    # TorchScript IR text, with scalar inputs as its calls recorded them.
    ts_dir = shared_dir("fixtures", "torchscript")
    meta = __import__("json").loads((ts_dir / "scalar_branch.meta.json").read_text())
    io = load_file(str(ts_dir / "scalar_branch.io.safetensors"))
    program = dialect.load(ts_dir / "scalar_branch.graph.txt", opt_level=0)
    for k, call in enumerate(meta["calls"]):
        scalars = {int(pos): v for pos, v in call["scalar_inputs"].items()}
        n = 1 + len(scalars)
        args = [scalars[i] if i in scalars else io[f"call{k}.in.{i}"] for i in range(n)]
        got = program(*args)
        outs = [io[key] for key in sorted(io) if key.startswith(f"call{k}.out.")]
        assert_close(got if isinstance(got, torch.Tensor) else got[0], outs[0], 1e-5, 1e-6, f"scalar_branch call {k}")

    # IR text from a file, and .pt2 bytes.
    ir_file = tmp_path / "fused.ir"
    ir_file.write_text(FUSED_IR)
    x = np.full((2, 3), 0.5, dtype=np.float32)
    np.testing.assert_allclose(dialect.load(ir_file)(x, x), np.tanh((x + x) * x), rtol=1e-6)
    raw = (case.dir / "model.pt2").read_bytes()
    from_bytes = dialect.compile(raw, format="pt2")
    assert_close(from_bytes(*case.inputs), case.expected()[0], case.rtol, case.atol, "pointwise from .pt2 bytes")


def test_a_program_archive_loads(tmp_path):
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    tool = root / "target" / "release" / "dialect-opt"
    if not tool.is_file():
        pytest.skip(f"{tool} is not built (cargo build --release builds it)")
    case = Case(shared_dir("fixtures", "export", "mlp"))
    archive = tmp_path / "mlp.dar"
    subprocess.run([str(tool), str(case.dir / "model.pt2"), "--emit-archive", str(archive), "-o", "/dev/null"], check=True)
    program = dialect.load(archive)
    assert_close(program(*case.inputs), case.expected()[0], case.rtol, case.atol, "mlp from a program archive")
