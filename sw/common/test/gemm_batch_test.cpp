// SPDX-License-Identifier: Apache-2.0
// Batched GEMM programs (gemm_batch_programs) on the reference model: every
// product's result against matmul_i8, on configurations with a large and a
// small instruction memory, and the schedule's promises (pipelined loads,
// programs that fit, nothing written outside a product's C image).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "seeded_test.h"
#include "tpu/config.h"
#include "tpu/host_memory.h"
#include "tpu/isa.h"
#include "tpu/plan/batch.h"
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/ref_matmul.h"
#include "tpu_model.h"

namespace {

namespace m = tpu::model;
namespace plan = tpu::plan;
using tpu::CoreConfig;
using tpu::HostMemory;
using tpu::isa::Instr;

constexpr uint8_t kGuard = 0x5A;     // host bytes around each C image, which no WHM may touch
constexpr uint64_t kGuardBytes = 64;

tpu::CoreConfig named(const char* name) { return tpu::core_config(*tpu::find_config(name)); }

struct Product {
  plan::GemmPlan plan;
  tpu::MatrixI8 a, w;
  plan::GemmBatchAddrs addrs;
  bool guarded = false;  // guard bytes follow its C image
};

class GemmBatchTest : public tpu::test::SeededTest {
 protected:
  tpu::MatrixI8 random(int rows, int cols) {
    tpu::MatrixI8 x(rows, cols);
    for (auto& v : x.data) v = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng_));
    return x;
  }
  int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  // Plans the products for a batch, packs their images into mem (A, W and C
  // images each in one region, 64-byte aligned) and returns them. With
  // guards each C image has guard bytes after it, else only the last (the C
  // images then follow each other when their sizes are multiples of 64).
  // Every shape must be batchable on core.
  std::vector<Product> prepare(const std::vector<plan::GemmShape>& shapes, const CoreConfig& core, bool guards = true) {
    std::vector<Product> out;
    uint64_t a = 0x1000000, w = 0x4000000, c = 0x8000000;
    const auto next = [](uint64_t& at, uint64_t bytes) {
      const uint64_t here = at;
      at = (at + bytes + 63) / 64 * 64;
      return here;
    };
    for (size_t i = 0; i < shapes.size(); ++i) {
      const plan::GemmShape& s = shapes[i];
      Product p;
      p.plan = plan::plan_gemm_for_batch(s, core);
      EXPECT_TRUE(plan::gemm_batchable(p.plan, core)) << s.m << "x" << s.k << "x" << s.n_out;
      p.a = random(s.m, s.k);
      p.w = random(s.k, s.n_out);
      p.guarded = guards || i + 1 == shapes.size();
      p.addrs = {next(a, p.plan.a_bytes()), next(w, p.plan.w_bytes()),
                 next(c, p.plan.c_bytes() + (p.guarded ? kGuardBytes : 0))};
      mem_.write(p.addrs.a, std::span<const int8_t>(plan::pack_a(p.plan, p.a)));
      mem_.write(p.addrs.w, std::span<const int8_t>(plan::pack_w(p.plan, p.w)));
      if (p.guarded) mem_.write(p.addrs.c + p.plan.c_bytes(), std::vector<uint8_t>(kGuardBytes, kGuard));
      out.push_back(std::move(p));
    }
    return out;
  }

  static std::vector<std::vector<Instr>> programs(const std::vector<Product>& products, const CoreConfig& core) {
    std::vector<plan::GemmPlan> plans;
    std::vector<plan::GemmBatchAddrs> addrs;
    for (const Product& p : products) plans.push_back(p.plan), addrs.push_back(p.addrs);
    return plan::gemm_batch_programs(plans, addrs, core);
  }

  // Runs the programs in order on a fresh model and checks every product.
  void run_and_check(const std::vector<Product>& products, const std::vector<std::vector<Instr>>& progs,
                     const CoreConfig& core) {
    m::TpuModel model(core);
    for (size_t i = 0; i < progs.size(); ++i) {
      ASSERT_LE(progs[i].size(), size_t(core.imem_depth)) << "program " << i;
      model.load_program(0, progs[i]);
      const m::RunResult r = model.run(0, mem_);
      ASSERT_EQ(r.err, tpu::isa::ErrCode::kOk)
          << "program " << i << " at pc " << r.err_pc << ": " << tpu::isa::disassemble(progs[i][r.err_pc]);
    }
    EXPECT_EQ(model.pending_tiles(), 0u) << "the batch retires every tile it loads";
    for (size_t i = 0; i < products.size(); ++i) {
      const Product& p = products[i];
      SCOPED_TRACE("product " + std::to_string(i) + ": " + std::to_string(p.plan.shape.m) + "x" +
                   std::to_string(p.plan.shape.k) + "x" + std::to_string(p.plan.shape.n_out));
      EXPECT_EQ(plan::unpack_c_i32(p.plan, mem_.read(p.addrs.c, p.plan.c_bytes())), tpu::ref::matmul_i8(p.a, p.w));
      if (p.guarded)
        EXPECT_EQ(mem_.read(p.addrs.c + p.plan.c_bytes(), kGuardBytes), std::vector<uint8_t>(kGuardBytes, kGuard))
            << "a WHM wrote past the product's C image";
    }
  }

  HostMemory mem_;
};

// Mixed shapes on default: one K block and several, one column tile and
// several, transposed plans, a 128^3 that plan_gemm alone splits into two
// passes (plan_gemm_for_batch replans it in one), products whose weight
// tiles need several RWs.
TEST_F(GemmBatchTest, MixedShapesAreExactOnDefault) {
  const CoreConfig core = named("default");
  const std::vector<plan::GemmShape> shapes{{64, 64, 64}, {16, 16, 16}, {17, 33, 65}, {1, 1, 1},    {128, 128, 128},
                                            {40, 80, 30}, {70, 96, 37}, {5, 64, 3},   {64, 64, 64}, {33, 17, 40}};
  const std::vector<Product> products = prepare(shapes, core);
  int transposed = 0;
  for (const Product& p : products) transposed += p.plan.transposed;
  EXPECT_GE(transposed, 1) << "no shape took a transposed plan";
  EXPECT_FALSE(plan::gemm_batchable(plan::plan_gemm({128, 128, 128}, plan::GemmOutput::kInt32, core), core))
      << "128^3 should need the forced plan";
  const auto progs = programs(products, core);
  EXPECT_EQ(progs.size(), 1u);
  run_and_check(products, progs, core);
}

// tiny (4x4, 256 instructions): a long batch of random small products cut
// into several programs, UB, ACC and pending tiles carried between them.
TEST_F(GemmBatchTest, LongBatchSpansSeveralProgramsOnTiny) {
  const CoreConfig core = named("tiny");
  std::vector<plan::GemmShape> shapes{{16, 16, 16}, {1, 1, 1}, {8, 8, 8}, {13, 5, 16}};
  std::vector<plan::GemmPlan> plans;
  for (const plan::GemmShape& s : shapes) plans.push_back(plan::plan_gemm_for_batch(s, core));
  ASSERT_TRUE(plan::gemm_batch_fits(plans, core));
  for (int tries = 0; shapes.size() < 40; ++tries) {  // random shapes whose plans fit tiny's UB together
    ASSERT_LT(tries, 10000) << "too few random shapes fit";
    const plan::GemmShape s{rand_int(1, 20), rand_int(1, 24), rand_int(1, 20)};
    plans.push_back(plan::plan_gemm_for_batch(s, core));
    if (plan::gemm_batch_fits(plans, core))
      shapes.push_back(s);
    else plans.pop_back();
  }
  const std::vector<Product> products = prepare(shapes, core);
  const auto progs = programs(products, core);
  EXPECT_GT(progs.size(), 2u);
  run_and_check(products, progs, core);
}

// The flattened stream of programs (each must end in HALT, dropped here).
std::vector<Instr> flatten(const std::vector<std::vector<Instr>>& progs) {
  std::vector<Instr> stream;
  for (const auto& p : progs) {
    EXPECT_TRUE(!p.empty() && p.back() == tpu::isa::halt());
    if (!p.empty()) stream.insert(stream.end(), p.begin(), p.end() - 1);
  }
  return stream;
}

size_t count_op(const std::vector<Instr>& stream, tpu::isa::Op op) {
  return size_t(std::count_if(stream.begin(), stream.end(), [&](const Instr& in) { return in.op == uint8_t(op); }));
}

// The schedule: each product's load is in the stream before the previous
// product's first write-back (so the memory unit fetches it first), with
// separate images and with adjacent ones (several products a load and a
// write-back); gemm_batch_instructions bounds the stream.
TEST_F(GemmBatchTest, NextLoadPrecedesTheWriteBacks) {
  for (const char* name : {"default", "tiny"})
    for (const bool guards : {true, false}) {
      SCOPED_TRACE(std::string(name) + (guards ? " separate images" : " adjacent images"));
      const CoreConfig core = named(name);
      const std::vector<Product> products =
          prepare({{16, 16, 16}, {12, 16, 9}, {9, 9, 30}, {1, 1, 1}, {16, 16, 16}, {8, 8, 8}, {4, 4, 4}}, core, guards);
      const auto progs = programs(products, core);
      const std::vector<Instr> stream = flatten(progs);
      uint64_t bound = 0;
      for (const Product& p : products) bound += plan::gemm_batch_instructions(p.plan);
      EXPECT_LE(stream.size(), bound);
      // The first instruction of op whose host bytes include addr.
      const auto first = [&](tpu::isa::Op op, uint64_t addr) {
        for (size_t at = 0; at < stream.size(); ++at) {
          const auto span = tpu::isa::host_span(stream[at], 0, core.n);
          if (stream[at].op == uint8_t(op) && span && span->first <= addr && addr <= span->last) return at;
        }
        return stream.size();
      };
      for (size_t i = 1; i < products.size(); ++i) {
        const Product& prev = products[i - 1];
        const Product& p = products[i];
        const size_t load = first(tpu::isa::Op::kRhm, p.plan.transposed ? p.addrs.w : p.addrs.a);
        const size_t write = first(tpu::isa::Op::kWhm, prev.addrs.c);
        ASSERT_LT(load, stream.size()) << "no load of product " << i;
        EXPECT_LT(load, write) << "product " << i << "'s load comes after product " << i - 1 << "'s first write-back";
      }
      run_and_check(products, progs, core);
    }
}

// Adjacent images of many small products: an RHM loads the L of several
// (up to 512 UB rows), a WHM writes the results of several (up to 1,024),
// an RW streams the tiles of several.
TEST_F(GemmBatchTest, AdjacentImagesShareLoadsAndWriteBacks) {
  const CoreConfig core = named("default");
  const std::vector<Product> products = prepare(std::vector<plan::GemmShape>(40, {16, 16, 16}), core, false);
  const auto progs = programs(products, core);
  const std::vector<Instr> stream = flatten(progs);
  EXPECT_LE(count_op(stream, tpu::isa::Op::kRhm), 2u) << "40 x 16 rows of L";
  EXPECT_LE(count_op(stream, tpu::isa::Op::kWhm), 3u) << "40 x 64 rows of results";
  EXPECT_LT(count_op(stream, tpu::isa::Op::kRw), 10u) << "40 tiles";
  run_and_check(products, progs, core);
}

TEST_F(GemmBatchTest, OnlyPlansThatFitAreBatched) {
  const CoreConfig core = named("default");
  // Long K: L does not fit the UB in one load, in any plan.
  const plan::GemmPlan long_k = plan::plan_gemm_for_batch({300, 2000, 40}, core);
  EXPECT_FALSE(plan::gemm_batchable(long_k, core));
  EXPECT_TRUE(long_k.passes > 1 || long_k.chunks > 1);
  EXPECT_FALSE(plan::gemm_batchable(plan::plan_gemm({16, 16, 16}, plan::GemmOutput::kInt8, core), core))
      << "int8 results";
  const plan::GemmPlan small = plan::plan_gemm_for_batch({16, 16, 16}, core);
  ASSERT_TRUE(plan::gemm_batchable(small, core));
  const std::array<plan::GemmBatchAddrs, 2> addrs{};
  EXPECT_THROW(plan::gemm_batch_programs(std::span(&small, 1), addrs, core), std::invalid_argument);
  const std::array<plan::GemmPlan, 2> mixed{small, long_k};
  EXPECT_FALSE(plan::gemm_batch_fits(mixed, core));
  EXPECT_THROW(plan::gemm_batch_programs(mixed, addrs, core), std::invalid_argument);
  // Two products that fit alone but not together: the A regions sized for
  // the one (2 x 1,600 UB rows of L) leave less than two result regions for
  // the other's tiles (2 x 512 rows).
  const plan::GemmPlan long_l = plan::plan_gemm_for_batch({8, 16 * 200, 16}, core);
  const plan::GemmPlan cube = plan::plan_gemm_for_batch({128, 128, 128}, core);
  ASSERT_TRUE(plan::gemm_batchable(long_l, core));
  ASSERT_TRUE(plan::gemm_batchable(cube, core));
  ASSERT_EQ(std::max(long_l.dm, cube.dm), 128);
  EXPECT_FALSE(plan::gemm_batch_fits(std::array{long_l, cube}, core));
}

}  // namespace
