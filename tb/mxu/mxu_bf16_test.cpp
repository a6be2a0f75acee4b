// SPDX-License-Identifier: Apache-2.0
// The MXU with the bf16 datapath and with the mixed one (int8 or bf16 per
// input row), at N = 4 and 8, through the test top tb/mxu/mxu_fp.sv
// (-GMixed=1 for the mixed one). Every output word is compared bit for bit
// with the C++ reference: tpu::bf16_dot_column (top to bottom from +0,
// docs/numerics.md) for bf16 rows, tpu::ref::matmul_i8 on the low 8 bits
// of every lane for int8 rows; out_last_o and out_bf16_o are checked on
// every row.
//
//   MxuBf16/MxuFpTest/<N>.*   bf16 rows on the bf16 array (ctest: MxuBf16.<test><N>)
//   MxuMixed/MxuFpTest/<N>.*  the same tests, bf16 rows on the mixed array
//   MxuMixedTest/<N>.*        int8 and bf16 tiles and rows interleaved
//
// TPU_SEED=<n> repeats a run; TPU_WAVES=1 writes an FST per test.
#include <cstdio>
#include <string>
#include <vector>

#include "Vmxu_bf16_n4.h"
#include "Vmxu_bf16_n8.h"
#include "Vmxu_both_n4.h"
#include "Vmxu_both_n8.h"
#include "mxu_driver.h"
#include "tpu/bf16.h"
#include "tpu/ref_matmul.h"
#include "verilated_fixture.h"

namespace {

using tb::MxuLaneJob;
using tpu::bf16;
using tpu::fp32;

struct Bf16N4 { using Model = Vmxu_bf16_n4; static constexpr int N = 4; static constexpr bool kMixed = false; };
struct Bf16N8 { using Model = Vmxu_bf16_n8; static constexpr int N = 8; static constexpr bool kMixed = false; };
struct MixedN4 { using Model = Vmxu_both_n4; static constexpr int N = 4; static constexpr bool kMixed = true; };
struct MixedN8 { using Model = Vmxu_both_n8; static constexpr int N = 8; static constexpr bool kMixed = true; };

// Values that exercise every rule of docs/numerics.md.
const std::vector<bf16> kSpecials = {
    0x0000, 0x8000,                  // +0, -0
    0x7F80, 0xFF80,                  // +inf, -inf
    0x7FC0, 0xFFC1, 0x7F81, 0xFFFF,  // NaNs (quiet, signalling, payloads)
    0x0001, 0x807F, 0x0040,          // subnormals (read as zero)
    0x0080, 0x8080, 0x00FF,          // smallest normals
    0x7F7F, 0xFF7F, 0x7F00, 0x7EFF,  // largest finite, 2^127
    0x3F80, 0xBF80, 0x4000, 0x3F00,  // 1, -1, 2, 0.5
    0x3F81, 0xBF81, 0x3FFF, 0x4B80,  // 1 + 2^-7, just below 2, 2^24
    0x3380, 0xB380,                  // 2^-24: rounding ties against 1
};

template <class Cfg>
class MxuFpTest : public tb::VerilatedFixture<typename Cfg::Model> {
 protected:
  static constexpr int N = Cfg::N;
  using Driver = tb::MxuDriver<typename Cfg::Model, N, 16>;

  // A bf16 value from a generator biased to the interesting cases: mostly
  // moderate exponents (rich rounding, cancellation), sometimes any exponent
  // (overflow, flush), any 16 bits, or a special value.
  bf16 random_bf16() {
    const int64_t kind = this->rand_int(0, 99);
    const bf16 sign = bf16(this->rand_int(0, 1) << 15);
    const bf16 frac = bf16(this->rand_int(0, 127));
    if (kind < 60) return bf16(sign | bf16((127 + this->rand_int(-6, 6)) << 7) | frac);
    if (kind < 80) return bf16(sign | bf16(this->rand_int(1, 254) << 7) | frac);
    if (kind < 90) return bf16(this->rand_int(0, 0xFFFF));
    return special();
  }
  bf16 special() { return kSpecials[size_t(this->rand_int(0, int64_t(kSpecials.size()) - 1))]; }
  uint16_t random_int8_lane() { return uint16_t(this->rand_int(0, 0xFFFF)); }  // upper 8 bits: noise

  // A tile and m rows; each row bf16 with probability p_bf16 (the bf16
  // array ignores the flag and computes every row as bf16).
  MxuLaneJob random_job(int m, double p_bf16 = 1.0) {
    MxuLaneJob j;
    for (int i = 0; i < N * N; ++i) j.weights.push_back(random_bf16());
    for (int r = 0; r < m; ++r) {
      const bool bf = !Cfg::kMixed || this->sim().chance(p_bf16);
      j.bf16.push_back(bf);
      for (int k = 0; k < N; ++k) j.rows.push_back(bf ? random_bf16() : random_int8_lane());
    }
    return j;
  }

  // The reference result of one job, row-major, and the expected out_bf16_o.
  static std::vector<uint32_t> reference(const MxuLaneJob& j, std::vector<bool>& fmt) {
    const int m = int(j.rows.size()) / N;
    std::vector<uint32_t> out;
    tpu::MatrixI8 w8(N, N);
    for (int i = 0; i < N * N; ++i) w8.data[size_t(i)] = int8_t(uint8_t(j.weights[size_t(i)]));
    for (int r = 0; r < m; ++r) {
      const bool bf = !Cfg::kMixed || (!j.bf16.empty() && j.bf16[size_t(r)]);
      fmt.push_back(bf);
      const uint16_t* a = &j.rows[size_t(r) * N];
      if (bf) {
        for (int c = 0; c < N; ++c) {
          bf16 wcol[N];
          for (int k = 0; k < N; ++k) wcol[k] = j.weights[size_t(k) * N + size_t(c)];
          out.push_back(tpu::bf16_dot_column(a, wcol, N));
        }
      } else {
        tpu::MatrixI8 a8(1, N);
        for (int k = 0; k < N; ++k) a8.data[size_t(k)] = int8_t(uint8_t(a[k]));
        const auto c8 = tpu::ref::matmul_i8(a8, w8);
        for (int c = 0; c < N; ++c) out.push_back(uint32_t(c8.data[size_t(c)]));
      }
    }
    return out;
  }

  // Runs the jobs and checks every output word, last flag and format flag.
  tb::MxuRecord run_and_check(const std::vector<MxuLaneJob>& jobs, const tb::MxuPacing& pace) {
    Driver drv(this->sim());
    tb::MxuRecord rec = drv.run(jobs, pace);
    EXPECT_FALSE(rec.timed_out) << "MXU stopped producing rows after " << rec.out_fire.size();
    size_t row = 0;
    int reported = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      std::vector<bool> fmt;
      const std::vector<uint32_t> want = reference(jobs[j], fmt);
      const int m = int(fmt.size());
      for (int r = 0; r < m; ++r, ++row) {
        for (int c = 0; c < N; ++c) {
          const size_t i = size_t(r) * N + size_t(c);
          if (rec.raw[j][i] != want[i] && reported++ < 10)
            ADD_FAILURE() << "job " << j << " row " << r << " column " << c << " ("
                          << (fmt[size_t(r)] ? "bf16" : "int8") << "): got 0x" << std::hex
                          << rec.raw[j][i] << ", want 0x" << want[i] << std::dec;
        }
        if (row < rec.out_last.size()) {
          EXPECT_EQ(rec.out_last[row], r == m - 1) << "last flag of output row " << row;
          EXPECT_EQ(rec.out_bf16[row], fmt[size_t(r)]) << "format flag of output row " << row;
        }
      }
    }
    EXPECT_EQ(drv.drain_extra(4 * N), 0) << "MXU produced rows nobody sent";
    return rec;
  }

  // Output cycles without a row, input gaps and latency of a gap-free run.
  void expect_no_bubble(const tb::MxuRecord& rec, const char* what) {
    const uint64_t span = rec.out_fire.back() - rec.out_fire.front() + 1;
    const uint64_t idle = span - rec.out_fire.size();
    uint64_t in_gaps = 0;
    for (size_t i = 1; i < rec.in_fire.size(); ++i) in_gaps += rec.in_fire[i] - rec.in_fire[i - 1] - 1;
    const uint64_t latency = rec.out_fire.front() - rec.in_fire.front();
    std::printf("[ MXU %s N=%d ] %zu output rows in %llu cycles, %llu idle output cycles, "
                "%llu idle input cycles, latency %llu cycles\n",
                what, N, rec.out_fire.size(), (unsigned long long)span, (unsigned long long)idle,
                (unsigned long long)in_gaps, (unsigned long long)latency);
    EXPECT_EQ(idle, 0u) << "output bubbles";
    EXPECT_EQ(in_gaps, 0u) << "input stalls";
    EXPECT_EQ(latency, uint64_t(2 * N + 3));
  }
};

// Suites are named after the array size, as in mxu_test.
struct ConfigName {
  template <class T>
  static std::string GetName(int) {
    return std::to_string(T::N);
  }
};

// ---- bf16 rows, on the bf16 array and on the mixed one ----

TYPED_TEST_SUITE_P(MxuFpTest);

TYPED_TEST_P(MxuFpTest, RandomTilesWithRandomPacing) {
  constexpr int N = TestFixture::N;
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 200; ++t) jobs.push_back(this->random_job(int(this->rand_int(1, 3 * N))));
  this->run_and_check(jobs, {.wgt_gap = 0.3, .in_gap = 0.3, .out_stall = 0.3});
}

// Tiles drawn mostly from the special values, and structured tiles: NaN and
// infinities of both signs in one column, products that overflow, products
// and sums that flush, exact cancellation, the largest finite values.
TYPED_TEST_P(MxuFpTest, SpecialValues) {
  constexpr int N = TestFixture::N;
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 200; ++t) {  // specials with probability 0.05 to 0.7 per tile
    const double p = 0.05 + 0.65 * double(t % 8) / 7.0;
    MxuLaneJob j = this->random_job(N);
    for (auto& v : j.weights)
      if (this->sim().chance(p)) v = this->special();
    for (auto& v : j.rows)
      if (this->sim().chance(p)) v = this->special();
    jobs.push_back(std::move(j));
  }
  auto filled = [n = size_t(N)](bf16 w, bf16 a, int m) {
    return MxuLaneJob{std::vector<uint16_t>(n * n, w), std::vector<uint16_t>(size_t(m) * n, a),
                      std::vector<uint8_t>(size_t(m), 1)};
  };
  jobs.push_back(filled(0x7F7F, 0x3F80, 2));  // max finite summed: overflows to +inf
  jobs.push_back(filled(0xFF7F, 0x7F7F, 2));  // product overflow: -inf
  jobs.push_back(filled(0x3F00, 0x0080, 2));  // 2^-127 products flush to zero
  jobs.push_back(filled(0x3F80, 0x807F, 2));  // subnormal activations: (-0)s summed from +0
  jobs.push_back(filled(0x0000, 0x7F80, 2));  // inf * 0 = NaN
  // Column c: W[k][c] = +-w alternating by k, so a row with equal pairs
  // cancels exactly (+0); column 1 starts with a +inf above a -inf.
  MxuLaneJob cancel{std::vector<uint16_t>(size_t(N) * N), {}, {}};
  for (int k = 0; k < N; ++k)
    for (int c = 0; c < N; ++c)
      cancel.weights[size_t(k) * N + size_t(c)] = bf16(((k % 2) ? 0x8000 : 0) | (0x3F80 + 0x81 * c));
  cancel.weights[1] = 0x7F80;
  cancel.weights[size_t(N) + 1] = 0x7F80;  // +inf * a + (-(+inf) * a) = NaN
  for (int m = 0; m < N; ++m) {
    for (int k = 0; k < N; k += 2) {
      const bf16 a = this->random_bf16() & 0x7FFF;
      cancel.rows.push_back(a);
      cancel.rows.push_back(a);
    }
    cancel.bf16.push_back(1);
  }
  jobs.push_back(cancel);
  const tb::MxuRecord rec = this->run_and_check(jobs, {.out_stall = 0.2});
  // What the outputs were, to show the cases are reached.
  uint64_t nan = 0, inf = 0, zero = 0, finite = 0;
  for (const auto& job : rec.raw)
    for (uint32_t v : job) {
      if (tpu::fp32_is_nan(v)) ++nan;
      else if (tpu::fp32_is_inf(v)) ++inf;
      else if ((v & 0x7FFFFFFFu) == 0) ++zero;
      else ++finite;
      EXPECT_FALSE(tpu::fp32_is_subnormal(v)) << "a subnormal left the array";
      EXPECT_TRUE(!tpu::fp32_is_nan(v) || v == tpu::kFp32CanonicalNan) << "a non-canonical NaN";
    }
  std::printf("[ MXU bf16 N=%d ] special-value outputs: %llu NaN, %llu inf, %llu zero, %llu finite\n", N,
              (unsigned long long)nan, (unsigned long long)inf, (unsigned long long)zero,
              (unsigned long long)finite);
}

// Tiles used for one or two rows, back to back with no gaps, then with weight
// gaps and output stalls: every weight swap happens mid-stream, next to a bank
// that is still loading or was just retired.
TYPED_TEST_P(MxuFpTest, WeightSwapsBackToBack) {
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 100; ++t) jobs.push_back(this->random_job(1 + t % 2));
  this->run_and_check(jobs, {});
  std::vector<MxuLaneJob> jobs2;
  for (int t = 0; t < 100; ++t) jobs2.push_back(this->random_job(int(this->rand_int(1, 3))));
  this->run_and_check(jobs2, {.wgt_gap = 0.2, .out_stall = 0.5});
}

// The array's enable held low at random: the output is stalled most of the
// time, so the spill register fills and en falls with rows at every stage.
TYPED_TEST_P(MxuFpTest, StallsHoldEveryStage) {
  constexpr int N = TestFixture::N;
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 50; ++t) jobs.push_back(this->random_job(int(this->rand_int(N, 3 * N))));
  this->run_and_check(jobs, {.out_stall = 0.7});
  std::vector<MxuLaneJob> jobs2;
  for (int t = 0; t < 50; ++t) jobs2.push_back(this->random_job(int(this->rand_int(1, 2 * N))));
  this->run_and_check(jobs2, {.wgt_gap = 0.5, .in_gap = 0.5, .out_stall = 0.6});
}

// Same throughput and latency as int8: no bubble between tiles of N rows.
TYPED_TEST_P(MxuFpTest, ThroughputNoBubbleBetweenTiles) {
  constexpr int N = TestFixture::N;
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 8; ++t) jobs.push_back(this->random_job(N));
  this->expect_no_bubble(this->run_and_check(jobs, {}), "bf16");
}

REGISTER_TYPED_TEST_SUITE_P(MxuFpTest, RandomTilesWithRandomPacing, SpecialValues,
                            WeightSwapsBackToBack, StallsHoldEveryStage,
                            ThroughputNoBubbleBetweenTiles);
using Bf16Configs = ::testing::Types<Bf16N4, Bf16N8>;
using MixedConfigs = ::testing::Types<MixedN4, MixedN8>;
INSTANTIATE_TYPED_TEST_SUITE_P(MxuBf16, MxuFpTest, Bf16Configs, ConfigName);
INSTANTIATE_TYPED_TEST_SUITE_P(MxuMixed, MxuFpTest, MixedConfigs, ConfigName);

// ---- the mixed array: int8 and bf16 interleaved ----

template <class Cfg>
class MxuMixedTest : public MxuFpTest<Cfg> {};
TYPED_TEST_SUITE(MxuMixedTest, MixedConfigs, ConfigName);

// Tiles alternate between int8 and bf16 with no gap: each format switch
// meets the previous tile's rows still in the array, with no bubble.
TYPED_TEST(MxuMixedTest, AlternatingTilesNoBubble) {
  constexpr int N = TestFixture::N;
  for (int rows : {N, 2 * N}) {
    std::vector<MxuLaneJob> jobs;
    for (int t = 0; t < 8; ++t) jobs.push_back(this->random_job(rows, (t % 2) ? 1.0 : 0.0));
    this->expect_no_bubble(this->run_and_check(jobs, {}), "int8/bf16");
  }
}

// Every row picks its format at random, within tiles and across swaps (int8
// rows read the low byte of each weight lane); random gaps and stalls.
TYPED_TEST(MxuMixedTest, InterleavedRowsRandomPacing) {
  constexpr int N = TestFixture::N;
  std::vector<MxuLaneJob> jobs;
  for (int t = 0; t < 200; ++t) jobs.push_back(this->random_job(int(this->rand_int(1, 3 * N)), 0.5));
  this->run_and_check(jobs, {.wgt_gap = 0.3, .in_gap = 0.3, .out_stall = 0.3});
  std::vector<MxuLaneJob> jobs2;
  for (int t = 0; t < 100; ++t) jobs2.push_back(this->random_job(int(this->rand_int(1, 2)), 0.5));
  this->run_and_check(jobs2, {});
}

// The int8 extremes of mxu_test's ExtremeValues on the mixed array, with
// noise in the upper byte of every lane, next to bf16 rows.
TYPED_TEST(MxuMixedTest, Int8ExtremesBesideBf16) {
  constexpr int N = TestFixture::N;
  auto int8_job = [this](int8_t w, int8_t a, int m) {
    MxuLaneJob j;
    for (int i = 0; i < N * N; ++i) j.weights.push_back(uint16_t((this->rand_int(0, 255) << 8) | uint8_t(w)));
    for (int i = 0; i < m * N; ++i) j.rows.push_back(uint16_t((this->rand_int(0, 255) << 8) | uint8_t(a)));
    j.bf16.assign(size_t(m), 0);
    return j;
  };
  std::vector<MxuLaneJob> jobs;
  jobs.push_back(int8_job(-128, -128, N));  // largest positive sum
  jobs.push_back(this->random_job(2));
  jobs.push_back(int8_job(127, -128, N));   // largest negative sum
  jobs.push_back(int8_job(127, 127, 1));
  jobs.push_back(this->random_job(1));
  this->run_and_check(jobs, {.out_stall = 0.2});
}

}  // namespace
