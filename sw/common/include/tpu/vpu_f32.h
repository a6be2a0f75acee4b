// SPDX-License-Identifier: Apache-2.0
// The VPU's fp32 path in the bf16 mode (ACT F32, VOP BF16), lane by lane,
// built on the raw-bit operations of tpu/bf16.h. quant.h is the int8 path's
// counterpart. The reference model calls these functions; the RTL must match
// them bit for bit (docs/numerics.md, "bf16 through the core").
#pragma once

#include <cstdint>

#include "tpu/bf16.h"
#include "tpu/quant.h"

namespace tpu::vpu_f32 {

// The CFG registers of ACT F32 (fp32 bits) with their reset values.
struct ActF32Params {
  fp32 scale = 0x3F800000u;      // SCALE: 1.0
  fp32 relu6_max = 0x40C00000u;  // RELU6_F32: 6.0
  fp32 fmin = 0xFF800000u;       // FMIN: -inf
  fp32 fmax = 0x7F800000u;       // FMAX: +inf
};

// One lane of ACT F32, before the output conversion: x is the accumulator's
// fp32 bits, bias the lane's BIAS register (fp32 bits), used when use_bias.
//   y  = use_bias ? fp32_add(x, bias) : x
//   y  = fp32_mul(y, scale)
//   lo = fmin, raised to +0 by ReLU and ReLU6 (lo = fp32_max(fmin, +0))
//   hi = fmax, lowered to relu6_max by ReLU6   (hi = fp32_min(fmax, relu6_max))
//   y  = fp32_min(fp32_max(y, lo), hi)
// as the int8 path's clamp: lo > hi gives hi, a NaN anywhere gives NaN.
// func must be kNone, kRelu or kRelu6 (LUT has no fp32 form: BAD_FLAGS).
inline fp32 act_lane(fp32 x, bool use_bias, fp32 bias, const ActF32Params& p, quant::Act func) {
  fp32 y = use_bias ? fp32_add(x, bias) : x;
  y = fp32_mul(y, p.scale);
  fp32 lo = p.fmin, hi = p.fmax;
  if (func == quant::Act::kRelu || func == quant::Act::kRelu6) lo = fp32_max(lo, 0);
  if (func == quant::Act::kRelu6) hi = fp32_min(hi, p.relu6_max);
  return fp32_min(fp32_max(y, lo), hi);
}

// VOP BF16 lanes: operands widened to fp32 (exact), the operation in fp32,
// the result rounded to bf16 (fp32_to_bf16, nearest even).
inline bf16 vop_add(bf16 a, bf16 b) { return fp32_to_bf16(fp32_add(bf16_to_fp32(a), bf16_to_fp32(b))); }
// The product of two bf16 values is exact in fp32: one rounding, to bf16.
inline bf16 vop_mul(bf16 a, bf16 b) { return fp32_to_bf16(fp32_mul(bf16_to_fp32(a), bf16_to_fp32(b))); }
inline bf16 vop_max(bf16 a, bf16 b) { return fp32_to_bf16(fp32_max(bf16_to_fp32(a), bf16_to_fp32(b))); }
inline bf16 vop_min(bf16 a, bf16 b) { return fp32_to_bf16(fp32_min(bf16_to_fp32(a), bf16_to_fp32(b))); }

// POOLMAX and POOLAVG over the k = 2^log2k values v[0], v[stride], ...:
// the maximum folded in row order from v[0]; the sum likewise
// (s = v[0], then s = fp32_add(s, v[r]) for r = 1 .. k-1), times 2^-log2k
// (fp32_mul: exact unless the result is below 2^-126, then zero), rounded
// to bf16.
inline bf16 pool_max(const bf16* v, int log2k, int stride) {
  fp32 m = bf16_to_fp32(v[0]);
  for (int r = 1; r < (1 << log2k); ++r) m = fp32_max(m, bf16_to_fp32(v[r * stride]));
  return fp32_to_bf16(m);
}
inline bf16 pool_avg(const bf16* v, int log2k, int stride) {
  fp32 s = bf16_to_fp32(v[0]);
  for (int r = 1; r < (1 << log2k); ++r) s = fp32_add(s, bf16_to_fp32(v[r * stride]));
  return fp32_to_bf16(fp32_mul(s, fp32_pow2(-log2k)));
}

}  // namespace tpu::vpu_f32
