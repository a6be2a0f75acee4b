// SPDX-License-Identifier: Apache-2.0
// The error measure of the training arithmetic's elementary functions
// (docs/numerics.md, "Error measure") and their stated bounds, shared by the
// unit test (train_f32_test.cpp: sweeps) and the exhaustive one
// (train_f32_long_test.cpp: every fp32 input).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

#include "tpu/train_f32.h"

namespace tpu::train_bounds {

inline constexpr double kFail = std::numeric_limits<double>::infinity();

// The error of r in ulps of the exact value v (docs/numerics.md): kFail
// where the rules are broken (r infinite or NaN when v is not, or the other
// way round; r zero when |v| >= 2^-126, or nonzero when |v| < 2^-126).
inline double ulp_error(fp32 r, double v) {
  const float rf = bits_float(r);
  if (std::isnan(v)) return std::isnan(rf) && r == kFp32CanonicalNan ? 0 : kFail;
  if (std::isnan(rf)) return kFail;
  // Rounded to nearest, v overflows when it reaches the midpoint between the
  // largest finite fp32 and 2^128.
  const bool v_inf = std::fabs(v) >= std::ldexp(2.0 - std::ldexp(1.0, -24), 127);
  if (v_inf || std::isinf(rf)) return v_inf && std::isinf(rf) && std::signbit(rf) == std::signbit(v) ? 0 : kFail;
  const bool v_tiny = std::fabs(v) < std::ldexp(1.0, -126);
  if (v_tiny || rf == 0) return v_tiny && rf == 0 ? 0 : kFail;
  int e;
  std::frexp(std::fabs(v), &e);  // |v| in [2^(e-1), 2^e)
  return std::fabs(double(rf) - v) / std::ldexp(1.0, e - 1 - 23);
}

// The input as the functions read it: subnormals are zeros.
inline double input_value(fp32 x) {
  const float f = bits_float(x);
  return fp32_is_subnormal(x) ? std::copysign(0.0, f) : double(f);
}

struct Function {
  const char* name;
  fp32 (*f)(fp32);
  double (*exact)(double);
  double bound;  // ulps, stated in docs/numerics.md: the maximum over every input, rounded up to 0.05
  // Every input in [every_lo, every_hi) stands for every fp32 input: recip,
  // rsqrt and sqrt compute on the significand (m in [1, 2) or [1, 4)) and
  // scale by an exact power of two, so their error in ulps over m is their
  // error over every x whose result is normal (docs/numerics.md).
  uint64_t every_lo, every_hi;
};

inline double exact_recip(double x) { return 1.0 / x; }
inline double exact_rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double exact_sqrt(double x) { return std::sqrt(x); }
inline double exact_exp(double x) { return std::exp(x); }
inline double exact_log(double x) { return std::log(x); }

inline constexpr uint64_t kAll = uint64_t{1} << 32;
inline constexpr Function kFunctions[] = {
    {"recip", fp32_recip, exact_recip, 1.15, 0x3F800000u, 0x40000000u},
    {"rsqrt", fp32_rsqrt, exact_rsqrt, 1.25, 0x3F800000u, 0x40800000u},
    {"sqrt", fp32_sqrt, exact_sqrt, 0.75, 0x3F800000u, 0x40800000u},
    {"exp", fp32_exp, exact_exp, 1.25, 0, kAll},
    {"log", fp32_log, exact_log, 0.9, 0, kAll},
};

// The largest error over a set of inputs and where it is.
struct Worst {
  double ulp = 0;
  fp32 x = 0;
  uint64_t count = 0;

  void add(const Function& fn, fp32 in) {
    const double e = ulp_error(fn.f(in), fn.exact(input_value(in)));
    ++count;
    if (e > ulp) ulp = e, x = in;
  }
  void merge(const Worst& o) {
    count += o.count;
    if (o.ulp > ulp) ulp = o.ulp, x = o.x;
  }
  void print(const Function& fn, const char* over) const {
    std::printf("%-5s over %s: max %.4f ulp at 0x%08x (%.9g -> 0x%08x), %llu inputs, bound %.2f\n", fn.name, over, ulp,
                x, bits_float(x), fn.f(x), static_cast<unsigned long long>(count), fn.bound);
  }
};

// Inputs lo, lo + stride, ... below hi (hi up to 2^32).
inline Worst sweep(const Function& fn, uint64_t lo, uint64_t hi, uint64_t stride) {
  Worst w;
  for (uint64_t u = lo; u < hi; u += stride) w.add(fn, fp32(u));
  return w;
}

}  // namespace tpu::train_bounds
