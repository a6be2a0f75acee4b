// SPDX-License-Identifier: Apache-2.0
// Plans and builds the programs of an int8 or bf16 GEMM C = A x W on the
// core, for the driver's operators, the reference model and the RTL
// testbenches alike.
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
// cycles (estimate_cycles) among those that fit the UB, ACC and 16-bit
// counts; for the best few it builds the programs to count their
// instructions exactly.
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

// The result's type, which also gives the operands': int8 A and W for kInt32
// and kInt8, bf16 A and W for kF32 and kBf16 (a core with a bf16 datapath).
enum class GemmOutput { kInt32, kInt8, kF32, kBf16 };

// A and W are bf16 (the MXU's bf16 datapath).
constexpr bool gemm_bf16(GemmOutput o) { return o == GemmOutput::kF32 || o == GemmOutput::kBf16; }

using MatrixBf16 = Matrix<uint16_t>;  // bf16 bits (tpu/bf16.h)
using MatrixF32Bits = Matrix<uint32_t>;  // fp32 bits

// What ACT does with each output tile.
struct GemmEpilogue {
  GemmOutput output = GemmOutput::kInt32;
  quant::QuantParams q;        // kInt8 only
  isa::Act act = isa::Act::kNone;  // kInt8; kF32 and kBf16: none, ReLU or ReLU6 (6.0) through ACT F32
  std::vector<int32_t> bias;   // kInt8 only: empty, or n_out entries
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
  int max_pass_rows = 0;  // cap on rows of L per pass (0: as many as fit)
  Transpose transpose = Transpose::kAuto;  // kAuto transposes only a bias-free epilogue's plan
  bool bias = false;      // the epilogue has a bias or scales per output column: never transposed
  int group_tiles = 0;    // output column tiles per group
  int chunk_blocks = 0;   // K blocks per load of L
  int a_regions = 0;      // 1 or 2
  int result_regions = 0; // 2 or more
  int write_tiles = 0;    // output tiles per WHM
  enum class Order { kAuto, kKMajor, kTileMajor };
  Order order = Order::kAuto;  // kTileMajor needs chunk_blocks >= k_blocks
  // K blocks of a head (GemmPlan::head_blocks): -1 the planner's choice, 0
  // none; a head needs a tile-major first group and a whole pass a load.
  int head_blocks = -1;
};

struct GemmPlan {
  GemmShape shape;      // of C = A x W
  GemmOutput output = GemmOutput::kInt32;
  int n = 0;            // array size
  bool transposed = false;  // the device computes C^T = W^T x A^T
  int dm = 0;           // rows of L and D (M, or Nout when transposed)
  int dn = 0;           // columns of R and D (Nout, or M when transposed)
  int k_blocks = 0;     // Kp / n
  int col_tiles = 0;    // ceil(dn / n)
  int pass_rows = 0;    // rows of L per pass (the last pass may have fewer)
  int passes = 0;
  int group_tiles = 0;  // output column tiles accumulating at once (the last group may have fewer)
  int groups = 0;       // per pass
  int chunk_blocks = 0; // K blocks per load of L
  int chunks = 0;       // loads of L per group (1: a whole pass, kept for all its groups)
  int a_regions = 0;    // 2: L double-buffered in the UB
  int write_tiles = 0;  // output tiles per WHM (one ACT each)
  bool tile_major = false;  // a group's MMCs tile after tile (only with chunks = 1)
  int head_blocks = 0;  // K blocks of each pass's first group K block after K block before its tiles (0: none)
  int result_regions = 0;  // UB regions of write_tiles * out_row_rows() * pass_rows rows for ACT results
  int result_base = 0;  // UB row of the first result region: after L's regions, or in bf16 the upper half
  int wgt_capacity = 0; // weight tiles an RW may leave unretired
  uint64_t estimate = 0;  // estimate_cycles() of this plan

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
  uint64_t a_bytes() const;  // sizes of the host images
  uint64_t w_bytes() const;
  uint64_t c_bytes() const;
};

// Throws std::invalid_argument when a dimension is < 1, no plan fits the core,
// or the core's datapath lacks the operands' type (bf16 outputs need
// has_bf16(core.datapath), int8 ones has_int8).
GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core,
                   const GemmOptions& options = {});

// A rough model of a plan's cycles on a link of 16 bytes a cycle each way with
// a 500-cycle read latency (the named configurations' sim: link): the busiest
// of the MXU (slowed when a weight tile serves too few rows for the weight
// FIFO to cover the latency), the memory unit (L loads, each with the read
// latency, and C writes), the VPU, the link's read direction; plus the
// exposed start (first load) and end (last group's write-back) and the fixed
// cost of each extra program (from `instructions`, or when 0 a count
// estimated from the plan). Only used to compare plans.
uint64_t estimate_cycles(const GemmPlan& plan, const CoreConfig& core, uint64_t instructions = 0);

// A plan with a head: the weight tiles its first RW reads ahead of the first
// load (the first group's tiles of K block 0, one MMC each), as many as
// keep the MXU busy until the next tile arrives behind the head's rows of L.
int head_first_tiles(const GemmPlan& plan);

// Host images.
std::vector<int8_t> pack_a(const GemmPlan& plan, const MatrixI8& a);
std::vector<int8_t> pack_w(const GemmPlan& plan, const MatrixI8& w);
MatrixI32 unpack_c_i32(const GemmPlan& plan, std::span<const uint8_t> c);
MatrixI8 unpack_c_i8(const GemmPlan& plan, std::span<const uint8_t> c);
// bf16 plans: the images as little-endian bytes, and the results' bits.
std::vector<uint8_t> pack_a_bf16(const GemmPlan& plan, const MatrixBf16& a);
std::vector<uint8_t> pack_w_bf16(const GemmPlan& plan, const MatrixBf16& w);
MatrixF32Bits unpack_c_f32(const GemmPlan& plan, std::span<const uint8_t> c);
MatrixBf16 unpack_c_bf16(const GemmPlan& plan, std::span<const uint8_t> c);

// The programs, for the packed images at host addresses a, w and c. Throws
// std::invalid_argument when the epilogue does not match the plan.
std::vector<std::vector<isa::Instr>> gemm_programs(const GemmPlan& plan, const GemmEpilogue& epi,
                                                   uint64_t a, uint64_t w, uint64_t c,
                                                   const CoreConfig& core);

// ---- Batches: independent small products fused into one stream ------------------------
//
// A batch runs products C[i] = A[i] x W[i] (int32 results) as one
// instruction stream, software-pipelined across products so that the
// memory, weight, matrix and vector units overlap from one product to the
// next as they do within one (the scoreboard orders every UB and ACC reuse).
// Each product keeps its own plan and host images (pack_a, pack_w,
// unpack_c_i32 unchanged); gemm_batchable says which plans qualify: int32,
// one pass and one load of L (passes = chunks = 1), weight tiles in tile
// order (one group, or tile_major, and no head; plan_gemm_for_batch forces
// such a plan when plan_gemm's is not one), and room for the layout below.
//
// The memory unit moves one RHM or WHM at a time, an RHM waits about 500
// cycles for its first row and a WHM costs about 40 beyond its rows: for
// small products these, not the MXU, bound the stream. So images that
// follow each other in host memory (the driver packs a batch's A, W and C
// images each into one buffer) move together.
//
// UB:  two A regions, each the largest dm * k_blocks of the batch, raised
//      to min(512, ub_rows / 8) when smaller and 3 result tiles (4 * the
//      largest dm rows each) still fit after both; then result regions of
//      min(1024, a third of the rows left) rows but at least one result
//      tile, as many as fit (at least 2: tiny's 256 rows hold 16^3 so).
// ACC: slots of one output tile (the largest dm rows), as many as fit (at
//      least 2), used in turn. A product's MMCs go tile after tile, so only
//      one tile accumulates at a time.
// Loads: product i's L (dm * k_blocks rows) joins the load of product i-1
//      when it follows i-1's L in host memory and the load still fits an A
//      region; else it starts the next load. Load g is one RHM into A region
//      g % 2.
// Stream, product i after product i-1:
//   - Load 0 comes first; load g+1 right after the MMCs of the first tile
//     of load g's first product, so that in the memory unit's in-order
//     queue it precedes load g's write-backs.
//   - Product i's MMCs go tile after tile, each tile's K blocks in
//     increasing order (the first stores, the others accumulate; each POPs
//     its weight tile) into the next ACC slot; runs with a constant step
//     become LOOPs.
//   - After a tile's last MMC: ACT RAW into the current result region,
//     after the tiles already there (a product's last tile with only the UB
//     rows that hold its lanes). A region is written by one WHM, after the
//     ACT of its last tile, when the next tile does not fit it or does not
//     follow in C: tile j of a product is dm rows at C + j*dm*4n, so a
//     product's tiles follow each other, and adjacent C images continue
//     them.
//   - Weight tiles: one stream of RWs over the products' W images, issued
//     ahead within the weight capacity as in gemm_programs; an RW spans
//     products only where their W images follow each other.
// The stream is cut into programs of at most imem_depth instructions (each
// ending in HALT); run them in order. UB, ACC and pending weight tiles carry
// over from one to the next; the first expects no pending tiles, the last
// leaves none.

// The packed images of one product of a batch.
struct GemmBatchAddrs {
  uint64_t a = 0;  // pack_a's image
  uint64_t w = 0;  // pack_w's image
  uint64_t c = 0;  // plan.c_bytes() bytes for the packed result
};

// The plans can run as one batch on the core (each qualifies, and the
// layout above fits the UB, the ACC and the 16-bit counts).
bool gemm_batch_fits(std::span<const GemmPlan> plans, const CoreConfig& core);
// The plan can be part of a batch (a batch of it alone fits).
bool gemm_batchable(const GemmPlan& plan, const CoreConfig& core);
// The int32 plan of a product to batch: plan_gemm's when it is batchable,
// else one forced to tile order and a single load of L when that gives a
// batchable plan, else plan_gemm's (which then runs on its own). Throws as
// plan_gemm does.
GemmPlan plan_gemm_for_batch(const GemmShape& shape, const CoreConfig& core);
// At least the instructions the product adds to a batch's stream (an upper
// bound, to size batches).
uint64_t gemm_batch_instructions(const GemmPlan& plan);
// The batch's programs. Throws std::invalid_argument when the spans' sizes
// differ, are 0, or the plans do not fit (gemm_batch_fits).
std::vector<std::vector<isa::Instr>> gemm_batch_programs(std::span<const GemmPlan> plans,
                                                         std::span<const GemmBatchAddrs> addrs,
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
