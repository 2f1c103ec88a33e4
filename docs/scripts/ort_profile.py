"""Where ONNX Runtime spends its time on a zoo model: its own per-node profile, summed by op type.

  python docs/scripts/ort_peak_rss.py export ../shared/zoo DIR NAME   # the ONNX file, once
  python docs/scripts/ort_profile.py ../shared/zoo DIR NAME [--threads T] [--runs K]

Prints the microseconds a run of each op type (`Conv`, `Gemm`, `Reshape`, ...) and of the
slowest nodes, from `SessionOptions.enable_profiling`, after warm-up runs without profiling.
"""
import argparse, collections, json, os, tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("zoo"); ap.add_argument("onnx_dir"); ap.add_argument("name")
    ap.add_argument("--threads", type=int, default=1); ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    import onnxruntime as ort
    from safetensors.numpy import load_file
    io = load_file(os.path.join(a.zoo, a.name, "io.safetensors"))
    args = [io[f"in.{i}"] for i in range(len([k for k in io if k.startswith("in.")]))]
    path = os.path.join(a.onnx_dir, f"{a.name}.onnx")

    def session(profile):
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if profile:
            so.enable_profiling = True
            so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), a.name)
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    s = session(False)
    feed = {i.name: x for i, x in zip(s.get_inputs(), args)}
    for _ in range(50):
        s.run(None, feed)
    s = session(True)
    for _ in range(50 + a.runs):
        s.run(None, feed)
    events = json.load(open(s.end_profiling()))
    by_type, by_node, runs = collections.defaultdict(float), collections.defaultdict(float), 0
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_type[e["args"]["op_name"]] += e["dur"]
            by_node[e["name"][: -len("_kernel_time")]] += e["dur"]
        if e.get("cat") == "Session" and e["name"] == "model_run":
            runs += 1
    total = sum(by_type.values())
    print(f"{a.name}: {runs} runs, {total / runs:.1f} us a run in nodes")
    for k, v in sorted(by_type.items(), key=lambda x: -x[1]):
        print(f"  {k:24s} {v / runs:9.1f} us {100 * v / total:5.1f} %")
    print("slowest nodes:")
    for k, v in sorted(by_node.items(), key=lambda x: -x[1])[: int(os.environ.get("ORT_NODES", "15"))]:
        print(f"  {k:48s} {v / runs:9.1f} us")


if __name__ == "__main__":
    main()
