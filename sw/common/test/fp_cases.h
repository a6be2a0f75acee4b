// SPDX-License-Identifier: Apache-2.0
// Operands for testing the bf16 mode's arithmetic, shared by the C++
// reference's tests (sw/common/test/bf16_test.cpp) and the RTL's
// (tb/mxu/fp_test.cpp): random fp32 pairs biased to the hard cases of
// addition, and a structured set of bf16 values.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <utility>
#include <vector>

#include "tpu/bf16.h"

namespace tpu::fp_cases {

// Random fp32 operands biased to the hard cases of addition.
class AddCases {
 public:
  explicit AddCases(uint64_t seed) : rng_(seed) {}

  uint32_t bits() { return uint32_t(rng_()); }
  uint32_t pick(uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng_); }
  fp32 make(uint32_t sign, uint32_t exp, uint32_t frac) { return (sign << 31) | (exp << 23) | (frac & 0x7FFFFFu); }

  std::pair<fp32, fp32> next() {
    const uint32_t kind = pick(0, 7);
    const fp32 a = bits();
    const uint32_t ea = (a >> 23) & 0xFF;
    switch (kind) {
      case 0:  // any bits: NaNs, infinities and subnormals included
        return {a, bits()};
      case 1: {  // near cancellation: -a moved by a few ulps, or a neighbouring binade
        const int32_t delta = int32_t(pick(0, 16)) - 8;
        fp32 b = (a ^ 0x80000000u) + uint32_t(delta);
        if (pick(0, 3) == 0) b = make(~a >> 31 & 1, std::min(254u, std::max(1u, ea + pick(0, 2) - 1)), bits());
        return {a, b};
      }
      case 2: {  // near overflow, mostly the same sign
        const fp32 x = make(bits() & 1, pick(250, 254), bits());
        const fp32 y = make(pick(0, 4) == 0 ? ~x >> 31 & 1 : x >> 31, pick(220, 254), bits());
        return {x, y};
      }
      case 3: {  // near the subnormal boundary, mostly opposite signs
        const fp32 x = make(bits() & 1, pick(0, 8), bits());
        const fp32 y = make(pick(0, 4) == 0 ? x >> 31 : ~x >> 31 & 1, pick(0, 30), bits());
        return {x, y};
      }
      case 4: {  // exponent difference around the guard/round/sticky positions
        const uint32_t e = pick(30, 254);
        const uint32_t d = pick(0, 30);
        return {make(bits() & 1, e, bits()), make(bits() & 1, e - d, bits())};
      }
      case 5: {  // ties: a small operand that is exactly half an ulp (or a power of two near it)
        const uint32_t e = pick(30, 254);
        const uint32_t d = pick(22, 26);
        const uint32_t frac = pick(0, 3) == 0 ? 0 : (bits() & (pick(0, 1) ? 0x7FFFFFu : 0x7FFFF0u));
        return {make(bits() & 1, e, bits()), make(bits() & 1, e - d, frac)};
      }
      case 6: {  // few significant bits, so sums land exactly on halves and powers of two
        const uint32_t e = pick(1, 254);
        const fp32 x = make(bits() & 1, e, bits() & 0x700003u);
        const fp32 y = make(bits() & 1, std::min(254u, std::max(1u, e + pick(0, 4) - 2)), bits() & 0x7C0001u);
        return {x, y};
      }
      default: {  // special operands against anything
        static constexpr fp32 kSpecial[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                            0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x00000001u,
                                            0x807FFFFFu, 0x00800000u, 0x80800000u, 0x7F7FFFFFu,
                                            0xFF7FFFFFu};
        return {kSpecial[pick(0, std::size(kSpecial) - 1)], bits()};
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

// Every class of bf16 operand: all signs and exponents with fractions at the
// edges and in the middle.
inline std::vector<bf16> bf16_structured() {
  std::vector<bf16> v;
  for (uint32_t s = 0; s < 2; ++s)
    for (uint32_t e = 0; e < 256; ++e)
      for (uint32_t f : {0x00u, 0x01u, 0x02u, 0x3Fu, 0x40u, 0x41u, 0x55u, 0x7Eu, 0x7Fu})
        v.push_back(bf16((s << 15) | (e << 7) | f));
  return v;
}

// Special fp32 values: zeros, subnormals, the normal range's ends, infinities,
// NaNs, and neighbours of 1.
inline std::vector<fp32> fp32_specials() {
  std::vector<fp32> v;
  for (uint32_t s : {0u, 0x80000000u})
    for (uint32_t m : {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00400000u,  // zero, subnormals
                       0x00800000u, 0x00800001u, 0x00FFFFFFu, 0x01000000u,  // smallest normals
                       0x3F800000u, 0x3F800001u, 0x3F7FFFFFu, 0x3FFFFFFFu,  // around 1 and 2
                       0x33800000u, 0x34000000u, 0x4B800000u,               // 2^-24, 2^-23, 2^24
                       0x7F000000u, 0x7F7FFFFEu, 0x7F7FFFFFu, 0x73000000u,  // large; max; half ulp of max
                       0x7F800000u,                                         // inf
                       0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu})              // NaNs
      v.push_back(s | m);
  return v;
}

// Special bf16 values, the same classes.
inline std::vector<bf16> bf16_specials() {
  std::vector<bf16> v;
  for (uint32_t s : {0u, 0x8000u})
    for (uint32_t m : {0x0000u, 0x0001u, 0x007Fu, 0x0080u, 0x0081u, 0x00FFu, 0x3F80u, 0x3F81u,
                       0x3FFFu, 0x4000u, 0x3F00u, 0x1F80u, 0x2000u, 0x5F80u, 0x5F00u, 0x7F00u,
                       0x7F7Fu, 0x7F80u, 0x7F81u, 0x7FC0u, 0x7FFFu})
      v.push_back(bf16(s | m));
  return v;
}

}  // namespace tpu::fp_cases
