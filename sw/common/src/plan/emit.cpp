// SPDX-License-Identifier: Apache-2.0
// A GEMM plan's instruction stream (tpu/plan/gemm.h, "Schedule"): the
// configuration, then group after group its MMCs with the side work placed
// between them (loads of L, the previous group's epilogues, the next pass's
// load in pieces), the weight tiles streaming ahead.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "schedule.h"
#include "stream.h"
#include "tpu/isa.h"
#include "tpu/plan/cost_model.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

using isa::Instr;

namespace {

void check_epilogue(const GemmPlan& p, const GemmEpilogue& epi) {
  if (epi.output != p.output) throw std::invalid_argument("gemm: the epilogue's output type differs from the plan's");
  const bool int8 = p.output == GemmOutput::kInt8;
  if (!epi.bias.empty() && (!int8 || int(epi.bias.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: the bias needs one int32 per output column (" + std::to_string(p.shape.n_out) +
                                "), and an int8 output");
  if (!epi.bias_f32.empty() && (!p.bf16() || int(epi.bias_f32.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: the fp32 bias needs one value per output column (" +
                                std::to_string(p.shape.n_out) + "), and a bf16 GEMM");
  if (p.bf16() && epi.act == isa::Act::kLut)
    throw std::invalid_argument("gemm: a bf16 GEMM's activation is none, ReLU or ReLU6");
  if (!epi.scales.empty() && (!int8 || int(epi.scales.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: per-channel scales need one per output column (" +
                                std::to_string(p.shape.n_out) + "), and an int8 output");
  for (const quant::LaneScale& s : epi.scales)
    if (s.exponent < quant::kMinExponent || s.exponent > quant::kMaxExponent)
      throw std::invalid_argument("gemm: a per-channel shift of " + std::to_string(s.exponent) + " is outside " +
                                  std::to_string(quant::kMinExponent) + ".." + std::to_string(quant::kMaxExponent));
  if ((!epi.bias.empty() || !epi.scales.empty() || !epi.bias_f32.empty()) && p.transposed)
    throw std::invalid_argument(
        "gemm: a transposed plan has no bias or scale per output column "
        "(plan with options.bias)");
}

// Groups accumulate in ACC slots of P * G rows in turn, as many as the ACC
// holds (at least two): a group's MMCs then wait only for the ACTs of the
// group that used the slot that many groups before.
class AccSlots {
 public:
  AccSlots(const GemmPlan& p, const CoreConfig& core)
      : rows_(p.pass_rows * p.group_tiles), slots_(std::max(2, core.acc_rows / rows_)) {}
  uint32_t row(int group) const { return uint32_t((group % slots_) * rows_); }

 private:
  int rows_, slots_;
};

// The epilogue of output tiles: each tile's bias and per-channel scale
// CFGs, its ACT into the next slot of the current result region (tiles next
// to each other in the ACC and in the UB share one ACT), and a WHM of the
// region when it holds write_tiles tiles or the pass's last (a pass's tiles
// are contiguous in D, and tiles leave in column order within a pass).
class Epilogue {
 public:
  Epilogue(Stream& out, const GemmPlan& p, const GemmEpilogue& epi, uint64_t c, const CoreConfig& core)
      : out_(out),
        p_(p),
        epi_(epi),
        c_(c),
        acc_(p, core),
        lane_bias_(size_t(p.n)),
        lane_scale_(size_t(p.n), quant::tensor_scale(epi.q)) {}

  // The CFGs that hold for the whole stream.
  void configure() {
    if (int8()) {
      out_.add(isa::cfg(isa::kCfgQmult, uint32_t(epi_.q.multiplier)));
      out_.add(isa::cfg(isa::kCfgQshift, uint32_t(epi_.q.shift)));
      out_.add(isa::cfg(isa::kCfgQzp, uint32_t(epi_.q.zero_point)));
      out_.add(isa::cfg(isa::kCfgQmin, uint32_t(epi_.q.qmin)));
      out_.add(isa::cfg(isa::kCfgQmax, uint32_t(epi_.q.qmax)));
      out_.add(isa::cfg(isa::kCfgRelu6Max, uint32_t(epi_.q.relu6_max)));
    }
    if (f32_act()) {  // ACT F32 with SCALE 1 and no clamp (ReLU6's bound 6.0)
      out_.add(isa::cfg(isa::kCfgScale, 0x3F800000u));
      out_.add(isa::cfg(isa::kCfgFmin, 0xFF800000u));
      out_.add(isa::cfg(isa::kCfgFmax, 0x7F800000u));
      if (epi_.act == isa::Act::kRelu6) out_.add(isa::cfg(isa::kCfgRelu6F32, 0x40C00000u));
    }
  }

  // Output tiles [j0, j1) of group b (over all passes).
  void tiles(int b, int j0, int j1) {
    for (const Instr& whm : deferred_whms_) out_.add(whm);
    deferred_whms_.clear();
    for (int j = j0; j < j1; ++j) tile(b, j);
    flush();
  }

  uint32_t acc_row(int group) const { return acc_.row(group); }

 private:
  // The ACT being merged: its rows, and its UB rows per row and lanes (the
  // last tile's ACT writes only the UB rows that hold its lanes).
  struct PendingAct {
    uint32_t acc = 0, ub = 0, rows = 0, part = 0, lanes = 0;
  };

  bool int8() const { return p_.output == GemmOutput::kInt8; }
  bool out_bf16() const { return p_.output == GemmOutput::kBf16; }
  // ACT F32: bf16 results, or fp32 ones with a bias or an activation (else ACT RAW).
  bool f32_act() const { return out_bf16() || (p_.bf16() && (!epi_.bias_f32.empty() || epi_.act != isa::Act::kNone)); }
  bool has_bias() const { return !epi_.bias.empty() || !epi_.bias_f32.empty(); }
  // Registers set per tile: its ACT cannot be merged with another tile's.
  bool per_tile_registers() const { return has_bias() || !epi_.scales.empty(); }

  void tile(int b, int j) {
    const int pass = b / p_.groups, g = b % p_.groups, rows = p_.rows_of_pass(pass), out_rows = p_.out_row_rows();
    if (region_tiles_ == 0) region_j0_ = j;
    const uint32_t ub0 = region_row();
    const uint32_t acc = acc_.row(b) + uint32_t((j - p_.group_begin(g)) * rows);
    // (a region's tiles but its last are whole: the narrow tile is the last column tile)
    const uint32_t ub = ub0 + uint32_t(region_tiles_ * out_rows * rows);
    const uint32_t part = uint32_t(p_.tile_out_rows(j));
    const uint32_t lanes = part < uint32_t(out_rows) ? uint32_t(p_.last_tile_lanes()) : 0;
    if (!epi_.scales.empty()) set_scales(j);
    if (has_bias()) set_bias(j);
    merge({acc, ub, uint32_t(rows), part, lanes});
    if (per_tile_registers()) flush();
    if (++region_tiles_ == p_.write_tiles || j == p_.col_tiles - 1) {
      const uint64_t host = c_ + uint64_t(p_.pass_begin(pass)) * p_.d_row_bytes() +
                            uint64_t(region_j0_) * rows * uint64_t(p_.out_row_bytes());
      const uint32_t region_rows = uint32_t(((region_tiles_ - 1) * out_rows + int(part)) * rows);  // UB rows
      const bool last_group = b == p_.passes * p_.groups - 1;
      if (last_group && j == p_.col_tiles - 1 && last_write_in_pieces_pays() && pending_ends_region(ub0, region_rows))
        write_last_in_pieces(ub0, host);
      else
        write_region(ub0, region_rows, rows, part, host, !last_group);
      ++regions_used_;
      region_tiles_ = 0;
    }
  }

  // The stream's last write-back may go in pieces (write_last_in_pieces)
  // only when K is long against a result row's UB rows: then the MXU is
  // what the GEMM waits for and the tail is the last ACT and WHM (on
  // `default` the pieces make 512^3 406 cycles shorter and 1024^3 932);
  // with a short K the link's writes run behind and the pieces only add
  // instructions (64^3 and 128^3 would take 18 cycles longer). Not for
  // bf16 GEMMs: there the extra ACTs and WHMs cost more than the shorter
  // tail saves (`default_bf16` 512^3 would take 28 cycles longer).
  bool last_write_in_pieces_pays() const { return !p_.bf16() && p_.k_blocks > 2 * p_.out_row_rows(); }

  // The pending ACT spans more than one piece of n rows and ends the region
  // at ub0 that the WHM would write (region_rows UB rows).
  bool pending_ends_region(uint32_t ub0, uint32_t region_rows) const {
    return pending_.rows > uint32_t(p_.n) && pending_.ub >= ub0 &&
           pending_.ub + pending_.rows * pending_.part == ub0 + region_rows;
  }

  // The stream's last write-back: its ACT and WHM in pieces of n rows, so
  // that only one piece's WHM follows the last ACT (the rows of the
  // region's earlier tiles, already activated, first).
  void write_last_in_pieces(uint32_t ub0, uint64_t host) {
    const uint32_t piece = uint32_t(p_.n), n = uint32_t(p_.n);
    const uint32_t before = pending_.ub - ub0;
    if (before > 0) out_.add(isa::whm(ub0, before, host, n));
    for (uint32_t r = 0; r < pending_.rows; r += piece) {
      const uint32_t k = std::min(piece, pending_.rows - r), ub = pending_.ub + r * pending_.part;
      act(pending_.acc + r, ub, k, pending_.lanes);
      out_.add(isa::whm(ub, k * pending_.part, host + uint64_t(ub - ub0) * uint64_t(n), n));
    }
    pending_.rows = 0;
  }

  // One WHM of the region. A WHM waits in the controller's issue for its
  // ACT to finish, and so would every MMC behind it: except in the last
  // group, a group's WHMs go out with the next group's epilogues, when
  // their ACTs are long done.
  void write_region(uint32_t ub0, uint32_t region_rows, int rows, uint32_t part, uint64_t host, bool defer) {
    flush();
    // bf16: wide rows of 2n bytes, unless the region ends in a narrow
    // tile's half rows (then UB rows of n bytes, the same bytes in order).
    const uint32_t n = uint32_t(p_.n);
    const Instr whm = out_bf16() && part == uint32_t(p_.out_row_rows())
                          ? isa::whm(ub0, uint32_t(region_tiles_ * rows), host, 2 * n, true)
                          : isa::whm(ub0, region_rows, host, n);
    if (defer)
      deferred_whms_.push_back(whm);
    else
      out_.add(whm);
  }

  uint32_t region_row() const {
    const int region = regions_used_ % p_.result_regions;
    return uint32_t(p_.result_base) + uint32_t(region * p_.write_tiles * p_.out_row_rows() * p_.pass_rows);
  }

  // Per-channel scales of tile j's columns; padding lanes keep theirs
  // (their results are not read back).
  void set_scales(int j) {
    flush();
    const int n = p_.n;
    for (int l = 0; l < n && j * n + l < p_.shape.n_out; ++l) {
      const quant::LaneScale& want = epi_.scales[size_t(j * n + l)];
      quant::LaneScale& have = lane_scale_[size_t(l)];
      if (want.multiplier != have.multiplier)
        out_.add(isa::cfg(isa::kCfgChMultBase + uint32_t(l), uint32_t(want.multiplier)));
      if (want.exponent != have.exponent)
        out_.add(isa::cfg(isa::kCfgChShiftBase + uint32_t(l), uint32_t(want.exponent)));
      have = want;
    }
  }

  void set_bias(int j) {
    flush();
    const int n = p_.n;
    for (int l = 0; l < n; ++l) {
      const int col = j * n + l;
      const int32_t bias = col >= p_.shape.n_out ? 0
                           : epi_.bias.empty()   ? int32_t(epi_.bias_f32[size_t(col)])
                                                 : epi_.bias[size_t(col)];
      if (lane_bias_[size_t(l)] != bias) out_.add(isa::cfg(isa::kCfgBiasBase + uint32_t(l), uint32_t(bias)));
      lane_bias_[size_t(l)] = bias;
    }
  }

  // Adds a tile's ACT to the pending one when it continues it in the ACC
  // and in the UB, else flushes the pending one and starts anew.
  void merge(const PendingAct& a) {
    if (pending_.rows > 0 && pending_.acc + pending_.rows == a.acc &&
        pending_.ub + pending_.rows * pending_.part == a.ub && pending_.part == a.part) {
      pending_.rows += a.rows;
    } else {
      flush();
      pending_ = a;
    }
  }

  void flush() {
    if (pending_.rows == 0) return;
    act(pending_.acc, pending_.ub, pending_.rows, pending_.lanes);
    pending_.rows = 0;
  }

  void act(uint32_t acc, uint32_t ub, uint32_t count, uint32_t lanes) {
    if (int8())
      out_.add(isa::act(acc, ub, count, epi_.act, !epi_.bias.empty()));
    else if (f32_act())
      out_.add(isa::act(acc, ub, count, epi_.act, has_bias(), !out_bf16(), true, lanes));
    else
      out_.add(isa::act(acc, ub, count, isa::Act::kNone, false, true, false, lanes));  // int32, fp32: RAW
  }

  Stream& out_;
  const GemmPlan& p_;
  const GemmEpilogue& epi_;
  uint64_t c_;
  AccSlots acc_;
  // The BIAS registers' values once this program has written them: before
  // that they hold whatever the previous command left (registers persist
  // from one command to the next), so the first value of each lane is
  // always written (as the chained MLP's programs do, mlp.cpp).
  std::vector<std::optional<int32_t>> lane_bias_;
  // The CH_MULT / CH_SHIFT registers' values: QMULT and QSHIFT set every lane.
  std::vector<quant::LaneScale> lane_scale_;
  int regions_used_ = 0;  // result regions written so far
  int region_j0_ = 0;     // the first tile in the current result region
  int region_tiles_ = 0;  // tiles in it
  PendingAct pending_;
  std::vector<Instr> deferred_whms_;
};

// Work placed between a group's MMCs: an epilogue of a group's tiles, or a
// load of L.
struct Side {
  bool load;
  int b, j0, j1;  // epilogue of group b's tiles [j0, j1); a load's blocks [j0, j1)
  size_t load_index;
};

// The whole stream, group after group.
class GemmEmitter {
 public:
  GemmEmitter(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w, uint64_t c, const CoreConfig& core)
      : p_(p),
        cost_(core),
        l_addr_(p.transposed ? w : a),
        weights_(out_, p, p.transposed ? a : w, core),
        epilogue_(out_, p, epi, c, core) {
    // Loads of L, in order: (pass, chunk) when a pass is loaded whole
    // (chunks = 1), else (pass, group, chunk).
    for (int pass = 0; pass < p.passes; ++pass)
      for (int g = 0; g < (p.chunks == 1 ? 1 : p.groups); ++g)
        for (int ch = 0; ch < p.chunks; ++ch)
          loads_.push_back({pass, ch * p.chunk_blocks, std::min(p.k_blocks, (ch + 1) * p.chunk_blocks)});
  }

  Stream run() {
    epilogue_.configure();
    weights_.first_tiles(p_.head_blocks > 0 ? cost_.head_first_tiles(p_) : mmcs_during_first_load());
    for (int b = 0; b < p_.passes * p_.groups; ++b) group(b);
    return std::move(out_);
  }

 private:
  struct Load {
    int pass, b0, b1;
  };

  int total_groups() const { return p_.passes * p_.groups; }

  // The MMCs that can run while the first load arrives: those up to the
  // first that reads its last block, and no more than its blocks (the MXU
  // takes a row a cycle, as fast as the load brings them).
  int64_t mmcs_during_first_load() const {
    const int first_blocks = std::min(p_.k_blocks, p_.chunk_blocks);
    int64_t during_load = 0;
    for (const auto& [j, k] : group_order(p_, 0)) {
      ++during_load;
      if (k == first_blocks - 1 || during_load == first_blocks) break;
    }
    return during_load;
  }

  // Load i goes to A region i % a_regions.
  uint32_t region_row(size_t i) const {
    return uint32_t((i % size_t(p_.a_regions)) * p_.chunk_blocks * p_.pass_rows * p_.in_row_rows());
  }

  // Blocks [b0, b1) of load i.
  void load(size_t i, int b0, int b1) {
    const Load& l = loads_[i];
    const int rows = p_.rows_of_pass(l.pass), n = p_.n, lane = p_.lane_bytes();
    out_.add(
        isa::rhm(region_row(i) + uint32_t((b0 - l.b0) * rows * p_.in_row_rows()), uint32_t((b1 - b0) * rows),
                 l_addr_ + (uint64_t(p_.pass_begin(l.pass)) * p_.k_blocks + uint64_t(b0) * rows) * n * uint64_t(lane),
                 uint32_t(n * lane), p_.bf16()));
  }

  // Groups whose tiles leave as they finish: every group of a tile-major
  // plan, the last group, and with one group per pass every group (its last
  // chunk goes tile after tile, group_order), so that a pass's results keep
  // the VPU and the link's write side busy while the next pass starts
  // instead of all going out in the last pass. (With several groups a pass,
  // the earlier groups' results go out during the next group.)
  bool finishes(int b) const { return p_.tile_major || p_.groups == 1 || b == total_groups() - 1; }

  // A whole pass's next load goes in pieces, one after the first MMC of
  // each of the pass's first groups: a long RHM would hold the memory unit,
  // and so the write-backs, for its latency and all its rows.
  bool pass_pieces() const { return p_.chunks == 1 && p_.a_regions == 2; }

  void group(int b) {
    const int pass = b / p_.groups, g = b % p_.groups;
    // This group's loads: indices [l0, l1) (none when a whole pass is kept
    // for all its groups and this is not its first).
    const size_t l0 = p_.chunks == 1 ? size_t(pass) : size_t(b) * size_t(p_.chunks);
    const bool loads_here = p_.chunks > 1 || g == 0;
    const size_t l1 = loads_here ? l0 + size_t(p_.chunks) : l0;
    group_mmcs(b, l0);
    for (auto* sides : {&before_, &after_}) {
      for (std::vector<Side>& v : *sides) v.clear();
      sides->resize(mmcs_.size());
    }
    if (loads_here) place_loads(l0, l1);
    if (b > 0 && !finishes(b - 1)) place_previous_epilogues(b);
    if (finishes(b))  // each tile leaves as it finishes
      for (int j = 0; j < p_.tiles_of_group(g); ++j)
        after_[tile_last_[size_t(j)]].push_back({false, b, p_.group_begin(g) + j, p_.group_begin(g) + j + 1, 0});
    if (pass_pieces() && pass + 1 < p_.passes) place_next_pass_pieces(b);
    emit_group(p_.rows_of_pass(pass));
  }

  // Group b's MMCs in group_order, with where each of its loads' first MMC
  // is (load_at_) and which MMC completes each tile (tile_last_).
  void group_mmcs(int b, size_t l0) {
    const int g = b % p_.groups, rows = p_.rows_of_pass(b / p_.groups);
    const uint32_t acc0 = epilogue_.acc_row(b);
    mmcs_.clear();
    load_at_.assign(size_t(p_.chunks), 0);
    tile_last_.assign(size_t(p_.tiles_of_group(g)), 0);
    for (const auto& [j, k] : group_order(p_, g)) {
      const int ch = k / p_.chunk_blocks;
      const size_t li = p_.chunks == 1 ? l0 : l0 + size_t(ch);
      if (ch > 0 && load_at_[size_t(ch)] == 0) load_at_[size_t(ch)] = mmcs_.size();  // its first MMC
      tile_last_[size_t(j)] = mmcs_.size();
      mmcs_.push_back({region_row(li) + uint32_t((k - ch * p_.chunk_blocks) * rows * p_.in_row_rows()),
                       acc0 + uint32_t(j * rows), k > 0});
    }
  }

  // Loads: with one region each just before its MMCs; with two, load i+1
  // after the first MMC of load i (the first load of all up front), unless
  // the next pass's load goes in pieces (place_next_pass_pieces).
  void place_loads(size_t l0, size_t l1) {
    for (size_t li = l0; li < l1; ++li) {
      const size_t at = load_at_[li - l0];
      if (li == 0 || p_.a_regions == 1) {
        if (next_load_ <= li && li == 0 && p_.head_blocks > 0) {
          // A head's blocks first, the rest after the first MMC (behind
          // the rest of the first RW batch, which the head's MMCs need).
          before_[at].push_back({true, 0, 0, p_.head_blocks, li});
          after_[at].push_back({true, 0, p_.head_blocks, loads_[li].b1, li});
        } else if (next_load_ <= li) {
          before_[at].push_back({true, 0, loads_[li].b0, loads_[li].b1, li});
        }
        next_load_ = std::max(next_load_, li + 1);
      }
      if (!pass_pieces() && p_.a_regions == 2 && li + 1 < loads_.size() && next_load_ <= li + 1) {
        // after this load's first MMC, or its last when it is alone
        const size_t pos = std::min(at, mmcs_.size() - 1);
        after_[pos].push_back({true, 0, loads_[li + 1].b0, loads_[li + 1].b1, li + 1});
        next_load_ = li + 2;
      }
    }
  }

  // The previous group's epilogues, spread evenly over group b's MMCs, the
  // tiles of one WHM together (region_ahead_: tiles already in the current
  // result region before them).
  void place_previous_epilogues(int b) {
    const int wb = p_.write_tiles;
    const int pg = (b - 1) % p_.groups, pt = p_.tiles_of_group(pg), j0 = p_.group_begin(pg);
    const int nb = (region_ahead_ + pt - 1) / wb + 1;  // WHM regions the tiles touch
    // (in the last group, before its first tile leaves: tiles leave in order)
    const size_t span = b == total_groups() - 1 ? tile_last_[0] + 1 : mmcs_.size();
    for (int s = 0; s < pt;) {
      const int bi = (region_ahead_ + s) / wb, e = std::min(pt, (bi + 1) * wb - region_ahead_);
      const size_t pos = size_t(bi) * span / size_t(nb);
      after_[pos].push_back({false, b - 1, j0 + s, j0 + e, 0});
      s = e;
    }
    region_ahead_ = j0 + pt == p_.col_tiles ? 0 : (region_ahead_ + pt) % wb;
  }

  // The next pass's load in pieces spread over group b's MMCs: as few
  // pieces as fit, with their read latency, in the memory unit's time left
  // over by a group's write-back. The count is the same for every group of
  // the pass (a full group's), so that the pieces cover the whole load: a
  // last group of fewer tiles must not count fewer.
  void place_next_pass_pieces(int b) {
    const int pass = b / p_.groups, g = b % p_.groups, rows = p_.rows_of_pass(pass), kb = p_.k_blocks;
    const int full = p_.tiles_of_group(0);
    const int64_t latency = int64_t(cost_.read_latency());
    const int64_t mmc = int64_t(kb) * rows * full;
    const int64_t writes = int64_t(full) * rows * p_.out_row_rows() + int64_t(GemmCostModel::kWhmCycles);
    const int64_t slack = mmc - writes - latency, load = int64_t(kb) * p_.rows_of_pass(pass + 1);
    int pieces = slack <= 0 ? 1 : int(std::min<int64_t>({kb, p_.groups, (load + slack - 1) / slack}));
    // The weight reads requested during a piece wait until all its rows
    // have crossed the link: more pieces when one would hold it longer
    // than the weight FIFO lasts, several a group when the groups are few,
    // as many as fit with their latency.
    const int64_t fifo_slack = cost_.weight_fifo_slack(rows, p_.n);
    const int64_t link = load * p_.in_row_rows() * int64_t(cost_.row_link_cycles(p_.n));  // cycles on the port
    if (fifo_slack > 0 && link > fifo_slack) {
      const int64_t fit = std::max<int64_t>(1, mmc / (latency + fifo_slack));
      pieces = std::max(pieces, int(std::min<int64_t>({kb, p_.groups * fit, (link + fifo_slack - 1) / fifo_slack})));
    }
    const int per_group = (pieces + p_.groups - 1) / p_.groups;
    for (int q = g * per_group; q < std::min(pieces, (g + 1) * per_group); ++q)
      after_[size_t(q - g * per_group) * mmcs_.size() / size_t(per_group)].push_back(
          {true, 0, q * kb / pieces, (q + 1) * kb / pieces, size_t(pass + 1)});
  }

  void emit_group(int rows) {
    has_before_.resize(mmcs_.size());
    has_after_.resize(mmcs_.size());
    for (size_t i = 0; i < mmcs_.size(); ++i) has_before_[i] = !before_[i].empty(), has_after_[i] = !after_[i].empty();
    emit_mmcs(out_, weights_, mmcs_, uint32_t(rows), p_.bf16(), has_before_, has_after_, [&](size_t i, bool is_after) {
      for (const Side& s : is_after ? after_[i] : before_[i]) {
        if (s.load)
          load(s.load_index, s.j0, s.j1);
        else
          epilogue_.tiles(s.b, s.j0, s.j1);
      }
    });
  }

  const GemmPlan& p_;
  const GemmCostModel cost_;
  uint64_t l_addr_;
  Stream out_;
  WeightStream weights_;
  Epilogue epilogue_;
  std::vector<Load> loads_;
  size_t next_load_ = 0;  // loads placed so far
  int region_ahead_ = 0;  // tiles in the current result region before the next group's
  // A group's MMCs and the side work before and after each, kept from group
  // to group (a planner builds the stream of each of its best plans).
  std::vector<Mmc> mmcs_;
  std::vector<size_t> load_at_;    // the MMC index before which each load of this group must be
  std::vector<size_t> tile_last_;  // the MMC index that completes each tile
  std::vector<std::vector<Side>> before_, after_;
  std::vector<bool> has_before_, has_after_;
};

}  // namespace

Stream gemm_stream(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w, uint64_t c,
                   const CoreConfig& core) {
  check_epilogue(p, epi);
  return GemmEmitter(p, epi, a, w, c, core).run();
}

std::vector<std::vector<Instr>> gemm_programs(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w,
                                              uint64_t c, const CoreConfig& core) {
  return gemm_stream(p, epi, a, w, c, core).programs(core.imem_depth);
}

}  // namespace tpu::plan
