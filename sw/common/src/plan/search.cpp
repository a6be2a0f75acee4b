// SPDX-License-Identifier: Apache-2.0
// The GEMM plan search: every candidate plan the options allow that fits the
// core, in a fixed order, each with the cost model's estimate; the best few
// then counted exactly by building their streams.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "schedule.h"
#include "tpu/isa.h"
#include "tpu/plan/cost_model.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

namespace {

// Plans whose instruction stream plan_gemm builds to count it exactly.
constexpr size_t kExactCandidates = 32;

void check_shape(const GemmShape& shape, GemmOutput output, const CoreConfig& core) {
  if (shape.m < 1 || shape.k < 1 || shape.n_out < 1)
    throw std::invalid_argument("gemm " + dims(shape) + ": every dimension must be at least 1");
  if (uint32_t(round_up(shape.k, core.n)) > isa::kMaxCount)
    throw std::invalid_argument("gemm " + dims(shape) + ": K is too large for the core");
  if (gemm_bf16(output) && !has_bf16(core.datapath))
    throw std::invalid_argument("gemm " + dims(shape) +
                                ": bf16 operands need a core with a bf16 datapath; this one is int8 only");
  if (!gemm_bf16(output) && !has_int8(core.datapath))
    throw std::invalid_argument("gemm " + dims(shape) +
                                ": int8 operands need a core with an int8 datapath; this one is bf16 only");
}

// A plan's sizes, before its rows per pass are fitted to the core.
struct Layout {
  int group_tiles, chunk_blocks, a_regions, result_regions, write_tiles;
};

// The candidate sizes of one orientation (a forced option is the only one),
// in the order the search tries them: group sizes one per count of groups
// (ceil(ct / groups)), a whole pass of L a load and then powers of two K
// blocks, one or two A regions, two to four result regions, powers of two
// tiles per WHM up to 8.
std::vector<Layout> layouts(const GemmPlan& p, const GemmOptions& o) {
  const int ct = p.col_tiles, kb = p.k_blocks;
  std::vector<int> group_sizes, chunk_sizes{kb}, write_sizes;
  for (int g = 1; g <= ct; ++g) {
    const int size = ceil_div(ct, g);
    if (group_sizes.empty() || group_sizes.back() != size) group_sizes.push_back(size);
  }
  for (int c = 1; c < kb; c *= 2) chunk_sizes.push_back(c);
  for (int w = 1; w <= std::min(ct, 8); w *= 2) write_sizes.push_back(w);
  if (o.group_tiles > 0) group_sizes = {std::min(o.group_tiles, ct)};
  if (o.chunk_blocks > 0) chunk_sizes = {std::min(o.chunk_blocks, kb)};
  if (o.write_tiles > 0) write_sizes = {std::min(o.write_tiles, ct)};
  std::vector<Layout> out;
  for (const int G : group_sizes)
    for (const int kc : chunk_sizes)
      for (int regions = 1; regions <= 2; ++regions)
        for (int results = 2; results <= 4; ++results)
          for (const int wb : write_sizes)
            if ((o.a_regions == 0 || regions == o.a_regions) && (o.result_regions == 0 || results == o.result_regions))
              out.push_back({G, kc, regions, results, wb});
  return out;
}

// bf16: L in the UB's lower parts, the results in the upper ones, when both
// fit (an MMC BF16 takes two banks a cycle; parts have banks of their own).
// The cut that leaves the most rows per pass; rows 0 when none fits.
struct UbSplit {
  int rows = 0, result_base = 0;
};
UbSplit ub_split(const GemmPlan& p, const Layout& l, const CoreConfig& core) {
  const int in_rows = p.in_row_rows(), out_rows = p.out_row_rows();
  const int parts = in_rows == 2 ? ub_parts(core.datapath) : 1, part = core.ub_rows / parts;
  UbSplit best;
  for (int j = 1; j < parts; ++j) {
    const int r = std::min((parts - j) * part / (l.a_regions * l.chunk_blocks * in_rows),
                           j * part / (l.result_regions * l.write_tiles * out_rows));
    if (r > best.rows) best = {r, (parts - j) * part};
  }
  return best;
}

// The plan of layout l with its rows per pass fitted to the UB, the ACC
// (two groups' slots, or with `single_slot` one group's) and the 16-bit
// counts, or nothing when not a row fits.
std::optional<GemmPlan> fitted(GemmPlan p, const Layout& l, bool single_slot, const CoreConfig& core,
                               const GemmOptions& options) {
  const UbSplit split = ub_split(p, l, core);
  const int in_rows = p.in_row_rows(), out_rows = p.out_row_rows();
  const int max_count = int(isa::kMaxCount);
  const int ub_fit =
      split.rows >= 1
          ? split.rows
          : core.ub_rows / (l.a_regions * l.chunk_blocks * in_rows + l.result_regions * l.write_tiles * out_rows);
  int rows = std::min({ub_fit, single_slot ? p.dm : core.acc_rows / (2 * l.group_tiles),
                       max_count / (l.write_tiles * out_rows), max_count / l.chunk_blocks});
  if (options.max_pass_rows > 0) rows = std::min(rows, options.max_pass_rows);
  if (rows < 1 || (single_slot && rows < p.dm)) return std::nullopt;  // the single slot only for a single pass
  p.passes = ceil_div(p.dm, rows);
  p.pass_rows = ceil_div(p.dm, p.passes);  // balanced passes
  p.group_tiles = l.group_tiles;
  p.groups = ceil_div(p.col_tiles, l.group_tiles);
  p.chunk_blocks = l.chunk_blocks;
  p.chunks = ceil_div(p.k_blocks, l.chunk_blocks);
  p.a_regions = l.a_regions;
  p.result_regions = l.result_regions;
  p.write_tiles = l.write_tiles;
  p.result_base = split.rows >= 1 ? split.result_base : l.a_regions * l.chunk_blocks * p.pass_rows * in_rows;
  return p;
}

// The ACC holds two groups' slots; when one group and one pass is the whole
// product, one is enough: a second candidate.
bool one_slot_fits(const GemmPlan& p, const Layout& l, const CoreConfig& core) {
  const int rows = p.dm * l.group_tiles;
  return ceil_div(p.col_tiles, l.group_tiles) == 1 && rows > core.acc_rows / 2 && rows <= core.acc_rows;
}

// Every candidate, in the search's order (the earlier wins a tie). A
// variant is a plan with each head it allows, adjacent.
class Candidates {
 public:
  Candidates(const GemmShape& shape, GemmOutput output, const CoreConfig& core, const GemmOptions& options,
             const GemmCostModel& cost)
      : options_(options), cost_(cost) {
    for (const bool transposed : orientations()) {
      const GemmPlan base = oriented(shape, output, core, transposed);
      for (const Layout& l : layouts(base, options))
        for (const bool single : {false, true})
          if (!single || one_slot_fits(base, l, core))
            if (const std::optional<GemmPlan> p = fitted(base, l, single, core, options)) add_orders(*p);
    }
    variants_.push_back(uint32_t(plans_.size()));
  }

  bool empty() const { return plans_.empty(); }
  GemmPlan& operator[](uint32_t i) { return plans_[i]; }
  // Each variant's candidate with the lowest estimate (its first on a tie).
  std::vector<uint32_t> best_of_variants() const {
    std::vector<uint32_t> out;
    for (size_t v = 0; v + 1 < variants_.size(); ++v) {
      uint32_t best = variants_[v];
      for (uint32_t i = variants_[v] + 1; i < variants_[v + 1]; ++i)
        if (plans_[i].estimate < plans_[best].estimate) best = i;
      out.push_back(best);
    }
    return out;
  }

 private:
  // kAuto transposes only a plan whose epilogue has nothing per output column.
  std::vector<bool> orientations() const {
    using T = GemmOptions::Transpose;
    std::vector<bool> out;
    if (options_.transpose != T::kAlways) out.push_back(false);
    if (options_.transpose == T::kAlways || (options_.transpose == T::kAuto && !options_.bias)) out.push_back(true);
    return out;
  }

  static GemmPlan oriented(const GemmShape& shape, GemmOutput output, const CoreConfig& core, bool transposed) {
    GemmPlan p;
    p.shape = shape;
    p.output = output;
    p.n = core.n;
    p.transposed = transposed;
    p.dm = transposed ? shape.n_out : shape.m;
    p.dn = transposed ? shape.m : shape.n_out;
    p.k_blocks = ceil_div(shape.k, core.n);
    p.col_tiles = ceil_div(p.dn, core.n);
    p.wgt_capacity = core.wgt_fifo_tiles + isa::kWgtBanks;
    return p;
  }

  // The plan K block after K block and tile after tile (tile-major needs a
  // whole pass of L a load: a chunk serves the group's tiles), each with its
  // heads: none, or one or two K blocks (a longer head only delays the first
  // tile) when the first group is tile-major and a whole pass a load.
  void add_orders(GemmPlan p) {
    for (const bool tm : {false, true}) {
      if (tm && p.chunks > 1) continue;
      if (options_.order != GemmOptions::Order::kAuto && tm != (options_.order == GemmOptions::Order::kTileMajor))
        continue;
      p.tile_major = tm;
      const bool headed = p.chunks == 1 && (tm || p.groups == 1) && p.k_blocks > 1;
      const uint32_t first = uint32_t(plans_.size());
      for (int head = 0; head <= (headed ? std::min(2, p.k_blocks - 1) : 0); ++head) {
        if (options_.head_blocks >= 0 && head != options_.head_blocks) continue;
        p.head_blocks = head;
        p.estimate = cost_.cycles(p);
        plans_.push_back(p);
      }
      if (plans_.size() > first) variants_.push_back(first);
    }
  }

  const GemmOptions& options_;
  const GemmCostModel& cost_;
  std::vector<GemmPlan> plans_;
  std::vector<uint32_t> variants_;  // where each variant's candidates begin, then the end
};

}  // namespace

GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core, const GemmOptions& options) {
  check_shape(shape, output, core);
  const GemmCostModel cost(core);
  Candidates candidates(shape, output, core, options, cost);
  if (candidates.empty())
    throw std::invalid_argument("gemm " + dims(shape) + ": no plan fits the core (" + std::to_string(core.ub_rows) +
                                " unified-buffer rows, " + std::to_string(core.acc_rows) + " accumulator rows)");
  // The instruction count decides the programs and their fetch: for the
  // best few variants by estimate (the earlier on a tie), each as its best
  // head (its heads, ranked one by one, would crowd other plans out; they
  // differ by an instruction or two), count the real one. They are sorted
  // as indices: a plan is a large value to move.
  std::vector<std::pair<uint64_t, uint32_t>> ranked;  // a variant's best estimate, and that candidate
  for (const uint32_t i : candidates.best_of_variants()) ranked.push_back({candidates[i].estimate, i});
  const size_t exact = std::min(ranked.size(), kExactCandidates);
  std::partial_sort(ranked.begin(), ranked.begin() + std::ptrdiff_t(exact), ranked.end());
  ranked.resize(exact);
  GemmEpilogue epi;
  epi.output = output;
  const GemmPlan* best = nullptr;
  for (const auto& [estimate, i] : ranked) {
    GemmPlan& c = candidates[i];
    c.estimate = cost.cycles(c, gemm_stream(c, epi, 0, 0, 0, core).instructions(core.imem_depth));
    if (!best || c.estimate < best->estimate) best = &c;
  }
  return *best;
}

}  // namespace tpu::plan
