#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The bf16 mode against numpy float32 (CTest model.bf16_numpy).

    python3 bf16_numpy_test.py --probe build/sim/bf16_probe [--seed S] [-k NAME]

The seed is --seed, else TPU_SEED, else random; it is printed at the end.

bf16_probe (sim/model/test/bf16_probe.cpp) runs the C++ numerics
(tpu/bf16.h) and the reference model's bf16 GEMM programs (RHM WIDE, RW BF16,
MMC BF16, ACT F32, WHM WIDE). This script checks:

  - fp32_mul against numpy's float32 multiplication where the exact product
    is normal, and everywhere against the numpy reimplementation of
    docs/numerics.md; fp32_add, bf16_mul, fp32_to_bf16, fp32_max, fp32_min
    against that reimplementation;
  - the model's GEMMs bit for bit against the numpy reimplementation of the
    documented order of additions (mxu_matmul below, as in docs/numerics.md),
    and ACT F32 (bias, scale, ReLU/ReLU6, clamp) against act_f32;
  - the model's GEMMs against A.astype(float32) @ B.astype(float32) within the
    error bound of docs/numerics.md, |C_tpu - C_f32| <= K 2^-23 (1 + eps) S
    + (2K - 1) 2^-126 (1 + eps), S = |A| @ |B|; it prints the largest
    |C_tpu - C_f32| / S in units of 2^-23 (the numbers in docs/numerics.md).

Each case prints one line, PASS or FAIL; the exit status is 1 when any failed.
"""

import argparse
import ast
import os
import re
import subprocess
import sys
import traceback

import numpy as np

PROBE = None
CASES = []
RNG = None

# ---- The numpy reimplementation of docs/numerics.md (kept identical) ---------

F32 = np.float32
MIN_NORMAL = F32(2.0 ** -126)
NAN32 = np.uint32(0x7FC00000)


def ftz(x):
    """Flush subnormals to zero of the same sign."""
    x = np.asarray(x, F32)
    tiny = (x != 0) & (np.abs(x) < MIN_NORMAL)
    return np.where(tiny, np.copysign(F32(0), x), x).astype(F32)


def canon(x):
    """Every NaN becomes 0x7FC00000."""
    x = np.asarray(x, F32)
    return np.where(np.isnan(x), NAN32.view(F32), x).astype(F32)


def bf16_to_f32(b):
    """bf16 bits (uint16) -> float32 values, exact."""
    return (np.asarray(b, np.uint32) << 16).view(F32)


def bf16_mul(a, w):  # a, w: bf16 values held in float32
    with np.errstate(all="ignore"):
        return canon(ftz(ftz(a) * ftz(w)))


def fp32_add(x, y):
    with np.errstate(all="ignore"):
        return canon(ftz(ftz(x) + ftz(y)))


def fp32_mul(x, y):
    """Exact product in float64 (24 + 24 bits fit in 53), flushed when the
    exact value is below 2^-126, then rounded once to float32."""
    with np.errstate(all="ignore"):
        p = ftz(x).astype(np.float64) * ftz(y).astype(np.float64)
        tiny = (p != 0) & (np.abs(p) < 2.0 ** -126)
        p = np.where(tiny, np.copysign(0.0, p), p)
        return canon(p.astype(F32))


def fp32_max(x, y):
    """NaN propagates; -0 is below +0."""
    x, y = ftz(x), ftz(y)
    bigger = (x > y) | ((x == y) & ~np.signbit(x))
    return canon(np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(bigger, x, y)))


def fp32_min(x, y):
    x, y = ftz(x), ftz(y)
    smaller = (x < y) | ((x == y) & np.signbit(x))
    return canon(np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(smaller, x, y)))


def fp32_to_bf16(x):
    """float32 -> bf16 bits (uint16), round to nearest even."""
    u = np.asarray(x, F32).view(np.uint32).astype(np.uint64)
    exp = (u >> 23) & 0xFF
    nan = (exp == 0xFF) & ((u & 0x7FFFFF) != 0)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = np.where(exp == 0, (u >> 16) & 0x8000, r)   # zero, subnormal: signed zero
    r = np.where(exp == 0xFF, u >> 16, r)           # infinity (NaN below)
    r = np.where(nan, 0x7FC0, r)
    return r.astype(np.uint16)


def act_f32(acc, bias=None, scale=F32(1), func="none",
            relu6=F32(6), fmin=F32(-np.inf), fmax=F32(np.inf)):
    """acc (M, N) float32 accumulators -> float32 results before conversion
    (fp32_to_bf16 of them for the bf16 output)."""
    y = acc if bias is None else fp32_add(acc, bias)
    y = fp32_mul(y, scale)
    lo, hi = F32(fmin), F32(fmax)
    if func in ("relu", "relu6"):
        lo = fp32_max(lo, F32(0))
    if func == "relu6":
        hi = fp32_min(hi, relu6)
    return fp32_min(fp32_max(y, lo), hi)


def mxu_matmul(A, W, N, acc=None):
    """A (M, K), W (K, J): bf16 values in float32, K a multiple of N (zero
    padded). acc=None: the first pass overwrites, later passes accumulate."""
    M, K = A.shape
    for p in range(K // N):
        col = np.zeros((M, W.shape[1]), F32)        # +0 enters row 0
        for i in range(p * N, p * N + N):          # top to bottom
            col = fp32_add(col, bf16_mul(A[:, i:i + 1], W[i:i + 1, :]))
        acc = col if acc is None else fp32_add(acc, col)
    return acc

# ---- Harness ---------------------------------------------------------------------


def case(fn):
    CASES.append(fn)
    return fn


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def probe(args, data: bytes) -> bytes:
    r = subprocess.run([PROBE, *map(str, args)], input=data, capture_output=True, check=False)
    check(r.returncode == 0, f"bf16_probe {' '.join(map(str, args))}: {r.stderr.decode().strip()}")
    return r.stdout


def probe_op(name, x, y=None):
    x = np.asarray(x, np.uint32)
    words = x if y is None else np.stack([x, np.asarray(y, np.uint32)], axis=1).ravel()
    return np.frombuffer(probe(["op", name], words.astype("<u4").tobytes()), "<u4")


def probe_gemm(a_bits, w_bits, n, datapath="both", output="f32", act=None):
    """act: (func, scale, relu6, fmin, fmax, bias or None), fp32 values."""
    m, k = a_bits.shape
    j = w_bits.shape[1]
    data = (np.array([m, k, j], "<i4").tobytes() + a_bits.astype("<u2").tobytes() +
            w_bits.astype("<u2").tobytes())
    args = ["gemm", n, datapath, output]
    if act is not None:
        func, *regs, bias = act
        args += [func, *(f"{int(bits(r)):08x}" for r in regs), int(bias is not None)]
        if bias is not None:
            data += bits(bias).astype("<u4").tobytes()
    out = np.frombuffer(probe(args, data), "<u4")
    return out.reshape(m, j)


def bits(x):
    return np.asarray(x, F32).view(np.uint32)


def mismatches(got, want, what, inputs):
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        shown = ", ".join(f"0x{int(v[i]):08x}" for v in inputs)
        raise Failure(f"{what}: {len(bad)} of {len(got)} differ, first {what}({shown}) = "
                      f"0x{int(got[i]):08x}, want 0x{int(want[i]):08x}")


def random_bf16_normal(shape):
    """N(0, 1) draws rounded to bf16 (nearest even), as bits."""
    return fp32_to_bf16(RNG.standard_normal(shape).astype(F32))


SPECIAL32 = np.array([s | m for s in (0, 0x80000000) for m in (
    0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x00800001, 0x00FFFFFF, 0x3F800000,
    0x3F800001, 0x3F7FFFFF, 0x3F7FFFFE, 0x3FFFFFFF, 0x33800000, 0x34000000, 0x4B800000,
    0x7F000000, 0x7F7FFFFF, 0x73000000, 0x7F800000, 0x7F800001, 0x7FC00000, 0x7FFFFFFF)],
    np.uint32)

# ---- The operations ------------------------------------------------------------------


@case
def numpy_code_is_the_code_of_docs_numerics_md():
    # Every function of the page's python blocks is here, unchanged.
    doc_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../docs/numerics.md")
    with open(doc_path, encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    with open(os.path.abspath(__file__), encoding="utf-8") as f:
        here = {n.name: ast.dump(n) for n in ast.parse(f.read()).body if isinstance(n, ast.FunctionDef)}
    names = []
    for block in blocks:
        for node in ast.parse(block).body:
            if isinstance(node, ast.FunctionDef):
                names.append(node.name)
                check(here.get(node.name) == ast.dump(node), f"{node.name} differs from docs/numerics.md")
    check({"mxu_matmul", "fp32_mul", "act_f32"} <= set(names), f"docs/numerics.md defines only {names}")


@case
def fp32_mul_equals_numpy_float32_where_the_product_is_normal():
    # Operands across the whole normal range; numpy's float32 * is IEEE
    # round to nearest even, so where the exact product is normal it is the
    # TPU's result bit for bit.
    n = 400_000
    x = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    # Exponents 1..254 only (normal operands); half the pairs steered to
    # products near 2^-126 and 2^128.
    ex = RNG.integers(1, 255, n).astype(np.uint32)
    ey = RNG.integers(1, 255, n).astype(np.uint32)
    edge = RNG.random(n) < 0.5
    ey = np.where(edge & (ex <= 127), np.clip(128 - ex + RNG.integers(-1, 2, n), 1, 254), ey)
    ey = np.where(edge & (ex > 127), np.clip(381 - ex + RNG.integers(-1, 2, n), 1, 254), ey)
    x = (x & 0x807FFFFF) | (ex << 23)
    y = (y & 0x807FFFFF) | (ey.astype(np.uint32) << 23)
    exact = x.view(F32).astype(np.float64) * y.view(F32).astype(np.float64)
    normal = np.abs(exact) >= 2.0 ** -126
    with np.errstate(all="ignore"):
        want = bits(x.view(F32) * y.view(F32))
    got = probe_op("fp32_mul", x, y)
    mismatches(got[normal], want[normal], "fp32_mul", (x[normal], y[normal]))
    check(normal.sum() > n // 2, "too few normal products")
    check(np.isinf(want.view(F32)[normal]).sum() > 1000, "too few overflows")
    # Below 2^-126 the TPU flushes where numpy rounds to a subnormal (or up to 2^-126).
    tiny = ~normal
    check(np.all((got[tiny] & 0x7FFFFFFF) == 0), "a tiny product was not flushed")
    check(np.all((got[tiny] >> 31) == ((x[tiny] ^ y[tiny]) >> 31)), "a flushed product lost its sign")


@case
def fp32_mul_equals_the_numpy_reimplementation():
    n = 400_000
    x = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    # Products of significands just below 2 at the flush boundary: the
    # exact product decides, numpy's gradual underflow would round up.
    m = RNG.integers(1 << 23, 1 << 24, n // 4, dtype=np.uint64)
    m2 = np.minimum((np.uint64(1) << np.uint64(47)) // m, (1 << 24) - 1)
    ea = RNG.integers(1, 127, n // 4).astype(np.uint64)
    x[: n // 4] = ((ea << np.uint64(23)) | (m & np.uint64(0x7FFFFF))).astype(np.uint32)
    y[: n // 4] = (((np.uint64(127) - ea) << np.uint64(23)) | (m2 & np.uint64(0x7FFFFF))).astype(np.uint32)
    sx, sy = np.meshgrid(SPECIAL32, SPECIAL32)
    x = np.concatenate([x, sx.ravel()])
    y = np.concatenate([y, sy.ravel()])
    want = bits(fp32_mul(x.view(F32), y.view(F32)))
    mismatches(probe_op("fp32_mul", x, y), want, "fp32_mul", (x, y))
    # The boundary really differs from numpy's float32 there.
    with np.errstate(all="ignore"):
        plain = bits(x[: n // 4].view(F32) * y[: n // 4].view(F32))
    check(np.any(plain != want[: n // 4]), "no product where rounding reaches 2^-126")


@case
def fp32_add_bf16_mul_conversion_max_min_equal_the_numpy_reimplementation():
    n = 200_000
    x = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    near = RNG.random(n) < 0.5  # cancellation: y = -x moved by a few ulps
    y = np.where(near, (x ^ 0x80000000) + RNG.integers(0, 9, n).astype(np.uint32) - 4, y)
    sx, sy = np.meshgrid(SPECIAL32, SPECIAL32)
    x = np.concatenate([x, sx.ravel()])
    y = np.concatenate([y, sy.ravel()])
    fx, fy = x.view(F32), y.view(F32)
    mismatches(probe_op("fp32_add", x, y), bits(fp32_add(fx, fy)), "fp32_add", (x, y))
    mismatches(probe_op("fp32_max", x, y), bits(fp32_max(fx, fy)), "fp32_max", (x, y))
    mismatches(probe_op("fp32_min", x, y), bits(fp32_min(fx, fy)), "fp32_min", (x, y))
    mismatches(probe_op("fp32_to_bf16", x), fp32_to_bf16(fx).astype(np.uint32), "fp32_to_bf16", (x,))
    a, b = x & 0xFFFF, y & 0xFFFF
    mismatches(probe_op("bf16_mul", a, b), bits(bf16_mul(bf16_to_f32(a), bf16_to_f32(b))), "bf16_mul", (a, b))

# ---- GEMMs --------------------------------------------------------------------------


def padded(a, rows, cols):
    out = np.zeros((rows, cols), a.dtype)
    out[: a.shape[0], : a.shape[1]] = a
    return out


@case
def gemm_equals_the_numpy_order_of_additions_bit_for_bit():
    specials = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
                         0x7FC0, 0xFFC1, 0x3F80, 0xBF80, 0x2000, 0x6000], np.uint16)
    for n, (m, k, j) in ((4, (5, 9, 6)), (8, (7, 37, 9)), (16, (12, 50, 17)), (16, (3, 16, 16))):
        a = random_bf16_normal((m, k))
        w = random_bf16_normal((k, j))
        if k > 16:  # a sprinkle of specials (without them in the small shapes)
            a = np.where(RNG.random((m, k)) < 0.05, RNG.choice(specials, (m, k)), a)
            w = np.where(RNG.random((k, j)) < 0.02, RNG.choice(specials, (k, j)), w)
        kp = -(-k // n) * n
        want = bits(mxu_matmul(bf16_to_f32(padded(a, m, kp)), bf16_to_f32(padded(w, kp, j)), n))
        for datapath in ("both", "bf16"):
            got = probe_gemm(a, w, n, datapath)
            mismatches(got.ravel(), want.ravel(), f"C[N={n}, {m}x{k}x{j}, {datapath}]", ())
        got16 = probe_gemm(a, w, n, "both", "bf16")
        mismatches(got16.ravel(), (fp32_to_bf16(want.view(F32)).astype(np.uint32) << 16).ravel(),
                   f"bf16 C[N={n}, {m}x{k}x{j}]", ())


@case
def act_f32_equals_the_numpy_reimplementation():
    # Bias, scale, ReLU/ReLU6 and the clamp on the model's accumulators, in
    # the order of docs/numerics.md, as fp32 (RAW) and as bf16.
    n, m, k, j = 8, 9, 21, 13
    a = random_bf16_normal((m, k))
    w = random_bf16_normal((k, j))
    a[0, :3] = [0x7FC0, 0x7F80, 0x0001]   # a NaN row, specials in the clamp
    kp = -(-k // n) * n
    acc = mxu_matmul(bf16_to_f32(padded(a, m, kp)), bf16_to_f32(padded(w, kp, j)), n)
    bias = RNG.standard_normal(j).astype(F32)
    bias[1] = np.float32(np.inf)
    settings = [
        ("none", F32(1), F32(6), F32(-np.inf), F32(np.inf), None),
        ("relu", F32(0.5), F32(6), F32(-np.inf), F32(np.inf), bias),
        ("relu6", F32(3), F32(2.5), F32(-np.inf), F32(np.inf), bias),
        ("none", F32(-1.25), F32(6), F32(-1), F32(0.75), bias),
        ("relu", F32(2.0 ** -120), F32(6), F32(-np.inf), F32(np.inf), None),  # tiny: flushed
        ("relu6", F32(2.0 ** 100), F32(2.0 ** 120), F32(-2.0), F32(2.0 ** 127), bias),
    ]
    for func, scale, relu6, fmin, fmax, b in settings:
        y = act_f32(acc, b, scale, func, relu6, fmin, fmax)
        act = (func, scale, relu6, fmin, fmax, b)
        what = f"ACT F32 {func} scale {scale} bias {b is not None}"
        mismatches(probe_gemm(a, w, n, "both", "f32", act).ravel(), bits(y).ravel(), what, ())
        mismatches(probe_gemm(a, w, n, "bf16", "bf16", act).ravel(),
                   (fp32_to_bf16(y).astype(np.uint32) << 16).ravel(), what + " (bf16)", ())


RATIOS = []


def check_bound(n, m, k, j, output="f32", scale=1.0):
    a = fp32_to_bf16((RNG.standard_normal((m, k)) * scale).astype(F32))
    w = fp32_to_bf16(RNG.standard_normal((k, j)).astype(F32))
    af, wf = bf16_to_f32(a), bf16_to_f32(w)
    c_tpu = probe_gemm(a, w, n, "both", output).view(F32).astype(np.float64)
    c_f32 = (af.astype(F32) @ wf.astype(F32)).astype(np.float64)   # numpy/BLAS float32
    s = np.abs(af.astype(np.float64)) @ np.abs(wf.astype(np.float64))
    eps = 1 / (1 - (k - 1) * 2.0 ** -24) - 1
    bound = k * 2.0 ** -23 * (1 + eps) * s + (2 * k - 1) * 2.0 ** -126 * (1 + eps)
    if output == "bf16":  # plus the rounding to bf16: at most 2^-9 |C| (half an ulp of 8 bits)
        bound = bound + 2.0 ** -8 * np.abs(c_tpu)
    err = np.abs(c_tpu - c_f32)
    check(np.all(np.isfinite(c_tpu)), "non-finite result on normal data")
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    check(np.all(err <= bound),
          f"N={n} {m}x{k}x{j}: |C_tpu - C_f32| = {err[worst]:.3g} > bound {bound[worst]:.3g} at {worst}")
    ratio = float(np.max(err / s) / 2.0 ** -23)
    if output == "f32":
        p = -(-k // n)
        RATIOS.append((k, n, p, n + p - 2, ratio, scale))
    return ratio


@case
def gemm_within_the_error_bound_of_float32_matmul():
    # The table of docs/numerics.md, then K from 1 to several thousand.
    for n, m, k, j in ((16, 64, 256, 64), (32, 64, 1024, 64), (8, 32, 4096, 32),
                       (4, 16, 1, 8), (8, 16, 7, 8), (16, 16, 100, 24), (16, 8, 3000, 16)):
        check_bound(n, m, k, j)
    check_bound(16, 32, 512, 32, "bf16")
    # Large values (products near 2^100): the bound is relative to S.
    check_bound(16, 16, 256, 16, scale=2.0 ** 90)


@case
def error_bound_catches_a_bf16_sized_error():
    # The bound is not vacuous: the exact result lies inside it, and a
    # result off by 2^-7 of one product (an operand rounded to bf16 twice,
    # a product dropped to bf16 precision) lies outside it.
    k, n = 64, 16
    a = fp32_to_bf16(RNG.standard_normal((4, k)).astype(F32))
    w = fp32_to_bf16(RNG.standard_normal((k, 4)).astype(F32))
    c_tpu = probe_gemm(a, w, n).view(F32).astype(np.float64)
    af, wf = bf16_to_f32(a).astype(np.float64), bf16_to_f32(w).astype(np.float64)
    s = np.abs(af) @ np.abs(wf)
    bound = k * 2.0 ** -23 * 1.001 * s
    check(np.all(np.abs(c_tpu - af @ wf) <= bound), "the exact result is outside the bound")
    wrong = c_tpu + np.abs(af[:, :1] @ wf[:1, :]) * 2.0 ** -7  # one product off by 2^-7 of itself
    check(np.any(np.abs(wrong - af @ wf) > bound), "the bound does not see a bf16-sized error")


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
    failed = 0
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        try:
            fn()
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - report every failure and go on
            failed += 1
            detail = str(e) if isinstance(e, Failure) else traceback.format_exc()
            print(f"FAIL {fn.__name__}: {detail}")
    for k, n, p, h, ratio, scale in RATIOS:
        print(f"  K={k:5d} N={n:3d} P={p:4d} h_tpu={h:4d} A scale 2^{np.log2(scale):g}: "
              f"max |C_tpu - C_f32| / S = {ratio:.3f} * 2^-23 (bound {k} * 2^-23)")
    print(f"seed {seed}: {'all passed' if not failed else f'{failed} failed'} "
          f"(repeat with --seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
