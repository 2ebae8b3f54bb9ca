"""Writes the model zoo: for every model of configs.MODELS, the HLO that XLA receives and XLA CPU's
optimized module, for inference at each of INFER_BATCHES and for one training step; XLA's module
after each pass for PASS_DUMPS; and models/manifest.json. Run through scripts/zoo.

    python models/gen/zoo.py --out models [--models gpt2,bert] [--jobs 2]

Deterministic: weights never enter the HLO (they are parameters), metadata is not dumped, gzip files
carry no timestamp."""

import argparse
import concurrent.futures
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from configs import INFER_BATCHES, MODELS  # noqa: E402

# (model, variant) whose module after every XLA pass is kept, to check mltune's passes against
# XLA's own (inference only: a training step's dumps are ten times larger).
PASS_DUMPS = {("gpt2", "infer.b1"), ("bert", "infer.b1"), ("resnet50", "infer.b1")}
# Files larger than this are written gzip-compressed (the parser reads .hlo.gz).
GZIP_ABOVE = 1 << 20
INSTRUCTION = re.compile(r"^\s+(ROOT\s+)?[%\w.\-]+\s*=\s*")


def variants(name):
    """(variant id, batch, step) of one model: inference at every batch, one training step."""
    out = [(f"infer.b{b}", b, "infer") for b in INFER_BATCHES]
    out.append((f"train.b{MODELS[name]['train_batch']}", MODELS[name]["train_batch"], "train"))
    return out


def instruction_count(text):
    """HLO instructions in all computations, parameters excluded (docs/search.md, "op count")."""
    return sum(1 for line in text.splitlines()
               if INSTRUCTION.match(line) and " parameter(" not in line)


def write_text(path_stem, text, always_gzip=False):
    """Writes `text` as path_stem.hlo, or path_stem.hlo.gz when large; returns the file name."""
    data = text.encode()
    if always_gzip or len(data) > GZIP_ABOVE:
        path = path_stem + ".hlo.gz"
        with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", filename="", mtime=0) as g:
            g.write(data)
    else:
        path = path_stem + ".hlo"
        with open(path, "wb") as f:
            f.write(data)
    return path


def emit(name, variant, batch, step, dump_dir):
    """Child process: lowers and compiles one step with XLA's dump flags set by the parent, and
    prints its cost analysis as JSON."""
    import jax
    import jax_models

    m = jax_models.make(name, batch, abstract=True)
    if step == "infer":
        lowered = jax.jit(m.infer).lower(m.variables, *m.inputs)
    else:
        lowered = jax.jit(m.train_step).lower(m.variables, m.opt_state, *m.inputs, *m.labels)
    cost = lowered.compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    print(json.dumps({"flops": float(cost.get("flops", 0.0)),
                      "parameters": m.parameter_count()}))


def generate(name, variant, batch, step, out):
    """Runs one child with its own dump folder and moves its modules into the zoo."""
    dump = tempfile.mkdtemp(prefix=f"zoo-{name}-{variant}-")
    flags = ["--xla_dump_to=" + dump, "--xla_dump_hlo_as_text", "--xla_dump_disable_metadata=true"]
    per_pass = (name, variant) in PASS_DUMPS
    if per_pass:
        flags.append("--xla_dump_hlo_pass_re=.*")
    env = dict(os.environ, XLA_FLAGS=" ".join(flags), JAX_PLATFORMS="cpu")
    cmd = [sys.executable, __file__, "--emit", name, variant, str(batch), step]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} {variant}: {proc.stderr[-2000:]}")
    cost = json.loads(proc.stdout.strip().splitlines()[-1])
    module = "jit_infer" if step == "infer" else "jit_train_step"
    [before] = glob.glob(os.path.join(dump, f"module_*.{module}.before_optimizations.txt"))
    [after] = glob.glob(os.path.join(dump, f"module_*.{module}.cpu_after_optimizations.txt"))
    stem = os.path.join(out, "hlo", f"{name}.{variant}")
    entry = {"batch": batch, "step": step, "flops": cost["flops"]}
    for kind, path in (("before", before), ("after", after)):
        text = open(path).read()
        entry[f"{kind}_xla"] = os.path.relpath(write_text(f"{stem}.{kind}", text), out)
        entry[f"instructions_{kind}_xla"] = instruction_count(text)
    if per_pass:
        pass_dir = os.path.join(out, "passes", f"{name}.{variant}")
        os.makedirs(pass_dir, exist_ok=True)
        files = sorted(glob.glob(os.path.join(dump, f"module_*.{module}.[0-9][0-9][0-9][0-9].*.txt")))
        for path in files:
            # module_0004.jit_infer.0008.simplification.after_algsimp.before_simplify-sorts.txt
            parts = os.path.basename(path)[: -len(".txt")].split(".")[2:]
            parts = [p for p in parts if not p.startswith("before_")]
            write_text(os.path.join(pass_dir, ".".join(parts)), open(path).read(), True)
        entry["passes_xla"] = os.path.relpath(pass_dir, out)
        entry["pass_dumps"] = len(files)
    shutil.rmtree(dump)
    return name, variant, entry, cost["parameters"]


def record_onnx(entry, out, name):
    """Adds the model's ONNX export (models/gen/export_onnx.py) to its manifest entry."""
    import onnx
    path = os.path.join(out, "onnx", f"{name}.infer.b1.onnx")
    if not os.path.exists(path):
        return
    model = onnx.load(path)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    entry["onnx"] = {"file": os.path.relpath(path, out), "framework": "pytorch", "batch": 1,
                     "opset": opset, "nodes": len(model.graph.node),
                     "weights": "graph inputs (export_params=False), not initializers"}


def versions():
    import flax
    import jax
    import jaxlib
    import onnx
    import optax
    import torch
    import torchvision
    import transformers
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "flax": flax.__version__,
            "optax": optax.__version__, "torch": torch.__version__,
            "torchvision": torchvision.__version__, "transformers": transformers.__version__,
            "onnx": onnx.__version__}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--emit":
        emit(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], None)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    names = args.models.split(",")
    for sub in ("hlo", "passes"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    for name in names:  # a model is regenerated whole: stale files of it go first
        for path in glob.glob(os.path.join(args.out, "hlo", f"{name}.*")):
            os.remove(path)
        for path in glob.glob(os.path.join(args.out, "passes", f"{name}.*")):
            shutil.rmtree(path)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.exists(manifest_path) else {}
    manifest.setdefault("models", {})
    manifest["generator"] = {"command": "scripts/zoo", "framework": versions(),
                             "weights": "random, seeded (configs.SEED); weights are HLO "
                                        "parameters, never constants"}
    jobs = [(n, *v) for n in names for v in variants(n)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: generate(*j, args.out), jobs))
    for name in names:
        cfg = MODELS[name]
        manifest["models"][name] = {
            "framework": "jax/flax", "command": f"scripts/zoo --models {name}",
            "description": cfg["description"], "role": cfg["role"],
            "reduced": cfg["reduced"], "config": {k: v for k, v in cfg.items()
                                                  if k not in ("description", "reduced", "role")},
            "variants": {}}
    for name, entry in manifest["models"].items():  # models not regenerated keep their files
        if name in MODELS:
            entry["role"] = MODELS[name]["role"]
    for name in names:
        record_onnx(manifest["models"][name], args.out, name)
    for name, variant, entry, parameters in results:
        manifest["models"][name]["parameters"] = parameters
        manifest["models"][name]["variants"][variant] = entry
        print(f"{name:14s} {variant:9s} {entry['instructions_before_xla']:7d} -> "
              f"{entry['instructions_after_xla']:6d} instructions, {entry['flops'] / 1e9:8.2f} "
              "GFLOP", flush=True)
    manifest["models"] = dict(sorted(manifest["models"].items()))
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
