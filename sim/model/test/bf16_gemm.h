// SPDX-License-Identifier: Apache-2.0
// bf16 GEMMs on the reference model, for its tests (model_bf16_test.cpp) and
// the numpy comparison (bf16_probe.cpp, bf16_numpy_test.py): a simple
// program builder that uses every bf16 form (RHM WIDE, RW BF16, MMC BF16,
// ACT F32, WHM WIDE) and a reference written from docs/numerics.md alone.
// Independent of the planner (tpu/plan/gemm.h), whose bf16 plans Bf16PlanTest
// checks against this reference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tpu/bf16.h"
#include "tpu/core_config.h"
#include "tpu/host_memory.h"
#include "tpu/isa.h"
#include "tpu/ref_matmul.h"

namespace tpu::model::bf16_gemm {

using MatrixBf16 = Matrix<bf16>;
using MatrixF32 = Matrix<fp32>;  // fp32 bits

// C = A x W in the order of docs/numerics.md, "Order of additions":
// tpu::ref::matmul_bf16 (ref_matmul.h), written from the text and
// independent of the model.
inline MatrixF32 reference(const MatrixBf16& a, const MatrixBf16& w, int n) { return ref::matmul_bf16(a, w, n); }

// What the programs do with the accumulators.
enum class Output {
  kRawF32,  // ACT F32 RAW: fp32 results (SCALE etc. at their reset values: exact)
  kBf16,    // ACT F32: results rounded to bf16, WHM WIDE
};

struct Addrs {
  uint64_t a = 0x10000000, w = 0x20000000, c = 0x30000000;
};

// ACT F32's parameters (docs/isa.md): the CFG registers the programs set
// first, and the flags of every ACT. The defaults leave the accumulators
// unchanged (RAW output: exact).
struct Epilogue {
  std::vector<fp32> bias;  // one per output column, or empty: no BIAS flag
  isa::Act func = isa::Act::kNone;
  fp32 scale = 0x3F800000u, relu6 = 0x40C00000u, fmin = 0xFF800000u, fmax = 0x7F800000u;
};

// A built GEMM: the programs to run in order (each ends in HALT; UB, ACC and
// tiles carry over) and where C lands.
struct Programs {
  std::vector<std::vector<isa::Instr>> programs;
  int m = 0, j = 0;
  int kp = 0, jp = 0;  // K and J padded to multiples of n
  Output output = Output::kRawF32;
  Addrs addrs;
};

// Writes A (m x kp, zero padded, row stride 2*kp bytes) and W (kp x jp, zero
// padded, row stride 2*jp bytes) into host memory and builds the programs:
// for every chunk of rows and column tile, K block after K block:
//   rhm wide (the block's columns of A) / rw bf16 (one tile) / mmc bf16 [acc] pop
// then (CFG BIAS of the tile's columns) act f32 [raw] [bias] [func] and whm
// (wide rows, or through a LOOP the 4 UB rows of each fp32 row), after the
// epilogue's CFG SCALE, RELU6_F32, FMIN, FMAX at the start. With RawF32 the
// layout of C is m x jp fp32, else m x jp bf16.
inline Programs build(HostMemory& mem, const MatrixBf16& a, const MatrixBf16& w,
                      const CoreConfig& core, Output output = Output::kRawF32,
                      const Epilogue& epilogue = {}, const Addrs& addrs = {}) {
  using namespace isa;
  const int n = core.n;
  Programs p;
  p.m = a.rows;
  p.j = w.cols;
  p.kp = std::max(1, (a.cols + n - 1) / n) * n;
  p.jp = std::max(1, (w.cols + n - 1) / n) * n;
  p.output = output;
  p.addrs = addrs;
  for (int i = 0; i < a.rows; ++i)
    for (int k = 0; k < p.kp; ++k)
      mem.write16(addrs.a + (uint64_t(i) * p.kp + k) * 2, k < a.cols ? a.at(i, k) : 0);
  for (int k = 0; k < p.kp; ++k)
    for (int j = 0; j < p.jp; ++j)
      mem.write16(addrs.w + (uint64_t(k) * p.jp + j) * 2, k < w.rows && j < w.cols ? w.at(k, j) : 0);

  // Rows per chunk: 2 UB rows of A and up to 4 of results per row.
  const int chunk = std::min({core.acc_rows, core.ub_rows / 6, 0xFFFF / 4});
  const bool raw = output == Output::kRawF32;
  std::vector<std::vector<Instr>> groups;  // instructions that stay in one program
  groups.push_back({cfg(kCfgScale, epilogue.scale), cfg(kCfgRelu6F32, epilogue.relu6),
                    cfg(kCfgFmin, epilogue.fmin), cfg(kCfgFmax, epilogue.fmax)});
  const bool bias = !epilogue.bias.empty();
  for (int m0 = 0; m0 < a.rows; m0 += chunk) {
    const int rows = std::min(chunk, a.rows - m0);
    const uint32_t out_ub = uint32_t(2 * rows);
    for (int jt = 0; jt < p.jp / n; ++jt) {
      for (int kb = 0; kb < p.kp / n; ++kb) {
        groups.push_back({rhm(0, uint32_t(rows), addrs.a + (uint64_t(m0) * p.kp + uint64_t(kb) * n) * 2,
                              uint32_t(2 * p.kp), true)});
        groups.push_back({rw(addrs.w + (uint64_t(kb) * n * p.jp + uint64_t(jt) * n) * 2, 1,
                             uint32_t(2 * p.jp), true)});
        groups.push_back({mmc(0, 0, uint32_t(rows), kb > 0, true, true)});
      }
      if (bias) {  // this column tile's biases into BIAS[0..n-1]
        std::vector<Instr> set;
        for (int j = 0; j < n; ++j) {
          const int col = jt * n + j;
          set.push_back(cfg(uint32_t(kCfgBiasBase + j), col < int(epilogue.bias.size()) ? epilogue.bias[size_t(col)] : 0));
        }
        groups.push_back(set);
      }
      groups.push_back({act(0, out_ub, uint32_t(rows), epilogue.func, bias, raw, true)});
      if (raw) {  // ACC row i: 4 UB rows of n bytes = 4n bytes at C row m0 + i
        groups.push_back({loop(uint32_t(rows), 1, 4, 0, int64_t(4) * p.jp),
                          whm(out_ub, 4, addrs.c + (uint64_t(m0) * p.jp + uint64_t(jt) * n) * 4,
                              uint32_t(n))});
      } else {
        groups.push_back({whm(out_ub, uint32_t(rows), addrs.c + (uint64_t(m0) * p.jp + uint64_t(jt) * n) * 2,
                              uint32_t(2 * p.jp), true)});
      }
    }
  }
  // Cut into programs of at most imem_depth instructions, each ending in HALT.
  std::vector<Instr> program;
  for (const std::vector<Instr>& g : groups) {
    if (program.size() + g.size() + 1 > size_t(core.imem_depth)) {
      program.push_back(halt());
      p.programs.push_back(std::move(program));
      program.clear();
    }
    program.insert(program.end(), g.begin(), g.end());
  }
  program.push_back(halt());
  p.programs.push_back(std::move(program));
  return p;
}

// C as fp32 bits (bf16 results widened: exact).
inline MatrixF32 read_result(const HostMemory& mem, const Programs& p) {
  MatrixF32 c(p.m, p.j);
  for (int i = 0; i < p.m; ++i)
    for (int j = 0; j < p.j; ++j)
      c.at(i, j) = p.output == Output::kRawF32
                       ? mem.read32(p.addrs.c + (uint64_t(i) * p.jp + j) * 4)
                       : bf16_to_fp32(mem.read16(p.addrs.c + (uint64_t(i) * p.jp + j) * 2));
  return c;
}

}  // namespace tpu::model::bf16_gemm
