// SPDX-License-Identifier: Apache-2.0
// The bf16 datapath's RTL against the C++ reference numerics (tpu/bf16.h),
// bit for bit: bf16_mul and fp32_add (combinational) on every pair of
// special values, structured sets and millions of random operands biased to
// the hard cases; the bf16 mxu_mac (through tb/mxu/mxu_mac_bf16.sv) on its
// three-cycle schedule, with en_i holding every stage, and as one column
// (its output fed back as the next partial sum) against bf16_dot_column; the
// VPU's fp32 lanes (fp32_mul, fp32_max, fp32_min, fp32_to_bf16, through
// tb/vpu/vpu_fp32_ops.sv).
//
// TPU_SEED=<n> repeats a run; TPU_WAVES=1 writes an FST per test (MAC tests).
#include <gtest/gtest.h>
#include <verilated.h>
#include <verilated_fst_c.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Vbf16_mul.h"
#include "Vfp32_add.h"
#include "Vmxu_mac_bf16.h"
#include "Vvpu_fp32_ops.h"
#include "fp_cases.h"
#include "tpu/bf16.h"
#include "verilated_fixture.h"

namespace {

using tpu::bf16;
using tpu::fp32;

// Owns the context and the model of one test; the blocks here have no reset,
// so tb::Sim (which drives rst_ni) does not fit them.
template <class Model>
class FpFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = tb::choose_seed();
    RecordProperty("seed", std::to_string(seed_));
    rng_.seed(seed_);
    ctx_ = std::make_unique<VerilatedContext>();
    ctx_->randReset(0);
    Verilated::threadContextp(ctx_.get());
    if (tb::waves_enabled()) ctx_->traceEverOn(true);
    dut_ = std::make_unique<Model>(ctx_.get(), "TOP");
    if (tb::waves_enabled()) {
      wave_ = tb::wave_dir() + "/" + tb::file_safe(tb::current_test_name()) + ".fst";
      std::filesystem::create_directories(std::filesystem::path(wave_).parent_path());
      trace_ = std::make_unique<VerilatedFstC>();
      dut_->trace(trace_.get(), 99);
      trace_->open(wave_.c_str());
    }
  }

  void TearDown() override {
    Verilated::threadContextp(ctx_.get());
    dut_->final();
    tb::write_coverage(*ctx_);  // a coverage build's data (coverage.h)
    if (trace_) trace_->close();
    trace_.reset();
    dut_.reset();
    if (!wave_.empty()) std::cout << "waves: " << wave_ << "\n";
    if (HasFailure())
      std::cout << "seed: " << seed_ << "\nreproduce: TPU_SEED=" << seed_ << " TPU_WAVES=1 fp_test --gtest_filter='"
                << tb::current_test_name() << "'\n";
  }

  Model& dut() { return *dut_; }
  std::mt19937_64& rng() { return rng_; }

  void eval() {
    dut_->eval();
    if (trace_) {
      trace_->dump(ctx_->time());
      ctx_->timeInc(1);
    }
  }

  // One clock cycle; inputs set while the clock is low are sampled at the edge.
  void tick() {
    eval();
    dut_->clk_i = 1;
    eval();
    dut_->clk_i = 0;
    eval();
  }

  // Counts mismatches and reports the first few with their operands.
  template <class... Args>
  void mismatch(const char* fmt, Args... args) {
    if (mismatches_++ < 10) {
      char buf[256];
      std::snprintf(buf, sizeof buf, fmt, args...);
      ADD_FAILURE() << buf;
    }
  }
  uint64_t mismatches() const { return mismatches_; }

 private:
  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> dut_;
  std::unique_ptr<VerilatedFstC> trace_;
  std::string wave_;
  uint64_t mismatches_ = 0;
};

// ---- bf16_mul ----

class Bf16MulRtlTest : public FpFixture<Vbf16_mul> {
 protected:
  void check(bf16 a, bf16 b) {
    dut().a_i = a;
    dut().b_i = b;
    eval();
    const fp32 want = tpu::bf16_mul(a, b);
    if (dut().p_o != want) mismatch("bf16_mul(0x%04x, 0x%04x): RTL 0x%08x, C++ 0x%08x", a, b, dut().p_o, want);
  }
};

TEST_F(Bf16MulRtlTest, SpecialPairs) {
  const auto v = tpu::fp_cases::bf16_specials();
  for (bf16 a : v)
    for (bf16 b : v) check(a, b);
  EXPECT_EQ(mismatches(), 0u) << v.size() * v.size() << " pairs";
}

TEST_F(Bf16MulRtlTest, StructuredPairs) {
  // Every sign and exponent with edge and middle fractions, all pairs (2.1e7).
  const auto v = tpu::fp_cases::bf16_structured();
  for (bf16 a : v)
    for (bf16 b : v) check(a, b);
  EXPECT_EQ(mismatches(), 0u) << v.size() * v.size() << " pairs";
}

TEST_F(Bf16MulRtlTest, EveryOperandTimesSpecials) {
  const auto v = tpu::fp_cases::bf16_specials();
  for (uint32_t a = 0; a < 0x10000; ++a)
    for (bf16 b : v) check(bf16(a), b);
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(Bf16MulRtlTest, RandomPairs) {
  for (int i = 0; i < 5'000'000; ++i) {
    const uint64_t r = rng()();
    bf16 a = bf16(r), b = bf16(r >> 16);
    // Half of them with exponents whose sum puts the product within a few
    // binades of the flush edge (ea + eb - 127 near 0) or of overflow (near 255).
    if (r >> 63) {
      const int ea = int(r >> 32 & 0xFF);
      const int target = (r >> 48 & 1) ? 127 : 127 + 255;
      const int eb = std::clamp(target - ea + int(r >> 40 & 7) - 4, 0, 255);
      a = bf16((a & 0x807F) | (ea << 7));
      b = bf16((b & 0x807F) | (eb << 7));
    }
    check(a, b);
  }
  EXPECT_EQ(mismatches(), 0u);
}

// ---- the VPU's fp32 lanes: fp32_mul, fp32_max, fp32_min, fp32_to_bf16 ----

class VpuFp32RtlTest : public FpFixture<Vvpu_fp32_ops> {
 protected:
  void check(fp32 a, fp32 b) {
    dut().a_i = a;
    dut().b_i = b;
    eval();
    const fp32 mul = tpu::fp32_mul(a, b), mx = tpu::fp32_max(a, b), mn = tpu::fp32_min(a, b);
    const bf16 cv = tpu::fp32_to_bf16(a);
    if (dut().mul_o != mul) mismatch("fp32_mul(0x%08x, 0x%08x): RTL 0x%08x, C++ 0x%08x", a, b, dut().mul_o, mul);
    if (dut().max_o != mx) mismatch("fp32_max(0x%08x, 0x%08x): RTL 0x%08x, C++ 0x%08x", a, b, dut().max_o, mx);
    if (dut().min_o != mn) mismatch("fp32_min(0x%08x, 0x%08x): RTL 0x%08x, C++ 0x%08x", a, b, dut().min_o, mn);
    if (dut().bf16_o != cv) mismatch("fp32_to_bf16(0x%08x): RTL 0x%04x, C++ 0x%04x", a, dut().bf16_o, cv);
  }
};

TEST_F(VpuFp32RtlTest, SpecialPairs) {
  const auto v = tpu::fp_cases::fp32_specials();
  for (fp32 a : v)
    for (fp32 b : v) check(a, b);
  EXPECT_EQ(mismatches(), 0u) << v.size() * v.size() << " pairs";
}

TEST_F(VpuFp32RtlTest, HandCheckedProducts) {
  // docs/numerics.md's examples: ties both ways, overflow by rounding, and
  // the flush of an exact product just below 2^-126 that rounding would lift.
  const std::pair<fp32, fp32> cases[] = {{0x3F800800u, 0x3F800800u}, {0x3F800001u, 0x3FC00000u},
                                         {0x7F7FFFFFu, 0x3F800001u}, {0x3F7FFFFEu, 0x00800001u},
                                         {0x3F7FFFFFu, 0x00800001u}, {0x3F800001u, 0x007FFFFFu}};
  for (auto [a, b] : cases) {
    check(a, b);
    check(b, a);
  }
  dut().a_i = 0x3F7FFFFEu;
  dut().b_i = 0x00800001u;
  eval();
  EXPECT_EQ(dut().mul_o, 0u) << "the exact product is below 2^-126: zero";
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(VpuFp32RtlTest, RandomPairsBiasedToHardCases) {
  // 4e6 pairs: a quarter uniform bits; a quarter with exponents whose sum
  // puts the product near 2^-126 or 2^128; a quarter with fractions near all
  // ones (significand products just below 2 and 4, where rounding carries);
  // a quarter with few-bit fractions (ties) and bf16 operands.
  for (int i = 0; i < 4'000'000; ++i) {
    const uint64_t r = rng()(), q = rng()();
    fp32 a = fp32(r), b = fp32(r >> 32);
    switch (i & 3) {
      case 0:
        break;
      case 1: {
        const uint32_t ea = uint32_t(q & 0xFF);
        const int target = (q >> 8 & 1) ? 127 : 127 + 254;
        const uint32_t eb = uint32_t(std::clamp(target - int(ea) + int(q >> 9 & 7) - 4, 0, 255));
        a = (a & 0x807FFFFFu) | ea << 23;
        b = (b & 0x807FFFFFu) | eb << 23;
        break;
      }
      case 2:
        a |= 0x007FFF00u >> (q & 7);
        b |= 0x007FFF00u >> (q >> 3 & 7);
        break;
      default:
        a &= (q & 1) ? 0xFFFF0000u : 0xFFF00FFFu;
        b &= (q & 2) ? 0xFFFF0000u : 0xFFFFF00Fu;
        break;
    }
    check(a, b);
  }
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(VpuFp32RtlTest, ConversionAroundEveryRoundingDecision) {
  // Every upper half with lower halves at and around the tie.
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : lows) check(hi << 16 | lo, 0x3F800000u);
  EXPECT_EQ(mismatches(), 0u);
}

// ---- fp32_add ----

class Fp32AddRtlTest : public FpFixture<Vfp32_add> {
 protected:
  void check(fp32 a, fp32 b) {
    dut().a_i = a;
    dut().b_i = b;
    eval();
    const fp32 want = tpu::fp32_add(a, b);
    if (dut().sum_o != want) mismatch("fp32_add(0x%08x, 0x%08x): RTL 0x%08x, C++ 0x%08x", a, b, dut().sum_o, want);
  }
};

TEST_F(Fp32AddRtlTest, SpecialPairs) {
  const auto v = tpu::fp_cases::fp32_specials();
  for (fp32 a : v)
    for (fp32 b : v) check(a, b);
  EXPECT_EQ(mismatches(), 0u) << v.size() * v.size() << " pairs";
}

TEST_F(Fp32AddRtlTest, EveryExponentPairNearCancellation) {
  // All 254 x 254 normal exponents, signs both ways, with fractions at the
  // edges: alignment by every shift, carries and cancellations.
  const uint32_t fracs[] = {0x000000u, 0x000001u, 0x400000u, 0x7FFFFFu, 0x3FFFFFu, 0x555555u};
  for (uint32_t ea = 1; ea < 255; ++ea)
    for (uint32_t eb = 1; eb < 255; ++eb)
      for (uint32_t fa : fracs)
        for (uint32_t fb : {0x000000u, 0x7FFFFFu, fa, fa ^ 1u}) {
          check((ea << 23) | fa, (eb << 23) | fb);
          check((ea << 23) | fa, 0x80000000u | (eb << 23) | fb);
        }
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(Fp32AddRtlTest, RandomPairsBiasedToHardCases) {
  tpu::fp_cases::AddCases gen(rng()());
  for (int i = 0; i < 10'000'000; ++i) {
    const auto [a, b] = gen.next();
    check(a, b);
  }
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(Fp32AddRtlTest, SumsOfProducts) {
  // The operands the array adds: products of bf16 values, partial sums of them.
  for (int i = 0; i < 1'000'000; ++i) {
    const fp32 p = tpu::bf16_mul(bf16(rng()()), bf16(rng()()));
    const fp32 q = tpu::bf16_mul(bf16(rng()()), bf16(rng()()));
    check(p, (i & 1) ? q : (p ^ 0x80000000u) + uint32_t(rng()() % 5) * 0x10000u);
  }
  EXPECT_EQ(mismatches(), 0u);
}

// ---- mxu_mac, bf16 datapath ----

// The MAC's registers as the C++ reference sees them (mxu_mac.sv's schedule).
struct MacModel {
  bf16 a_q = 0, w_q = 0;
  fp32 prod_q = 0, psum_q = 0;
  void tick(bool en, bf16 a, bf16 w, fp32 psum_in) {
    if (!en) return;
    psum_q = tpu::fp32_add(psum_in, prod_q);
    prod_q = tpu::bf16_mul(a_q, w_q);
    a_q = a;
    w_q = w;
  }
};

class MacRtlTest : public FpFixture<Vmxu_mac_bf16> {
 protected:
  // Operands as a column would see them: bf16 values of assorted magnitudes
  // and a few specials.
  bf16 operand() {
    const uint64_t r = rng()();
    if ((r & 15) == 0) {
      static const auto specials = tpu::fp_cases::bf16_specials();
      return specials[(r >> 8) % specials.size()];
    }
    return tpu::float_to_bf16(std::ldexp(float(int32_t(r >> 32)) / 2147483648.0f, int(r >> 8 & 31) - 16));
  }
  fp32 psum() {
    const uint64_t r = rng()();
    if ((r & 31) == 0) {
      static const auto specials = tpu::fp_cases::fp32_specials();
      return specials[(r >> 8) % specials.size()];
    }
    return tpu::float_bits(std::ldexp(float(int32_t(r >> 32)) / 2147483648.0f, int(r >> 8 & 31) - 12));
  }
};

TEST_F(MacRtlTest, ThreeCycleSchedule) {
  // One product: operands in cycle 0, partial sum in cycle 2, result in
  // psum_o after the third edge and not before.
  dut().en_i = 1;
  dut().psum_i = 0xDEADBEEFu;
  for (int i = 0; i < 4; ++i) tick();  // flush the pipeline with 0 * 0
  const fp32 before = dut().psum_o;
  dut().a_i = 0x4040;  // 3
  dut().w_i = 0x4080;  // 4
  tick();              // cycle 0: operand registers
  dut().a_i = 0;
  dut().w_i = 0;
  EXPECT_EQ(dut().psum_o, before);
  tick();  // cycle 1: product register
  EXPECT_EQ(dut().psum_o, before);
  dut().psum_i = tpu::float_bits(0.5f);
  tick();  // cycle 2: psum_o = psum_i + 12
  EXPECT_EQ(dut().psum_o, tpu::float_bits(12.5f));
  dut().psum_i = tpu::float_bits(-1.0f);
  tick();  // the next (zero) product
  EXPECT_EQ(dut().psum_o, tpu::float_bits(-1.0f));
}

TEST_F(MacRtlTest, StreamWithEnableHolds) {
  // A new operand pair and partial sum every cycle; en_i drops at random and
  // every stage must hold while it is low.
  MacModel ref;
  int enabled = 0;
  for (int i = 0; i < 1'000'000; ++i) {
    const bool en = (rng()() % 4) != 0;
    const bf16 a = operand(), w = operand();
    const fp32 p = psum();
    dut().en_i = en;
    dut().a_i = a;
    dut().w_i = w;
    dut().psum_i = p;
    tick();
    ref.tick(en, a, w, p);
    if (en) ++enabled;
    if (enabled >= 3 && dut().psum_o != ref.psum_q)
      mismatch("cycle %d (en %d): psum_o RTL 0x%08x, model 0x%08x", i, int(en), dut().psum_o, ref.psum_q);
  }
  EXPECT_EQ(mismatches(), 0u);
}

TEST_F(MacRtlTest, ColumnByFeedback) {
  // A single MAC with psum_o fed back into psum_i sums a column top to
  // bottom exactly as the array does: operands of row r in cycle t+r, the
  // partial sum of row r-1 (or +0 for row 0) at psum_i in cycle t+r+2.
  for (int t = 0; t < 20000; ++t) {
    const size_t n = 1 + rng()() % 32;
    std::vector<bf16> a(n), w(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = operand();
      w[i] = operand();
    }
    dut().en_i = 1;
    for (size_t cyc = 0; cyc < n + 2; ++cyc) {
      dut().a_i = cyc < n ? a[cyc] : 0;
      dut().w_i = cyc < n ? w[cyc] : 0;
      dut().psum_i = cyc == 2 ? 0u : dut().psum_o;  // row 0 adds to +0
      if (rng()() % 3 == 0) {  // a held cycle on the way changes nothing
        dut().en_i = 0;
        tick();
        dut().en_i = 1;
      }
      tick();
    }
    const fp32 want = tpu::bf16_dot_column(a.data(), w.data(), n);
    if (dut().psum_o != want) mismatch("column of %zu: RTL 0x%08x, C++ 0x%08x", n, dut().psum_o, want);
  }
  EXPECT_EQ(mismatches(), 0u);
}

}  // namespace
