// SPDX-License-Identifier: Apache-2.0
// A GEMM plan's geometry: its passes, groups and tiles, the sizes of its
// host images, and the order of a group's MMCs.
#include <algorithm>
#include <string>

#include "schedule.h"
#include "tpu/isa.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

std::string dims(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out);
}

int GemmPlan::rows_of_pass(int p) const { return std::min(pass_rows, dm - p * pass_rows); }
int GemmPlan::tiles_of_group(int g) const { return std::min(group_tiles, col_tiles - g * group_tiles); }
uint64_t GemmPlan::a_bytes() const {
  return (transposed ? uint64_t(col_tiles) * k_blocks * n * n : uint64_t(dm) * k_blocks * n) * uint64_t(lane_bytes());
}
uint64_t GemmPlan::w_bytes() const {
  return (transposed ? uint64_t(dm) * k_blocks * n : uint64_t(col_tiles) * k_blocks * n * n) * uint64_t(lane_bytes());
}
int GemmPlan::tile_out_rows(int j) const {
  // The rows the tile's ACT writes: it asks for the last tile's lanes only
  // (a lane of the result is out_row_rows() bytes).
  return isa::act_rows_for_lanes(uint64_t(j < col_tiles - 1 ? n : last_tile_lanes()), out_row_rows(), n);
}
uint64_t GemmPlan::d_row_bytes() const {
  return uint64_t(col_tiles - 1) * uint64_t(out_row_bytes()) + uint64_t(tile_row_bytes(col_tiles - 1));
}
uint64_t GemmPlan::c_bytes() const { return uint64_t(dm) * d_row_bytes(); }

// The (tile within the group, K block) of each MMC of group g, in the order
// of one pass: K block after K block, each over the group's tiles (a chunk
// of L serves all of them; their ACTs can share one instruction), but the
// last chunk of the pass's last group tile after tile, so that those tiles
// finish one after the other and the last write-back is one tile's; with
// tile_major (a whole pass of L in the UB) every group tile after tile, so
// that tiles finish, and leave, evenly spaced.
std::vector<std::pair<int, int>> group_order(const GemmPlan& p, int g) {
  std::vector<std::pair<int, int>> order;
  const int gt = p.tiles_of_group(g), last_chunk = (p.chunks - 1) * p.chunk_blocks;
  const bool tile_major = g == p.groups - 1 || p.tile_major;
  // The K blocks that go K block after K block: all, or in a tile-major
  // group those before its last chunk, or its head (the first group's).
  const int k_major = !tile_major ? p.k_blocks : g == 0 ? std::max(last_chunk, p.head_blocks) : last_chunk;
  for (int k = 0; k < k_major; ++k)
    for (int j = 0; j < gt; ++j) order.push_back({j, k});
  if (tile_major)
    for (int j = 0; j < gt; ++j)
      for (int k = k_major; k < p.k_blocks; ++k) order.push_back({j, k});
  return order;
}

}  // namespace tpu::plan
