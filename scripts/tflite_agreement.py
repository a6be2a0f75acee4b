#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How far another TFLite interpreter agrees with the outputs `tpu infer`
equals (docs/tflite.md, "Which TFLite"): the test models of
scripts/tflite_models.py (their y.npy are tflite-runtime 2.14.0's reference
kernels, which tpu infer matches bit for bit) run through the interpreter of
the Python this script runs under, sample by sample.

    <python with ai-edge-litert or tflite-runtime> scripts/tflite_agreement.py \\
        --models build/tflite [--resolver ref|builtin]

Not part of `make test`: LiteRT is not a dependency of the project.
"""

import argparse
import json
import os

import numpy as np


def interpreter_module():
    try:
        from ai_edge_litert import interpreter
        import ai_edge_litert
        return interpreter, "ai-edge-litert " + getattr(ai_edge_litert, "__version__", "?")
    except ImportError:
        from tflite_runtime import interpreter
        import tflite_runtime
        return interpreter, "tflite-runtime " + tflite_runtime.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="scripts/tflite_models.py's output directory")
    ap.add_argument("--resolver", choices=("ref", "builtin"), default="ref",
                    help="ref: the reference kernels (BUILTIN_REF); builtin: the optimized ones")
    args = ap.parse_args()
    mod, version = interpreter_module()
    resolver = mod.OpResolverType.BUILTIN_REF if args.resolver == "ref" else mod.OpResolverType.BUILTIN
    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    samples = values = same_samples = same_values = 0
    for name, entry in sorted(manifest.items()):
        if entry["kind"] != "valid":
            continue
        x = np.load(os.path.join(args.models, name + ".x.npy"))
        want = np.load(os.path.join(args.models, name + ".y.npy"))
        it = mod.Interpreter(model_path=os.path.join(args.models, name + ".tflite"),
                             experimental_op_resolver_type=resolver)
        it.allocate_tensors()
        (inp,), (out,) = it.get_input_details(), it.get_output_details()
        batch, got = inp["shape"][0], []
        for i in range(0, len(x), batch):
            it.set_tensor(inp["index"], x[i:i + batch])
            it.invoke()
            got.append(it.get_tensor(out["index"]).copy())
        got = np.concatenate(got)
        eq = got == want
        per_sample = eq.reshape(len(eq), -1).all(axis=1)
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64)).max()
        print(f"{name:24s} samples {per_sample.sum()}/{per_sample.size}  values {eq.sum()}/{eq.size}  "
              f"largest difference {diff:g}")
        samples += per_sample.size
        same_samples += per_sample.sum()
        values += eq.size
        same_values += eq.sum()
    print(f"{version}, {args.resolver} kernels: samples {same_samples}/{samples}, values {same_values}/{values} "
          "equal to tpu infer's outputs")


if __name__ == "__main__":
    main()
