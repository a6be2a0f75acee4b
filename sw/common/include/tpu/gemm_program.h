// SPDX-License-Identifier: Apache-2.0
// Plans and builds the programs of an int8 GEMM C = A x W on the core, for
// the driver's operators, the reference model and the RTL testbenches alike.
//
// Host images (the driver writes A and W packed, reads C packed):
//   A  packed by pass: the rows [m0, m0 + r) of pass p are stored block after
//      block: block k (columns k*n .. k*n+n-1, zero-padded) as r rows of n
//      bytes at A + m0*Kp + k*r*n. One RHM of Kb*r rows loads a whole pass.
//   W  n x n tiles, tile (j, k) = W[k*n .. +n][j*n .. +n] zero-padded and
//      row-major, at W + (j*Kb + k)*n*n: the order the MMCs use them.
//   C  column tiles: tile j (columns j*n .. j*n+n-1) is M rows at
//      C + j*M*row_bytes, row i at + i*row_bytes, row_bytes = 4n (int32,
//      little-endian: what WHM of ACT RAW rows writes) or n (int8).
//
// Schedule, in program order, so that DMA overlaps compute:
//   - A is double-buffered in the UB: pass p+1's A is loaded during pass p,
//     into the region pass p-1 used, one chunk of blocks per column tile (so
//     weight reads and write-backs interleave with it). When two regions
//     leave too few rows per pass for the weight FIFO to cover the host's
//     read latency, one region with twice the rows is used instead.
//   - Weight tiles stream through RWs issued as far ahead as the weight
//     capacity (WgtFifoTiles + 2) allows, in batches of half of it.
//   - Output tile t (all passes, in order) accumulates in ACC region t % 2,
//     goes through ACT into UB result region t % 2 and leaves by WHM; tile t's
//     ACT/WHM follow the first MMCs of tile t+1, so the MXU never waits for them.
//   - Runs of MMCs over consecutive A blocks become LOOPs.
// The instruction stream is cut into programs of at most imem_depth
// instructions (each ending in HALT); run them in order. UB, ACC,
// configuration and pending weight tiles carry over from one to the next.
// The first program expects no pending tiles; the last leaves none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tpu/isa.h"
#include "tpu/quant.h"
#include "tpu/ref_matmul.h"
#include "tpu/core_config.h"
#include "tpu/host_memory.h"

namespace tpu::model {

struct GemmShape {
  int m = 0;      // rows of A and C
  int k = 0;      // columns of A, rows of W
  int n_out = 0;  // columns of W and C
};

enum class GemmOutput { kInt32, kInt8 };

// What ACT does with each output tile.
struct GemmEpilogue {
  GemmOutput output = GemmOutput::kInt32;
  quant::QuantParams q;        // kInt8 only
  isa::Act act = isa::Act::kNone;  // kInt8 only
  std::vector<int32_t> bias;   // kInt8 only: empty, or n_out entries
  // kInt8 only: empty (every column scaled by q.multiplier and q.shift), or
  // n_out per-column scales (TFLite's per-channel requantization), which
  // replace q.multiplier and q.shift. Each output tile writes the CH_MULT /
  // CH_SHIFT registers of the lanes whose scale changes.
  std::vector<quant::LaneScale> scales;
};

struct GemmOptions {
  int max_pass_rows = 0;  // cap on rows of A per pass (0: as many as fit)
};

struct GemmPlan {
  GemmShape shape;
  GemmOutput output = GemmOutput::kInt32;
  int n = 0;            // array size
  int k_blocks = 0;     // Kp / n
  int col_tiles = 0;    // Np / n
  int pass_rows = 0;    // rows of A per pass (the last pass may have fewer)
  int passes = 0;
  int a_regions = 0;    // 2: A double-buffered in the UB
  int wgt_capacity = 0; // weight tiles an RW may leave unretired

  int pass_begin(int p) const { return p * pass_rows; }
  int rows_of_pass(int p) const;
  int out_row_bytes() const { return output == GemmOutput::kInt32 ? 4 * n : n; }
  uint64_t a_bytes() const;  // sizes of the host images
  uint64_t w_bytes() const;
  uint64_t c_bytes() const;
};

// Throws std::invalid_argument when a dimension is < 1 or K does not fit the UB.
GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core,
                   const GemmOptions& options = {});

// Host images.
std::vector<int8_t> pack_a(const GemmPlan& plan, const MatrixI8& a);
std::vector<int8_t> pack_w(const GemmPlan& plan, const MatrixI8& w);
MatrixI32 unpack_c_i32(const GemmPlan& plan, std::span<const uint8_t> c);
MatrixI8 unpack_c_i8(const GemmPlan& plan, std::span<const uint8_t> c);

// The programs, for the packed images at host addresses a, w and c. Throws
// std::invalid_argument when the epilogue does not match the plan.
std::vector<std::vector<isa::Instr>> gemm_programs(const GemmPlan& plan, const GemmEpilogue& epi,
                                                   uint64_t a, uint64_t w, uint64_t c,
                                                   const CoreConfig& core);

// ---- For tests: packs the images in host memory -------------------------------------

struct GemmAddrs {
  uint64_t a = 0;        // M x K int8 input, row-major
  uint64_t w = 0;        // K x Nout int8 input, row-major
  uint64_t c = 0;        // plan.c_bytes() bytes of output
  uint64_t scratch = 0;  // gemm_scratch_bytes() bytes for the packed A and W
};

struct GemmProgram {
  GemmPlan plan;
  uint64_t c = 0;  // where the programs write the packed result
  std::vector<std::vector<isa::Instr>> programs;  // run in order; each fits the IMEM
};

uint64_t gemm_scratch_bytes(const GemmShape& shape, const CoreConfig& core);

// Reads A and W from mem, writes the packed images to scratch and returns the
// int32 GEMM's programs. Throws std::invalid_argument when the shape does not
// fit the core.
GemmProgram build_gemm(HostMemory& mem, const GemmShape& shape, const GemmAddrs& addrs,
                       const CoreConfig& core, const GemmOptions& options = {});

// The M x Nout int32 result the program wrote to C.
MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& gemm);

// Row-major matrices in host memory.
void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m);
MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols);

}  // namespace tpu::model
