// SPDX-License-Identifier: Apache-2.0
// Operators on the transport under test against the CPU reference, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "tpu/config.h"
#include "tpu/device.h"
#include "tpu/host_size.h"
#include "tpu/ops.h"
#include "tpu/plan/batch.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/mlp.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"
#include "tpu/roofline.h"
#include "transport_under_test.h"

namespace {

namespace plan = tpu::plan;

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
      EXPECT_EQ(tpu::matmul(*dev, a, b, &stats), tpu::ref::matmul_i8(a, b));
      EXPECT_GE(stats.commands, 1u);
      EXPECT_GT(stats.cycles, 0u);
      EXPECT_EQ(stats.macs, uint64_t(m) * k * n);
      EXPECT_GT(stats.utilization(), 0.0);
      EXPECT_LE(stats.utilization(), stats.array_utilization());
      EXPECT_LE(stats.array_utilization(), 1.0);
    }
}

// The planner's newer paths on the device, on both configurations: the
// transposed product (tall A), A streamed through the UB in chunks (long K,
// beyond what the UB holds of a pass), dense with a bias (never transposed)
// and without. The shapes must take each path at least once per device.
TEST_F(OpsTest, TransposedAndStreamedKPlansAreExact) {
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    // Over the serial line default's GEMMs (K up to 8,191, each through
    // matmul and dense) take more than 9 minutes; tiny's plans are the same
    // kinds with a tenth of the bytes, and sim, sc and model run both.
    if (tpu_test::transport() == "uart" && dev == default_.get()) continue;
    const tpu::DeviceInfo& info = dev->info();
    const tpu::CoreConfig core{info.n, info.ub_rows, info.acc_rows, info.imem_depth, info.wgt_fifo_tiles};
    const bool tiny = dev == tiny_.get();
    int transposed = 0, chunked = 0;
    for (const auto& [mm, k, n] : {std::array<int, 3>{tiny ? 307 : 1021, 9, 3}, {3, tiny ? 1999 : 8191, 5},
                                   {tiny ? 23 : 41, tiny ? 1031 : 4099, 7}, {1, 1, 1}}) {
      SCOPED_TRACE(info.name + " " + std::to_string(mm) + "x" + std::to_string(k) + "x" + std::to_string(n));
      const plan::GemmPlan plan = plan::plan_gemm({mm, k, n}, plan::GemmOutput::kInt32, core);
      transposed += plan.transposed;
      chunked += plan.chunks > 1;
      const MatrixI8 a = random(mm, k), b = random(k, n);
      EXPECT_EQ(tpu::matmul(*dev, a, b), tpu::ref::matmul_i8(a, b));
      // int8 results through dense: with a bias the plan is never transposed.
      const tpu::QuantParams q{.multiplier = 1 << 30, .shift = 12};
      std::vector<int32_t> bias;
      for (int j = 0; j < n; ++j) bias.push_back(rand_int(-5000, 5000));
      EXPECT_FALSE(plan::plan_gemm({mm, k, n}, plan::GemmOutput::kInt8, core, {.bias = true}).transposed);
      for (const auto& bs : {std::vector<int32_t>{}, bias}) {
        const tpu::DenseLayer layer{b, bs, q, tpu::Activation::kRelu};
        EXPECT_EQ(tpu::dense(*dev, a, b, bs, q, tpu::Activation::kRelu), tpu::Mlp({layer}).run_reference(a))
            << (bs.empty() ? "without" : "with") << " a bias";
      }
    }
    EXPECT_GE(transposed, 1) << info.name << ": no shape took the transposed plan";
    EXPECT_GE(chunked, 1) << info.name << ": no shape streamed A in chunks";
  }
}

TEST_F(OpsTest, MatmulManyPassesAndProgramsOnTiny) {
  // 4x4 array, 256 UB rows, 256-instruction IMEM: many passes and programs.
  const MatrixI8 a = random(70, 96), b = random(96, 37);
  tpu::OpStats stats;
  EXPECT_EQ(tpu::matmul(*tiny_, a, b, &stats), tpu::ref::matmul_i8(a, b));
  EXPECT_GT(stats.commands, 1u);
}

// Independent products as one stream of commands, at several depths: every
// result exact and in its place, products fused into one command and
// products of several (tiny: 40x80x30 does not fit a batch and takes many
// programs), the statistics summed.
TEST_F(OpsTest, MatmulBatchIsExactAtEveryDepth) {
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    std::vector<MatrixI8> a, b;
    uint64_t macs = 0;
    for (int i = 0; i < 9; ++i) {
      const bool big = dev == tiny_.get() && i % 4 == 1;  // several programs on tiny
      const int m = big ? 40 : rand_int(1, 40), k = big ? 80 : rand_int(1, 70), n = big ? 30 : rand_int(1, 40);
      a.push_back(random(m, k));
      b.push_back(random(k, n));
      macs += uint64_t(m) * k * n;
    }
    for (size_t depth : {size_t(1), size_t(2), size_t(5), size_t(0)}) {
      SCOPED_TRACE(dev->info().name + " depth " + std::to_string(depth));
      tpu::OpStats stats;
      const std::vector<MatrixI32> c = tpu::matmul_batch(*dev, a, b, &stats, depth);
      ASSERT_EQ(c.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(c[i], tpu::ref::matmul_i8(a[i], b[i])) << "product " << i;
      EXPECT_EQ(stats.macs, macs);
      EXPECT_GE(stats.commands, 1u);
      if (dev == default_.get()) EXPECT_LT(stats.commands, a.size()) << "the products were not fused";
      if (dev == tiny_.get()) EXPECT_GT(stats.commands, 4u) << "the two 40x80x30 alone take several programs each";
      EXPECT_GT(stats.cycles, 0u);
      EXPECT_GT(stats.counters.cycles, 0u);
      if (depth == 1) EXPECT_GT(stats.counters.useful_macs, 0u);
      EXPECT_EQ(dev->in_flight(), 0u);
    }
  }
  EXPECT_TRUE(tpu::matmul_batch(*default_, std::vector<MatrixI8>{}, std::vector<MatrixI8>{}).empty());
}

// Products of mixed shapes, fused into batches around one that cannot be
// fused (L does not fit the UB in one load): every result exact on both
// configurations, fewer commands than products, and the same results
// one command at a time (depth 1) with the device's counters.
TEST_F(OpsTest, MatmulBatchFusesMixedShapes) {
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    const tpu::DeviceInfo& info = dev->info();
    const tpu::CoreConfig core{info.n, info.ub_rows, info.acc_rows, info.imem_depth, info.wgt_fifo_tiles};
    const bool tiny = dev == tiny_.get();
    // tiny's UB (256 rows) fuses only small products; its 4x4 array is slow
    // to simulate, so its unfused product is smaller too. Over the serial
    // line default's is smaller as well (its L, 2,048 UB rows, leaves no
    // room for a second A region).
    const std::array<int, 3> unfused_default =
        tpu_test::transport() == "uart" ? std::array<int, 3>{16, 2048, 16} : std::array<int, 3>{300, 2000, 40};
    const std::vector<std::array<int, 3>> shapes =
        tiny ? std::vector<std::array<int, 3>>{{16, 16, 16}, {8, 8, 8}, {1, 1, 1}, {5, 7, 3}, {40, 80, 30},
                                               {13, 5, 16}, {16, 16, 16}, {1, 9, 2}, {6, 6, 6}, {8, 8, 8}}
             : std::vector<std::array<int, 3>>{{64, 64, 64}, {16, 16, 16}, {17, 33, 65}, {1, 1, 1}, unfused_default,
                                               {100, 100, 100}, {128, 128, 128}, {64, 64, 64}, {5, 64, 3}};
    std::vector<MatrixI8> a, b;
    uint64_t macs = 0;
    int unfused = 0;
    for (const auto& [mm, k, n] : shapes) {
      a.push_back(random(mm, k));
      b.push_back(random(k, n));
      macs += uint64_t(mm) * k * n;
      unfused += !plan::gemm_batchable(plan::plan_gemm_for_batch({mm, k, n}, core), core);
    }
    EXPECT_EQ(unfused, 1) << info.name << ": exactly one product should run alone";
    for (size_t depth : {size_t(0), size_t(1)}) {
      SCOPED_TRACE(info.name + " depth " + std::to_string(depth));
      tpu::OpStats stats;
      const std::vector<MatrixI32> c = tpu::matmul_batch(*dev, a, b, &stats, depth);
      ASSERT_EQ(c.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(c[i], tpu::ref::matmul_i8(a[i], b[i])) << "product " << i;
      EXPECT_EQ(stats.macs, macs);
      EXPECT_LT(stats.commands, a.size()) << "the products were not fused";
      EXPECT_GT(stats.instructions, stats.commands);
      if (depth == 1) EXPECT_GT(stats.counters.useful_macs, 0u);
      EXPECT_EQ(dev->in_flight(), 0u);
    }
  }
}

// A long stream of small products: a few commands for all of them.
TEST_F(OpsTest, MatmulBatchOfSmallProductsTakesFewCommands) {
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    SCOPED_TRACE(dev->info().name);
    std::vector<MatrixI8> a, b;
    for (int i = 0; i < 40; ++i) {
      const int m = rand_int(1, 8), k = rand_int(1, 8), n = rand_int(1, 8);
      a.push_back(random(m, k));
      b.push_back(random(k, n));
    }
    tpu::OpStats stats;
    const std::vector<MatrixI32> c = tpu::matmul_batch(*dev, a, b, &stats);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(c[i], tpu::ref::matmul_i8(a[i], b[i])) << "product " << i;
    EXPECT_LT(stats.commands, a.size() / 4);
  }
}

TEST_F(OpsTest, MatmulBatchRefusesBadListsAndQueuesNothing) {
  const std::vector<MatrixI8> a{random(3, 4), random(5, 6)}, b{random(4, 2)};
  EXPECT_THROW(tpu::matmul_batch(*default_, a, b), tpu::Error);
  // The second product's shapes do not fit: the error leaves with nothing
  // left in flight (commands of earlier batches complete first).
  const std::vector<MatrixI8> b2{random(4, 2), random(7, 2)};
  try {
    tpu::matmul_batch(*default_, a, b2);
    ADD_FAILURE() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("inner dimensions differ"), std::string::npos) << e.what();
  }
  EXPECT_EQ(default_->in_flight(), 0u);
  EXPECT_EQ(tpu::matmul(*default_, a[0], b[0]), tpu::ref::matmul_i8(a[0], b[0]));
}

TEST_F(OpsTest, ExtremeValuesKeepEveryBit) {
  for (int8_t av : {int8_t(-128), int8_t(127)}) {
    const MatrixI8 a(9, 200, av), b(200, 20, -128);
    EXPECT_EQ(tpu::matmul(*default_, a, b), tpu::ref::matmul_i8(a, b));
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

// Per-channel requantization (TFLite's int8 FULLY_CONNECTED / CONV_2D):
// column j scaled by its own (M0, shift) from quantize_multiplier of a real
// scale, left shifts (scales >= 1) included; N spans several output tiles,
// so the CH_MULT / CH_SHIFT registers change from tile to tile. Against the
// CPU: the exact int32 product, then quant.h's act_lane per column.
TEST_F(OpsTest, DensePerChannelMatchesReference) {
  const std::array<int8_t, 256> no_lut{};
  for (tpu::Device* dev : {default_.get(), tiny_.get()})
    for (auto act : {tpu::Activation::kNone, tpu::Activation::kRelu, tpu::Activation::kRelu6}) {
      const int m = rand_int(1, 30), k = rand_int(1, 70), n = rand_int(1, 45);
      SCOPED_TRACE(dev->info().name + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                   std::to_string(n));
      const MatrixI8 x = random(m, k), w = random(k, n);
      std::vector<int32_t> bias(static_cast<size_t>(n));
      for (auto& b : bias) b = rand_int(-20000, 20000);
      std::vector<tpu::LaneScale> scales(static_cast<size_t>(n));
      for (auto& s : scales) {
        // Mostly the scales of real layers (2^-14 .. 2^-6), some >= 1.
        const double log2 = rand_int(0, 4) ? rand_int(-14000, -6000) / 1000.0 : rand_int(0, 3000) / 1000.0;
        s = tpu::quant::quantize_multiplier(std::exp2(log2));
      }
      const tpu::QuantParams q{.zero_point = rand_int(-20, 20), .qmin = -128, .qmax = 127, .relu6_max = 90};
      const MatrixI8 got = tpu::dense(*dev, x, w, bias, scales, q, act);
      const MatrixI32 acc = tpu::ref::matmul_i8(x, w);
      ASSERT_EQ(got.rows, m);
      ASSERT_EQ(got.cols, n);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          ASSERT_EQ(got.at(i, j), tpu::quant::act_lane(acc.at(i, j), bias[size_t(j)], scales[size_t(j)], q,
                                                       act, no_lut.data()))
              << "at " << i << "," << j << " M0 " << scales[size_t(j)].multiplier << " shift "
              << scales[size_t(j)].exponent;
      // Per-tensor after per-channel on the same device: QMULT / QSHIFT set
      // every lane again.
      const tpu::QuantParams qt{.multiplier = 0x5a000000, .shift = 9, .zero_point = 3};
      tpu::Mlp ref({tpu::DenseLayer{w, bias, qt, act}});
      EXPECT_EQ(tpu::dense(*dev, x, w, bias, qt, act), ref.run_reference(x));
    }
}

// A tall shape without a bias would take the transposed plan (C^T = W^T x
// A^T), where lanes are rows of C; per-channel scales keep the plan upright.
// The BIAS registers keep their values from one command to the next
// (docs/driver.md): a product whose bias is 0 in some columns, after one
// that left other values in those lanes, must write them again.
TEST_F(OpsTest, BiasOfZeroAfterAnotherCommandsBias) {
  const std::array<int8_t, 256> no_lut{};
  const MatrixI8 x = random(5, 20), w = random(20, 6);
  const std::vector<tpu::LaneScale> scales(6, tpu::quant::quantize_multiplier(std::exp2(-8.0)));
  const tpu::QuantParams q{.zero_point = 0};
  const MatrixI32 acc = tpu::ref::matmul_i8(x, w);
  for (tpu::Device* dev : {default_.get(), tiny_.get()})
    for (const int32_t b : {5000, 0}) {
      const std::vector<int32_t> bias(6, b);
      const MatrixI8 got = tpu::dense(*dev, x, w, bias, scales, q, tpu::Activation::kNone);
      for (int i = 0; i < x.rows; ++i)
        for (int j = 0; j < w.cols; ++j)
          ASSERT_EQ(got.at(i, j), tpu::quant::act_lane(acc.at(i, j), b, scales[size_t(j)], q,
                                                       tpu::Activation::kNone, no_lut.data()))
              << dev->info().name << " bias " << b << " at " << i << "," << j;
    }
}

TEST_F(OpsTest, PerChannelScalesOnATallShapeStayPerColumn) {
  const std::array<int8_t, 256> no_lut{};
  const MatrixI8 a = random(700, 24), b = random(24, 6);
  std::vector<tpu::LaneScale> scales(6);
  for (auto& s : scales) s = tpu::quant::quantize_multiplier(std::exp2(rand_int(-12000, 1000) / 1000.0));
  const tpu::QuantParams q{.zero_point = 5};
  const MatrixI32 acc = tpu::ref::matmul_i8(a, b);
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    const tpu::DeviceInfo& info = dev->info();
    const tpu::CoreConfig core{info.n, info.ub_rows, info.acc_rows, info.imem_depth, info.wgt_fifo_tiles};
    // On the default device the planner would transpose this shape without
    // the per-column epilogue (on tiny it would not either way).
    if (dev == default_.get())
      EXPECT_TRUE(plan::plan_gemm({a.rows, a.cols, b.cols}, plan::GemmOutput::kInt8, core).transposed);
    const MatrixI8 got = tpu::matmul_requant(*dev, a, b, scales, q);
    for (int i = 0; i < a.rows; ++i)
      for (int j = 0; j < b.cols; ++j)
        ASSERT_EQ(got.at(i, j), tpu::quant::act_lane(acc.at(i, j), 0, scales[size_t(j)], q,
                                                     tpu::Activation::kNone, no_lut.data()))
            << dev->info().name << " at " << i << "," << j;
  }
}

// Every column the same per-channel scale gives the per-tensor result, and
// matmul_requant takes per-channel scales too.
TEST_F(OpsTest, PerChannelWithOneScaleIsPerTensor) {
  const MatrixI8 a = random(9, 40), b = random(40, 21);
  const tpu::QuantParams q{.multiplier = 0x6c000000, .shift = 10, .zero_point = -4};
  const std::vector<tpu::LaneScale> same(21, tpu::quant::tensor_scale(q));
  EXPECT_EQ(tpu::matmul_requant(*default_, a, b, same, q), tpu::matmul_requant(*default_, a, b, q));
  EXPECT_EQ(tpu::matmul_requant(*tiny_, a, b, same, q), tpu::matmul_requant(*default_, a, b, q));
}

TEST_F(OpsTest, Conv2dPerChannelMatchesDirectConvolution) {
  tpu::TensorI8 in(1, 6, 5, 4);
  for (auto& v : in.data) v = int8_t(rand_int(-128, 127));
  const tpu::Conv2dParams p{.kh = 3, .kw = 3, .stride = 1, .pad = 1, .pad_value = 2};
  const int oc = 19;  // two output tiles on default, five on tiny
  const MatrixI8 w = random(p.kh * p.kw * in.c, oc);
  std::vector<int32_t> bias(oc);
  for (auto& b : bias) b = rand_int(-3000, 3000);
  std::vector<tpu::LaneScale> scales(oc);
  for (auto& s : scales) s = tpu::quant::quantize_multiplier(std::exp2(rand_int(-12000, 1000) / 1000.0));
  const tpu::QuantParams q{.zero_point = -7};
  const std::array<int8_t, 256> no_lut{};
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    const tpu::TensorI8 out = tpu::conv2d(*dev, in, w, bias, p, scales, q, tpu::Activation::kRelu);
    ASSERT_EQ(out.c, oc);
    for (int y = 0; y < out.h; ++y)
      for (int x = 0; x < out.w; ++x)
        for (int o = 0; o < oc; ++o) {
          int32_t acc = 0;
          for (int ky = 0; ky < p.kh; ++ky)
            for (int kx = 0; kx < p.kw; ++kx)
              for (int c = 0; c < in.c; ++c) {
                const int iy = y + ky - p.pad, ix = x + kx - p.pad;
                const bool inside = iy >= 0 && iy < in.h && ix >= 0 && ix < in.w;
                acc += (inside ? in.at(0, iy, ix, c) : p.pad_value) * w.at((ky * p.kw + kx) * in.c + c, o);
              }
          ASSERT_EQ(out.at(0, y, x, o), tpu::quant::act_lane(acc, bias[size_t(o)], scales[size_t(o)], q,
                                                             tpu::Activation::kRelu, no_lut.data()))
              << dev->info().name << " at " << y << "," << x << "," << o;
        }
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
  // Layer by layer: one dense() each.
  tpu::OpStats stats;
  const tpu::MlpOptions per_layer{.chain = tpu::MlpOptions::Chain::kNever};
  EXPECT_FALSE(mlp.plan(default_->info(), 50, per_layer).chained);
  EXPECT_EQ(mlp.run(*default_, x, &stats, per_layer), mlp.run_reference(x));
  EXPECT_EQ(stats.commands, 3u);
  // The layers' figures add up: rows x K blocks x column tiles, int8 outputs.
  const uint64_t n = uint64_t(default_->info().n);
  uint64_t macs = 0, array_cycles = 0, read_bytes = 0, write_bytes = 0;
  for (int l = 0; l < 3; ++l) {
    const uint64_t k = uint64_t(sizes[l]), out = uint64_t(sizes[l + 1]), kb = (k + n - 1) / n,
                   ct = (out + n - 1) / n;
    macs += 50 * k * out;
    array_cycles += 50 * kb * ct;
    read_bytes += 50 * kb * n + ct * kb * n * n;
    write_bytes += ct * 50 * n;
  }
  EXPECT_EQ(stats.macs, macs);
  EXPECT_EQ(stats.array_cycles, array_cycles);
  EXPECT_EQ(stats.read_bytes, read_bytes);
  EXPECT_EQ(stats.write_bytes, write_bytes);
}

// ---- The MLP chained on the device ------------------------------------------------------

namespace mlp_test {

// A layer whose requantization spreads random int8 inputs over the int8
// range (neither all clamped nor all zero), so that a wrong layer shows.
tpu::DenseLayer random_layer(std::mt19937_64& rng, int k, int n_out, bool relu_input) {
  const auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  tpu::DenseLayer d;
  d.w = MatrixI8(k, n_out);
  for (auto& v : d.w.data) v = int8_t(uniform(-128, 127));
  if (uniform(0, 4) > 0) {
    d.bias.resize(size_t(n_out));
    for (auto& b : d.bias) b = uniform(-20000, 20000);
  }
  // A sum of k products of inputs of about 74 (uniform int8; after a ReLU
  // about 40) and weights of about 74: to about 40.
  const double spread = (relu_input ? 40.0 : 74.0) * 74.0 * std::sqrt(double(k)) / 40.0;
  d.q.multiplier = uniform(1 << 30, INT32_MAX);
  d.q.shift = std::clamp(int(std::log2(spread)), 0, 31);
  d.q.zero_point = uniform(-20, 20);
  d.q.qmin = uniform(-128, -100);
  d.q.qmax = uniform(100, 127);
  d.q.relu6_max = uniform(30, 90);
  d.act = std::array{tpu::Activation::kNone, tpu::Activation::kRelu, tpu::Activation::kRelu6}[size_t(uniform(0, 2))];
  return d;
}

// Rows an instruction kind moves over a program, each LOOP body counted
// once per iteration.
uint64_t rows_of(const std::vector<tpu::isa::Instr>& program, tpu::isa::Op op) {
  uint64_t rows = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    const auto& in = program[i];
    if (in.op == uint8_t(tpu::isa::Op::kLoop)) {
      for (size_t b = i + 1; b <= i + in.a && b < program.size(); ++b)
        if (program[b].op == uint8_t(op)) rows += uint64_t(in.count) * program[b].count;
      i += in.a;
    } else if (in.op == uint8_t(op)) {
      rows += in.count;
    }
  }
  return rows;
}

}  // namespace mlp_test

// Random networks chained on both configurations: 1 to 4 layers of sizes
// that are not multiples of the array, batches that are not either, every
// activation, with and without bias, each layer its own requantization; and
// one network with many more outputs than inputs (the outputs image then
// sets the LOOP's host increment). Each prefix of the network runs on its
// own, with the planner's step and with a small one (many steps: the device
// LOOP), so a wrong layer is caught at that layer: its int8 outputs must
// equal run_reference's.
TEST_F(OpsTest, MlpChainedMatchesItsReferenceAtEveryLayer) {
  for (tpu::Device* dev : {default_.get(), tiny_.get()}) {
    const bool tiny = dev == tiny_.get();
    for (int trial = 0; trial < 4; ++trial) {
      const bool wide = trial == 3;
      const int layers = wide ? 1 : rand_int(1, 4), batch = rand_int(wide ? (tiny ? 25 : 60) : 1, tiny ? 30 : 200);
      std::vector<int> sizes{wide ? 3 : rand_int(1, tiny ? 20 : 90)};
      for (int l = 0; l < layers; ++l) sizes.push_back(wide ? (tiny ? 25 : 90) : rand_int(1, tiny ? 12 : 70));
      std::vector<tpu::DenseLayer> net;
      std::string shape = std::to_string(sizes[0]);
      for (int l = 0; l < layers; ++l) {
        net.push_back(mlp_test::random_layer(rng_, sizes[size_t(l)], sizes[size_t(l) + 1],
                                             l > 0 && net.back().act != tpu::Activation::kNone));
        shape += "-" + std::to_string(sizes[size_t(l) + 1]);
      }
      const MatrixI8 x = random(batch, sizes[0]);
      for (int l = 1; l <= layers; ++l) {
        SCOPED_TRACE(dev->info().name + " " + shape + ", batch " + std::to_string(batch) + ", the first " +
                     std::to_string(l) + " layer(s)");
        const tpu::Mlp mlp(std::vector<tpu::DenseLayer>(net.begin(), net.begin() + l));
        const MatrixI8 want = mlp.run_reference(x);
        for (const int step : {0, std::max(1, batch / 6)}) {
          SCOPED_TRACE("step " + std::to_string(step));
          const tpu::MlpOptions chained{.chain = tpu::MlpOptions::Chain::kAlways, .step = step};
          const tpu::MlpPlan plan = mlp.plan(dev->info(), batch, chained);
          ASSERT_TRUE(plan.chained);
          tpu::OpStats stats;
          EXPECT_EQ(mlp.run(*dev, x, &stats, chained), want);
          EXPECT_EQ(stats.commands, uint64_t(plan.commands));
          EXPECT_EQ(stats.instructions, uint64_t(plan.instructions));
          if (plan.instructions <= dev->info().imem_depth) EXPECT_EQ(stats.commands, 1u);
          if (wide && step > 0) EXPECT_GT(plan.loop_iterations, 0);
        }
      }
    }
  }
}

// The digits demo's network (64-32-10): one command for the whole batch,
// chosen by the planner, its steps in a device LOOP; forced step sizes with
// and without the LOOP; only the logits leave the device.
TEST_F(OpsTest, MlpChainedLoopsOverStepsInOneCommand) {
  const tpu::Mlp mlp({mlp_test::random_layer(rng_, 64, 32, false), mlp_test::random_layer(rng_, 32, 10, true)});
  const int batch = 450;
  const MatrixI8 x = random(batch, 64);
  const MatrixI8 want = mlp.run_reference(x);
  const tpu::DeviceInfo& info = default_->info();
  const tpu::CoreConfig core{info.n, info.ub_rows, info.acc_rows, info.imem_depth, info.wgt_fifo_tiles};
  std::vector<plan::ChainLayer> chain;
  for (const auto& d : mlp.layers()) chain.push_back({d.w.rows, d.w.cols, d.q, d.act, d.bias});
  struct Case {
    tpu::MlpOptions options;
    bool looped;
  };
  for (const Case& c : {Case{{}, true}, Case{{.step = 45}, true}, Case{{.step = 45, .loop = false}, false},
                        Case{{.step = 150}, false}, Case{{.step = 225}, false}}) {
    SCOPED_TRACE("step " + std::to_string(c.options.step) + (c.options.loop ? "" : ", no loop"));
    const tpu::MlpPlan plan = mlp.plan(info, batch, c.options);
    ASSERT_TRUE(plan.chained) << plan.reason;
    EXPECT_EQ(plan.loop_iterations > 0, c.looped);
    if (c.options.step > 0) EXPECT_EQ(plan.step, c.options.step);
    EXPECT_EQ(plan.steps, (batch + plan.step - 1) / plan.step);
    if (c.options.step == 0) EXPECT_LE(plan.chained_estimate, plan.per_layer_estimate);
    tpu::OpStats stats;
    EXPECT_EQ(mlp.run(*default_, x, &stats, c.options), want);
    EXPECT_EQ(stats.commands, 1u);
    EXPECT_EQ(stats.macs, uint64_t(batch) * (64 * 32 + 32 * 10));
    EXPECT_EQ(stats.array_cycles, uint64_t(batch) * (4 * 2 + 2 * 1));
    // The link carries each step's inputs and weights in, its logits out.
    const uint64_t n = 16, P = uint64_t(plan.step), S = uint64_t(plan.steps);
    EXPECT_EQ(stats.read_bytes, S * (4 * P * n + 10 * n * n));
    EXPECT_EQ(stats.write_bytes, S * P * n);
    // In the program: one RHM of input rows and one WHM of logit rows per
    // step, nothing else crosses (the hidden layer stays in the UB).
    const plan::ChainPlan cp =
        plan::plan_chain(chain, batch, core, {.step_rows = c.options.step, .loop = c.options.loop});
    const auto programs = plan::chain_programs(cp, chain, 0, 1 << 20, core);
    ASSERT_EQ(programs.size(), 1u);
    EXPECT_EQ(mlp_test::rows_of(programs[0], tpu::isa::Op::kRhm), S * 4 * P);
    EXPECT_EQ(mlp_test::rows_of(programs[0], tpu::isa::Op::kWhm), S * P);
    EXPECT_EQ(mlp_test::rows_of(programs[0], tpu::isa::Op::kRw), S * 10);  // RW counts tiles
  }
  // The planner's choice beats layer by layer on the device too.
  tpu::OpStats chained, per_layer;
  mlp.run(*default_, x, &chained);
  mlp.run(*default_, x, &per_layer, {.chain = tpu::MlpOptions::Chain::kNever});
  EXPECT_LT(chained.commands, per_layer.commands);
  if (tpu_test::transport() == "sim") EXPECT_LT(chained.cycles, per_layer.cycles);
}

// A network whose step does not fit runs layer by layer, exactly; forcing
// the chain is an error that says why.
TEST_F(OpsTest, MlpFallsBackLayerByLayerWhenItDoesNotFit) {
  // On tiny (256 UB rows, 4x4): 600 inputs are 150 rows a sample, twice.
  const tpu::Mlp mlp({mlp_test::random_layer(rng_, 600, 9, false), mlp_test::random_layer(rng_, 9, 5, true)});
  const tpu::MlpPlan plan = mlp.plan(tiny_->info(), 6);
  EXPECT_FALSE(plan.chained);
  EXPECT_NE(plan.reason.find("unified-buffer rows"), std::string::npos) << plan.reason;
  const MatrixI8 x = random(6, 600);
  tpu::OpStats stats;
  EXPECT_EQ(mlp.run(*tiny_, x, &stats), mlp.run_reference(x));
  EXPECT_GE(stats.commands, 2u);
  try {
    mlp.run(*tiny_, x, nullptr, {.chain = tpu::MlpOptions::Chain::kAlways});
    FAIL() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mlp: the layers cannot be chained: a step of one sample needs 307"),
              std::string::npos)
        << e.what();
  }
  // A forced step larger than what fits.
  EXPECT_THROW(mlp.plan(default_->info(), 100, {.chain = tpu::MlpOptions::Chain::kAlways, .step = 100}),
               tpu::Error);
  EXPECT_FALSE(mlp.plan(default_->info(), 100, {.step = 100}).chained);
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
  // Per-channel: one scale per output column, shifts -31..31.
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {}, std::vector<tpu::LaneScale>(2), {}), tpu::Error);
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {}, std::vector<tpu::LaneScale>{}, {}), tpu::Error);
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {}, {{1 << 30, 0}, {1 << 30, 32}, {1 << 30, 0}}, {}),
               tpu::Error);
  EXPECT_THROW(tpu::dense(*default_, a, random(5, 3), {}, {{1 << 30, -32}, {1 << 30, 0}, {1 << 30, 0}}, {}),
               tpu::Error);
  EXPECT_THROW(tpu::Mlp({tpu::DenseLayer{random(4, 5), {}, {}}, tpu::DenseLayer{random(6, 2), {}, {}}}),
               tpu::Error);
  // K beyond the instructions' 16-bit counts.
  EXPECT_THROW(tpu::matmul(*tiny_, random(1, 70000), random(70000, 1)), tpu::Error);
  // A result larger than any memory, from two operands of 1 MiB: refused
  // by its size before anything is allocated.
  try {
    tpu::matmul(*default_, MatrixI8(1 << 20, 1), MatrixI8(1, 1 << 20));
    FAIL() << "no error";
  } catch (const tpu::Error& e) {
    EXPECT_STREQ(e.what(), ("matmul: the result, 1048576x1048576 int32 (4 TiB), is larger than this machine's "
                            "memory (" +
                            tpu::byte_size(tpu::physical_memory_bytes()) + ")")
                               .c_str());
  }
  // The device still works.
  const MatrixI8 c = random(3, 3);
  EXPECT_EQ(tpu::matmul(*default_, c, c), tpu::ref::matmul_i8(c, c));
}

// ---- Utilization and the roofline -------------------------------------------------------

// An odd shape on both configurations: the true utilization counts M*K*N, the
// array's counts the padded tiles (M x ceil(K/n)*n x ceil(N/n)*n), and the
// roofline's inputs are the padded images' sizes. Every expected value comes
// from the shape and n alone, given whether the planner transposed the
// product (C^T = W^T x A^T pads M to tiles instead of N).
TEST_F(OpsTest, UtilizationCountsTheMathAndArrayUtilizationThePadding) {
  struct Case {
    tpu::Device* dev;
    int m, k, n_out;
  };
  for (const Case& c : {Case{default_.get(), 1000, 300, 70}, Case{default_.get(), 17, 33, 65},
                        Case{tiny_.get(), 17, 33, 65}}) {
    const uint64_t n = uint64_t(c.dev->info().n), k = uint64_t(c.k);
    uint64_t m = uint64_t(c.m), n_out = uint64_t(c.n_out);
    SCOPED_TRACE(c.dev->info().name + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
                 std::to_string(n_out));
    const tpu::DeviceInfo& info = c.dev->info();
    const tpu::CoreConfig core{info.n, info.ub_rows, info.acc_rows, info.imem_depth, info.wgt_fifo_tiles};
    if (plan::plan_gemm({c.m, c.k, c.n_out}, plan::GemmOutput::kInt32, core).transposed)
      std::swap(m, n_out);  // the device's rows are C's columns
    const uint64_t kb = (k + n - 1) / n, ct = (n_out + n - 1) / n;
    const uint64_t macs = m * k * n_out, padded_macs = m * (kb * n) * (ct * n);
    ASSERT_LT(macs, padded_macs) << "the case must pad";
    const MatrixI8 a = random(c.m, c.k), b = random(c.k, c.n_out);
    tpu::OpStats s;
    ASSERT_EQ(tpu::matmul(*c.dev, a, b, &s), tpu::ref::matmul_i8(a, b));
    ASSERT_GT(s.cycles, 0u);
    const double peak = double(s.cycles) * double(n * n);
    EXPECT_EQ(s.macs, macs);
    EXPECT_DOUBLE_EQ(s.utilization(), double(macs) / peak);
    EXPECT_EQ(s.counters.useful_macs, padded_macs);
    EXPECT_DOUBLE_EQ(s.array_utilization(), double(padded_macs) / peak);
    EXPECT_NEAR(s.array_utilization() / s.utilization(), double(padded_macs) / double(macs), 1e-12);
    // One array row per (row of A, K block, column tile); the device counts the rows it took.
    EXPECT_EQ(s.array_cycles, m * kb * ct);
    EXPECT_EQ(s.counters.mxu_busy, s.array_cycles);
    // Packed A (M rows of kb blocks of n bytes), W (kb x ct tiles of n*n), C
    // (int32: ct tiles of M rows of 4n bytes, but the last tile's rows only
    // the n-byte UB rows that hold its lanes, n / 4 lanes each).
    const uint64_t last_lanes = n_out - (ct - 1) * n, last_row = (last_lanes + n / 4 - 1) / (n / 4) * n;
    EXPECT_EQ(s.read_bytes, m * kb * n + kb * ct * n * n);
    EXPECT_EQ(s.write_bytes, (ct - 1) * m * 4 * n + m * last_row);
  }
  // The two figures read different fields: macs and the device's useful_macs.
  tpu::OpStats s;
  s.n = 16;
  s.cycles = 1000;
  s.macs = 21000;
  s.counters.useful_macs = 24320;
  EXPECT_DOUBLE_EQ(s.utilization(), 21000.0 / 256000.0);
  EXPECT_DOUBLE_EQ(s.array_utilization(), 24320.0 / 256000.0);
  EXPECT_EQ(tpu::OpStats{}.utilization(), 0.0);  // no cycles: no division by zero
  EXPECT_EQ(tpu::OpStats{}.array_utilization(), 0.0);
}

TEST(Roofline, MxuBoundOnAHandComputedShape) {
  // 1000x300x70 on 16x16, int32 out: K blocks 19, column tiles 5.
  tpu::OpStats s;
  s.array_cycles = 1000 * 19 * 5;                // 95000
  s.read_bytes = 1000 * 19 * 16 + 5 * 19 * 256;  // 304000 + 24320 = 328320: 20520 cycles at 16
  s.write_bytes = 5 * 1000 * 64;                 // 320000: 20000 cycles
  s.commands = 1;
  const tpu::Roofline r = tpu::roofline(s, 16.0, 16.0, 1234);
  EXPECT_EQ(r.mxu_cycles, 95000u);
  EXPECT_EQ(r.read_cycles, 20520u);
  EXPECT_EQ(r.write_cycles, 20000u);
  EXPECT_EQ(r.fixed_cycles, 1234u);
  EXPECT_EQ(r.bound(), 95000u + 1234u);
  EXPECT_STREQ(r.limit(), "MXU");
  EXPECT_DOUBLE_EQ(r.fraction(2 * 96234), 0.5);
  EXPECT_EQ(r.fraction(0), 0.0);
}

TEST(Roofline, WriteBoundAndRoundedUp) {
  // 64x16x4096 on 16x16, int32 out: one K block, 256 column tiles. Each array
  // row makes 16 int32 = 64 bytes: 4 cycles of link per cycle of MXU.
  tpu::OpStats s;
  s.array_cycles = 64 * 1 * 256;                // 16384
  s.read_bytes = 64 * 1 * 16 + 256 * 1 * 256;   // 1024 + 65536 = 66560: 4160 cycles
  s.write_bytes = 256 * 64 * 64 + 1;            // 1048577: 65536.06 -> 65537 cycles
  s.commands = 2;
  const tpu::Roofline r = tpu::roofline(s, 16.0, 16.0, 100);
  EXPECT_EQ(r.read_cycles, 4160u);
  EXPECT_EQ(r.write_cycles, 65537u);
  EXPECT_STREQ(r.limit(), "link write");
  EXPECT_EQ(r.bound(), 65537u + 200u);
}

TEST(Roofline, ReadBoundWithItsOwnBandwidth) {
  tpu::OpStats s;
  s.array_cycles = 256;  // 1x4096x16 on 16x16: 256 K blocks, one column tile
  s.read_bytes = 1 * 256 * 16 + 1 * 256 * 256;  // 69632
  s.write_bytes = 64;
  s.commands = 1;
  // 8 bytes a cycle in, 32 out: 8704 read cycles, 2 write cycles.
  const tpu::Roofline r = tpu::roofline(s, 8.0, 32.0, 0);
  EXPECT_EQ(r.read_cycles, 8704u);
  EXPECT_EQ(r.write_cycles, 2u);
  EXPECT_STREQ(r.limit(), "link read");
  EXPECT_EQ(r.bound(), 8704u);
  // Ties go to the first term in the order MXU, link read, link write.
  s.array_cycles = 8704;
  EXPECT_STREQ(tpu::roofline(s, 8.0, 32.0, 0).limit(), "MXU");
  s.array_cycles = 0;
  s.write_bytes = 8704 * 32;
  EXPECT_STREQ(tpu::roofline(s, 8.0, 32.0, 0).limit(), "link read");
}

TEST(Roofline, FixedCostAddsToTheLargestTerm) {
  tpu::OpStats s;
  s.array_cycles = 1000;
  s.read_bytes = 16 * 900;
  s.write_bytes = 16 * 800;
  s.commands = 3;
  const tpu::Roofline r = tpu::roofline(s, 16.0, 16.0, 700);
  EXPECT_EQ(r.fixed_cycles, 2100u);
  EXPECT_EQ(r.bound(), 1000u + 2100u);  // not max(1000, 2100), not the sum of all terms
  // Queued behind the first, each further command costs queued_cycles.
  EXPECT_EQ(tpu::roofline(s, 16.0, 16.0, 700, 30).fixed_cycles, 700u + 2 * 30u);
  s.commands = 1;
  EXPECT_EQ(tpu::roofline(s, 16.0, 16.0, 700, 30).fixed_cycles, 700u);
  s.commands = 0;
  EXPECT_EQ(tpu::roofline(s, 16.0, 16.0, 700).bound(), 1000u);
  EXPECT_EQ(tpu::roofline(s, 16.0, 16.0, 700, 30).bound(), 1000u);
}

TEST(Roofline, NamedConfigurationsGiveTheLinkAndOthersNoRoofline) {
  tpu::OpStats s;
  s.array_cycles = 10;
  s.read_bytes = 16 * 1000;  // 1000 cycles at 16 bytes a cycle
  s.write_bytes = 16 * 20;
  s.commands = 1;
  for (const tpu::Config& c : tpu::kConfigs) {
    SCOPED_TRACE(std::string(c.name));
    const auto r = tpu::roofline(s, c.name, 50);
    ASSERT_TRUE(r.has_value());
    const tpu::Roofline expect = tpu::roofline(s, c.link_bytes_per_cycle, c.link_bytes_per_cycle, 50);
    EXPECT_EQ(r->read_cycles, expect.read_cycles);
    EXPECT_EQ(r->write_cycles, expect.write_cycles);
    EXPECT_EQ(r->bound(), expect.bound());
  }
  EXPECT_EQ(tpu::roofline(s, "default", 50)->bound(), 1000u + 50u);  // default: 16 bytes a cycle
  EXPECT_FALSE(tpu::roofline(s, "", 50).has_value());  // DeviceInfo::config of a custom device
  EXPECT_FALSE(tpu::roofline(s, "custom", 50).has_value());
  EXPECT_THROW(tpu::roofline(s, 0.0, 16.0, 50), tpu::Error);
  EXPECT_THROW(tpu::roofline(s, 16.0, -1.0, 50), tpu::Error);
}

// On the device: the bound is a lower bound of the cycles (on the
// cycle-accurate transports), and the limit is the one the shape predicts.
TEST_F(OpsTest, RooflineBoundsRealRuns) {
  const bool cycle_accurate = tpu_test::transport() == "sim" || tpu_test::transport() == "sc";
  ASSERT_FALSE(default_->info().config.empty());
  const uint64_t command_cycles = tpu::command_latency(*default_);
  EXPECT_GT(command_cycles, 0u);
  if (cycle_accurate) EXPECT_EQ(tpu::command_latency(*default_), command_cycles) << "not repeatable";
  const uint64_t queued_cycles = tpu::queued_command_latency(*default_);
  if (cycle_accurate) {
    // The device fetches a queued command while the one before runs.
    EXPECT_GT(queued_cycles, 0u);
    EXPECT_LT(queued_cycles, command_cycles / 4);
  }
  struct Case {
    int m, k, n_out;
    const char* limit;
  };
  // On 16x16 at 16 bytes a cycle each way (int32 C: 64 bytes per array row).
  for (const Case& c : {Case{256, 256, 256, "MXU"}, Case{64, 16, 1024, "link write"},
                        Case{2, 4096, 16, "link read"}, Case{100, 100, 100, "MXU"}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n_out));
    const MatrixI8 a = random(c.m, c.k), b = random(c.k, c.n_out);
    tpu::OpStats s;
    ASSERT_EQ(tpu::matmul(*default_, a, b, &s), tpu::ref::matmul_i8(a, b));
    const auto r = tpu::roofline(s, default_->info().config, command_cycles, queued_cycles);
    ASSERT_TRUE(r.has_value());
    EXPECT_STREQ(r->limit(), c.limit);
    EXPECT_EQ(r->fixed_cycles, command_cycles + (s.commands - 1) * queued_cycles);
    EXPECT_GT(r->fraction(s.cycles), 0.0);
    if (cycle_accurate) EXPECT_LE(r->bound(), s.cycles) << "the bound is not a lower bound";
    std::printf("  %dx%dx%d: %llu cycles, bound %llu (%s), fraction %.3f\n", c.m, c.k, c.n_out,
                (unsigned long long)s.cycles, (unsigned long long)r->bound(), r->limit(),
                r->fraction(s.cycles));
  }
}

// For measurements: TPU_GEMM="M K N" ./driver_test --gtest_also_run_disabled_tests
// --gtest_filter='*Measure*'. make bench runs the real sweep.
TEST_F(OpsTest, DISABLED_MeasureGemm) {
  int m = 512, k = 512, n = 512;
  if (const char* env = std::getenv("TPU_GEMM")) std::sscanf(env, "%d %d %d", &m, &k, &n);
  const MatrixI8 a = random(m, k), b = random(k, n);
  tpu::OpStats s;
  EXPECT_EQ(tpu::matmul(*default_, a, b, &s), tpu::ref::matmul_i8(a, b));
  std::printf("%dx%dx%d: cycles %llu commands %llu instr %llu util %.4f mxu_busy %llu wgt_stall %llu "
              "dep_stall %llu mem_stall %llu core cycles %llu\n",
              m, k, n, (unsigned long long)s.cycles, (unsigned long long)s.commands,
              (unsigned long long)s.instructions, s.utilization(), (unsigned long long)s.counters.mxu_busy,
              (unsigned long long)s.counters.wgt_stall, (unsigned long long)s.counters.dep_stall,
              (unsigned long long)s.counters.mem_stall, (unsigned long long)s.counters.cycles);
}

}  // namespace
