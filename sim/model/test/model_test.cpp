// SPDX-License-Identifier: Apache-2.0
// Reference model tests. Every expectation is computed independently of the
// model: plain loops over the operands, matmul_i8 from ref_matmul.h, and
// act_lane (the definition of the VPU arithmetic) from quant.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>

#include "plan_testing.h"
#include "seeded_test.h"
#include "tpu/isa.h"
#include "tpu/plan/cost_model.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/quant.h"
#include "tpu/queue.h"
#include "tpu/ref_matmul.h"
#include "tpu_model.h"

namespace tpu::isa {
// Readable error codes in failure messages.
void PrintTo(ErrCode e, std::ostream* os) { *os << err_name(e); }
}  // namespace tpu::isa

namespace {

using namespace tpu::isa;
namespace plan = tpu::plan;
using plan::GemmOptions;
using plan::GemmShape;
using tpu::CoreConfig;
using tpu::HostMemory;
using tpu::MatrixI32;
using tpu::MatrixI8;
using tpu::model::RunResult;
using tpu::model::TpuModel;
using tpu::ref::matmul_i8;
using tpu::test::GemmAddrs;
using tpu::test::GemmProgram;
namespace quant = tpu::quant;

constexpr uint64_t kMarker = 0xF000;  // host bytes a WHM after a fault would overwrite

class ModelTest : public tpu::test::SeededTest {
 protected:
  void SetUp() override {
    SeededTest::SetUp();
    use_config({});
  }

  void use_config(const CoreConfig& c) {
    core_ = c;
    model_ = std::make_unique<TpuModel>(c);
  }
  TpuModel& model() { return *model_; }
  int n() const { return core_.n; }

  RunResult run(const std::vector<Instr>& program, uint32_t start = 0) {
    model().load_program(start, program);
    return model().run(start, mem_);
  }
  RunResult run_asm(const std::string& source) { return run(assemble(source)); }
  void run_ok(const std::vector<Instr>& program) {
    const RunResult r = run(program);
    ASSERT_EQ(r.err, ErrCode::kOk)
        << "at pc " << r.err_pc << ": " << disassemble(model().imem(r.err_pc));
  }

  int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  int8_t rand_i8() { return int8_t(rand_int(-128, 127)); }
  MatrixI8 random_matrix(int rows, int cols) {
    MatrixI8 m(rows, cols);
    for (auto& v : m.data) v = rand_i8();
    return m;
  }

  // Puts the rows of m (n columns each) into UB rows first.. via RHM.
  void load_ub(uint32_t first, const MatrixI8& m) {
    constexpr uint64_t kStage = 0x7000000;
    tpu::test::write_matrix(mem_, kStage, m);
    run_ok({rhm(first, uint32_t(m.rows), kStage, uint32_t(n())), halt()});
  }
  MatrixI8 ub_rows(uint32_t first, int rows) {
    MatrixI8 m(rows, n());
    for (int r = 0; r < rows; ++r) {
      const auto row = model().ub_row(first + r);
      std::copy(row.begin(), row.end(), m.data.begin() + ptrdiff_t(r) * n());
    }
    return m;
  }

  CoreConfig core_;
  std::unique_ptr<TpuModel> model_;
  HostMemory mem_;
};

// ---- GEMM through the program builder ------------------------------------------------

class GemmTest : public ModelTest {
 protected:
  static constexpr GemmAddrs kAddrs{0x1000000, 0x2000000, 0x3000000, 0x4000000};

  // Runs A x W on the model and checks it against matmul_i8.
  GemmProgram check_gemm(const GemmShape& s, const MatrixI8& a, const MatrixI8& w,
                         const GemmOptions& options = {}) {
    tpu::test::write_matrix(mem_, kAddrs.a, a);
    tpu::test::write_matrix(mem_, kAddrs.w, w);
    const GemmProgram g = build_gemm(mem_, s, kAddrs, core_, options);
    for (const std::vector<Instr>& program : g.programs) {
      const RunResult r = run(program);
      EXPECT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc;
    }
    EXPECT_EQ(model().pending_tiles(), 0u) << "the program retires every tile it loads";
    EXPECT_EQ(read_gemm_result(mem_, g), matmul_i8(a, w))
        << s.m << "x" << s.k << "x" << s.n_out << " at N=" << n();
    return g;
  }
  GemmProgram check_random_gemm(const GemmShape& s, const GemmOptions& options = {}) {
    return check_gemm(s, random_matrix(s.m, s.k), random_matrix(s.k, s.n_out), options);
  }
};

TEST_F(GemmTest, Tiled40x48x20NotAMultipleOfN) {
  const GemmProgram g = check_random_gemm({40, 48, 20}, {.transpose = GemmOptions::Transpose::kNever});
  EXPECT_EQ(g.plan.k_blocks, 3);
  EXPECT_EQ(g.plan.col_tiles, 2);
  EXPECT_EQ(g.plan.passes, 1);
}

TEST_F(GemmTest, ShapesAtEveryArraySize) {
  const GemmShape shapes[] = {{1, 1, 1},   {3, 5, 7},    {16, 16, 16},
                              {17, 33, 5}, {40, 48, 20}, {64, 100, 70}};
  for (int array : {4, 8, 16}) {
    use_config({.n = array});
    for (const GemmShape& s : shapes) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out) +
                   " N=" + std::to_string(array));
      check_random_gemm(s);
    }
  }
}

TEST_F(GemmTest, ExtremeOperandsDoNotLoseBits) {
  const GemmShape s{20, 100, 18};
  check_gemm(s, MatrixI8(s.m, s.k, -128), MatrixI8(s.k, s.n_out, -128));  // +1638400 each
  check_gemm(s, MatrixI8(s.m, s.k, 127), MatrixI8(s.k, s.n_out, -128));
}

TEST_F(GemmTest, SplitsLargeMIntoPasses) {
  // 256 UB rows and 64 ACC rows cannot hold 100 rows of A and their results:
  // several passes, each within the memories.
  use_config({.n = 16, .ub_rows = 256, .acc_rows = 64, .wgt_fifo_tiles = 16});
  GemmProgram g = check_random_gemm({100, 64, 40}, {.transpose = GemmOptions::Transpose::kNever});
  EXPECT_GT(g.plan.passes, 1);
  EXPECT_LE(2 * g.plan.pass_rows * g.plan.group_tiles, 64);
  EXPECT_LE(g.plan.pass_rows * (g.plan.a_regions * g.plan.chunk_blocks +
                                g.plan.result_regions * g.plan.write_tiles * g.plan.out_row_rows()),
            256);
  use_config({});
  EXPECT_EQ(check_random_gemm({40, 32, 16}, {.max_pass_rows = 16, .transpose = GemmOptions::Transpose::kNever})
                .plan.passes,
            3);
}

TEST_F(GemmTest, StaysWithinASmallWeightCapacity) {
  use_config({.n = 8, .wgt_fifo_tiles = 0});  // 2 unretired tiles at most
  check_random_gemm({12, 40, 30});
  use_config({.n = 8, .wgt_fifo_tiles = 1});
  check_random_gemm({9, 8, 60});
}

TEST_F(GemmTest, UsesAccumulatorSlotsInTurnAndWritesBackAGroupLater) {
  // One column tile per group, one per WHM: the groups take ACC slots of 24
  // rows in turn, as many as the ACC holds (three of 72 rows here, so the
  // fourth group reuses the first), and result regions after the two blocks
  // of A (UB rows 0..47) in turn.
  use_config({.acc_rows = 72});
  const GemmProgram g = check_random_gemm({24, 32, 64}, {.transpose = GemmOptions::Transpose::kNever,
                                                         .group_tiles = 1, .chunk_blocks = 2, .a_regions = 1,
                                                         .result_regions = 2, .write_tiles = 1});
  std::vector<uint16_t> act_acc, act_ub, whm_ub;
  std::vector<size_t> act_at, whm_at, mmc_at;  // instruction indices
  ASSERT_EQ(g.programs.size(), 1u);
  const std::vector<Instr>& program = g.programs[0];
  for (size_t i = 0; i < program.size(); ++i) {
    const Instr& in = program[i];
    if (in.op == uint8_t(Op::kAct)) {
      act_acc.push_back(in.a);
      act_ub.push_back(in.b);
      act_at.push_back(i);
    }
    if (in.op == uint8_t(Op::kWhm)) {
      whm_ub.push_back(in.a);
      whm_at.push_back(i);
    }
    if (in.op == uint8_t(Op::kMmc)) mmc_at.push_back(i);
  }
  EXPECT_EQ(act_acc, (std::vector<uint16_t>{0, 24, 48, 0}));
  EXPECT_EQ(act_ub, (std::vector<uint16_t>{48, 144, 48, 144}));
  EXPECT_EQ(whm_ub, act_ub);
  // A WHM waits in issue for its ACT, and so would the MMCs behind it: but
  // for the last tile's, each follows an MMC issued after its ACT.
  ASSERT_EQ(whm_at.size(), act_at.size());
  for (size_t t = 0; t + 1 < act_at.size(); ++t) {
    const bool mmc_between = std::any_of(mmc_at.begin(), mmc_at.end(),
                                         [&](size_t m) { return m > act_at[t] && m < whm_at[t]; });
    EXPECT_TRUE(mmc_between) << "tile " << t << "'s WHM right behind its ACT";
  }
}

// When K is long against the rows a result takes in the UB (the MXU, not
// the write-back, is what the GEMM waits for), the stream's last ACT and WHM
// go in pieces of N rows, so that only one piece's WHM follows the last ACT.
TEST_F(GemmTest, LastWriteBackInPiecesWhenKIsLong) {
  const int nn = n();
  const GemmProgram g = check_random_gemm({4 * nn, 12 * nn, nn}, {.max_pass_rows = 4 * nn,
                                                                 .transpose = GemmOptions::Transpose::kNever,
                                                                 .write_tiles = 1});
  ASSERT_EQ(g.plan.passes, 1);
  const std::vector<Instr>& program = g.programs.back();
  std::vector<const Instr*> tail;  // the ACTs and WHMs after the last MMC
  for (const Instr& in : program) {
    if (in.op == uint8_t(Op::kMmc)) tail.clear();
    if (in.op == uint8_t(Op::kAct) || in.op == uint8_t(Op::kWhm)) tail.push_back(&in);
  }
  ASSERT_EQ(tail.size(), 8u) << "four pieces of an ACT and its WHM";
  for (size_t i = 0; i < tail.size(); i += 2) {
    EXPECT_EQ(tail[i]->op, uint8_t(Op::kAct));
    EXPECT_EQ(tail[i]->count, nn);
    EXPECT_EQ(tail[i + 1]->op, uint8_t(Op::kWhm));
    EXPECT_EQ(tail[i + 1]->a, tail[i]->b) << "the WHM writes its ACT's rows";
    EXPECT_EQ(tail[i + 1]->count, 4 * nn) << "int32: four UB rows a result row";
  }
}

// Every kind of plan the planner can choose, forced one at a time, on odd
// shapes (sides 1, primes, not multiples of N, K up to thousands) at N = 4
// with the tiny configuration's memories and at N = 16: the result is exact,
// every program fits the instruction memory, no error (the model checks every
// UB and ACC range and the weight count) and no tile is left over.
TEST_F(GemmTest, EveryPlanKindIsExactOnOddShapes) {
  using T = GemmOptions::Transpose;
  const GemmShape shapes[] = {{1, 1, 1}, {7, 13, 5}, {37, 29, 21}, {5, 1999, 3}, {13, 3001, 17}, {61, 7, 97}};
  const CoreConfig configs[] = {{.n = 4, .ub_rows = 256, .acc_rows = 128, .imem_depth = 256, .wgt_fifo_tiles = 4},
                                {.n = 16, .ub_rows = 512, .acc_rows = 128, .imem_depth = 128, .wgt_fifo_tiles = 16}};
  int plans = 0;
  for (const CoreConfig& config : configs) {
    use_config(config);
    for (const GemmShape& s : shapes)
      for (const T t : {T::kNever, T::kAlways})
        for (const int group : {1, 2, 3})
          for (const int chunk : {1, 2, 1 << 20})
            for (const int regions : {1, 2})
              for (const int write : {1, 2, 4}) {
                const GemmOptions o{.transpose = t, .group_tiles = group, .chunk_blocks = chunk,
                                    .a_regions = regions, .write_tiles = write};
                // A forced plan that cannot hold one row of L, its results
                // or two ACC regions is refused.
                const int kb = (s.k + config.n - 1) / config.n;
                const int ct = ((t == T::kAlways ? s.m : s.n_out) + config.n - 1) / config.n;
                if (config.ub_rows < regions * std::min(chunk, kb) + 2 * std::min(write, ct) * 4 ||
                    config.acc_rows < 2 * std::min(group, ct)) {
                  EXPECT_THROW(plan::plan_gemm(s, plan::GemmOutput::kInt32, config, o), std::invalid_argument);
                  ++plans;
                  continue;
                }
                SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out) +
                             " N=" + std::to_string(config.n) + " transposed=" + std::to_string(t == T::kAlways) +
                             " group=" + std::to_string(group) + " chunk=" + std::to_string(chunk) +
                             " regions=" + std::to_string(regions) + " write=" + std::to_string(write));
                const GemmProgram g = check_random_gemm(s, o);
                for (const auto& program : g.programs) EXPECT_LE(program.size(), size_t(config.imem_depth));
                EXPECT_EQ(g.plan.transposed, t == T::kAlways);
                EXPECT_EQ(g.plan.a_regions, regions);
                ++plans;
              }
  }
  EXPECT_EQ(plans, 2 * 6 * 2 * 3 * 3 * 2 * 3);
}

// Plans with a head of one or two K blocks (tpu/plan/gemm.h), forced on odd
// shapes with partial tiles, in one pass or several, one group or several,
// transposed or not, at N = 4 and N = 16: exact, the image order the MMCs
// use, every range and weight count checked by the model. The first load
// is two RHMs (the head's blocks, then the rest) and the first RW comes
// before both.
TEST_F(GemmTest, EveryHeadIsExact) {
  using T = GemmOptions::Transpose;
  const GemmShape shapes[] = {{37, 29, 21}, {61, 50, 97}, {100, 100, 100}, {13, 301, 17}};
  const CoreConfig configs[] = {{.n = 4, .ub_rows = 256, .acc_rows = 128, .imem_depth = 256, .wgt_fifo_tiles = 4},
                                {.n = 16, .ub_rows = 4096, .acc_rows = 1024, .imem_depth = 1024, .wgt_fifo_tiles = 16}};
  int plans = 0;
  for (const CoreConfig& config : configs) {
    use_config(config);
    for (const GemmShape& s : shapes)
      for (const T t : {T::kNever, T::kAlways})
        for (const int head : {1, 2})
          for (const int rows : {0, 2 * config.n})
            for (const int group : {0, 1}) {
              const int kb = (s.k + config.n - 1) / config.n;
              if (head >= kb) continue;
              SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out) +
                           " N=" + std::to_string(config.n) + " transposed=" + std::to_string(t == T::kAlways) +
                           " head=" + std::to_string(head) + " rows=" + std::to_string(rows) +
                           " group=" + std::to_string(group));
              const GemmProgram g = check_random_gemm(
                  s, {.max_pass_rows = rows, .transpose = t, .group_tiles = group,
                      .order = GemmOptions::Order::kTileMajor, .head_blocks = head});
              ASSERT_EQ(g.plan.head_blocks, head);
              std::vector<uint8_t> reads;  // the ops of the RWs and RHMs before the first MMC
              for (const Instr& in : g.programs.front()) {
                if (in.op == uint8_t(Op::kMmc)) break;
                if (in.op == uint8_t(Op::kRw) || in.op == uint8_t(Op::kRhm)) reads.push_back(in.op);
              }
              EXPECT_EQ(reads, (std::vector<uint8_t>{uint8_t(Op::kRw), uint8_t(Op::kRhm)}))
                  << "the first RW, then the head's load, before the first MMC";
              ++plans;
            }
  }
  EXPECT_GE(plans, 50);
}

// The planner's own choice on the shapes of `make bench` and on odd ones, at
// the array sizes and memories of tiny, small, default, wide and v2: exact.
TEST_F(GemmTest, ChosenPlansAreExact) {
  const GemmShape shapes[] = {{64, 64, 64}, {100, 100, 100}, {200, 64, 40}, {64, 2000, 64},
                              {40, 64, 700}, {17, 33, 65}, {1, 4099, 2}, {3, 2, 4099}};
  for (const CoreConfig& config : {CoreConfig{.n = 4, .ub_rows = 256, .acc_rows = 128, .imem_depth = 256,
                                              .wgt_fifo_tiles = 4},
                                   CoreConfig{.n = 8, .wgt_fifo_tiles = 8}, CoreConfig{}, CoreConfig{.n = 32},
                                   CoreConfig{.n = 128, .acc_rows = 2048, .wgt_fifo_tiles = 8}}) {
    use_config(config);
    for (const GemmShape& s : shapes) {
      SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out) +
                   " N=" + std::to_string(config.n));
      check_random_gemm(s);
    }
  }
}

// Long K streams A through the UB in chunks and keeps every output tile of
// the pass in the accumulators: W crosses the link once.
TEST_F(GemmTest, LongKStreamsAInChunks) {
  const GemmProgram g = check_random_gemm({64, 4096, 64});
  EXPECT_FALSE(g.plan.transposed);
  EXPECT_EQ(g.plan.passes, 1);
  EXPECT_EQ(g.plan.group_tiles, 4);
  EXPECT_GT(g.plan.chunks, 1);
  uint64_t instructions = 0;
  for (const auto& program : g.programs) instructions += program.size();
  EXPECT_EQ(g.plan.estimate, plan::GemmCostModel(core_).cycles(g.plan, instructions))
      << "the chosen plan's estimate counts its real instructions";
}

// Many rows and few columns: the planner computes C^T = W^T x A^T, unless
// the epilogue has a bias per output column; int8 results too.
TEST_F(GemmTest, TallShapesAreTransposed) {
  EXPECT_TRUE(check_random_gemm({1024, 64, 64}).plan.transposed);
  EXPECT_FALSE(plan::plan_gemm({1024, 64, 64}, plan::GemmOutput::kInt32, core_, {.bias = true}).transposed);
  const GemmShape s{301, 45, 19};
  const MatrixI8 a = random_matrix(s.m, s.k), w = random_matrix(s.k, s.n_out);
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kInt8;
  epi.q = {.multiplier = 1518500250, .shift = 9, .zero_point = -3, .qmin = -100, .qmax = 90};
  epi.act = tpu::isa::Act::kRelu;
  const plan::GemmPlan plan =
      plan::plan_gemm(s, plan::GemmOutput::kInt8, core_, {.transpose = GemmOptions::Transpose::kAlways});
  ASSERT_TRUE(plan.transposed);
  constexpr uint64_t kA = 0x100000, kW = 0x200000, kC = 0x300000;
  mem_.write(kA, std::span<const int8_t>(plan::pack_a(plan, a)));
  mem_.write(kW, std::span<const int8_t>(plan::pack_w(plan, w)));
  for (const auto& prog : plan::gemm_programs(plan, epi, kA, kW, kC, core_)) run_ok(prog);
  const MatrixI32 acc = matmul_i8(a, w);
  MatrixI8 want(s.m, s.n_out);
  const std::array<int8_t, 256> lut{};
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n_out; ++j) want.at(i, j) = quant::act_lane(acc.at(i, j), 0, epi.q, epi.act, lut.data());
  EXPECT_EQ(plan::unpack_c_i8(plan, mem_.read(kC, plan.c_bytes())), want);
  epi.bias.assign(size_t(s.n_out), 1);
  EXPECT_THROW(plan::gemm_programs(plan, epi, kA, kW, kC, core_), std::invalid_argument)
      << "a transposed plan has no bias per output column";
}

// The planner's multi-program form with an int8 epilogue (bias, requantization,
// activation): every program runs in turn, and the packed result equals
// act_lane over the reference matmul.
TEST_F(GemmTest, Int8EpilogueAcrossSeveralPrograms) {
  use_config({.n = 8, .ub_rows = 128, .acc_rows = 32, .imem_depth = 24, .wgt_fifo_tiles = 2});
  const GemmShape s{37, 29, 21};
  const MatrixI8 a = random_matrix(s.m, s.k), w = random_matrix(s.k, s.n_out);
  plan::GemmEpilogue epi;
  epi.output = plan::GemmOutput::kInt8;
  epi.q = {.multiplier = 1518500250, .shift = 9, .zero_point = -3, .qmin = -100, .qmax = 90};
  epi.act = tpu::isa::Act::kRelu;
  for (int j = 0; j < s.n_out; ++j) epi.bias.push_back(rand_int(-50000, 50000));
  const plan::GemmPlan plan = plan::plan_gemm(s, plan::GemmOutput::kInt8, core_, {.bias = true});
  EXPECT_GT(plan.passes, 1);
  constexpr uint64_t kA = 0x100000, kW = 0x200000, kC = 0x300000;
  mem_.write(kA, std::span<const int8_t>(plan::pack_a(plan, a)));
  mem_.write(kW, std::span<const int8_t>(plan::pack_w(plan, w)));
  const auto programs = plan::gemm_programs(plan, epi, kA, kW, kC, core_);
  EXPECT_GT(programs.size(), 2u);
  for (const auto& prog : programs) {
    ASSERT_LE(prog.size(), size_t(core_.imem_depth));
    run_ok(prog);
  }
  EXPECT_EQ(model().pending_tiles(), 0u);
  const MatrixI32 acc = matmul_i8(a, w);
  MatrixI8 want(s.m, s.n_out);
  const std::array<int8_t, 256> lut{};
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n_out; ++j)
      want.at(i, j) = quant::act_lane(acc.at(i, j), epi.bias[size_t(j)], epi.q, epi.act, lut.data());
  EXPECT_EQ(plan::unpack_c_i8(plan, mem_.read(kC, plan.c_bytes())), want);
}

TEST_F(GemmTest, RejectsShapesThatDoNotFit) {
  use_config({.n = 16, .ub_rows = 8});  // one row of A and its int32 result need 9
  EXPECT_THROW(build_gemm(mem_, {4, 16 * 60, 16}, kAddrs, core_), std::invalid_argument);
  use_config({.n = 16, .ub_rows = 64});  // K = 960 streams through 64 UB rows in chunks
  check_random_gemm({4, 16 * 60, 16});
  use_config({.n = 16, .imem_depth = 16});
  EXPECT_GT(build_gemm(mem_, {100, 300, 200}, kAddrs, core_).programs.size(), 1u)
      << "a GEMM longer than the instruction memory is cut into programs";
  EXPECT_THROW(build_gemm(mem_, {0, 4, 4}, kAddrs, core_), std::invalid_argument);
}

// ---- ACT --------------------------------------------------------------------------------

struct DenseParams {
  quant::QuantParams q;
  Act func;
};

class ActTest : public ModelTest {
 protected:
  // y = act(X W + bias) for X 8 x 32, W 32 x 16 at N = 16, written in assembly.
  void check_dense_layer(const DenseParams& p) {
    const MatrixI8 x = random_matrix(8, 32), w = random_matrix(32, 16);
    std::vector<int32_t> bias(16);
    for (auto& b : bias) b = rand_int(-20000, 20000);
    std::vector<int8_t> lut(256);
    for (auto& v : lut) v = rand_i8();
    tpu::test::write_matrix(mem_, 0x1000, x);
    tpu::test::write_matrix(mem_, 0x2000, w);  // W's two 16-row blocks are the tiles

    std::string src = "cfg QMULT " + std::to_string(p.q.multiplier) + "\n" + "cfg QSHIFT " +
                      std::to_string(p.q.shift) + "\n" + "cfg QZP " +
                      std::to_string(p.q.zero_point) + "\n" + "cfg QMIN " +
                      std::to_string(p.q.qmin) + "\n" + "cfg QMAX " + std::to_string(p.q.qmax) +
                      "\n" + "cfg RELU6_MAX " + std::to_string(p.q.relu6_max) + "\n";
    for (int j = 0; j < 16; ++j)
      src += "cfg BIAS+" + std::to_string(j) + " " + std::to_string(bias[j]) + "\n";
    for (int i = 0; i < 256; ++i)
      src += "cfg LUT+" + std::to_string(i) + " " + std::to_string(uint8_t(lut[i])) + "\n";
    const std::string func = std::string(kActFuncNames[uint8_t(p.func)].name);
    src += R"(
      rhm ub=0 rows=8 host=0x1000 stride=32   # X[:, 0:16]
      rhm ub=8 rows=8 host=0x1010 stride=32   # X[:, 16:32]
      rw host=0x2000 tiles=2 stride=16
      mmc ub=0 acc=0 rows=8 pop
      mmc ub=8 acc=0 rows=8 acc pop
      act acc=0 ub=100 rows=8 bias func=)" +
           func + R"(
      whm ub=100 rows=8 host=0x3000 stride=16
      halt
    )";
    const RunResult r = run_asm(src);
    ASSERT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc;

    const MatrixI8 y = tpu::test::read_matrix_i8(mem_, 0x3000, 8, 16);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 16; ++j) {
        int64_t acc = 0;
        for (int k = 0; k < 32; ++k) acc += x.at(i, k) * w.at(k, j);
        const int8_t expected = quant::act_lane(int32_t(acc), bias[j], p.q, p.func, lut.data());
        ASSERT_EQ(y.at(i, j), expected) << "row " << i << " lane " << j << " acc " << acc;
      }
  }
};

TEST_F(ActTest, DenseLayerWithBiasRequantAndRelu) {
  for (int trial = 0; trial < 20; ++trial) {
    DenseParams p{{}, Act::kRelu};
    p.q.multiplier = rand_int(1 << 30, INT32_MAX);
    p.q.shift = rand_int(0, 12);
    p.q.zero_point = rand_int(-30, 30);
    check_dense_layer(p);
  }
}

TEST_F(ActTest, DenseLayerWithEveryFunctionAndClamp) {
  for (Act func : {Act::kNone, Act::kRelu, Act::kRelu6, Act::kLut})
    for (int trial = 0; trial < 5; ++trial) {
      DenseParams p{{}, func};
      p.q.multiplier = rand_int(INT32_MIN, INT32_MAX);
      p.q.shift = rand_int(0, 31);
      p.q.zero_point = rand_int(-200, 200);
      p.q.qmin = rand_int(-128, 0);
      p.q.qmax = rand_int(0, 127);
      p.q.relu6_max = rand_int(-128, 127);
      SCOPED_TRACE("func " + std::to_string(int(func)));
      check_dense_layer(p);
    }
}

// x = sat32(acc + bias) reaches any int32 through the bias: ACC row 0 is 0,
// row 1 large positive, row 2 large negative (so acc + bias saturates).
TEST_F(ActTest, RequantEdgeCasesMatchQuant) {
  load_ub(0, MatrixI8(1, 16, 127));
  mem_.write(0x2000, std::vector<uint8_t>(256, uint8_t(127)));
  mem_.write(0x2100, std::vector<uint8_t>(256, uint8_t(0x80)));  // -128
  run_ok(assemble(R"(
    rw host=0x2000 tiles=2 stride=16
    mmc ub=0 acc=1 rows=1 pop     # 16 * 127 * 127 = 258064
    mmc ub=0 acc=2 rows=1 pop     # 16 * 127 * -128 = -260096
    halt)"));
  const std::vector<int32_t> acc_rows[3] = {model().acc_row(0), model().acc_row(1),
                                            model().acc_row(2)};
  ASSERT_EQ(acc_rows[1][0], 258064);
  ASSERT_EQ(acc_rows[2][0], -260096);

  const int32_t multipliers[] = {INT32_MIN, INT32_MAX, 0x40000000,  1,
                                 -1,        0,         -0x40000000, rand_int(INT32_MIN, INT32_MAX)};
  for (int32_t m0 : multipliers)
    for (int shift = 0; shift <= 31; ++shift) {
      const int32_t bias[16] = {INT32_MIN,
                                INT32_MAX,
                                0,
                                1,
                                -1,
                                5,
                                -5,
                                1 << 30,
                                -(1 << 30),
                                123456789,
                                -987654321,
                                255,
                                -256,
                                int32_t(1u << shift),
                                int32_t(1 - (int64_t{1} << shift)),
                                rand_int(INT32_MIN, INT32_MAX)};
      quant::QuantParams q;
      q.multiplier = m0;
      q.shift = shift;
      q.zero_point = (shift % 3 == 0) ? -128 : (shift % 3 == 1 ? 0 : 100);
      std::vector<Instr> program = {cfg(kCfgQmult, uint32_t(m0)), cfg(kCfgQshift, uint32_t(shift)),
                                    cfg(kCfgQzp, uint32_t(q.zero_point))};
      for (int j = 0; j < 16; ++j) program.push_back(cfg(kCfgBiasBase + j, uint32_t(bias[j])));
      program.push_back(act(0, 10, 3, Act::kNone, true));
      program.push_back(act(0, 13, 3, Act::kRelu, true));
      program.push_back(halt());
      run_ok(program);
      for (int row = 0; row < 3; ++row)
        for (int j = 0; j < 16; ++j) {
          const int32_t a = acc_rows[row][j];
          ASSERT_EQ(model().ub_row(10 + row)[j],
                    quant::act_lane(a, bias[j], q, Act::kNone, nullptr))
              << "M0 " << m0 << " shift " << shift << " acc " << a << " bias " << bias[j];
          ASSERT_EQ(model().ub_row(13 + row)[j],
                    quant::act_lane(a, bias[j], q, Act::kRelu, nullptr))
              << "M0 " << m0 << " shift " << shift << " acc " << a << " bias " << bias[j];
        }
    }
}

// Per-lane scales: CH_MULT+j / CH_SHIFT+j give each lane its own M0 and
// exponent (every exponent -31..31 across the runs); QMULT / QSHIFT then set
// every lane back to one scale.
TEST_F(ActTest, PerLaneScalesAndBroadcast) {
  load_ub(0, MatrixI8(1, 16, 127));
  mem_.write(0x2000, std::vector<uint8_t>(256, uint8_t(127)));
  mem_.write(0x2100, std::vector<uint8_t>(256, uint8_t(0x80)));
  run_ok(assemble(R"(
    rw host=0x2000 tiles=2 stride=16
    mmc ub=0 acc=1 rows=1 pop     # 258064
    mmc ub=0 acc=2 rows=1 pop     # -260096
    halt)"));
  const std::vector<int32_t> acc_rows[3] = {model().acc_row(0), model().acc_row(1), model().acc_row(2)};
  for (int run = 0; run < 8; ++run) {
    quant::QuantParams p;
    p.zero_point = int32_t(rand_int(-20, 20));
    std::vector<quant::LaneScale> scale(16);
    std::vector<int32_t> bias(16);
    std::vector<Instr> program = {cfg(kCfgQzp, uint32_t(p.zero_point))};
    for (int j = 0; j < 16; ++j) {
      const int e = quant::kMinExponent + (run * 16 + j) % 63;
      scale[size_t(j)] = {int32_t(rand_int(j % 4 ? 1 << 30 : INT32_MIN, INT32_MAX)), e};
      bias[size_t(j)] = j % 5 == 0 ? int32_t(rand_int(INT32_MIN, INT32_MAX)) : int32_t(rand_int(-300000, 300000));
      program.push_back(cfg(kCfgBiasBase + j, uint32_t(bias[size_t(j)])));
      program.push_back(cfg(kCfgChMultBase + j, uint32_t(scale[size_t(j)].multiplier)));
      program.push_back(cfg(kCfgChShiftBase + j, uint32_t(e)));
    }
    program.push_back(act(0, 10, 3, Act::kNone, true));
    program.push_back(cfg(kCfgQmult, 0x55555555));
    program.push_back(cfg(kCfgQshift, uint32_t(run)));
    program.push_back(act(0, 13, 3, Act::kRelu, true));
    program.push_back(halt());
    run_ok(program);
    quant::QuantParams pt = p;
    pt.multiplier = 0x55555555;
    pt.shift = run;
    for (int row = 0; row < 3; ++row)
      for (int j = 0; j < 16; ++j) {
        const int32_t a = acc_rows[row][j];
        ASSERT_EQ(model().ub_row(10 + row)[j], quant::act_lane(a, bias[size_t(j)], scale[size_t(j)], p, Act::kNone, nullptr))
            << "lane " << j << " M0 " << scale[size_t(j)].multiplier << " e " << scale[size_t(j)].exponent;
        ASSERT_EQ(model().ub_row(13 + row)[j], quant::act_lane(a, bias[size_t(j)], pt, Act::kRelu, nullptr))
            << "after QMULT/QSHIFT, lane " << j;
      }
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(model().cfg(kCfgChMultBase + j), 0x55555555u);
      EXPECT_EQ(int32_t(model().cfg(kCfgChShiftBase + j)), -run);
    }
  }
}

TEST_F(ActTest, RawStoresLittleEndianInt32Rows) {
  for (int array : {4, 16}) {
    use_config({.n = array});
    const MatrixI8 a = random_matrix(3, array), w = random_matrix(array, array);
    load_ub(0, a);
    tpu::test::write_matrix(mem_, 0x2000, w);
    run_ok({rw(0x2000, 1, uint32_t(array)), mmc(0, 5, 3, false, true),
            act(5, 20, 3, Act::kNone, false, true), whm(20, 12, 0x9000, uint32_t(array)), halt()});
    const MatrixI32 expected = matmul_i8(a, w);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < array; ++j) {
        const uint32_t v = uint32_t(expected.at(i, j));
        for (int byte = 0; byte < 4; ++byte) {
          const int k = 4 * j + byte;  // byte k of the 4N-byte row
          ASSERT_EQ(uint8_t(model().ub_row(20 + 4 * i + k / array)[k % array]),
                    uint8_t(v >> (8 * byte)))
              << "row " << i << " lane " << j << " byte " << byte;
        }
        ASSERT_EQ(mem_.read32(0x9000 + (uint64_t(i) * array + j) * 4), v);
      }
  }
}

// Of a RAW result's four UB rows an ACT of fewer lanes writes those that
// hold them, R = ceil(lanes / (N / 4)) at b + R*i; the other rows of the
// region keep their bytes. One lane fits the UB's last row.
TEST_F(ActTest, RawOfFewerLanesWritesOnlyTheirRows) {
  for (int array : {4, 16}) {
    use_config({.n = array});
    const MatrixI8 a = random_matrix(3, array), w = random_matrix(array, array);
    const MatrixI32 expected = matmul_i8(a, w);
    load_ub(0, a);
    tpu::test::write_matrix(mem_, 0x2000, w);
    const int quarter = array / 4;
    for (int lanes = 1; lanes <= array; ++lanes) {
      const MatrixI8 old = random_matrix(12, array);
      load_ub(20, old);
      run_ok({rw(0x2000, 1, uint32_t(array)), mmc(0, 5, 3, false, true),
              act(5, 20, 3, Act::kNone, false, true, false, uint32_t(lanes)), halt()});
      const int parts = (lanes + quarter - 1) / quarter;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < parts * quarter; ++j)
          for (int byte = 0; byte < 4; ++byte) {
            const int k = 4 * j + byte;  // byte k of the result row
            ASSERT_EQ(uint8_t(model().ub_row(20 + parts * i + k / array)[k % array]),
                      uint8_t(uint32_t(expected.at(i, j)) >> (8 * byte)))
                << "N " << array << " lanes " << lanes << " row " << i << " lane " << j;
          }
      for (int r = 3 * parts; r < 12; ++r)
        for (int j = 0; j < array; ++j)
          ASSERT_EQ(model().ub_row(20 + r)[j], old.at(r, j)) << "N " << array << " lanes " << lanes << " UB row " << 20 + r;
    }
    const int last = model().config().ub_rows - 1;
    run_ok({act(5, uint32_t(last), 1, Act::kNone, false, true, false, 1), halt()});
    for (int byte = 0; byte < 4; ++byte)
      EXPECT_EQ(uint8_t(model().ub_row(last)[byte]), uint8_t(uint32_t(expected.at(0, 0)) >> (8 * byte)));
  }
}

// ---- VOP --------------------------------------------------------------------------------

TEST_F(ModelTest, VopElementWiseOpsMatchPlainLoops) {
  MatrixI8 a = random_matrix(8, 16), b = random_matrix(8, 16);
  for (int j = 0; j < 16; ++j) a.at(0, j) = 127, b.at(0, j) = int8_t(j * 8);    // saturate up
  for (int j = 0; j < 16; ++j) a.at(1, j) = -128, b.at(1, j) = int8_t(-j * 8);  // and down
  load_ub(0, a);
  load_ub(8, b);
  const int shift = rand_int(0, 15);
  run_ok({vop(VopOp::kAdd, 0, 8, 16, 8), vop(VopOp::kMul, 0, 8, 24, 8, shift), vop(VopOp::kMax, 0, 8, 32, 8),
          vop(VopOp::kMul, 0, 8, 40, 8, 0), vop(VopOp::kMin, 0, 8, 48, 8), halt()});
  const auto sat8 = [](int64_t v) { return int8_t(std::clamp<int64_t>(v, -128, 127)); };
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) {
      const int x = a.at(i, j), y = b.at(i, j);
      EXPECT_EQ(model().ub_row(16 + i)[j], sat8(x + y)) << x << " + " << y;
      EXPECT_EQ(model().ub_row(24 + i)[j], sat8(quant::rdbp(x * y, shift))) << x << " * " << y;
      EXPECT_EQ(model().ub_row(32 + i)[j], int8_t(std::max(x, y)));
      EXPECT_EQ(model().ub_row(40 + i)[j], sat8(x * y));
      EXPECT_EQ(model().ub_row(48 + i)[j], int8_t(std::min(x, y)));
    }
}

TEST_F(ModelTest, VopPoolsReduceConsecutiveRows) {
  const MatrixI8 a = random_matrix(32, 16);
  load_ub(0, a);
  for (int shift = 0; shift <= 4; ++shift) {
    const int window = 1 << shift, rows = 32 / window;
    run_ok({vop(VopOp::kPoolMax, 0, 0, 100, uint32_t(rows), shift),
            vop(VopOp::kPoolAvg, 0, 0, 200, uint32_t(rows), shift), halt()});
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < 16; ++j) {
        int best = -128, sum = 0;
        for (int r = 0; r < window; ++r) {
          best = std::max<int>(best, a.at(i * window + r, j));
          sum += a.at(i * window + r, j);
        }
        ASSERT_EQ(model().ub_row(100 + i)[j], best) << "shift " << shift << " row " << i;
        ASSERT_EQ(model().ub_row(200 + i)[j],
                  int8_t(std::clamp(quant::rdbp(sum, shift), -128, 127)))
            << "shift " << shift << " row " << i << " sum " << sum;
      }
  }
}

TEST_F(ModelTest, VopInPlaceOnTheSameRows) {
  const MatrixI8 a = random_matrix(4, 16), b = random_matrix(4, 16);
  load_ub(0, a);
  load_ub(4, b);
  run_ok({vop(VopOp::kAdd, 0, 4, 0, 4), halt()});  // dst = src A
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 16; ++j)
      ASSERT_EQ(model().ub_row(i)[j], quant::sat8(a.at(i, j) + b.at(i, j)));
}

// ---- LOOP ---------------------------------------------------------------------------------

TEST_F(ModelTest, LoopOffsetsUbAndHostAddresses) {
  const MatrixI8 src = random_matrix(8, 16);
  tpu::test::write_matrix(mem_, 0x1000, src);
  // Pairs of rows land in reverse pair order (negative UB increment); then a
  // looped WHM writes them back out with a gap of one row between pairs.
  const RunResult r = run_asm(R"(
    loop n=4 body=1 ub_inc=-2 host_inc=32
    rhm ub=6 rows=2 host=0x1000 stride=16
    loop n=4 body=1 ub_inc=2 host_inc=48
    whm ub=0 rows=2 host=0x8000 stride=16
    halt)");
  ASSERT_EQ(r.err, ErrCode::kOk);
  EXPECT_EQ(r.instructions, 1 + 4 + 1 + 4 + 1u);
  for (int pair = 0; pair < 4; ++pair)
    for (int q = 0; q < 2; ++q) {
      const int ub = 6 - 2 * pair + q;  // where source row 2*pair+q went
      for (int j = 0; j < 16; ++j) ASSERT_EQ(model().ub_row(ub)[j], src.at(2 * pair + q, j));
      const uint64_t out = 0x8000 + uint64_t(ub / 2) * 48 + (ub % 2) * 16;
      for (int j = 0; j < 16; ++j) ASSERT_EQ(int8_t(mem_.read8(out + j)), src.at(2 * pair + q, j));
    }
}

TEST_F(ModelTest, OffsetsEndWithTheLoopBody) {
  const MatrixI8 src = random_matrix(4, 16);
  tpu::test::write_matrix(mem_, 0x1000, src);
  // After the loop the offsets (ub +10, host +16 in the last iteration) are gone.
  run_ok(assemble(R"(
    loop n=3 body=1 ub_inc=5 host_inc=16
    rhm ub=0 rows=1 host=0x1000 stride=16
    rhm ub=40 rows=1 host=0x1030 stride=16
    whm ub=40 rows=1 host=0x8000 stride=16
    halt)"));
  for (int j = 0; j < 16; ++j) {
    for (int t = 0; t < 3; ++t) ASSERT_EQ(model().ub_row(5 * t)[j], src.at(t, j));
    ASSERT_EQ(model().ub_row(40)[j], src.at(3, j));
    ASSERT_EQ(int8_t(mem_.read8(0x8000 + j)), src.at(3, j));
  }
  EXPECT_EQ(model().ub_row(50), std::vector<int8_t>(16, 0));
}

TEST_F(ModelTest, LoopOffsetsAccAndWeightAddresses) {
  const MatrixI8 a = random_matrix(6, 16), w0 = random_matrix(16, 16), w1 = random_matrix(16, 16);
  load_ub(0, a);
  tpu::test::write_matrix(mem_, 0x2000, w0);
  tpu::test::write_matrix(mem_, 0x2100, w1);
  const RunResult r = run_asm(R"(
    rw host=0x2000 tiles=1 stride=16
    loop n=3 body=1 ub_inc=2 acc_inc=5
    mmc ub=0 acc=0 rows=2            # ACC[5t..5t+1] = A[2t..2t+1] W0, tile kept
    mmc ub=0 acc=100 rows=1 pop
    loop n=2 body=2 host_inc=256 acc_inc=1
    rw host=0x2000 tiles=1 stride=16 # W0 then W1
    mmc ub=0 acc=200 rows=1 pop
    halt)");
  ASSERT_EQ(r.err, ErrCode::kOk) << "at pc " << r.err_pc;
  const MatrixI32 p0 = matmul_i8(a, w0), p1 = matmul_i8(a, w1);
  for (int t = 0; t < 3; ++t)
    for (int q = 0; q < 2; ++q)
      for (int j = 0; j < 16; ++j) ASSERT_EQ(model().acc_row(5 * t + q)[j], p0.at(2 * t + q, j));
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(model().acc_row(200)[j], p0.at(0, j));
    EXPECT_EQ(model().acc_row(201)[j], p1.at(0, j));
  }
  EXPECT_EQ(model().pending_tiles(), 0u);
}

TEST_F(ModelTest, LoopOffsetsVopAndActButNotPoolB) {
  const MatrixI8 a = random_matrix(16, 16);
  load_ub(0, a);
  run_ok(assemble(R"(
    loop n=3 body=2 ub_inc=1
    vop poolmax a=0 dst=40 rows=1 shift=1   # b stays 0 although ub_inc = 1
    vop add a=0 b=8 dst=50 rows=1
    halt)"));
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(model().ub_row(40 + t)[j], std::max(a.at(t, j), a.at(t + 1, j)));
      EXPECT_EQ(model().ub_row(50 + t)[j], quant::sat8(a.at(t, j) + a.at(8 + t, j)));
    }
  // ACT: ACC rows come from an identity tile, then a looped RAW ACT.
  MatrixI8 identity(16, 16);
  for (int k = 0; k < 16; ++k) identity.at(k, k) = 1;
  tpu::test::write_matrix(mem_, 0x2000, identity);
  run_ok(assemble(R"(
    rw host=0x2000 tiles=1 stride=16
    mmc ub=0 acc=0 rows=2 pop
    loop n=2 body=1 ub_inc=4 acc_inc=1
    act acc=0 ub=60 rows=1 raw
    halt)"));
  for (int t = 0; t < 2; ++t)
    for (int j = 0; j < 16; ++j) {
      const int k = 4 * j;  // low byte of lane j
      EXPECT_EQ(model().ub_row(60 + 4 * t + k / 16)[k % 16], a.at(t, j)) << "iteration " << t;
    }
}

TEST_F(ModelTest, LoopCountsIrqsAndStopsAtHalt) {
  RunResult r = run_asm("loop n=3 body=1\n irq\n irq\n halt");
  EXPECT_EQ(r.err, ErrCode::kOk);
  EXPECT_EQ(r.irqs, 4u);
  EXPECT_EQ(r.instructions, 1 + 3 + 1 + 1u);
  r = run_asm("loop n=5 body=2\n irq\n halt");
  EXPECT_EQ(r.err, ErrCode::kOk);
  EXPECT_EQ(r.irqs, 1u);
  EXPECT_EQ(r.instructions, 3u);
}

TEST_F(ModelTest, LoopOffsetOutOfRangeFaultsInThatIteration) {
  load_ub(0, random_matrix(4, 16));
  mem_.write(kMarker, std::vector<uint8_t>(64, 0xAA));
  // Iteration 1 writes UB row -1: iteration 0 has run, nothing after it.
  const RunResult r = run_asm(R"(
    loop n=4 body=1 ub_inc=-1
    whm ub=0 rows=1 host=0xF000 stride=16
    halt)");
  EXPECT_EQ(r.err, ErrCode::kUbRange);
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_EQ(r.instructions, 2u);  // LOOP and iteration 0; iteration 1 is ub=-1
  EXPECT_EQ(mem_.read8(kMarker), uint8_t(model().ub_row(0)[0]));
}

// ---- Errors ---------------------------------------------------------------------------------

struct ErrorCase {
  std::string name;
  std::vector<Instr> program;  // a WHM over the marker and a HALT follow
  ErrCode err;
  uint32_t pc;
};

Instr with(Instr in, void (*edit)(Instr&)) {
  edit(in);
  return in;
}

std::vector<ErrorCase> error_cases() {
  const Instr loop2 = loop(2, 2);
  return {
      {"zero opcode", {irq(), Instr{}}, ErrCode::kIllegalOpcode, 1},
      {"opcode 0x0C", {decode(0x0C, 0)}, ErrCode::kIllegalOpcode, 0},
      {"opcode 0xFF", {irq(), irq(), decode(0xFF, 0)}, ErrCode::kIllegalOpcode, 2},
      {"MMC flag bit 2", {with(mmc(0, 0, 1, false, true), [](Instr& i) { i.flags |= 4; })}, ErrCode::kBadFlags, 0},
      {"MMC c", {with(mmc(0, 0, 1, false, true), [](Instr& i) { i.c = 1; })}, ErrCode::kBadFlags, 0},
      {"ACT RAW with BIAS", {act(0, 0, 1, Act::kNone, true, true)}, ErrCode::kBadFlags, 0},
      {"ACT RAW with FUNC", {act(0, 0, 1, Act::kRelu, false, true)}, ErrCode::kBadFlags, 0},
      {"ACT flag bit 4",
       {with(act(0, 0, 1, Act::kNone, false), [](Instr& i) { i.flags |= 0x10; })},
       ErrCode::kBadFlags,
       0},
      {"VOP ADD shift", {vop(VopOp::kAdd, 0, 1, 2, 1, 1)}, ErrCode::kBadFlags, 0},
      {"VOP MAX shift", {vop(VopOp::kMax, 0, 1, 2, 1, 3)}, ErrCode::kBadFlags, 0},
      {"VOP MIN shift", {vop(VopOp::kMin, 0, 1, 2, 1, 1)}, ErrCode::kBadFlags, 0},
      {"VOP POOLMAX shift 5", {vop(VopOp::kPoolMax, 0, 0, 2, 1, 5)}, ErrCode::kBadFlags, 0},
      {"VOP POOLAVG b", {vop(VopOp::kPoolAvg, 0, 1, 2, 1, 1)}, ErrCode::kBadFlags, 0},
      {"VOP op 6", {decode(0x0000'0000'0001'06'06ull, 0)}, ErrCode::kBadFlags, 0},
      {"VOP flag bit 3", {decode(0x0000'0000'0001'08'06ull, 0)}, ErrCode::kBadFlags, 0},
      {"VOP c bit 16", {decode(0x0000'0000'0001'00'06ull, 0x10000)}, ErrCode::kBadFlags, 0},
      {"CFG b", {with(cfg(kCfgQzp, 0), [](Instr& i) { i.b = 1; })}, ErrCode::kBadFlags, 0},
      {"CFG c bit 32", {decode(0x07, uint64_t{1} << 32)}, ErrCode::kBadFlags, 0},
      {"RW a", {with(rw(0, 1, 16), [](Instr& i) { i.a = 1; })}, ErrCode::kBadFlags, 0},
      {"RHM flags", {with(rhm(0, 1, 0, 16), [](Instr& i) { i.flags = 1; })}, ErrCode::kBadFlags, 0},
      {"SYNC mask bit 4", {decode(0x10'08, 0)}, ErrCode::kBadFlags, 0},
      {"HALT c", {decode(0x0B, 1)}, ErrCode::kBadFlags, 0},
      {"IRQ b", {with(irq(), [](Instr& i) { i.b = 1; })}, ErrCode::kBadFlags, 0},
      {"LOOP c bit 16", {with(loop(1, 1), [](Instr& i) { i.c = 0x10000; }), irq()}, ErrCode::kBadFlags, 0},
      {"RHM past UB", {rhm(4090, 7, 0, 16)}, ErrCode::kUbRange, 0},
      {"WHM past UB", {whm(4095, 2, 0, 16)}, ErrCode::kUbRange, 0},
      {"ACT RAW past UB", {act(0, 4093, 1, Act::kNone, false, true)}, ErrCode::kUbRange, 0},
      {"ACT RAW of 5 lanes past UB", {act(0, 4095, 1, Act::kNone, false, true, false, 5)}, ErrCode::kUbRange, 0},
      {"ACT of 17 lanes", {act(0, 0, 1, Act::kNone, false, false, false, 17)}, ErrCode::kBadFlags, 0},
      {"ACT RAW of 17 lanes", {act(0, 0, 1, Act::kNone, false, true, false, 17)}, ErrCode::kBadFlags, 0},
      {"ACT c bit 16", {with(act(0, 0, 1, Act::kNone, false), [](Instr& i) { i.c = 0x10000; })}, ErrCode::kBadFlags, 0},
      {"VOP pool window past UB", {vop(VopOp::kPoolAvg, 4090, 0, 0, 1, 3)}, ErrCode::kUbRange, 0},
      {"VOP B past UB", {vop(VopOp::kAdd, 0, 4095, 0, 2)}, ErrCode::kUbRange, 0},
      {"VOP dst past UB", {vop(VopOp::kMax, 0, 0, 4095, 2)}, ErrCode::kUbRange, 0},
      {"MMC A past UB", {rw(0, 1, 16), mmc(4095, 0, 2, false, true)}, ErrCode::kUbRange, 1},
      {"MMC past ACC", {rw(0, 1, 16), mmc(0, 1020, 5, false, true)}, ErrCode::kAccRange, 1},
      {"ACT past ACC", {act(1023, 0, 2, Act::kNone, false)}, ErrCode::kAccRange, 0},
      {"RHM rows 0", {rhm(0, 0, 0, 16)}, ErrCode::kBadCount, 0},
      {"RW tiles 0", {rw(0, 0, 16)}, ErrCode::kBadCount, 0},
      {"CFG count 1", {with(cfg(kCfgQzp, 0), [](Instr& i) { i.count = 1; })}, ErrCode::kBadCount, 0},
      {"SYNC count 1", {with(sync(0), [](Instr& i) { i.count = 1; })}, ErrCode::kBadCount, 0},
      {"HALT count 1", {decode(0x1'00'0B, 0)}, ErrCode::kBadCount, 0},
      {"LOOP n 0", {loop(0, 1), irq()}, ErrCode::kBadCount, 0},
      {"LOOP body 0", {loop(2, 0)}, ErrCode::kBadCount, 0},
      {"LOOP body 256", {loop(2, 256)}, ErrCode::kBadCount, 0},
      {"LOOP body past imem", {irq(), loop(2, 1023)}, ErrCode::kBadCount, 1},
      {"nested LOOP", {loop2, irq(), loop(1, 1), irq()}, ErrCode::kNestedLoop, 2},
      {"CFG index 0x006", {cfg(0x006, 0)}, ErrCode::kBadCfg, 0},
      {"CFG index 0x500", {cfg(0x500, 0)}, ErrCode::kBadCfg, 0},
      {"CFG CH_MULT past N", {cfg(kCfgChMultBase + 16, 0)}, ErrCode::kBadCfg, 0},
      {"CFG CH_SHIFT past N", {cfg(kCfgChShiftBase + 16, 0)}, ErrCode::kBadCfg, 0},
      {"CFG CH_SHIFT 32", {cfg(kCfgChShiftBase + 3, 32)}, ErrCode::kBadCfg, 0},
      {"CFG CH_SHIFT -32", {cfg(kCfgChShiftBase + 3, uint32_t(-32))}, ErrCode::kBadCfg, 0},
      {"CFG BIAS past N", {cfg(kCfgBiasBase + 16, 0)}, ErrCode::kBadCfg, 0},
      {"CFG QSHIFT 32", {cfg(kCfgQshift, 32)}, ErrCode::kBadCfg, 0},
      {"CFG QSHIFT -1", {cfg(kCfgQshift, uint32_t(-1))}, ErrCode::kBadCfg, 0},
      {"CFG QMIN 128", {cfg(kCfgQmin, 128)}, ErrCode::kBadCfg, 0},
      {"CFG QMAX -129", {cfg(kCfgQmax, uint32_t(-129))}, ErrCode::kBadCfg, 0},
      {"CFG RELU6_MAX 200", {cfg(kCfgRelu6Max, 200)}, ErrCode::kBadCfg, 0},
      {"CFG LUT 256", {cfg(kCfgLutBase + 7, 256)}, ErrCode::kBadCfg, 0},
      {"CFG LUT -1", {cfg(kCfgLutBase + 7, uint32_t(-1))}, ErrCode::kBadCfg, 0},
      {"MMC without RW", {mmc(0, 0, 1, false, true)}, ErrCode::kNoWeights, 0},
      {"MMC after the last POP",
       {rw(0, 1, 16), mmc(0, 0, 1, false, false), mmc(0, 0, 1, true, true), mmc(0, 0, 1, true, true)},
       ErrCode::kNoWeights,
       3},
      // The default capacity: 16 FIFO tiles + 2 banks.
      {"RW of 19 tiles", {rw(0, 19, 16)}, ErrCode::kWgtOverflow, 0},
      {"RW 16 then 3", {rw(0, 16, 16), rw(0, 3, 16)}, ErrCode::kWgtOverflow, 1},
      // Several faults in one instruction: the first in docs/isa.md's order.
      {"BAD_FLAGS before BAD_COUNT", {with(rhm(0, 0, 0, 16), [](Instr& i) { i.flags = 1; })}, ErrCode::kBadFlags, 0},
      {"BAD_COUNT before UB_RANGE", {rhm(5000, 0, 0, 16)}, ErrCode::kBadCount, 0},
      {"BAD_COUNT before NESTED_LOOP", {loop2, irq(), loop(1, 0)}, ErrCode::kBadCount, 2},
      {"UB_RANGE before ACC_RANGE", {rw(0, 1, 16), mmc(5000, 5000, 1, false, true)}, ErrCode::kUbRange, 1},
      {"ACC_RANGE before NO_WEIGHTS", {mmc(0, 5000, 1, false, true)}, ErrCode::kAccRange, 0},
  };
}

TEST_F(ModelTest, EveryErrorStopsAtItsInstruction) {
  for (const ErrorCase& c : error_cases()) {
    SCOPED_TRACE(c.name);
    use_config({});
    mem_.write(kMarker, std::vector<uint8_t>(16, 0xAA));
    std::vector<Instr> program = c.program;
    program.push_back(whm(0, 1, kMarker, 16));  // UB row 0 is zero: would clear the marker
    program.push_back(halt());
    const RunResult r = run(program);
    EXPECT_EQ(r.err, c.err);
    EXPECT_EQ(r.err_pc, c.pc);
    EXPECT_EQ(mem_.read8(kMarker), 0xAA) << "an instruction after the fault ran";
    EXPECT_EQ(model().pending_tiles(), 0u) << "an error discards the tiles";
    // The next start runs normally.
    const RunResult next = run({irq(), halt()}, 100);
    EXPECT_EQ(next.err, ErrCode::kOk);
    EXPECT_EQ(next.irqs, 1u);
  }
}

TEST_F(ModelTest, EveryErrorCodeIsCovered) {
  // Own tests: MEM_FAULT and PC_RANGE here, WGT_FORMAT in model_bf16_test.cpp
  // (it needs a core with the bf16 datapath).
  std::set<ErrCode> seen = {ErrCode::kOk, ErrCode::kMemFault, ErrCode::kPcRange, ErrCode::kWgtFormat};
  for (const ErrorCase& c : error_cases()) seen.insert(c.err);
  EXPECT_EQ(seen.size(), std::size(kErrors));
}

TEST_F(ModelTest, MemFaultStopsTheTransferAtTheFaultingRow) {
  const MatrixI8 src = random_matrix(6, 16);
  tpu::test::write_matrix(mem_, 0x5000, src);
  mem_.add_fault(0x5000 + 3 * 16 + 5, 1);  // inside row 3
  mem_.write(kMarker, std::vector<uint8_t>(16, 0xAA));
  RunResult r = run({irq(), rhm(0, 6, 0x5000, 16), whm(0, 1, kMarker, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.err_pc, 1u);
  for (int row = 0; row < 6; ++row)
    for (int j = 0; j < 16; ++j)
      ASSERT_EQ(model().ub_row(row)[j], row < 3 ? src.at(row, j) : 0) << "row " << row;
  EXPECT_EQ(mem_.read8(kMarker), 0xAA);

  // A WHM and an RW fault the same way; an RW's tiles are discarded.
  r = run({whm(0, 4, 0x5000 - 16, 16), whm(0, 5, 0x5000 - 16, 16), halt()});  // row 4 faults
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.err_pc, 1u);
  r = run({rw(0x9000, 1, 16), rw(0x5000, 1, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_EQ(model().pending_tiles(), 0u);

  // Rows next to the fault but not touching it are fine.
  r = run({rhm(0, 3, 0x5000, 16), rhm(3, 2, 0x5000 + 3 * 16 + 6, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kOk);
  mem_.clear_faults();
  EXPECT_EQ(run({rhm(0, 6, 0x5000, 16), halt()}).err, ErrCode::kOk);
}

// ---- DMA windows (docs/host_interface.md) ----------------------------------------------------

TEST(HostSpan, CoversEveryRowOfTheInstruction) {
  const auto span = [](const Instr& in, uint64_t offset = 0, int n = 16) {
    const std::optional<HostSpan> s = host_span(in, offset, n);
    EXPECT_TRUE(s.has_value()) << disassemble(in);
    return s.value_or(HostSpan{});
  };
  HostSpan s = span(rhm(0, 3, 0x1000, 32));  // rows at 0x1000, 0x1020, 0x1040, 16 bytes each
  EXPECT_EQ(s.first, 0x1000u);
  EXPECT_EQ(s.last, 0x104Fu);
  EXPECT_FALSE(s.write);
  EXPECT_FALSE(s.wraps);
  s = span(whm(0, 1, 0x2000, 0));
  EXPECT_EQ(s.last, 0x200Fu);
  EXPECT_TRUE(s.write);
  s = span(rhm(0, 5, 0x2000, 0));  // stride 0: one row read five times
  EXPECT_EQ(s.last, 0x200Fu);
  s = span(rhm(0, 2, 0x2000, 4), 0, 4);  // N = 4
  EXPECT_EQ(s.last, 0x2007u);
  // RW: count tiles of N rows each.
  s = span(rw(0x3000, 2, 16));
  EXPECT_EQ(s.first, 0x3000u);
  EXPECT_EQ(s.last, 0x3000u + 31 * 16 + 15);
  EXPECT_FALSE(s.write);
  s = span(rw(0x3000, 1, 8), 0, 4);
  EXPECT_EQ(s.last, 0x3000u + 3 * 8 + 3);
  // The LOOP's host offset moves the whole span, up or down (two's complement).
  s = span(rhm(0, 2, 0x1000, 16), 0x300);
  EXPECT_EQ(s.first, 0x1300u);
  EXPECT_EQ(s.last, 0x131Fu);
  s = span(whm(0, 1, 0x1000, 16), uint64_t(-0x100));
  EXPECT_EQ(s.first, 0xF00u);
  EXPECT_EQ(s.last, 0xF0Fu);
  // The first address wraps like any host address; the span may end at 2^64 - 1 ...
  s = span(rhm(0, 1, 0x10, 16), uint64_t(-0x20));
  EXPECT_EQ(s.first, UINT64_MAX - 0xF);
  EXPECT_EQ(s.last, UINT64_MAX);
  EXPECT_FALSE(s.wraps);
  // ... but not run past it.
  s = span(rhm(0, 1, UINT64_MAX - 0xE, 16));
  EXPECT_TRUE(s.wraps);
  s = span(rhm(0, 2, UINT64_MAX - 0x1F, 16));
  EXPECT_FALSE(s.wraps);
  EXPECT_EQ(s.last, UINT64_MAX);
  s = span(rhm(0, 2, UINT64_MAX - 0x1F, 17));
  EXPECT_TRUE(s.wraps);
  s = span(rw(UINT64_MAX - 255, 1, 16), 1);
  EXPECT_TRUE(s.wraps);
  // Instructions that do not touch host memory have no span.
  EXPECT_FALSE(host_span(mmc(0, 0, 1, false, false), 0, 16));
  EXPECT_FALSE(host_span(halt(), 0, 16));
  EXPECT_FALSE(host_span(rhm(0, 0, 0x1000, 16), 0, 16));  // count 0 (BAD_COUNT first)
}

constexpr uint8_t kR = tpu::kWindowRead, kW = tpu::kWindowWrite, kRW = tpu::kWindowReadWrite;

class ModelWindowTest : public ModelTest {
 protected:
  // UB rows 0..15 hold 0x11 and the host bytes around the windows 0xAA, so
  // anything a faulting instruction moved would show.
  void SetUp() override {
    ModelTest::SetUp();
    mem_.write(0x4F00, std::vector<uint8_t>(0x400, 0xAA));
    for (int r = 0; r < 16; ++r) mem_.write(0x9000 + uint64_t(r) * 16, std::vector<uint8_t>(16, 0x11));
    model().set_windows(std::vector<tpu::Window>{{0x9000, 256, kR}});
    ASSERT_EQ(run({rhm(0, 16, 0x9000, 16), halt()}).err, ErrCode::kOk);
    before_ = mem_.read(0x4F00, 0x400);
  }
  // The instruction at pc faulted on the window for `write` at addr, and
  // neither the UB nor host memory changed.
  void expect_window_fault(const RunResult& r, uint32_t pc, bool write, uint64_t addr) {
    EXPECT_EQ(r.err, ErrCode::kMemFault);
    EXPECT_EQ(r.err_pc, pc);
    EXPECT_EQ(r.fault, write ? RunResult::Fault::kWindowWrite : RunResult::Fault::kWindowRead);
    EXPECT_EQ(r.fault_addr, addr);
    EXPECT_EQ(mem_.read(0x4F00, 0x400), before_) << "host bytes changed";
    for (int row = 0; row < 16; ++row)
      EXPECT_EQ(model().ub_row(uint32_t(row)), std::vector<int8_t>(16, 0x11)) << "UB row " << row;
  }
  void grant(std::vector<tpu::Window> windows) { model().set_windows(std::move(windows)); }
  std::vector<uint8_t> before_;
};

TEST_F(ModelWindowTest, AccessesInsideOneWindowOfTheirDirectionRun) {
  grant({{0x5000, 96, kR}, {0x5100, 64, kW}, {0x5200, 64, kRW}});
  run_ok({rhm(0, 6, 0x5000, 16), whm(0, 4, 0x5100, 16), rhm(0, 4, 0x5200, 16), whm(0, 4, 0x5200, 16),
          halt()});
  grant({{0x5000, 256, kR}});
  run_ok({rw(0x5000, 1, 16), mmc(0, 0, 1, false, true), halt()});
  EXPECT_EQ(model().pending_tiles(), 0u);
}

TEST_F(ModelWindowTest, ASpanOneBytePastTheWindowFaultsAndMovesNothing) {
  grant({{0x5000, 96, kR}, {0x5100, 64, kW}});
  expect_window_fault(run({irq(), rhm(0, 6, 0x5001, 16), whm(0, 1, 0x5100, 16), halt()}), 1, false,
                      0x5001);
  expect_window_fault(run({whm(0, 4, 0x5101, 16), halt()}), 0, true, 0x5101);
  // The last row's end counts, not just its start: stride 40 ends row 2 on the
  // window's last byte, stride 41 one byte past it.
  expect_window_fault(run({rhm(0, 3, 0x5000, 41), halt()}), 0, false, 0x5000);
  // Starting one byte before the window.
  expect_window_fault(run({rhm(0, 1, 0x4FFF, 16), halt()}), 0, false, 0x4FFF);
  EXPECT_EQ(run({rhm(0, 3, 0x5000, 40), halt()}).err, ErrCode::kOk);
}

TEST_F(ModelWindowTest, DirectionsAreGrantedSeparately) {
  grant({{0x5000, 256, kR}, {0x5100, 256, kW}});
  expect_window_fault(run({whm(0, 1, 0x5000, 16), halt()}), 0, true, 0x5000);  // read-only
  expect_window_fault(run({rhm(0, 1, 0x5100, 16), halt()}), 0, false, 0x5100);  // write-only
  expect_window_fault(run({rw(0x5100, 1, 16), halt()}), 0, false, 0x5100);      // RW reads
  EXPECT_EQ(model().pending_tiles(), 0u);
}

TEST_F(ModelWindowTest, ASpanAcrossTwoAdjacentWindowsFaults) {
  // Each half is granted, but no single window holds both.
  grant({{0x5000, 48, kR}, {0x5030, 48, kR}});
  expect_window_fault(run({rhm(0, 4, 0x5000, 16), halt()}), 0, false, 0x5000);
  run_ok({rhm(0, 3, 0x5000, 16), rhm(3, 3, 0x5030, 16), halt()});
}

TEST_F(ModelWindowTest, LoopOffsetsWalkingOutOfTheWindowFaultOnTheFirstOutsideIteration) {
  grant({{0x5000, 96, kR}, {0x9000, 256, kR}});
  // Iterations read 0x5000, 0x5020, 0x5040 (ending at 0x505F, inside), then 0x5060.
  const RunResult r = run({loop(4, 1, 2, 0, 32), rhm(0, 2, 0x5000, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.err_pc, 1u);
  EXPECT_EQ(r.fault, RunResult::Fault::kWindowRead);
  EXPECT_EQ(r.fault_addr, 0x5060u);
  for (int row = 0; row < 16; ++row)
    EXPECT_EQ(model().ub_row(uint32_t(row)), std::vector<int8_t>(16, row < 6 ? int8_t(0xAA) : 0x11))
        << "UB row " << row;
  // Walking down below the window, with a negative increment.
  grant({{0x5000, 96, kW}});
  const RunResult down = run({loop(3, 1, 0, 0, -16), whm(0, 1, 0x5010, 16), halt()});
  EXPECT_EQ(down.err, ErrCode::kMemFault);
  EXPECT_EQ(down.fault, RunResult::Fault::kWindowWrite);
  EXPECT_EQ(down.fault_addr, 0x4FF0u);
  EXPECT_EQ(mem_.read(0x4FF0, 16), std::vector<uint8_t>(16, 0xAA));
}

TEST_F(ModelWindowTest, NoWindowsNoHostMemory) {
  grant({});
  expect_window_fault(run({rhm(0, 1, 0x5000, 16), halt()}), 0, false, 0x5000);
  expect_window_fault(run({irq(), whm(0, 1, 0x5000, 16), halt()}), 1, true, 0x5000);
  // Programs that stay in the core still run.
  run_ok({irq(), vop(VopOp::kAdd, 0, 1, 2, 1), halt()});
  // Without a window list (the default) nothing is checked.
  model().set_windows(std::nullopt);
  run_ok({rhm(0, 1, 0x5000, 16), halt()});
}

TEST_F(ModelWindowTest, ASpanPastTheTopOfMemoryAlwaysFaults) {
  grant({{UINT64_MAX - 31, 32, kRW}});
  run_ok({rhm(0, 2, UINT64_MAX - 31, 16), whm(0, 2, UINT64_MAX - 31, 16), halt()});
  const RunResult r = run({rhm(0, 3, UINT64_MAX - 31, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.fault, RunResult::Fault::kWindowRead);
  // Wrapping onto a window at address 0 does not help either.
  grant({{UINT64_MAX - 31, 32, kRW}, {0, 256, kRW}});
  EXPECT_EQ(run({rhm(0, 3, UINT64_MAX - 31, 16), halt()}).err, ErrCode::kMemFault);
}

TEST_F(ModelWindowTest, TheInstructionsOwnChecksComeFirst) {
  grant({});
  // UB_RANGE and WGT_OVERFLOW are reported before the window check.
  RunResult r = run({rhm(4095, 2, 0x5000, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kUbRange);
  EXPECT_EQ(r.fault, RunResult::Fault::kNone);
  r = run({rw(0x5000, 19, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kWgtOverflow);
}

TEST_F(ModelWindowTest, AMemoryPortErrorInsideAWindowIsStillReported) {
  grant({{0x5000, 256, kR}});
  mem_.add_fault(0x5020, 1);
  const RunResult r = run({rhm(0, 4, 0x5000, 16), halt()});
  EXPECT_EQ(r.err, ErrCode::kMemFault);
  EXPECT_EQ(r.fault, RunResult::Fault::kMemory);
  EXPECT_EQ(r.fault_addr, 0x5020u);
}

TEST_F(ModelTest, RunningPastTheInstructionMemoryIsPcRange) {
  RunResult r = run({irq(), irq()}, 1022);
  EXPECT_EQ(r.err, ErrCode::kPcRange);
  EXPECT_EQ(r.err_pc, 1024u);
  EXPECT_EQ(r.irqs, 2u);
  // A loop whose body ends the memory: the body runs, then PC_RANGE.
  r = run({loop(3, 1), irq()}, 1022);
  EXPECT_EQ(r.err, ErrCode::kPcRange);
  EXPECT_EQ(r.irqs, 3u);
  r = model().run(5000, mem_);
  EXPECT_EQ(r.err, ErrCode::kPcRange);
  EXPECT_EQ(r.err_pc, 5000u);
}

// ---- State across runs ----------------------------------------------------------------------

TEST_F(ModelTest, TilesPersistAfterHaltAndAreDiscardedAfterAnError) {
  run_ok({rw(0x2000, 2, 16), halt()});
  EXPECT_EQ(model().pending_tiles(), 2u);
  run_ok({mmc(0, 0, 1, false, true), halt()});
  EXPECT_EQ(model().pending_tiles(), 1u);
  run_ok({rw(0x2000, 17, 16), halt()});  // 1 + 17 = 18: the default capacity
  EXPECT_EQ(model().pending_tiles(), 18u);
  EXPECT_EQ(run({rw(0x2000, 1, 16), halt()}).err, ErrCode::kWgtOverflow);
  EXPECT_EQ(model().pending_tiles(), 0u);
  EXPECT_EQ(run({mmc(0, 0, 1, false, true), halt()}).err, ErrCode::kNoWeights);
}

TEST_F(ModelTest, MmcUsesTheOldestTileUntilPopped) {
  const MatrixI8 a = random_matrix(1, 16), w0 = random_matrix(16, 16), w1 = random_matrix(16, 16);
  load_ub(0, a);
  tpu::test::write_matrix(mem_, 0x2000, w0);
  tpu::test::write_matrix(mem_, 0x2100, w1);
  run_ok({rw(0x2000, 2, 16), mmc(0, 0, 1, false, false), mmc(0, 1, 1, false, true),
          mmc(0, 2, 1, false, false), mmc(0, 2, 1, true, true), halt()});
  const MatrixI32 p0 = matmul_i8(a, w0), p1 = matmul_i8(a, w1);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(model().acc_row(0)[j], p0.at(0, j));
    EXPECT_EQ(model().acc_row(1)[j], p0.at(0, j));
    EXPECT_EQ(model().acc_row(2)[j], int32_t(2 * int64_t{p1.at(0, j)}));
  }
}

TEST_F(ModelTest, ConfigRegistersResetAndPersist) {
  EXPECT_EQ(model().cfg(kCfgQmult), 0x40000000u);
  EXPECT_EQ(model().cfg(kCfgQmin), uint32_t(-128));
  EXPECT_EQ(model().cfg(kCfgQmax), 127u);
  EXPECT_EQ(model().cfg(kCfgRelu6Max), 127u);
  EXPECT_EQ(model().cfg(kCfgBiasBase + 15), 0u);
  EXPECT_THROW(model().cfg(kCfgBiasBase + 16), std::out_of_range);
  EXPECT_EQ(model().cfg(kCfgChMultBase + 15), 0x40000000u);
  EXPECT_EQ(model().cfg(kCfgChShiftBase + 15), 0u);
  EXPECT_THROW(model().cfg(kCfgChShiftBase + 16), std::out_of_range);
  run_ok(assemble("cfg QSHIFT 5\ncfg BIAS+2 -7\ncfg LUT+255 200\ncfg CH_SHIFT+3 4\nhalt"));
  EXPECT_EQ(int32_t(model().cfg(kCfgChShiftBase + 0)), -5) << "QSHIFT writes every lane as -s";
  EXPECT_EQ(int32_t(model().cfg(kCfgChShiftBase + 3)), 4);
  // A failed run keeps the registers too.
  EXPECT_EQ(run(assemble("cfg QZP 3\n.word 0 0")).err, ErrCode::kIllegalOpcode);
  EXPECT_EQ(model().cfg(kCfgQshift), 5u);
  EXPECT_EQ(model().cfg(kCfgBiasBase + 2), uint32_t(-7));
  EXPECT_EQ(model().cfg(kCfgLutBase + 255), 200u);
  EXPECT_EQ(model().cfg(kCfgQzp), 3u);
  model().reset();
  EXPECT_EQ(model().cfg(kCfgQshift), 0u);
}

TEST_F(ModelTest, InstructionCountExcludesTheFaultingInstruction) {
  const RunResult r = run({irq(), sync(0), cfg(kCfgQzp, 1), Instr{}});
  EXPECT_EQ(r.err, ErrCode::kIllegalOpcode);
  EXPECT_EQ(r.instructions, 3u);
  EXPECT_EQ(r.irqs, 1u);
  EXPECT_THROW(model().run(0, mem_, 2), std::runtime_error) << "more than max_steps";
}

// ---- HostMemory -------------------------------------------------------------------------------

TEST(HostMemory, SparsePagesLittleEndianAndWrapAround) {
  HostMemory mem;
  EXPECT_EQ(mem.read64(0x123456789), 0u);
  EXPECT_EQ(mem.pages(), 0u) << "reads do not allocate";
  mem.write32(HostMemory::kPageBytes - 2, 0xA1B2C3D4);  // across a page boundary
  EXPECT_EQ(mem.read8(HostMemory::kPageBytes - 2), 0xD4);
  EXPECT_EQ(mem.read16(HostMemory::kPageBytes), 0xA1B2);
  EXPECT_EQ(mem.pages(), 2u);
  mem.write64(~uint64_t{0} - 3, 0x1122334455667788ull);  // wraps to address 0
  EXPECT_EQ(mem.read32(~uint64_t{0} - 3), 0x55667788u);
  EXPECT_EQ(mem.read32(0), 0x11223344u);
  const std::vector<uint8_t> bytes = {1, 2, 3};
  mem.write(1ull << 40, bytes);
  EXPECT_EQ(mem.read(1ull << 40, 4), (std::vector<uint8_t>{1, 2, 3, 0}));
}

TEST(HostMemory, FaultRangesOverlapExactly) {
  HostMemory mem;
  mem.add_fault(0x100, 0x10);  // [0x100, 0x110)
  EXPECT_FALSE(mem.faults(0xF0, 0x10));
  EXPECT_TRUE(mem.faults(0xF1, 0x10));
  EXPECT_TRUE(mem.faults(0x10F, 1));
  EXPECT_FALSE(mem.faults(0x110, 0x100));
  EXPECT_TRUE(mem.faults(0x0, 0x1000));
  mem.add_fault(~uint64_t{0}, 1);  // the last byte
  EXPECT_TRUE(mem.faults(~uint64_t{0} - 1, 4));
  EXPECT_FALSE(mem.faults(0, 4));
  mem.clear_faults();
  EXPECT_FALSE(mem.faults(0x100, 1));
}

}  // namespace
