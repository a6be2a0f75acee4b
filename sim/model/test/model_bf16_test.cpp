// SPDX-License-Identifier: Apache-2.0
// The reference model's bf16 mode (docs/numerics.md, "bf16 through the core"),
// and the GEMM planner's bf16 plans (tpu/plan/gemm.h) run on it:
// the bf16 forms of RHM/WHM (WIDE), RW, MMC (BF16), ACT (F32) and VOP (BF16)
// in cores whose datapath is bf16 or both, and their absence from int8 cores.
// GEMM results are compared bit for bit with bf16_gemm::reference, written
// from the documented order of additions; ACT and VOP results with values
// worked out by hand or with host float arithmetic followed by the rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "bf16_gemm.h"
#include "seeded_test.h"
#include "tpu/bf16.h"
#include "tpu/isa.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"
#include "tpu_model.h"

namespace tpu {
namespace isa {
void PrintTo(ErrCode e, std::ostream* os);  // model_test.cpp: error codes by name
}  // namespace isa
// Test parameters by their fields.
void PrintTo(const CoreConfig& c, std::ostream* os) {
  *os << "n=" << c.n << " ub_rows=" << c.ub_rows << " acc_rows=" << c.acc_rows
      << " datapath=" << (c.datapath == Datapath::kBoth ? "both" : c.datapath == Datapath::kBf16 ? "bf16" : "int8");
}
}  // namespace tpu

namespace {

using namespace tpu::isa;
using tpu::bf16;
using tpu::CoreConfig;
using tpu::Datapath;
using tpu::fp32;
using tpu::HostMemory;
using tpu::Matrix;
using tpu::model::RunResult;
using tpu::model::TpuModel;
namespace gemm = tpu::model::bf16_gemm;
using gemm::MatrixBf16;
using gemm::MatrixF32;

constexpr fp32 kNan = tpu::kFp32CanonicalNan;
constexpr fp32 kInf = 0x7F800000u, kNegInf = 0xFF800000u;

bf16 bf(float f) { return tpu::float_to_bf16(f); }
fp32 f32(float f) { return tpu::float_bits(f); }
std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// The cores the tests run on: a tiny one with small memories, the int8
// configurations' sizes with the bf16 and both datapaths.
const CoreConfig kTinyBoth{.n = 4, .ub_rows = 256, .acc_rows = 128, .imem_depth = 256,
                           .wgt_fifo_tiles = 4, .datapath = Datapath::kBoth};
const CoreConfig kSmallBf16{.n = 8, .wgt_fifo_tiles = 8, .datapath = Datapath::kBf16};
const CoreConfig kDefaultBoth{.n = 16, .datapath = Datapath::kBoth};

std::string config_name(const CoreConfig& c) {
  const char* dp = c.datapath == Datapath::kBoth ? "both" : c.datapath == Datapath::kBf16 ? "bf16" : "int8";
  return "n" + std::to_string(c.n) + "_" + dp;
}

class Bf16Test : public tpu::test::SeededTest {
 protected:
  void SetUp() override {
    SeededTest::SetUp();
    use_config(kDefaultBoth);
  }

  void use_config(const CoreConfig& c) {
    core_ = c;
    model_ = std::make_unique<TpuModel>(c);
    mem_ = HostMemory{};
  }
  TpuModel& model() { return *model_; }
  int n() const { return core_.n; }

  RunResult run(const std::vector<Instr>& program) {
    model().load_program(0, program);
    return model().run(0, mem_);
  }
  void run_ok(const std::vector<Instr>& program) {
    const RunResult r = run(program);
    ASSERT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc << ": " << disassemble(model().imem(r.err_pc))
                                   << " (seed " << seed_ << ")";
  }
  ErrCode run_err(const std::vector<Instr>& program, uint32_t* pc = nullptr) {
    const RunResult r = run(program);
    if (pc) *pc = r.err_pc;
    return r.err;
  }

  // A bf16 drawn from N(0, 1), rounded to nearest even.
  bf16 rand_bf16() { return bf(std::normal_distribution<float>()(rng_)); }
  MatrixBf16 random_matrix(int rows, int cols) {
    MatrixBf16 m(rows, cols);
    for (bf16& v : m.data) v = rand_bf16();
    return m;
  }

  // Runs A x W through bf16_gemm's programs; C as fp32 bits.
  MatrixF32 gemm_on_model(const MatrixBf16& a, const MatrixBf16& w,
                          gemm::Output output = gemm::Output::kRawF32) {
    const gemm::Programs p = gemm::build(mem_, a, w, core_, output);
    for (const std::vector<Instr>& program : p.programs) {
      const RunResult r = run(program);
      EXPECT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc << ": " << disassemble(model().imem(r.err_pc));
      if (r.err != ErrCode::kOk) break;
    }
    EXPECT_EQ(model().pending_tiles(), 0u);
    return gemm::read_result(mem_, p);
  }

  // Puts wide rows (n bf16 lanes each) into UB rows first, first + 1, ...
  void load_wide(uint32_t first, const std::vector<std::vector<bf16>>& rows) {
    constexpr uint64_t kStage = 0x7000000;
    for (size_t i = 0; i < rows.size(); ++i)
      for (int j = 0; j < n(); ++j) mem_.write16(kStage + (i * n() + j) * 2, rows[i][size_t(j)]);
    run_ok({rhm(first, uint32_t(rows.size()), kStage, uint32_t(2 * n()), true), halt()});
  }

  // ACC row `row` = (or +=, accumulate) the wide row a times the n x n bf16
  // tile w (row-major), by MMC BF16. Uses UB rows 200, 201.
  void mmc_row(uint32_t row, const std::vector<bf16>& a, const std::vector<bf16>& w, bool accumulate) {
    constexpr uint64_t kTile = 0x7100000;
    for (size_t i = 0; i < w.size(); ++i) mem_.write16(kTile + i * 2, w[i]);
    load_wide(200, {a});
    run_ok({rw(kTile, 1, uint32_t(2 * n()), true), mmc(200, row, 1, accumulate, true, true), halt()});
  }
  std::vector<bf16> identity() {
    std::vector<bf16> w(size_t(n() * n()), 0);
    for (int r = 0; r < n(); ++r) w[size_t(r * n() + r)] = bf(1.0f);
    return w;
  }
  // One fp32 value per lane into ACC row `row`: hi (a bf16 row) times the
  // identity, then lo added, so ACC = hi + lo rounded (exact where the
  // tests need it).
  void set_acc(uint32_t row, const std::vector<bf16>& hi, const std::vector<bf16>& lo) {
    mmc_row(row, hi, identity(), false);
    mmc_row(row, lo, identity(), true);
  }

  std::vector<bf16> lanes(std::initializer_list<float> values) {
    std::vector<bf16> v(size_t(n()), 0);
    size_t j = 0;
    for (float f : values) v.at(j++) = bf(f);
    return v;
  }

  CoreConfig core_;
  std::unique_ptr<TpuModel> model_;
  HostMemory mem_;
};

// Tests that run on every bf16-capable core.
class Bf16CoreTest : public Bf16Test, public ::testing::WithParamInterface<CoreConfig> {
 protected:
  void SetUp() override {
    Bf16Test::SetUp();
    use_config(GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(Cores, Bf16CoreTest, ::testing::Values(kTinyBoth, kSmallBf16, kDefaultBoth),
                         [](const auto& info) { return config_name(info.param); });

// ---- GEMM --------------------------------------------------------------------------------

TEST_P(Bf16CoreTest, GemmEqualsTheDocumentedOrderOfAdditions) {
  const int N = n();
  struct Shape {
    int m, k, j;
  };
  for (const Shape& s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{N, N, N}, Shape{17, 33, 5},
                         Shape{40, 48, 20}, Shape{2, 3 * N + 1, N + 3}, Shape{13, 2 * N, 2 * N - 1}}) {
    SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.j) +
                 " seed " + std::to_string(seed_));
    const MatrixBf16 a = random_matrix(s.m, s.k), w = random_matrix(s.k, s.j);
    const MatrixF32 want = gemm::reference(a, w, N);
    EXPECT_EQ(gemm_on_model(a, w), want) << "fp32 results (ACT F32 RAW)";
    // Rounded to bf16 by ACT F32, written by WHM WIDE.
    MatrixF32 rounded = want;
    for (fp32& v : rounded.data) v = tpu::bf16_to_fp32(tpu::fp32_to_bf16(v));
    EXPECT_EQ(gemm_on_model(a, w, gemm::Output::kBf16), rounded) << "bf16 results";
  }
}

TEST_P(Bf16CoreTest, LongKAccumulatesPassByPassInAcc) {
  const int N = n();
  for (int k : {1, 2, N - 1, N + 1, 5 * N + 3, 1000, 4099}) {
    SCOPED_TRACE("K = " + std::to_string(k) + ", seed " + std::to_string(seed_));
    const MatrixBf16 a = random_matrix(3, k), w = random_matrix(k, N + 1);
    EXPECT_EQ(gemm_on_model(a, w), gemm::reference(a, w, N));
  }
}

TEST_P(Bf16CoreTest, ColumnsStartFromZeroAndPassesAddInOrder) {
  // Not a sequential sum over K: A row [1, 0.., 2^100, -2^100, 0..] with
  // W = ones. One loop over K gives (1 + 2^100) - 2^100 = 0; the MXU sums
  // the first block (1) and the second (2^100 - 2^100 = +0) separately: 1.
  const int N = n();
  MatrixBf16 a(1, 2 * N, 0), w(2 * N, 1, bf(1.0f));
  a.at(0, 0) = bf(1.0f);
  a.at(0, N) = bf(0x1p100f);
  a.at(0, N + 1) = bf(-0x1p100f);
  EXPECT_EQ(gemm_on_model(a, w).at(0, 0), f32(1.0f));
  // Within a column the order is top to bottom: 2^100 + 1 - 2^100 = 0.
  MatrixBf16 b(1, 3, 0), ones(3, 1, bf(1.0f));
  b.at(0, 0) = bf(0x1p100f);
  b.at(0, 1) = bf(1.0f);
  b.at(0, 2) = bf(-0x1p100f);
  EXPECT_EQ(gemm_on_model(b, ones).at(0, 0), 0u);
}

TEST_P(Bf16CoreTest, SpecialValuesFollowTheRules) {
  const int N = n();
  const bf16 nan = 0x7FC0, snan = 0xFF81, inf = 0x7F80, ninf = 0xFF80, max = 0x7F7F, sub = 0x0001,
             nsub = 0x807F, one = bf(1.0f), mone = bf(-1.0f), two = bf(2.0f), nz = 0x8000;
  // Each row of A against W = [[1, 0], [1, 0], ...] (column 0 ones, column 1 zeros), K = 3.
  MatrixBf16 w(3, 2, 0);
  for (int k = 0; k < 3; ++k) w.at(k, 0) = one;
  struct Row {
    const char* what;
    std::vector<bf16> a;
    fp32 col0, col1;  // A row times the ones column, times the zeros column
  };
  const Row rows[] = {
      {"NaN propagates", {one, nan, two}, kNan, kNan},
      {"a signalling negative NaN is the canonical NaN", {snan, one, one}, kNan, kNan},
      {"inf times zero is NaN, times one inf", {inf, one, one}, kInf, kNan},
      {"inf - inf is NaN", {inf, ninf, one}, kNan, kNan},
      {"-inf", {ninf, mone, two}, kNegInf, kNan},
      {"max finite stays", {max, 0, 0}, 0x7F7F0000u, 0},
      {"max + max overflows to inf", {max, max, 0}, kInf, 0},
      {"-max - max overflows to -inf", {bf16(max | 0x8000), bf16(max | 0x8000), one}, kNegInf, 0},
      {"exact cancellation is +0", {bf(3.5f), bf(-3.5f), 0}, 0, 0},
      {"cancellation of -0 products is +0 too", {nz, nz, nz}, 0, 0},
      {"subnormal inputs are zero", {sub, nsub, one}, f32(1.0f), 0},
      // -1.5 * 2^-126 + 2^-126 = -2^-127 is flushed to -0; the next row's +0
      // product (0 * 1, and the zero padding) makes it +0.
      {"a tiny sum is flushed", {bf16(0x80C0), bf16(0x0080), 0}, 0, 0},
  };
  MatrixBf16 a(int(std::size(rows)), 3);
  for (size_t i = 0; i < std::size(rows); ++i)
    for (int k = 0; k < 3; ++k) a.at(int(i), k) = rows[i].a[size_t(k)];
  const MatrixF32 got = gemm_on_model(a, w);
  EXPECT_EQ(got, gemm::reference(a, w, N));
  for (size_t i = 0; i < std::size(rows); ++i) {
    SCOPED_TRACE(rows[i].what);
    EXPECT_EQ(hex(got.at(int(i), 0)), hex(rows[i].col0));
    EXPECT_EQ(hex(got.at(int(i), 1)), hex(rows[i].col1));
  }
  // At the bottom of a column (K = N, the values in the last rows) a
  // flushed negative sum stays -0. A tiny negative product flushes to -0
  // too, but the +0 partial sum above it makes the sum +0.
  MatrixBf16 tail(1, N, 0), ones(N, 1, one);
  tail.at(0, N - 2) = bf16(0x80C0);
  tail.at(0, N - 1) = bf16(0x0080);
  MatrixF32 bottom = gemm_on_model(tail, ones);
  EXPECT_EQ(bottom, gemm::reference(tail, ones, N));
  EXPECT_EQ(hex(bottom.at(0, 0)), hex(0x80000000u));
  tail = MatrixBf16(1, N, 0);
  tail.at(0, N - 1) = bf(-0x1p-70f);
  ones.at(N - 1, 0) = bf(0x1p-70f);
  bottom = gemm_on_model(tail, ones);
  EXPECT_EQ(bottom, gemm::reference(tail, ones, N));
  EXPECT_EQ(hex(bottom.at(0, 0)), hex(0));
}

TEST_P(Bf16CoreTest, RandomSpecialOperandsMatchTheReference) {
  // Operands from the special classes (and some normal values) everywhere.
  const std::vector<bf16> special = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x3F80, 0xBF80,
                                     0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x0100,
                                     0x2000, 0x5F00, 0x6000, 0xE000};
  auto pick = [&]() {
    return rng_() % 3 == 0 ? special[rng_() % special.size()] : rand_bf16();
  };
  for (int t = 0; t < 4; ++t) {
    MatrixBf16 a(9, 2 * n() + 3), w(2 * n() + 3, n() + 2);
    for (bf16& v : a.data) v = pick();
    for (bf16& v : w.data) v = rng_() % 8 == 0 ? special[rng_() % special.size()] : rand_bf16();
    EXPECT_EQ(gemm_on_model(a, w), gemm::reference(a, w, n())) << "seed " << seed_;
  }
}

// ---- Wide rows (RHM/WHM WIDE) ---------------------------------------------------------

TEST_P(Bf16CoreTest, WideRowsAreTwoUbRowsOfLittleEndianLanes) {
  const int N = n();
  constexpr uint64_t kSrc = 0x100000, kDst = 0x200000;
  const uint32_t stride = uint32_t(2 * N + 6);  // rows need not be contiguous
  std::vector<std::vector<bf16>> rows(3, std::vector<bf16>(size_t(N)));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < N; ++j) {
      rows[size_t(i)][size_t(j)] = bf16(0x1000 * (i + 1) + j);
      mem_.write16(kSrc + uint64_t(i) * stride + 2 * j, rows[size_t(i)][size_t(j)]);
    }
  run_ok({rhm(10, 3, kSrc, stride, true), whm(10, 3, kDst, stride, true), halt()});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(model().ub_wide_row(uint32_t(10 + 2 * i)), rows[size_t(i)]);
    // Lanes 0 .. N/2-1 in the first UB row, low byte first; N/2 .. N-1 in the second.
    const std::vector<int8_t> first = model().ub_row(uint32_t(10 + 2 * i));
    const std::vector<int8_t> second = model().ub_row(uint32_t(11 + 2 * i));
    EXPECT_EQ(uint8_t(first[0]), uint8_t(rows[size_t(i)][0]));
    EXPECT_EQ(uint8_t(first[1]), rows[size_t(i)][0] >> 8);
    EXPECT_EQ(uint8_t(second[0]), uint8_t(rows[size_t(i)][size_t(N / 2)]));
    for (int j = 0; j < N; ++j)
      EXPECT_EQ(mem_.read16(kDst + uint64_t(i) * stride + 2 * j), rows[size_t(i)][size_t(j)]);
  }
  EXPECT_EQ(mem_.read16(kDst + 2 * N), 0) << "the gap between rows is not written";
}

TEST_P(Bf16CoreTest, WideTransfersCountTwoUbRowsPerRowAndTwoNBytes) {
  const int N = n();
  const uint32_t last = uint32_t(core_.ub_rows);
  EXPECT_EQ(run_err({rhm(last - 4, 2, 0, uint32_t(2 * N), true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({rhm(last - 3, 2, 0, uint32_t(2 * N), true), halt()}), ErrCode::kUbRange);
  EXPECT_EQ(run_err({whm(last - 1, 1, 0, uint32_t(2 * N), true), halt()}), ErrCode::kUbRange);
  // The host span: 2N bytes per row (RHM/WHM WIDE, RW BF16).
  const auto span = host_span(rhm(0, 3, 0x1000, 100, true), 0, N);
  ASSERT_TRUE(span);
  EXPECT_EQ(span->last, 0x1000u + 2 * 100 + 2 * N - 1);
  const auto tiles = host_span(rw(0x1000, 2, uint32_t(2 * N), true), 0, N);
  EXPECT_EQ(tiles->last, 0x1000u + uint64_t(2 * N) * 2 * N - 1);
  // A memory-port error in the second row's last byte: the first row moved.
  mem_.write16(0x5000, 0x1234);
  mem_.add_fault(0x5000 + 2 * N + 2 * N - 1, 1);
  uint32_t pc = 0;
  EXPECT_EQ(run_err({rhm(20, 2, 0x5000, uint32_t(2 * N), true), halt()}, &pc), ErrCode::kMemFault);
  EXPECT_EQ(model().ub_wide_row(20)[0], 0x1234);
  // DMA windows see the whole span.
  mem_.clear_faults();
  model().set_windows(std::vector<tpu::Window>{{.base = 0x6000, .len = uint64_t(2 * N), .access = tpu::kWindowRead}});
  EXPECT_EQ(run_err({rhm(0, 1, 0x6000, 0, true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({rhm(0, 1, 0x6001, 0, true), halt()}), ErrCode::kMemFault);
}

// ---- Weight tiles and their format (RW BF16, MMC BF16, WGT_FORMAT) ---------------------

TEST(Bf16WeightsTest, MmcFormatMustMatchItsTile) {
  TpuModel model(kDefaultBoth);
  HostMemory mem;
  auto run = [&](const std::vector<Instr>& program) {
    model.load_program(0, program);
    return model.run(0, mem);
  };
  struct Case {
    const char* what;
    std::vector<Instr> program;
    ErrCode err;
    uint32_t pc;
  };
  const Case cases[] = {
      {"int8 tile, MMC BF16", {rw(0, 1, 16), mmc(0, 0, 1, false, true, true)}, ErrCode::kWgtFormat, 1},
      {"bf16 tile, int8 MMC", {rw(0, 1, 32, true), mmc(0, 0, 1, false, true)}, ErrCode::kWgtFormat, 1},
      {"the second tile's format",
       {rw(0, 1, 32, true), rw(0, 1, 16), mmc(0, 0, 1, false, true, true), mmc(0, 0, 1, false, true, true)},
       ErrCode::kWgtFormat, 3},
      {"MMC BF16 without a tile", {mmc(0, 0, 1, false, true, true)}, ErrCode::kNoWeights, 0},
      {"NO_WEIGHTS after the last POP",
       {rw(0, 1, 32, true), mmc(0, 0, 1, false, true, true), mmc(0, 0, 1, false, true, false)},
       ErrCode::kNoWeights, 2},
      {"UB_RANGE counts two rows per wide row, before WGT_FORMAT",
       {rw(0, 1, 16), mmc(4095, 0, 1, false, true, true)}, ErrCode::kUbRange, 1},
      {"ACC_RANGE before WGT_FORMAT", {rw(0, 1, 16), mmc(0, 1024, 1, false, true, true)},
       ErrCode::kAccRange, 1},
      {"WGT_OVERFLOW counts tiles of both formats",
       {rw(0, 10, 16), rw(0, 8, 32, true), rw(0, 1, 32, true)}, ErrCode::kWgtOverflow, 2},
      {"tiles of both formats in program order",
       {rw(0, 1, 16), rw(0, 1, 32, true), mmc(0, 0, 1, false, true), mmc(0, 0, 1, false, true, true),
        halt()},
       ErrCode::kOk, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::vector<Instr> program = c.program;
    program.push_back(halt());
    const RunResult r = run(program);
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.err_pc, c.pc);
    EXPECT_EQ(model.pending_tiles(), 0u) << "an error discards the tiles; the OK case pops them";
  }
  // Tiles keep their format across programs.
  EXPECT_EQ(run({rw(0, 1, 32, true), halt()}).err, ErrCode::kOk);
  EXPECT_TRUE(model.current_tile_is_bf16());
  EXPECT_EQ(run({mmc(0, 0, 1, false, true), halt()}).err, ErrCode::kWgtFormat);
  EXPECT_EQ(run({rw(0, 1, 32, true), halt()}).err, ErrCode::kOk);
  EXPECT_EQ(run({mmc(0, 0, 1, false, true, true), halt()}).err, ErrCode::kOk);
}

TEST(Bf16WeightsTest, BothCoreMixesInt8AndBf16Gemms) {
  // Int8 and bf16 MMCs into neighbouring ACC rows of one program: each
  // follows its own arithmetic.
  TpuModel model(kTinyBoth);
  HostMemory mem;
  const int8_t a8[4] = {1, -2, 3, 127}, w8 = -128;  // W8 = all -128
  for (int j = 0; j < 4; ++j) mem.write8(0x100 + j, uint8_t(a8[j]));
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 4; ++j) {
      mem.write8(0x200 + r * 4 + j, uint8_t(w8));
      mem.write16(0x300 + (r * 4 + j) * 2, r == j ? bf(0.5f) : 0);  // 0.5 I
      mem.write16(0x400 + j * 2, bf(float(j + 1)));                  // A = [1, 2, 3, 4]
    }
  model.load_program(0, {rhm(0, 1, 0x100, 4), rhm(2, 1, 0x400, 8, true), rw(0x200, 1, 4),
                         rw(0x300, 1, 8, true), mmc(0, 0, 1, false, true), mmc(2, 1, 1, false, true, true),
                         halt()});
  ASSERT_EQ(model.run(0, mem).err, ErrCode::kOk);
  EXPECT_EQ(model.acc_row(0), std::vector<int32_t>(4, -128 * (1 - 2 + 3 + 127)));
  EXPECT_EQ(model.acc_row_f32(1), (std::vector<fp32>{f32(0.5f), f32(1.0f), f32(1.5f), f32(2.0f)}));
}

// ---- The datapath decides which forms exist --------------------------------------------

TEST(Bf16DatapathTest, Int8CoreRejectsEveryBf16Form) {
  TpuModel model(CoreConfig{});  // the named configurations are int8
  HostMemory mem;
  auto err = [&](std::vector<Instr> program) {
    program.push_back(halt());
    model.load_program(0, program);
    return model.run(0, mem).err;
  };
  EXPECT_EQ(err({rhm(0, 1, 0, 32, true)}), ErrCode::kBadFlags);
  EXPECT_EQ(err({whm(0, 1, 0, 32, true)}), ErrCode::kBadFlags);
  EXPECT_EQ(err({rw(0, 1, 32, true)}), ErrCode::kBadFlags);
  EXPECT_EQ(err({rw(0, 1, 16), mmc(0, 0, 1, false, true, true)}), ErrCode::kBadFlags)
      << "BAD_FLAGS, not WGT_FORMAT";
  EXPECT_EQ(err({act(0, 0, 1, Act::kNone, false, false, true)}), ErrCode::kBadFlags);
  EXPECT_EQ(err({act(0, 0, 1, Act::kNone, false, true, true)}), ErrCode::kBadFlags);
  EXPECT_EQ(err({vop(VopOp::kAdd, 0, 2, 4, 1, 0, true)}), ErrCode::kBadFlags);
  for (uint16_t reg : {kCfgScale, kCfgRelu6F32, kCfgFmin, kCfgFmax}) {
    EXPECT_EQ(err({cfg(reg, 0x3F800000)}), ErrCode::kBadCfg) << reg;
    EXPECT_THROW(model.cfg(reg), std::out_of_range);
  }
  // The int8 forms are unchanged.
  EXPECT_EQ(err({rw(0, 1, 16), mmc(0, 0, 1, false, true), act(0, 0, 1, Act::kRelu, true),
                 vop(VopOp::kAdd, 0, 2, 4, 1), cfg(kCfgQzp, 3)}),
            ErrCode::kOk);
}

TEST(Bf16DatapathTest, Bf16CoreRejectsTheInt8MxuForms) {
  TpuModel model(kSmallBf16);
  HostMemory mem;
  auto err = [&](std::vector<Instr> program) {
    program.push_back(halt());
    model.load_program(0, program);
    return model.run(0, mem).err;
  };
  EXPECT_EQ(err({rw(0, 1, 8)}), ErrCode::kBadFlags) << "an int8 tile";
  EXPECT_EQ(err({rw(0, 1, 16, true), mmc(0, 0, 1, false, true)}), ErrCode::kBadFlags)
      << "an int8 MMC, even on a bf16 tile: BAD_FLAGS comes before WGT_FORMAT";
  model.clear_weights();
  // The memory unit's and the VPU's int8 forms stay: they do not use the MXU.
  EXPECT_EQ(err({rhm(0, 1, 0, 8), whm(0, 1, 0x100, 8), act(0, 0, 1, Act::kRelu, true),
                 act(0, 8, 1, Act::kNone, false, true), vop(VopOp::kMax, 0, 1, 2, 1), cfg(kCfgQmin, 0)}),
            ErrCode::kOk);
}

TEST(Bf16DatapathTest, Bf16CoresNeedAnEvenArray) {
  EXPECT_THROW(TpuModel(CoreConfig{.n = 3, .datapath = Datapath::kBoth}), std::invalid_argument);
  EXPECT_NO_THROW(TpuModel(CoreConfig{.n = 3}));
  EXPECT_NO_THROW(TpuModel(CoreConfig{.n = 2, .datapath = Datapath::kBf16}));
}

// ---- ACT F32 ---------------------------------------------------------------------------

class ActF32Test : public Bf16Test {
 protected:
  void SetUp() override {
    Bf16Test::SetUp();
    use_config(kTinyBoth);  // four lanes
  }
  // ACT of ACC row 0 into UB row 100 (bf16) or 120 (RAW fp32) with `flags`.
  std::vector<bf16> act_bf16(bool bias, Act func) {
    run_ok({act(0, 100, 1, func, bias, false, true), halt()});
    return model().ub_wide_row(100);
  }
  std::vector<fp32> act_raw(bool bias, Act func) {
    run_ok({act(0, 120, 1, func, bias, true, true), halt()});
    std::vector<fp32> out;
    for (int j = 0; j < n(); ++j) {
      fp32 v = 0;
      for (int byte = 0; byte < 4; ++byte)  // UB rows 120..123 hold the 4N bytes
        v |= uint32_t(uint8_t(model().ub_row(uint32_t(120 + (4 * j + byte) / n()))[size_t((4 * j + byte) % n())])) << (8 * byte);
      out.push_back(v);
    }
    return out;
  }
  void cfg_ok(uint16_t index, uint32_t value) { run_ok({cfg(index, value), halt()}); }
};

TEST_F(ActF32Test, RoundsToBf16NearestEven) {
  // ACC = hi + lo: 1 + 2^-8 (a tie, even: 1), (1 + 2^-7) + 2^-8 (a tie, odd:
  // up), 1 + 2^-8 + 2^-15 (above the tie: up), -(1 + 2^-9) (below: down).
  set_acc(0, lanes({1.0f, 1.0078125f, 1.0f, -1.0f}), lanes({0x1p-8f, 0x1p-8f, 0x1.02p-8f, -0x1p-9f}));
  EXPECT_EQ(model().acc_row_f32(0),
            (std::vector<fp32>{f32(1.00390625f), f32(1.01171875f), f32(1.0f + 0x1.02p-8f), f32(-1.001953125f)}));
  EXPECT_EQ(act_bf16(false, Act::kNone), (std::vector<bf16>{0x3F80, 0x3F82, 0x3F81, 0xBF80}));
  // RAW F32 with no bias, SCALE 1 and no function: the accumulator's bits.
  EXPECT_EQ(act_raw(false, Act::kNone), model().acc_row_f32(0));
}

// ACT F32 of at most N/2 lanes writes only the first UB row of each wide
// row (bf16 lanes 0 .. N/2 - 1), and ACT F32 RAW of fewer lanes only the UB
// rows that hold them: at b + R*i, the region's other rows untouched.
TEST_F(ActF32Test, FewerLanesWriteOnlyTheirRows) {
  set_acc(0, lanes({1.5f, -2.0f, 3.25f, 8.0f}), lanes({0, 0, 0, 0}));
  set_acc(1, lanes({-0.5f, 4.0f, 6.5f, -7.0f}), lanes({0, 0, 0, 0}));
  const std::vector<int8_t> marker(size_t(n()), int8_t(0x5A));
  mem_.write(0x7000, std::vector<uint8_t>(size_t(8 * n()), 0x5A));
  const auto fill = [&] { run_ok({rhm(100, 8, 0x7000, uint32_t(n())), halt()}); };
  fill();
  run_ok({act(0, 100, 2, Act::kNone, false, false, true, 2), halt()});  // N/2 lanes: one UB row a result
  for (uint32_t i = 0; i < 2; ++i) {
    const std::vector<int8_t> row = model().ub_row(100 + i);
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(bf16(uint8_t(row[size_t(2 * j)]) | uint8_t(row[size_t(2 * j + 1)]) << 8),
                tpu::fp32_to_bf16(model().acc_row_f32(i)[size_t(j)]))
          << "result " << i << " lane " << j;
  }
  for (uint32_t r = 102; r < 108; ++r) EXPECT_EQ(model().ub_row(r), marker) << "UB row " << r;
  fill();
  run_ok({act(0, 100, 2, Act::kNone, false, true, true, 3), halt()});  // RAW, 3 lanes: three UB rows a result
  for (uint32_t i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      const std::vector<int8_t> row = model().ub_row(100 + 3 * i + uint32_t(j));  // one fp32 lane a UB row
      fp32 v = 0;
      for (int byte = 0; byte < 4; ++byte) v |= uint32_t(uint8_t(row[size_t(byte)])) << (8 * byte);
      EXPECT_EQ(v, model().acc_row_f32(i)[size_t(j)]) << "result " << i << " lane " << j;
    }
  for (uint32_t r = 106; r < 108; ++r) EXPECT_EQ(model().ub_row(r), marker) << "UB row " << r;
}

TEST_F(ActF32Test, BiasScaleFunctionsAndClampInOrder) {
  set_acc(0, lanes({-3.0f, 0.5f, 10.0f, 2.0f}), lanes({0, 0, 0, 0}));
  for (int j = 0; j < 4; ++j) cfg_ok(uint16_t(kCfgBiasBase + j), f32(0.25f * float(j + 1)));
  // x + bias = -2.75, 1.0, 10.75, 3.0
  EXPECT_EQ(act_raw(true, Act::kNone), (std::vector<fp32>{f32(-2.75f), f32(1.0f), f32(10.75f), f32(3.0f)}));
  cfg_ok(kCfgScale, f32(2.0f));  // * 2 = -5.5, 2, 21.5, 6
  EXPECT_EQ(act_raw(true, Act::kNone), (std::vector<fp32>{f32(-5.5f), f32(2.0f), f32(21.5f), f32(6.0f)}));
  EXPECT_EQ(act_raw(true, Act::kRelu), (std::vector<fp32>{0, f32(2.0f), f32(21.5f), f32(6.0f)}));
  EXPECT_EQ(act_raw(true, Act::kRelu6), (std::vector<fp32>{0, f32(2.0f), f32(6.0f), f32(6.0f)}));
  cfg_ok(kCfgRelu6F32, f32(4.0f));
  EXPECT_EQ(act_raw(true, Act::kRelu6), (std::vector<fp32>{0, f32(2.0f), f32(4.0f), f32(4.0f)}));
  cfg_ok(kCfgFmin, f32(-1.0f));
  cfg_ok(kCfgFmax, f32(8.0f));
  EXPECT_EQ(act_raw(true, Act::kNone), (std::vector<fp32>{f32(-1.0f), f32(2.0f), f32(8.0f), f32(6.0f)}));
  EXPECT_EQ(act_raw(true, Act::kRelu6), (std::vector<fp32>{0, f32(2.0f), f32(4.0f), f32(4.0f)}))
      << "ReLU raises FMIN to 0, ReLU6 lowers FMAX to RELU6_F32";
  EXPECT_EQ(act_bf16(true, Act::kNone), (std::vector<bf16>{bf(-1.0f), bf(2.0f), bf(8.0f), bf(6.0f)}));
  // Without BIAS: x * 2 = -6, 1, 20, 4; clamped to -1, 1, 8, 4.
  EXPECT_EQ(act_bf16(false, Act::kNone), (std::vector<bf16>{bf(-1.0f), bf(1.0f), bf(8.0f), bf(4.0f)}));
  // FMIN above FMAX: the result is FMAX (min(max(y, lo), hi), as the int8 clamp).
  cfg_ok(kCfgFmin, f32(9.0f));
  EXPECT_EQ(act_bf16(false, Act::kNone), std::vector<bf16>(4, bf(8.0f)));
}

TEST_F(ActF32Test, SpecialValues) {
  // ACC = -0, +0, inf, NaN, from a = [2^-126, max, 1, -max] and W's columns
  // (each one's products top to bottom): lane 0 -1.5 * 2^-126 + 2^-126,
  // a flushed negative sum; lane 1 zeros; lane 2 max * 2 = inf; lane 3
  // max * 2 + -max * 2 = inf - inf. (A NaN or inf operand would reach every
  // lane through its products with zeros.)
  const std::vector<bf16> a = {0x0080, 0x7F7F, bf(1.0f), 0xFF7F};
  const std::vector<bf16> w = {bf(-1.5f), 0, 0, 0,         //
                               0,         0, bf(2.0f), bf(2.0f),  //
                               0x0080,    0, 0, 0,         //
                               0,         0, 0, bf(2.0f)};
  mmc_row(0, a, w, false);
  EXPECT_EQ(model().acc_row_f32(0), (std::vector<fp32>{0x80000000u, 0, kInf, kNan}));
  EXPECT_EQ(act_raw(false, Act::kNone), (std::vector<fp32>{0x80000000u, 0, kInf, kNan}));
  EXPECT_EQ(act_raw(false, Act::kRelu), (std::vector<fp32>{0, 0, kInf, kNan}))
      << "ReLU(-0) = +0; NaN propagates";
  EXPECT_EQ(act_raw(false, Act::kRelu6), (std::vector<fp32>{0, 0, f32(6.0f), kNan}));
  EXPECT_EQ(act_bf16(false, Act::kNone), (std::vector<bf16>{0x8000, 0, 0x7F80, 0x7FC0}));
  // SCALE 0: inf * 0 = NaN, -0 * 0 = -0.
  cfg_ok(kCfgScale, 0);
  EXPECT_EQ(act_raw(false, Act::kNone), (std::vector<fp32>{0x80000000u, 0, kNan, kNan}));
  // Overflow and underflow through the scale; a subnormal SCALE reads as 0.
  set_acc(0, lanes({0x1p127f, -0x1p-100f, 3.0f, 1.0f}), lanes({0, 0, 0, 0}));
  cfg_ok(kCfgScale, f32(0x1p2f));
  EXPECT_EQ(act_raw(false, Act::kNone), (std::vector<fp32>{kInf, f32(-0x1p-98f), f32(12.0f), f32(4.0f)}));
  cfg_ok(kCfgScale, f32(0x1p-30f));
  EXPECT_EQ(act_raw(false, Act::kNone), (std::vector<fp32>{f32(0x1p97f), 0x80000000u, f32(3.0f * 0x1p-30f), f32(0x1p-30f)}));
  cfg_ok(kCfgScale, 0x00000001u);
  EXPECT_EQ(act_raw(false, Act::kNone), (std::vector<fp32>{0, 0x80000000u, 0, 0}));
  // A NaN bound makes every result NaN.
  cfg_ok(kCfgScale, f32(1.0f));
  cfg_ok(kCfgFmax, 0xFFC00001u);
  EXPECT_EQ(act_bf16(false, Act::kNone), std::vector<bf16>(4, 0x7FC0));
}

TEST_F(ActF32Test, FlagRulesAndRanges) {
  // LUT has no fp32 form; RAW alone copies the accumulator bits (any datapath).
  EXPECT_EQ(run_err({act(0, 100, 1, Act::kLut, false, false, true), halt()}), ErrCode::kBadFlags);
  EXPECT_EQ(run_err({act(0, 100, 1, Act::kLut, false, true, true), halt()}), ErrCode::kBadFlags);
  EXPECT_EQ(run_err({act(0, 100, 1, Act::kNone, true, true), halt()}), ErrCode::kBadFlags)
      << "RAW without F32 still takes no other flag";
  set_acc(0, lanes({1.5f, -2.0f, 0, 3.0f}), lanes({0, 0, 0, 0}));
  run_ok({act(0, 120, 1, Act::kNone, false, true), halt()});
  EXPECT_EQ(act_raw(false, Act::kNone), model().acc_row_f32(0));
  // UB rows per ACC row: 2 for bf16 results, 4 for RAW.
  const uint32_t ub = uint32_t(core_.ub_rows);
  EXPECT_EQ(run_err({act(0, ub - 4, 2, Act::kNone, false, false, true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({act(0, ub - 3, 2, Act::kNone, false, false, true), halt()}), ErrCode::kUbRange);
  EXPECT_EQ(run_err({act(0, ub - 8, 2, Act::kNone, false, true, true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({act(0, ub - 7, 2, Act::kNone, false, true, true), halt()}), ErrCode::kUbRange);
}

// ---- VOP BF16 --------------------------------------------------------------------------

// Host float arithmetic followed by the rules, for the expectations: inputs
// flushed, results flushed (the exact product decides for *), NaN canonical.
float ftz(float f) { return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f; }
fp32 host_rules(double exact_or_rounded) {
  if (std::isnan(exact_or_rounded)) return kNan;
  if (exact_or_rounded != 0 && std::fabs(exact_or_rounded) < 0x1p-126)
    return std::signbit(exact_or_rounded) ? 0x80000000u : 0;
  return f32(float(exact_or_rounded));
}
float wide(bf16 x) { return ftz(tpu::bf16_to_float(x)); }
bf16 host_add(bf16 a, bf16 b) {
  volatile float x = wide(a), y = wide(b);
  return tpu::fp32_to_bf16(host_rules(x + y));  // float sum, rounded once
}
bf16 host_mul(bf16 a, bf16 b) { return tpu::fp32_to_bf16(host_rules(double(wide(a)) * wide(b))); }
bf16 host_max(bf16 a, bf16 b) {
  const float x = wide(a), y = wide(b);
  if (std::isnan(x) || std::isnan(y)) return tpu::kBf16CanonicalNan;
  if (x == y) return tpu::fp32_to_bf16(f32(std::signbit(x) ? y : x));  // +0 above -0
  return tpu::fp32_to_bf16(f32(x > y ? x : y));
}
bf16 host_min(bf16 a, bf16 b) {
  const float x = wide(a), y = wide(b);
  if (std::isnan(x) || std::isnan(y)) return tpu::kBf16CanonicalNan;
  if (x == y) return tpu::fp32_to_bf16(f32(std::signbit(x) ? x : y));  // -0 below +0
  return tpu::fp32_to_bf16(f32(x < y ? x : y));
}

TEST_P(Bf16CoreTest, VopElementWiseOpsOnWideRows) {
  const int N = n();
  const std::vector<bf16> special = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F,
                                     0x7F80, 0xFF80, 0x7FC0, 0xFF81, 0x3F80, 0xBF80, 0x2000, 0x1F80};
  std::vector<std::vector<bf16>> a(4, std::vector<bf16>(size_t(N))), b = a;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < N; ++j) {
      a[size_t(i)][size_t(j)] = rng_() % 3 ? rand_bf16() : special[rng_() % special.size()];
      b[size_t(i)][size_t(j)] = rng_() % 3 ? rand_bf16() : special[rng_() % special.size()];
    }
  a[0][0] = bf(1.0f), b[0][0] = bf(-1.0f);             // exact cancellation: +0
  a[0][1] = bf16(0x0080), b[0][1] = bf16(0x3F00);      // 2^-126 * 0.5 is flushed
  a[1][0] = bf16(0x7F7F), b[1][0] = bf16(0x7F7F);      // max + max, max * max overflow
  a[1][1] = bf(1.0f), b[1][1] = bf(0x1p-8f);           // 1 + 2^-8: a tie, rounds to 1
  load_wide(0, a);
  load_wide(8, b);
  for (const VopOp op : {VopOp::kAdd, VopOp::kMul, VopOp::kMax, VopOp::kMin}) {
    SCOPED_TRACE(find_vop(uint8_t(op))->mnemonic);
    run_ok({vop(op, 0, 8, 20, 4, 0, true), halt()});
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < N; ++j) {
        const bf16 x = a[size_t(i)][size_t(j)], y = b[size_t(i)][size_t(j)];
        const bf16 want = op == VopOp::kAdd   ? host_add(x, y)
                          : op == VopOp::kMul ? host_mul(x, y)
                          : op == VopOp::kMax ? host_max(x, y)
                                              : host_min(x, y);
        ASSERT_EQ(model().ub_wide_row(uint32_t(20 + 2 * i))[size_t(j)], want)
            << std::hex << "0x" << x << ", 0x" << y << " seed " << std::dec << seed_;
      }
  }
  run_ok({vop(VopOp::kAdd, 0, 8, 20, 2, 0, true), halt()});
  EXPECT_EQ(model().ub_wide_row(20)[0], 0) << "1 + -1 = +0";
  EXPECT_EQ(model().ub_wide_row(22)[0], 0x7F80) << "max + max = inf";
  EXPECT_EQ(model().ub_wide_row(22)[1], bf(1.0f)) << "a tie rounds to even";
  run_ok({vop(VopOp::kMul, 0, 8, 20, 2, 0, true), halt()});
  EXPECT_EQ(model().ub_wide_row(20)[1], 0) << "a tiny product is flushed";
}

TEST_P(Bf16CoreTest, VopPoolsReduceConsecutiveWideRows) {
  const int N = n();
  for (int shift = 0; shift <= 4; ++shift) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    const int k = 1 << shift, groups = 3;
    std::vector<std::vector<bf16>> rows(size_t(k * groups), std::vector<bf16>(size_t(N)));
    for (auto& r : rows)
      for (bf16& v : r) v = rand_bf16();
    rows[0][0] = 0x7FC0;                        // NaN in a window
    rows[size_t(k)][1] = 0x8000;                // a -0 at a window's start
    load_wide(0, rows);
    const uint32_t dst = uint32_t(2 * k * groups);
    run_ok({vop(VopOp::kPoolMax, 0, 0, dst, uint32_t(groups), shift, true),
            vop(VopOp::kPoolAvg, 0, 0, dst + 2 * groups, uint32_t(groups), shift, true), halt()});
    for (int g = 0; g < groups; ++g)
      for (int j = 0; j < N; ++j) {
        float mx = wide(rows[size_t(g * k)][size_t(j)]);
        volatile float sum = mx;
        bool nan = std::isnan(mx);
        for (int r = 1; r < k; ++r) {
          const float v = wide(rows[size_t(g * k + r)][size_t(j)]);
          nan |= std::isnan(v);
          if (v > mx || (v == mx && !std::signbit(v))) mx = v;
          sum = sum + v;  // float, in row order (no tiny sums: normal data)
        }
        const bf16 want_max = nan ? tpu::kBf16CanonicalNan : tpu::fp32_to_bf16(f32(mx));
        const bf16 want_avg = tpu::fp32_to_bf16(host_rules(double(sum) / k));
        EXPECT_EQ(model().ub_wide_row(dst + 2 * uint32_t(g))[size_t(j)], want_max) << g << "," << j;
        EXPECT_EQ(model().ub_wide_row(dst + 2 * uint32_t(groups + g))[size_t(j)], want_avg) << g << "," << j;
      }
  }
}

TEST_P(Bf16CoreTest, VopBf16FlagRulesAndRanges) {
  const uint32_t ub = uint32_t(core_.ub_rows);
  EXPECT_EQ(run_err({vop(VopOp::kMul, 0, 2, 4, 1, 1, true), halt()}), ErrCode::kBadFlags)
      << "bf16 MUL has no shift";
  EXPECT_EQ(run_err({vop(VopOp::kPoolAvg, 0, 0, 4, 1, 5, true), halt()}), ErrCode::kBadFlags);
  EXPECT_EQ(run_err({vop(VopOp::kPoolMax, 0, 2, 4, 1, 1, true), halt()}), ErrCode::kBadFlags);
  EXPECT_EQ(run_err({vop(VopOp::kAdd, 0, 2, ub - 2, 1, 0, true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({vop(VopOp::kAdd, 0, 2, ub - 1, 1, 0, true), halt()}), ErrCode::kUbRange);
  EXPECT_EQ(run_err({vop(VopOp::kAdd, 0, ub - 3, 0, 2, 0, true), halt()}), ErrCode::kUbRange);
  EXPECT_EQ(run_err({vop(VopOp::kPoolMax, ub - 16, 0, 0, 2, 2, true), halt()}), ErrCode::kOk);
  EXPECT_EQ(run_err({vop(VopOp::kPoolMax, ub - 15, 0, 0, 2, 2, true), halt()}), ErrCode::kUbRange);
}

TEST_P(Bf16CoreTest, VopInPlaceWritesEachRowBeforeReadingTheNext) {
  // dst = a + 2: row i's result is row i + 1's source A.
  const int N = n();
  std::vector<std::vector<bf16>> rows(4, std::vector<bf16>(size_t(N), bf(1.0f)));
  load_wide(0, rows);
  run_ok({vop(VopOp::kAdd, 0, 0, 2, 3, 0, true), halt()});
  EXPECT_EQ(model().ub_wide_row(2)[0], bf(2.0f));
  EXPECT_EQ(model().ub_wide_row(4)[0], bf(4.0f)) << "row 1 doubles row 0's result";
  EXPECT_EQ(model().ub_wide_row(6)[0], bf(8.0f));
}

// ---- CFG ------------------------------------------------------------------------------

TEST_F(Bf16Test, Fp32RegistersResetPersistAndAcceptAnyBits) {
  EXPECT_EQ(model().cfg(kCfgScale), 0x3F800000u);
  EXPECT_EQ(model().cfg(kCfgRelu6F32), 0x40C00000u);
  EXPECT_EQ(model().cfg(kCfgFmin), 0xFF800000u);
  EXPECT_EQ(model().cfg(kCfgFmax), 0x7F800000u);
  run_ok({cfg(kCfgScale, 0x7FC00001u), cfg(kCfgFmin, 0x00000001u), cfg(kCfgBiasBase + 15, f32(-2.5f)),
          halt()});
  run_ok({irq(), halt()});
  EXPECT_EQ(model().cfg(kCfgScale), 0x7FC00001u) << "kept as written; NaN only when used";
  EXPECT_EQ(model().cfg(kCfgFmin), 0x00000001u);
  EXPECT_EQ(model().cfg(kCfgBiasBase + 15), f32(-2.5f));
  model().reset();
  EXPECT_EQ(model().cfg(kCfgScale), 0x3F800000u);
  EXPECT_EQ(model().cfg(kCfgBiasBase + 15), 0u);
}

// ---- A program as written in docs/isa.md ------------------------------------------------

TEST_F(Bf16Test, TheAssemblyExampleOfTheDocs) {
  use_config(kTinyBoth);
  // C (2 x 4) = A (2 x 4) x W (4 x 4) + bias, ReLU, as bf16 and as fp32.
  MatrixBf16 a = random_matrix(2, 4), w = random_matrix(4, 4);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 4; ++k) mem_.write16(0x1000 + uint64_t(i * 4 + k) * 2, a.at(i, k));
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 4; ++j) mem_.write16(0x2000 + uint64_t(k * 4 + j) * 2, w.at(k, j));
  const std::vector<Instr> program = assemble(R"(
    cfg BIAS+0 0x3f000000           # fp32 0.5 (lanes 1..3 keep 0)
    rhm ub=0 rows=2 host=0x1000 stride=8 wide
    rw host=0x2000 tiles=1 stride=8 bf16
    mmc ub=0 acc=0 rows=2 pop bf16
    act acc=0 ub=4 rows=2 bias func=relu f32
    whm ub=4 rows=2 host=0x3000 stride=8 wide
    act acc=0 ub=8 rows=2 raw bias func=relu f32
    whm ub=8 rows=8 host=0x4000 stride=4
    halt
  )");
  run_ok(program);
  const MatrixF32 c = gemm::reference(a, w, 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      const fp32 y = tpu::fp32_max(tpu::fp32_add(c.at(i, j), j == 0 ? f32(0.5f) : 0), 0);
      EXPECT_EQ(mem_.read32(0x4000 + uint64_t(i * 4 + j) * 4), y);
      EXPECT_EQ(mem_.read16(0x3000 + uint64_t(i * 4 + j) * 2), tpu::fp32_to_bf16(y));
    }
}

// ---- The planner's bf16 GEMMs (tpu/plan/gemm.h) ---------------------------------------

namespace plan = tpu::plan;

// Runs the planner's programs for A x W (images packed by pack_a_bf16 and
// pack_w_bf16); C as fp32 bits (bf16 results widened).
class Bf16PlanTest : public Bf16CoreTest {
 protected:
  MatrixF32 planned(const MatrixBf16& a, const MatrixBf16& w, plan::GemmOutput out,
                    const plan::GemmOptions& o = {}, plan::GemmPlan* plan_out = nullptr,
                    const std::vector<fp32>& bias = {}, Act act = Act::kNone) {
    constexpr uint64_t kA = 0x10000000, kW = 0x20000000, kC = 0x30000000;
    plan::GemmOptions options = o;
    options.bias = options.bias || !bias.empty();  // a bias per column is never transposed
    const plan::GemmPlan p = plan::plan_gemm({a.rows, a.cols, w.cols}, out, core_, options);
    if (plan_out) *plan_out = p;
    mem_ = HostMemory{};
    mem_.write(kA, std::span<const uint8_t>(plan::pack_a_bf16(p, a)));
    mem_.write(kW, std::span<const uint8_t>(plan::pack_w_bf16(p, w)));
    plan::GemmEpilogue epi;
    epi.output = out;
    epi.bias_f32 = bias;
    epi.act = act;
    for (const std::vector<Instr>& program : plan::gemm_programs(p, epi, kA, kW, kC, core_)) {
      const RunResult r = run(program);
      EXPECT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc << ": " << disassemble(model().imem(r.err_pc));
      if (r.err != ErrCode::kOk) break;
    }
    EXPECT_EQ(model().pending_tiles(), 0u);
    const std::vector<uint8_t> c = mem_.read(kC, p.c_bytes());
    if (out == plan::GemmOutput::kF32) return plan::unpack_c_f32(p, c);
    const MatrixBf16 r = plan::unpack_c_bf16(p, c);
    MatrixF32 wide(r.rows, r.cols);
    for (size_t i = 0; i < r.data.size(); ++i) wide.data[i] = tpu::bf16_to_fp32(r.data[i]);
    return wide;
  }
  // Both outputs against the reference: fp32 exactly, bf16 its rounding.
  void check(const MatrixBf16& a, const MatrixBf16& w, const plan::GemmOptions& o = {}) {
    const MatrixF32 want = gemm::reference(a, w, n());
    MatrixF32 rounded = want;
    for (fp32& v : rounded.data) v = tpu::bf16_to_fp32(tpu::fp32_to_bf16(v));
    EXPECT_EQ(planned(a, w, plan::GemmOutput::kF32, o), want) << "fp32 results, seed " << seed_;
    EXPECT_EQ(planned(a, w, plan::GemmOutput::kBf16, o), rounded) << "bf16 results, seed " << seed_;
  }
};

INSTANTIATE_TEST_SUITE_P(Cores, Bf16PlanTest, ::testing::Values(kTinyBoth, kSmallBf16, kDefaultBoth),
                         [](const auto& info) { return config_name(info.param); });

TEST_P(Bf16PlanTest, EveryKindOfPlanEqualsTheDocumentedOrder) {
  using O = plan::GemmOptions;
  const int N = n();
  const O forced[] = {
      {},
      {.transpose = O::Transpose::kNever},
      {.transpose = O::Transpose::kAlways},
      {.max_pass_rows = 5, .transpose = O::Transpose::kNever, .a_regions = 1},
      {.max_pass_rows = 7, .transpose = O::Transpose::kNever, .group_tiles = 1, .chunk_blocks = 1, .a_regions = 2},
      {.transpose = O::Transpose::kNever, .group_tiles = 2, .chunk_blocks = 2, .a_regions = 1, .result_regions = 3,
       .write_tiles = 1},
      {.transpose = O::Transpose::kNever, .order = O::Order::kTileMajor},
      {.max_pass_rows = 6, .transpose = O::Transpose::kAlways, .group_tiles = 1, .write_tiles = 2},
      // Heads (K blocks 0 .. h-1 of the first group first; shapes of one K block have none).
      {.transpose = O::Transpose::kNever, .order = O::Order::kTileMajor, .head_blocks = 1},
      {.max_pass_rows = 7, .transpose = O::Transpose::kAlways, .order = O::Order::kTileMajor, .head_blocks = 2},
  };
  struct Shape {
    int m, k, j;
  };
  for (const Shape& s : {Shape{1, 1, 1}, Shape{3, 5, 7}, Shape{17, 3 * N + 1, 2 * N + 3}, Shape{20, 4 * N - 1, N - 1}})
    for (size_t f = 0; f < std::size(forced); ++f) {
      if (forced[f].head_blocks > 0 && (s.k + N - 1) / N <= forced[f].head_blocks) continue;
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.j) + " options " +
                   std::to_string(f));
      check(random_matrix(s.m, s.k), random_matrix(s.k, s.j), forced[f]);
    }
}

TEST_P(Bf16PlanTest, KFromOneToThousandsAccumulatesBlocksInOrder) {
  for (int k : {1, 2, n() - 1, n() + 1, 300, 4099}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    check(random_matrix(3, k), random_matrix(k, 5));
  }
}

TEST_P(Bf16PlanTest, SpecialOperandsMatchTheReference) {
  const std::vector<bf16> special = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x3F80, 0xBF80,
                                     0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x0100,
                                     0x2000, 0x5F00, 0x6000, 0xE000};
  for (int t = 0; t < 3; ++t) {
    MatrixBf16 a(11, 2 * n() + 3), w(2 * n() + 3, n() + 2);
    for (bf16& v : a.data) v = rng_() % 3 == 0 ? special[rng_() % special.size()] : rand_bf16();
    for (bf16& v : w.data) v = rng_() % 8 == 0 ? special[rng_() % special.size()] : rand_bf16();
    check(a, w, {.transpose = t == 1 ? plan::GemmOptions::Transpose::kAlways : plan::GemmOptions::Transpose::kAuto});
  }
  // Overflow of the products and of the sum, exact cancellation, NaN.
  const bf16 max = 0x7F7F;
  MatrixBf16 a(3, 2, 0), w(2, 2, 0);
  a.at(0, 0) = max; a.at(0, 1) = max;                    // max*2 overflows; max*1 - max*1 = +0
  a.at(1, 0) = bf(3.5f); a.at(1, 1) = bf(3.5f);          // 7 and 3.5 - 3.5 = +0
  a.at(2, 0) = 0x7FC0;                                   // NaN
  w.at(0, 0) = bf(2.0f); w.at(1, 0) = bf(2.0f);
  w.at(0, 1) = bf(1.0f); w.at(1, 1) = bf(-1.0f);
  const MatrixF32 got = planned(a, w, plan::GemmOutput::kF32);
  EXPECT_EQ(got, gemm::reference(a, w, n()));
  EXPECT_EQ(hex(got.at(0, 0)), hex(kInf));      // the products overflow
  EXPECT_EQ(hex(got.at(0, 1)), hex(0));         // max - max = +0
  EXPECT_EQ(hex(got.at(1, 0)), hex(f32(14.0f)));
  EXPECT_EQ(hex(got.at(1, 1)), hex(0));         // exact cancellation: +0
  EXPECT_EQ(hex(got.at(2, 0)), hex(kNan));
  EXPECT_EQ(hex(got.at(2, 1)), hex(kNan));
}

TEST_P(Bf16PlanTest, WideRowsCountTwiceInTheUnifiedBuffer) {
  // A core with a small UB: the plans must fit it counting two UB rows per
  // row of A and 4 (fp32) or 2 (bf16) per result row.
  CoreConfig small = core_;
  small.ub_rows = 96;
  small.acc_rows = 32;
  use_config(small);
  for (const plan::GemmOutput out : {plan::GemmOutput::kF32, plan::GemmOutput::kBf16}) {
    plan::GemmPlan p;
    const MatrixBf16 a = random_matrix(37, 3 * n() + 2), w = random_matrix(3 * n() + 2, 2 * n() + 1);
    const MatrixF32 got = planned(a, w, out, {.transpose = plan::GemmOptions::Transpose::kNever}, &p);
    EXPECT_GT(p.passes, 1);
    EXPECT_LE(p.pass_rows * (p.a_regions * p.chunk_blocks * 2 + p.result_regions * p.write_tiles * p.out_row_rows()),
              small.ub_rows);
    MatrixF32 want = gemm::reference(a, w, n());
    if (out == plan::GemmOutput::kBf16)
      for (fp32& v : want.data) v = tpu::bf16_to_fp32(tpu::fp32_to_bf16(v));
    EXPECT_EQ(got, want);
  }
}

TEST_P(Bf16PlanTest, ResultsLiveInUbPartsApartFromA) {
  // An MMC BF16 reads two UB rows a cycle; the WHM's reads of the results
  // must not share its banks (tpu_ub: parts of their own banks). So the
  // result regions start at a part boundary above every A region, and the
  // plan still fits the UB; a UB too small for that falls back to packing.
  const int parts = tpu::ub_parts(core_.datapath);
  ASSERT_EQ(parts, 4);
  const int part_rows = core_.ub_rows / parts;
  struct Shape {
    int m, k, j;
  };
  for (const Shape& s : {Shape{32 * n(), 32 * n(), 32 * n()}, Shape{64, 8 * n() + 3, 3 * n()},
                         Shape{300, 2 * n(), 5 * n() + 1}}) {
    for (const plan::GemmOutput out : {plan::GemmOutput::kF32, plan::GemmOutput::kBf16}) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.j));
      const plan::GemmPlan p = plan::plan_gemm({s.m, s.k, s.j}, out, core_);
      const int a_end = p.a_regions * p.chunk_blocks * p.pass_rows * p.in_row_rows();
      const int results = p.result_regions * p.write_tiles * p.pass_rows * p.out_row_rows();
      EXPECT_EQ(p.result_base % part_rows, 0);
      EXPECT_GE(p.result_base, a_end);
      EXPECT_GT(p.result_base, 0);
      EXPECT_LE(p.result_base + results, core_.ub_rows);
    }
  }
  CoreConfig tight = core_;  // too small for parts apart: L and results packed
  tight.ub_rows = 96;
  tight.acc_rows = 32;
  const plan::GemmPlan p = plan::plan_gemm({37, 40 * n(), 2 * n()}, plan::GemmOutput::kF32, tight,
                                           {.transpose = plan::GemmOptions::Transpose::kNever, .chunk_blocks = 40});
  EXPECT_EQ(p.result_base, p.a_regions * p.chunk_blocks * p.pass_rows * 2);
}

TEST_P(Bf16PlanTest, BiasAndActivationThroughActF32) {
  // y = act(sum + bias[j]) per docs/isa.md's ACT F32 (SCALE 1, no clamp),
  // with NaN, infinite, subnormal and -0 biases; fp32 (ACT F32 RAW) and bf16.
  const int m = 9, k = 2 * n() + 1, j = n() + 3;
  MatrixBf16 a = random_matrix(m, k), w = random_matrix(k, j);
  a.at(0, 0) = 0x7FC0;  // a NaN row
  for (int c = 0; c < k; ++c) a.at(1, c) = 0;  // a zero row: +0 sums
  std::vector<fp32> bias(static_cast<size_t>(j));
  for (int c = 0; c < j; ++c) bias[size_t(c)] = f32(std::normal_distribution<float>()(rng_));
  bias[0] = kNan;
  bias[1] = kNegInf;
  bias[2] = 0x00000001u;  // subnormal: read as +0
  bias[3] = 0x80000000u;  // -0: +0 + -0 = +0
  const MatrixF32 sums = gemm::reference(a, w, n());
  for (const Act act : {Act::kNone, Act::kRelu, Act::kRelu6})
    for (const bool with_bias : {false, true}) {
      SCOPED_TRACE("act " + std::to_string(int(act)) + (with_bias ? " with bias" : ""));
      MatrixF32 want = sums;
      for (int r = 0; r < m; ++r)
        for (int c = 0; c < j; ++c) {
          fp32 y = with_bias ? tpu::fp32_add(sums.at(r, c), bias[size_t(c)]) : sums.at(r, c);
          y = tpu::fp32_mul(y, 0x3F800000u);
          fp32 lo = kNegInf, hi = kInf;
          if (act != Act::kNone) lo = tpu::fp32_max(lo, 0);
          if (act == Act::kRelu6) hi = tpu::fp32_min(hi, 0x40C00000u);
          want.at(r, c) = tpu::fp32_min(tpu::fp32_max(y, lo), hi);
        }
      const std::vector<fp32> b = with_bias ? bias : std::vector<fp32>{};
      EXPECT_EQ(planned(a, w, plan::GemmOutput::kF32, {}, nullptr, b, act), want) << "seed " << seed_;
      for (fp32& v : want.data) v = tpu::bf16_to_fp32(tpu::fp32_to_bf16(v));
      EXPECT_EQ(planned(a, w, plan::GemmOutput::kBf16, {}, nullptr, b, act), want) << "seed " << seed_;
    }
  // A bias rules out the transposed plan, as for int8.
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kF32;
  epi.bias_f32 = bias;
  const plan::GemmPlan t = plan::plan_gemm({m, k, j}, plan::GemmOutput::kF32, core_,
                                           {.transpose = plan::GemmOptions::Transpose::kAlways});
  EXPECT_THROW(plan::gemm_programs(t, epi, 0, 0, 0, core_), std::invalid_argument);
  epi.bias_f32.pop_back();
  const plan::GemmPlan p = plan::plan_gemm({m, k, j}, plan::GemmOutput::kF32, core_, {.bias = true});
  EXPECT_THROW(plan::gemm_programs(p, epi, 0, 0, 0, core_), std::invalid_argument) << "one bias per column";
}

TEST(Bf16PlanDatapathTest, PlansNeedTheOperandsDatapath) {
  const CoreConfig int8{.n = 4};
  const CoreConfig bf16_only{.n = 4, .datapath = Datapath::kBf16};
  EXPECT_THROW(plan::plan_gemm({4, 4, 4}, plan::GemmOutput::kF32, int8), std::invalid_argument);
  EXPECT_THROW(plan::plan_gemm({4, 4, 4}, plan::GemmOutput::kBf16, int8), std::invalid_argument);
  EXPECT_THROW(plan::plan_gemm({4, 4, 4}, plan::GemmOutput::kInt32, bf16_only), std::invalid_argument);
  EXPECT_NO_THROW(plan::plan_gemm({4, 4, 4}, plan::GemmOutput::kF32, bf16_only));
  EXPECT_NO_THROW(plan::plan_gemm({4, 4, 4}, plan::GemmOutput::kInt32, int8));
}

}  // namespace
