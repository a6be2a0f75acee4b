#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The numpy twin of the training arithmetic against the C++ reference
(CTest common.train_f32_numpy).

    python3 train_f32_numpy_test.py --probe build/sw/common/train_f32_probe [--seed S] [-k NAME]

The seed is --seed, else TPU_SEED, else random; it is printed at the end.

scripts/tpu_fp32.py is written from docs/numerics.md ("Training
arithmetic"); train_f32_probe (train_f32_probe.cpp) runs the C++ functions
of tpu/train_f32.h. Every function, primitives, elementary functions and
lane functions, is compared bit for bit on special values (all pairs for
the binary ones), sweeps (all 2^16 bf16 patterns widened, every 16411th fp32
pattern) and seeded random inputs. Each case prints one line, PASS or FAIL;
the exit status is 1 when any failed.
"""

import argparse
import os
import re
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../../.."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import tpu_fp32 as t  # noqa: E402

PROBE = None
RNG = None
CASES = []
F32 = np.float32
U32 = np.uint32


def case(fn):
    CASES.append(fn)
    return fn


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def probe(args, columns, n_out):
    """Runs the probe on records made of `columns` (arrays of uint32 words,
    one per input word) and returns its n_out output columns."""
    cols = [np.broadcast_to(np.asarray(c).astype(np.int64).astype(U32), np.shape(columns[0])) for c in columns]
    data = np.stack(cols, axis=1).astype("<u4").tobytes()
    r = subprocess.run([PROBE, *map(str, args)], input=data, capture_output=True, check=False)
    check(r.returncode == 0, f"train_f32_probe {' '.join(map(str, args))}: {r.stderr.decode().strip()}")
    out = np.frombuffer(r.stdout, "<u4")
    check(out.size == len(cols[0]) * n_out, f"train_f32_probe {args}: {out.size} words out")
    return out.reshape(-1, n_out).T


def same(what, got, want, inputs):
    """got, want: uint32 words; inputs: the input columns (for the message)."""
    got = np.asarray(got).astype(np.int64).astype(U32)
    want = np.asarray(want).astype(np.int64).astype(U32)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        shown = ", ".join(f"0x{int(np.asarray(v).astype(np.int64).astype(U32)[i]):08x}" for v in inputs)
        raise Failure(f"{what}: {len(bad)} of {len(got)} differ, first {what}({shown}) = C++ 0x{int(got[i]):08x}, "
                      f"numpy 0x{int(want[i]):08x}")


def b(x):
    return t.bits(x)


def v(u):
    return t.from_bits(np.asarray(u, np.int64).astype(U32))


# Special and boundary patterns, both signs.
SPECIALS = np.array(sorted({s | m for s in (0, 0x80000000) for m in (
    0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000,
    0x33800000, 0x33000000, 0x34000000, 0x3E800000, 0x3EFFFFFF, 0x3F000000, 0x3F000001,
    0x3F3504F3, 0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x3FB504F3, 0x3FB504F4, 0x3FC00000,
    0x3FFFFFFF, 0x40000000, 0x40400000, 0x407FFFFF, 0x40800000, 0x42B00000, 0x42B00001,
    0x42AFFFFF, 0x42B17218, 0x42B17217, 0x42B20000, 0x42B20001, 0x42AEAC50, 0x42AEAC4F,
    0x4B000000, 0x4B400001, 0x4EFFFFFF, 0x4F000000, 0x4F000001, 0x7E800000, 0x7E800001,
    0x7F000000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF)}), U32)

STRIDE = 16411


def sweep():
    """Every bf16 pattern widened, every 16411th fp32 pattern, the specials."""
    return np.concatenate([np.arange(1 << 16, dtype=U32) << U32(16),
                           np.arange(0, 1 << 32, STRIDE, dtype=np.uint64).astype(U32), SPECIALS])


def random_bits(n):
    return RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(U32)


def random_values(n, lo=-40, hi=40):
    """Random signs, exponents 2^lo .. 2^hi, random significands."""
    e = RNG.integers(lo, hi + 1, n)
    x = RNG.random(n) + 1
    sgn = np.where(RNG.random(n) < 0.5, -1.0, 1.0)
    return (sgn * x * 2.0 ** e).astype(F32)


# ---- The docs and the module agree on the constants --------------------------


@case
def every_constant_of_the_docs_is_in_the_module_and_the_header():
    with open(os.path.join(ROOT, "docs/numerics.md"), encoding="utf-8") as f:
        doc = f.read()
    section = doc[doc.index("## Training arithmetic"):]
    consts = set(re.findall(r"`0x([0-9A-F]{8})`", section))
    with open(os.path.join(ROOT, "scripts/tpu_fp32.py"), encoding="utf-8") as f:
        module = f.read().upper()
    with open(os.path.join(ROOT, "sw/common/include/tpu/train_f32.h"), encoding="utf-8") as f:
        header = f.read().upper()
    check(len(consts) >= 25, f"only {len(consts)} constants found in docs/numerics.md")
    missing = sorted(c for c in consts if f"0X{c}" not in module or f"0X{c}U" not in header)
    check(not missing, f"in docs/numerics.md but not in tpu_fp32.py and train_f32.h: {missing}")

# ---- Primitives -----------------------------------------------------------------


@case
def primitives_equal_the_cpp():
    xs = np.concatenate([sweep(), random_bits(200_000)])
    fx = v(xs)
    same("neg", probe(["neg"], [xs], 1)[0], b(t.fp32_neg(fx)), [xs])
    same("significand", probe(["significand"], [xs], 1)[0], b(t.fp32_significand(fx)), [xs])
    same("exponent", probe(["exponent"], [xs], 1)[0], t.fp32_exponent(fx), [xs])
    # rint on values near integers and halves too.
    halves = (RNG.integers(-2 ** 24, 2 ** 24, 100_000) / 2).astype(F32)
    near = (RNG.integers(-300, 300, 100_000) + RNG.choice([-0.5, 0.5, 0.25, 1e-3, 0.4999999], 100_000)).astype(F32)
    rs = np.concatenate([xs, b(halves), b(near)])
    same("rint", probe(["rint"], [rs], 1)[0], t.fp32_rint(v(rs)), [rs])
    ks = np.concatenate([RNG.integers(-2 ** 31, 2 ** 31, 100_000), np.arange(-300, 300),
                         [2 ** 31 - 1, -2 ** 31, 2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 25) - 2, 2 ** 30 + 64]])
    same("i2f", probe(["i2f"], [ks], 1)[0], b(t.fp32_from_int(ks)), [ks])


@case
def binary_primitives_equal_the_cpp():
    sa, sb = np.meshgrid(SPECIALS, SPECIALS)
    n = 300_000
    a = np.concatenate([sa.ravel(), random_bits(n)])
    c = np.concatenate([sb.ravel(), random_bits(n)])
    near = RNG.random(len(a)) < 0.3  # b close to a: cancellation, ties in order
    c = np.where(near, a + RNG.integers(-3, 4, len(a)).astype(U32), c)
    fa, fc = v(a), v(c)
    same("sub", probe(["sub"], [a, c], 1)[0], b(t.fp32_sub(fa, fc)), [a, c])
    same("gt", probe(["gt"], [a, c], 1)[0], t.fp32_gt(fa, fc), [a, c])
    same("eq", probe(["eq"], [a, c], 1)[0], t.fp32_eq(fa, fc), [a, c])
    edges = RNG.choice([-254, -150, -127, -126, -1, 0, 1, 126, 127, 128, 254], len(a))
    ks = np.where(RNG.random(len(a)) < 0.5, edges, RNG.integers(-300, 300, len(a)))
    same("ldexp", probe(["ldexp"], [a, ks], 1)[0], b(t.fp32_ldexp(fa, ks)), [a, ks])
    ab = a & U32(0xFFFF)
    same("mask", probe(["mask"], [c, ab], 1)[0], b(t.mask_lane(fc, ab.astype(np.uint16))), [c, ab])

# ---- Elementary functions ------------------------------------------------------


ELEMENTARY = {"recip": t.fp32_recip, "rsqrt": t.fp32_rsqrt, "sqrt": t.fp32_sqrt,
              "exp": t.fp32_exp, "log": t.fp32_log}


def elementary_inputs(name):
    extra = {
        "recip": random_values(200_000, -128, 128),
        "rsqrt": np.abs(random_values(200_000, -128, 128)),
        "sqrt": np.abs(random_values(200_000, -128, 128)),
        "exp": (RNG.random(200_000) * 180 - 90).astype(F32),
        "log": np.abs(random_values(200_000, -128, 128)),
    }[name]
    # The core of each: densely around 1 and the reduction's edges.
    core = (RNG.random(200_000) * 4 - 2).astype(F32)
    return np.concatenate([sweep(), random_bits(100_000), b(extra), b(core)])


def elementary_case(name):
    def fn():
        xs = elementary_inputs(name)
        same(name, probe([name], [xs], 1)[0], b(ELEMENTARY[name](v(xs))), [xs])
    fn.__name__ = f"{name}_equals_the_cpp"
    return fn


for _name in ELEMENTARY:
    case(elementary_case(_name))

# ---- Lane functions -------------------------------------------------------------


def state(n, scale):
    """Plausible optimizer values: normal draws times `scale`, with a few
    specials mixed in."""
    x = (RNG.standard_normal(n) * scale).astype(F32)
    pick = RNG.random(n) < 0.02
    return np.where(pick, v(RNG.choice(SPECIALS, n)), x).astype(F32)


@case
def sgd_and_momentum_equal_the_cpp():
    n = 200_000
    w, g, vel = state(n, 0.1), state(n, 1e-2), state(n, 1e-2)
    lr = v(RNG.choice(b(np.array([0.1, 0.01, 1e-3, 3e-4, 1.0], F32)), n))
    mom = v(RNG.choice(b(np.array([0.9, 0.99, 0.5, 0.0], F32)), n))
    got = probe(["sgd"], [b(w), b(g), b(lr)], 2)
    want = t.sgd_lane(w, g, lr)
    same("sgd w'", got[0], b(want[0]), [b(w), b(g), b(lr)])
    same("sgd bf16", got[1], want[1], [b(w), b(g), b(lr)])
    cols = [b(w), b(vel), b(g), b(lr), b(mom)]
    got = probe(["momentum"], cols, 3)
    want = t.momentum_lane(w, vel, g, lr, mom)
    for i, what in enumerate(("w'", "v'")):
        same(f"momentum {what}", got[i], b(want[i]), cols)
    same("momentum bf16", got[2], want[2], cols)


@case
def adam_equals_the_cpp():
    # The step scalars over 3000 steps from b1p = b2p = 1, for three
    # learning rates, and random betas.
    steps = 3000
    b1p = np.ones(3, F32)
    b2p = np.ones(3, F32)
    lr = np.array([1e-3, 1e-2, 3e-4], F32)
    rows = []
    for _ in range(steps):  # the powers as adam_step makes them
        rows.append((b1p, b2p))
        b1p, b2p = t.fp32_mul(b1p, t.BETA1), t.fp32_mul(b2p, t.BETA2)
    b1s = np.concatenate([r[0] for r in rows])
    b2s = np.concatenate([r[1] for r in rows])
    lrs = np.tile(lr, steps)
    beta1 = np.concatenate([np.full(3 * steps, t.BETA1), (RNG.random(10_000) * 0.5 + 0.5).astype(F32)])
    beta2 = np.concatenate([np.full(3 * steps, t.BETA2), (1 - RNG.random(10_000) * 0.01).astype(F32)])
    b1s = np.concatenate([b1s, (RNG.random(10_000)).astype(F32)])
    b2s = np.concatenate([b2s, (RNG.random(10_000)).astype(F32)])
    lrs = np.concatenate([lrs, (RNG.random(10_000) * 0.1).astype(F32)])
    cols = [b(b1s), b(b2s), b(lrs), b(beta1), b(beta2)]
    got = probe(["adam_step"], cols, 3)
    want = t.adam_step(b1s, b2s, lrs, beta1, beta2)
    for i, what in enumerate(("b1p'", "b2p'", "alpha")):
        same(f"adam_step {what}", got[i], b(want[i]), cols)
    # Per weight: states of all sizes, v >= 0, alphas from the steps above.
    n = 300_000
    w, m, g = state(n, 0.1), state(n, 1e-3), state(n, 1e-2)
    vv = np.abs(state(n, 1e-5)) * v(RNG.choice(b(np.array([1, 1e-10, 1e-30, 1e-37], F32)), n))
    vv = vv.astype(F32)
    alpha = RNG.choice(want[2][: 3 * steps], n).astype(F32)
    c1 = np.full(n, t.C1)
    c2 = np.full(n, t.C2)
    eps = np.where(RNG.random(n) < 0.9, t.EPS, F32(1e-8)).astype(F32)
    cols = [b(w), b(m), b(vv), b(g), b(alpha), b(c1), b(c2), b(eps)]
    got = probe(["adam"], cols, 4)
    want = t.adam_lane(w, m, vv, g, alpha, c1, c2, eps)
    for i, what in enumerate(("w'", "m'", "v'")):
        same(f"adam {what}", got[i], b(want[i]), cols)
    same("adam bf16", got[3], want[3], cols)


def softmax_check(z, y, inv_b, what):
    bsz, c = z.shape
    cols = [b(z[:, j]) for j in range(c)] + [y, np.full(bsz, b(inv_b))]
    got = probe(["softmax_ce", c], cols, c + 2)
    grad, loss, correct = t.softmax_ce_lane(z, y, inv_b)
    for j in range(c):
        same(f"{what} grad[{j}]", got[j], grad[:, j], cols)
    same(f"{what} loss", got[c], b(loss), cols)
    same(f"{what} correct", got[c + 1], b(correct), cols)


@case
def softmax_ce_equals_the_cpp():
    for c in (1, 2, 3, 10, 37, 100):
        bsz = 4000
        scale = RNG.choice([0.1, 1.0, 10.0, 100.0], (bsz, 1))
        z = (RNG.standard_normal((bsz, c)) * scale).astype(F32)
        z[: bsz // 10] = np.round(z[: bsz // 10])        # ties for the maximum
        z[bsz // 10: bsz // 5] = z[bsz // 10: bsz // 5, :1]  # all equal
        y = RNG.integers(-1, c + 1, bsz)                   # invalid labels too
        softmax_check(z, y, F32(1 / bsz), f"softmax_ce C={c}")
    # Specials in the logits: NaN, infinities, subnormals, huge gaps.
    c = 5
    z = (RNG.standard_normal((3000, c)) * 10).astype(F32)
    pick = RNG.random(z.shape) < 0.1
    z = np.where(pick, v(RNG.choice(SPECIALS, z.shape)), z).astype(F32)
    softmax_check(z, RNG.integers(0, c, 3000), F32(1 / 3), "softmax_ce specials")


def main():
    global PROBE, RNG
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    PROBE = args.probe
    env = os.environ.get("TPU_SEED")  # as the GoogleTest suites (make regress SEEDS=...)
    seed = (args.seed if args.seed is not None else int(env, 0) if env
            else int(np.random.SeedSequence().entropy % 2 ** 32))
    RNG = np.random.default_rng(seed)
    np.seterr(all="ignore")  # the inputs' own infinities and NaNs (tpu_fp32 handles its own)
    failed = 0
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        start = time.monotonic()
        try:
            fn()
            print(f"PASS {fn.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            detail = str(e) if isinstance(e, Failure) else traceback.format_exc()
            print(f"FAIL {fn.__name__}: {detail}", flush=True)
    print(f"seed {seed}: {'all passed' if not failed else f'{failed} failed'} (repeat with --seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
