"""Exports the zoo's PyTorch models to ONNX at batch 1 with the weights as graph inputs.

    build/peers-venv/bin/python models/gen/export_onnx.py --out models/onnx [--models a,b]

writes models/onnx/<name>.infer.b1.onnx for each model: opset 17, PyTorch's TorchScript exporter
(dynamo=False) with export_params=False, so every weight is a graph input named as in the
module's state_dict and the files hold only the graph. Each file is checked with
onnx.checker and onnx.shape_inference, then run by onnxruntime with the torch weights fed as
inputs; a line per model gives the max abs difference from torch's output, and the exit status is
1 if one exceeds --tolerance relative to the output's largest magnitude. Rerunning writes the
same bytes. `export_with_weights(name, batch, directory)` writes the same graph with the weights
as initializers (for the timing peers in bench/peers/models.py; not committed).
"""

import argparse
import contextlib
import io
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models  # noqa: E402
from configs import MODELS  # noqa: E402

OPSET = 17


def export(name, batch, path, with_weights):
    """Writes model `name` at `batch` to `path`; returns (module, inputs) that were exported."""
    module, inputs = torch_models.make(name, batch)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module, inputs, path, dynamo=False, opset_version=OPSET, export_params=with_weights,
            do_constant_folding=with_weights, input_names=torch_models.INPUT_NAMES[name],
            output_names=["logits"])
    model = onnx.load(path)
    if normalize_constants(model):
        onnx.save(model, path)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return module, inputs


def normalize_constants(model, small=1024):
    """Rewrites the exporter's constants so that the files stay small and every peer imports them:
    a node whose inputs are all constants and whose outputs have fewer than `small` elements is
    evaluated (onnx.reference) into Constants (the exporter leaves such chains unfolded: F.pad's
    pad widths, which TVM's frontend needs constant, or a scalar ConstantOfShape, which it
    rejects); a Constant of at least `small` equal elements (the tracer turns torch.zeros of a
    static shape into one, 15 MB in graphsage) becomes a ConstantOfShape; Constants left unused
    are dropped. Returns how many nodes it rewrote."""
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    values, nodes, rewritten = {}, [], 0
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute[0].name == "value":
            value = numpy_helper.to_array(node.attribute[0].t)
            if value.size < small:
                values[node.output[0]] = value
            elif np.all(value == value.flat[0]):
                shape_name = node.output[0] + "_shape"
                nodes.append(helper.make_node(
                    "Constant", [], [shape_name], name=node.name + "_shape",
                    value=numpy_helper.from_array(np.array(value.shape, dtype=np.int64))))
                nodes.append(helper.make_node(
                    "ConstantOfShape", [shape_name], list(node.output), name=node.name,
                    value=numpy_helper.from_array(value.reshape(-1)[:1].copy())))
                rewritten += 1
                continue
            nodes.append(node)
            continue
        inputs = [i for i in node.input if i]
        foldable = (inputs and all(i in values for i in inputs) and node.domain in ("", "ai.onnx")
                    and not node.op_type.startswith("Random")
                    and not any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                for a in node.attribute))
        outputs = None
        if foldable:
            feeds = {i: values[i] for i in inputs}
            outputs = ReferenceEvaluator(node, opsets={"": OPSET}).run(None, feeds)
        if outputs is None or any(np.asarray(o).size >= small for o in outputs):
            nodes.append(node)
            continue
        for k, (name, value) in enumerate(zip(node.output, outputs)):
            value = np.asarray(value)
            values[name] = value
            nodes.append(helper.make_node(
                "Constant", [], [name], name=node.name if k == 0 else f"{node.name}_{k}",
                value=numpy_helper.from_array(value)))
        rewritten += 1
    if rewritten:
        used = {i for n in nodes for i in n.input} | {o.name for o in model.graph.output}
        del model.graph.node[:]
        model.graph.node.extend(n for n in nodes if n.op_type != "Constant" or n.output[0] in used)
    return rewritten


def export_with_weights(name, batch, directory):
    """Writes <directory>/<name>.infer.b<batch>.onnx with the weights as initializers."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{name}.infer.b{batch}.onnx")
    export(name, batch, path, with_weights=True)
    return path


def compare(path, module, inputs):
    """Max abs and relative difference between onnxruntime (weights fed as inputs) and torch."""
    import onnxruntime as ort

    with torch.inference_mode():
        expected = module(*inputs).numpy()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    state = {k: v.detach().numpy() for k, v in module.state_dict(keep_vars=True).items()}
    feeds = {}
    for i, arg in enumerate(session.get_inputs()):
        feeds[arg.name] = inputs[i].numpy() if i < len(inputs) else state[arg.name]
    got = session.run(None, feeds)[0]
    diff = float(np.abs(got - expected).max())
    return diff, diff / max(float(np.abs(expected).max()), 1e-30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="models/onnx", help="output directory")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names")
    parser.add_argument("--no-verify", action="store_true", help="skip the onnxruntime check")
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest accepted max abs difference / max abs torch output")
    args = parser.parse_args()
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {', '.join(MODELS)}")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for name in names:
        path = os.path.join(args.out, f"{name}.infer.b1.onnx")
        start = time.time()
        module, inputs = export(name, 1, path, with_weights=False)
        line = f"{name:13s} opset {OPSET}  {os.path.getsize(path) / 1024:8.1f} KiB"
        if not args.no_verify:
            diff, rel = compare(path, module, inputs)
            line += f"  ort vs torch: max abs diff {diff:.2e} (relative {rel:.2e})"
            if not rel <= args.tolerance:
                line += "  OVER TOLERANCE"
                failed.append(name)
        print(f"{line}  ({time.time() - start:.0f} s)", flush=True)
    if failed:
        sys.exit(f"onnxruntime differs from torch beyond --tolerance: {', '.join(failed)}")


if __name__ == "__main__":
    main()
