// SPDX-License-Identifier: Apache-2.0
// Training arithmetic of the VPU's fp32 lanes: the exact primitives the
// micro-sequences are written in, the elementary functions built from them
// (reciprocal, square root and its reciprocal, exp, log), and the lane
// functions of the training instructions (ReLU derivative mask, SGD,
// momentum, Adam, softmax cross-entropy). Everything is raw bits (tpu/bf16.h:
// fp32 = uint32_t) and integer arithmetic, on top of fp32_add, fp32_mul and
// fp32_to_bf16, with the same rules: subnormal inputs read as zero, tiny
// results flushed to zero, one canonical NaN, round to nearest even.
//
// docs/numerics.md, "Training arithmetic", defines every function as the
// fixed sequence of operations written here, with its constants and its
// measured error bound; scripts/tpu_fp32.py is the numpy twin, checked bit
// for bit against these functions by common.train_f32_numpy.
#pragma once

#include <cstdint>

#include "tpu/bf16.h"

namespace tpu {

// ---- Exact primitives ----

// -x: the sign bit flipped. A subnormal input is a zero (rule 1), so it
// gives the zero of the opposite sign; NaN gives the canonical NaN.
fp32 fp32_neg(fp32 x);

// a - b = fp32_add(a, fp32_neg(b)): so 1 - 1 = +0 and (-0) - (+0) = -0.
fp32 fp32_sub(fp32 a, fp32 b);

// a > b and a == b on the flushed values: NaN compares false, -0 == +0.
bool fp32_gt(fp32 a, fp32 b);
bool fp32_eq(fp32 a, fp32 b);

// x rounded to the nearest integer, ties to even, as int32. NaN and zeros
// give 0; |x| >= 2^31 saturates to INT32_MIN or INT32_MAX.
int32_t fp32_rint(fp32 x);

// k as fp32, rounded to nearest even (exact for |k| <= 2^24).
fp32 fp32_from_int(int32_t k);

// x * 2^k, exact: a result of 2^128 or more is inf with x's sign, one below
// 2^-126 is zero with x's sign; NaN gives the canonical NaN, infinities and
// zeros (subnormals: zeros) pass through.
fp32 fp32_ldexp(fp32 x, int k);

// For a normal x = (-1)^s * 1.f * 2^e: fp32_exponent(x) = e and
// fp32_significand(x) = (-1)^s * 1.f (in [1, 2) for x > 0). Other inputs:
// the exponent is 0 and the significand is the input (subnormals flushed,
// NaN canonical); callers deal with those first.
int fp32_exponent(fp32 x);
fp32 fp32_significand(fp32 x);

// ---- Elementary functions (docs/numerics.md states each one's sequence,
//      special cases and error bound) ----

fp32 fp32_recip(fp32 x);  // 1/x
fp32 fp32_rsqrt(fp32 x);  // 1/sqrt(x)
fp32 fp32_sqrt(fp32 x);
fp32 fp32_exp(fp32 x);  // e^x
fp32 fp32_log(fp32 x);  // natural logarithm

// The constants of the sequences, as fp32 bits (docs/numerics.md gives
// their decimal values and where each comes from).
namespace train_const {
inline constexpr fp32 kOne = 0x3F800000u;
inline constexpr fp32 kTwo = 0x40000000u;
inline constexpr fp32 kHalf = 0x3F000000u;
// recip: the seed 24/17 - 8/17 m, the straight line with the smallest
// largest relative error (1/17) against 1/m on [1, 2].
inline constexpr fp32 kRecipSeedC = 0x3FB4B4B5u;  // 24/17
inline constexpr fp32 kRecipSeedM = 0x3EF0F0F1u;  // 8/17
inline constexpr int kRecipSteps = 3;
// rsqrt: the seed from_bits(kRsqrtMagic - (bits(m) >> 1)) on m in [1, 4).
inline constexpr uint32_t kRsqrtMagic = 0x5F37642Fu;
inline constexpr int kRsqrtSteps = 3;
// exp
inline constexpr fp32 kExpHi = 0x42B20000u;   // 89: above, +inf
inline constexpr fp32 kExpLo = 0xC2B00000u;   // -88: below, +0
inline constexpr fp32 kInvLn2 = 0x3FB8AA3Bu;  // 1/ln 2
inline constexpr fp32 kLn2Hi = 0x3F317200u;   // ln 2 to 16 bits: k * kLn2Hi exact for |k| < 512
inline constexpr fp32 kLn2Lo = 0x35BFBE8Eu;   // ln 2 - kLn2Hi
inline constexpr fp32 kExpC[8] = {0x3F800000u, 0x3F800000u, 0x3F000000u, 0x3E2AAAABu,  // 1/j!
                                  0x3D2AAAABu, 0x3C088889u, 0x3AB60B61u, 0x39500D01u};
// log
inline constexpr fp32 kSqrt2 = 0x3FB504F3u;
inline constexpr fp32 kLogC[4] = {0x3F2AAAABu, 0x3ECCCCCDu, 0x3E924925u, 0x3E638E39u};  // 2/3, 2/5, 2/7, 2/9
}  // namespace train_const

// ---- Lane functions of the training instructions ----

namespace train {

// ReLU derivative (ACT F32 MASK): y where the lane's bf16 forward
// activation a is above +0, else +0. y is the lane's ACT F32 result
// (vpu_f32::act_lane), rounded to bf16 by the ACT afterwards as usual.
fp32 mask_lane(fp32 y, bf16 a);

// An updated fp32 master weight and its bf16 copy.
struct Weight {
  fp32 w;
  bf16 w_bf16;  // fp32_to_bf16(w)
};

// SGD: w' = w - lr * g.
Weight sgd_lane(fp32 w, fp32 g, fp32 lr);

// Momentum (v <- mom * v + g; w <- w - lr * v).
struct MomentumLane {
  Weight w;
  fp32 v;
};
MomentumLane momentum_lane(fp32 w, fp32 v, fp32 g, fp32 lr, fp32 mom);

// Adam's hyperparameters (Keras' defaults): c1 and c2 are 1 - beta1 and
// 1 - beta2 rounded to fp32 from the exact (decimal) betas, as Keras has them.
struct AdamParams {
  fp32 beta1 = 0x3F666666u;  // 0.9
  fp32 beta2 = 0x3F7FBE77u;  // 0.999
  fp32 c1 = 0x3DCCCCCDu;     // 0.1
  fp32 c2 = 0x3A83126Fu;     // 0.001
  fp32 eps = 0x33D6BF95u;    // 1e-7
};

// Adam's per-step scalars: the powers beta^t by repeated multiplication
// (b1p = b2p = 1.0 before the first step) and the step size
// alpha = lr * sqrt(1 - b2p) / (1 - b1p).
struct AdamStep {
  fp32 b1p, b2p, alpha;
};
AdamStep adam_step(fp32 b1p, fp32 b2p, fp32 lr, const AdamParams& p = {});

// Adam's per-weight update with the step's alpha.
struct AdamLane {
  Weight w;
  fp32 m, v;
};
AdamLane adam_lane(fp32 w, fp32 m, fp32 v, fp32 g, fp32 alpha, const AdamParams& p = {});

// Softmax cross-entropy of one sample (one lane): logits z[0..c-1] in class
// order, label y (valid when 0 <= y < c), inv_b = fp32(1/B). grad gets c
// bf16 gradients ((softmax - onehot) / B); an invalid label gives +0
// gradients, loss and correct.
struct SoftmaxCe {
  fp32 loss;
  fp32 correct;  // 1.0 when the first maximum is at the label, else +0
};
SoftmaxCe softmax_ce_lane(const fp32* z, int c, int32_t y, fp32 inv_b, bf16* grad);

// The instruction's running sums per lane: L += loss, K += correct.
inline void ce_accumulate(fp32& l, fp32& k, const SoftmaxCe& r) {
  l = fp32_add(l, r.loss);
  k = fp32_add(k, r.correct);
}

}  // namespace train
}  // namespace tpu
