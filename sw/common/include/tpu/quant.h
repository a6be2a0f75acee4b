// SPDX-License-Identifier: Apache-2.0
// Exact integer arithmetic of the VPU. The RTL matches these functions bit
// for bit; the reference model and the driver call them.
//
// Requantization follows gemmlowp / TFLite's reference kernels:
//   q = clamp(zp + MBQM(x, M0, e), lo, hi),   x = sat32(acc + bias)
// where MBQM is TFLite's MultiplyByQuantizedMultiplier: e > 0 shifts x left
// by e (two's complement, wrapping) before SRDHM, e <= 0 is a rounding right
// shift by -e after it. The per-tensor registers give every lane the same
// M0 and e = -s (s = QSHIFT, a right shift 0..31); the per-channel registers
// give each lane its own (docs/vpu.md).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace tpu::quant {

inline int32_t sat32(int64_t v) {
  return int32_t(std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                                     std::numeric_limits<int32_t>::max()));
}

inline int8_t sat8(int64_t v) { return int8_t(std::clamp<int64_t>(v, -128, 127)); }

// Saturating rounding doubling high multiply: a * b / 2^31 rounded to the
// nearest integer, with the single overflow case INT32_MIN * INT32_MIN
// saturating to INT32_MAX. The nudge and the truncating division make ties
// round toward +infinity (0.5 -> 1, -0.5 -> 0), exactly as gemmlowp does.
inline int32_t srdhm(int32_t a, int32_t b) {
  if (a == std::numeric_limits<int32_t>::min() && b == std::numeric_limits<int32_t>::min())
    return std::numeric_limits<int32_t>::max();
  const int64_t ab = int64_t{a} * int64_t{b};
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : 1 - (int64_t{1} << 30);
  // Division truncating toward zero, as in the reference kernel.
  return int32_t((ab + nudge) / (int64_t{1} << 31));
}

// Rounding divide by 2^exponent, rounding half away from zero (exponent 0..31).
inline int32_t rdbp(int32_t x, int exponent) {
  const int32_t mask = int32_t((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// The exponents a lane accepts (CFG CH_SHIFT): left shifts up to 31, right
// shifts up to 31.
inline constexpr int kMinExponent = -31;
inline constexpr int kMaxExponent = 31;

// One lane's scale M0 * 2^exponent, in TFLite's convention (the per-channel
// output_multiplier / output_shift of its CONV_2D and FULLY_CONNECTED kernels).
struct LaneScale {
  int32_t multiplier = 0x40000000;  // M0, Q31
  int32_t exponent = 0;             // e: > 0 left shift, <= 0 right shift by -e
  bool operator==(const LaneScale&) const = default;
};

// TFLite's MultiplyByQuantizedMultiplier(x, M0, e) (double rounding):
// RDBP(SRDHM(x * 2^left, M0), right), left = max(e, 0), right = max(-e, 0).
// x * 2^left is computed in int32 two's complement: bits shifted out of the
// top are lost (what the reference kernel's int32 multiply does on every
// compiler TFLite supports), so an overflowing left shift wraps. exponent
// must be in kMinExponent..kMaxExponent.
inline int32_t multiply_by_quantized_multiplier(int32_t x, int32_t multiplier, int exponent) {
  const int left = exponent > 0 ? exponent : 0;
  const int right = exponent > 0 ? 0 : -exponent;
  const int32_t shifted = int32_t(uint32_t(x) << left);  // modulo 2^32 (C++20)
  return rdbp(srdhm(shifted, multiplier), right);
}

// A real scale as (M0, e), as TFLite's QuantizeMultiplier does it:
// scale = f * 2^e with f in [0.5, 1) (frexp), M0 = round(f * 2^31) with ties
// away from zero; M0 = 2^31 becomes 2^30 with e + 1. Scales below 2^-32
// (e < -31) flush to (0, 0); scales of 2^31 and more (e > 30) saturate to
// (INT32_MAX, 30). scale 0 gives (0, 0). Throws std::invalid_argument for a
// negative, infinite or NaN scale.
inline LaneScale quantize_multiplier(double scale) {
  if (!std::isfinite(scale) || scale < 0.0)
    throw std::invalid_argument("quantize_multiplier: the scale must be finite and >= 0");
  if (scale == 0.0) return {0, 0};
  int e = 0;
  const double f = std::frexp(scale, &e);
  int64_t m = std::llround(std::ldexp(f, 31));  // exact: f has 53 bits, ldexp only moves them
  if (m == (int64_t{1} << 31)) {
    m >>= 1;
    ++e;
  }
  if (e < -31) return {0, 0};
  if (e > 30) return {std::numeric_limits<int32_t>::max(), 30};
  return {int32_t(m), e};
}

// Activation applied to the requantized value, before the final clamp.
enum class Act : uint8_t { kNone = 0, kRelu = 1, kRelu6 = 2, kLut = 3 };

struct QuantParams {
  int32_t multiplier = 0x40000000;  // M0, Q31
  int32_t shift = 0;                // s, right shift 0..31
  int32_t zero_point = 0;           // zp, added after the shift
  int32_t qmin = -128;              // clamp bounds, int8
  int32_t qmax = 127;
  int32_t relu6_max = 127;          // upper bound of ReLU6, in the output domain
};

// One lane of ACT (non-raw): bias add, requantize with the lane's own scale,
// activation, clamp, LUT. p.multiplier and p.shift are not used (the lane's
// scale replaces them). lut is a 256-entry table indexed by (q + 128); used
// only for Act::kLut.
inline int8_t act_lane(int32_t acc, int32_t bias, const LaneScale& scale, const QuantParams& p,
                       Act act, const int8_t* lut) {
  const int32_t x = sat32(int64_t{acc} + bias);
  const int64_t scaled =
      int64_t{p.zero_point} + multiply_by_quantized_multiplier(x, scale.multiplier, scale.exponent);
  int64_t lo = p.qmin, hi = p.qmax;
  if (act == Act::kRelu || act == Act::kRelu6) lo = std::max<int64_t>(lo, p.zero_point);
  if (act == Act::kRelu6) hi = std::min<int64_t>(hi, p.relu6_max);
  // lo > hi (an inconsistent configuration) yields hi, like the RTL's clamp order.
  const int8_t q = int8_t(std::min<int64_t>(std::max<int64_t>(scaled, lo), hi));
  return act == Act::kLut ? lut[uint8_t(q + 128)] : q;
}

// The per-tensor scale of p: M0 = p.multiplier, e = -p.shift.
inline LaneScale tensor_scale(const QuantParams& p) { return {p.multiplier, -p.shift}; }

// One lane of ACT with the per-tensor parameters (every lane the same scale).
inline int8_t act_lane(int32_t acc, int32_t bias, const QuantParams& p, Act act,
                       const int8_t* lut) {
  return act_lane(acc, bias, tensor_scale(p), p, act, lut);
}

// Element-wise VOP lanes on int8 values.
inline int8_t vop_add(int8_t a, int8_t b) { return sat8(int32_t{a} + b); }
inline int8_t vop_mul(int8_t a, int8_t b, int shift) {  // shift 0..15
  return sat8(rdbp(int32_t{a} * b, shift));
}
inline int8_t vop_max(int8_t a, int8_t b) { return std::max(a, b); }
inline int8_t vop_min(int8_t a, int8_t b) { return std::min(a, b); }
// Average of 2^log2k values whose sum is `sum`: rounding divide, then saturate.
inline int8_t pool_avg(int32_t sum, int log2k) { return sat8(rdbp(sum, log2k)); }

}  // namespace tpu::quant
