// SPDX-License-Identifier: Apache-2.0
// Reference numerics of the bf16 mode: bf16 x bf16 products exact in fp32,
// fp32 addition, fp32 -> bf16 conversion (the MXU), and the fp32
// multiplication, maximum and minimum of the VPU's fp32 path (tpu/vpu_f32.h
// builds ACT F32 and VOP BF16 from them). Everything works on raw bits
// (bf16 = uint16_t, fp32 = uint32_t) with integer arithmetic only, so results
// do not depend on the host FPU or its modes. The RTL (rtl/mxu/bf16_mul.sv,
// rtl/mxu/fp32_add.sv) matches bf16_mul and fp32_add bit for bit (fp32_mul,
// fp32_max and fp32_min have no RTL yet). docs/numerics.md
// states the rules; in short:
//
//   - subnormal inputs are read as zero of the same sign;
//   - a result whose exact value is nonzero and smaller in magnitude than
//     2^-126 is flushed to zero of the result's sign. For bf16_mul and
//     fp32_add such results are always exact (no rounding is involved), so
//     "before rounding" and "after rounding" give the same answer; for
//     fp32_mul it is the exact product that decides (tininess before
//     rounding), so a product just below 2^-126 is zero even where rounding
//     would have reached 2^-126;
//   - results too large for the format are infinities of the result's sign;
//   - any NaN result is the canonical quiet NaN (fp32 0x7FC00000,
//     bf16 0x7FC0), whatever the input NaNs were;
//   - rounding (fp32_add, fp32_to_bf16) is to nearest, ties to even.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tpu {

using bf16 = uint16_t;  // raw bits: sign, 8 exponent bits, 7 fraction bits
using fp32 = uint32_t;  // raw bits of an IEEE binary32

inline constexpr fp32 kFp32CanonicalNan = 0x7FC00000u;
inline constexpr bf16 kBf16CanonicalNan = 0x7FC0u;
inline constexpr fp32 kFp32PosInf = 0x7F800000u;
inline constexpr bf16 kBf16PosInf = 0x7F80u;

// a * b. The product of two 8-bit significands has at most 16 bits, so every
// result in the normal range is exact. Specials: NaN in -> canonical NaN;
// inf * 0 -> canonical NaN; inf * nonzero -> inf; overflow -> inf; tiny ->
// zero; the sign of every non-NaN result is sign(a) xor sign(b).
fp32 bf16_mul(bf16 a, bf16 b);

// a + b, rounded to nearest even. Specials: NaN in -> canonical NaN;
// inf + -inf -> canonical NaN; inf + x -> inf; overflow after rounding ->
// inf; x + -x -> +0; (+0) + (-0) -> +0; (-0) + (-0) -> -0; a nonzero exact
// sum below 2^-126 in magnitude -> zero with the sign of the sum.
// Commutative: fp32_add(a, b) == fp32_add(b, a) for all a, b.
fp32 fp32_add(fp32 a, fp32 b);

// a * b, rounded to nearest even from the exact 48-bit product of the
// significands. Specials: NaN in -> canonical NaN; inf * 0 -> canonical NaN;
// inf * nonzero -> inf; 0 * finite -> zero; overflow after rounding -> inf;
// an exact product below 2^-126 in magnitude -> zero (before rounding, see
// above); the sign of every non-NaN result is sign(a) xor sign(b).
// Commutative.
fp32 fp32_mul(fp32 a, fp32 b);

// The larger and the smaller of a and b. Subnormal inputs read as zero of
// their sign; -0 is below +0; a NaN input gives the canonical NaN (NaN
// propagates, as IEEE 754-2019 maximum and minimum). Otherwise the result is
// one of the (flushed) inputs, bit for bit. Commutative.
fp32 fp32_max(fp32 a, fp32 b);
fp32 fp32_min(fp32 a, fp32 b);

// fp32 -> bf16, rounded to nearest even on the 16 dropped bits. NaN ->
// canonical bf16 NaN; subnormal input -> zero of its sign (before rounding,
// so 0x007FFFFF gives 0x0000, not the smallest normal); finite values that
// round past the largest bf16 -> inf.
bf16 fp32_to_bf16(fp32 x);

// One MXU column (weight-stationary array, docs/mxu.md): the partial sum
// enters the top PE as psum_in (+0 in the array) and each PE i, top to
// bottom, computes psum = fp32_add(psum, bf16_mul(a[i], w[i])). The top PE
// therefore adds its product to +0, which turns a -0 product into +0.
// The accumulator then adds the column's result: acc = fp32_add(acc, col).
fp32 bf16_dot_column(const bf16* a, const bf16* w, size_t n, fp32 psum_in = 0);

// ---- host conveniences ----

inline fp32 float_bits(float f) {
  fp32 u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(fp32 u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// A bf16 is the top half of an fp32: widening is exact (bits kept, so a
// subnormal bf16 stays subnormal here; the MXU reads it as zero).
inline fp32 bf16_to_fp32(bf16 x) { return fp32{x} << 16; }
inline float bf16_to_float(bf16 x) { return bits_float(bf16_to_fp32(x)); }

// Same rule as fp32_to_bf16.
inline bf16 float_to_bf16(float f) { return fp32_to_bf16(float_bits(f)); }

// Classification on raw bits.
inline bool fp32_is_nan(fp32 x) { return (x & 0x7FFFFFFFu) > kFp32PosInf; }
inline bool fp32_is_inf(fp32 x) { return (x & 0x7FFFFFFFu) == kFp32PosInf; }
inline bool fp32_is_subnormal(fp32 x) { return (x & 0x7F800000u) == 0 && (x & 0x007FFFFFu) != 0; }
inline bool bf16_is_nan(bf16 x) { return (x & 0x7FFFu) > kBf16PosInf; }

// 2^e as fp32 bits, e in -126..127.
inline constexpr fp32 fp32_pow2(int e) { return fp32(e + 127) << 23; }

}  // namespace tpu
