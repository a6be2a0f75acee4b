// Demo: an int8 GEMM and a dense layer run as programs on the Verilated TPU
// core (16x16 MXU), checked bit for bit against the reference, with the
// performance counters.
//
//   core_demo [--m M --k K --n N] [--seed S] [--latency CYCLES]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "Vtpu_core_n16.h"
#include "core_harness.h"
#include "gemm_program.h"

namespace {

namespace isa = tpu::isa;
using tpu::model::MatrixI8;

constexpr uint64_t kA = 0x100000, kW = 0x200000, kC = 0x400000, kScratch = 0x800000;

MatrixI8 random_matrix(tb::Sim<Vtpu_core_n16>& sim, int rows, int cols) {
  MatrixI8 m(rows, cols);
  for (auto& v : m.data) v = int8_t(sim.rand_int(-128, 127));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  int m = 128, k = 96, n = 80, latency = 100;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
    if (arg("--m")) m = std::atoi(argv[++i]);
    else if (arg("--k")) k = std::atoi(argv[++i]);
    else if (arg("--n")) n = std::atoi(argv[++i]);
    else if (arg("--seed")) seed = std::strtoull(argv[++i], nullptr, 0);
    else if (arg("--latency")) latency = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--m M] [--k K] [--n N] [--seed S] [--latency CYCLES]\n", argv[0]);
      return 2;
    }
  }
  if (m < 1 || k < 1 || n < 1 || latency < 1) {
    std::fprintf(stderr, "core_demo: sizes and latency must be at least 1\n");
    return 2;
  }

  tb::Sim<Vtpu_core_n16> sim(seed);
  tb::CoreHarness<Vtpu_core_n16, 16, 4096, 1024> core(sim);
  tpu::model::HostMemory mem;
  const MatrixI8 a = random_matrix(sim, m, k), w = random_matrix(sim, k, n);
  tpu::model::write_matrix(mem, kA, a);
  tpu::model::write_matrix(mem, kW, w);

  tpu::model::GemmProgram gemm;
  try {
    gemm = tpu::model::build_gemm(mem, {m, k, n}, {kA, kW, kC, kScratch}, tpu::model::CoreConfig{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "core_demo: %s\n", e.what());
    return 2;
  }
  std::printf("int8 GEMM %d x %d x %d on the 16x16 TPU core: %zu instructions; the first ones:\n", m, k,
              n, gemm.program.size());
  for (size_t i = 0; i < gemm.program.size() && i < 10; ++i)
    std::printf("  %3zu  %s\n", i, isa::disassemble(gemm.program[i]).c_str());

  core.load_program(0, gemm.program);
  const auto t0 = std::chrono::steady_clock::now();
  const tb::CoreRun run = core.run(0, mem, {.latency = latency});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (run.timed_out || run.err != isa::ErrCode::kOk) {
    std::printf("the program failed: %s at instruction %u\n",
                run.timed_out ? "timeout" : std::string(isa::err_name(run.err)).c_str(), run.err_pc);
    return 1;
  }
  const bool exact = tpu::model::read_gemm_result(mem, gemm) == tpu::model::matmul_i8(a, w);
  const auto& p = run.perf;
  std::printf("result: %s\n", exact ? "equal to the reference matmul, bit for bit" : "MISMATCH");
  std::printf("cycles %llu, useful MACs %llu, MXU busy %llu cycles (%.1f%% of all cycles)\n",
              (unsigned long long)p.cycles, (unsigned long long)p.useful_macs,
              (unsigned long long)p.mxu_busy, 100.0 * double(p.mxu_busy) / double(p.cycles));
  std::printf("stalls: weight %llu, dependency %llu, memory %llu; weight rows shifted %llu\n",
              (unsigned long long)p.wgt_stall, (unsigned long long)p.dep_stall,
              (unsigned long long)p.mem_stall, (unsigned long long)p.wgt_shift);
  std::printf("memory port latency %d cycles; simulated %.0f cycles/s\n", latency,
              double(run.cycles) / secs);
  return exact ? 0 : 1;
}
