// SPDX-License-Identifier: Apache-2.0
#include "plan_testing.h"

#include <span>

#include "tpu/plan/pack.h"

namespace tpu::test {

uint64_t gemm_scratch_bytes(const plan::GemmShape& s, const CoreConfig& core) {
  const plan::GemmPlan p = plan::plan_gemm(s, plan::GemmOutput::kInt32, core);
  return (p.a_bytes() + 63) / 64 * 64 + p.w_bytes();
}

GemmProgram build_gemm(HostMemory& mem, const plan::GemmShape& shape, const GemmAddrs& addrs, const CoreConfig& core,
                       const plan::GemmOptions& options) {
  GemmProgram g;
  g.plan = plan::plan_gemm(shape, plan::GemmOutput::kInt32, core, options);
  const plan::GemmPlan& p = g.plan;
  const uint64_t a_packed = addrs.scratch, w_tiles = addrs.scratch + (p.a_bytes() + 63) / 64 * 64;
  g.c = addrs.c;
  mem.write(a_packed, std::span<const int8_t>(plan::pack_a(p, read_matrix_i8(mem, addrs.a, shape.m, shape.k))));
  mem.write(w_tiles, std::span<const int8_t>(plan::pack_w(p, read_matrix_i8(mem, addrs.w, shape.k, shape.n_out))));
  g.programs = plan::gemm_programs(p, {}, a_packed, w_tiles, g.c, core);
  return g;
}

MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& g) {
  return plan::unpack_c_i32(g.plan, mem.read(g.c, g.plan.c_bytes()));
}

void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m) {
  mem.write(addr, std::span<const int8_t>(m.data));
}

MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols) {
  MatrixI8 m(rows, cols);
  mem.read(addr, std::span(reinterpret_cast<uint8_t*>(m.data.data()), m.data.size()));
  return m;
}

}  // namespace tpu::test
