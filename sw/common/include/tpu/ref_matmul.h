// SPDX-License-Identifier: Apache-2.0
// Plain reference matrix multiplication: the yardstick every MXU and GEMM
// result is compared against, bit for bit, by the tests and by the driver's
// reference paths. Its own namespace (tpu::ref): it is neither the
// simulation's reference model of the core (tpu::model, sim/model) nor the
// planner, and the driver uses it without either.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tpu/bf16.h"
#include "tpu/matrix.h"

namespace tpu::ref {

// C = A * B with int8 operands and int32 accumulation, wrapping as a
// two's-complement int32 accumulator does (callers that must not wrap check
// the K bound). The sums are formed modulo 2^32 in unsigned arithmetic, where
// the order of the additions does not matter, so the loops run along rows of
// B and C (i, k, j) and the compiler vectorizes the inner one (under a third
// of the instructions of a walk down the columns; docs/experiments.md).
inline MatrixI32 matmul_i8(const MatrixI8& a, const MatrixI8& b) {
  std::vector<uint32_t> row(size_t(b.cols));
  MatrixI32 c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i) {
    std::fill(row.begin(), row.end(), 0u);
    for (int k = 0; k < a.cols; ++k) {
      const int32_t x = a.at(i, k);
      const int8_t* b_row = b.data.data() + size_t(k) * b.cols;
      for (int j = 0; j < b.cols; ++j) row[j] += static_cast<uint32_t>(x * b_row[j]);
    }
    for (int j = 0; j < b.cols; ++j) c.at(i, j) = static_cast<int32_t>(row[j]);
  }
  return c;
}

// C = A * B with bf16 operands and fp32 sums (bits), in the order of
// docs/numerics.md, "Order of additions", written out from the text and
// independent of the model: K is padded with zeros to a multiple of n; each
// block of n rows starts from +0 and adds its products top to bottom (the
// MXU column), and the block results go into the accumulator in order, the
// first one stored, the later ones added.
inline Matrix<uint32_t> matmul_bf16(const Matrix<bf16>& a, const Matrix<bf16>& b, int n) {
  const int k = a.cols, blocks = std::max(1, (k + n - 1) / n);
  Matrix<uint32_t> c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < b.cols; ++j) {
      fp32 acc = 0;
      for (int blk = 0; blk < blocks; ++blk) {
        fp32 column = 0;  // +0 enters the top PE
        for (int r = 0; r < n; ++r) {
          const int kk = blk * n + r;
          const bf16 x = kk < k ? a.at(i, kk) : bf16{0}, y = kk < k ? b.at(kk, j) : bf16{0};
          column = fp32_add(column, bf16_mul(x, y));
        }
        acc = blk == 0 ? column : fp32_add(acc, column);
      }
      c.at(i, j) = acc;
    }
  return c;
}

}  // namespace tpu::ref
