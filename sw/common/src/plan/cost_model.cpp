// SPDX-License-Identifier: Apache-2.0
#include "tpu/plan/cost_model.h"

#include <algorithm>
#include <cstdint>

#include "schedule.h"
#include "stream.h"
#include "tpu/isa.h"

namespace tpu::plan {

namespace {

// The device's costs that the configuration table has no entry for, each
// the cycles a stream of the plan's kind spends beyond the terms the model
// adds up:
// a pass boundary, beyond the streaming terms (64x64x64 on `default` takes
// 338 cycles more in two passes of 32 rows than in one);
constexpr uint64_t kPassCycles = 300;
// a WHM on the link beyond its rows, because the write side starts the next
// WHM's first row within a few cycles of the previous one's last, before
// the acknowledge;
constexpr uint64_t kWriteCycles = 5;
// a WHM's last row to its acknowledge: an ACT into a result region waits
// for the WHM that reads the region's previous tiles to be acknowledged;
// with two regions and the WHMs a group late, that WHM is the one just
// before, so the VPU waits this long at every WHM.
constexpr uint64_t kAckCycles = 21;
// An instruction's bytes: each crosses the link once, before its program runs.
constexpr uint64_t kInstrBytes = isa::kInstrBits / 8;

}  // namespace

GemmCostModel::GemmCostModel(const CoreConfig& core)
    : core_(core), read_latency_(uint64_t(core.link_latency)), link_bytes_(uint64_t(core.link_bytes_per_cycle)) {}

uint64_t GemmCostModel::row_link_cycles(int n) const { return std::max<uint64_t>(1, uint64_t(n) / link_bytes_); }

int64_t GemmCostModel::weight_fifo_slack(int rows, int n) const {
  return int64_t(core_.wgt_fifo_tiles) * rows - int64_t(read_latency_) - 4 * int64_t(n);
}

int GemmCostModel::head_first_tiles(const GemmPlan& p) const {
  // Ahead of the head's rows of L go w tiles (w*n UB rows on the link), so
  // the first MMC waits for them; MMCs (j, 0), j < w, then run back to back
  // while the head's rows and the next tile cross the link, and the MXU
  // waits for what is left. The fewest cycles, the fewest tiles on a tie:
  // each tile more ahead delays the first MMC by a tile's link time (n
  // rows) and shortens the MXU's wait by at most one MMC (P rows).
  const int64_t rc = int64_t(row_link_cycles(p.n)), n = p.n, P = p.pass_rows, in = p.in_row_rows();
  const int most = std::max(1, std::min(p.tiles_of_group(0), p.wgt_capacity));
  int best = 1;
  int64_t best_cycles = INT64_MAX;
  for (int w = 1; w <= most; ++w) {
    const int64_t cycles = w * n * rc + std::max<int64_t>(0, (p.head_blocks * P * in + n) * rc - w * P);
    if (cycles < best_cycles) best = w, best_cycles = cycles;
  }
  return best;
}

uint64_t GemmCostModel::instructions_of(const GemmPlan& p) const {
  // Approximate: runs, epilogues, loads, RWs.
  const uint64_t groups = uint64_t(p.passes) * p.groups;
  const uint64_t tiles = uint64_t(p.passes) * p.col_tiles;
  const uint64_t runs = p.group_tiles == 1 || p.tile_major ? tiles * 2 : groups * p.k_blocks;
  const uint64_t loads = p.chunks == 1 ? p.passes : groups * p.chunks;
  const uint64_t rws = tiles * p.k_blocks / uint64_t(weight_batch(p, core_)) + 1;
  const uint64_t whms = uint64_t(p.passes) * uint64_t(ceil_div(p.col_tiles, p.write_tiles));
  const uint64_t acts = p.tile_major ? tiles : whms + groups;  // k-major: one per WHM batch within a group (no bias)
  // Every RW and every place a group's epilogue or a load goes ends a run of MMCs.
  return (runs + rws + whms + loads) * 2 + acts + whms + loads + rws + 8;
}

uint64_t GemmCostModel::head_start(const GemmPlan& p) const {
  // The first MMC waits for the latency and the first RW's tiles and then
  // follows its rows of L.
  const uint64_t n = uint64_t(p.n), P = uint64_t(p.pass_rows), in_rows = uint64_t(p.in_row_rows());
  const uint64_t row_cycles = row_link_cycles(p.n);
  const uint64_t w = uint64_t(head_first_tiles(p)), h = uint64_t(p.head_blocks);
  const uint64_t behind = (h * P * in_rows + n) * row_cycles, ahead = w * n * row_cycles;
  return read_latency_ + ahead + (behind > w * P ? behind - w * P : 0);
}

uint64_t GemmCostModel::head_wait_cycles(const GemmPlan& p) const {
  // The MXU waits once for the next tile, which comes behind the head's
  // rows. The rest of the first load is requested once the head's rows are
  // in, and comes behind the rest of the first RW batch: the MXU needs it
  // after the head's MMCs.
  const uint64_t n = uint64_t(p.n), P = uint64_t(p.pass_rows), in_rows = uint64_t(p.in_row_rows());
  const uint64_t kb = uint64_t(p.k_blocks), ct = uint64_t(p.col_tiles), row_cycles = row_link_cycles(p.n);
  const uint64_t w = uint64_t(head_first_tiles(p)), h = uint64_t(p.head_blocks);
  const uint64_t start = head_start(p), ahead = w * n * row_cycles;
  const uint64_t head_in = read_latency_ + ahead + h * P * in_rows * row_cycles;
  const uint64_t batch = std::min<uint64_t>(uint64_t(p.wgt_capacity), kb * ct);
  const uint64_t rest = head_in + std::max(read_latency_, (batch > w ? batch - w : 0) * n * row_cycles);
  const uint64_t needed = start + h * uint64_t(p.tiles_of_group(0)) * P;
  // The RWs issued after that load's request come behind all its rows:
  // the MXU waits once the first batch's tiles are used up before them.
  const uint64_t rest_in = rest + (kb - h) * P * in_rows * row_cycles + n * row_cycles;
  const uint64_t tiles_out = start + batch * std::max<uint64_t>(P, n);
  return (rest > needed ? rest - needed : 0) + (rest_in > tiles_out ? rest_in - tiles_out : 0);
}

uint64_t GemmCostModel::cycles(const GemmPlan& p, uint64_t instructions) const {
  const uint64_t n = uint64_t(p.n), kb = uint64_t(p.k_blocks), ct = uint64_t(p.col_tiles);
  const uint64_t dm = uint64_t(p.dm), out_rows = uint64_t(p.out_row_rows());
  const uint64_t row_cycles = row_link_cycles(p.n);  // a UB row on the link
  // MXU: one row a cycle, but a weight tile needs at least the cycles the
  // weight FIFO takes to cover the read latency per tile.
  const uint64_t tile_min = (read_latency_ + n) / uint64_t(std::max(1, core_.wgt_fifo_tiles)) + 1;
  uint64_t mxu = 0;
  for (int pass = 0; pass < p.passes; ++pass)
    mxu += std::max<uint64_t>(uint64_t(p.rows_of_pass(pass)), tile_min) * kb * ct;
  // The DMA reads one transfer at a time: while an RHM's rows cross the link
  // the weight FIFO only drains, and the MXU waits once it is empty.
  const uint64_t in_rows = uint64_t(p.in_row_rows());  // UB rows per row of L
  if (p.chunks > 1) {
    const uint64_t rhm_rows = uint64_t(p.chunk_blocks) * uint64_t(p.pass_rows) * in_rows * row_cycles;
    const uint64_t covered = uint64_t(std::max<int64_t>(0, weight_fifo_slack(p.pass_rows, p.n)));
    if (rhm_rows > covered) mxu += (rhm_rows - covered) * uint64_t(p.passes) * uint64_t(p.groups) * uint64_t(p.chunks);
  }
  // L loads: once per pass, or per group when a pass is loaded in chunks.
  const uint64_t l_loads = p.chunks == 1 ? 1 : uint64_t(p.groups);
  const uint64_t l_rows = dm * kb * l_loads * in_rows;  // UB rows
  const uint64_t rhms = uint64_t(p.passes) * (p.chunks == 1 ? 1 : uint64_t(p.groups) * p.chunks);
  // UB rows of a result row of the last tile: only those that hold its lanes.
  const uint64_t last_rows = uint64_t(p.tile_out_rows(p.col_tiles - 1));
  const uint64_t c_rows = dm * ((ct - 1) * out_rows + last_rows);
  const uint64_t whms = uint64_t(p.passes) * uint64_t(ceil_div(p.col_tiles, p.write_tiles));
  const uint64_t mem_unit = (l_rows + c_rows) * row_cycles + rhms * read_latency_ + whms * kWriteCycles;
  const uint64_t w_bytes = uint64_t(p.passes) * ct * kb * n * n * uint64_t(p.lane_bytes());
  const uint64_t link_read = (l_rows * n + w_bytes) / link_bytes_;
  const uint64_t vpu = c_rows + (p.result_regions == 2 ? whms * kAckCycles : 0);
  // Exposed: the first load (latency, rows) before the first MMC; with one
  // A region every later load too. The MXU's last row is followed by the
  // last tile's ACT and its WHM (write_tiles tiles), plus what the last
  // group's tiles, finishing one after the other, leave behind. The first
  // write waits for the first tile: a whole group when K block after K
  // block.
  const uint64_t P = uint64_t(p.pass_rows);
  const uint64_t first = read_latency_ + uint64_t(p.chunk_blocks) * P * in_rows * row_cycles;
  const uint64_t reloads = p.a_regions == 1 ? (rhms - 1) * first : 0;
  const uint64_t last_tiles = uint64_t(p.tiles_of_group(p.groups - 1));
  const uint64_t kc_last = kb - uint64_t(p.chunks - 1) * uint64_t(p.chunk_blocks);
  const uint64_t tile_write = P * out_rows * row_cycles;
  const uint64_t last = P * last_rows + (uint64_t(p.write_tiles) - 1) * tile_write + P * last_rows * row_cycles +
                        last_tiles * (tile_write > kc_last * P ? tile_write - kc_last * P : 0);
  // From the end of the first load: the MXU's rows and the tail; the memory
  // unit's other loads and the writes, which cannot start before the first
  // tile is done (a whole group when K block after K block, but for the
  // last group's last chunk).
  const uint64_t G = uint64_t(p.group_tiles);
  // The MXU starts before the first load has arrived whole, on its first
  // block (behind that block's weight tiles, which go first).
  const uint64_t first_blocks = std::min<uint64_t>(kb, uint64_t(p.chunk_blocks));
  uint64_t first_mmc = read_latency_ + (first_blocks * n + P * in_rows) * row_cycles;
  // A head's first MMC: what the MXU waits for behind the rest of its first load.
  const uint64_t head_wait = p.head_blocks > 0 ? head_wait_cycles(p) : 0;
  if (p.head_blocks > 0) first_mmc = head_start(p) + head_wait;
  // The first WHM waits for write_tiles tiles.
  const uint64_t wb = uint64_t(p.write_tiles);
  // (A head's other tiles run before the first tile's later blocks, and the
  // MXU's waits behind its first load delay that tile.)
  const uint64_t first_tile = P * out_rows + uint64_t(p.head_blocks) * (G - 1) * P + head_wait +
                              (p.tile_major                         ? wb * kb * P
                               : uint64_t(p.passes) * p.groups == 1 ? (kb - kc_last) * G * P + wb * kc_last * P
                                                                    : std::max(G, wb) * kb * P);
  // A chunk's load (`first`) and, in some chunks, a WHM share the memory
  // unit in program order while the MXU works through the chunk before.
  // When the load fits in the chunk's rows but the load and a WHM do not,
  // each WHM holds up the next load and the MXU waits for the difference
  // (bf16 GEMMs' loads, twice as long as int8 ones, meet this when a WHM
  // writes two tiles). A load that alone outlasts the chunk
  // is the term for the weight FIFO above.
  if (p.chunks > 1 && !p.tile_major) {
    const uint64_t chunk_mxu = uint64_t(p.chunk_blocks) * G * P;
    const uint64_t whm = wb * tile_write + kWriteCycles;
    if (first <= chunk_mxu && first + whm > chunk_mxu) mxu += (first + whm - chunk_mxu) * whms;
  }
  const uint64_t write_work = c_rows * row_cycles + whms * kWriteCycles;
  const uint64_t other_loads = mem_unit - write_work - std::min(mem_unit - write_work, first);
  // The memory unit alternates loads (each waiting for its data) and
  // writes in program order, so loads overlap the rest imperfectly: they
  // count an eighth more.
  const uint64_t busiest =
      std::max({first_mmc + mxu + last - std::min(first, first_mmc + mxu + last), other_loads * 9 / 8 + write_work,
                first_tile + write_work, link_read, vpu + first_tile});
  const uint64_t depth = uint64_t(std::max(2, core_.imem_depth));
  if (instructions == 0) instructions = instructions_of(p);
  const uint64_t programs = (instructions + depth - 2) / (depth - 1);
  // Each instruction crosses the link once, before its program runs.
  const uint64_t fetch = instructions * kInstrBytes / link_bytes_;
  const uint64_t pass_switches = uint64_t(p.passes - 1) * kPassCycles;
  return first + busiest + reloads + fetch + pass_switches + (programs - 1) * (kCommandCycles + read_latency_);
}

}  // namespace tpu::plan
