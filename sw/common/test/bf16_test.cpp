// SPDX-License-Identifier: Apache-2.0
// The bf16 mode's reference numerics (tpu/bf16.h) against independent
// computations on the host FPU: bf16_mul and fp32_mul against the exact
// product in double, fp32_add against float addition (IEEE round-to-nearest-
// even in SSE), all followed by the flush rules; fp32_max/fp32_min against
// float comparison; fp32_to_bf16 against a nearest-candidate search in
// double. Random cases are seeded (TPU_SEED=<n> to repeat one).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "fp_cases.h"
#include "tpu/bf16.h"

namespace tpu {
namespace {

using fp_cases::AddCases;
using fp_cases::bf16_structured;
using fp_cases::bf16_specials;
using fp_cases::fp32_specials;

// ---- the rules, applied to host arithmetic ----

float ftz(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }

float bf16_value(bf16 x) { return bits_float(uint32_t{x} << 16); }

fp32 ref_mul(bf16 a, bf16 b) {
  // Both significands have 8 bits: the double product is exact.
  const double p = double(ftz(bf16_value(a))) * double(ftz(bf16_value(b)));
  if (std::isnan(p)) return kFp32CanonicalNan;
  if (std::fabs(p) >= std::ldexp(1.0, 128)) return float_bits(std::copysign(INFINITY, float(p)));
  if (p != 0 && std::fabs(p) < std::ldexp(1.0, -126)) return float_bits(std::copysign(0.0f, float(p)));
  return float_bits(float(p));  // exact: at most 16 significant bits, exponent in range
}

fp32 ref_add(fp32 a, fp32 b) {
  volatile float x = ftz(bits_float(a)), y = ftz(bits_float(b));
  const float r = x + y;  // SSE: round to nearest even, no FTZ/DAZ
  if (std::isnan(r)) return kFp32CanonicalNan;
  return float_bits(ftz(r));
}

bf16 ref_to_bf16(fp32 x) {
  const float f = bits_float(x);
  if (std::isnan(f)) return kBf16CanonicalNan;
  if (std::isinf(f)) return bf16(x >> 16);
  if (std::fpclassify(f) != FP_NORMAL) return bf16((x >> 16) & 0x8000u);
  // The two bf16 neighbours of |f| (the upper one may be 2^128 = inf).
  const double v = std::fabs(double(f));
  const uint32_t lo_bits = (x & 0x7FFF0000u) >> 16;
  const double lo = bf16_value(bf16(lo_bits));
  const double hi = lo_bits + 1 == 0x7F80u ? std::ldexp(1.0, 128) : double(bf16_value(bf16(lo_bits + 1)));
  uint32_t mag;
  if (v - lo < hi - v) mag = lo_bits;
  else if (v - lo > hi - v) mag = lo_bits + 1;
  else mag = (lo_bits & 1) ? lo_bits + 1 : lo_bits;  // tie: even
  return bf16((x >> 16 & 0x8000u) | mag);
}

// ---- seeds and mismatch reporting ----

uint64_t test_seed() {
  if (const char* v = std::getenv("TPU_SEED")) return std::strtoull(v, nullptr, 0);
  return std::random_device{}();
}

// Counts mismatches and prints the first few, so a broken rule shows its
// inputs without a million assertion messages.
class Mismatches {
 public:
  template <class... Args>
  void add(const char* fmt, Args... args) {
    if (count_++ < 10) {
      char buf[256];
      std::snprintf(buf, sizeof buf, fmt, args...);
      ADD_FAILURE() << buf;
    }
  }
  uint64_t count() const { return count_; }

 private:
  uint64_t count_ = 0;
};

// ---- bf16_mul ----

TEST(Bf16MulTest, SpecialValues) {
  const bf16 pz = 0x0000, nz = 0x8000, one = 0x3F80, mone = 0xBF80, pinf = 0x7F80, ninf = 0xFF80;
  const bf16 qnan = 0x7FC0, snan = 0x7F81, nnan = 0xFFFF, sub = 0x0001, nsub = 0x807F;
  const bf16 max = 0x7F7F, minn = 0x0080;
  EXPECT_EQ(bf16_mul(one, one), 0x3F800000u);
  EXPECT_EQ(bf16_mul(one, mone), 0xBF800000u);
  EXPECT_EQ(bf16_mul(pz, one), 0x00000000u);
  EXPECT_EQ(bf16_mul(nz, one), 0x80000000u);
  EXPECT_EQ(bf16_mul(nz, mone), 0x00000000u);
  EXPECT_EQ(bf16_mul(nz, nz), 0x00000000u);
  EXPECT_EQ(bf16_mul(pz, nz), 0x80000000u);
  EXPECT_EQ(bf16_mul(sub, one), 0x00000000u) << "subnormal input is +0";
  EXPECT_EQ(bf16_mul(nsub, one), 0x80000000u) << "negative subnormal input is -0";
  EXPECT_EQ(bf16_mul(sub, mone), 0x80000000u);
  EXPECT_EQ(bf16_mul(pinf, one), 0x7F800000u);
  EXPECT_EQ(bf16_mul(pinf, mone), 0xFF800000u);
  EXPECT_EQ(bf16_mul(ninf, ninf), 0x7F800000u);
  EXPECT_EQ(bf16_mul(pinf, minn), 0x7F800000u);
  for (bf16 z : {pz, nz, sub, nsub}) {
    EXPECT_EQ(bf16_mul(pinf, z), kFp32CanonicalNan) << std::hex << z;
    EXPECT_EQ(bf16_mul(z, ninf), kFp32CanonicalNan) << std::hex << z;
  }
  for (bf16 n : {qnan, snan, nnan}) {
    for (bf16 x : {pz, nz, one, pinf, ninf, qnan, snan, nnan, sub}) {
      EXPECT_EQ(bf16_mul(n, x), kFp32CanonicalNan) << std::hex << n << " * " << x;
      EXPECT_EQ(bf16_mul(x, n), kFp32CanonicalNan) << std::hex << x << " * " << n;
    }
  }
  // Largest finite squared overflows; 2^127 * 1 does not.
  EXPECT_EQ(bf16_mul(max, max), 0x7F800000u);
  EXPECT_EQ(bf16_mul(max, 0xBF80), 0xFF7F0000u);
  EXPECT_EQ(bf16_mul(0x7F00, 0x4000), 0x7F800000u) << "2^127 * 2 = 2^128 overflows";
  EXPECT_EQ(bf16_mul(0x7F00, 0x3FFF), 0x7F7F0000u) << "2^127 * (2 - 2^-7) is finite";
  // Smallest normal: 2^-126 * 1 stays, * 0.5 is flushed, sign from the xor.
  EXPECT_EQ(bf16_mul(minn, one), 0x00800000u);
  EXPECT_EQ(bf16_mul(minn, 0x3F00), 0x00000000u);
  EXPECT_EQ(bf16_mul(minn, 0xBF00), 0x80000000u);
  EXPECT_EQ(bf16_mul(minn, 0x3FFF), 0x00FF0000u) << "2^-126 * (2 - 2^-7)";
  EXPECT_EQ(bf16_mul(0x00C0, 0x3F2A), 0x00000000u) << "1.5*2^-126 * 0.6640625 < 2^-126";
  EXPECT_EQ(bf16_mul(0x00C0, 0x3F2B), 0x00804000u) << "1.5*2^-126 * 0.66796875 >= 2^-126";
  // (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14: exact in fp32, not in bf16.
  EXPECT_EQ(bf16_mul(0x3F81, 0x3F81), 0x3F820200u);
  // (2 - 2^-7)^2 = 4 - 2^-5 + 2^-14.
  EXPECT_EQ(bf16_mul(0x3FFF, 0x3FFF), 0x407E0100u);
}

TEST(Bf16MulTest, SpecialPairsMatchExactProduct) {
  Mismatches bad;
  for (bf16 a : bf16_specials())
    for (bf16 b : bf16_specials())
      if (bf16_mul(a, b) != ref_mul(a, b))
        bad.add("bf16_mul(0x%04x, 0x%04x) = 0x%08x, want 0x%08x", a, b, bf16_mul(a, b), ref_mul(a, b));
  EXPECT_EQ(bad.count(), 0u);
}

TEST(Bf16MulTest, StructuredPairsMatchExactProduct) {
  const std::vector<bf16> v = bf16_structured();
  Mismatches bad;
  for (bf16 a : v)
    for (bf16 b : v) {
      const fp32 got = bf16_mul(a, b), want = ref_mul(a, b);
      if (got != want) bad.add("bf16_mul(0x%04x, 0x%04x) = 0x%08x, want 0x%08x", a, b, got, want);
    }
  EXPECT_EQ(bad.count(), 0u) << "of " << v.size() * v.size() << " pairs";
}

TEST(Bf16MulTest, RandomPairsMatchExactProduct) {
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  Mismatches bad;
  for (int i = 0; i < 1'000'000; ++i) {
    const bf16 a = bf16(rng()), b = bf16(rng());
    const fp32 got = bf16_mul(a, b), want = ref_mul(a, b);
    if (got != want) bad.add("bf16_mul(0x%04x, 0x%04x) = 0x%08x, want 0x%08x", a, b, got, want);
  }
  EXPECT_EQ(bad.count(), 0u) << "seed " << seed;
}

TEST(Bf16MulTest, EveryOperandAgainstStructured) {
  // All 2^16 operands against the structured set: the flush, overflow and NaN
  // rules for every single input pattern (3e8 pairs, about 2 s).
  const std::vector<bf16> v = bf16_structured();
  Mismatches bad;
  for (uint32_t a = 0; a < 0x10000; ++a)
    for (bf16 b : v) {
      const fp32 got = bf16_mul(bf16(a), b), want = ref_mul(bf16(a), b);
      if (got != want) bad.add("bf16_mul(0x%04x, 0x%04x) = 0x%08x, want 0x%08x", a, b, got, want);
    }
  EXPECT_EQ(bad.count(), 0u);
}

// ---- fp32_add ----

TEST(Fp32AddTest, SpecialValues) {
  const fp32 pz = 0, nz = 0x80000000u, one = 0x3F800000u, mone = 0xBF800000u;
  const fp32 pinf = 0x7F800000u, ninf = 0xFF800000u, max = 0x7F7FFFFFu, nmax = 0xFF7FFFFFu;
  const fp32 minn = 0x00800000u, sub = 0x00000001u, nsub = 0x807FFFFFu;
  EXPECT_EQ(fp32_add(pz, pz), pz);
  EXPECT_EQ(fp32_add(pz, nz), pz);
  EXPECT_EQ(fp32_add(nz, pz), pz);
  EXPECT_EQ(fp32_add(nz, nz), nz);
  EXPECT_EQ(fp32_add(one, mone), pz) << "exact cancellation is +0";
  EXPECT_EQ(fp32_add(mone, one), pz);
  EXPECT_EQ(fp32_add(max, nmax), pz);
  EXPECT_EQ(fp32_add(one, nz), one);
  EXPECT_EQ(fp32_add(nz, mone), mone);
  EXPECT_EQ(fp32_add(sub, one), one) << "subnormal input is zero";
  EXPECT_EQ(fp32_add(sub, pz), pz);
  EXPECT_EQ(fp32_add(nsub, pz), pz) << "(-0) + (+0)";
  EXPECT_EQ(fp32_add(nsub, nz), nz) << "(-0) + (-0)";
  EXPECT_EQ(fp32_add(nsub, sub), pz);
  EXPECT_EQ(fp32_add(pinf, max), pinf);
  EXPECT_EQ(fp32_add(ninf, max), ninf);
  EXPECT_EQ(fp32_add(pinf, pinf), pinf);
  EXPECT_EQ(fp32_add(ninf, ninf), ninf);
  EXPECT_EQ(fp32_add(pinf, ninf), kFp32CanonicalNan);
  EXPECT_EQ(fp32_add(ninf, pinf), kFp32CanonicalNan);
  for (fp32 n : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0xFFC00000u})
    for (fp32 x : {pz, nz, one, pinf, ninf, n, sub, max}) {
      EXPECT_EQ(fp32_add(n, x), kFp32CanonicalNan);
      EXPECT_EQ(fp32_add(x, n), kFp32CanonicalNan);
    }
  // Overflow: max + max; max + half an ulp of max rounds to even = up = inf;
  // max + just under half an ulp stays.
  EXPECT_EQ(fp32_add(max, max), pinf);
  EXPECT_EQ(fp32_add(nmax, nmax), ninf);
  EXPECT_EQ(fp32_add(max, 0x73000000u), pinf) << "max + 2^103 (half an ulp): tie to even rounds up";
  EXPECT_EQ(fp32_add(max, 0x72FFFFFFu), max) << "max + just under half an ulp";
  // Subnormal results: 1.5*2^-126 - 2^-126 = 2^-127 is flushed with the sum's sign.
  EXPECT_EQ(fp32_add(0x00C00000u, 0x80800000u), pz);
  EXPECT_EQ(fp32_add(0x80C00000u, 0x00800000u), nz);
  EXPECT_EQ(fp32_add(0x00800001u, 0x80800000u), pz) << "2^-149 is flushed";
  EXPECT_EQ(fp32_add(0x01000000u, 0x80800000u), minn) << "2^-125 - 2^-126 = 2^-126 stays";
  EXPECT_EQ(fp32_add(minn, minn), 0x01000000u);
  // Ties to even: 1 + 2^-24 -> 1; (1 + 2^-23) + 2^-24 -> 1 + 2^-22; just over the tie rounds up.
  EXPECT_EQ(fp32_add(one, 0x33800000u), one);
  EXPECT_EQ(fp32_add(0x3F800001u, 0x33800000u), 0x3F800002u);
  EXPECT_EQ(fp32_add(one, 0x33800001u), 0x3F800001u);
  // Far apart: the small operand only sets the sticky bit.
  EXPECT_EQ(fp32_add(one, 0x00800000u), one);
  EXPECT_EQ(fp32_add(one, 0x80800000u), one);
  EXPECT_EQ(fp32_add(0x3F800000u, 0xB3800001u), 0x3F7FFFFFu) << "1 - (2^-24 + tiny) rounds down";
  // Carry out of the significand: (2 - 2^-23) + 2^-23 = 2.
  EXPECT_EQ(fp32_add(0x3FFFFFFFu, 0x34000000u), 0x40000000u);
}

TEST(Fp32AddTest, SpecialPairsMatchHostFloat) {
  Mismatches bad;
  for (fp32 a : fp32_specials())
    for (fp32 b : fp32_specials())
      if (fp32_add(a, b) != ref_add(a, b))
        bad.add("fp32_add(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, fp32_add(a, b), ref_add(a, b));
  EXPECT_EQ(bad.count(), 0u);
}

TEST(Fp32AddTest, RandomPairsMatchHostFloat) {
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  AddCases gen(seed);
  Mismatches bad;
  constexpr int kPairs = 4'000'000;
  for (int i = 0; i < kPairs; ++i) {
    const auto [a, b] = gen.next();
    const fp32 got = fp32_add(a, b), want = ref_add(a, b);
    if (got != want) bad.add("fp32_add(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, want);
    if (fp32_add(b, a) != got) bad.add("fp32_add(0x%08x, 0x%08x) is not commutative", a, b);
  }
  EXPECT_EQ(bad.count(), 0u) << "seed " << seed << ", " << kPairs << " pairs";
}

TEST(Fp32AddTest, SumsOfProductsMatchHostFloat) {
  // The operands the array actually adds: products of bf16 values.
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  Mismatches bad;
  for (int i = 0; i < 1'000'000; ++i) {
    const fp32 p = bf16_mul(bf16(rng()), bf16(rng()));
    const fp32 q = bf16_mul(bf16(rng()), bf16(rng()));
    const fp32 s = (i & 1) ? q : (p ^ 0x80000000u) + uint32_t(rng() % 5) * 0x10000u;
    if (fp32_add(p, s) != ref_add(p, s))
      bad.add("fp32_add(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", p, s, fp32_add(p, s), ref_add(p, s));
  }
  EXPECT_EQ(bad.count(), 0u) << "seed " << seed;
}

// ---- fp32_mul ----

// The exact product in double (24 x 24 significand bits fit in 53), then the
// rules: canonical NaN, tiny exact products flushed, one rounding to float
// (round to nearest even, overflow to inf).
fp32 ref_mul32(fp32 a, fp32 b) {
  const double p = double(ftz(bits_float(a))) * double(ftz(bits_float(b)));
  if (std::isnan(p)) return kFp32CanonicalNan;
  if (p != 0 && std::fabs(p) < std::ldexp(1.0, -126)) return float_bits(std::copysign(0.0f, float(p)));
  return float_bits(float(p));
}

// Random fp32 operands biased to the hard cases of multiplication: products
// near overflow and near 2^-126, ties (few significant bits), and anything.
std::pair<fp32, fp32> mul_case(std::mt19937_64& rng) {
  auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  auto make = [](uint32_t s, uint32_t e, uint32_t f) { return (s << 31) | (e << 23) | (f & 0x7FFFFFu); };
  auto few_bits = [&]() {  // 0..3 fraction bits set
    uint32_t f = 0;
    for (uint32_t i = pick(0, 3); i > 0; --i) f |= 1u << pick(0, 22);
    return f;
  };
  const uint32_t s1 = uint32_t(rng() & 1), s2 = uint32_t(rng() & 1);
  switch (pick(0, 6)) {
    case 6: {  // a product of significands just below 2 or 4: at 2^-126 the
               // flush and the rounding meet, at 2^128 the rounding overflows
      const uint64_t m1 = pick(1u << 23, (1u << 24) - 1);
      const bool four = rng() & 1;
      const uint64_t m2 = std::min<uint64_t>((uint64_t{1} << (four ? 48 : 47)) / m1 - pick(0, 1),
                                             (1u << 24) - 1);
      if (m2 < (1u << 23)) return {make(s1, 1, uint32_t(m1)), make(s2, 126, 0)};
      const bool low = rng() & 1;  // near 2^-126 (ea + eb = 127 - four) or 2^128 (= 254 + 127 - four)
      const uint32_t sum = low ? 127 - four : 381 - four;
      const uint32_t ea = low ? pick(1, sum - 1) : pick(sum - 254, 254);
      return {make(s1, ea, uint32_t(m1)), make(s2, sum - ea, uint32_t(m2))};
    }
    case 0:
      return {uint32_t(rng()), uint32_t(rng())};
    case 1: {  // the product's exponent near the top: ea + eb - 127 around 254
      const uint32_t ea = pick(127, 254);
      return {make(s1, ea, uint32_t(rng())), make(s2, std::min(254u, 127 + 254 - ea + pick(0, 2) - 1), uint32_t(rng()))};
    }
    case 2: {  // near 2^-126: ea + eb - 127 around 1
      const uint32_t ea = pick(1, 127);
      return {make(s1, ea, uint32_t(rng())), make(s2, std::max(1u, 128 - ea + pick(0, 2) - 1), uint32_t(rng()))};
    }
    case 3:  // few significant bits: exact products, ties
      return {make(s1, pick(100, 154), few_bits()), make(s2, pick(100, 154), few_bits())};
    case 4:  // bf16 operands (what VOP MUL multiplies)
      return {uint32_t(rng()) & 0xFFFF0000u, uint32_t(rng()) & 0xFFFF0000u};
    default: {  // special operands against anything
      const std::vector<fp32> sp = fp32_specials();
      return {sp[pick(0, uint32_t(sp.size() - 1))], uint32_t(rng())};
    }
  }
}

TEST(Fp32MulTest, SpecialValues) {
  const fp32 pz = 0, nz = 0x80000000u, one = 0x3F800000u, mone = 0xBF800000u;
  const fp32 pinf = 0x7F800000u, ninf = 0xFF800000u, max = 0x7F7FFFFFu, minn = 0x00800000u;
  const fp32 sub = 0x00000001u, nsub = 0x807FFFFFu;
  EXPECT_EQ(fp32_mul(one, one), one);
  EXPECT_EQ(fp32_mul(one, mone), mone);
  EXPECT_EQ(fp32_mul(0x40400000u, 0x40800000u), 0x41400000u) << "3 * 4 = 12";
  EXPECT_EQ(fp32_mul(pz, mone), nz);
  EXPECT_EQ(fp32_mul(nz, nz), pz);
  EXPECT_EQ(fp32_mul(sub, one), pz) << "subnormal input is zero";
  EXPECT_EQ(fp32_mul(nsub, one), nz);
  EXPECT_EQ(fp32_mul(sub, max), pz) << "even times the largest value";
  for (fp32 z : {pz, nz, sub, nsub}) {
    EXPECT_EQ(fp32_mul(pinf, z), kFp32CanonicalNan);
    EXPECT_EQ(fp32_mul(z, ninf), kFp32CanonicalNan);
  }
  EXPECT_EQ(fp32_mul(pinf, minn), pinf);
  EXPECT_EQ(fp32_mul(ninf, one), ninf);
  EXPECT_EQ(fp32_mul(ninf, ninf), pinf);
  for (fp32 n : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0xFFC00000u})
    for (fp32 x : {pz, nz, one, pinf, ninf, n, sub, max}) {
      EXPECT_EQ(fp32_mul(n, x), kFp32CanonicalNan);
      EXPECT_EQ(fp32_mul(x, n), kFp32CanonicalNan);
    }
  // Overflow: max * 2; max * (1 + 2^-23) rounds past max; max * 1 stays.
  EXPECT_EQ(fp32_mul(max, 0x40000000u), pinf);
  EXPECT_EQ(fp32_mul(max, 0xC0000000u), ninf);
  EXPECT_EQ(fp32_mul(max, 0x3F800001u), pinf) << "rounds up to 2^128";
  EXPECT_EQ(fp32_mul(max, one), max);
  EXPECT_EQ(fp32_mul(0x7F000000u, 0x3FFFFFFFu), max) << "2^127 * (2 - 2^-23) is finite";
  // Ties to even: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 -> 1 + 2^-11 (even);
  // (1 + 2^-12)(1 + 2^-12 + 2^-23) = 1 + 2^-11 + 2^-23 + 2^-24 + 2^-35 rounds up.
  EXPECT_EQ(fp32_mul(0x3F800800u, 0x3F800800u), 0x3F801000u);
  EXPECT_EQ(fp32_mul(0x3F800800u, 0x3F800801u), 0x3F801002u);
  // (1 + 2^-23)(1 + 2^-1) = 1.5 + 2^-23 + 2^-24: a tie from odd, rounds up.
  EXPECT_EQ(fp32_mul(0x3F800001u, 0x3FC00000u), 0x3FC00002u);
  // Tiny: 2^-126 * 1 stays; * 0.5 is flushed with the sign of the product;
  // (1 - 2^-23) * (1 + 2^-23) * 2^-126 = 2^-126 - 2^-172 is below 2^-126:
  // flushed, although rounding it to 24 bits would give 2^-126 (IEEE
  // tininess after rounding, and numpy's float32 with gradual underflow).
  EXPECT_EQ(fp32_mul(minn, one), minn);
  EXPECT_EQ(fp32_mul(minn, 0x3F000000u), pz);
  EXPECT_EQ(fp32_mul(minn, 0xBF000000u), nz);
  EXPECT_EQ(fp32_mul(0x3F7FFFFEu, 0x00800001u), pz) << "the exact product decides";
  EXPECT_EQ(fp32_mul(0xBF7FFFFEu, 0x00800001u), nz);
  EXPECT_EQ(fp32_mul(minn, 0x3F7FFFFFu), pz) << "2^-126 * (1 - 2^-24), exact and tiny";
  EXPECT_EQ(fp32_mul(0x00C00000u, 0x3F2AAAABu), 0x00800000u) << "1.5 * 2^-126 * (2/3 + ulp) >= 2^-126";
  EXPECT_EQ(fp32_mul(0x00C00000u, 0x3F2AAAAAu), pz) << "1.5 * 2^-126 * (2/3 - ulp) < 2^-126";
  // Powers of two are exact (POOLAVG's 2^-SHIFT).
  EXPECT_EQ(fp32_mul(0x40490FDBu, fp32_pow2(-4)), 0x3E490FDBu);
  EXPECT_EQ(fp32_pow2(0), one);
  EXPECT_EQ(fp32_pow2(-126), minn);
}

TEST(Fp32MulTest, SpecialPairsMatchExactProduct) {
  Mismatches bad;
  for (fp32 a : fp32_specials())
    for (fp32 b : fp32_specials()) {
      const fp32 got = fp32_mul(a, b), want = ref_mul32(a, b);
      if (got != want) bad.add("fp32_mul(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, want);
    }
  EXPECT_EQ(bad.count(), 0u);
}

TEST(Fp32MulTest, RandomPairsMatchExactProduct) {
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  Mismatches bad;
  constexpr int kPairs = 4'000'000;
  for (int i = 0; i < kPairs; ++i) {
    const auto [a, b] = mul_case(rng);
    const fp32 got = fp32_mul(a, b), want = ref_mul32(a, b);
    if (got != want) bad.add("fp32_mul(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, got, want);
    if (fp32_mul(b, a) != got) bad.add("fp32_mul(0x%08x, 0x%08x) is not commutative", a, b);
  }
  EXPECT_EQ(bad.count(), 0u) << "seed " << seed << ", " << kPairs << " pairs";
}

TEST(Fp32MulTest, NormalProductsMatchHostFloat) {
  // Where the exact product is normal, fp32_mul is IEEE multiplication:
  // float's * (SSE, round to nearest even) gives the same bits. (Below
  // 2^-126 float may round up to 2^-126 where fp32_mul flushes.)
  const uint64_t seed = test_seed();
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);
  Mismatches bad;
  int compared = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const auto [a, b] = mul_case(rng);
    volatile float x = bits_float(a), y = bits_float(b);
    const float p = x * y;
    if (std::fpclassify(x) != FP_NORMAL || std::fpclassify(y) != FP_NORMAL ||
        std::fpclassify(p) != FP_NORMAL || std::fabs(double(x) * double(y)) < std::ldexp(1.0, -126))
      continue;
    ++compared;
    if (fp32_mul(a, b) != float_bits(p))
      bad.add("fp32_mul(0x%08x, 0x%08x) = 0x%08x, float gives 0x%08x", a, b, fp32_mul(a, b), float_bits(p));
  }
  EXPECT_EQ(bad.count(), 0u) << "seed " << seed;
  EXPECT_GT(compared, 300'000);
}

TEST(Fp32MulTest, OnBf16OperandsItIsBf16Mul) {
  // A product of two bf16 values is exact: VOP MUL's fp32_mul of widened
  // operands equals the MXU's bf16_mul on every structured pair.
  const std::vector<bf16> v = bf16_structured();
  Mismatches bad;
  for (bf16 a : v)
    for (bf16 b : v)
      if (fp32_mul(bf16_to_fp32(a), bf16_to_fp32(b)) != bf16_mul(a, b))
        bad.add("fp32_mul(0x%04x0000, 0x%04x0000) != bf16_mul", a, b);
  EXPECT_EQ(bad.count(), 0u);
}

// ---- fp32_max, fp32_min ----

TEST(Fp32MaxMinTest, OrderSignedZerosSubnormalsAndNan) {
  const fp32 pz = 0, nz = 0x80000000u, one = 0x3F800000u, mone = 0xBF800000u;
  const fp32 pinf = 0x7F800000u, ninf = 0xFF800000u, two = 0x40000000u, mtwo = 0xC0000000u;
  EXPECT_EQ(fp32_max(one, two), two);
  EXPECT_EQ(fp32_min(one, two), one);
  EXPECT_EQ(fp32_max(mone, mtwo), mone);
  EXPECT_EQ(fp32_min(mone, mtwo), mtwo);
  EXPECT_EQ(fp32_max(mone, one), one);
  EXPECT_EQ(fp32_max(nz, pz), pz) << "-0 < +0";
  EXPECT_EQ(fp32_max(pz, nz), pz);
  EXPECT_EQ(fp32_min(pz, nz), nz);
  EXPECT_EQ(fp32_max(mone, nz), nz) << "ReLU of a negative value with a -0 bound";
  EXPECT_EQ(fp32_max(0x00000005u, mone), pz) << "a subnormal reads as +0";
  EXPECT_EQ(fp32_min(0x80000005u, one), nz) << "a negative subnormal reads as -0";
  EXPECT_EQ(fp32_max(ninf, mtwo), mtwo);
  EXPECT_EQ(fp32_min(pinf, two), two);
  EXPECT_EQ(fp32_max(pinf, ninf), pinf);
  for (fp32 n : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu})
    for (fp32 x : {pz, nz, one, pinf, ninf, n}) {
      EXPECT_EQ(fp32_max(n, x), kFp32CanonicalNan);
      EXPECT_EQ(fp32_max(x, n), kFp32CanonicalNan);
      EXPECT_EQ(fp32_min(n, x), kFp32CanonicalNan);
      EXPECT_EQ(fp32_min(x, n), kFp32CanonicalNan);
    }
}

TEST(Fp32MaxMinTest, SpecialPairsMatchHostComparison) {
  Mismatches bad;
  for (fp32 a : fp32_specials())
    for (fp32 b : fp32_specials()) {
      const float x = ftz(bits_float(a)), y = ftz(bits_float(b));
      fp32 hi, lo;
      if (std::isnan(x) || std::isnan(y)) {
        hi = lo = kFp32CanonicalNan;
      } else if (x == y) {  // equal values: only the zeros differ in bits
        hi = std::signbit(x) ? float_bits(y) : float_bits(x);
        lo = std::signbit(x) ? float_bits(x) : float_bits(y);
      } else {
        hi = float_bits(x > y ? x : y);
        lo = float_bits(x < y ? x : y);
      }
      if (fp32_max(a, b) != hi) bad.add("fp32_max(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, fp32_max(a, b), hi);
      if (fp32_min(a, b) != lo) bad.add("fp32_min(0x%08x, 0x%08x) = 0x%08x, want 0x%08x", a, b, fp32_min(a, b), lo);
    }
  EXPECT_EQ(bad.count(), 0u);
}

// ---- fp32_to_bf16 ----

TEST(Fp32ToBf16Test, SpecialValues) {
  EXPECT_EQ(fp32_to_bf16(0x00000000u), 0x0000);
  EXPECT_EQ(fp32_to_bf16(0x80000000u), 0x8000);
  EXPECT_EQ(fp32_to_bf16(0x007FFFFFu), 0x0000) << "subnormal is flushed before rounding";
  EXPECT_EQ(fp32_to_bf16(0x807FFFFFu), 0x8000);
  EXPECT_EQ(fp32_to_bf16(0x00800000u), 0x0080);
  EXPECT_EQ(fp32_to_bf16(0x7F800000u), 0x7F80);
  EXPECT_EQ(fp32_to_bf16(0xFF800000u), 0xFF80);
  EXPECT_EQ(fp32_to_bf16(0x7F800001u), kBf16CanonicalNan);
  EXPECT_EQ(fp32_to_bf16(0xFFFFFFFFu), kBf16CanonicalNan);
  EXPECT_EQ(fp32_to_bf16(0x7F7FFFFFu), 0x7F80) << "largest fp32 rounds past the largest bf16";
  EXPECT_EQ(fp32_to_bf16(0x7F7F7FFFu), 0x7F7F);
  EXPECT_EQ(fp32_to_bf16(0x7F7F8000u), 0x7F80) << "tie at the top: 0x7F7F is odd, rounds up to inf";
  EXPECT_EQ(fp32_to_bf16(0x3F808000u), 0x3F80) << "tie, even stays";
  EXPECT_EQ(fp32_to_bf16(0x3F818000u), 0x3F82) << "tie, odd rounds up";
  EXPECT_EQ(fp32_to_bf16(0x3F808001u), 0x3F81);
  EXPECT_EQ(fp32_to_bf16(0xBF807FFFu), 0xBF80);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-3.140625f), 0xC049);
  EXPECT_EQ(float_to_bf16(std::nanf("")), kBf16CanonicalNan);
}

TEST(Fp32ToBf16Test, StructuredInputsMatchNearestEven) {
  // Every upper half (sign, exponent, the 7 kept bits) with the dropped half
  // at and around every decision point; then every dropped half for a few
  // upper halves.
  Mismatches bad;
  const uint32_t lows[] = {0x0000, 0x0001, 0x0002, 0x3FFF, 0x4000, 0x7FFE, 0x7FFF, 0x8000,
                           0x8001, 0x8002, 0xBFFF, 0xC000, 0xFFFE, 0xFFFF, 0x1234, 0xEDCB};
  auto check = [&](fp32 x) {
    const bf16 got = fp32_to_bf16(x), want = ref_to_bf16(x);
    if (got != want) bad.add("fp32_to_bf16(0x%08x) = 0x%04x, want 0x%04x", x, got, want);
  };
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) check((hi << 16) | lo);
  for (uint32_t hi : {0x3F80u, 0x3F81u, 0xBF80u, 0x7F7Fu, 0x0080u, 0x0081u, 0x0000u, 0x7F80u})
    for (uint32_t lo = 0; lo < 0x10000; ++lo) check((hi << 16) | lo);
  EXPECT_EQ(bad.count(), 0u);
}

TEST(Fp32ToBf16Test, FloatAgreesWithBits) {
  for (float f : {0.0f, -0.0f, 1.0f, 1e-38f, 1e-40f, -1e-45f, 3.4e38f, -3.4e38f, 65504.0f, 0.1f})
    EXPECT_EQ(float_to_bf16(f), fp32_to_bf16(float_bits(f))) << f;
}

// ---- one column ----

TEST(Bf16DotColumnTest, AddsTopToBottomFromPlusZero) {
  const std::vector<bf16> a = {0x3F80, 0x4000, 0xC040, 0x3F00};  // 1, 2, -3, 0.5
  const std::vector<bf16> w = {0x4000, 0x3F80, 0x3F80, 0x4080};  // 2, 1, 1, 4
  EXPECT_EQ(bf16_dot_column(a.data(), w.data(), a.size()), float_bits(2.0f + 2.0f - 3.0f + 2.0f));
  // A -0 product at the top becomes +0 (+0 + -0), and stays +0 below it.
  const bf16 nz[] = {0x8000, 0x8000}, one[] = {0x3F80, 0x3F80};
  EXPECT_EQ(bf16_dot_column(nz, one, 2), 0x00000000u);
  EXPECT_EQ(bf16_dot_column(nz, one, 2, 0x80000000u), 0x80000000u) << "psum_in -0 keeps -0";
  EXPECT_EQ(bf16_dot_column(nz, one, 0), 0x00000000u);
}

TEST(Bf16DotColumnTest, OrderIsTopToBottom) {
  // 2^100 + 1 - 2^100 is 0 in this order; 1 in the order (2^100 - 2^100) + 1.
  const bf16 a[] = {0x7180, 0x3F80, 0xF180};  // 2^100, 1, -2^100
  const bf16 w[] = {0x3F80, 0x3F80, 0x3F80};
  EXPECT_EQ(bf16_dot_column(a, w, 3), 0x00000000u);
  const bf16 b[] = {0x7180, 0xF180, 0x3F80};
  EXPECT_EQ(bf16_dot_column(b, w, 3), 0x3F800000u);
}

TEST(Bf16DotColumnTest, SplitsLikeTwoPasses) {
  // psum_in continues a column: the first k rows, then the rest from there.
  std::mt19937_64 rng(test_seed());
  for (int t = 0; t < 1000; ++t) {
    std::vector<bf16> a(16), w(16);
    for (auto& x : a) x = float_to_bf16(std::normal_distribution<float>()(rng));
    for (auto& x : w) x = float_to_bf16(std::normal_distribution<float>()(rng));
    const size_t k = rng() % 17;
    const fp32 head = bf16_dot_column(a.data(), w.data(), k);
    EXPECT_EQ(bf16_dot_column(a.data() + k, w.data() + k, 16 - k, head),
              bf16_dot_column(a.data(), w.data(), 16));
    // And the sequential loop written out.
    fp32 s = 0;
    for (int i = 0; i < 16; ++i) s = fp32_add(s, bf16_mul(a[i], w[i]));
    EXPECT_EQ(bf16_dot_column(a.data(), w.data(), 16), s);
  }
}

}  // namespace
}  // namespace tpu
