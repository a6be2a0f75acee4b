// SPDX-License-Identifier: Apache-2.0
// Reference numerics of the bf16 mode on raw bits (tpu/bf16.h).
//
// fp32_add keeps 32 bits below the significand and ORs everything shifted
// further into the lowest bit, a wider (and different) scheme than the
// guard/round/sticky bits of rtl/mxu/fp32_add.sv; both give the correctly
// rounded sum, so they agree bit for bit.
#include "tpu/bf16.h"

#include <bit>
#include <utility>

namespace tpu {
namespace {

constexpr uint32_t kSign32 = 0x80000000u;

struct Unpacked {
  uint32_t sign;  // 0 or 1
  int exp;        // biased exponent, 0..255 (0 after a flush)
  uint32_t frac;  // fraction bits, without the hidden one
};

Unpacked unpack32(fp32 x) {
  Unpacked u{x >> 31, int((x >> 23) & 0xFF), x & 0x7FFFFFu};
  if (u.exp == 0) u.frac = 0;  // subnormal inputs read as zero
  return u;
}

fp32 signed_zero(uint32_t sign) { return sign << 31; }
fp32 signed_inf(uint32_t sign) { return (sign << 31) | kFp32PosInf; }

}  // namespace

fp32 bf16_mul(bf16 a, bf16 b) {
  const uint32_t sa = a >> 15, sb = b >> 15, s = sa ^ sb;
  const int ea = (a >> 7) & 0xFF, eb = (b >> 7) & 0xFF;
  const uint32_t fa = a & 0x7F, fb = b & 0x7F;
  const bool a_nan = ea == 0xFF && fa != 0, b_nan = eb == 0xFF && fb != 0;
  const bool a_inf = ea == 0xFF && fa == 0, b_inf = eb == 0xFF && fb == 0;
  const bool a_zero = ea == 0, b_zero = eb == 0;  // zero or subnormal

  if (a_nan || b_nan) return kFp32CanonicalNan;
  if ((a_inf && b_zero) || (a_zero && b_inf)) return kFp32CanonicalNan;
  if (a_inf || b_inf) return signed_inf(s);
  if (a_zero || b_zero) return signed_zero(s);

  // (1.fa) * (1.fb) = p / 2^14 with p in [2^14, 2^16).
  const uint32_t p = ((0x80u | fa) * (0x80u | fb));
  const int top = p >> 15;  // 1 when the product is in [2, 4)
  const int e = ea + eb - 127 + top;
  if (e <= 0) return signed_zero(s);
  if (e >= 0xFF) return signed_inf(s);
  // Drop the hidden one and left-align the remaining 14 + top bits in 23.
  const uint32_t frac = (p << (9 - top)) & 0x7FFFFFu;
  return (s << 31) | (uint32_t(e) << 23) | frac;
}

fp32 fp32_add(fp32 a, fp32 b) {
  Unpacked x = unpack32(a), y = unpack32(b);
  const bool x_nan = x.exp == 0xFF && x.frac != 0, y_nan = y.exp == 0xFF && y.frac != 0;
  const bool x_inf = x.exp == 0xFF && x.frac == 0, y_inf = y.exp == 0xFF && y.frac == 0;
  if (x_nan || y_nan) return kFp32CanonicalNan;
  if (x_inf && y_inf) return x.sign == y.sign ? signed_inf(x.sign) : kFp32CanonicalNan;
  if (x_inf) return signed_inf(x.sign);
  if (y_inf) return signed_inf(y.sign);
  const bool x_zero = x.exp == 0, y_zero = y.exp == 0;
  if (x_zero && y_zero) return signed_zero(x.sign & y.sign);
  if (x_zero) return b;  // b is normal here
  if (y_zero) return a;

  // Order by magnitude: |x| >= |y|. The result takes x's sign.
  if ((b & ~kSign32) > (a & ~kSign32)) std::swap(x, y);
  const int d = x.exp - y.exp;  // 0..253
  // Significands with the hidden one at bit 55 and 32 bits below the LSB.
  uint64_t mx = uint64_t((1u << 23) | x.frac) << 32;
  uint64_t my = uint64_t((1u << 23) | y.frac) << 32;
  if (d >= 63) {
    my = 1;  // only a sticky bit is left (my is nonzero)
  } else if (d > 0) {
    const bool sticky = (my & ((uint64_t{1} << d) - 1)) != 0;
    my = (my >> d) | uint64_t{sticky};
  }
  uint64_t m = x.sign == y.sign ? mx + my : mx - my;
  if (m == 0) return 0;  // exact cancellation: +0 under round-to-nearest

  // Normalize so that the leading one is at bit 55.
  int e = x.exp;
  const int lead = 63 - std::countl_zero(m);
  if (lead > 55) {  // carry out of an addition: one bit right, keep the sticky
    m = (m >> 1) | (m & 1);
    e += 1;
  } else if (lead < 55) {  // cancellation: exact, nothing was shifted out
    m <<= (55 - lead);
    e -= 55 - lead;
  }
  // A sum below 2^-126 is a multiple of 2^-149 (both inputs are), so it is
  // exact and flushing it before or after rounding is the same.
  if (e <= 0) return signed_zero(x.sign);

  uint32_t sig = uint32_t(m >> 32);  // 24 bits, hidden one at bit 23
  const uint32_t rest = uint32_t(m);
  constexpr uint32_t kHalf = 0x80000000u;
  if (rest > kHalf || (rest == kHalf && (sig & 1))) {
    sig += 1;
    if (sig == (1u << 24)) {  // rounded up to the next power of two
      sig >>= 1;
      e += 1;
    }
  }
  if (e >= 0xFF) return signed_inf(x.sign);
  return (x.sign << 31) | (uint32_t(e) << 23) | (sig & 0x7FFFFFu);
}

fp32 fp32_mul(fp32 a, fp32 b) {
  const Unpacked x = unpack32(a), y = unpack32(b);
  const uint32_t s = x.sign ^ y.sign;
  const bool x_nan = x.exp == 0xFF && x.frac != 0, y_nan = y.exp == 0xFF && y.frac != 0;
  const bool x_inf = x.exp == 0xFF && x.frac == 0, y_inf = y.exp == 0xFF && y.frac == 0;
  const bool x_zero = x.exp == 0, y_zero = y.exp == 0;  // zero or flushed subnormal
  if (x_nan || y_nan) return kFp32CanonicalNan;
  if ((x_inf && y_zero) || (x_zero && y_inf)) return kFp32CanonicalNan;
  if (x_inf || y_inf) return signed_inf(s);
  if (x_zero || y_zero) return signed_zero(s);

  // (1.fx) * (1.fy) = p / 2^46 with p in [2^46, 2^48), exact.
  const uint64_t p = uint64_t((1u << 23) | x.frac) * uint64_t((1u << 23) | y.frac);
  const int top = int(p >> 47);  // 1 when the product is in [2, 4)
  int e = x.exp + y.exp - 127 + top;
  // The exact product is below 2^-126: zero, whatever rounding would do.
  if (e <= 0) return signed_zero(s);
  const int drop = 23 + top;  // bits below the 24-bit significand
  uint32_t sig = uint32_t(p >> drop);
  const uint64_t rest = p & ((uint64_t{1} << drop) - 1), half = uint64_t{1} << (drop - 1);
  if (rest > half || (rest == half && (sig & 1))) {
    sig += 1;
    if (sig == (1u << 24)) {  // rounded up to the next power of two
      sig >>= 1;
      e += 1;
    }
  }
  if (e >= 0xFF) return signed_inf(s);
  return (s << 31) | (uint32_t(e) << 23) | (sig & 0x7FFFFFu);
}

namespace {

// Flushes a subnormal to zero of its sign; NaN is reported by the caller.
fp32 flush(fp32 x) { return (x & 0x7F800000u) == 0 ? x & kSign32 : x; }

// a < b in the order -inf < ... < -0 < +0 < ... < +inf (no NaN).
bool fp32_less(fp32 a, fp32 b) {
  const bool na = a >> 31, nb = b >> 31;
  if (na != nb) return na;                 // negative below positive, -0 below +0
  return na ? a > b : a < b;               // same sign: magnitude order, reversed if negative
}

}  // namespace

fp32 fp32_max(fp32 a, fp32 b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return kFp32CanonicalNan;
  a = flush(a);
  b = flush(b);
  return fp32_less(a, b) ? b : a;
}

fp32 fp32_min(fp32 a, fp32 b) {
  if (fp32_is_nan(a) || fp32_is_nan(b)) return kFp32CanonicalNan;
  a = flush(a);
  b = flush(b);
  return fp32_less(b, a) ? b : a;
}

bf16 fp32_to_bf16(fp32 x) {
  const uint32_t exp = (x >> 23) & 0xFF;
  if (fp32_is_nan(x)) return kBf16CanonicalNan;
  if (exp == 0) return bf16((x >> 16) & 0x8000u);  // zero or subnormal: signed zero
  if (exp == 0xFF) return bf16(x >> 16);           // infinity
  // Round to nearest even on the low 16 bits. A carry out of the fraction
  // increments the exponent, which is right, up to and including inf.
  const uint32_t keep = x >> 16, rest = x & 0xFFFFu;
  const uint32_t up = (rest > 0x8000u || (rest == 0x8000u && (keep & 1))) ? 1 : 0;
  return bf16(keep + up);
}

fp32 bf16_dot_column(const bf16* a, const bf16* w, size_t n, fp32 psum_in) {
  fp32 psum = psum_in;
  for (size_t i = 0; i < n; ++i) psum = fp32_add(psum, bf16_mul(a[i], w[i]));
  return psum;
}

}  // namespace tpu
