// SPDX-License-Identifier: Apache-2.0
// MXU benchmark and demo: streams weight tiles and input rows through the
// Verilated MXU with no gaps, checks every output row against the reference
// matmul, and prints simulation speed and array utilization.
//
//   mxu_bench [--n 4|8|16] [--dtype int8|bf16] [--tiles T] [--rows R] [--seed S] [--waves FILE]
//   mxu_bench --demo        a small, readable example on the 16x16 array
//
// --dtype bf16 runs the bf16 array (tb/mxu/mxu_fp.sv) on random bf16
// values and checks every fp32 output bit for bit against
// tpu::bf16_dot_column.
//
// Built with MXU_BENCH_LARGE_N=<n> (targets mxu_bench_bf16_n<n>, CMake
// list TPU_MXU_LARGE_SIZES; make bench-large builds n = 128) it has only the
// n x n bf16 array:
//
//   mxu_bench_bf16_n<n> [--n <n>] [--dtype bf16] [--tiles T] [--rows R] [--seed S] [--waves FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef MXU_BENCH_LARGE_N
#include MXU_BENCH_LARGE_HEADER
#else
#include "Vmxu_n16.h"
#include "Vmxu_n4.h"
#include "Vmxu_n8.h"
#include "Vmxu_bf16_n16.h"
#include "Vmxu_bf16_n4.h"
#include "Vmxu_bf16_n8.h"
#endif
#include "mxu_driver.h"
#include "tpu/bf16.h"
#include "tpu/ref_matmul.h"

namespace {

struct Options {
#ifdef MXU_BENCH_LARGE_N
  int n = MXU_BENCH_LARGE_N;
  int tiles = 20;
#else
  int n = 16;
  int tiles = 200;
#endif
  int rows = 0;  // 0: N rows per tile
  uint64_t seed = 1;
  std::string waves;
  bool demo = false;
#ifdef MXU_BENCH_LARGE_N
  bool bf16 = true;
#else
  bool bf16 = false;
#endif
};

void report(const Options& opt, int n, int rows, int bad, const tb::MxuRecord& rec, double secs) {
  const double useful = double(opt.tiles) * rows;  // rows = cycles of full-array work
  std::printf("mxu N=%d%s: %d tiles x %d rows, %s\n", n, opt.bf16 ? " bf16" : "", opt.tiles,
              rows, bad ? "MISMATCH against the reference" : "all outputs equal the reference");
  std::printf("  cycles            %llu (first output at cycle %llu)\n",
              (unsigned long long)rec.cycles, (unsigned long long)rec.out_fire.front());
  std::printf("  utilization       %.3f%% of N*N MACs per cycle over the whole run\n",
              100.0 * useful / double(rec.cycles));
  std::printf("  MACs              %.0f\n", useful * n * n);
  std::printf("  simulation speed  %.0f cycles/s (%.3f s wall)\n", double(rec.cycles) / secs, secs);
}

// The bf16 array: random bf16 operands (exponents within +-8 of 1, both
// signs), every output word against bf16_dot_column.
template <class Model, int N>
int run_bf16(const Options& opt) {
  tb::Sim<Model> sim(opt.seed, opt.waves);
  const int rows = opt.rows > 0 ? opt.rows : N;
  auto value = [&] {
    return tpu::bf16((sim.rand_int(0, 1) << 15) | ((127 + sim.rand_int(-8, 8)) << 7) | sim.rand_int(0, 127));
  };
  std::vector<tb::MxuLaneJob> jobs;
  for (int t = 0; t < opt.tiles; ++t) {
    tb::MxuLaneJob job;
    for (int i = 0; i < N * N; ++i) job.weights.push_back(value());
    for (int i = 0; i < rows * N; ++i) job.rows.push_back(value());
    job.bf16.assign(size_t(rows), 1);
    jobs.push_back(std::move(job));
  }

  tb::MxuDriver<Model, N, 16> drv(sim);
  const auto t0 = std::chrono::steady_clock::now();
  const tb::MxuRecord rec = drv.run(jobs, {});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int bad = 0;
  for (size_t j = 0; j < jobs.size(); ++j)
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < N; ++c) {
        tpu::bf16 w[N];
        for (int k = 0; k < N; ++k) w[k] = jobs[j].weights[size_t(k) * N + size_t(c)];
        if (rec.raw[j][size_t(r) * N + size_t(c)] != tpu::bf16_dot_column(&jobs[j].rows[size_t(r) * N], w, N))
          ++bad;
      }
  if (rec.timed_out || sim.take_assertion_failures() != 0) bad = std::max(bad, 1);
  report(opt, N, rows, bad, rec, secs);
  return bad ? 1 : 0;
}

#ifndef MXU_BENCH_LARGE_N
void print_matrix(const char* name, const tpu::MatrixI32& m, int rows, int cols) {
  std::printf("%s (first %dx%d):\n", name, rows, cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) std::printf(" %8d", m.at(r, c));
    std::printf("  ...\n");
  }
}

template <class Model, int N>
int run(const Options& opt) {
  tb::Sim<Model> sim(opt.seed, opt.waves);
  const int rows = opt.rows > 0 ? opt.rows : N;
  std::vector<tb::MxuJob> jobs;
  for (int t = 0; t < opt.tiles; ++t) {
    tb::MxuJob job{tb::MatrixI8(N, N), tb::MatrixI8(rows, N)};
    for (auto& v : job.weights.data) v = int8_t(sim.rand_int(-128, 127));
    for (auto& v : job.rows.data) v = int8_t(sim.rand_int(-128, 127));
    jobs.push_back(std::move(job));
  }

  tb::MxuDriver<Model, N> drv(sim);
  const auto t0 = std::chrono::steady_clock::now();
  const tb::MxuRecord rec = drv.run(jobs, {});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int bad = 0;
  for (size_t j = 0; j < jobs.size(); ++j)
    if (!(rec.results[j] == tpu::ref::matmul_i8(jobs[j].rows, jobs[j].weights))) ++bad;
  if (rec.timed_out || sim.take_assertion_failures() != 0) bad = std::max(bad, 1);

  if (opt.demo) {
    print_matrix("A x W from the MXU", rec.results[0], 4, 6);
    print_matrix("reference matmul", tpu::ref::matmul_i8(jobs[0].rows, jobs[0].weights), 4, 6);
  }
  report(opt, N, rows, bad, rec, secs);
  return bad ? 1 : 0;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
    if (arg("--n")) opt.n = std::atoi(argv[++i]);
    else if (arg("--tiles")) opt.tiles = std::atoi(argv[++i]);
    else if (arg("--rows")) opt.rows = std::atoi(argv[++i]);
    else if (arg("--dtype")) {
      const std::string d = argv[++i];
      if (d != "int8" && d != "bf16") {
        std::fprintf(stderr, "mxu_bench: --dtype must be int8 or bf16 (got %s)\n", d.c_str());
        return 2;
      }
      opt.bf16 = d == "bf16";
    } else if (arg("--seed")) opt.seed = std::strtoull(argv[++i], nullptr, 0);
    else if (arg("--waves")) opt.waves = argv[++i];
    else if (std::strcmp(argv[i], "--demo") == 0) {
      opt.demo = true;
      opt.tiles = 4;
      opt.rows = 64;
    } else {
#ifdef MXU_BENCH_LARGE_N
      std::fprintf(stderr, "usage: %s [--n %d] [--dtype bf16] [--tiles T] [--rows R] [--seed S] [--waves FILE]\n",
                   argv[0], MXU_BENCH_LARGE_N);
#else
      std::fprintf(stderr, "usage: %s [--n 4|8|16] [--dtype int8|bf16] [--tiles T] [--rows R] [--seed S] [--waves FILE] [--demo]\n", argv[0]);
#endif
      return 2;
    }
  }
  if (opt.tiles < 1) {
    std::fprintf(stderr, "mxu_bench: --tiles must be at least 1\n");
    return 2;
  }
  if (opt.bf16 && opt.demo) {
    std::fprintf(stderr, "mxu_bench: --demo is int8 only\n");
    return 2;
  }
#ifdef MXU_BENCH_LARGE_N
  if (!opt.bf16 || opt.n != MXU_BENCH_LARGE_N || opt.demo) {
    std::fprintf(stderr, "%s: only the %d x %d bf16 array (--n %d --dtype bf16)\n", argv[0],
                 MXU_BENCH_LARGE_N, MXU_BENCH_LARGE_N, MXU_BENCH_LARGE_N);
    return 2;
  }
  return run_bf16<MXU_BENCH_LARGE_MODEL, MXU_BENCH_LARGE_N>(opt);
#else
  if (opt.bf16) {
    switch (opt.n) {
      case 4: return run_bf16<Vmxu_bf16_n4, 4>(opt);
      case 8: return run_bf16<Vmxu_bf16_n8, 8>(opt);
      case 16: return run_bf16<Vmxu_bf16_n16, 16>(opt);
      default: break;
    }
  }
  switch (opt.n) {
    case 4: return run<Vmxu_n4, 4>(opt);
    case 8: return run<Vmxu_n8, 8>(opt);
    case 16: return run<Vmxu_n16, 16>(opt);
    default:
      std::fprintf(stderr, "mxu_bench: --n must be 4, 8 or 16 (got %d)\n", opt.n);
      return 2;
  }
#endif
}
