// SPDX-License-Identifier: Apache-2.0
// The training arithmetic (tpu/train_f32.h) against independent host
// computations: the primitives against float/double arithmetic followed by
// the flush rules, the elementary functions against the C library in double
// (the stated bounds over sweeps; every input is train_f32_long_test's job),
// and the lane functions on cases worked out by hand. Random cases are
// seeded (TPU_SEED=<n> to repeat one).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seeded_test.h"
#include "tpu/train_f32.h"
#include "train_f32_bounds.h"

namespace tpu {
namespace {

using train_bounds::Function;
using train_bounds::kFunctions;
using train_bounds::Worst;

constexpr fp32 kPosZero = 0x00000000u, kNegZero = 0x80000000u, kOne = 0x3F800000u, kMinusOne = 0xBF800000u;
constexpr fp32 kPosInf = 0x7F800000u, kNegInf = 0xFF800000u, kNan = kFp32CanonicalNan;
constexpr fp32 kSub = 0x00000001u, kNegSub = 0x807FFFFFu, kMinNormal = 0x00800000u, kMax = 0x7F7FFFFFu;
const std::vector<fp32> kNans = {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0xFFC00000u, 0x7FBFFFFFu};

fp32 f(float x) { return float_bits(x); }
// The double v rounded to fp32 (to nearest even): the correctly rounded result.
fp32 correctly_rounded(double v) { return float_bits(float(v)); }

float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
float flushed(fp32 x) { return ftz(bits_float(x)); }

// Special and edge patterns of both signs.
std::vector<fp32> specials() {
  std::vector<fp32> v;
  for (fp32 s : {0u, 0x80000000u})
    for (fp32 m : {0x00000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u, 0x00800001u, 0x3F000000u, 0x3F7FFFFFu,
                   0x3F800000u, 0x3F800001u, 0x3FC00000u, 0x40000000u, 0x4B000001u, 0x4EFFFFFFu, 0x4F000000u,
                   0x7F000000u, 0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu})
      v.push_back(s | m);
  return v;
}

// ---- Primitives ----

TEST(TrainF32Primitives, Neg) {
  EXPECT_EQ(fp32_neg(kPosZero), kNegZero);
  EXPECT_EQ(fp32_neg(kNegZero), kPosZero);
  EXPECT_EQ(fp32_neg(kSub), kNegZero) << "a subnormal is +0, negated -0";
  EXPECT_EQ(fp32_neg(kNegSub), kPosZero);
  EXPECT_EQ(fp32_neg(kOne), kMinusOne);
  EXPECT_EQ(fp32_neg(kNegInf), kPosInf);
  EXPECT_EQ(fp32_neg(kMax), 0xFF7FFFFFu);
  for (fp32 n : kNans) EXPECT_EQ(fp32_neg(n), kNan) << std::hex << n;
}

TEST(TrainF32Primitives, SubSignedZeros) {
  EXPECT_EQ(fp32_sub(kOne, kOne), kPosZero) << "x - x is +0";
  EXPECT_EQ(fp32_sub(kMinusOne, kMinusOne), kPosZero);
  EXPECT_EQ(fp32_sub(kNegZero, kPosZero), kNegZero);
  EXPECT_EQ(fp32_sub(kPosZero, kPosZero), kPosZero);
  EXPECT_EQ(fp32_sub(kNegZero, kNegZero), kPosZero);
  EXPECT_EQ(fp32_sub(kPosZero, kOne), kMinusOne);
  EXPECT_EQ(fp32_sub(kPosInf, kPosInf), kNan);
  EXPECT_EQ(fp32_sub(kPosInf, kNegInf), kPosInf);
  EXPECT_EQ(fp32_sub(0x00C00000u, kMinNormal), kPosZero) << "1.5 * 2^-126 - 2^-126 is tiny: flushed";
}

class TrainF32PrimitivesRandom : public test::SeededTest {};

TEST_F(TrainF32PrimitivesRandom, SubGtEqMatchHostFloat) {
  std::vector<fp32> a = specials(), b = specials();
  std::vector<std::pair<fp32, fp32>> pairs;
  for (fp32 x : a)
    for (fp32 y : b) pairs.push_back({x, y});
  for (int i = 0; i < 1'000'000; ++i) {
    const fp32 x = fp32(rng_());
    const fp32 y = i % 2 ? fp32(rng_()) : x + uint32_t(rng_() % 7) - 3;  // near: ties and equality
    pairs.push_back({x, y});
  }
  int bad = 0;
  for (const auto& [x, y] : pairs) {
    const float fx = flushed(x), fy = flushed(y);
    volatile float d = fx - fy;  // SSE: round to nearest even, no FTZ
    const fp32 want_sub = std::isnan(d) ? kNan : f(ftz(d));
    if (fp32_sub(x, y) != want_sub && bad++ < 10) ADD_FAILURE() << std::hex << x << " - " << y;
    if (fp32_gt(x, y) != (fx > fy) && bad++ < 10) ADD_FAILURE() << std::hex << x << " > " << y;
    if (fp32_eq(x, y) != (fx == fy) && bad++ < 10) ADD_FAILURE() << std::hex << x << " == " << y;
  }
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

TEST_F(TrainF32PrimitivesRandom, RintMatchesNearbyint) {
  EXPECT_EQ(fp32_rint(f(0.5f)), 0) << "ties to even";
  EXPECT_EQ(fp32_rint(f(1.5f)), 2);
  EXPECT_EQ(fp32_rint(f(2.5f)), 2);
  EXPECT_EQ(fp32_rint(f(-2.5f)), -2);
  EXPECT_EQ(fp32_rint(f(-0.49999997f)), 0);
  EXPECT_EQ(fp32_rint(f(8388609.0f)), 8388609);
  EXPECT_EQ(fp32_rint(kNan), 0);
  EXPECT_EQ(fp32_rint(kNegZero), 0);
  EXPECT_EQ(fp32_rint(kPosInf), INT32_MAX);
  EXPECT_EQ(fp32_rint(kNegInf), INT32_MIN);
  EXPECT_EQ(fp32_rint(0x4F000000u), INT32_MAX) << "2^31 saturates";
  EXPECT_EQ(fp32_rint(0xCF000000u), INT32_MIN) << "-2^31 is exact";
  EXPECT_EQ(fp32_rint(0x4EFFFFFFu), 2147483520);
  int bad = 0;
  auto check = [&](fp32 x) {
    const double v = flushed(x);
    if (std::isnan(v) || std::fabs(v) >= 2147483648.0) return;
    const int32_t want = int32_t(std::nearbyint(v));  // round to nearest even: the default mode
    if (fp32_rint(x) != want && bad++ < 10) ADD_FAILURE() << std::hex << x << " -> " << std::dec << fp32_rint(x);
  };
  for (uint32_t u = 0; u < 0x10000; ++u) check(u << 16);
  for (int i = 0; i < 1'000'000; ++i) check(fp32(rng_()));
  for (int i = 0; i < 100'000; ++i) check(f(float(int32_t(rng_() % 2'000'000) - 1'000'000) / 2));  // halves
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

TEST_F(TrainF32PrimitivesRandom, FromIntMatchesConversion) {
  EXPECT_EQ(fp32_from_int(0), kPosZero);
  EXPECT_EQ(fp32_from_int(1), kOne);
  EXPECT_EQ(fp32_from_int(-1), kMinusOne);
  EXPECT_EQ(fp32_from_int(16777217), 0x4B800000u) << "2^24 + 1: a tie, to even";
  EXPECT_EQ(fp32_from_int(16777219), 0x4B800002u) << "2^24 + 3: a tie, to even (up)";
  EXPECT_EQ(fp32_from_int(INT32_MIN), 0xCF000000u);
  EXPECT_EQ(fp32_from_int(INT32_MAX), 0x4F000000u) << "rounds up to 2^31";
  int bad = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const int32_t k = i % 2 ? int32_t(rng_()) : int32_t(rng_() % 1000) - 500;
    if (fp32_from_int(k) != f(float(k)) && bad++ < 10) ADD_FAILURE() << k;
  }
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

TEST_F(TrainF32PrimitivesRandom, LdexpMatchesTheRules) {
  EXPECT_EQ(fp32_ldexp(kOne, 127), 0x7F000000u);
  EXPECT_EQ(fp32_ldexp(kOne, 128), kPosInf);
  EXPECT_EQ(fp32_ldexp(kMinusOne, 128), kNegInf);
  EXPECT_EQ(fp32_ldexp(kOne, -126), kMinNormal);
  EXPECT_EQ(fp32_ldexp(0x3FFFFFFFu, -127), kPosZero) << "(2 - 2^-23) 2^-127 < 2^-126: flushed, not rounded up";
  EXPECT_EQ(fp32_ldexp(kMinusOne, -127), kNegZero);
  EXPECT_EQ(fp32_ldexp(kSub, 100), kPosZero);
  EXPECT_EQ(fp32_ldexp(kNegInf, -1000), kNegInf);
  EXPECT_EQ(fp32_ldexp(0x7F800001u, 0), kNan);
  EXPECT_EQ(fp32_ldexp(kMinNormal, 1000000), kPosInf);
  int bad = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const fp32 x = fp32(rng_());
    const int k = int(rng_() % 601) - 300;
    const double v = std::ldexp(double(flushed(x)), k);  // exact in double
    fp32 want;
    if (std::isnan(v))
      want = kNan;
    else if (std::fabs(v) >= std::ldexp(1.0, 128))
      want = f(std::copysign(INFINITY, float(v)));
    else if (std::fabs(v) < std::ldexp(1.0, -126))
      want = x & 0x80000000u;
    else
      want = f(float(v));
    if (fp32_ldexp(x, k) != want && bad++ < 10) ADD_FAILURE() << std::hex << x << " * 2^" << std::dec << k;
  }
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

TEST_F(TrainF32PrimitivesRandom, ExponentAndSignificandMatchFrexp) {
  EXPECT_EQ(fp32_exponent(kOne), 0);
  EXPECT_EQ(fp32_significand(0xC0400000u), 0xBFC00000u) << "-3 = -1.5 * 2^1";
  EXPECT_EQ(fp32_exponent(0xC0400000u), 1);
  EXPECT_EQ(fp32_exponent(kMinNormal), -126);
  EXPECT_EQ(fp32_exponent(kMax), 127);
  EXPECT_EQ(fp32_exponent(kSub), 0);
  EXPECT_EQ(fp32_significand(kNegSub), kNegZero);
  EXPECT_EQ(fp32_significand(kNegInf), kNegInf);
  EXPECT_EQ(fp32_significand(0xFFFFFFFFu), kNan);
  int bad = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const fp32 x = fp32(rng_());
    const float v = flushed(x);
    if (std::fpclassify(v) != FP_NORMAL) continue;
    int e;
    const float m = std::frexp(v, &e);  // m in [0.5, 1)
    if ((fp32_exponent(x) != e - 1 || fp32_significand(x) != f(2 * m)) && bad++ < 10) ADD_FAILURE() << std::hex << x;
  }
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

// ---- Elementary functions: special cases ----

TEST(TrainF32Recip, SpecialCases) {
  for (fp32 n : kNans) EXPECT_EQ(fp32_recip(n), kNan);
  EXPECT_EQ(fp32_recip(kPosZero), kPosInf);
  EXPECT_EQ(fp32_recip(kNegZero), kNegInf);
  EXPECT_EQ(fp32_recip(kSub), kPosInf) << "a subnormal reads as +0";
  EXPECT_EQ(fp32_recip(kNegSub), kNegInf);
  EXPECT_EQ(fp32_recip(kPosInf), kPosZero);
  EXPECT_EQ(fp32_recip(kNegInf), kNegZero);
  EXPECT_EQ(fp32_recip(0x7E800000u), kMinNormal) << "1/2^126 = 2^-126";
  EXPECT_EQ(fp32_recip(0x7E800001u), kPosZero) << "below 2^-126: flushed";
  EXPECT_EQ(fp32_recip(0xFF7FFFFFu), kNegZero);
  EXPECT_EQ(fp32_recip(kMinNormal), 0x7E800000u);
  EXPECT_EQ(fp32_recip(f(-4.0f)), f(-0.25f));
  for (int e = -126; e <= 126; ++e) EXPECT_EQ(fp32_recip(fp32_pow2(e)), fp32_pow2(-e)) << "2^" << e;
}

TEST(TrainF32Sqrt, SpecialCases) {
  for (fp32 n : kNans) {
    EXPECT_EQ(fp32_sqrt(n), kNan);
    EXPECT_EQ(fp32_rsqrt(n), kNan);
  }
  EXPECT_EQ(fp32_sqrt(kPosZero), kPosZero);
  EXPECT_EQ(fp32_sqrt(kNegZero), kNegZero) << "sqrt(-0) = -0";
  EXPECT_EQ(fp32_sqrt(kNegSub), kNegZero);
  EXPECT_EQ(fp32_sqrt(kMinusOne), kNan);
  EXPECT_EQ(fp32_sqrt(kNegInf), kNan);
  EXPECT_EQ(fp32_sqrt(kPosInf), kPosInf);
  EXPECT_EQ(fp32_rsqrt(kPosZero), kPosInf);
  EXPECT_EQ(fp32_rsqrt(kNegZero), kNegInf) << "1/sqrt(-0) = 1/-0";
  EXPECT_EQ(fp32_rsqrt(kSub), kPosInf);
  EXPECT_EQ(fp32_rsqrt(kMinusOne), kNan);
  EXPECT_EQ(fp32_rsqrt(kNegInf), kNan);
  EXPECT_EQ(fp32_rsqrt(kPosInf), kPosZero);
  for (int e = -63; e <= 63; ++e) {
    EXPECT_EQ(fp32_sqrt(fp32_pow2(2 * e)), fp32_pow2(e)) << "sqrt(4^" << e << ")";
    EXPECT_EQ(fp32_rsqrt(fp32_pow2(2 * e)), fp32_pow2(-e)) << "rsqrt(4^" << e << ")";
  }
  EXPECT_LE(train_bounds::ulp_error(fp32_sqrt(kMax), std::sqrt(double(bits_float(kMax)))), 0.5001)
      << "2^64, half an ulp";
  EXPECT_EQ(fp32_sqrt(kMinNormal), 0x20000000u);
  // Exact squares come out exact.
  for (uint32_t k = 1; k <= 4096; ++k) EXPECT_EQ(fp32_sqrt(f(float(k * k))), f(float(k))) << k;
}

TEST(TrainF32Exp, SpecialCases) {
  for (fp32 n : kNans) EXPECT_EQ(fp32_exp(n), kNan);
  EXPECT_EQ(fp32_exp(kPosZero), kOne);
  EXPECT_EQ(fp32_exp(kNegZero), kOne);
  EXPECT_EQ(fp32_exp(kSub), kOne);
  EXPECT_EQ(fp32_exp(0x33000000u), kOne) << "e^(2^-25) rounds to 1";
  EXPECT_EQ(fp32_exp(0xB3000000u), kOne);
  EXPECT_EQ(fp32_exp(kPosInf), kPosInf);
  EXPECT_EQ(fp32_exp(kNegInf), kPosZero);
  EXPECT_EQ(fp32_exp(0x42B20001u), kPosInf) << "above X_HI";
  EXPECT_EQ(fp32_exp(0x42B20000u), kPosInf) << "e^89 overflows through the ldexp";
  // The edges of the finite results, where e^x crosses (2 - 2^-24) 2^127
  // and 2^-126 (ln of them: 88.7228391..., -87.3365447...).
  EXPECT_EQ(fp32_exp(0x42B17217u), correctly_rounded(std::exp(88.72283172607422))) << "the largest finite";
  EXPECT_EQ(fp32_exp(0x42B17218u), kPosInf) << "88.72283935546875";
  EXPECT_EQ(fp32_exp(0xC2B00001u), kPosZero) << "below X_LO";
  EXPECT_EQ(fp32_exp(0xC2AEAC4Fu), correctly_rounded(std::exp(-87.33654022216797))) << "the smallest normal";
  EXPECT_EQ(fp32_exp(0xC2AEAC50u), kPosZero) << "-87.3365478515625: e^x < 2^-126";
  EXPECT_EQ(fp32_exp(kOne), correctly_rounded(std::exp(1.0))) << "e";
  EXPECT_EQ(fp32_exp(kMinusOne), correctly_rounded(std::exp(-1.0)));
}

TEST(TrainF32Log, SpecialCases) {
  for (fp32 n : kNans) EXPECT_EQ(fp32_log(n), kNan);
  EXPECT_EQ(fp32_log(kPosZero), kNegInf);
  EXPECT_EQ(fp32_log(kNegZero), kNegInf);
  EXPECT_EQ(fp32_log(kSub), kNegInf);
  EXPECT_EQ(fp32_log(kNegSub), kNegInf);
  EXPECT_EQ(fp32_log(kMinusOne), kNan);
  EXPECT_EQ(fp32_log(kNegInf), kNan);
  EXPECT_EQ(fp32_log(kPosInf), kPosInf);
  EXPECT_EQ(fp32_log(kOne), kPosZero) << "log 1 = +0 exactly";
  EXPECT_EQ(fp32_log(f(2.0f)), correctly_rounded(std::log(2.0))) << "ln 2";
  EXPECT_EQ(fp32_log(kMax), correctly_rounded(std::log(double(bits_float(kMax)))));
  EXPECT_EQ(fp32_log(kMinNormal), correctly_rounded(std::log(0x1p-126)));
  EXPECT_EQ(fp32_log(0x3F7FFFFFu), correctly_rounded(std::log1p(-0x1p-24))) << "just below 1";
  EXPECT_EQ(fp32_log(0x3F800001u), correctly_rounded(std::log1p(0x1p-23))) << "just above 1";
}

// ---- Elementary functions: the stated bounds over sweeps ----

// Every bf16 pattern, every 4099th fp32 pattern (all binades, both signs)
// and a dense sweep of the function's core range; prints what it measured.
void check_bound(const Function& fn, uint64_t core_lo, uint64_t core_hi, uint64_t core_stride, bool both_signs) {
  const auto start = std::chrono::steady_clock::now();
  const Worst bf16s = train_bounds::sweep(fn, 0, uint64_t{1} << 32, 1 << 16);
  Worst all = train_bounds::sweep(fn, 0, uint64_t{1} << 32, 4099);
  Worst core = train_bounds::sweep(fn, core_lo, core_hi, core_stride);
  if (both_signs) core.merge(train_bounds::sweep(fn, core_lo | 0x80000000u, core_hi | 0x80000000u, core_stride));
  bf16s.print(fn, "all bf16 patterns");
  all.print(fn, "every 4099th fp32 pattern");
  core.print(fn, "the core range");
  std::printf("      %.2f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (const Worst* w : {&bf16s, static_cast<const Worst*>(&all), static_cast<const Worst*>(&core)})
    EXPECT_LE(w->ulp, fn.bound) << fn.name << "(0x" << std::hex << w->x << ") = 0x" << fn.f(w->x);
}

const Function& function(const std::string& name) {
  for (const Function& fn : kFunctions)
    if (name == fn.name) return fn;
  throw std::invalid_argument(name);
}

// The core ranges: where the result depends on the significand alone
// (recip, rsqrt, sqrt: every input is one of these times an exact power of
// two), and around 1 (exp: k from -3 to 3; log: the reduction's two sides).
TEST(TrainF32Bound, Recip) { check_bound(function("recip"), 0x3F800000u, 0x40000000u, 8, false); }
TEST(TrainF32Bound, Rsqrt) { check_bound(function("rsqrt"), 0x3F800000u, 0x40800000u, 16, false); }
TEST(TrainF32Bound, Sqrt) { check_bound(function("sqrt"), 0x3F800000u, 0x40800000u, 16, false); }
TEST(TrainF32Bound, Exp) { check_bound(function("exp"), 0x3E000000u, 0x40000000u, 64, true); }
TEST(TrainF32Bound, Log) { check_bound(function("log"), 0x3F000000u, 0x40000000u, 16, false); }

TEST(TrainF32Rsqrt, SeedConstantIsTheBest) {
  // The seed's largest relative error over every m in [1, 4) is smallest for
  // kRsqrtMagic among its neighbours (docs/numerics.md).
  auto worst = [](uint32_t magic) {
    double w = 0;
    for (uint32_t m = 0x3F800000u; m < 0x40800000u; ++m)
      w = std::max(w, std::fabs(double(bits_float(magic - (m >> 1))) * std::sqrt(double(bits_float(m))) - 1));
    return w;
  };
  const double at = worst(train_const::kRsqrtMagic);
  EXPECT_LT(at, worst(train_const::kRsqrtMagic - 1));
  EXPECT_LT(at, worst(train_const::kRsqrtMagic + 1));
  EXPECT_NEAR(at, 0.0342128, 1e-7);
}

// ---- Lane functions ----

TEST(TrainLanes, MaskPassesYWhereTheActivationIsPositive) {
  const fp32 y = f(-3.25f);
  EXPECT_EQ(train::mask_lane(y, 0x3F80), y);
  EXPECT_EQ(train::mask_lane(y, 0x0080), y) << "the smallest normal bf16 is above zero";
  EXPECT_EQ(train::mask_lane(kNan, 0x4000), kNan) << "y passes as it is";
  for (bf16 a : {bf16(0x0000), bf16(0x8000), bf16(0x0001), bf16(0xBF80), bf16(0x7FC0), bf16(0xFF80)})
    EXPECT_EQ(train::mask_lane(y, a), kPosZero) << std::hex << a;
  EXPECT_EQ(train::mask_lane(y, 0x7F80), y) << "+inf is above zero";
}

TEST(TrainLanes, SgdOnExactValues) {
  // 1 - 0.25 * 0.5 = 0.875, every step exact.
  train::Weight r = train::sgd_lane(kOne, f(0.5f), f(0.25f));
  EXPECT_EQ(r.w, f(0.875f));
  EXPECT_EQ(r.w_bf16, 0x3F60);
  // 1 - 2^-9: the fp32 weight keeps it, its bf16 copy rounds to even (1.0).
  r = train::sgd_lane(kOne, f(0.0078125f), f(0.25f));
  EXPECT_EQ(r.w, f(1.0f - 0.001953125f));
  EXPECT_EQ(r.w_bf16, 0x3F80);
  // A step too small for the weight's precision changes nothing.
  r = train::sgd_lane(kOne, f(1e-9f), f(0.01f));
  EXPECT_EQ(r.w, kOne);
  // w - w = +0.
  EXPECT_EQ(train::sgd_lane(f(2.0f), f(4.0f), f(0.5f)).w, kPosZero);
}

TEST(TrainLanes, MomentumOnExactValues) {
  // v' = 0.5 * 0.5 + 0.25 = 0.5; w' = 2 - 0.5 * 0.5 = 1.75.
  const train::MomentumLane r = train::momentum_lane(f(2.0f), f(0.5f), f(0.25f), f(0.5f), f(0.5f));
  EXPECT_EQ(r.v, f(0.5f));
  EXPECT_EQ(r.w.w, f(1.75f));
  EXPECT_EQ(r.w.w_bf16, 0x3FE0);
  // From v = 0 it is SGD.
  const train::MomentumLane s = train::momentum_lane(kOne, kPosZero, f(0.5f), f(0.25f), f(0.9f));
  EXPECT_EQ(s.v, f(0.5f));
  EXPECT_EQ(s.w.w, train::sgd_lane(kOne, f(0.5f), f(0.25f)).w);
}

double dbl(fp32 x) { return double(bits_float(x)); }

TEST(TrainLanes, AdamFirstStepFromZero) {
  const train::AdamParams p;
  const fp32 lr = f(0.001f);
  const train::AdamStep st = train::adam_step(kOne, kOne, lr);
  EXPECT_EQ(st.b1p, p.beta1) << "1 * beta1";
  EXPECT_EQ(st.b2p, p.beta2);
  // alpha = lr sqrt(1 - beta2) / (1 - beta1): 1 - beta is exact, the rest
  // within a few ulps (sqrt, recip and three roundings).
  const double alpha = 0.001f * std::sqrt(1.0 - dbl(p.beta2)) / (1.0 - dbl(p.beta1));
  EXPECT_NEAR(dbl(st.alpha), alpha, 4 * alpha * 0x1p-23);
  // From m = v = 0 with g = 0.5: m' = 0.5 c1 and v' = 0.25 c2 exactly (one
  // rounding each), and the step is about lr (m'/sqrt(v') = c1/sqrt(c2)).
  const fp32 g = f(0.5f);
  const train::AdamLane r = train::adam_lane(kOne, kPosZero, kPosZero, g, st.alpha);
  EXPECT_EQ(r.m, fp32_mul(g, p.c1));
  EXPECT_EQ(r.v, fp32_mul(fp32_mul(g, g), p.c2));
  const double step = dbl(r.m) * dbl(st.alpha) / (std::sqrt(dbl(r.v)) + dbl(p.eps));
  EXPECT_NEAR(step, 0.001, 0.001 * 1e-3);
  EXPECT_NEAR(dbl(r.w.w), 1.0 - step, 0x1p-24) << "within one ulp of 1 - step";
  EXPECT_EQ(r.w.w_bf16, fp32_to_bf16(r.w.w));
  // A zero gradient from zero state does not move the weight.
  const train::AdamLane z = train::adam_lane(kOne, kPosZero, kPosZero, kPosZero, st.alpha);
  EXPECT_EQ(z.w.w, kOne);
  EXPECT_EQ(z.m, kPosZero);
  EXPECT_EQ(z.v, kPosZero);
}

TEST(TrainLanes, AdamPowersByRepeatedMultiplication) {
  train::AdamStep st{kOne, kOne, 0};
  fp32 b1 = kOne, b2 = kOne;
  for (int t = 1; t <= 100; ++t) {
    st = train::adam_step(st.b1p, st.b2p, f(0.001f));
    b1 = fp32_mul(b1, train::AdamParams{}.beta1);
    b2 = fp32_mul(b2, train::AdamParams{}.beta2);
    ASSERT_EQ(st.b1p, b1) << t;
    ASSERT_EQ(st.b2p, b2) << t;
  }
  // After 100 steps the powers are within 50 ulps of pow's.
  EXPECT_NEAR(dbl(st.b1p), std::pow(dbl(train::AdamParams{}.beta1), 100), 50 * dbl(st.b1p) * 0x1p-23);
}

TEST(TrainLanes, SoftmaxCeOfEqualLogits) {
  constexpr int kC = 10;
  const fp32 inv_b = f(1.0f / 32);
  std::vector<fp32> z(kC, f(3.5f));
  std::vector<bf16> g(kC);
  train::SoftmaxCe r = train::softmax_ce_lane(z.data(), kC, 4, inv_b, g.data());
  // s = 10 exactly (ten e^0 = 1), loss = log(10) within log's bound.
  const Function& log_fn = function("log");
  EXPECT_LE(train_bounds::ulp_error(r.loss, std::log(10.0)), log_fn.bound);
  EXPECT_EQ(r.loss, fp32_log(f(10.0f)));
  EXPECT_EQ(r.correct, kPosZero) << "all are maxima: the first, class 0, is the prediction";
  // (1/10 - 1) / 32 at the label, (1/10) / 32 elsewhere, rounded to bf16.
  for (int j = 0; j < kC; ++j) {
    const double want = (0.1 - (j == 4 ? 1 : 0)) / 32;
    EXPECT_EQ(g[size_t(j)], float_to_bf16(float(want))) << j;
  }
  r = train::softmax_ce_lane(z.data(), kC, 0, inv_b, g.data());
  EXPECT_EQ(r.correct, kOne);
}

TEST(TrainLanes, SoftmaxCeFirstMaximumWins) {
  const fp32 z[4] = {f(1.0f), f(5.0f), f(5.0f), f(-2.0f)};
  bf16 g[4];
  EXPECT_EQ(train::softmax_ce_lane(z, 4, 1, kOne, g).correct, kOne);
  EXPECT_EQ(train::softmax_ce_lane(z, 4, 2, kOne, g).correct, kPosZero) << "tied, but class 1 comes first";
  EXPECT_EQ(train::softmax_ce_lane(z, 4, 0, kOne, g).correct, kPosZero);
}

TEST(TrainLanes, SoftmaxCeOfADominantLogit) {
  // e^-100 is below 2^-126: flushed, so s = 1, the loss is +0 and so are
  // all gradients (p = 1 at the label, +0 elsewhere).
  const fp32 z[3] = {kPosZero, f(100.0f), kPosZero};
  bf16 g[3];
  const train::SoftmaxCe r = train::softmax_ce_lane(z, 3, 1, f(0.25f), g);
  EXPECT_EQ(r.loss, kPosZero);
  EXPECT_EQ(r.correct, kOne);
  for (bf16 x : g) EXPECT_EQ(x, 0);
  // The label on a small logit: loss = 100 exactly (log 1 - (0 - 100)).
  const train::SoftmaxCe w = train::softmax_ce_lane(z, 3, 0, f(0.25f), g);
  EXPECT_EQ(w.loss, f(100.0f));
  EXPECT_EQ(w.correct, kPosZero);
  EXPECT_EQ(g[0], float_to_bf16(-0.25f));
  EXPECT_EQ(g[1], float_to_bf16(0.25f));
  EXPECT_EQ(g[2], 0);
}

TEST(TrainLanes, SoftmaxCeInvalidLabelGivesZeros) {
  const fp32 z[3] = {f(1.0f), f(2.0f), f(3.0f)};
  for (int32_t y : {-1, 3, INT32_MIN, INT32_MAX}) {
    bf16 g[3] = {0x1234, 0x1234, 0x1234};
    const train::SoftmaxCe r = train::softmax_ce_lane(z, 3, y, kOne, g);
    EXPECT_EQ(r.loss, kPosZero) << y;
    EXPECT_EQ(r.correct, kPosZero) << y;
    for (bf16 x : g) EXPECT_EQ(x, 0) << y;
  }
}

class TrainLanesRandom : public test::SeededTest {};

TEST_F(TrainLanesRandom, SoftmaxCeNearDouble) {
  // Against softmax and log-sum-exp in double: the loss within 2^-20 of
  // max(1, loss) and each gradient within a bf16 rounding (2^-8 relative)
  // plus 2^-20 / B.
  std::normal_distribution<float> normal(0.0f, 4.0f);
  int bad = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int c = 2 + int(rng_() % 50);
    std::vector<fp32> z(static_cast<size_t>(c));
    for (fp32& x : z) x = f(normal(rng_));
    const int32_t y = int32_t(rng_() % uint64_t(c));
    std::vector<bf16> g(static_cast<size_t>(c));
    const train::SoftmaxCe r = train::softmax_ce_lane(z.data(), c, y, f(1.0f / 16), g.data());
    double m = -INFINITY, s = 0;
    for (fp32 x : z) m = std::max(m, dbl(x));
    for (fp32 x : z) s += std::exp(dbl(x) - m);
    const double loss = std::log(s) - (dbl(z[size_t(y)]) - m);
    if (std::fabs(dbl(r.loss) - loss) > 0x1p-20 * std::max(1.0, loss) && bad++ < 10)
      ADD_FAILURE() << "loss " << dbl(r.loss) << " want " << loss;
    for (int j = 0; j < c; ++j) {
      const double want = (std::exp(dbl(z[size_t(j)]) - m) / s - (j == y ? 1 : 0)) / 16;
      const double got = double(bf16_to_float(g[size_t(j)]));
      if (std::fabs(got - want) > 0x1p-8 * std::fabs(want) + 0x1p-24 && bad++ < 10)
        ADD_FAILURE() << "grad " << j << " " << got << " want " << want;
    }
  }
  EXPECT_EQ(bad, 0) << "seed " << seed_;
}

TEST(TrainLanes, CeAccumulateAddsInPlace) {
  fp32 l = f(1.5f), k = f(2.0f);
  train::ce_accumulate(l, k, {f(0.25f), kOne});
  EXPECT_EQ(l, f(1.75f));
  EXPECT_EQ(k, f(3.0f));
}

}  // namespace
}  // namespace tpu
