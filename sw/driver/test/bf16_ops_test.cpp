// SPDX-License-Identifier: Apache-2.0
// bf16 GEMMs through the driver (tpu::matmul_bf16, matmul_bf16_to_bf16) on
// the transport under test, on tiny_bf16 (4x4, both datapaths): results bit
// for bit against bf16_gemm::reference (sim/model/test/bf16_gemm.h, the order
// of additions written from docs/numerics.md), special values, K from 1 to
// thousands, the error bound against a float32 matmul, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "bf16_gemm.h"
#include "tpu/bf16.h"
#include "tpu/device.h"
#include "tpu/ops.h"
#include "tpu/ref_matmul.h"
#include "transport_under_test.h"

namespace {

using tpu::bf16;
using tpu::MatrixBf16;
using tpu::MatrixF32;
namespace gemm = tpu::model::bf16_gemm;

class Bf16OpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (tpu_test::transport() == "uart") return;  // no tiny_bf16 board simulation
    dev_ = std::make_unique<tpu::Device>(tpu::Device::open(tpu_test::uri("tiny_bf16")));
  }
  static void TearDownTestSuite() { dev_.reset(); }
  void SetUp() override {
    if (!dev_) GTEST_SKIP() << "no tiny_bf16 device on the " << tpu_test::transport() << " transport";
    const char* env = std::getenv("TPU_SEED");
    seed_ = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    RecordProperty("seed", std::to_string(seed_));
    rng_.seed(seed_);
  }

  bf16 normal() { return tpu::float_to_bf16(std::normal_distribution<float>()(rng_)); }
  MatrixBf16 random(int rows, int cols) {
    MatrixBf16 m(rows, cols);
    for (bf16& v : m.data) v = normal();
    return m;
  }
  // One in `every` from the special classes: zeros, subnormals, the smallest
  // normals, max finite, infinities, NaNs, large values whose products overflow.
  MatrixBf16 random_special(int rows, int cols, int every) {
    static constexpr bf16 kSpecial[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x3F80,
                                        0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81,
                                        0xFFFF, 0x0100, 0x2000, 0x5F00, 0x6000, 0xE000};
    MatrixBf16 m(rows, cols);
    for (bf16& v : m.data) v = rng_() % uint64_t(every) == 0 ? kSpecial[rng_() % std::size(kSpecial)] : normal();
    return m;
  }

  static std::vector<uint32_t> bits(const MatrixF32& c) {
    std::vector<uint32_t> out;
    for (float f : c.data) out.push_back(tpu::float_bits(f));
    return out;
  }
  // fp32 results (and, where the transport has ACT F32, bf16 ones) bit for
  // bit against the reference; returns the statistics of the fp32 GEMM.
  tpu::OpStats check(const MatrixBf16& a, const MatrixBf16& b, tpu::Device* dev = nullptr) {
    if (!dev) dev = dev_.get();
    const gemm::MatrixF32 want = gemm::reference(a, b, dev->info().n);
    tpu::OpStats stats;
    const MatrixF32 c = tpu::matmul_bf16(*dev, a, b, &stats);
    EXPECT_EQ(c.rows, a.rows);
    EXPECT_EQ(c.cols, b.cols);
    EXPECT_EQ(bits(c), want.data) << "fp32 results, seed " << seed_;
    EXPECT_EQ(stats.macs, uint64_t(a.rows) * a.cols * b.cols);
    EXPECT_GE(stats.commands, 1u);
    std::vector<bf16> rounded;
    for (uint32_t v : want.data) rounded.push_back(tpu::fp32_to_bf16(v));
    EXPECT_EQ(tpu::matmul_bf16_to_bf16(*dev, a, b).data, rounded) << "bf16 results, seed " << seed_;
    return stats;
  }

  static inline std::unique_ptr<tpu::Device> dev_;
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(Bf16OpsTest, ShapesNotMultiplesOfNAreExact) {
  struct Shape {
    int m, k, n;
  };
  for (const Shape& s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 13, 9}, Shape{6, 4, 4}, Shape{33, 50, 21},
                         Shape{70, 9, 3}, Shape{2, 30, 61}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n));
    check(random(s.m, s.k), random(s.k, s.n));
  }
}

TEST_F(Bf16OpsTest, RandomShapes) {
  for (int t = 0; t < 8; ++t) {
    const int m = int(rng_() % 40) + 1, k = int(rng_() % 60) + 1, n = int(rng_() % 30) + 1;
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    check(random(m, k), random(k, n));
  }
}

TEST_F(Bf16OpsTest, ManyPassesAndPrograms) {
  // 70 rows of A, each 2 x 50 UB rows wide, do not fit tiny's 256 UB rows:
  // passes or chunks of K, and more programs than one IMEM holds.
  const tpu::OpStats s = check(random(70, 200), random(200, 30));
  EXPECT_GT(s.commands, 1u);
}

TEST_F(Bf16OpsTest, DefaultBf16OnTheModel) {
  if (tpu_test::transport() != "model") GTEST_SKIP() << "default_bf16 is built on request only (make CONFIGS=...)";
  tpu::Device dev = tpu::Device::open(tpu_test::uri("default_bf16"));
  ASSERT_EQ(dev.info().n, 16);
  check(random(33, 50), random(50, 21), &dev);
  check(random(100, 300), random(300, 70), &dev);
}

TEST_F(Bf16OpsTest, KFromOneToThousands) {
  for (int k : {1, 2, 3, 4, 5, 64, 1000, 3001}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    check(random(3, k), random(k, 5));
  }
}

TEST_F(Bf16OpsTest, SpecialValuesFollowTheRules) {
  for (int t = 0; t < 3; ++t) check(random_special(9, 11, 3), random_special(11, 6, 5));
  // By hand (n = 4, K = 2): each row of A against W = [[2, 1], [2, -1]].
  const bf16 max = 0x7F7F, nan = 0x7FC0, inf = 0x7F80, sub = 0x0001, one = 0x3F80, mone = 0xBF80;
  MatrixBf16 a(6, 2, 0), w(2, 2, 0);
  const bf16 rows[6][2] = {{max, max},          // 2max overflows: inf; max - max = +0
                           {0x4060, 0x4060},    // 3.5: 14, 3.5 - 3.5 = +0 (cancellation)
                           {nan, one},          // NaN everywhere
                           {inf, mone},         // inf * 2 + -2: inf; inf + 1: inf
                           {sub, sub},          // subnormals read as zero: +0, +0
                           {0x8000, 0x8000}};   // -0 products: +0 from the column's +0
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 2; ++k) a.at(i, k) = rows[i][k];
  w.at(0, 0) = 0x4000, w.at(1, 0) = 0x4000, w.at(0, 1) = one, w.at(1, 1) = mone;
  const MatrixF32 c = tpu::matmul_bf16(*dev_, a, w);
  const uint32_t want[6][2] = {{0x7F800000u, 0},      {0x41600000u, 0}, {0x7FC00000u, 0x7FC00000u},
                               {0x7F800000u, 0x7F800000u}, {0, 0},      {0, 0}};
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(tpu::float_bits(c.at(i, j)), want[i][j]) << "row " << i << " column " << j;
  EXPECT_EQ(bits(c), gemm::reference(a, w, dev_->info().n).data);
}

// Against a float32 matmul on the host: the bound of docs/numerics.md,
//   |C_tpu - C_f32| <= K 2^-23 (1 + e) S + (2K - 1) 2^-126 (1 + e),
//   S = |A| |B|, 1 + e = 1 / (1 - (K - 1) 2^-24).
TEST_F(Bf16OpsTest, WithinTheErrorBoundOfAFloat32Matmul) {
  const int m = 12, k = 700, n = 10;
  const MatrixBf16 a = random(m, k), b = random(k, n);
  const MatrixF32 c = tpu::matmul_bf16(*dev_, a, b);
  const double eps = 1.0 / (1.0 - (k - 1) * std::ldexp(1.0, -24)) - 1.0;
  double worst = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float ref = 0;
      double s = 0;
      for (int r = 0; r < k; ++r) {
        const float x = tpu::bf16_to_float(a.at(i, r)), y = tpu::bf16_to_float(b.at(r, j));
        ref += x * y;
        s += std::fabs(double(x) * double(y));
      }
      const double err = std::fabs(double(c.at(i, j)) - double(ref));
      const double bound = k * std::ldexp(1.0, -23) * (1 + eps) * s + (2 * k - 1) * std::ldexp(1.0, -126) * (1 + eps);
      ASSERT_TRUE(std::isfinite(c.at(i, j)));
      EXPECT_LE(err, bound) << "C[" << i << "][" << j << "] seed " << seed_;
      worst = std::max(worst, err / s / std::ldexp(1.0, -23));
    }
  RecordProperty("worst_in_2^-23_of_S", std::to_string(worst));
}

TEST_F(Bf16OpsTest, DenseBf16AddsTheBiasAndActivatesInFp32) {
  const int m = 7, k = 9, n = 6;
  const MatrixBf16 x = random(m, k), w = random(k, n);
  std::vector<float> bias = {0.5f, -1.25f, NAN, -0.0f, 1e-40f, 3.0f};
  const gemm::MatrixF32 sums = gemm::reference(x, w, dev_->info().n);
  for (const tpu::Activation act : {tpu::Activation::kNone, tpu::Activation::kRelu, tpu::Activation::kRelu6}) {
    SCOPED_TRACE("activation " + std::to_string(int(act)));
    const MatrixF32 y = tpu::dense_bf16(*dev_, x, w, bias, act);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        // docs/isa.md, ACT F32: bias, SCALE 1, the ReLU/ReLU6 clamp.
        tpu::fp32 v = tpu::fp32_add(sums.at(i, j), tpu::float_bits(bias[size_t(j)]));
        v = tpu::fp32_mul(v, tpu::float_bits(1.0f));
        tpu::fp32 lo = 0xFF800000u, hi = 0x7F800000u;
        if (act != tpu::Activation::kNone) lo = tpu::fp32_max(lo, 0);
        if (act == tpu::Activation::kRelu6) hi = tpu::fp32_min(hi, tpu::float_bits(6.0f));
        v = tpu::fp32_min(tpu::fp32_max(v, lo), hi);
        EXPECT_EQ(tpu::float_bits(y.at(i, j)), v) << "y[" << i << "][" << j << "] seed " << seed_;
      }
  }
  // Without a bias and activation: matmul_bf16's results.
  EXPECT_EQ(bits(tpu::dense_bf16(*dev_, x, w, {})), sums.data);
  EXPECT_THROW(tpu::dense_bf16(*dev_, x, w, {1.0f}), tpu::Error);
  EXPECT_THROW(tpu::dense_bf16(*dev_, x, w, {}, tpu::Activation::kLut), tpu::Error);
}

TEST_F(Bf16OpsTest, ErrorsAreClear) {
  try {
    tpu::matmul_bf16(*dev_, random(4, 5), random(6, 3));
    FAIL() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_STREQ(e.what(), "matmul_bf16: inner dimensions differ: A is 4x5 but B is 6x3 (A's columns must "
                           "equal B's rows)");
  }
  // An int8-only device.
  tpu::Device int8 = tpu::Device::open(tpu_test::uri("tiny"));
  ASSERT_FALSE(int8.info().bf16);
  try {
    tpu::matmul_bf16(int8, random(2, 2), random(2, 2));
    FAIL() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_bf16: the device has no bf16 datapath"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(tpu::matmul_bf16_to_bf16(int8, random(2, 2), random(2, 2)), tpu::Error);
  // The device still works.
  const MatrixBf16 x = random(3, 3);
  check(x, x);
}

TEST_F(Bf16OpsTest, Int8GemmsStillRunOnABothDevice) {
  ASSERT_TRUE(dev_->info().int8 && dev_->info().bf16);
  tpu::MatrixI8 a(13, 21), b(21, 6);
  for (auto& v : a.data) v = int8_t(rng_() % 256);
  for (auto& v : b.data) v = int8_t(rng_() % 256);
  EXPECT_EQ(tpu::matmul(*dev_, a, b), tpu::ref::matmul_i8(a, b));
  // bf16 after int8 on the same device: each GEMM brings its own tiles.
  check(random(5, 9), random(9, 7));
}

}  // namespace
