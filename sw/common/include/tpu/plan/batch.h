// SPDX-License-Identifier: Apache-2.0
// Batches: independent small products fused into one stream.
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
// The memory unit moves one RHM or WHM at a time, an RHM waits the link's
// read latency (about 500 cycles) for its first row and a WHM costs about 40
// beyond its rows: for
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
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tpu/core_config.h"
#include "tpu/isa.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

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
                                                         std::span<const GemmBatchAddrs> addrs, const CoreConfig& core);

}  // namespace tpu::plan
