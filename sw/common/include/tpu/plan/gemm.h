// SPDX-License-Identifier: Apache-2.0
// The GEMM planner's vocabulary and entry points: plans and builds the
// programs of an int8 or bf16 GEMM C = A x W on the core, for the driver's
// operators, the reference model and the RTL testbenches alike.
//
// The planner (namespace tpu::plan) is split by job, one file each:
//   tpu/plan/gemm.h        this file: shapes, options, the plan, plan_gemm
//                          and gemm_programs; the schedule below
//   tpu/plan/cost_model.h  the analytic cycle estimate plan_gemm ranks by
//   tpu/plan/pack.h        the host images (pack A and W, unpack C)
//   tpu/plan/batch.h       independent small products as one stream
//   tpu/plan/mlp.h         a dense network chained in one command
//   src/plan/stream.h      instruction streams shared by the emitters
//                          (programs cut at the IMEM, weight-tile RWs, MMC
//                          runs as LOOPs); search.cpp, emit.cpp, plan.cpp
//                          hold the search, the emission and the plan's
//                          geometry.
// The 16-bit counts and the LOOP increments are the ISA's (isa_table.h:
// kMaxCount, kLoopIncMin/Max); the link timing is the core's
// (CoreConfig::link_latency, link_bytes_per_cycle).
//
// bf16 GEMMs (outputs kF32 and kBf16: A and W are bf16) use the same plans
// and schedule with the bf16 forms (docs/isa.md): a row of L is a wide row
// (2n bytes, RHM WIDE into two UB rows), a weight tile row is n bf16 (RW
// BF16, 2n bytes), MMC BF16 reads the wide rows, and the K blocks of every
// output tile are accumulated in increasing K order (the first block stored,
// the later ones added with ACC), so each result is exactly the documented
// sum (docs/numerics.md, "bf16 through the core"). kF32 results leave
// through ACT RAW (the fp32 accumulator bits, 4 UB rows a row, as int32);
// kBf16 results through ACT F32 (rounded to bf16, SCALE 1, no clamp) as wide
// rows and WHM WIDE. Images hold bf16 and fp32 little-endian. Every count of
// UB rows below counts a wide row as two.
//
// The device computes D = L x R with L dm x K streamed through the unified
// buffer (UB) and R K x dn streamed as weight tiles. Normally L = A, R = W,
// D = C. A transposed plan computes C^T = W^T x A^T (L = W^T, R = A^T): when
// M is much larger than Nout this moves the big operand from the memory unit
// (which also writes C) to the weight unit. pack_a/pack_w/unpack hide which.
//
// Host images (the driver writes A and W packed, reads C packed):
//   L  packed by pass: the rows [m0, m0 + r) of pass p are stored block after
//      block: block k (columns k*n .. k*n+n-1, zero-padded) as r rows of n
//      bytes at L + m0*Kp + k*r*n (bf16: 2n bytes, at twice the offsets).
//      One RHM loads any run of a pass's blocks.
//   R  n x n tiles, tile (j, k) = R[k*n .. +n][j*n .. +n] zero-padded and
//      row-major (bf16: 2n bytes a row), in the order one pass of the MMCs uses them: column group
//      after column group, within a group K block after K block, within a
//      block the group's column tiles.
//   D  by pass, then column tiles: tile j (columns j*n .. j*n+n-1) of pass p
//      (rows m0 .. m0+r-1) is r rows of tile_row_bytes(j) at
//      D + m0*d_row_bytes() + j*r*row_bytes, row_bytes = 4n (int32 or fp32,
//      little-endian: what WHM of ACT RAW rows writes), 2n (bf16: a wide
//      row) or n (int8). The last tile's rows hold only the UB rows of a
//      result row that cover its lanes (its ACT writes no others: ACT's
//      lanes), 16 bytes instead of 64 for an int32 tile of 4 lanes on a
//      16-wide array. A pass's tiles are contiguous, so one WHM writes
//      several.
//
// Loop nest: passes of pass_rows rows of L; within a pass, groups of
// group_tiles output column tiles, all accumulating at once in the
// accumulators (ACC); within a group, K block after K block, each block's
// MMCs over the group's column tiles, or (tile_major, with a whole pass of L
// in the UB) tile after tile; each weight tile serves pass_rows rows. The
// last chunk of a pass's last group always goes tile after tile, and the
// tiles of tile-major groups and of the last group leave as each finishes.
// A head (head_blocks > 0, a tile-major first group and a whole pass of L
// a load) runs the first head_blocks K blocks of each pass's first group K
// block after K block before the rest goes tile after tile: the first MMCs
// then need one block of L and one weight tile each instead of the first
// tile's every block and tile. Schedule, in program order, so that DMA overlaps compute:
//   - L reaches the UB in loads of chunk_blocks K blocks of one pass (a
//     whole pass when chunk_blocks = k_blocks: then loaded once per pass and
//     kept for all its groups, else once per group). With two A regions a
//     load goes into the region the load before the last used, issued during
//     the previous load's MMCs; with one, before its own MMCs.
//   - Weight tiles stream through RWs issued as far ahead as the weight
//     capacity (WgtFifoTiles + 2) allows, in batches of half of it.
//   - With a head the very first load is two RHMs, the head's blocks and
//     the rest, and the first RW only head_first_tiles(plan) tiles ahead of
//     it (the port answers reads in request order): the first MMC waits for
//     the read latency and those tiles, and the rest of the first batch
//     follows the first load's first RHM.
//   - Group b (all passes, in order) accumulates in ACC slot b % S, S the
//     slots of pass_rows * group_tiles rows the ACC holds (at least 2); its
//     output tiles go through ACT, spread over group b+1's MMCs so that the
//     MXU never waits for them, into UB result regions of write_tiles tiles
//     (result_regions of them, in turn), and leave by one WHM per region
//     (when it is full or holds its pass's last tile), issued with the next
//     group's epilogue so that it never waits in issue for its ACT with
//     MMCs behind it (the last group's go out at once). The result regions
//     follow L's; in bf16 they start at a quarter boundary of the UB above
//     L's (result_base) when both fit, so that the WHM's reads never meet
//     MMC BF16's two reads a cycle at a bank (tpu_ub's parts).
//     Fewer, longer WHMs save the memory unit a DMA packet fill and an
//     acknowledge each (about 40 cycles).
//   - Runs of MMCs that differ by a constant UB or ACC step become LOOPs.
// plan_gemm picks the transposition, pass_rows, group_tiles, chunk_blocks,
// A and result regions, write_tiles and the order with the lowest estimate of
// cycles (GemmCostModel) among those that fit the UB, ACC and 16-bit
// counts; for the best few it builds the programs to count their
// instructions exactly.
// The instruction stream is cut into programs of at most imem_depth
// instructions (each ending in HALT); run them in order. UB, ACC,
// configuration and pending weight tiles carry over from one to the next.
// The first program expects no pending tiles; the last leaves none.
#pragma once

#include <cstdint>
#include <vector>

#include "tpu/core_config.h"
#include "tpu/isa.h"
#include "tpu/matrix.h"
#include "tpu/quant.h"

namespace tpu::plan {

struct GemmShape {
  int m = 0;      // rows of A and C
  int k = 0;      // columns of A, rows of W
  int n_out = 0;  // columns of W and C
};

// The result's type, which also gives the operands': int8 A and W for kInt32
// and kInt8, bf16 A and W for kF32 and kBf16 (a core with a bf16 datapath).
enum class GemmOutput { kInt32, kInt8, kF32, kBf16 };

// A and W are bf16 (the MXU's bf16 datapath).
constexpr bool gemm_bf16(GemmOutput o) { return o == GemmOutput::kF32 || o == GemmOutput::kBf16; }

// What ACT does with each output tile.
struct GemmEpilogue {
  GemmOutput output = GemmOutput::kInt32;
  quant::QuantParams q;            // kInt8 only
  isa::Act act = isa::Act::kNone;  // kInt8; kF32 and kBf16: none, ReLU or ReLU6 (6.0) through ACT F32
  std::vector<int32_t> bias;       // kInt8 only: empty, or n_out entries
  // kF32 and kBf16 only: empty, or n_out fp32 bits added by ACT F32 (BIAS).
  // With a bias or an activation fp32 results leave through ACT F32 RAW
  // (exactly act_lane of tpu/vpu_f32.h with SCALE 1, no clamp), else ACT RAW.
  std::vector<uint32_t> bias_f32;
  // kInt8 only: empty (every column scaled by q.multiplier and q.shift), or
  // n_out per-column scales (TFLite's per-channel requantization), which
  // replace q.multiplier and q.shift. Each output tile writes the CH_MULT /
  // CH_SHIFT registers of the lanes whose scale changes.
  std::vector<quant::LaneScale> scales;
};

// Plan choices forced (for tests and experiments); 0 / kAuto: the planner's.
struct GemmOptions {
  enum class Transpose { kAuto, kNever, kAlways };
  int max_pass_rows = 0;                   // cap on rows of L per pass (0: as many as fit)
  Transpose transpose = Transpose::kAuto;  // kAuto transposes only a bias-free epilogue's plan
  bool bias = false;                       // the epilogue has a bias or scales per output column: never transposed
  int group_tiles = 0;                     // output column tiles per group
  int chunk_blocks = 0;                    // K blocks per load of L
  int a_regions = 0;                       // 1 or 2
  int result_regions = 0;                  // 2 or more
  int write_tiles = 0;                     // output tiles per WHM
  enum class Order { kAuto, kKMajor, kTileMajor };
  Order order = Order::kAuto;  // kTileMajor needs chunk_blocks >= k_blocks
  // K blocks of a head (GemmPlan::head_blocks): -1 the planner's choice, 0
  // none; a head needs a tile-major first group and a whole pass a load.
  int head_blocks = -1;
};

struct GemmPlan {
  GemmShape shape;  // of C = A x W
  GemmOutput output = GemmOutput::kInt32;
  int n = 0;                // array size
  bool transposed = false;  // the device computes C^T = W^T x A^T
  int dm = 0;               // rows of L and D (M, or Nout when transposed)
  int dn = 0;               // columns of R and D (Nout, or M when transposed)
  int k_blocks = 0;         // Kp / n
  int col_tiles = 0;        // ceil(dn / n)
  int pass_rows = 0;        // rows of L per pass (the last pass may have fewer)
  int passes = 0;
  int group_tiles = 0;      // output column tiles accumulating at once (the last group may have fewer)
  int groups = 0;           // per pass
  int chunk_blocks = 0;     // K blocks per load of L
  int chunks = 0;           // loads of L per group (1: a whole pass, kept for all its groups)
  int a_regions = 0;        // 2: L double-buffered in the UB
  int write_tiles = 0;      // output tiles per WHM (one ACT each)
  bool tile_major = false;  // a group's MMCs tile after tile (only with chunks = 1)
  int head_blocks = 0;      // K blocks of each pass's first group K block after K block before its tiles (0: none)
  int result_regions = 0;   // UB regions of write_tiles * out_row_rows() * pass_rows rows for ACT results
  int result_base = 0;      // UB row of the first result region: after L's regions, or in bf16 the upper half
  int wgt_capacity = 0;     // weight tiles an RW may leave unretired
  uint64_t estimate = 0;    // GemmCostModel::cycles() of this plan, with its exact instruction count

  int pass_begin(int p) const { return p * pass_rows; }
  int group_begin(int g) const { return g * group_tiles; }
  int tiles_of_group(int g) const;
  bool bf16() const { return gemm_bf16(output); }
  int in_row_rows() const { return bf16() ? 2 : 1; }  // UB rows per row of L (a wide row: 2)
  int lane_bytes() const { return bf16() ? 2 : 1; }   // bytes per element of A and W
  // UB rows per result row: int32 and fp32 (ACT RAW) 4, bf16 (a wide row) 2, int8 1.
  int out_row_rows() const {
    return output == GemmOutput::kInt32 || output == GemmOutput::kF32 ? 4 : output == GemmOutput::kBf16 ? 2 : 1;
  }
  int rows_of_pass(int p) const;
  int out_row_bytes() const { return out_row_rows() * n; }
  int last_tile_lanes() const { return dn - (col_tiles - 1) * n; }  // 1..n
  // UB rows per result row of column tile j: out_row_rows(), but for the
  // last tile only those that hold its lanes (out_row_rows() bytes each).
  int tile_out_rows(int j) const;
  int tile_row_bytes(int j) const { return tile_out_rows(j) * n; }
  uint64_t d_row_bytes() const;  // bytes of D per row of L: every tile's row
  uint64_t a_bytes() const;      // sizes of the host images
  uint64_t w_bytes() const;
  uint64_t c_bytes() const;
};

// Throws std::invalid_argument when a dimension is < 1, no plan fits the core,
// or the core's datapath lacks the operands' type (bf16 outputs need
// has_bf16(core.datapath), int8 ones has_int8).
GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core, const GemmOptions& options = {});

// The programs, for the packed images (tpu/plan/pack.h) at host addresses a,
// w and c. Throws std::invalid_argument when the epilogue does not match the
// plan.
std::vector<std::vector<isa::Instr>> gemm_programs(const GemmPlan& plan, const GemmEpilogue& epi, uint64_t a,
                                                   uint64_t w, uint64_t c, const CoreConfig& core);

}  // namespace tpu::plan
