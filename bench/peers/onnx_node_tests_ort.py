"""ONNX Runtime on ONNX's backend node tests: the peer of bench/onnx_node_tests, same files, same rule.

    build/peers-venv/bin/python bench/peers/onnx_node_tests_ort.py [--dir D] [--failures]
        [--json FILE]

Each test folder holds model.onnx and test_data_set_*/input_N.pb, output_N.pb. A test passes when
onnxruntime (CPU provider, graph optimizations disabled as the ONNX backend test runner does)
reproduces every expected output as bench/onnx_node_tests compares them (frontends/onnx/conformance):
floats within atol 1e-7 + rtol 1e-3 of the expected value (NaN equals NaN), everything else
exactly, element type and shape equal. Sequence and optional inputs and outputs are read and
compared too (onnx.numpy_helper), since onnxruntime takes them.
"""

import argparse
import glob
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

ort.set_default_logger_severity(3)


def load_value(path, type_proto):
    """A test data file as the Python value onnxruntime takes for that input type."""
    with open(path, "rb") as f:
        data = f.read()
    kind = type_proto.WhichOneof("value") if type_proto is not None else "tensor_type"
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def same(got, want):
    """'' when got matches want under the harness's rule, else why not."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "sequence length differs"
        for g, w in zip(got, want):
            why = same(g, w)
            if why:
                return why
        return ""
    if want is None:
        return "" if got is None else "expected an empty optional"
    got = np.asarray(got)
    want = np.asarray(want)
    # ONNX 1.12 stores bfloat16 test data as uint16 bits.
    if got.dtype != want.dtype and not (want.dtype == np.uint16 and got.dtype.itemsize == 2):
        return f"element type {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype.kind == "f":
        ok = np.isclose(got, want, rtol=1e-3, atol=1e-7, equal_nan=True)
    elif want.dtype.kind in "OSU":
        ok = got == want
    else:
        ok = got.view(want.dtype) == want if got.dtype != want.dtype else got == want
    bad = int(np.size(ok) - np.count_nonzero(ok))
    return "" if bad == 0 else f"{bad} of {want.size} elements differ"


def run_test(folder):
    model = onnx.load(os.path.join(folder, "model.onnx"))
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - any refusal counts as unsupported
        return "unsupported", str(e).splitlines()[0][:200]
    for data_set in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        feeds = {}
        for k, vi in enumerate(inputs):
            path = os.path.join(data_set, f"input_{k}.pb")
            if os.path.exists(path):
                feeds[vi.name] = load_value(path, vi.type)
        try:
            got = session.run(None, feeds)
        except Exception as e:  # noqa: BLE001
            return "evaluation error", str(e).splitlines()[0][:200]
        for k, vo in enumerate(model.graph.output):
            path = os.path.join(data_set, f"output_{k}.pb")
            if not os.path.exists(path):
                continue
            why = same(got[k], load_value(path, vo.type))
            if why:
                return "mismatch", f"output {k}: {why}"
    return "pass", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    folders = sorted(d for d in glob.glob(os.path.join(args.dir, "*"))
                     if os.path.exists(os.path.join(d, "model.onnx")))
    rows, counts = [], {}
    for folder in folders:
        outcome, message = run_test(folder)
        counts[outcome] = counts.get(outcome, 0) + 1
        rows.append({"test": os.path.basename(folder), "outcome": outcome, "message": message})
        if outcome != "pass" and args.failures:
            print(f"{os.path.basename(folder):50s} {outcome:16s} {message}")
    passed = counts.get("pass", 0)
    print(f"onnxruntime {ort.__version__} on ONNX node tests ({args.dir}): {passed} of "
          f"{len(folders)} pass ({100.0 * passed / max(1, len(folders)):.1f}%)")
    for outcome, count in sorted(counts.items()):
        print(f"  {outcome:18s} {count}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"onnxruntime": ort.__version__, "total": len(folders), "passed": passed,
                       "tests": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
