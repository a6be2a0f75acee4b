// SPDX-License-Identifier: Apache-2.0
// Training arithmetic on raw bits (tpu/train_f32.h). The primitives are
// integer code; every elementary and lane function is straight-line code
// over them, in the order docs/numerics.md ("Training arithmetic") gives,
// because that order is the definition: a different order of the same
// operations rounds differently.
#include "tpu/train_f32.h"

#include <bit>
#include <climits>

namespace tpu {
namespace {

using namespace train_const;

constexpr uint32_t kSign = 0x80000000u;
constexpr uint32_t kMag = 0x7FFFFFFFu;

uint32_t biased_exp(fp32 x) { return (x >> 23) & 0xFF; }
bool is_zero(fp32 x) { return biased_exp(x) == 0; }  // zero or subnormal (read as zero)
bool is_neg(fp32 x) { return (x >> 31) != 0; }

// The flushed value as a signed magnitude, so that -0 and +0 are both 0 and
// the integer order is the order of the values (no NaN).
int64_t ordered(fp32 x) {
  const int64_t mag = is_zero(x) ? 0 : int64_t(x & kMag);
  return is_neg(x) ? -mag : mag;
}

fp32 add(fp32 a, fp32 b) { return fp32_add(a, b); }
fp32 mul(fp32 a, fp32 b) { return fp32_mul(a, b); }
fp32 sub(fp32 a, fp32 b) { return fp32_sub(a, b); }

}  // namespace

// ---- Exact primitives ----

fp32 fp32_neg(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return (x & kSign) ^ kSign;
  return x ^ kSign;
}

fp32 fp32_sub(fp32 a, fp32 b) { return fp32_add(a, fp32_neg(b)); }

bool fp32_gt(fp32 a, fp32 b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return false;
  return ordered(a) > ordered(b);
}

bool fp32_eq(fp32 a, fp32 b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return false;
  return ordered(a) == ordered(b);
}

int32_t fp32_rint(fp32 x) {
  if (fp32_is_nan(x) || is_zero(x)) return 0;
  const int e = int(biased_exp(x)) - 127;
  if (e >= 31) return is_neg(x) ? INT32_MIN : INT32_MAX;  // also inf; -2^31 itself is INT32_MIN
  const uint64_t sig = (1u << 23) | (x & 0x7FFFFFu);      // |x| = sig * 2^(e - 23)
  uint64_t q;
  if (e >= 23) {
    q = sig << (e - 23);
  } else if (e < -1) {
    q = 0;  // |x| < 1/2
  } else {
    const int drop = 23 - e;  // 1..24 bits below the integer part
    q = sig >> drop;
    const uint64_t rest = sig & ((uint64_t{1} << drop) - 1), half = uint64_t{1} << (drop - 1);
    if (rest > half || (rest == half && (q & 1))) q += 1;
  }
  return is_neg(x) ? int32_t(-int64_t(q)) : int32_t(q);
}

fp32 fp32_from_int(int32_t k) {
  if (k == 0) return 0;
  const uint32_t sign = k < 0 ? kSign : 0;
  const uint32_t mag = k < 0 ? uint32_t(0) - uint32_t(k) : uint32_t(k);
  const int lead = 31 - std::countl_zero(mag);  // 0..31
  uint32_t e = uint32_t(lead) + 127;
  uint32_t sig;
  if (lead <= 23) {
    sig = mag << (23 - lead);
  } else {
    const int drop = lead - 23;
    sig = mag >> drop;
    const uint32_t rest = mag & ((1u << drop) - 1), half = 1u << (drop - 1);
    if (rest > half || (rest == half && (sig & 1))) {
      sig += 1;
      if (sig == (1u << 24)) {
        sig >>= 1;
        e += 1;
      }
    }
  }
  return sign | (e << 23) | (sig & 0x7FFFFFu);
}

fp32 fp32_ldexp(fp32 x, int k) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (fp32_is_inf(x)) return x;
  if (is_zero(x)) return x & kSign;
  const int64_t e = int64_t(biased_exp(x)) + k;
  if (e >= 0xFF) return (x & kSign) | kFp32PosInf;
  if (e <= 0) return x & kSign;
  return (x & 0x807FFFFFu) | (uint32_t(e) << 23);
}

int fp32_exponent(fp32 x) {
  const uint32_t e = biased_exp(x);
  return e == 0 || e == 0xFF ? 0 : int(e) - 127;
}

fp32 fp32_significand(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (fp32_is_inf(x)) return x;
  if (is_zero(x)) return x & kSign;
  return (x & 0x807FFFFFu) | (127u << 23);
}

// ---- Elementary functions ----

namespace {

// 1/m for m in [1, 2): the linear seed, then Newton steps y += y (1 - m y).
fp32 recip_reduced(fp32 m) {
  fp32 y = sub(kRecipSeedC, mul(kRecipSeedM, m));
  for (int i = 0; i < kRecipSteps; ++i) y = add(y, mul(y, sub(kOne, mul(m, y))));
  return y;
}

// 1/sqrt(m) for m in [1, 4): the seed from the bit pattern, then Newton
// steps y += (y / 2) (1 - m y y), with m y y ordered as (m y) y.
fp32 rsqrt_reduced(fp32 m) {
  fp32 y = kRsqrtMagic - (m >> 1);
  for (int i = 0; i < kRsqrtSteps; ++i) y = add(y, mul(mul(kHalf, y), sub(kOne, mul(mul(m, y), y))));
  return y;
}

// x = m * 2^(2k) with m in [1, 4), for a normal x > 0.
struct EvenSplit {
  fp32 m;
  int k;
};
EvenSplit split_even(fp32 x) {
  const int k = fp32_exponent(x) >> 1;  // floor(e / 2)
  return {fp32_ldexp(x, -2 * k), k};
}

}  // namespace

fp32 fp32_recip(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return (x & kSign) | kFp32PosInf;
  if (fp32_is_inf(x)) return x & kSign;
  const fp32 y = fp32_ldexp(recip_reduced(fp32_significand(x & kMag)), -fp32_exponent(x));
  return is_neg(x) ? fp32_neg(y) : y;
}

fp32 fp32_rsqrt(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return (x & kSign) | kFp32PosInf;
  if (is_neg(x)) return kFp32CanonicalNan;
  if (fp32_is_inf(x)) return 0;
  const EvenSplit s = split_even(x);
  return fp32_ldexp(rsqrt_reduced(s.m), -s.k);
}

fp32 fp32_sqrt(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return x & kSign;
  if (is_neg(x)) return kFp32CanonicalNan;
  if (fp32_is_inf(x)) return x;
  const EvenSplit s = split_even(x);
  const fp32 y = rsqrt_reduced(s.m);
  fp32 r = mul(s.m, y);                                 // sqrt(m), within a few ulps
  r = add(r, mul(mul(kHalf, y), sub(s.m, mul(r, r))));  // one correction with the residual m - r^2
  return fp32_ldexp(r, s.k);
}

fp32 fp32_exp(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (fp32_gt(x, kExpHi)) return kFp32PosInf;
  if (fp32_gt(kExpLo, x)) return 0;
  // x = k ln2 + r, |r| <= ln2 / 2 (about), with k ln2 in two parts.
  const int32_t k = fp32_rint(mul(x, kInvLn2));
  const fp32 kf = fp32_from_int(k);
  const fp32 r = sub(sub(x, mul(kf, kLn2Hi)), mul(kf, kLn2Lo));
  // e^r by Horner's rule on the Taylor polynomial of degree 7.
  fp32 p = kExpC[7];
  for (int j = 6; j >= 0; --j) p = add(mul(p, r), kExpC[j]);
  return fp32_ldexp(p, k);
}

fp32 fp32_log(fp32 x) {
  if (fp32_is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return 0xFF800000u;  // -inf
  if (is_neg(x)) return kFp32CanonicalNan;
  if (fp32_is_inf(x)) return x;
  // x = m 2^e with m in (sqrt2 / 2, sqrt2]; f = m - 1 is exact.
  int e = fp32_exponent(x);
  fp32 m = fp32_significand(x);
  if (fp32_gt(m, kSqrt2)) {
    m = fp32_ldexp(m, -1);
    e += 1;
  }
  const fp32 f = sub(m, kOne);
  // log(1 + f) = f - (hfsq - s (hfsq + R)), s = f / (2 + f), hfsq = f^2 / 2,
  // R = z (2/3 + z (2/5 + z (2/7 + z 2/9))), z = s^2: the exact f leads and
  // the polynomial only corrects it.
  const fp32 s = mul(f, fp32_recip(add(kTwo, f)));
  const fp32 z = mul(s, s);
  const fp32 big_r = mul(z, add(kLogC[0], mul(z, add(kLogC[1], mul(z, add(kLogC[2], mul(z, kLogC[3])))))));
  const fp32 hfsq = mul(kHalf, mul(f, f));
  const fp32 ef = fp32_from_int(e);
  const fp32 lo = add(mul(s, add(hfsq, big_r)), mul(ef, kLn2Lo));
  return add(mul(ef, kLn2Hi), sub(f, sub(hfsq, lo)));
}

// ---- Lane functions ----

namespace train {

fp32 mask_lane(fp32 y, bf16 a) { return fp32_gt(bf16_to_fp32(a), 0) ? y : 0; }

namespace {
Weight weight(fp32 w) { return {w, fp32_to_bf16(w)}; }
}  // namespace

Weight sgd_lane(fp32 w, fp32 g, fp32 lr) { return weight(sub(w, mul(lr, g))); }

MomentumLane momentum_lane(fp32 w, fp32 v, fp32 g, fp32 lr, fp32 mom) {
  const fp32 v1 = add(mul(mom, v), g);
  return {weight(sub(w, mul(lr, v1))), v1};
}

AdamStep adam_step(fp32 b1p, fp32 b2p, fp32 lr, const AdamParams& p) {
  const fp32 b1 = mul(b1p, p.beta1), b2 = mul(b2p, p.beta2);
  return {b1, b2, mul(lr, mul(fp32_sqrt(sub(kOne, b2)), fp32_recip(sub(kOne, b1))))};
}

AdamLane adam_lane(fp32 w, fp32 m, fp32 v, fp32 g, fp32 alpha, const AdamParams& p) {
  const fp32 m1 = add(m, mul(sub(g, m), p.c1));
  const fp32 v1 = add(v, mul(sub(mul(g, g), v), p.c2));
  const fp32 step = mul(mul(m1, alpha), fp32_recip(add(fp32_sqrt(v1), p.eps)));
  return {weight(sub(w, step)), m1, v1};
}

SoftmaxCe softmax_ce_lane(const fp32* z, int c, int32_t y, fp32 inv_b, bf16* grad) {
  if (y < 0 || y >= c) {
    for (int j = 0; j < c; ++j) grad[j] = 0;
    return {0, 0};
  }
  // Pass 1: the maximum (the first one wins) and its index.
  fp32 m = z[0];
  int idx = 0;
  for (int j = 1; j < c; ++j)
    if (fp32_gt(z[j], m)) m = z[j], idx = j;
  // Pass 2: the sum of exponentials in class order.
  fp32 s = fp32_exp(sub(z[0], m));
  for (int j = 1; j < c; ++j) s = add(s, fp32_exp(sub(z[j], m)));
  const fp32 r = fp32_recip(s);
  const fp32 loss = sub(fp32_log(s), sub(z[y], m));
  // Pass 3: (softmax - onehot) / B.
  for (int j = 0; j < c; ++j) {
    const fp32 p = mul(fp32_exp(sub(z[j], m)), r);
    grad[j] = fp32_to_bf16(mul(sub(p, j == y ? kOne : 0), inv_b));
  }
  return {loss, idx == y ? kOne : 0};
}

}  // namespace train
}  // namespace tpu
