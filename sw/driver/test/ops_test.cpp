// SPDX-License-Identifier: Apache-2.0
// Operators on the transport under test against the CPU reference, bit for bit.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "tpu/device.h"
#include "tpu/ops.h"
#include "transport_under_test.h"

namespace {

using tpu::MatrixI32;
using tpu::MatrixI8;

class OpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* uri = std::getenv("TPU_DEVICE");
    default_ = std::make_unique<tpu::Device>(tpu::Device::open(uri ? uri : tpu_test::uri("default")));
    tiny_ = std::make_unique<tpu::Device>(tpu::Device::open(tpu_test::uri("tiny")));
  }
  static void TearDownTestSuite() {
    default_.reset();
    tiny_.reset();
  }
  void SetUp() override {
    const char* env = std::getenv("TPU_SEED");
    const uint64_t seed = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    RecordProperty("seed", std::to_string(seed));
    rng_.seed(seed);
  }

  MatrixI8 random(int rows, int cols) {
    MatrixI8 m(rows, cols);
    for (auto& v : m.data) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng_));
    return m;
  }
  int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  static inline std::unique_ptr<tpu::Device> default_, tiny_;
  std::mt19937_64 rng_;
};

TEST_F(OpsTest, MatmulShapesOnBothConfigs) {
  const std::array<std::array<int, 3>, 6> shapes{
      {{1, 1, 1}, {7, 13, 5}, {16, 16, 16}, {33, 17, 40}, {100, 300, 70}, {5, 64, 3}}};
  for (tpu::Device* dev : {default_.get(), tiny_.get()})
    for (const auto& [m, k, n] : shapes) {
      if (dev == tiny_.get() && m * k * n > 100000) continue;  // slow on 4x4; default covers it
      SCOPED_TRACE(dev->info().name + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                   std::to_string(n));
      const MatrixI8 a = random(m, k), b = random(k, n);
      tpu::OpStats stats;
      EXPECT_EQ(tpu::matmul(*dev, a, b, &stats), tpu::model::matmul_i8(a, b));
      EXPECT_GE(stats.commands, 1u);
      EXPECT_GT(stats.cycles, 0u);
      EXPECT_EQ(stats.macs, uint64_t(m) * k * n);
      EXPECT_GT(stats.utilization(), 0.0);
      EXPECT_LE(stats.utilization(), 1.0);
    }
}

TEST_F(OpsTest, MatmulManyPassesAndProgramsOnTiny) {
  // 4x4 array, 256 UB rows, 256-instruction IMEM: many passes and programs.
  const MatrixI8 a = random(70, 96), b = random(96, 37);
  tpu::OpStats stats;
  EXPECT_EQ(tpu::matmul(*tiny_, a, b, &stats), tpu::model::matmul_i8(a, b));
  EXPECT_GT(stats.commands, 1u);
}

TEST_F(OpsTest, ExtremeValuesKeepEveryBit) {
  for (int8_t av : {int8_t(-128), int8_t(127)}) {
    const MatrixI8 a(9, 200, av), b(200, 20, -128);
    EXPECT_EQ(tpu::matmul(*default_, a, b), tpu::model::matmul_i8(a, b));
  }
}

// Dense layers: bias, requantization and each activation against quant.h.
TEST_F(OpsTest, DenseMatchesReference) {
  for (auto act : {tpu::Activation::kNone, tpu::Activation::kRelu, tpu::Activation::kRelu6}) {
    const int m = rand_int(1, 40), k = rand_int(1, 90), n = rand_int(1, 50);
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    const MatrixI8 x = random(m, k), w = random(k, n);
    std::vector<int32_t> bias(static_cast<size_t>(n));
    for (auto& b : bias) b = rand_int(-100000, 100000);
    tpu::QuantParams q{.multiplier = rand_int(1 << 30, INT32_MAX), .shift = rand_int(4, 12),
                       .zero_point = rand_int(-20, 20), .qmin = -128, .qmax = 127, .relu6_max = 90};
    tpu::Mlp ref({tpu::DenseLayer{w, bias, q, act}});
    EXPECT_EQ(tpu::dense(*default_, x, w, bias, q, act), ref.run_reference(x));
    EXPECT_EQ(tpu::dense(*tiny_, x, w, bias, q, act), ref.run_reference(x));
  }
}

TEST_F(OpsTest, Conv2dByIm2colMatchesDirectConvolution) {
  tpu::TensorI8 in(2, 9, 7, 3);
  for (auto& v : in.data) v = int8_t(rand_int(-128, 127));
  const tpu::Conv2dParams p{.kh = 3, .kw = 3, .stride = 2, .pad = 1, .pad_value = -5};
  const int oc = 6;
  const MatrixI8 w = random(p.kh * p.kw * in.c, oc);
  std::vector<int32_t> bias(oc);
  for (auto& b : bias) b = rand_int(-3000, 3000);
  const tpu::QuantParams q{.multiplier = 1 << 30, .shift = 7};
  const tpu::TensorI8 out = tpu::conv2d(*default_, in, w, bias, p, q, tpu::Activation::kRelu);
  ASSERT_EQ(out.h, 5);
  ASSERT_EQ(out.w, 4);
  ASSERT_EQ(out.c, oc);
  // Direct convolution on the CPU.
  const std::array<int8_t, 256> no_lut{};
  for (int b = 0; b < in.n; ++b)
    for (int y = 0; y < out.h; ++y)
      for (int x = 0; x < out.w; ++x)
        for (int o = 0; o < oc; ++o) {
          int32_t acc = 0;
          for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx)
              for (int c = 0; c < in.c; ++c) {
                const int iy = y * p.stride + ky - p.pad, ix = x * p.stride + kx - p.pad;
                const bool inside = iy >= 0 && iy < in.h && ix >= 0 && ix < in.w;
                const int v = inside ? in.at(b, iy, ix, c) : p.pad_value;
                acc += v * w.at((ky * p.kw + kx) * in.c + c, o);
              }
          ASSERT_EQ(out.at(b, y, x, o),
                    tpu::quant::act_lane(acc, bias[size_t(o)], q, tpu::Activation::kRelu, no_lut.data()))
              << "at " << b << "," << y << "," << x << "," << o;
        }
}

TEST_F(OpsTest, MlpMatchesItsReference) {
  std::vector<tpu::DenseLayer> layers;
  const int sizes[] = {64, 40, 24, 10};
  for (int l = 0; l < 3; ++l) {
    tpu::DenseLayer d;
    d.w = random(sizes[l], sizes[l + 1]);
    for (int j = 0; j < sizes[l + 1]; ++j) d.bias.push_back(rand_int(-20000, 20000));
    d.q = {.multiplier = 1 << 30, .shift = 10};
    d.act = l < 2 ? tpu::Activation::kRelu : tpu::Activation::kNone;
    layers.push_back(std::move(d));
  }
  const tpu::Mlp mlp(std::move(layers));
  const MatrixI8 x = random(50, 64);
  tpu::OpStats stats;
  EXPECT_EQ(mlp.run(*default_, x, &stats), mlp.run_reference(x));
  EXPECT_EQ(stats.commands, 3u);
}

TEST_F(OpsTest, BadOperandsAreRejectedBeforeTheDevice) {
  const MatrixI8 a = random(4, 5), b = random(6, 3);
  try {
    tpu::matmul(*default_, a, b);
    FAIL() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_STREQ(e.what(), "matmul: inner dimensions differ: A is 4x5 but B is 6x3 (A's columns must "
                           "equal B's rows)");
  }
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {1, 2}, {}), tpu::Error);
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {}, {.shift = 32}), tpu::Error);
  EXPECT_THROW(tpu::Mlp({tpu::DenseLayer{random(4, 5), {}, {}}, tpu::DenseLayer{random(6, 2), {}, {}}}),
               tpu::Error);
  // K beyond the tiny configuration's unified buffer.
  EXPECT_THROW(tpu::matmul(*tiny_, random(2, 2000), random(2000, 2)), tpu::Error);
  // The device still works.
  const MatrixI8 c = random(3, 3);
  EXPECT_EQ(tpu::matmul(*default_, c, c), tpu::model::matmul_i8(c, c));
}

// For measurements: TPU_GEMM="M K N" ./driver_test --gtest_also_run_disabled_tests
// --gtest_filter='*Measure*'. make bench runs the real sweep.
TEST_F(OpsTest, DISABLED_MeasureGemm) {
  int m = 512, k = 512, n = 512;
  if (const char* env = std::getenv("TPU_GEMM")) std::sscanf(env, "%d %d %d", &m, &k, &n);
  const MatrixI8 a = random(m, k), b = random(k, n);
  tpu::OpStats s;
  EXPECT_EQ(tpu::matmul(*default_, a, b, &s), tpu::model::matmul_i8(a, b));
  std::printf("%dx%dx%d: cycles %llu commands %llu instr %llu util %.4f mxu_busy %llu wgt_stall %llu "
              "dep_stall %llu mem_stall %llu core cycles %llu\n",
              m, k, n, (unsigned long long)s.cycles, (unsigned long long)s.commands,
              (unsigned long long)s.instructions, s.utilization(), (unsigned long long)s.counters.mxu_busy,
              (unsigned long long)s.counters.wgt_stall, (unsigned long long)s.counters.dep_stall,
              (unsigned long long)s.counters.mem_stall, (unsigned long long)s.counters.cycles);
}

}  // namespace
