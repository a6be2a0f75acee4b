# SPDX-License-Identifier: Apache-2.0
"""The TPU's fp32 lane arithmetic in numpy, bit for bit (docs/numerics.md).

Written from docs/numerics.md, sections "Rules common to all operations" to
"fp32 -> bf16" (the primitives) and "Training arithmetic" (the elementary
and lane functions of training); common.train_f32_numpy checks it against
the C++ reference (tpu/train_f32.h) on every run.

Conventions:
  - fp32 values are numpy float32 arrays (or scalars); every function takes
    array-likes, broadcasts, and returns float32 arrays. Pass float32, not
    float64: a float64 input is rounded to float32 first.
  - NaN results are the canonical NaN (bits 0x7FC00000); subnormal inputs
    read as zeros and no result is subnormal.
  - bf16 values are uint16 bit patterns (fp32_to_bf16, the mask's forward
    activation, the bf16 weight copies).
  - bits(x) and from_bits(u) convert between float32 values and uint32 bits.

    import tpu_fp32 as t
    w, w_bf16 = t.sgd_lane(w, g, np.float32(0.01))
    grad, loss, correct = t.softmax_ce_lane(logits, labels, np.float32(1 / 32))
"""

import numpy as np

F32 = np.float32
F64 = np.float64
_MIN_NORMAL = 2.0 ** -126


def bits(x):
    """float32 values -> uint32 bit patterns."""
    return np.asarray(x, F32).view(np.uint32)


def from_bits(u):
    """uint32 bit patterns -> float32 values."""
    return np.asarray(u, np.uint32).view(F32)


def _c(u):
    """A constant given by its fp32 bits."""
    return np.uint32(u).view(F32)


NAN = _c(0x7FC00000)
ONE, TWO, HALF = _c(0x3F800000), _c(0x40000000), _c(0x3F000000)

# recip: the seed 24/17 - 8/17 m, three Newton steps.
R0, R1 = _c(0x3FB4B4B5), _c(0x3EF0F0F1)
# rsqrt: the seed's integer.
MAGIC = np.uint32(0x5F37642F)
# exp
X_HI, X_LO = _c(0x42B20000), _c(0xC2B00000)  # 89, -88
INV_LN2 = _c(0x3FB8AA3B)
LN2_HI, LN2_LO = _c(0x3F317200), _c(0x35BFBE8E)
EXP_C = [_c(u) for u in (0x3F800000, 0x3F800000, 0x3F000000, 0x3E2AAAAB,  # 1/j!, j = 0..7
                         0x3D2AAAAB, 0x3C088889, 0x3AB60B61, 0x39500D01)]
# log
SQRT2 = _c(0x3FB504F3)
LOG_C = [_c(u) for u in (0x3F2AAAAB, 0x3ECCCCCD, 0x3E924925, 0x3E638E39)]  # 2/3, 2/5, 2/7, 2/9
# Adam (Keras' defaults)
BETA1, BETA2 = _c(0x3F666666), _c(0x3F7FBE77)
C1, C2, EPS = _c(0x3DCCCCCD), _c(0x3A83126F), _c(0x33D6BF95)


def _f32(x):
    return np.asarray(x, F32)


def _f64(x):
    """float32 -> float64, exact (quietly: a signalling NaN stays a NaN)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(x, F32).astype(F64)


def _where(cond, a, b):
    return np.where(cond, _f32(a), _f32(b)).astype(F32)


# ---- The primitives ------------------------------------------------------------


def ftz(x):
    """Subnormals become zeros of the same sign (rule 1)."""
    x = _f32(x)
    return _where((x != 0) & (np.abs(x) < F32(_MIN_NORMAL)), np.copysign(F32(0), x), x)


def canon(x):
    """Every NaN becomes the canonical NaN."""
    x = _f32(x)
    return _where(np.isnan(x), NAN, x)


def _round_flush(v):
    """float64 values, each exactly a float32 result's unrounded value or
    the correctly rounded one -> float32: flushed below 2^-126 first (the
    exact value decides), then rounded once."""
    v = np.asarray(v, F64)
    v = np.where((v != 0) & (np.abs(v) < _MIN_NORMAL), np.copysign(0.0, v), v)
    with np.errstate(all="ignore"):
        return canon(v.astype(F32))


def fp32_add(a, b):
    """a + b. Two float32s sum exactly in float64 unless their exponents are
    far apart, and then rounding the float64 sum to float32 is still the
    correctly rounded sum (53 >= 2 * 24 + 2); a sum below 2^-126 is exact."""
    with np.errstate(all="ignore"):
        return _round_flush(_f64(ftz(a)) + _f64(ftz(b)))


def fp32_mul(a, b):
    """a * b: the 48-bit product is exact in float64; the exact value decides
    the flush."""
    with np.errstate(all="ignore"):
        return _round_flush(_f64(ftz(a)) * _f64(ftz(b)))


def fp32_max(a, b):
    """NaN propagates; -0 is below +0."""
    a, b = ftz(a), ftz(b)
    bigger = (a > b) | ((a == b) & ~np.signbit(a))
    return canon(_where(np.isnan(a) | np.isnan(b), NAN, _where(bigger, a, b)))


def fp32_min(a, b):
    a, b = ftz(a), ftz(b)
    smaller = (a < b) | ((a == b) & np.signbit(a))
    return canon(_where(np.isnan(a) | np.isnan(b), NAN, _where(smaller, a, b)))


def fp32_to_bf16(x):
    """float32 -> bf16 bits (uint16): nearest even on the dropped 16 bits;
    NaN -> 0x7FC0, subnormal -> signed zero, overflow -> inf."""
    u = bits(x).astype(np.uint64)
    exp = (u >> np.uint64(23)) & np.uint64(0xFF)
    frac = u & np.uint64(0x7FFFFF)
    r = (u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    r = np.where(exp == 0, (u >> np.uint64(16)) & np.uint64(0x8000), r)
    r = np.where(exp == 0xFF, u >> np.uint64(16), r)
    r = np.where((exp == 0xFF) & (frac != 0), np.uint64(0x7FC0), r)
    return r.astype(np.uint16)


def bf16_to_fp32(b):
    """bf16 bits (uint16) -> float32 values, exact (a subnormal stays one
    here; the operations read it as zero)."""
    return from_bits(np.asarray(b, np.uint32) << np.uint32(16))


def fp32_neg(x):
    """-x: the sign flipped after the flush; NaN -> NaN."""
    return canon(-ftz(x))


def fp32_sub(a, b):
    return fp32_add(a, fp32_neg(b))


def fp32_gt(a, b):
    """a > b on flushed values, False with NaN (numpy's > already orders
    -0 = +0 and is False with NaN)."""
    return ftz(a) > ftz(b)


def fp32_eq(a, b):
    return ftz(a) == ftz(b)


def fp32_rint(x):
    """Nearest integer, ties to even, as int64 values in the int32 range;
    NaN and zeros -> 0, saturated beyond +-2^31."""
    x = _f64(ftz(x))
    with np.errstate(all="ignore"):
        r = np.clip(np.rint(x), -2.0 ** 31, 2.0 ** 31 - 1)
    return np.where(np.isnan(r), 0, r).astype(np.int64)


def fp32_from_int(k):
    """int32 -> float32, nearest even (int -> float64 is exact, then one
    rounding)."""
    return np.asarray(k, np.int64).astype(F64).astype(F32)


def fp32_ldexp(x, k):
    """x * 2^k exactly; 2^128 or more -> inf, below 2^-126 -> zero, signs
    kept; NaN canonical; inf and zeros pass through."""
    x = _f64(ftz(x))
    k = np.clip(np.asarray(k, np.int64), -400, 400)  # beyond both ends either way
    with np.errstate(all="ignore"):
        return _round_flush(np.ldexp(x, k.astype(np.int32)))


def fp32_exponent(x):
    """e of a normal x = +-1.f 2^e; 0 for zeros, subnormals, inf and NaN."""
    x = ftz(x)
    _, e = np.frexp(_f64(x))
    normal = np.isfinite(x) & (x != 0)
    return np.where(normal, e.astype(np.int64) - 1, 0)


def fp32_significand(x):
    """+-1.f of a normal x; other inputs come back (flushed, NaN canonical)."""
    x = ftz(x)
    m, _ = np.frexp(_f64(x))
    normal = np.isfinite(x) & (x != 0)
    return canon(_where(normal, (2 * m).astype(F32), x))


# ---- Elementary functions ---------------------------------------------------------
# Each computes its sequence on every lane (quietly: the special lanes produce
# garbage there) and then puts the special cases on top, in the order the
# docs list them, the first listed winning.


def _specials(result, cases):
    """cases: (condition, value) in the documented order, first wins."""
    for cond, value in reversed(cases):
        result = _where(cond, value, result)
    return result


def _classes(x):
    x = ftz(x)
    return x, np.isnan(x), x == 0, np.isinf(x), np.signbit(x)


def fp32_recip(x):
    """1/x: the linear seed on the significand, three Newton steps."""
    x, nan, zero, inf, neg = _classes(x)
    with np.errstate(all="ignore"):
        m = fp32_significand(np.abs(x))
        y = fp32_sub(R0, fp32_mul(R1, m))
        for _ in range(3):
            y = fp32_add(y, fp32_mul(y, fp32_sub(ONE, fp32_mul(m, y))))
        r = fp32_ldexp(y, -fp32_exponent(x))
        r = _where(neg, fp32_neg(r), r)
    return _specials(r, [(nan, NAN), (zero, np.copysign(F32(np.inf), x)), (inf, np.copysign(F32(0), x))])


def _rsqrt_core(x):
    """(m, k, y): x = m 4^k with m in [1, 4), y about 1/sqrt(m)."""
    k = fp32_exponent(x) >> 1
    m = fp32_ldexp(x, -2 * k)
    y = from_bits(MAGIC - (bits(m) >> np.uint32(1)))
    for _ in range(3):
        y = fp32_add(y, fp32_mul(fp32_mul(HALF, y), fp32_sub(ONE, fp32_mul(fp32_mul(m, y), y))))
    return m, k, y


def fp32_rsqrt(x):
    x, nan, zero, inf, neg = _classes(x)
    with np.errstate(all="ignore"):
        _, k, y = _rsqrt_core(x)
        r = fp32_ldexp(y, -k)
    return _specials(r, [(nan, NAN), (zero, np.copysign(F32(np.inf), x)), (neg, NAN), (inf, F32(0))])


def fp32_sqrt(x):
    x, nan, zero, inf, neg = _classes(x)
    with np.errstate(all="ignore"):
        m, k, y = _rsqrt_core(x)
        s = fp32_mul(m, y)
        s = fp32_add(s, fp32_mul(fp32_mul(HALF, y), fp32_sub(m, fp32_mul(s, s))))
        r = fp32_ldexp(s, k)
    return _specials(r, [(nan, NAN), (zero, x), (neg, NAN), (inf, x)])


def fp32_exp(x):
    """e^x: k = rint(x / ln2), r = x - k ln2 in two parts, Taylor degree 7."""
    x = ftz(x)
    with np.errstate(all="ignore"):
        k = fp32_rint(fp32_mul(x, INV_LN2))
        kf = fp32_from_int(k)
        r = fp32_sub(fp32_sub(x, fp32_mul(kf, LN2_HI)), fp32_mul(kf, LN2_LO))
        p = _f32(np.broadcast_to(EXP_C[7], r.shape))
        for c in reversed(EXP_C[:7]):
            p = fp32_add(fp32_mul(p, r), c)
        res = fp32_ldexp(p, k)
    return _specials(res, [(np.isnan(x), NAN), (fp32_gt(x, X_HI), F32(np.inf)), (fp32_gt(X_LO, x), F32(0))])


def fp32_log(x):
    """log x = e ln2 + log(1 + f), log(1 + f) = f - (hfsq - s (hfsq + R))."""
    x, nan, zero, inf, neg = _classes(x)
    with np.errstate(all="ignore"):
        e = fp32_exponent(x)
        m = fp32_significand(x)
        big = fp32_gt(m, SQRT2)
        m = _where(big, fp32_ldexp(m, -1), m)
        e = e + big
        f = fp32_sub(m, ONE)
        s = fp32_mul(f, fp32_recip(fp32_add(TWO, f)))
        z = fp32_mul(s, s)
        poly = fp32_mul(z, LOG_C[3])
        for c in (LOG_C[2], LOG_C[1]):
            poly = fp32_mul(z, fp32_add(c, poly))
        poly = fp32_mul(z, fp32_add(LOG_C[0], poly))
        hfsq = fp32_mul(HALF, fp32_mul(f, f))
        ef = fp32_from_int(e)
        lo = fp32_add(fp32_mul(s, fp32_add(hfsq, poly)), fp32_mul(ef, LN2_LO))
        r = fp32_add(fp32_mul(ef, LN2_HI), fp32_sub(f, fp32_sub(hfsq, lo)))
    return _specials(r, [(nan, NAN), (zero, F32(-np.inf)), (neg, NAN), (inf, x)])


# ---- Lane functions ----------------------------------------------------------------


def mask_lane(y, a_bf16):
    """ReLU derivative: y where the bf16 forward activation is above +0."""
    return _where(fp32_gt(bf16_to_fp32(a_bf16), F32(0)), y, F32(0))


def sgd_lane(w, g, lr):
    """-> (w', bf16 bits of w')."""
    w1 = fp32_sub(w, fp32_mul(lr, g))
    return w1, fp32_to_bf16(w1)


def momentum_lane(w, v, g, lr, mom):
    """v' = mom v + g, w' = w - lr v' -> (w', v', bf16 bits of w')."""
    v1 = fp32_add(fp32_mul(mom, v), g)
    w1 = fp32_sub(w, fp32_mul(lr, v1))
    return w1, v1, fp32_to_bf16(w1)


def adam_step(b1p, b2p, lr, beta1=BETA1, beta2=BETA2):
    """Once per step (b1p = b2p = 1.0 before the first) -> (b1p', b2p', alpha)."""
    b1 = fp32_mul(b1p, beta1)
    b2 = fp32_mul(b2p, beta2)
    alpha = fp32_mul(lr, fp32_mul(fp32_sqrt(fp32_sub(ONE, b2)), fp32_recip(fp32_sub(ONE, b1))))
    return b1, b2, alpha


def adam_lane(w, m, v, g, alpha, c1=C1, c2=C2, eps=EPS):
    """Per weight -> (w', m', v', bf16 bits of w')."""
    m1 = fp32_add(m, fp32_mul(fp32_sub(g, m), c1))
    v1 = fp32_add(v, fp32_mul(fp32_sub(fp32_mul(g, g), v), c2))
    w1 = fp32_sub(w, fp32_mul(fp32_mul(m1, alpha), fp32_recip(fp32_add(fp32_sqrt(v1), eps))))
    return w1, m1, v1, fp32_to_bf16(w1)


def softmax_ce_lane(z, y, inv_b):
    """Softmax cross-entropy, one sample per lane.

    z: (B, C) float32 logits (sample b's in row b, class order), y: (B,)
    integer labels (valid when 0 <= y < C), inv_b: float32 1/B.
    -> (grad (B, C) bf16 bits, loss (B,) float32, correct (B,) float32).
    An invalid label gives +0 gradients, loss and correct.
    """
    z = _f32(z)
    y = np.asarray(y, np.int64)
    b, c = z.shape
    valid = (y >= 0) & (y < c)
    ys = np.where(valid, y, 0)
    with np.errstate(all="ignore"):
        m = z[:, 0].copy()
        idx = np.zeros(b, np.int64)
        for j in range(1, c):
            up = fp32_gt(z[:, j], m)
            m = _where(up, z[:, j], m)
            idx = np.where(up, j, idx)
        s = fp32_exp(fp32_sub(z[:, 0], m))
        for j in range(1, c):
            s = fp32_add(s, fp32_exp(fp32_sub(z[:, j], m)))
        r = fp32_recip(s)
        zy = z[np.arange(b), ys]
        loss = fp32_sub(fp32_log(s), fp32_sub(zy, m))
        correct = _where(idx == ys, ONE, F32(0))
        grad = np.zeros((b, c), np.uint16)
        for j in range(c):
            p = fp32_mul(fp32_exp(fp32_sub(z[:, j], m)), r)
            grad[:, j] = fp32_to_bf16(fp32_mul(fp32_sub(p, _where(ys == j, ONE, F32(0))), inv_b))
    grad[~valid] = 0
    return grad, _where(valid, loss, F32(0)), _where(valid, correct, F32(0))


def ce_accumulate(l_sum, k_sum, loss, correct):
    """The instruction's per-lane sums: L += loss, K += correct."""
    return fp32_add(l_sum, loss), fp32_add(k_sum, correct)
