// SPDX-License-Identifier: Apache-2.0
#include "tpu/plan/pack.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "schedule.h"

namespace tpu::plan {

namespace {

// L packed by pass (tpu/plan/gemm.h) from l(r, c), dm x K, in elements of T.
template <typename T = int8_t, typename At>
std::vector<T> pack_l(const GemmPlan& p, At l) {
  const int n = p.n, kp = p.k_blocks * n, k = p.shape.k;
  std::vector<T> out(size_t(p.dm) * kp, 0);
  for (int pass = 0; pass < p.passes; ++pass) {
    const int m0 = p.pass_begin(pass), r = p.rows_of_pass(pass);
    for (int kb = 0; kb < p.k_blocks; ++kb)
      for (int i = 0; i < r; ++i) {
        T* dst = out.data() + size_t(m0) * kp + (size_t(kb) * r + i) * n;
        const int c0 = kb * n, c1 = std::min(c0 + n, k);
        for (int c = c0; c < c1; ++c) dst[c - c0] = l(m0 + i, c);
      }
  }
  return out;
}

// R tiles in one pass's order (tpu/plan/gemm.h) from r(k, c), K x dn, in
// elements of T.
template <typename T = int8_t, typename At>
std::vector<T> pack_r(const GemmPlan& p, At r) {
  const int n = p.n, k = p.shape.k;
  std::vector<T> out(size_t(p.col_tiles) * p.k_blocks * n * n, 0);
  size_t t = 0;
  for (int g = 0; g < p.groups; ++g)
    for (const auto& [jg, kb] : group_order(p, g)) {
      const int j = p.group_begin(g) + jg;
      T* tile = out.data() + t++ * n * n;
      for (int row = 0; row < n && kb * n + row < k; ++row)
        for (int c = 0; c < n && j * n + c < p.dn; ++c) tile[row * n + c] = r(kb * n + row, j * n + c);
    }
  return out;
}

// Byte offset of D(r, c) in the packed result (tpu/plan/gemm.h).
size_t d_offset(const GemmPlan& p, int r, int c, size_t lane_bytes) {
  const int pass = r / p.pass_rows, m0 = p.pass_begin(pass), j = c / p.n;
  return size_t(m0) * p.d_row_bytes() + (size_t(j) * p.rows_of_pass(pass)) * size_t(p.out_row_bytes()) +
         size_t(r - m0) * size_t(p.tile_row_bytes(j)) + size_t(c % p.n) * lane_bytes;
}

}  // namespace

std::vector<int8_t> pack_a(const GemmPlan& p, const MatrixI8& a) {
  if (a.rows != p.shape.m || a.cols != p.shape.k)
    throw std::invalid_argument("pack_a: A's shape differs from the plan");
  if (p.transposed) return pack_r(p, [&](int k, int c) { return a.at(c, k); });
  return pack_l(p, [&](int r, int c) { return a.at(r, c); });
}

std::vector<int8_t> pack_w(const GemmPlan& p, const MatrixI8& w) {
  if (w.rows != p.shape.k || w.cols != p.shape.n_out)
    throw std::invalid_argument("pack_w: W's shape differs from the plan");
  if (p.transposed) return pack_l(p, [&](int r, int c) { return w.at(c, r); });
  return pack_r(p, [&](int k, int c) { return w.at(k, c); });
}

namespace {

std::vector<uint8_t> le_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    out[2 * i] = uint8_t(v[i]);
    out[2 * i + 1] = uint8_t(v[i] >> 8);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> pack_a_bf16(const GemmPlan& p, const MatrixBf16& a) {
  if (!p.bf16()) throw std::invalid_argument("pack_a_bf16: not a bf16 plan");
  if (a.rows != p.shape.m || a.cols != p.shape.k)
    throw std::invalid_argument("pack_a_bf16: A's shape differs from the plan");
  if (p.transposed) return le_bytes(pack_r<uint16_t>(p, [&](int k, int c) { return a.at(c, k); }));
  return le_bytes(pack_l<uint16_t>(p, [&](int r, int c) { return a.at(r, c); }));
}

std::vector<uint8_t> pack_w_bf16(const GemmPlan& p, const MatrixBf16& w) {
  if (!p.bf16()) throw std::invalid_argument("pack_w_bf16: not a bf16 plan");
  if (w.rows != p.shape.k || w.cols != p.shape.n_out)
    throw std::invalid_argument("pack_w_bf16: W's shape differs from the plan");
  if (p.transposed) return le_bytes(pack_l<uint16_t>(p, [&](int r, int c) { return w.at(c, r); }));
  return le_bytes(pack_r<uint16_t>(p, [&](int k, int c) { return w.at(k, c); }));
}

namespace {

// The result's elements, T of sizeof(T) little-endian bytes each, when the
// plan's output is `output`; else throws `error`.
template <class T>
Matrix<T> unpack_c(const GemmPlan& p, std::span<const uint8_t> c, GemmOutput output, const char* error) {
  if (p.output != output || c.size() < p.c_bytes()) throw std::invalid_argument(error);
  constexpr size_t bytes = sizeof(T);
  Matrix<T> out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j) {
      const uint8_t* b = c.data() + (p.transposed ? d_offset(p, j, i, bytes) : d_offset(p, i, j, bytes));
      uint64_t v = 0;
      for (size_t k = 0; k < bytes; ++k) v |= uint64_t(b[k]) << (8 * k);
      out.at(i, j) = T(v);  // modulo 2^(8 bytes) for the signed types
    }
  return out;
}

}  // namespace

MatrixF32Bits unpack_c_f32(const GemmPlan& p, std::span<const uint8_t> c) {
  return unpack_c<fp32>(p, c, GemmOutput::kF32, "unpack_c_f32: not an fp32 result of this plan");
}

MatrixBf16 unpack_c_bf16(const GemmPlan& p, std::span<const uint8_t> c) {
  return unpack_c<bf16>(p, c, GemmOutput::kBf16, "unpack_c_bf16: not a bf16 result of this plan");
}

MatrixI32 unpack_c_i32(const GemmPlan& p, std::span<const uint8_t> c) {
  return unpack_c<int32_t>(p, c, GemmOutput::kInt32, "unpack_c_i32: not an int32 result of this plan");
}

MatrixI8 unpack_c_i8(const GemmPlan& p, std::span<const uint8_t> c) {
  return unpack_c<int8_t>(p, c, GemmOutput::kInt8, "unpack_c_i8: not an int8 result of this plan");
}

}  // namespace tpu::plan
