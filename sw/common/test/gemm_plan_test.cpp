// SPDX-License-Identifier: Apache-2.0
// GEMM plans forced through GemmOptions (rows per pass, tiles per group, K
// blocks per load, tiles per WHM, order, L and result regions) on the
// reference model: every plan plan_gemm accepts computes the exact product.
// The planner's own choice is one of those plans; forced ones reach the
// schedule's corners, such as a last group with fewer tiles while the next
// pass's L is loaded in pieces.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "seeded_test.h"
#include "tpu/config.h"
#include "tpu/host_memory.h"
#include "tpu/isa.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"
#include "tpu_model.h"

namespace {

namespace m = tpu::model;
namespace plan = tpu::plan;

constexpr uint64_t kA = 0x1000000, kW = 0x4000000, kC = 0x8000000;

class GemmPlanTest : public tpu::test::SeededTest {
 protected:
  int pick(std::initializer_list<int> values) {
    const int i = std::uniform_int_distribution<int>(0, int(values.size()) - 1)(rng_);
    return *(values.begin() + i);
  }

  tpu::MatrixI8 random(int rows, int cols) {
    tpu::MatrixI8 x(rows, cols);
    for (auto& v : x.data) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng_));
    return x;
  }

  // Runs the plan's programs on a fresh model; returns a description of the
  // first difference from the reference, or "" when the product is exact.
  std::string run(const plan::GemmPlan& plan, const tpu::MatrixI8& a, const tpu::MatrixI8& w,
                  const tpu::CoreConfig& core) {
    tpu::HostMemory mem;
    mem.write(kA, std::span<const int8_t>(plan::pack_a(plan, a)));
    mem.write(kW, std::span<const int8_t>(plan::pack_w(plan, w)));
    m::TpuModel model(core);
    for (const auto& program : plan::gemm_programs(plan, {}, kA, kW, kC, core)) {
      if (program.size() > size_t(core.imem_depth)) return "a program longer than the instruction memory";
      model.load_program(0, program);
      const m::RunResult r = model.run(0, mem);
      if (r.err != tpu::isa::ErrCode::kOk)
        return "error at pc " + std::to_string(r.err_pc) + ": " + tpu::isa::disassemble(program[r.err_pc]);
    }
    const tpu::MatrixI32 got = plan::unpack_c_i32(plan, mem.read(kC, plan.c_bytes()));
    const tpu::MatrixI32 want = tpu::ref::matmul_i8(a, w);
    for (size_t i = 0; i < want.data.size(); ++i)
      if (got.data[i] != want.data[i])
        return "C[" + std::to_string(i / size_t(want.cols)) + "][" + std::to_string(i % size_t(want.cols)) +
               "] is " + std::to_string(got.data[i]) + ", not " + std::to_string(want.data[i]);
    return "";
  }

  static std::string describe(const plan::GemmPlan& p) {
    return "pass_rows " + std::to_string(p.pass_rows) + ", group_tiles " + std::to_string(p.group_tiles) +
           ", chunk_blocks " + std::to_string(p.chunk_blocks) + ", write_tiles " + std::to_string(p.write_tiles) +
           ", tile_major " + std::to_string(p.tile_major) + ", a_regions " + std::to_string(p.a_regions) +
           ", result_regions " + std::to_string(p.result_regions) + ", transposed " + std::to_string(p.transposed);
  }
};

// A 100x100x100 GEMM in two passes of 50 rows, groups of four tiles: the
// second pass's L went in pieces counted per group, and the last group (three
// tiles) counted one piece fewer, so part of that L was never loaded.
TEST_F(GemmPlanTest, NextPassLoadedWholeWhenTheLastGroupIsSmaller) {
  const tpu::CoreConfig core = tpu::core_config(*tpu::find_config("default"));
  const plan::GemmPlan plan =
      plan::plan_gemm({100, 100, 100}, plan::GemmOutput::kInt32, core,
                      {.max_pass_rows = 50, .group_tiles = 4, .a_regions = 2, .write_tiles = 2, .head_blocks = 0});
  ASSERT_EQ(plan.groups, 2);
  ASSERT_EQ(plan.chunks, 1);
  ASSERT_EQ(plan.a_regions, 2);
  EXPECT_EQ(run(plan, random(100, 100), random(100, 100), core), "") << describe(plan);
}

// The memory port answers reads in request order, so the weight tiles
// requested while a load streams in arrive after its rows. A 100x100x100
// plan of two passes of 50 rows and one group (the planner's until it could
// keep a whole single pass in the ACC) loads the second pass's L during the
// first; in one RHM of 350 rows the weight FIFO ran dry behind it (74
// cycles of weight stall on the RTL). Every piece must cross the link (a row
// a cycle here) sooner than the FIFO's tiles last beyond the read latency and
// the tiles in flight (each tile serves a pass of rows), and the product
// stays exact.
TEST_F(GemmPlanTest, NextPassLoadedInPiecesTheWeightFifoOutlasts) {
  const tpu::CoreConfig core = tpu::core_config(*tpu::find_config("default"));
  const plan::GemmPlan plan = plan::plan_gemm({100, 100, 100}, plan::GemmOutput::kInt32, core,
                                              {.max_pass_rows = 50, .group_tiles = 7, .head_blocks = 0});
  ASSERT_EQ(plan.passes, 2);
  ASSERT_EQ(plan.groups, 1);
  ASSERT_EQ(plan.chunks, 1);
  ASSERT_EQ(plan.a_regions, 2);
  const int latency = 500;  // the sim: link's read latency, which the planner assumes
  const int fifo_slack = core.wgt_fifo_tiles * plan.pass_rows - latency - 4 * plan.n;
  int pieces = 0, rows = 0;
  bool computing = false;
  for (const auto& program : plan::gemm_programs(plan, {}, kA, kW, kC, core))
    for (const tpu::isa::Instr& in : program) {
      const auto op = tpu::isa::Op(in.op);
      computing = computing || op == tpu::isa::Op::kMmc;
      if (op != tpu::isa::Op::kRhm || !computing) continue;
      ++pieces;
      rows += in.count;
      EXPECT_LE(int(in.count), fifo_slack) << "RHM of " << in.count << " rows at UB row " << in.a;
    }
  EXPECT_EQ(rows, plan.k_blocks * plan.rows_of_pass(1)) << "the second pass's L, loaded during the first";
  EXPECT_GE(pieces, 2);
  EXPECT_EQ(run(plan, random(100, 100), random(100, 100), core), "") << describe(plan);
}

// Random forced options on shapes with partial tiles and several passes, on
// default and tiny; options no plan fits are refused, the rest are exact.
TEST_F(GemmPlanTest, EveryForcedPlanIsExact) {
  using O = plan::GemmOptions;
  struct Case {
    const char* config;
    plan::GemmShape shape;
  };
  const Case cases[] = {{"default", {100, 100, 100}}, {"default", {37, 50, 29}}, {"default", {128, 96, 80}},
                        {"tiny", {45, 30, 21}}};
  for (const Case& c : cases) {
    const tpu::CoreConfig core = tpu::core_config(*tpu::find_config(c.config));
    const tpu::MatrixI8 a = random(c.shape.m, c.shape.k), w = random(c.shape.k, c.shape.n_out);
    int planned = 0;
    for (int i = 0; i < 250; ++i) {
      O o;
      o.max_pass_rows = pick({0, 8, 16, 32, 64});
      o.transpose = O::Transpose(pick({0, 1, 2}));
      o.group_tiles = pick({0, 1, 2, 3, 4, 8});
      o.chunk_blocks = pick({0, 1, 2, 3, 4, 8});
      o.a_regions = pick({0, 1, 2});
      o.result_regions = pick({0, 2, 3, 4});
      o.write_tiles = pick({0, 1, 2, 4});
      o.order = O::Order(pick({0, 1, 2}));
      plan::GemmPlan plan;
      try {
        plan = plan::plan_gemm(c.shape, plan::GemmOutput::kInt32, core, o);
      } catch (const std::invalid_argument&) {
        continue;  // e.g. tile after tile with L in several loads
      }
      ++planned;
      const std::string diff = run(plan, a, w, core);
      ASSERT_EQ(diff, "") << c.config << " " << c.shape.m << "x" << c.shape.k << "x" << c.shape.n_out << ": "
                          << describe(plan);
    }
    EXPECT_GT(planned, 100) << c.config << ": most option sets have a plan";
  }
}

}  // namespace
