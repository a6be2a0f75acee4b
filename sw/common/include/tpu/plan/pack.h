// SPDX-License-Identifier: Apache-2.0
// The host images of a GEMM plan (tpu/plan/gemm.h, "Host images"): A and W
// packed for the device, C unpacked from it. A transposed plan swaps which
// operand is L and which R; these functions hide it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tpu/matrix.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

std::vector<int8_t> pack_a(const GemmPlan& plan, const MatrixI8& a);
std::vector<int8_t> pack_w(const GemmPlan& plan, const MatrixI8& w);
MatrixI32 unpack_c_i32(const GemmPlan& plan, std::span<const uint8_t> c);
MatrixI8 unpack_c_i8(const GemmPlan& plan, std::span<const uint8_t> c);
// bf16 plans: the images as little-endian bytes, and the results' bits.
std::vector<uint8_t> pack_a_bf16(const GemmPlan& plan, const MatrixBf16& a);
std::vector<uint8_t> pack_w_bf16(const GemmPlan& plan, const MatrixBf16& w);
MatrixF32Bits unpack_c_f32(const GemmPlan& plan, std::span<const uint8_t> c);
MatrixBf16 unpack_c_bf16(const GemmPlan& plan, std::span<const uint8_t> c);

}  // namespace tpu::plan
