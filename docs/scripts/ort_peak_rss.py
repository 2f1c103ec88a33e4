"""Peak memory of ONNX Runtime on zoo models, to set beside `dialect-run --bench`'s.

  python docs/scripts/ort_peak_rss.py export ../shared/zoo DIR NAME...   # core.pt2 -> DIR/NAME.onnx (needs torch)
  /usr/bin/time -v python docs/scripts/ort_peak_rss.py run ../shared/zoo DIR NAME [--threads T] [--iters K]

`run` imports only onnxruntime, NumPy and safetensors, so the process's peak RSS ("Maximum
resident set size" of `time -v`) is the runtime's, the model's and the inputs', not PyTorch's.
"""
import argparse, os, sys


def export(zoo, out_dir, names):
    import torch
    import torch.utils._pytree as pytree
    from safetensors.torch import load_file
    try:
        import transformers.modeling_outputs  # noqa: F401  (output specs name these classes)
    except ImportError:
        pass
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        d = os.path.join(zoo, name)
        io = load_file(os.path.join(d, "io.safetensors"))
        args = tuple(io[f"in.{i}"] for i in range(len([k for k in io if k.startswith("in.")])))
        ep = torch.export.load(os.path.join(d, "core.pt2"))
        cargs, ckw = pytree.tree_unflatten(list(args), ep.call_spec.in_spec)
        torch.onnx.export(ep, tuple(cargs), os.path.join(out_dir, f"{name}.onnx"), kwargs=ckw, dynamo=True, external_data=False)
        print(f"{name}: exported", file=sys.stderr)


def run(zoo, out_dir, name, threads, iters):
    import onnxruntime as ort
    from safetensors.numpy import load_file
    io = load_file(os.path.join(zoo, name, "io.safetensors"))
    args = [io[f"in.{i}"] for i in range(len([k for k in io if k.startswith("in.")]))]
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(os.path.join(out_dir, f"{name}.onnx"), so, providers=["CPUExecutionProvider"])
    feed = {i.name: x for i, x in zip(s.get_inputs(), args)}
    for _ in range(iters):
        s.run(None, feed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["export", "run"])
    ap.add_argument("zoo")
    ap.add_argument("dir")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--iters", type=int, default=50)
    a = ap.parse_args()
    if a.mode == "export":
        export(a.zoo, a.dir, a.names)
    else:
        for name in a.names:
            run(a.zoo, a.dir, name, a.threads, a.iters)


if __name__ == "__main__":
    main()
