// SPDX-License-Identifier: Apache-2.0
// A row-major dense matrix: what the driver's operators take and return,
// what the planners pack into host images and the reference matmuls
// (tpu/ref_matmul.h) compute.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/bf16.h"

namespace tpu {

template <class T>
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<T> data;

  Matrix() = default;
  Matrix(int r, int c, T fill = T{}) : rows(r), cols(c), data(size_t(r) * c, fill) {}
  T& at(int r, int c) { return data[size_t(r) * cols + c]; }
  const T& at(int r, int c) const { return data[size_t(r) * cols + c]; }
  bool operator==(const Matrix& o) const { return rows == o.rows && cols == o.cols && data == o.data; }
};

using MatrixI8 = Matrix<int8_t>;
using MatrixI32 = Matrix<int32_t>;
using MatrixBf16 = Matrix<bf16>;     // bf16 bits (tpu/bf16.h)
using MatrixF32Bits = Matrix<fp32>;  // fp32 bits

}  // namespace tpu
