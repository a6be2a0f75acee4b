// SPDX-License-Identifier: Apache-2.0
// Test helpers around the GEMM planner (library tpu_plan_testing, linked by
// the tests only): matrices written to and read from host memory, and an
// int32 GEMM planned, packed into host memory and built in one call.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/core_config.h"
#include "tpu/host_memory.h"
#include "tpu/isa.h"
#include "tpu/matrix.h"
#include "tpu/plan/gemm.h"

namespace tpu::test {

struct GemmAddrs {
  uint64_t a = 0;        // M x K int8 input, row-major
  uint64_t w = 0;        // K x Nout int8 input, row-major
  uint64_t c = 0;        // plan.c_bytes() bytes of output
  uint64_t scratch = 0;  // gemm_scratch_bytes() bytes for the packed A and W
};

struct GemmProgram {
  plan::GemmPlan plan;
  uint64_t c = 0;                                 // where the programs write the packed result
  std::vector<std::vector<isa::Instr>> programs;  // run in order; each fits the IMEM
};

uint64_t gemm_scratch_bytes(const plan::GemmShape& shape, const CoreConfig& core);

// Reads A and W from mem, writes the packed images to scratch and returns the
// int32 GEMM's programs. Throws std::invalid_argument when the shape does not
// fit the core.
GemmProgram build_gemm(HostMemory& mem, const plan::GemmShape& shape, const GemmAddrs& addrs, const CoreConfig& core,
                       const plan::GemmOptions& options = {});

// The M x Nout int32 result the program wrote to C.
MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& gemm);

// Row-major matrices in host memory.
void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m);
MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols);

}  // namespace tpu::test
