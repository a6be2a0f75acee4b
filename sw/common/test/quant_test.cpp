// SPDX-License-Identifier: Apache-2.0
// Per-channel requantization in quant.h: multiply_by_quantized_multiplier
// (TFLite's MultiplyByQuantizedMultiplier, left and right shifts) against a
// reference written from the real-number definitions in 128-bit integers,
// the per-lane act_lane, and quantize_multiplier (TFLite's QuantizeMultiplier).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "tpu/quant.h"

namespace {

using namespace tpu::quant;
using i128 = __int128;

// floor(a / 2^k) for any sign of a.
i128 floor_div_pow2(i128 a, int k) {
  const i128 d = i128(1) << k;
  i128 q = a / d;  // truncates toward zero
  if (a % d != 0 && a < 0) --q;
  return q;
}

// TFLite's MultiplyByQuantizedMultiplier, from the definitions of its parts:
//   x * 2^left in int32 two's complement (the value modulo 2^32),
//   SRDHM(a, b) = a * b / 2^31 rounded to nearest, ties toward +infinity
//                 (gemmlowp's nudge and truncation), INT32_MAX for
//                 INT32_MIN * INT32_MIN,
//   RDBP(y, k)  = y / 2^k rounded to nearest, ties away from zero.
int32_t reference_mbqm(int32_t x, int32_t m, int e) {
  const int left = e > 0 ? e : 0, right = e > 0 ? 0 : -e;
  i128 shifted = i128(x) * (i128(1) << left);
  shifted = ((shifted % (i128(1) << 32)) + (i128(1) << 32)) % (i128(1) << 32);  // 0 .. 2^32 - 1
  if (shifted >= (i128(1) << 31)) shifted -= i128(1) << 32;
  i128 y;
  if (shifted == INT32_MIN && m == INT32_MIN) {
    y = INT32_MAX;
  } else {
    y = floor_div_pow2(shifted * m + (i128(1) << 30), 31);  // round half up
  }
  if (right == 0) return int32_t(y);
  const i128 mag = y < 0 ? -y : y;
  const i128 r = floor_div_pow2(mag + (i128(1) << (right - 1)), right);  // half away from zero
  return int32_t(y < 0 ? -r : r);
}

std::vector<int32_t> edge_values() {
  std::vector<int32_t> v = {INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX, INT32_MAX - 1,
                            0x40000000, -0x40000000, 0x40000001, -0x40000001, 3, -3, 12345, -12345};
  for (int k = 0; k < 31; k += 3) {
    v.push_back(int32_t(1) << k);
    v.push_back(-(int32_t(1) << k));
    v.push_back((int32_t(1) << k) + 1);
    v.push_back(-(int32_t(1) << k) - 1);
  }
  return v;
}

TEST(QuantPerChannel, ReferenceMatchesHandComputedValues) {
  // The reference itself, on values worked out by hand, so that a mistake in
  // it cannot hide one in quant.h.
  EXPECT_EQ(reference_mbqm(1000, 0x40000000, -2), 125);   // 1000 * 0.5 / 4
  EXPECT_EQ(reference_mbqm(3, 0x40000000, 2), 6);         // 3 * 4 * 0.5
  EXPECT_EQ(reference_mbqm(-5, 0x40000000, 0), -2);       // -2.5: SRDHM ties toward +inf
  EXPECT_EQ(reference_mbqm(-10, 0x40000000, -1), -3);     // -5 / 2 = -2.5: RDBP away from zero
  EXPECT_EQ(reference_mbqm(0x40000000, 0x40000000, 1), -0x40000000);  // 2^31 wraps to INT32_MIN: -2^31 * 0.5
  EXPECT_EQ(reference_mbqm(0x40000000, INT32_MIN, 1), INT32_MAX);    // INT32_MIN * INT32_MIN saturates
  EXPECT_EQ(reference_mbqm(0x40000001, 0x40000000, 2), 2);           // 4 * (2^30 + 1) wraps to 4
  EXPECT_EQ(reference_mbqm(1, INT32_MAX, 31), -2147483647);         // 1 << 31 = INT32_MIN; -2^31 (2^31-1) / 2^31
  EXPECT_EQ(reference_mbqm(INT32_MIN, INT32_MAX, -31), -1);          // -(2^31 - 1) / 2^31
}

TEST(QuantPerChannel, MultiplyByQuantizedMultiplierMatchesReferenceOnEdges) {
  const std::vector<int32_t> values = edge_values();
  int checked = 0;
  for (int e = kMinExponent; e <= kMaxExponent; ++e)
    for (int32_t x : values)
      for (int32_t m : values) {
        ASSERT_EQ(multiply_by_quantized_multiplier(x, m, e), reference_mbqm(x, m, e))
            << "x=" << x << " M0=" << m << " e=" << e;
        ++checked;
      }
  EXPECT_GT(checked, 100000);
}

TEST(QuantPerChannel, MultiplyByQuantizedMultiplierMatchesReferenceRandom) {
  std::mt19937_64 rng(20261125);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  std::uniform_int_distribution<int32_t> small(-100000, 100000);
  std::uniform_int_distribution<int32_t> m0(0x40000000, INT32_MAX);
  std::uniform_int_distribution<int> exp(kMinExponent, kMaxExponent);
  for (int i = 0; i < 400000; ++i) {
    const int32_t x = i % 2 ? any(rng) : small(rng);
    const int32_t m = i % 3 ? m0(rng) : any(rng);
    const int e = exp(rng);
    ASSERT_EQ(multiply_by_quantized_multiplier(x, m, e), reference_mbqm(x, m, e))
        << "x=" << x << " M0=" << m << " e=" << e;
  }
}

TEST(QuantPerChannel, LeftShiftOverflowWraps) {
  // x << e keeps the low 32 bits: 2^30 << 1 is INT32_MIN, and with
  // M0 = INT32_MIN that is SRDHM's one saturating case.
  EXPECT_EQ(multiply_by_quantized_multiplier(0x40000000, INT32_MIN, 1), INT32_MAX);
  EXPECT_EQ(multiply_by_quantized_multiplier(0x40000000, 0x40000000, 1), -0x40000000);
  EXPECT_EQ(multiply_by_quantized_multiplier(-1, 0x40000000, 31), -0x40000000);  // -2^31 * 0.5
  EXPECT_EQ(multiply_by_quantized_multiplier(2, 0x40000000, 31), 0);             // 2^32 wraps to 0
  EXPECT_EQ(multiply_by_quantized_multiplier(INT32_MIN, INT32_MIN, 0), INT32_MAX);
  EXPECT_EQ(multiply_by_quantized_multiplier(INT32_MIN, INT32_MIN, 1), 0);  // INT32_MIN << 1 = 0
}

TEST(QuantPerChannel, PerTensorIsTheLaneScaleWithNegatedShift) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  for (int i = 0; i < 20000; ++i) {
    QuantParams p;
    p.multiplier = any(rng);
    p.shift = int(rng() % 32);
    p.zero_point = int32_t(rng() % 41) - 20;
    const int32_t acc = any(rng), bias = i % 2 ? any(rng) : 0;
    const LaneScale s = tensor_scale(p);
    EXPECT_EQ(s.exponent, -p.shift);
    ASSERT_EQ(act_lane(acc, bias, p, Act::kNone, nullptr), act_lane(acc, bias, s, p, Act::kNone, nullptr));
    // The per-lane form ignores p.multiplier and p.shift.
    QuantParams other = p;
    other.multiplier = 0;
    other.shift = 31;
    ASSERT_EQ(act_lane(acc, bias, s, other, Act::kRelu, nullptr), act_lane(acc, bias, s, p, Act::kRelu, nullptr));
  }
}

TEST(QuantPerChannel, ActLaneUsesTheLaneScale) {
  QuantParams p;
  p.zero_point = 3;
  // 10 << 2 = 40; * 0.75 = 30; + 3.
  EXPECT_EQ(act_lane(7, 3, LaneScale{0x60000000, 2}, p, Act::kNone, nullptr), 33);
  // -1000 * 0.5 / 8 = -62.5 -> -63; + 3 = -60.
  EXPECT_EQ(act_lane(-1000, 0, LaneScale{0x40000000, -3}, p, Act::kNone, nullptr), -60);
  // Saturated x = INT32_MAX << 1 = -2 (wraps); * 0.5 = -1; + 3 = 2.
  EXPECT_EQ(act_lane(INT32_MAX, 1, LaneScale{0x40000000, 1}, p, Act::kNone, nullptr), 2);
}

TEST(QuantPerChannel, QuantizeMultiplierHandValues) {
  EXPECT_EQ(quantize_multiplier(0.5), (LaneScale{0x40000000, 0}));
  EXPECT_EQ(quantize_multiplier(0.75), (LaneScale{0x60000000, 0}));
  EXPECT_EQ(quantize_multiplier(1.0), (LaneScale{0x40000000, 1}));
  EXPECT_EQ(quantize_multiplier(3.0), (LaneScale{0x60000000, 2}));
  EXPECT_EQ(quantize_multiplier(0.25), (LaneScale{0x40000000, -1}));
  EXPECT_EQ(quantize_multiplier(0.0), (LaneScale{0, 0}));
  // frexp(0.1) = 0.8 * 2^-3; 0.8 * 2^31 = 1717986918.4 -> 1717986918.
  EXPECT_EQ(quantize_multiplier(0.1), (LaneScale{1717986918, -3}));
  // A fraction that rounds up to 2^31 moves to 2^30 and the next exponent.
  EXPECT_EQ(quantize_multiplier(1.0 - std::ldexp(1.0, -40)), (LaneScale{0x40000000, 1}));
  // Ties round away from zero: f = 0.5 + 2^-32 -> M0 = 2^30 + 0.5 -> 2^30 + 1.
  EXPECT_EQ(quantize_multiplier(0.5 + std::ldexp(1.0, -32)), (LaneScale{0x40000001, 0}));
  // The smallest exponent kept, then flushed to zero.
  EXPECT_EQ(quantize_multiplier(std::ldexp(1.0, -32)), (LaneScale{0x40000000, -31}));
  EXPECT_EQ(quantize_multiplier(std::ldexp(1.0, -33)), (LaneScale{0, 0}));
  // The largest exponent kept, then saturated.
  EXPECT_EQ(quantize_multiplier(std::ldexp(1.0, 29)), (LaneScale{0x40000000, 30}));
  EXPECT_EQ(quantize_multiplier(std::ldexp(1.0, 30)), (LaneScale{INT32_MAX, 30}));
  EXPECT_EQ(quantize_multiplier(1e300), (LaneScale{INT32_MAX, 30}));
  EXPECT_THROW(quantize_multiplier(-0.5), std::invalid_argument);
  EXPECT_THROW(quantize_multiplier(std::nan("")), std::invalid_argument);
  EXPECT_THROW(quantize_multiplier(INFINITY), std::invalid_argument);
}

TEST(QuantPerChannel, QuantizeMultiplierApproximatesTheScale) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> log2s(-30.0, 20.0);
  for (int i = 0; i < 20000; ++i) {
    const double scale = std::exp2(log2s(rng));
    const LaneScale s = quantize_multiplier(scale);
    ASSERT_GE(s.multiplier, 0x40000000) << scale;
    ASSERT_GE(s.exponent, kMinExponent);
    ASSERT_LE(s.exponent, kMaxExponent);
    const double back = std::ldexp(double(s.multiplier), s.exponent - 31);
    ASSERT_NEAR(back / scale, 1.0, std::ldexp(1.0, -30)) << scale;
    // The lane computes x * scale to within one unit (two roundings) for x
    // whose left shift does not overflow.
    const int32_t x = int32_t(rng() % 2001) - 1000;
    if (s.exponent <= 20) {
      const double want = double(x) * scale;
      if (std::fabs(want) < 1e8)
        ASSERT_NEAR(double(multiply_by_quantized_multiplier(x, s.multiplier, s.exponent)), want, 1.0)
            << "x=" << x << " scale=" << scale;
    }
  }
}

}  // namespace
