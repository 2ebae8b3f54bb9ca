#!/usr/bin/env python3
"""Extracts the Kubernetes JSON schemas that tests/deploy/k8s_manifests_test needs.

Regenerates v1.29.0-local-strict/ here from the kubernetes-validate wheel (PyPI), which ships
"-local-strict" schemas made from Kubernetes' OpenAPI spec by openapi2jsonschema: one file per kind
whose "$ref"s point into _definitions.json. Kept: the kinds below and the definitions they reach;
dropped: "description" and the "x-kubernetes-*" annotations, which the validator ignores (they are
~70% of the bytes). Nothing else changes. Usage (no network needed once the wheel is downloaded):
  pip download kubernetes-validate==1.37.0 --no-deps -d /tmp/kv
  python3 tests/deploy/schemas/extract.py /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl
"""
import json
import os
import sys
import zipfile

VERSION = "v1.29.0-local-strict"
KINDS = ["namespace-v1", "secret-v1", "service-v1", "deployment-apps-v1", "daemonset-apps-v1"]
PREFIX = "kubernetes_validate/kubernetes-json-schema/" + VERSION + "/"


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items()
                if k != "description" and not k.startswith("x-kubernetes-")}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def refs(node, found):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.add(node["$ref"].rsplit("/", 1)[-1])
        for v in node.values():
            refs(v, found)
    elif isinstance(node, list):
        for v in node:
            refs(v, found)


def main(wheel):
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), VERSION)
    os.makedirs(out, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        definitions = json.loads(z.read(PREFIX + "_definitions.json"))
        kinds = {k: strip(json.loads(z.read(PREFIX + k + ".json"))) for k in KINDS}
    defs = definitions["$defs"]
    keep, todo = set(), set()
    for schema in kinds.values():
        refs(schema, todo)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        refs(defs[name], todo)
    definitions["$defs"] = {k: strip(defs[k]) for k in sorted(keep)}
    files = dict(kinds, _definitions=definitions)
    for name, schema in files.items():
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(schema, f, indent=1, sort_keys=True)
            f.write("\n")
    print(f"{out}: {len(kinds)} kinds, {len(keep)} definitions")


if __name__ == "__main__":
    main(sys.argv[1])
