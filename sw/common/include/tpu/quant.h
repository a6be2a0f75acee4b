// SPDX-License-Identifier: Apache-2.0
// Exact integer arithmetic of the VPU. The RTL matches these functions bit
// for bit; the reference model and the driver call them.
//
// Requantization follows gemmlowp / TFLite's reference kernels:
//   q = clamp(zp + RDBP(SRDHM(x, M0), s), lo, hi),   x = sat32(acc + bias)
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

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

// One lane of ACT (non-raw): bias add, requantize, activation, clamp, LUT.
// lut is a 256-entry table indexed by (q + 128); used only for Act::kLut.
inline int8_t act_lane(int32_t acc, int32_t bias, const QuantParams& p, Act act,
                       const int8_t* lut) {
  const int32_t x = sat32(int64_t{acc} + bias);
  const int64_t scaled = int64_t{p.zero_point} + rdbp(srdhm(x, p.multiplier), p.shift);
  int64_t lo = p.qmin, hi = p.qmax;
  if (act == Act::kRelu || act == Act::kRelu6) lo = std::max<int64_t>(lo, p.zero_point);
  if (act == Act::kRelu6) hi = std::min<int64_t>(hi, p.relu6_max);
  // lo > hi (an inconsistent configuration) yields hi, like the RTL's clamp order.
  const int8_t q = int8_t(std::min<int64_t>(std::max<int64_t>(scaled, lo), hi));
  return act == Act::kLut ? lut[uint8_t(q + 128)] : q;
}

// Element-wise VOP lanes on int8 values.
inline int8_t vop_add(int8_t a, int8_t b) { return sat8(int32_t{a} + b); }
inline int8_t vop_mul(int8_t a, int8_t b, int shift) {  // shift 0..15
  return sat8(rdbp(int32_t{a} * b, shift));
}
inline int8_t vop_max(int8_t a, int8_t b) { return std::max(a, b); }
// Average of 2^log2k values whose sum is `sum`: rounding divide, then saturate.
inline int8_t pool_avg(int32_t sum, int log2k) { return sat8(rdbp(sum, log2k)); }

}  // namespace tpu::quant
