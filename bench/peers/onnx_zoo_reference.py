"""ONNX Runtime's outputs on the zoo's ONNX exports, sampled, as the reference mltune must match.

    build/peers-venv/bin/python bench/peers/onnx_zoo_reference.py [--models a,b] [--out DIR]
        [--onnx-dir DIR] [--min-seconds S]

For each NAME.onnx of --onnx-dir (default models/onnx), writes DIR/NAME.json (default
models/onnx/reference/):
  inputs:  the recipe of every graph input, computed the same way by bench/onnx_zoo and
           tests/frontends/onnx_zoo_test (frontends/onnx/conformance): floats x[i] = bias + scale * sin(0.1 * i
           + k) (k the input's position; scale 0.5 / sqrt(fan-in), variances of batch norms 1 +
           0.25 sin), integers offset + (7 * i + 3) % modulus,
           the modulus the row count of the smallest table the input indexes (through Gather or
           ScatterElements indices, after ops that move values), else 1 with offset 1 (masks).
  outputs: per graph output its shape, type, element count, mean and largest magnitude, and 512
           values at evenly spaced flat indices (index i * count // 512).
  ort_ms:  onnxruntime's median latency on one thread, over at least --min-seconds of runs and
           5 runs (bench/onnx_zoo --ort compares it with mltune's in the same run).
"""

import argparse
import glob
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

ort.set_default_logger_severity(3)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = 512
# Ops through which an index tensor passes unchanged in meaning.
PASS_THROUGH = {"Slice", "Split", "Squeeze", "Unsqueeze", "Reshape", "Cast", "Transpose",
                "Identity", "Flatten", "Expand", "Concat"}


def table_rows(model, name, shapes):
    """The smallest row count of a table that `name` (transitively) indexes, or None."""
    consumers = {}
    for node in model.graph.node:
        for k, i in enumerate(node.input):
            consumers.setdefault(i, []).append((node, k))
    best, stack, seen = None, [name], set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        for node, k in consumers.get(v, []):
            rows = None
            if node.op_type == "Gather" and k == 1:
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                shape = shapes.get(node.input[0])
                rows = shape[axis] if shape else None
            elif node.op_type in ("ScatterElements", "GatherElements") and k in (1,):
                axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
                shape = shapes.get(node.input[0])
                rows = shape[axis] if shape else None
            elif node.op_type in PASS_THROUGH or (node.op_type == "Gather" and k == 0):
                stack.extend(o for o in node.output)
            if rows:
                best = rows if best is None else min(best, rows)
    return best


def recipe(model):
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    initializers = {t.name for t in model.graph.initializer}
    variances = {n.input[4] for n in model.graph.node
                 if n.op_type == "BatchNormalization" and len(n.input) > 4}
    out = []
    for k, vi in enumerate(i for i in model.graph.input if i.name not in initializers):
        tt = vi.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        entry = {"name": vi.name, "shape": [d.dim_value for d in tt.shape.dim],
                 "type": onnx.TensorProto.DataType.Name(tt.elem_type), "position": k}
        if np.issubdtype(dtype, np.integer):
            rows = table_rows(model, vi.name, shapes)
            entry.update({"modulus": rows or 1, "offset": 0 if rows else 1})
        else:
            # Weights at the scale of a trained layer's (0.5 / sqrt(fan-in)), so that the outputs
            # are not saturated or ill-conditioned; variances positive.
            dims = entry["shape"]
            fan_in = int(np.prod(dims[1:])) if len(dims) >= 2 else 1
            variance = vi.name in variances
            entry.update({"scale": 0.25 if variance else 0.5 / np.sqrt(fan_in),
                          "bias": 1.0 if variance else 0.0})
        out.append(entry)
    return out


def make_input(entry):
    dtype = onnx.helper.tensor_dtype_to_np_dtype(onnx.TensorProto.DataType.Value(entry["type"]))
    n = int(np.prod(entry["shape"])) if entry["shape"] else 1
    i = np.arange(n, dtype=np.int64)
    if "modulus" in entry:
        v = entry["offset"] + (7 * i + 3) % entry["modulus"]
    else:
        v = entry["bias"] + entry["scale"] * np.sin(0.1 * i.astype(np.float64) + entry["position"])
    return v.astype(dtype).reshape(entry["shape"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="")
    parser.add_argument("--out", default=os.path.join(ROOT, "models", "onnx", "reference"))
    parser.add_argument("--onnx-dir", default=os.path.join(ROOT, "models", "onnx"))
    parser.add_argument("--min-seconds", type=float, default=2.0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    wanted = set(filter(None, args.models.split(",")))
    for path in sorted(glob.glob(os.path.join(args.onnx_dir, "*.onnx"))):
        name = os.path.basename(path)[:-len(".onnx")]
        if wanted and name.split(".")[0] not in wanted:
            continue
        model = onnx.load(path)
        inputs = recipe(model)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feeds = {e["name"]: make_input(e) for e in inputs}
        outputs = session.run(None, feeds)
        times = []
        while len(times) < 5 or (sum(times) < args.min_seconds and len(times) < 200):
            start = time.perf_counter()
            session.run(None, feeds)
            times.append(time.perf_counter() - start)
        result = {"model": os.path.basename(path), "onnxruntime": ort.__version__,
                  "inputs": inputs, "ort_ms": 1e3 * statistics.median(times), "outputs": []}
        for vo, value in zip(model.graph.output, outputs):
            flat = np.asarray(value).reshape(-1)
            count = flat.size
            idx = [i * count // SAMPLES for i in range(min(SAMPLES, count))]
            result["outputs"].append({
                "name": vo.name, "shape": list(np.shape(value)), "dtype": str(flat.dtype),
                "count": count, "mean": float(np.mean(flat)) if count else 0.0,
                "max_abs": float(np.max(np.abs(flat))) if count else 0.0,
                "indices": idx, "values": [float(flat[i]) for i in idx]})
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump(result, f, indent=1)
        print(f"{name}: {len(outputs)} outputs, ort {result['ort_ms']:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
