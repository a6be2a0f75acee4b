#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Handwritten digits, int8, on the simulated TPU (the project's main demo, `make demo`).

1. Trains a small scikit-learn MLP (64 pixels -> HIDDEN ReLU -> 10 logits) on the 8x8
   digits bundled with scikit-learn (no download); fixed, stratified 75/25 split.
2. Quantizes it after training, per tensor: int8 inputs and weights (zero point 0),
   int32 biases at scale s_in*s_w, output scales calibrated on the training set, and a
   Q31 multiplier M0 with a right shift per layer (gemmlowp / TFLite style).
3. Runs the int8 model on the CPU in numpy with exactly the device's arithmetic
   (sim/model/quant.h: int32 accumulation, bias, SRDHM, rounding shift, clamp).
4. Writes model.json, the weights and the int8 test inputs to --workdir, runs
   `tpu mlp` on the simulated TPU (the layers chained on the device, the test set in one
   command) and checks its logits against the CPU's, bit for bit.

Exits 1 if the tool fails or any logit differs. `--self-test` checks the quantization
helpers alone (no tool needed).

    python3 demo/digits_mlp.py [--tpu build/bin/tpu] [--config default]
                               [--workdir build/demo] [--hidden 32] [--batch 1024]
                               [--per-layer]
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from tpu_tool import DemoError, run_tool

REPO = Path(__file__).resolve().parent.parent
SEED = 0                       # split and training
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PIXEL_MAX = 16.0               # load_digits pixels are 0..16




# ---------------------------------------------------------------------------
# The device's integer arithmetic (sim/model/quant.h), vectorized on int64.

def wrap32(v):
    """Two's-complement wrap to int32, as the MXU's accumulators do."""
    v = np.asarray(v, dtype=np.int64)
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


def srdhm(a, b):
    """Saturating rounding doubling high multiply: round(a * b / 2^31), ties toward +inf."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    ab = a * b                                   # |ab| <= 2^62: no int64 overflow
    nudge = np.where(ab >= 0, np.int64(1 << 30), np.int64(1 - (1 << 30)))
    v = ab + nudge
    q = np.where(v >= 0, v >> 31, -((-v) >> 31))  # division truncating toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), np.int64(INT32_MAX), q)


def rdbp(x, exponent):
    """Rounding divide by 2^exponent (0..31), ties away from zero."""
    x = np.asarray(x, dtype=np.int64)
    mask = np.int64((1 << exponent) - 1)
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0).astype(np.int64)
    return (x >> exponent) + (remainder > threshold).astype(np.int64)


def requantize(acc, bias, layer):
    """int32 accumulators (rows x out) -> int8 outputs, one layer's ACT lane for lane."""
    x = np.clip(wrap32(acc) + np.asarray(bias, dtype=np.int64), INT32_MIN, INT32_MAX)
    scaled = layer["zero_point"] + rdbp(srdhm(x, layer["multiplier"]), layer["shift"])
    lo, hi = layer["qmin"], layer["qmax"]
    if layer["act"] in ("relu", "relu6"):
        lo = max(lo, layer["zero_point"])
    if layer["act"] == "relu6":
        hi = min(hi, layer["relu6_max"])
    # max then min: an inconsistent lo > hi yields hi, like quant.h and the RTL.
    return np.minimum(np.maximum(scaled, lo), hi).astype(np.int8)


def int8_reference(x, layers):
    """The int8 MLP on the CPU: each layer's int8 output feeds the next."""
    h = np.asarray(x, dtype=np.int8)
    for layer in layers:
        acc = h.astype(np.int64) @ layer["w"].astype(np.int64)
        h = requantize(acc, layer["bias"], layer)
    return h


def quantize_multiplier(m):
    """Real multiplier m in (0, 1) -> (M0, shift) with m ~= M0 * 2^-31 * 2^-shift.

    M0 is in [2^30, 2^31) and shift in 0..31, so m must lie in [2^-32, 1); a value
    that rounds up to 1.0 gets M0 = 2^31 - 1, shift 0 (off by at most 2^-31).
    """
    if not (isinstance(m, (int, float, np.floating)) and math.isfinite(m) and 0.0 < m < 1.0):
        raise ValueError(f"requantization multiplier {m!r} is not in (0, 1)")
    frac, exp = math.frexp(m)                  # m = frac * 2^exp, frac in [0.5, 1)
    m0 = round(frac * 2**31)
    if m0 == 2**31:                             # frac rounded up to 1.0
        m0, exp = 2**30, exp + 1
    shift = -exp
    if shift < 0:                               # m rounded to 1.0: take the largest M0
        m0, shift = 2**31 - 1, 0
    if shift > 31:
        raise ValueError(f"requantization multiplier {m!r} is below 2^-32 (shift {shift} > 31)")
    assert 2**30 <= m0 < 2**31 and 0 <= shift <= 31
    return int(m0), int(shift)


# ---------------------------------------------------------------------------
# Self-test: the helpers against quant.h transcribed literally on Python ints.

def _srdhm_scalar(a, b):
    if a == INT32_MIN and b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    v = ab + nudge
    q = abs(v) // 2**31                          # division truncating toward zero
    return q if v >= 0 else -q


def _rdbp_scalar(x, e):
    mask = (1 << e) - 1
    rem = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > threshold else 0)


def self_test():
    # Multiplier quantization: exact powers of two, rounding, and the edges of the range.
    assert quantize_multiplier(0.5) == (2**30, 0)
    assert quantize_multiplier(0.75) == (3 * 2**29, 0)
    assert quantize_multiplier(0.25) == (2**30, 1)
    assert quantize_multiplier(2.0**-32) == (2**30, 31)
    assert quantize_multiplier(2.0**-31 * 0.999) == (round(0.999 * 2**31), 31)
    assert quantize_multiplier(1 - 2.0**-40) == (2**31 - 1, 0)     # rounds to 1.0
    assert quantize_multiplier(0.5 - 2.0**-40) == (2**30, 0)       # frac rounds to 1.0
    assert quantize_multiplier(np.float64(0.3)) == quantize_multiplier(0.3)
    for bad in (0.0, -0.1, 1.0, 1.5, 2.0**-33, float("nan"), float("inf")):
        try:
            quantize_multiplier(bad)
        except ValueError:
            continue
        raise AssertionError(f"quantize_multiplier({bad}) should have failed")
    rng = np.random.default_rng(1)
    for m in np.exp(rng.uniform(math.log(2.0**-32), math.log(0.999999), 2000)):
        m0, s = quantize_multiplier(float(m))
        assert abs(m0 * 2.0**-31 * 2.0**-s - m) <= m * 2.0**-30, (m, m0, s)

    # SRDHM and RDBP against the scalar transcription, on edges and random values.
    edges = [INT32_MIN, INT32_MIN + 1, -(2**30), -3, -2, -1, 0, 1, 2, 3, 2**30, INT32_MAX]
    a = np.array(edges + list(rng.integers(INT32_MIN, INT32_MAX, 3000, endpoint=True)))
    b = np.array(edges + list(rng.integers(INT32_MIN, INT32_MAX, 3000, endpoint=True)))
    a_all, b_all = np.meshgrid(a[:60], b[:60])
    for aa, bb in ((a, b), (a_all.ravel(), b_all.ravel()), (a, b[::-1])):
        got = srdhm(aa, bb)
        want = [_srdhm_scalar(int(p), int(q)) for p, q in zip(aa, bb)]
        assert got.tolist() == want, "srdhm differs from the scalar reference"
    assert srdhm(INT32_MIN, INT32_MIN) == INT32_MAX
    assert srdhm(1 << 30, 1) == 1 and srdhm(-(1 << 30), 1) == 0   # +-0.5: ties toward +inf
    for e in range(32):
        got = rdbp(a, e)
        assert got.tolist() == [_rdbp_scalar(int(v), e) for v in a], f"rdbp differs, e={e}"
    assert rdbp(np.array([5, -5, 6, -6, 7, -7]), 1).tolist() == [3, -3, 3, -3, 4, -4]
    assert rdbp(np.array([-6, 6, -2, 2]), 2).tolist() == [-2, 2, -1, 1]

    # Activation bounds and saturation.
    layer = dict(multiplier=2**30, shift=0, zero_point=3, qmin=-128, qmax=127, act="relu")
    acc = np.array([[INT32_MAX, -1000, 0, 10]])
    assert requantize(acc, [5, 0, 0, 0], layer).tolist() == [[127, 3, 3, 8]]
    layer.update(act="relu6", relu6_max=20)
    assert requantize(acc, [0, 0, 0, 40], layer).tolist() == [[20, 3, 3, 20]]
    layer.update(act="none", zero_point=0)
    assert requantize(np.array([[-1000, 1000, -3, 3]]), [0] * 4, layer).tolist() == [[-128, 127, -1, 2]]
    assert wrap32(np.array([2**31, -(2**31) - 1])).tolist() == [INT32_MIN, INT32_MAX]
    print("digits_mlp: self-test passed")


# ---------------------------------------------------------------------------
# Training and quantization.

def train(hidden):
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    import warnings

    digits = load_digits()
    x_tr, x_te, y_tr, y_te = train_test_split(
        digits.data, digits.target, test_size=0.25, stratify=digits.target, random_state=SEED)
    clf = MLPClassifier(hidden_layer_sizes=(hidden,), activation="relu", alpha=1e-3,
                        max_iter=400, random_state=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x_tr / PIXEL_MAX, y_tr)
    return clf, x_tr, x_te, y_tr, y_te


def quantize_model(clf, x_train):
    """Per-tensor int8 quantization of the trained MLP: one dict per layer."""
    s_in = 1.0 / 127.0                         # pixels / 16 in [0, 1] -> 0..127
    # Calibrate each layer's output range on the float model over the training set.
    h = x_train / PIXEL_MAX
    layers = []
    n_layers = len(clf.coefs_)
    for i, (w, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
        last = i == n_layers - 1
        z = h @ w + b
        h = z if last else np.maximum(z, 0.0)
        s_w = float(np.abs(w).max()) / 127.0
        s_out = float(np.abs(h).max()) / 127.0
        layers.append(dict(
            w=np.clip(np.round(w / s_w), -127, 127).astype(np.int8),
            bias=np.round(b / (s_in * s_w)).astype(np.int64).clip(INT32_MIN, INT32_MAX).astype(np.int32),
            scale=s_out,
            zero_point=0, qmin=-128, qmax=127, act="none" if last else "relu"))
        layers[-1]["multiplier"], layers[-1]["shift"] = quantize_multiplier(s_in * s_w / s_out)
        s_in = s_out
    return layers


def quantize_input(x):
    return np.clip(np.round(x / PIXEL_MAX * 127.0), 0, 127).astype(np.int8)


def write_model(workdir, layers, x_q):
    workdir.mkdir(parents=True, exist_ok=True)
    spec = []
    for i, layer in enumerate(layers):
        np.save(workdir / f"w{i}.npy", layer["w"])
        np.save(workdir / f"b{i}.npy", layer["bias"])
        spec.append({"w": f"w{i}.npy", "bias": f"b{i}.npy",
                     **{k: layer[k] for k in ("multiplier", "shift", "zero_point", "qmin", "qmax", "act")}})
    (workdir / "model.json").write_text(json.dumps({"layers": spec}, indent=2) + "\n")
    np.save(workdir / "x_test.npy", x_q)


# ---------------------------------------------------------------------------
# The TPU run.

def run_tpu(tpu, config, workdir, batch, per_layer):
    logits_path = workdir / "logits_tpu.npy"
    stats_path = workdir / "stats.json"
    cmd = [str(tpu), "--config", config, "mlp", "--model", str(workdir / "model.json"),
           "--x", str(workdir / "x_test.npy"), "--out", str(logits_path),
           "--batch", str(batch), "--stats-json", str(stats_path)] + (["--per-layer"] if per_layer else [])
    return run_tool(cmd, "mlp", logits_path, stats_path)


def plan_text(plan):
    """How `tpu mlp` ran the layers, from its statistics' `plan`."""
    if not isinstance(plan, dict):
        return "?"
    if not plan.get("chained"):
        return "layer by layer"
    loop = ", device loop" if plan.get("loop_iterations") else ""
    return f"chained, {plan.get('steps')} x {plan.get('step')} samples{loop}"


def accuracy(pred, y):
    return float(np.mean(pred == y))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tpu", default=str(REPO / "build/bin/tpu"), help="the tpu tool")
    ap.add_argument("--config", default="default", help="TPU configuration (tiny|small|default|wide)")
    ap.add_argument("--workdir", default=str(REPO / "build/demo"), help="where the model files go")
    ap.add_argument("--hidden", type=int, default=32, help="hidden units")
    ap.add_argument("--batch", type=int, default=1024,
                    help="samples per device run (one command when the layers are chained)")
    ap.add_argument("--per-layer", action="store_true",
                    help="run each layer as its own command instead of chaining them on the device")
    ap.add_argument("--self-test", action="store_true", help="check the quantization helpers and exit")
    args = ap.parse_args()

    self_test()
    if args.self_test:
        return 0

    clf, x_tr, x_te, y_tr, y_te = train(args.hidden)
    acc_float = accuracy(clf.predict(x_te / PIXEL_MAX), y_te)
    print(f"float MLP 64-{args.hidden}-10: {len(y_tr)} training, {len(y_te)} test samples, "
          f"test accuracy {acc_float:.2%}")

    layers = quantize_model(clf, x_tr)
    for i, l in enumerate(layers):
        print(f"layer {i}: {l['w'].shape[0]}x{l['w'].shape[1]} int8, act {l['act']}, "
              f"M0 {l['multiplier']} shift {l['shift']} (x{l['multiplier'] * 2.0**(-31 - l['shift']):.6g})")
    x_q = quantize_input(x_te)
    ref = int8_reference(x_q, layers)
    acc_cpu = accuracy(np.argmax(ref, axis=1), y_te)
    print(f"int8 CPU reference: test accuracy {acc_cpu:.2%}")

    workdir = Path(args.workdir).resolve()
    write_model(workdir, layers, x_q)
    logits, stats = run_tpu(Path(args.tpu), args.config, workdir, args.batch, args.per_layer)

    if logits.dtype != np.int8 or logits.shape != ref.shape:
        raise DemoError(f"TPU logits are {logits.dtype} {logits.shape}, expected int8 {ref.shape}")
    differs = np.any(logits != ref, axis=1)
    n_same = int(np.sum(~differs))
    acc_tpu = accuracy(np.argmax(logits, axis=1), y_te)
    util = stats.get("utilization")              # M*K*N MACs over cycles x n x n
    array_util = stats.get("array_utilization")  # the same with the tiles' zero padding counted
    rows = [
        ("float accuracy (scikit-learn)", f"{acc_float:.2%}"),
        ("int8 CPU reference accuracy", f"{acc_cpu:.2%}"),
        ("TPU accuracy", f"{acc_tpu:.2%}"),
        ("TPU == int8 CPU reference", f"{n_same}/{len(ref)} samples"),
        ("device cycles", f"{stats.get('cycles', '?'):,}" if isinstance(stats.get("cycles"), int) else "?"),
        ("MXU utilization (M*K*N MACs)", f"{util:.1%}" if isinstance(util, (int, float)) else "?"),
        ("array utilization (padding)", f"{array_util:.1%}" if isinstance(array_util, (int, float)) else "?"),
        ("commands", str(stats.get("commands", "?"))),
        ("layers on the device", plan_text(stats.get("plan"))),
    ]
    print()
    for name, value in rows:
        print(f"  {name + ':':<31} {value:>16}")
    print()
    if differs.any():
        i = int(np.argmax(differs))
        classes = np.flatnonzero(logits[i] != ref[i]).tolist()
        raise DemoError(f"{len(ref) - n_same} of {len(ref)} samples differ; first is sample {i} "
                        f"(classes {classes}):\n  TPU {logits[i].tolist()}\n  CPU {ref[i].tolist()}")
    print(f"digits_mlp: PASS, TPU logits match the int8 CPU reference bit for bit "
          f"({ref.size} logits)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (DemoError, ValueError) as e:
        print(f"digits_mlp: error: {e}", file=sys.stderr)
        sys.exit(1)
