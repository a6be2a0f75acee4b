// SPDX-License-Identifier: Apache-2.0
// matmul_i8 in ref_matmul.h, the yardstick of every int8 result: a product
// worked out by hand, int32 wrap-around, and random shapes against the
// definition (each element a 64-bit dot product of a row and a column,
// wrapped to 32 bits) written here as plain loops.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "tpu/ref_matmul.h"

namespace {

using tpu::MatrixI32;
using tpu::MatrixI8;

MatrixI32 by_definition(const MatrixI8& a, const MatrixI8& b) {
  MatrixI32 c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < b.cols; ++j) {
      int64_t dot = 0;
      for (int k = 0; k < a.cols; ++k) dot += int64_t{a.at(i, k)} * int64_t{b.at(k, j)};
      c.at(i, j) = int32_t(uint32_t(uint64_t(dot)));
    }
  return c;
}

TEST(RefMatmul, SmallProductWorkedOutByHand) {
  MatrixI8 a(2, 3), b(3, 2);
  a.data = {1, -2, 3, 127, -128, 0};
  b.data = {4, -5, 6, 7, -8, 9};
  const MatrixI32 c = tpu::ref::matmul_i8(a, b);
  // Row 0: 1*4 - 2*6 + 3*(-8) = -32;  1*(-5) - 2*7 + 3*9 = 8.
  // Row 1: 127*4 - 128*6 = -260;      127*(-5) - 128*7 = -1531.
  EXPECT_EQ(c.data, (std::vector<int32_t>{-32, 8, -260, -1531}));
}

TEST(RefMatmul, WrapsLikeAnInt32Accumulator) {
  // 131,073 products of (-128)(-128) = 16,384 each: 2,147,500,032, which is
  // 16,385 past INT32_MAX, so the int32 sum wraps to it minus 2^32.
  const int k = 131073;
  MatrixI8 a(1, k, -128), b(k, 2, -128);
  for (int r = 0; r < k; ++r) b.at(r, 1) = 127;  // -128 * 127 * k: no wrap
  const MatrixI32 c = tpu::ref::matmul_i8(a, b);
  EXPECT_EQ(c.at(0, 0), int32_t(int64_t{2147500032} - (int64_t{1} << 32)));
  EXPECT_EQ(c.at(0, 1), -128 * 127 * k);
}

TEST(RefMatmul, RandomShapesMatchTheDefinition) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> v(-128, 127), dim(1, 70);
  for (int trial = 0; trial < 40; ++trial) {
    const int m = dim(rng), k = dim(rng), n = dim(rng);
    MatrixI8 a(m, k), b(k, n);
    for (auto& x : a.data) x = int8_t(v(rng));
    for (auto& x : b.data) x = int8_t(trial % 4 == 0 ? (v(rng) < 0 ? -128 : 127) : v(rng));
    EXPECT_EQ(tpu::ref::matmul_i8(a, b), by_definition(a, b)) << m << "x" << k << "x" << n;
  }
}

}  // namespace
