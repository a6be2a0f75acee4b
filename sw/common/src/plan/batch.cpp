// SPDX-License-Identifier: Apache-2.0
// Batches of small products as one stream (tpu/plan/batch.h).
#include "tpu/plan/batch.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "stream.h"
#include "tpu/isa.h"

namespace tpu::plan {

using isa::Instr;

namespace {

// An RHM waits the link's read latency for its first row and a WHM costs
// about GemmCostModel::kWhmCycles beyond its rows, and each side of the
// memory unit moves one at a time: a batch loads the L of adjacent products
// together up to this many UB rows (when an eighth of the UB allows), and
// writes adjacent results together up to kBatchWriteRows.
constexpr int kBatchLoadRows = 512;
constexpr int kBatchWriteRows = 1024;

// The UB and ACC layout of a batch (tpu/plan/batch.h).
struct BatchLayout {
  int a_rows = 0;       // UB rows of one A region
  int tile_rows = 0;    // the largest dm: ACC rows of a slot, a quarter of a result tile's UB rows
  int region_rows = 0;  // UB rows of a result region
  int result_regions = 0;
  int acc_slots = 0;
  uint32_t result_row(int64_t region) const {
    return uint32_t(2 * a_rows + int(region % result_regions) * region_rows);
  }
  uint32_t acc_row(int64_t tile) const { return uint32_t((tile % acc_slots) * tile_rows); }
};

BatchLayout batch_layout(std::span<const GemmPlan> plans, const CoreConfig& core) {
  BatchLayout l;
  for (const GemmPlan& p : plans) {
    l.a_rows = std::max(l.a_rows, p.dm * p.k_blocks * p.in_row_rows());
    l.tile_rows = std::max(l.tile_rows, p.dm);
  }
  const int tile = 4 * l.tile_rows;  // UB rows of the largest result tile
  const int grown = std::max(l.a_rows, std::min(kBatchLoadRows, core.ub_rows / 8));
  if (core.ub_rows - 2 * grown >= 3 * tile) l.a_rows = grown;
  const int room = std::max(0, core.ub_rows - 2 * l.a_rows);
  l.region_rows = std::max(tile, std::min(kBatchWriteRows, room / 3));
  l.result_regions = room / l.region_rows;
  l.acc_slots = core.acc_rows / l.tile_rows;
  return l;
}

// The plan can be a product of a batch: int32, one pass and one load of L,
// weight tiles in tile order (a product's MMCs pop its tiles in the
// image's order) and no head, this core's array and weight capacity, and
// its L and a result tile within a count.
bool qualifies(const GemmPlan& p, const CoreConfig& core) {
  const bool tile_order = p.groups == 1 || p.tile_major;
  return p.output == GemmOutput::kInt32 && p.passes == 1 && p.chunks == 1 && tile_order && p.head_blocks == 0 &&
         p.n == core.n && p.wgt_capacity == core.wgt_fifo_tiles + isa::kWgtBanks &&
         uint32_t(p.dm * p.k_blocks) <= isa::kMaxCount && uint32_t(4 * p.dm) <= isa::kMaxCount;
}

}  // namespace

bool gemm_batch_fits(std::span<const GemmPlan> plans, const CoreConfig& core) {
  if (plans.empty()) return false;
  for (const GemmPlan& p : plans)
    if (!qualifies(p, core)) return false;
  const BatchLayout l = batch_layout(plans, core);
  return l.result_regions >= 2 && l.acc_slots >= 2;
}

bool gemm_batchable(const GemmPlan& plan, const CoreConfig& core) { return gemm_batch_fits(std::span(&plan, 1), core); }

GemmPlan plan_gemm_for_batch(const GemmShape& shape, const CoreConfig& core) {
  const GemmPlan p = plan_gemm(shape, GemmOutput::kInt32, core);
  if (gemm_batchable(p, core)) return p;
  // plan_gemm may split L into passes or chunks to overlap a product with
  // itself; in a batch the products overlap each other. The choices that
  // leave the longest pass (one tile a group, one A and two result regions
  // of one tile) in tile order, in either orientation: only the images
  // matter to a batch, not the plan's own schedule.
  using T = GemmOptions::Transpose;
  for (const T t : {p.transposed ? T::kAlways : T::kNever, p.transposed ? T::kNever : T::kAlways}) {
    try {
      const GemmPlan forced = plan_gemm(shape, GemmOutput::kInt32, core,
                                        {.transpose = t,
                                         .group_tiles = 1,
                                         .chunk_blocks = p.k_blocks,
                                         .a_regions = 1,
                                         .result_regions = 2,
                                         .write_tiles = 1,
                                         .order = GemmOptions::Order::kTileMajor,
                                         .head_blocks = 0});
      if (gemm_batchable(forced, core)) return forced;
    } catch (const std::invalid_argument&) {
    }
  }
  return p;
}

uint64_t gemm_batch_instructions(const GemmPlan& p) {
  // The RHM; per tile a storing MMC, a LOOP and MMC over the other K
  // blocks, ACT and WHM; each RW (at least half the capacity, one more where
  // the product's image begins or ends) and the run it splits.
  const uint64_t tiles = uint64_t(p.col_tiles);
  const uint64_t rws = tiles * uint64_t(p.k_blocks) / uint64_t(std::max(1, p.wgt_capacity / 2)) + 2;
  return 1 + tiles * (p.k_blocks > 1 ? 5 : 3) + rws * 3;
}

std::vector<std::vector<Instr>> gemm_batch_programs(std::span<const GemmPlan> plans,
                                                    std::span<const GemmBatchAddrs> addrs, const CoreConfig& core) {
  if (plans.size() != addrs.size() || plans.empty())
    throw std::invalid_argument("gemm batch: " + std::to_string(plans.size()) + " plans and " +
                                std::to_string(addrs.size()) + " image addresses; give one of each per product");
  if (!gemm_batch_fits(plans, core))
    throw std::invalid_argument(
        "gemm batch: the products cannot run as one batch on this core (each must be "
        "int32 with one pass and load of L in tile order, and the regions must fit)");
  const BatchLayout lay = batch_layout(plans, core);
  const int n = core.n;
  const size_t count = plans.size();
  const uint64_t tile_bytes = uint64_t(n) * uint64_t(n);

  // Loads: runs of products whose L images follow each other in host
  // memory, as many as fit an A region; load g goes to region g % 2.
  struct Load {
    uint64_t addr;
    uint32_t ub, rows;
  };
  std::vector<Load> loads;
  std::vector<size_t> load_of(count);
  std::vector<uint32_t> l_row(count);  // each product's L in the UB
  for (size_t i = 0; i < count; ++i) {
    const GemmPlan& p = plans[i];
    const uint64_t addr = p.transposed ? addrs[i].w : addrs[i].a;
    const uint32_t rows = uint32_t(p.dm * p.k_blocks);
    if (loads.empty() || loads.back().addr + uint64_t(loads.back().rows) * uint64_t(n) != addr ||
        loads.back().rows + rows > uint32_t(lay.a_rows))
      loads.push_back({addr, uint32_t((loads.size() % 2) * size_t(lay.a_rows)), 0});
    load_of[i] = loads.size() - 1;
    l_row[i] = loads.back().ub + loads.back().rows;
    loads.back().rows += rows;
  }

  // Result tiles in stream order, each in the current result region after
  // the tiles before it; a region is written by one WHM when the next tile
  // does not fit it or does not follow in C (tile j of a product is at C +
  // j*dm*4n, so a product's tiles follow each other, and so do products
  // whose C images are adjacent).
  struct Tile {
    uint32_t ub;
    uint32_t lanes;      // its ACT's: the last tile's lanes when they need fewer than 4 UB rows a row
    bool write;          // the last of its region: a WHM after its ACT
    uint32_t ub0, rows;  // the WHM's
    uint64_t c;
  };
  std::vector<Tile> tiles;
  {
    int64_t region = 0;
    uint32_t fill = 0;
    uint64_t c0 = 0, c_end = 0;
    const auto close = [&] {
      tiles.back().write = true;
      tiles.back().ub0 = lay.result_row(region);
      tiles.back().rows = fill;
      tiles.back().c = c0;
      ++region;
      fill = 0;
    };
    for (size_t i = 0; i < count; ++i)
      for (int j = 0; j < plans[i].col_tiles; ++j) {
        const GemmPlan& p = plans[i];
        const int part = p.tile_out_rows(j);  // 4, or fewer for the last tile
        const uint32_t rows = uint32_t(part * p.dm);
        const uint64_t c = addrs[i].c + uint64_t(j) * uint64_t(4 * p.dm) * uint64_t(n);
        if (fill > 0 && (fill + rows > uint32_t(lay.region_rows) || c != c_end)) close();
        if (fill == 0) c0 = c;
        tiles.push_back({lay.result_row(region) + fill, part < 4 ? uint32_t(p.last_tile_lanes()) : 0, false, 0, 0, 0});
        fill += rows;
        c_end = c + uint64_t(rows) * uint64_t(n);
      }
    close();
  }

  Stream out;
  // One weight stream over all the W images, those that follow each other
  // in host memory as one run.
  std::vector<WeightStream::Run> runs;
  int64_t batch = INT64_MAX;
  for (size_t i = 0; i < count; ++i) {
    const GemmPlan& p = plans[i];
    const int64_t t = int64_t(p.col_tiles) * p.k_blocks;
    const uint64_t addr = p.transposed ? addrs[i].a : addrs[i].w;
    if (!runs.empty() && runs.back().addr + uint64_t(runs.back().tiles) * tile_bytes == addr)
      runs.back().tiles += t;
    else
      runs.push_back({t, addr});
    batch = std::min<int64_t>(batch, weight_batch(p, core));
  }
  WeightStream weights(out, plans[0], std::move(runs), batch);
  weights.first_tiles(plans[0].k_blocks);  // the first output tile of the first product: a tile per K block
  const auto load = [&](size_t g) { out.add(isa::rhm(loads[g].ub, loads[g].rows, loads[g].addr, uint32_t(n))); };
  load(0);

  size_t t0 = 0;  // the product's first tile in `tiles` (ACC slots go in turn by it)
  for (size_t i = 0; i < count; ++i) {
    const GemmPlan& p = plans[i];
    const int kb = p.k_blocks, dm = p.dm;
    // The next load right after the first tile of its predecessor's first
    // product: in the memory unit's queue ahead of that load's write-backs.
    const bool loads_next = (i == 0 || load_of[i - 1] != load_of[i]) && load_of[i] + 1 < loads.size();
    std::vector<Mmc> mmcs;
    std::vector<bool> before(size_t(p.col_tiles * kb)), after(before.size());
    for (int j = 0; j < p.col_tiles; ++j)
      for (int k = 0; k < kb; ++k) mmcs.push_back({l_row[i] + uint32_t(k * dm), lay.acc_row(int64_t(t0) + j), k > 0});
    for (int j = 0; j < p.col_tiles; ++j) after[size_t((j + 1) * kb - 1)] = true;
    emit_mmcs(out, weights, mmcs, uint32_t(dm), false, before, after, [&](size_t m, bool) {
      const size_t j = m / size_t(kb);
      if (j == 0 && loads_next) load(load_of[i] + 1);
      const Tile& t = tiles[t0 + j];
      out.add(isa::act(lay.acc_row(int64_t(t0 + j)), t.ub, uint32_t(dm), isa::Act::kNone, false, true, false, t.lanes));
      if (t.write) out.add(isa::whm(t.ub0, t.rows, t.c, uint32_t(n)));
    });
    t0 += size_t(p.col_tiles);
  }
  return out.programs(core.imem_depth);
}

}  // namespace tpu::plan
