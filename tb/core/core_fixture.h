// SPDX-License-Identifier: Apache-2.0
// Fixture for compute-core tests: the Verilated core of the configuration
// this test binary is built for (tb_config.h), a harness that serves its
// memory port, and helpers that run a program on the RTL and on the
// reference model and compare everything they leave.
#pragma once

#include <memory>
#include <string>
#include <tuple>

#include "core_harness.h"
#include "plan_testing.h"
#include "program_generator.h"
#include "tb_config.h"  // the configuration: tb::CoreModel, tb::kConfig
#include "tpu/plan/gemm.h"
#include "tpu/plan/pack.h"
#include "tpu/quant.h"
#include "tpu/ref_matmul.h"
#include "verilated_fixture.h"

namespace core_tb {

namespace isa = tpu::isa;
using isa::ErrCode;
using tpu::HostMemory;
using tpu::MatrixI32;
using tpu::MatrixI8;

// The core under test: its model and sizes, from the configuration table.
struct CoreCfg {
  using Model = tb::CoreModel;
  static constexpr int N = tb::kConfig.array_n, UbRows = tb::kConfig.ub_rows,
                       AccRows = tb::kConfig.acc_rows, Imem = tb::kConfig.imem_depth,
                       WgtFifoTiles = tb::kConfig.wgt_fifo_tiles;
  static constexpr tpu::Datapath Datapath = tb::kConfig.datapath;
};

constexpr uint64_t kInput = 0x10000, kOutput = 0x80000, kScratch = 0x200000;

template <class Cfg>
class CoreFixture : public tb::VerilatedFixture<typename Cfg::Model> {
 protected:
  static constexpr int N = Cfg::N;
  using Harness = tb::CoreHarness<typename Cfg::Model, Cfg::N, Cfg::UbRows, Cfg::AccRows>;

  void SetUp() override {
    tb::VerilatedFixture<typename Cfg::Model>::SetUp();
    harness_ = std::make_unique<Harness>(this->sim());
  }

  static tpu::CoreConfig config() { return model_config<Cfg>(); }

  MatrixI8 random_matrix(int rows, int cols, int lo = -128, int hi = 127) {
    MatrixI8 m(rows, cols);
    for (auto& v : m.data) v = int8_t(this->rand_int(lo, hi));
    return m;
  }

  // Runs a program on the RTL; fails the test on a timeout.
  tb::CoreRun run_rtl(const std::vector<isa::Instr>& prog, HostMemory& mem,
                      const tb::MemoryTiming& timing = {}, uint32_t start = 0) {
    harness_->load_program(start, prog);
    tb::CoreRun r = harness_->run(start, mem, timing);
    EXPECT_FALSE(r.timed_out) << "the core did not finish the program";
    return r;
  }

  // Runs the program on the model and the RTL from the same memory image and
  // compares status, UB, ACC and the host memory the program wrote.
  tb::CoreRun run_both(tpu::model::TpuModel& model, const std::vector<isa::Instr>& prog,
                       HostMemory& mem, const tb::MemoryTiming& timing, uint64_t out_addr,
                       uint64_t out_len, const std::string& what) {
    HostMemory model_mem = mem;
    model.load_program(0, prog);
    const auto expect = model.run(0, model_mem);
    const tb::CoreRun got = run_rtl(prog, mem, timing);
    EXPECT_EQ(int(got.err), int(expect.err)) << what << ": error code differs from the model ("
                                             << isa::err_name(got.err) << " vs "
                                             << isa::err_name(expect.err) << ")";
    EXPECT_EQ(got.err_pc, expect.err_pc) << what << ": faulting instruction";
    EXPECT_EQ(got.irqs, expect.irqs) << what;
    if (expect.err != ErrCode::kOk || got.err != ErrCode::kOk) return got;
    for (int r = 0; r < Cfg::UbRows; ++r) {
      EXPECT_EQ(harness_->ub_row(r), model.ub_row(uint32_t(r))) << what << ": UB row " << r;
      if (::testing::Test::HasFailure()) return got;
    }
    for (int r = 0; r < Cfg::AccRows; ++r) {
      EXPECT_EQ(harness_->acc_row(r), model.acc_row(uint32_t(r))) << what << ": ACC row " << r;
      if (::testing::Test::HasFailure()) return got;
    }
    EXPECT_EQ(mem.read(out_addr, out_len), model_mem.read(out_addr, out_len))
        << what << ": host output memory";
    return got;
  }

  // An int8 GEMM through the shared program builder, checked against the
  // plain reference matmul.
  tb::CoreRun check_gemm(int m, int k, int n_out, const tb::MemoryTiming& timing = {},
                         const tpu::plan::GemmOptions& options = {}) {
    HostMemory mem;
    const MatrixI8 a = random_matrix(m, k), w = random_matrix(k, n_out);
    tpu::test::write_matrix(mem, kInput, a);
    tpu::test::write_matrix(mem, kInput + 0x40000, w);
    const tpu::plan::GemmShape shape{m, k, n_out};
    const auto gemm =
        tpu::test::build_gemm(mem, shape, {kInput, kInput + 0x40000, kOutput, kScratch}, config(), options);
    tb::CoreRun r;
    for (const std::vector<isa::Instr>& program : gemm.programs) {
      r = run_rtl(program, mem, timing);
      EXPECT_EQ(r.err, ErrCode::kOk) << isa::err_name(r.err) << " at " << r.err_pc;
    }
    EXPECT_EQ(tpu::test::read_gemm_result(mem, gemm), tpu::ref::matmul_i8(a, w))
        << "GEMM " << m << "x" << k << "x" << n_out << " differs from the reference";
    return r;
  }

  std::unique_ptr<Harness> harness_;
};

using CoreTest = CoreFixture<CoreCfg>;

}  // namespace core_tb
