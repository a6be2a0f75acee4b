#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Keras CNN for the digits, full-int8 TFLite, on the simulated TPU (`make demo`'s second part).

The model, demo/digits_cnn.tflite, is committed (demo/make_digits_cnn.py trained and
converted it with TensorFlow; neither TensorFlow nor training is needed here):
conv 3x3 SAME 8 ReLU -> max pool 2x2 -> conv 3x3 VALID 16 ReLU -> flatten -> FC 10,
int8 input and output, weights per output channel.

1. Loads scikit-learn's 8x8 digits with the split of demo/digits_mlp.py (stratified
   75/25, random_state 0) and quantizes the test images into the model's int8 input
   with its scale and zero point (read by the reference interpreter):
   clamp(round(pixel / 16 / scale) + zero_point), shape (samples, 8, 8, 1).
2. Runs `tpu infer` on the simulated TPU: the convolutions and the FC layer on the
   device, pooling and the reshape on the host.
3. Runs the same int8 inputs through TFLite's reference kernels (tflite-runtime with
   OpResolverType.BUILTIN_REF, one sample per invoke) in the reference Python of
   .venv-tflite (`make setup` makes it; it needs numpy 1): this script started again
   there with --reference-worker.
4. Prints both accuracies, how many samples and logits are equal, the cycles per
   inference, the MXU utilization and a table of the layers.

Exits 1 if the tool or the reference fails, or if any logit of the TPU differs from the
reference's: they must be equal bit for bit.

    python3 demo/digits_cnn.py [--tpu build/bin/tpu] [--config default] [--workdir build/demo]
                               [--model demo/digits_cnn.tflite] [--batch 512]
                               [--reference-python .venv-tflite/bin/python]
"""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from tpu_tool import DemoError, run_tool, short

REPO = Path(__file__).resolve().parent.parent
SEED = 0                       # the split of demo/digits_mlp.py
PIXEL_MAX = 16.0               # load_digits pixels are 0..16
NAME = "digits_cnn"




# ---------------------------------------------------------------------------
# The reference worker: runs under the reference Python (tflite-runtime, numpy 1),
# started by this script as `python digits_cnn.py --reference-worker ...`.

def reference_worker(mode, model, x_path=None, y_path=None):
    from tflite_runtime import interpreter as tfl

    interp = tfl.Interpreter(model_path=model,
                             experimental_op_resolver_type=tfl.OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    inputs, outputs = interp.get_input_details(), interp.get_output_details()
    if len(inputs) != 1 or len(outputs) != 1:
        raise SystemExit(f"{model}: {len(inputs)} inputs and {len(outputs)} outputs, expected 1 and 1")
    inp, out = inputs[0], outputs[0]
    if mode == "info":
        def desc(d):
            scale, zero_point = d["quantization"]
            return {"name": d["name"], "dtype": np.dtype(d["dtype"]).name,
                    "shape": [int(v) for v in d["shape"]],
                    "scale": float(scale), "zero_point": int(zero_point)}
        print(json.dumps({"input": desc(inp), "output": desc(out)}))
        return 0
    x = np.load(x_path)
    if x.dtype != inp["dtype"] or tuple(x.shape[1:]) != tuple(inp["shape"][1:]):
        raise SystemExit(f"{x_path} is {x.dtype} {x.shape}; the model takes {np.dtype(inp['dtype']).name} "
                         f"samples of shape {tuple(inp['shape'][1:])}")
    y = np.empty((len(x),) + tuple(out["shape"][1:]), dtype=out["dtype"])
    for i in range(len(x)):                   # batches of 1: the model's own input shape
        interp.set_tensor(inp["index"], x[i:i + 1])
        interp.invoke()
        y[i] = interp.get_tensor(out["index"])[0]
    np.save(y_path, y)
    return 0


def run_reference(python, *args):
    """This script's --reference-worker under the reference Python; returns its stdout."""
    if not Path(python).is_file():
        raise DemoError(f"the reference Python {short(python)} is missing: run make setup "
                        f"(it makes .venv-tflite with tflite-runtime)")
    cmd = [str(python), str(Path(__file__).resolve()), "--reference-worker", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        raise DemoError(f"the TFLite reference failed (exit status {proc.returncode}): "
                        f"{err[-1] if err else 'no message'}"
                        + (" (run make setup)" if "No module named" in proc.stderr else ""))
    return proc.stdout


# ---------------------------------------------------------------------------
# Data.

def test_split():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    _, x_te, _, y_te = train_test_split(
        digits.data, digits.target, test_size=0.25, stratify=digits.target, random_state=SEED)
    return (x_te / PIXEL_MAX).astype(np.float32).reshape(-1, 8, 8, 1), y_te


def quantize(x, scale, zero_point):
    """TFLite's AffineQuantize: round(x / scale) half away from zero (in float32), + zp, clamped."""
    v = np.asarray(x, dtype=np.float32) / np.float32(scale)
    r = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))
    return np.clip(r.astype(np.int64) + int(zero_point), -128, 127).astype(np.int8)


# ---------------------------------------------------------------------------
# The TPU run.

def run_tpu(tpu, config, transport, model, x_path, y_path, stats_path, batch):
    cmd = [str(tpu), "--config", config] + (["--transport", transport] if transport else []) + [
        "infer", "--model", str(model), "--x", str(x_path), "--out", str(y_path),
        "--stats-json", str(stats_path), "--batch", str(batch)]
    return run_tool(cmd, "infer", y_path, stats_path)


# ---------------------------------------------------------------------------
# The report.

def fmt_int(v):
    return f"{v:,}" if isinstance(v, int) else "?"


def fmt_pct(v):
    return f"{v:.1%}" if isinstance(v, (int, float)) else "?"


def layer_table(stats):
    layers = stats.get("layers")
    if not isinstance(layers, list) or not layers:
        return ["  (the statistics list no layers)"]
    total = stats.get("cycles") if isinstance(stats.get("cycles"), int) else 0
    lines = [f"  {'op':>3}  {'operator':<18} {'layer':<10} {'where':<5} {'cycles':>12} {'share':>6} "
             f"{'MACs':>10} {'utilization':>11} {'array':>6}"]
    for l in layers:
        cycles = l.get("cycles")
        share = fmt_pct(cycles / total) if isinstance(cycles, int) and total else ""
        tpu = l.get("where") == "tpu"
        lines.append(f"  {l.get('op_index', '?'):>3}  {str(l.get('op', '?')):<18} {str(l.get('kind', '?')):<10} "
                     f"{str(l.get('where', '?')):<5} {fmt_int(cycles) if tpu else '':>12} {share if tpu else '':>6} "
                     f"{fmt_int(l.get('macs')) if tpu else '':>10} "
                     f"{fmt_pct(l.get('utilization')) if tpu else '':>11} "
                     f"{fmt_pct(l.get('array_utilization')) if tpu else '':>6}".rstrip())
    return lines


def compare(y, ref, labels):
    """Accuracies and agreement of the TPU's int8 outputs with the reference's."""
    if y.dtype != ref.dtype or y.shape != ref.shape:
        raise DemoError(f"TPU outputs are {y.dtype} {y.shape}, expected {ref.dtype} {ref.shape} "
                        f"(the reference's)")
    same = y == ref
    rows_same = np.all(same.reshape(len(y), -1), axis=1)
    return dict(acc_tpu=float(np.mean(np.argmax(y, axis=1) == labels)),
                acc_ref=float(np.mean(np.argmax(ref, axis=1) == labels)),
                samples_same=int(rows_same.sum()), samples=len(y),
                values_same=int(same.sum()), values=int(same.size),
                first_diff=None if rows_same.all() else int(np.argmin(rows_same)))


def report(c, stats, y, ref):
    samples = stats.get("samples") if isinstance(stats.get("samples"), int) else c["samples"]
    cycles = stats.get("cycles")
    per = f"{cycles / samples:,.1f}" if isinstance(cycles, int) and samples else "?"
    rows = [
        ("TPU accuracy", f"{c['acc_tpu']:.2%}"),
        ("TFLite reference accuracy", f"{c['acc_ref']:.2%}"),
        ("samples with all logits equal", f"{c['samples_same']}/{c['samples']}"),
        ("logits equal", f"{c['values_same']}/{c['values']}"),
        ("device cycles", fmt_int(cycles)),
        ("cycles per inference", per),
        ("MXU utilization (MACs)", fmt_pct(stats.get("utilization"))),
        ("array utilization (padding)", fmt_pct(stats.get("array_utilization"))),
        ("commands", fmt_int(stats.get("commands"))),
    ]
    print()
    for name, value in rows:
        print(f"  {name + ':':<31} {value:>16}")
    print()
    for line in layer_table(stats):
        print(line)
    print()
    if c["first_diff"] is not None:
        i = c["first_diff"]
        classes = np.flatnonzero(y[i] != ref[i]).tolist()
        raise DemoError(f"{c['samples'] - c['samples_same']} of {c['samples']} samples differ "
                        f"({c['values'] - c['values_same']} of {c['values']} logits); first is sample {i} "
                        f"(classes {classes}):\n  TPU    {y[i].tolist()}\n  TFLite {ref[i].tolist()}")
    print(f"{NAME}: PASS, TPU outputs equal TFLite's reference kernels bit for bit "
          f"({c['values']} logits)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tpu", default=str(REPO / "build/bin/tpu"), help="the tpu tool")
    ap.add_argument("--config", default="default", help="TPU configuration (tiny|small|default|wide)")
    ap.add_argument("--transport", default=None,
                    help="the tool's transport: sim (the RTL, the tool's default) or model")
    ap.add_argument("--workdir", default=str(REPO / "build/demo"), help="where the inputs and outputs go")
    ap.add_argument("--model", default=str(REPO / "demo/digits_cnn.tflite"), help="the full-int8 .tflite model")
    ap.add_argument("--batch", type=int, default=512, help="samples per `tpu infer` batch (the 450 test samples in one)")
    ap.add_argument("--reference-python", default=str(REPO / ".venv-tflite/bin/python"),
                    help="a Python with tflite-runtime (made by make setup)")
    ap.add_argument("--reference-worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.reference_worker:                 # under the reference Python
        return reference_worker(*args.reference_worker)

    model = Path(args.model).resolve()
    if not model.is_file():
        raise DemoError(f"the model {short(model)} does not exist")
    if args.batch < 1:
        raise DemoError(f"--batch {args.batch}: give at least 1")
    info = json.loads(run_reference(args.reference_python, "info", model))
    inp, out = info["input"], info["output"]
    if inp["dtype"] != "int8" or out["dtype"] != "int8":
        raise DemoError(f"{short(model)} takes {inp['dtype']} and gives {out['dtype']}; "
                        f"this demo runs a full-int8 model (int8 in and out)")
    print(f"model {short(model)}: input '{inp['name']}' int8 {'x'.join(map(str, inp['shape']))} "
          f"(scale {inp['scale']:.9g}, zero point {inp['zero_point']}), output int8 "
          f"{'x'.join(map(str, out['shape']))}")

    x, labels = test_split()
    x_q = quantize(x, inp["scale"], inp["zero_point"])
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    x_path = workdir / "cnn_x_test.npy"
    np.save(x_path, x_q)
    print(f"{len(x_q)} test images quantized to int8 {x_q.shape} in {short(x_path)}")

    y, stats = run_tpu(Path(args.tpu), args.config, args.transport, model, x_path,
                       workdir / "cnn_y_tpu.npy", workdir / "cnn_stats.json", args.batch)

    ref_path = workdir / "cnn_y_ref.npy"
    ref_path.unlink(missing_ok=True)
    print(f"$ {short(args.reference_python)} {short(__file__)} --reference-worker run "
          f"{short(model)} {short(x_path)} {short(ref_path)}", flush=True)
    run_reference(args.reference_python, "run", model, x_path, ref_path)
    ref = np.load(ref_path)

    report(compare(y, ref, labels), stats, y, ref)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DemoError as e:
        print(f"{NAME}: error: {e}", file=sys.stderr)
        sys.exit(1)
