// SPDX-License-Identifier: Apache-2.0
#include "tpu/gemm_program.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

namespace tpu::model {

using isa::Instr;

namespace {

constexpr uint64_t kReadLatency = 500;   // the sim: link's (cycles)

int round_up(int v, int multiple) { return (v + multiple - 1) / multiple * multiple; }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

std::string dims(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n_out);
}

// Instructions in groups that must stay in one program (a LOOP and its body),
// kept in one array (a planner builds the stream of each of its best
// candidates to count its instructions, so adding one allocates nothing).
class Stream {
 public:
  void add(const Instr& in) {
    instrs_.push_back(in);
    ends_.push_back(instrs_.size());
  }
  void add_group(std::initializer_list<Instr> g) {
    instrs_.insert(instrs_.end(), g);
    ends_.push_back(instrs_.size());
  }
  // Cuts the stream into programs of at most `depth` instructions with HALT.
  // Reads of host memory (RW, RHM) just before a cut start the next program
  // instead: the HALT would wait a read latency for their data, which only
  // the next program uses.
  std::vector<std::vector<Instr>> programs(int depth) const {
    std::vector<std::vector<Instr>> out;
    size_t begin = 0;
    for (const size_t end : cuts(depth)) {
      out.emplace_back(instrs_.begin() + std::ptrdiff_t(begin), instrs_.begin() + std::ptrdiff_t(end));
      out.back().push_back(isa::halt());
      begin = end;
    }
    return out;
  }
  // The instructions of programs(depth), HALTs included.
  size_t instructions(int depth) const { return instrs_.size() + cuts(depth).size(); }

 private:
  // Where each program ends in instrs_ (the programs keep the stream's order:
  // a cut only moves its trailing reads into the next one).
  std::vector<size_t> cuts(int depth) const {
    std::vector<size_t> ends;
    size_t begin = 0, tail_reads = 0;  // the open program's first instruction; its trailing RW and RHM
    size_t g0 = 0;
    for (const size_t g1 : ends_) {
      const size_t open = g0 - begin, size = g1 - g0;
      if (open + size + 1 > size_t(depth)) {
        if (open == 0)
          throw std::invalid_argument("gemm: an instruction group of " + std::to_string(size) +
                                      " does not fit an instruction memory of " + std::to_string(depth));
        begin = g0 - (tail_reads < open ? tail_reads : 0);
        ends.push_back(begin);
      }
      const Instr& first = instrs_[g0];
      const bool read = size == 1 && (first.op == uint8_t(isa::Op::kRw) || first.op == uint8_t(isa::Op::kRhm));
      tail_reads = read ? tail_reads + 1 : 0;
      g0 = g1;
    }
    ends.push_back(instrs_.size());
    return ends;
  }

  std::vector<Instr> instrs_;
  std::vector<size_t> ends_;  // where each group ends in instrs_
};

// Tiles per RW: half the capacity, or more when fewer tiles cover the read
// latency (a tile serves pass_rows MMC rows).
int weight_batch(const GemmPlan& p) {
  const int cover = int((kReadLatency + uint64_t(p.n)) / uint64_t(std::max(1, p.pass_rows))) + 2;
  return std::max({1, p.wgt_capacity / 2, p.wgt_capacity - cover});
}

// Weight tiles in the order the MMCs retire them, RWs issued ahead within
// the capacity. The tiles lie in runs at consecutive host addresses (a
// pass's tiles, or a product's in a batch); an RW never crosses a run.
class WeightStream {
 public:
  struct Run {
    int64_t tiles;
    uint64_t addr;
  };
  // One run per pass: each pass streams the same image again.
  WeightStream(Stream& out, const GemmPlan& plan, uint64_t w)
      : WeightStream(out, plan, std::vector<Run>(size_t(plan.passes), Run{int64_t(plan.col_tiles) * plan.k_blocks, w}),
                     weight_batch(plan)) {}
  // plan gives the tile format and the capacity.
  WeightStream(Stream& out, const GemmPlan& plan, std::vector<Run> runs, int64_t batch)
      : out_(out), runs_(std::move(runs)), tile_bytes_(uint64_t(plan.n) * plan.n * plan.lane_bytes()),
        cap_(plan.wgt_capacity), batch_(batch), stride_(uint32_t(plan.n * plan.lane_bytes())), bf16_(plan.bf16()) {
    for (const Run& r : runs_) total_ += r.tiles;
  }

  // Before an MMC: its tile must have been requested.
  void need_one() {
    if (issued_ == retired_) issue(std::min<int64_t>(cap_, total_ - issued_));
  }
  // After an MMC that POPs its tile: request more once a batch fits.
  void retire_one() {
    ++retired_;
    top_up();
  }
  // The stream's first tiles alone, ahead of the first load of L: the
  // memory port serves reads in the order they are requested, and an MMC
  // may start on the rows of a load that have arrived, so the tiles of the
  // MMCs that can run while the load streams in go first and the rest of
  // the first batch after the first MMC (retire_one). Right after the load
  // it would still overtake it: the weight unit requests a cycle or two
  // sooner than the memory unit. With that second RW the tiles issued are
  // what one RW up front would have issued, so the later RWs (and the MMC
  // loops they cut) fall where they would.
  void first_tiles(int64_t count) {
    if (issued_ != 0 || total_ == 0) return;
    const int64_t all = std::min(cap_, total_), first = std::clamp<int64_t>(count, 1, all);
    issue(first);
    rest_ = all - first;
  }
  int64_t available() const { return issued_ - retired_; }
  // Retirements until top_up() would issue an RW (a large number if none is left).
  int64_t retires_until_rw() const {
    const int64_t left = total_ - issued_;
    if (left == 0) return INT64_MAX;
    if (rest_ > 0) return 1;
    const int64_t room = cap_ - (issued_ - retired_);
    return std::max<int64_t>(1, std::min(batch_, left) - room);
  }
  void top_up() {
    const int64_t room = cap_ - (issued_ - retired_), left = total_ - issued_;
    if (rest_ > 0) {
      issue(rest_);
      rest_ = 0;
    } else if (left > 0 && room >= std::min<int64_t>(batch_, left)) {
      issue(std::min(room, left));
    }
  }

 private:
  // Tiles issued_ .. issued_+count-1, one RW per run they touch.
  void issue(int64_t count) {
    while (count > 0) {
      while (issued_ - run_begin_ == runs_[run_].tiles) run_begin_ += runs_[run_++].tiles;
      const int64_t s = issued_ - run_begin_, c = std::min(count, runs_[run_].tiles - s);
      out_.add(isa::rw(runs_[run_].addr + uint64_t(s) * tile_bytes_, uint32_t(c), stride_, bf16_));
      issued_ += c;
      count -= c;
    }
  }

  Stream& out_;
  std::vector<Run> runs_;
  size_t run_ = 0;          // the run of tile issued_
  int64_t run_begin_ = 0;   // its first tile
  uint64_t tile_bytes_;
  int64_t total_ = 0, cap_, batch_;
  uint32_t stride_;  // bytes per weight row
  bool bf16_;
  int64_t issued_ = 0, retired_ = 0;
  int64_t rest_ = 0;  // the first batch's tiles after first_tiles, for the next top_up
};

// One MMC: its UB row, ACC row and whether it accumulates.
struct Mmc {
  uint32_t ub, acc;
  bool accumulate;
};

// Emits mmcs (rows rows each, each POPping its tile) in order. Runs with a
// constant UB and ACC step become LOOPs; a run ends where side work goes
// (side(i, false) before MMC i when before[i], side(i, true) after it when
// after[i]), where the accumulate flag or the step changes, or where the
// weight stream must issue an RW.
template <class Side>
void emit_mmcs(Stream& out, WeightStream& weights, const std::vector<Mmc>& mmcs, uint32_t rows, bool bf16,
               const std::vector<bool>& before, const std::vector<bool>& after, Side&& side) {
  size_t i = 0;
  while (i < mmcs.size()) {
    if (before[i]) side(i, false);
    weights.need_one();
    size_t run = 1;
    const int64_t limit = std::min<int64_t>(weights.available(), weights.retires_until_rw());
    if (!after[i] && i + 1 < mmcs.size()) {
      const int64_t dub = int64_t(mmcs[i + 1].ub) - mmcs[i].ub, dacc = int64_t(mmcs[i + 1].acc) - mmcs[i].acc;
      while (i + run < mmcs.size() && int64_t(run) < limit && !before[i + run] &&
             mmcs[i + run].accumulate == mmcs[i].accumulate &&
             int64_t(mmcs[i + run].ub) - mmcs[i + run - 1].ub == dub &&
             int64_t(mmcs[i + run].acc) - mmcs[i + run - 1].acc == dacc && run < 0xFFFF &&
             dub >= -32768 && dub <= 32767 && dacc >= -32768 && dacc <= 32767) {
        ++run;
        if (after[i + run - 1]) break;
      }
      if (run > 1) {
        const Instr mmc = isa::mmc(mmcs[i].ub, mmcs[i].acc, rows, mmcs[i].accumulate, true, bf16);
        out.add_group({isa::loop(uint32_t(run), 1, int32_t(dub), int32_t(dacc)), mmc});
      }
    }
    if (run == 1) out.add(isa::mmc(mmcs[i].ub, mmcs[i].acc, rows, mmcs[i].accumulate, true, bf16));
    for (size_t r = 0; r < run; ++r) weights.retire_one();
    i += run;
    if (after[i - 1]) side(i - 1, true);
  }
}

}  // namespace

// ---- plan ---------------------------------------------------------------------------

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

namespace {

Stream gemm_stream(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w, uint64_t c,
                   const CoreConfig& core);

constexpr uint64_t kLinkBytes = 16;      // per cycle, each way
constexpr uint64_t kCommandCycles = 1042;  // a command's fixed cost (docs/driver.md, "Roofline")
constexpr size_t kExactCandidates = 32;  // plans whose instruction stream plan_gemm builds to count it
constexpr uint64_t kPassCycles = 300;    // a pass boundary's cost beyond the streaming terms, measured
// A WHM's cost on the link beyond its rows, measured: the next WHM's first
// row follows the previous one's last within 4 cycles (the write side
// starts it before the acknowledge).
constexpr uint64_t kWriteCycles = 5;
// From a WHM's last row to its acknowledge, measured. An ACT into a result
// region waits for the WHM that reads the region's previous tiles to be
// acknowledged; with two regions and the WHMs a group late, that WHM is
// the one just before, so the VPU waits this long at every WHM.
constexpr uint64_t kAckCycles = 21;

// Link cycles a UB row of an n-wide array takes (n bytes).
uint64_t row_link_cycles(int n) { return std::max<uint64_t>(1, uint64_t(n) / kLinkBytes); }

// The cycles of MXU work the weight FIFO holds beyond the read latency and
// the tiles in flight, when each tile serves `rows` rows (may be negative).
// The port answers reads in request order, so a load that holds it longer
// than this makes the MXU wait for the weight tiles requested behind it.
int64_t weight_fifo_slack(const CoreConfig& core, int rows, int n) {
  return int64_t(core.wgt_fifo_tiles) * rows - int64_t(kReadLatency) - 4 * int64_t(n);
}

// Instructions of the stream (approximate: runs, epilogues, loads, RWs).
uint64_t estimate_instructions(const GemmPlan& p) {
  const uint64_t groups = uint64_t(p.passes) * p.groups;
  const uint64_t tiles = uint64_t(p.passes) * p.col_tiles;
  const uint64_t runs = p.group_tiles == 1 || p.tile_major ? tiles * 2 : groups * p.k_blocks;
  const uint64_t loads = p.chunks == 1 ? p.passes : groups * p.chunks;
  const uint64_t rws = tiles * p.k_blocks / uint64_t(weight_batch(p)) + 1;
  const uint64_t whms = uint64_t(p.passes) * uint64_t(ceil_div(p.col_tiles, p.write_tiles));
  const uint64_t acts = p.tile_major ? tiles : whms + groups;  // k-major: one per WHM batch within a group (no bias)
  // Every RW and every place a group's epilogue or a load goes ends a run of MMCs.
  return (runs + rws + whms + loads) * 2 + acts + whms + loads + rws + 8;
}

}  // namespace

int head_first_tiles(const GemmPlan& p) {
  // Ahead of the head's rows of L go w tiles (w*n UB rows on the link), so
  // the first MMC waits for them; MMCs (j, 0), j < w, then run back to back
  // while the head's rows and the next tile cross the link, and the MXU
  // waits for what is left. The fewest cycles, the fewest tiles on a tie
  // (measured on 100x100x100: 1 tile 14 cycles of weight wait, 2 tiles 16
  // cycles later and none).
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

uint64_t estimate_cycles(const GemmPlan& p, const CoreConfig& core, uint64_t instructions) {
  const uint64_t n = uint64_t(p.n), kb = uint64_t(p.k_blocks), ct = uint64_t(p.col_tiles);
  const uint64_t dm = uint64_t(p.dm), out_rows = uint64_t(p.out_row_rows());
  const uint64_t row_cycles = row_link_cycles(p.n);  // a UB row on the link
  // MXU: one row a cycle, but a weight tile needs at least the cycles the
  // weight FIFO takes to cover the read latency per tile.
  const uint64_t tile_min = (kReadLatency + n) / uint64_t(std::max(1, core.wgt_fifo_tiles)) + 1;
  uint64_t mxu = 0;
  for (int pass = 0; pass < p.passes; ++pass)
    mxu += std::max<uint64_t>(uint64_t(p.rows_of_pass(pass)), tile_min) * kb * ct;
  // The DMA reads one transfer at a time: while an RHM's rows cross the link
  // the weight FIFO only drains, and the MXU waits once it is empty.
  const uint64_t in_rows = uint64_t(p.in_row_rows());  // UB rows per row of L
  if (p.chunks > 1) {
    const uint64_t rhm_rows = uint64_t(p.chunk_blocks) * uint64_t(p.pass_rows) * in_rows * row_cycles;
    const uint64_t covered = uint64_t(std::max<int64_t>(0, weight_fifo_slack(core, p.pass_rows, p.n)));
    if (rhm_rows > covered)
      mxu += (rhm_rows - covered) * uint64_t(p.passes) * uint64_t(p.groups) * uint64_t(p.chunks);
  }
  // L loads: once per pass, or per group when a pass is loaded in chunks.
  const uint64_t l_loads = p.chunks == 1 ? 1 : uint64_t(p.groups);
  const uint64_t l_rows = dm * kb * l_loads * in_rows;  // UB rows
  const uint64_t rhms = uint64_t(p.passes) * (p.chunks == 1 ? 1 : uint64_t(p.groups) * p.chunks);
  // UB rows of a result row of the last tile: only those that hold its lanes.
  const uint64_t last_rows = uint64_t(p.tile_out_rows(p.col_tiles - 1));
  const uint64_t c_rows = dm * ((ct - 1) * out_rows + last_rows);
  const uint64_t whms = uint64_t(p.passes) * uint64_t(ceil_div(p.col_tiles, p.write_tiles));
  const uint64_t mem_unit = (l_rows + c_rows) * row_cycles + rhms * kReadLatency + whms * kWriteCycles;
  const uint64_t w_bytes = uint64_t(p.passes) * ct * kb * n * n * uint64_t(p.lane_bytes());
  const uint64_t link_read = (l_rows * n + w_bytes) / kLinkBytes;
  const uint64_t vpu = c_rows + (p.result_regions == 2 ? whms * kAckCycles : 0);
  // Exposed: the first load (latency, rows) before the first MMC; with one
  // A region every later load too. The MXU's last row is followed by the
  // last tile's ACT and its WHM (write_tiles tiles), plus what the last
  // group's tiles, finishing one after the other, leave behind. The first
  // write waits for the first tile: a whole group when K block after K
  // block.
  const uint64_t P = uint64_t(p.pass_rows);
  const uint64_t first = kReadLatency + uint64_t(p.chunk_blocks) * P * in_rows * row_cycles;
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
  uint64_t first_mmc = kReadLatency + (first_blocks * n + P * in_rows) * row_cycles;
  uint64_t head_wait = 0;  // what the MXU waits for behind the rest of a head's first load
  if (p.head_blocks > 0) {
    // A head: the first MMC waits for the latency and the first RW's tiles
    // and then follows its rows; the MXU waits once for the next tile, which
    // comes behind the head's rows. The rest of the first load is requested
    // once the head's rows are in, and comes behind the rest of the first RW
    // batch: the MXU needs it after the head's MMCs.
    const uint64_t w = uint64_t(head_first_tiles(p)), h = uint64_t(p.head_blocks);
    const uint64_t behind = (h * P * in_rows + n) * row_cycles, ahead = w * n * row_cycles;
    const uint64_t start = kReadLatency + ahead + (behind > w * P ? behind - w * P : 0);
    const uint64_t head_in = kReadLatency + ahead + h * P * in_rows * row_cycles;
    const uint64_t batch = std::min<uint64_t>(uint64_t(p.wgt_capacity), kb * ct);
    const uint64_t rest = head_in + std::max(kReadLatency, (batch > w ? batch - w : 0) * n * row_cycles);
    const uint64_t needed = start + h * uint64_t(p.tiles_of_group(0)) * P;
    // The RWs issued after that load's request come behind all its rows:
    // the MXU waits once the first batch's tiles are used up before them.
    const uint64_t rest_in = rest + (kb - h) * P * in_rows * row_cycles + n * row_cycles;
    const uint64_t tiles_out = start + batch * std::max<uint64_t>(P, n);
    head_wait = (rest > needed ? rest - needed : 0) + (rest_in > tiles_out ? rest_in - tiles_out : 0);
    first_mmc = start + head_wait;
  }
  // The first WHM waits for write_tiles tiles.
  const uint64_t wb = uint64_t(p.write_tiles);
  // (A head's other tiles run before the first tile's later blocks, and the
  // MXU's waits behind its first load delay that tile.)
  const uint64_t first_tile = P * out_rows + uint64_t(p.head_blocks) * (G - 1) * P + head_wait +
                              (p.tile_major ? wb * kb * P
                               : uint64_t(p.passes) * p.groups == 1 ? (kb - kc_last) * G * P + wb * kc_last * P
                                                                     : std::max(G, wb) * kb * P);
  // A chunk's load (`first`) and, in some chunks, a WHM share the memory
  // unit in program order while the MXU works through the chunk before.
  // When the load fits in the chunk's rows but the load and a WHM do not,
  // each WHM holds up the next load and the MXU waits for the difference
  // (bf16 at 512^3, whose loads are twice as long: about 500 cycles a WHM
  // of two tiles, none with one tile). A load that alone outlasts the chunk
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
  const uint64_t busiest = std::max({first_mmc + mxu + last - std::min(first, first_mmc + mxu + last),
                                     other_loads * 9 / 8 + write_work, first_tile + write_work,
                                     link_read, vpu + first_tile});
  const uint64_t depth = uint64_t(std::max(2, core.imem_depth));
  if (instructions == 0) instructions = estimate_instructions(p);
  const uint64_t programs = (instructions + depth - 2) / (depth - 1);
  // Each instruction crosses the link once, before its program runs.
  const uint64_t fetch = instructions * 16 / kLinkBytes;
  // Each pass boundary costs some cycles beyond the terms above (measured:
  // 64x64x64 in two passes of 32 rows takes 338 cycles more than in one).
  const uint64_t pass_switches = uint64_t(p.passes - 1) * kPassCycles;
  return first + busiest + reloads + fetch + pass_switches + (programs - 1) * (kCommandCycles + kReadLatency);
}

GemmPlan plan_gemm(const GemmShape& shape, GemmOutput output, const CoreConfig& core,
                   const GemmOptions& options) {
  if (shape.m < 1 || shape.k < 1 || shape.n_out < 1)
    throw std::invalid_argument("gemm " + dims(shape) + ": every dimension must be at least 1");
  if (round_up(shape.k, core.n) > 0xFFFF)
    throw std::invalid_argument("gemm " + dims(shape) + ": K is too large for the core");
  if (gemm_bf16(output) && !has_bf16(core.datapath))
    throw std::invalid_argument("gemm " + dims(shape) + ": bf16 operands need a core with a bf16 datapath; this one is int8 only");
  if (!gemm_bf16(output) && !has_int8(core.datapath))
    throw std::invalid_argument("gemm " + dims(shape) + ": int8 operands need a core with an int8 datapath; this one is bf16 only");
  using T = GemmOptions::Transpose;
  std::vector<bool> orientations;
  if (options.transpose != T::kAlways) orientations.push_back(false);
  if (options.transpose == T::kAlways || (options.transpose == T::kAuto && !options.bias))
    orientations.push_back(true);

  std::vector<GemmPlan> candidates;
  std::vector<uint32_t> variants;  // where each plan's run of candidates (its heads) begins
  GemmPlan rows_of;
  rows_of.output = output;
  const int out_rows = rows_of.out_row_rows();  // UB rows per result row
  const int in_rows = rows_of.in_row_rows();    // UB rows per row of L
  const int kb = ceil_div(shape.k, core.n);
  for (const bool tr : orientations) {
    GemmPlan p;
    p.shape = shape;
    p.output = output;
    p.n = core.n;
    p.transposed = tr;
    p.dm = tr ? shape.n_out : shape.m;
    p.dn = tr ? shape.m : shape.n_out;
    p.k_blocks = kb;
    p.col_tiles = ceil_div(p.dn, core.n);
    p.wgt_capacity = core.wgt_fifo_tiles + isa::kWgtBanks;
    const int ct = p.col_tiles;
    // Candidate group sizes: one per count of groups (ceil(ct / groups)).
    // (a forced choice is the only candidate).
    std::vector<int> group_sizes, chunk_sizes{kb}, write_sizes;
    for (int g = 1; g <= ct; ++g) {
      const int size = ceil_div(ct, g);
      if (group_sizes.empty() || group_sizes.back() != size) group_sizes.push_back(size);
    }
    for (int c = 1; c < kb; c *= 2) chunk_sizes.push_back(c);
    for (int w = 1; w <= std::min(ct, 8); w *= 2) write_sizes.push_back(w);
    if (options.group_tiles > 0) group_sizes = {std::min(options.group_tiles, ct)};
    if (options.chunk_blocks > 0) chunk_sizes = {std::min(options.chunk_blocks, kb)};
    if (options.write_tiles > 0) write_sizes = {std::min(options.write_tiles, ct)};
    for (const int G : group_sizes) {
      for (const int kc : chunk_sizes) {
        for (int regions = 1; regions <= 2; ++regions) {
          if (options.a_regions > 0 && regions != options.a_regions) continue;
          for (int results = 2; results <= 4; ++results) {
            if (options.result_regions > 0 && results != options.result_regions) continue;
            for (const int wb : write_sizes) {
            // bf16: L in the UB's lower parts, the results in the upper
            // ones, when both fit (an MMC BF16 takes two banks a cycle;
            // parts have banks of their own). The cut leaves the most rows.
            const int parts = in_rows == 2 ? ub_parts(core.datapath) : 1;
            const int part = core.ub_rows / parts;
            int split_rows = 0, split_base = 0;
            for (int j = 1; j < parts; ++j) {
              const int r = std::min((parts - j) * part / (regions * kc * in_rows), j * part / (results * wb * out_rows));
              if (r > split_rows) split_rows = r, split_base = (parts - j) * part;
            }
            const bool split = split_rows >= 1;
            // The ACC holds two groups' slots; when one group and one pass
            // is the whole product, one is enough: a second candidate.
            const bool one_slot = ceil_div(ct, G) == 1 && p.dm * G > core.acc_rows / 2 && p.dm * G <= core.acc_rows;
            for (const bool single : {false, true}) {
            if (single && !one_slot) continue;
            int rows = std::min({split ? split_rows : core.ub_rows / (regions * kc * in_rows + results * wb * out_rows),
                                 single ? p.dm : core.acc_rows / (2 * G), 0xFFFF / (wb * out_rows), 0xFFFF / kc});
            if (options.max_pass_rows > 0) rows = std::min(rows, options.max_pass_rows);
            if (rows < 1 || (single && rows < p.dm)) continue;  // (the single slot only for a single pass)
            p.passes = ceil_div(p.dm, rows);
            p.pass_rows = ceil_div(p.dm, p.passes);  // balanced passes
            p.group_tiles = G;
            p.groups = ceil_div(ct, G);
            p.chunk_blocks = kc;
            p.chunks = ceil_div(kb, kc);
            p.a_regions = regions;
            p.result_regions = results;
            p.write_tiles = wb;
            p.result_base = split ? split_base : regions * kc * p.pass_rows * in_rows;
            for (const bool tm : {false, true}) {
              if (tm && p.chunks > 1) continue;  // a chunk of L serves the group's tiles
              if (options.order != GemmOptions::Order::kAuto && tm != (options.order == GemmOptions::Order::kTileMajor))
                continue;
              p.tile_major = tm;
              // A head needs a tile-major first group and a whole pass a load;
              // one or two blocks (a longer one only delays the first tile).
              const bool headed = p.chunks == 1 && (tm || p.groups == 1) && kb > 1;
              const uint32_t first = uint32_t(candidates.size());
              for (int head = 0; head <= (headed ? std::min(2, kb - 1) : 0); ++head) {
                if (options.head_blocks >= 0 && head != options.head_blocks) continue;
                p.head_blocks = head;
                p.estimate = estimate_cycles(p, core);
                candidates.push_back(p);
              }
              if (candidates.size() > first) variants.push_back(first);
            }
            }
            }
          }
        }
      }
    }
  }
  if (candidates.empty())
    throw std::invalid_argument("gemm " + dims(shape) + ": no plan fits the core (" +
                                std::to_string(core.ub_rows) + " unified-buffer rows, " +
                                std::to_string(core.acc_rows) + " accumulator rows)");
  // The instruction count decides the programs and their fetch: for the
  // best few plans by estimate (the earlier on a tie), each as its best head
  // (its heads, ranked one by one, would crowd other plans out; they differ
  // by an instruction or two), count the real one. They are sorted as
  // indices: a plan is a large value to move.
  variants.push_back(uint32_t(candidates.size()));
  std::vector<std::pair<uint64_t, uint32_t>> order;  // a plan's best estimate, and that candidate
  for (size_t v = 0; v + 1 < variants.size(); ++v) {
    uint32_t best_head = variants[v];
    for (uint32_t i = variants[v] + 1; i < variants[v + 1]; ++i)
      if (candidates[i].estimate < candidates[best_head].estimate) best_head = i;
    order.push_back({candidates[best_head].estimate, best_head});
  }
  const size_t exact = std::min(order.size(), kExactCandidates);
  std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(exact), order.end());
  order.resize(exact);
  GemmEpilogue epi;
  epi.output = output;
  const GemmPlan* best = nullptr;
  for (const auto& [e, i] : order) {
    GemmPlan& c = candidates[i];
    c.estimate = estimate_cycles(c, core, gemm_stream(c, epi, 0, 0, 0, core).instructions(core.imem_depth));
    if (!best || c.estimate < best->estimate) best = &c;
  }
  return *best;
}

// ---- host images ----------------------------------------------------------------------

namespace {

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

// L packed by pass (gemm_program.h) from l(r, c), dm x K, in elements of T.
template <typename T = int8_t, typename At>
std::vector<T> pack_l(const GemmPlan& p, At l) {
  const int n = p.n, kp = p.k_blocks * n, k = p.shape.k;
  std::vector<T> out(size_t(p.dm) * kp, 0);
  for (int pass = 0; pass < p.passes; ++pass) {
    const int m0 = p.pass_begin(pass), r = p.rows_of_pass(pass);
    for (int kb = 0; kb < p.k_blocks; ++kb)
      for (int i = 0; i < r; ++i) {
        T* dst = out.data() + size_t(m0) * kp + (size_t(kb) * r + i) * n;
        const int c0 = kb * n, c1 = std::min(c0 + n, k);
        for (int c = c0; c < c1; ++c) dst[c - c0] = l(m0 + i, c);
      }
  }
  return out;
}

// R tiles in one pass's order (gemm_program.h) from r(k, c), K x dn, in
// elements of T.
template <typename T = int8_t, typename At>
std::vector<T> pack_r(const GemmPlan& p, At r) {
  const int n = p.n, k = p.shape.k;
  std::vector<T> out(size_t(p.col_tiles) * p.k_blocks * n * n, 0);
  size_t t = 0;
  for (int g = 0; g < p.groups; ++g)
    for (const auto& [jg, kb] : group_order(p, g)) {
        const int j = p.group_begin(g) + jg;
        T* tile = out.data() + t++ * n * n;
        for (int row = 0; row < n && kb * n + row < k; ++row)
          for (int c = 0; c < n && j * n + c < p.dn; ++c) tile[row * n + c] = r(kb * n + row, j * n + c);
      }
  return out;
}

// Byte offset of D(r, c) in the packed result (gemm_program.h).
size_t d_offset(const GemmPlan& p, int r, int c, size_t lane_bytes) {
  const int pass = r / p.pass_rows, m0 = p.pass_begin(pass), j = c / p.n;
  return size_t(m0) * p.d_row_bytes() + (size_t(j) * p.rows_of_pass(pass)) * size_t(p.out_row_bytes()) +
         size_t(r - m0) * size_t(p.tile_row_bytes(j)) + size_t(c % p.n) * lane_bytes;
}

}  // namespace

std::vector<int8_t> pack_a(const GemmPlan& p, const MatrixI8& a) {
  if (a.rows != p.shape.m || a.cols != p.shape.k) throw std::invalid_argument("pack_a: A's shape differs from the plan");
  if (p.transposed) return pack_r(p, [&](int k, int c) { return a.at(c, k); });
  return pack_l(p, [&](int r, int c) { return a.at(r, c); });
}

std::vector<int8_t> pack_w(const GemmPlan& p, const MatrixI8& w) {
  if (w.rows != p.shape.k || w.cols != p.shape.n_out) throw std::invalid_argument("pack_w: W's shape differs from the plan");
  if (p.transposed) return pack_l(p, [&](int r, int c) { return w.at(c, r); });
  return pack_r(p, [&](int k, int c) { return w.at(k, c); });
}

namespace {

std::vector<uint8_t> le_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    out[2 * i] = uint8_t(v[i]);
    out[2 * i + 1] = uint8_t(v[i] >> 8);
  }
  return out;
}

}  // namespace

std::vector<uint8_t> pack_a_bf16(const GemmPlan& p, const MatrixBf16& a) {
  if (!p.bf16()) throw std::invalid_argument("pack_a_bf16: not a bf16 plan");
  if (a.rows != p.shape.m || a.cols != p.shape.k) throw std::invalid_argument("pack_a_bf16: A's shape differs from the plan");
  if (p.transposed) return le_bytes(pack_r<uint16_t>(p, [&](int k, int c) { return a.at(c, k); }));
  return le_bytes(pack_l<uint16_t>(p, [&](int r, int c) { return a.at(r, c); }));
}

std::vector<uint8_t> pack_w_bf16(const GemmPlan& p, const MatrixBf16& w) {
  if (!p.bf16()) throw std::invalid_argument("pack_w_bf16: not a bf16 plan");
  if (w.rows != p.shape.k || w.cols != p.shape.n_out) throw std::invalid_argument("pack_w_bf16: W's shape differs from the plan");
  if (p.transposed) return le_bytes(pack_l<uint16_t>(p, [&](int r, int c) { return w.at(c, r); }));
  return le_bytes(pack_r<uint16_t>(p, [&](int k, int c) { return w.at(k, c); }));
}

MatrixF32Bits unpack_c_f32(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kF32 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_f32: not an fp32 result of this plan");
  MatrixF32Bits out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j) {
      const uint8_t* b = c.data() + (p.transposed ? d_offset(p, j, i, 4) : d_offset(p, i, j, 4));
      out.at(i, j) = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
    }
  return out;
}

MatrixBf16 unpack_c_bf16(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kBf16 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_bf16: not a bf16 result of this plan");
  MatrixBf16 out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j) {
      const uint8_t* b = c.data() + (p.transposed ? d_offset(p, j, i, 2) : d_offset(p, i, j, 2));
      out.at(i, j) = uint16_t(b[0] | b[1] << 8);
    }
  return out;
}

MatrixI32 unpack_c_i32(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kInt32 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_i32: not an int32 result of this plan");
  MatrixI32 out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j) {
      const uint8_t* b = c.data() + (p.transposed ? d_offset(p, j, i, 4) : d_offset(p, i, j, 4));
      out.at(i, j) = int32_t(uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24);
    }
  return out;
}

MatrixI8 unpack_c_i8(const GemmPlan& p, std::span<const uint8_t> c) {
  if (p.output != GemmOutput::kInt8 || c.size() < p.c_bytes()) throw std::invalid_argument("unpack_c_i8: not an int8 result of this plan");
  MatrixI8 out(p.shape.m, p.shape.n_out);
  for (int i = 0; i < p.shape.m; ++i)
    for (int j = 0; j < p.shape.n_out; ++j)
      out.at(i, j) = int8_t(c[p.transposed ? d_offset(p, j, i, 1) : d_offset(p, i, j, 1)]);
  return out;
}

// ---- programs ---------------------------------------------------------------------------

namespace {

// gemm_programs' instructions, before they are cut into programs.
Stream gemm_stream(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a, uint64_t w, uint64_t c,
                   const CoreConfig& core) {
  if (epi.output != p.output) throw std::invalid_argument("gemm: the epilogue's output type differs from the plan's");
  const bool int8 = p.output == GemmOutput::kInt8;
  if (!epi.bias.empty() && (!int8 || int(epi.bias.size()) != p.shape.n_out))
    throw std::invalid_argument("gemm: the bias needs one int32 per output column (" +
                                std::to_string(p.shape.n_out) + "), and an int8 output");
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
      throw std::invalid_argument("gemm: a per-channel shift of " + std::to_string(s.exponent) +
                                  " is outside " + std::to_string(quant::kMinExponent) + ".." +
                                  std::to_string(quant::kMaxExponent));
  if ((!epi.bias.empty() || !epi.scales.empty() || !epi.bias_f32.empty()) && p.transposed)
    throw std::invalid_argument("gemm: a transposed plan has no bias or scale per output column "
                                "(plan with options.bias)");
  const uint64_t l_addr = p.transposed ? w : a, r_addr = p.transposed ? a : w;
  const int n = p.n, kb = p.k_blocks, P = p.pass_rows, G = p.group_tiles, out_rows = p.out_row_rows();
  const int wb = p.write_tiles;
  const bool bf16 = p.bf16(), out_bf16 = p.output == GemmOutput::kBf16;
  // ACT F32: bf16 results, or fp32 ones with a bias or an activation (else ACT RAW).
  const bool f32_act = out_bf16 || (bf16 && (!epi.bias_f32.empty() || epi.act != isa::Act::kNone));
  const bool has_bias = !epi.bias.empty() || !epi.bias_f32.empty();
  const int in_rows = p.in_row_rows(), lane = p.lane_bytes();  // UB rows per row of L; bytes per element
  const uint32_t result_base = uint32_t(p.result_base);
  const uint64_t row_bytes = uint64_t(p.out_row_bytes());
  // Groups accumulate in ACC slots of P * G rows in turn, as many as the ACC
  // holds (at least two): a group's MMCs then wait only for the ACTs of the
  // group that used the slot that many groups before.
  const int acc_slots = std::max(2, core.acc_rows / (P * G));
  const auto acc_slot = [&](int b) { return uint32_t((b % acc_slots) * P * G); };
  const int total_groups = p.passes * p.groups;

  Stream out;
  WeightStream weights(out, p, r_addr);

  if (int8) {
    out.add(isa::cfg(isa::kCfgQmult, uint32_t(epi.q.multiplier)));
    out.add(isa::cfg(isa::kCfgQshift, uint32_t(epi.q.shift)));
    out.add(isa::cfg(isa::kCfgQzp, uint32_t(epi.q.zero_point)));
    out.add(isa::cfg(isa::kCfgQmin, uint32_t(epi.q.qmin)));
    out.add(isa::cfg(isa::kCfgQmax, uint32_t(epi.q.qmax)));
    out.add(isa::cfg(isa::kCfgRelu6Max, uint32_t(epi.q.relu6_max)));
  }
  if (f32_act) {  // ACT F32 with SCALE 1 and no clamp (ReLU6's bound 6.0)
    out.add(isa::cfg(isa::kCfgScale, 0x3F800000u));
    out.add(isa::cfg(isa::kCfgFmin, 0xFF800000u));
    out.add(isa::cfg(isa::kCfgFmax, 0x7F800000u));
    if (epi.act == isa::Act::kRelu6) out.add(isa::cfg(isa::kCfgRelu6F32, 0x40C00000u));
  }
  // The MMCs that can run while the first load arrives: those up to the
  // first that reads its last block, and no more than its blocks (the MXU
  // takes a row a cycle, as fast as the load brings them).
  const int first_blocks = std::min(kb, p.chunk_blocks);
  int64_t during_load = 0;
  for (const auto& [j, k] : group_order(p, 0)) {
    ++during_load;
    if (k == first_blocks - 1 || during_load == first_blocks) break;
  }
  weights.first_tiles(p.head_blocks > 0 ? head_first_tiles(p) : during_load);

  // Loads of L, in order: (pass, chunk) when a pass is loaded whole
  // (chunks = 1), else (pass, group, chunk). Load i goes to region i % a_regions.
  struct Load {
    int pass, b0, b1;
  };
  std::vector<Load> loads;
  for (int pass = 0; pass < p.passes; ++pass)
    for (int g = 0; g < (p.chunks == 1 ? 1 : p.groups); ++g)
      for (int ch = 0; ch < p.chunks; ++ch)
        loads.push_back({pass, ch * p.chunk_blocks, std::min(kb, (ch + 1) * p.chunk_blocks)});
  const auto region_row = [&](size_t i) {
    return uint32_t((i % size_t(p.a_regions)) * p.chunk_blocks * P * in_rows);
  };
  // Blocks [b0, b1) of load i.
  const auto emit_load = [&](size_t i, int b0, int b1) {
    const Load& l = loads[i];
    const int rows = p.rows_of_pass(l.pass);
    out.add(isa::rhm(region_row(i) + uint32_t((b0 - l.b0) * rows * in_rows), uint32_t((b1 - b0) * rows),
                     l_addr + (uint64_t(p.pass_begin(l.pass)) * kb + uint64_t(b0) * rows) * n * uint64_t(lane),
                     uint32_t(n * lane), bf16));
  };

  // ACTs of output tiles [j0, j1) of group index b (over all passes), each
  // into the next slot of the current result region; a WHM writes the
  // region's tiles when it holds write_tiles of them or the pass's last (a
  // pass's tiles are contiguous in D, and tiles leave in column order within
  // a pass). Tiles next to each other in the ACC and in the UB share one ACT
  // (not with a bias or per-channel scales: those registers are per tile).
  // The BIAS registers' values once this program has written them: before
  // that they hold whatever the previous command left (registers persist
  // from one command to the next), so the first value of each lane is always
  // written (as the chained MLP's programs do, mlp_program.cpp).
  std::vector<std::optional<int32_t>> lane_bias(static_cast<size_t>(n));
  // The CH_MULT / CH_SHIFT registers' values: QMULT and QSHIFT above set every lane.
  std::vector<quant::LaneScale> lane_scale(size_t(n), quant::tensor_scale(epi.q));
  int regions_used = 0, batch_j0 = 0, batch_tiles = 0;
  // A WHM waits in the controller's issue for its ACT to finish, and so
  // would every MMC behind it: except in the last group, a group's WHMs go
  // out with the next group's epilogues, when their ACTs are long done.
  std::vector<Instr> deferred_whms;
  const auto epilogue = [&](int b, int j0, int j1) {
    const int pass = b / p.groups, g = b % p.groups, rows = p.rows_of_pass(pass);
    for (const Instr& whm : deferred_whms) out.add(whm);
    deferred_whms.clear();
    const bool defer = b < total_groups - 1;
    // The ACT being merged: its rows, and its UB rows per row and lanes
    // (the last tile's ACT writes only the UB rows that hold its lanes).
    uint32_t act_acc = 0, act_ub = 0, act_rows = 0, act_part = 0, act_lanes = 0;
    const auto act = [&](uint32_t acc, uint32_t ub, uint32_t count, uint32_t lanes) {
      if (int8) out.add(isa::act(acc, ub, count, epi.act, !epi.bias.empty()));
      else if (f32_act) out.add(isa::act(acc, ub, count, epi.act, has_bias, !out_bf16, true, lanes));
      else out.add(isa::act(acc, ub, count, isa::Act::kNone, false, true, false, lanes));  // int32, fp32: RAW
    };
    const auto flush = [&] {
      if (act_rows == 0) return;
      act(act_acc, act_ub, act_rows, act_lanes);
      act_rows = 0;
    };
    for (int j = j0; j < j1; ++j) {
      if (batch_tiles == 0) batch_j0 = j;
      const uint32_t ub0 = result_base + uint32_t((regions_used % p.result_regions) * wb * out_rows * P);
      const uint32_t acc = acc_slot(b) + uint32_t((j - p.group_begin(g)) * rows);
      // (a batch's tiles but its last are whole: the narrow tile is the last column tile)
      const uint32_t ub = ub0 + uint32_t(batch_tiles * out_rows * rows);
      const uint32_t part = uint32_t(p.tile_out_rows(j));
      const uint32_t lanes = part < uint32_t(out_rows) ? uint32_t(p.last_tile_lanes()) : 0;
      // Per-channel scales of this tile's columns; padding lanes keep theirs
      // (their results are not read back).
      if (!epi.scales.empty()) {
        flush();
        for (int l = 0; l < n && j * n + l < p.shape.n_out; ++l) {
          const quant::LaneScale& want = epi.scales[size_t(j * n + l)];
          quant::LaneScale& have = lane_scale[size_t(l)];
          if (want.multiplier != have.multiplier)
            out.add(isa::cfg(isa::kCfgChMultBase + uint32_t(l), uint32_t(want.multiplier)));
          if (want.exponent != have.exponent)
            out.add(isa::cfg(isa::kCfgChShiftBase + uint32_t(l), uint32_t(want.exponent)));
          have = want;
        }
      }
      if (has_bias) {
        flush();
        for (int l = 0; l < n; ++l) {
          const int col = j * n + l;
          const int32_t bias = col >= p.shape.n_out ? 0
                               : epi.bias.empty()   ? int32_t(epi.bias_f32[size_t(col)])
                                                    : epi.bias[size_t(col)];
          if (lane_bias[size_t(l)] != bias) out.add(isa::cfg(isa::kCfgBiasBase + uint32_t(l), uint32_t(bias)));
          lane_bias[size_t(l)] = bias;
        }
      }
      if (act_rows > 0 && act_acc + act_rows == acc && act_ub + act_rows * act_part == ub && act_part == part) {
        act_rows += uint32_t(rows);
      } else {
        flush();
        act_acc = acc;
        act_ub = ub;
        act_rows = uint32_t(rows);
        act_part = part;
        act_lanes = lanes;
      }
      if (has_bias || !epi.scales.empty()) flush();
      if (++batch_tiles == wb || j == p.col_tiles - 1) {
        const uint64_t host = c + uint64_t(p.pass_begin(pass)) * p.d_row_bytes() + uint64_t(batch_j0) * rows * row_bytes;
        const uint32_t batch_rows = uint32_t(((batch_tiles - 1) * out_rows + int(part)) * rows);  // UB rows
        const uint32_t piece = uint32_t(n);
        if (!defer && pass == p.passes - 1 && j == p.col_tiles - 1 && !bf16 && act_rows > piece &&
            kb > 2 * out_rows &&
            act_ub >= ub0 && act_ub + act_rows * act_part == ub0 + batch_rows) {
          // The stream's last write-back: its ACT and WHM in pieces of n
          // rows, so that only one piece's WHM follows the last ACT (the
          // rows of the batch's earlier tiles, already activated, first).
          // Only when K is long against a result row's UB rows: then the
          // MXU is what the GEMM waits for and the tail is the last ACT
          // and WHM; with a short K the link's writes run behind and the
          // pieces only add instructions (measured on `default`: 512^3
          // -406 cycles, 1024^3 -932; without this condition 64^3 and
          // 128^3 lost 18 cycles each). Not for bf16 GEMMs: on
          // `default_bf16` 512^3 lost 28 cycles with the pieces.
          const uint32_t before = act_ub - ub0;
          if (before > 0) out.add(isa::whm(ub0, before, host, uint32_t(n)));
          for (uint32_t r = 0; r < act_rows; r += piece) {
            const uint32_t k = std::min(piece, act_rows - r), ub = act_ub + r * act_part;
            act(act_acc + r, ub, k, act_lanes);
            out.add(isa::whm(ub, k * act_part, host + uint64_t(ub - ub0) * uint64_t(n), uint32_t(n)));
          }
          act_rows = 0;
        } else {
          flush();
          // bf16: wide rows of 2n bytes, unless the batch ends in a narrow
          // tile's half rows (then UB rows of n bytes, the same bytes in order).
          const Instr whm = out_bf16 && part == uint32_t(out_rows)
            ? isa::whm(ub0, uint32_t(batch_tiles * rows), host, uint32_t(2 * n), true)
            : isa::whm(ub0, batch_rows, host, uint32_t(n));
          if (defer) deferred_whms.push_back(whm);
          else out.add(whm);
        }
        ++regions_used;
        batch_tiles = 0;
      }
    }
    flush();
  };

  // Work placed between a group's MMCs: an epilogue of the previous group's
  // tile, or a load of L.
  struct Side {
    bool load;
    int b, j0, j1;  // epilogue of group b's tiles [j0, j1); a load's blocks [j0, j1)
    size_t load_index;
  };

  // Groups whose tiles leave as they finish: every group of a tile-major
  // plan, the last group, and with one group per pass every group (its last
  // chunk goes tile after tile, group_order), so that a pass's results keep
  // the VPU and the link's write side busy while the next pass starts
  // instead of all going out in the last pass. (With several groups a pass,
  // the earlier groups' results go out during the next group.)
  const auto finishes = [&](int b) { return p.tile_major || p.groups == 1 || b == total_groups - 1; };
  size_t next_load = 0;  // loads emitted so far
  int batch_ahead = 0;   // tiles in the current result region before the next group's
  // A group's MMCs and the side work before and after each, kept from group
  // to group (a planner builds the stream of each of its best plans).
  std::vector<Mmc> mmcs;
  std::vector<std::vector<Side>> before, after;
  std::vector<bool> has_before, has_after;
  for (int b = 0; b < total_groups; ++b) {
    const int pass = b / p.groups, g = b % p.groups, rows = p.rows_of_pass(pass), gt = p.tiles_of_group(g);
    const uint32_t acc0 = acc_slot(b);
    // This group's loads: indices [l0, l1) (none when a whole pass is kept
    // for all its groups and this is not its first).
    const size_t l0 = p.chunks == 1 ? size_t(pass) : size_t(b) * size_t(p.chunks);
    const bool loads_here = p.chunks > 1 || g == 0;
    const size_t l1 = loads_here ? l0 + size_t(p.chunks) : l0;
    mmcs.clear();
    std::vector<size_t> load_at(static_cast<size_t>(p.chunks));  // the MMC index before which each load of this group must be
    std::vector<size_t> tile_last(static_cast<size_t>(gt));      // the MMC index that completes each tile
    for (const auto& [j, k] : group_order(p, g)) {
      const int ch = k / p.chunk_blocks;
      const size_t li = p.chunks == 1 ? l0 : l0 + size_t(ch);
      if (ch > 0 && load_at[size_t(ch)] == 0) load_at[size_t(ch)] = mmcs.size();  // its first MMC
      tile_last[size_t(j)] = mmcs.size();
      mmcs.push_back({region_row(li) + uint32_t((k - ch * p.chunk_blocks) * rows * in_rows), acc0 + uint32_t(j * rows),
                      k > 0});
    }
    for (auto* sides : {&before, &after}) {
      for (std::vector<Side>& v : *sides) v.clear();
      sides->resize(mmcs.size());
    }
    // Loads: with one region each just before its MMCs; with two, load i+1
    // after the first MMC of load i (the first load of all up front). A
    // whole pass's next load goes in pieces, one after the first MMC of each
    // of the pass's first groups: a long RHM would hold the memory unit, and
    // so the write-backs, for its latency and all its rows.
    const bool pass_pieces = p.chunks == 1 && p.a_regions == 2;
    if (loads_here)
      for (size_t li = l0; li < l1; ++li) {
        const size_t at = load_at[li - l0];
        if (li == 0 || p.a_regions == 1) {
          if (next_load <= li && li == 0 && p.head_blocks > 0) {
            // A head's blocks first, the rest after the first MMC (behind
            // the rest of the first RW batch, which the head's MMCs need).
            before[at].push_back({true, 0, 0, p.head_blocks, li});
            after[at].push_back({true, 0, p.head_blocks, loads[li].b1, li});
          } else if (next_load <= li) {
            before[at].push_back({true, 0, loads[li].b0, loads[li].b1, li});
          }
          next_load = std::max(next_load, li + 1);
        }
        if (!pass_pieces && p.a_regions == 2 && li + 1 < loads.size() && next_load <= li + 1) {
          // after this load's first MMC, or its last when it is alone
          const size_t pos = std::min(at, mmcs.size() - 1);
          after[pos].push_back({true, 0, loads[li + 1].b0, loads[li + 1].b1, li + 1});
          next_load = li + 2;
        }
      }
    // The previous group's epilogues, spread evenly over this group's MMCs,
    // the tiles of one WHM together (batch_ahead: tiles already in the
    // current result region before them).
    // In a group that finishes its tiles one by one (finishes()), each tile
    // leaves as it finishes instead.
    const bool at_finish = finishes(b);
    if (b > 0 && !finishes(b - 1)) {
      const int pg = (b - 1) % p.groups, pt = p.tiles_of_group(pg), j0 = p.group_begin(pg);
      const int nb = (batch_ahead + pt - 1) / wb + 1;  // WHM batches the tiles touch
      // (in the last group, before its first tile leaves: tiles leave in order)
      const size_t span = b == total_groups - 1 ? tile_last[0] + 1 : mmcs.size();
      for (int s = 0; s < pt;) {
        const int bi = (batch_ahead + s) / wb, e = std::min(pt, (bi + 1) * wb - batch_ahead);
        const size_t pos = size_t(bi) * span / size_t(nb);
        after[pos].push_back({false, b - 1, j0 + s, j0 + e, 0});
        s = e;
      }
      batch_ahead = j0 + pt == p.col_tiles ? 0 : (batch_ahead + pt) % wb;
    }
    if (at_finish)  // each tile leaves as it finishes
      for (int j = 0; j < gt; ++j)
        after[tile_last[size_t(j)]].push_back({false, b, p.group_begin(g) + j, p.group_begin(g) + j + 1, 0});
    if (pass_pieces && pass + 1 < p.passes) {
      // As few pieces as fit, with their read latency, in the memory unit's
      // time left over by a group's write-back. The count is the same for
      // every group of the pass (a full group's), so that the pieces cover
      // the whole load: a last group of fewer tiles must not count fewer.
      const int full = p.tiles_of_group(0);
      const int64_t mmc = int64_t(kb) * rows * full, writes = int64_t(full) * rows * out_rows + 40;
      const int64_t slack = mmc - writes - int64_t(kReadLatency), load = int64_t(kb) * p.rows_of_pass(pass + 1);
      int pieces = slack <= 0 ? 1 : int(std::min<int64_t>({kb, p.groups, (load + slack - 1) / slack}));
      // The weight reads requested during a piece wait until all its rows
      // have crossed the link: more pieces when one would hold it longer
      // than the weight FIFO lasts, several a group when the groups are few,
      // as many as fit with their latency.
      const int64_t fifo_slack = weight_fifo_slack(core, rows, n);
      const int64_t link = load * in_rows * int64_t(row_link_cycles(n));  // cycles on the port
      if (fifo_slack > 0 && link > fifo_slack) {
        const int64_t fit = std::max<int64_t>(1, mmc / (int64_t(kReadLatency) + fifo_slack));
        pieces = std::max(pieces, int(std::min<int64_t>({kb, p.groups * fit, (link + fifo_slack - 1) / fifo_slack})));
      }
      const int per_group = (pieces + p.groups - 1) / p.groups;
      for (int q = g * per_group; q < std::min(pieces, (g + 1) * per_group); ++q)
        after[size_t(q - g * per_group) * mmcs.size() / size_t(per_group)].push_back(
            {true, 0, q * kb / pieces, (q + 1) * kb / pieces, size_t(pass + 1)});
    }
    has_before.resize(mmcs.size());
    has_after.resize(mmcs.size());
    for (size_t i = 0; i < mmcs.size(); ++i) has_before[i] = !before[i].empty(), has_after[i] = !after[i].empty();
    emit_mmcs(out, weights, mmcs, uint32_t(rows), bf16, has_before, has_after, [&](size_t i, bool is_after) {
      for (const Side& s : is_after ? after[i] : before[i]) {
        if (s.load) emit_load(s.load_index, s.j0, s.j1);
        else epilogue(s.b, s.j0, s.j1);
      }
    });
  }
  return out;
}

}  // namespace

std::vector<std::vector<Instr>> gemm_programs(const GemmPlan& p, const GemmEpilogue& epi, uint64_t a,
                                              uint64_t w, uint64_t c, const CoreConfig& core) {
  return gemm_stream(p, epi, a, w, c, core).programs(core.imem_depth);
}

// ---- batches ----------------------------------------------------------------------------

namespace {

// An RHM waits 500 cycles for its first row and a WHM costs about 40 beyond
// its rows, and each side of the memory unit moves one at a time: a batch loads the L
// of adjacent products together up to this many UB rows (when an eighth of
// the UB allows), and writes adjacent results together up to kBatchWriteRows.
constexpr int kBatchLoadRows = 512;
constexpr int kBatchWriteRows = 1024;

// The UB and ACC layout of a batch (gemm_program.h).
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

}  // namespace

bool gemm_batch_fits(std::span<const GemmPlan> plans, const CoreConfig& core) {
  if (plans.empty()) return false;
  for (const GemmPlan& p : plans)
    // Tile order: a product's MMCs pop its tiles in the image's order.
    if (p.output != GemmOutput::kInt32 || p.passes != 1 || p.chunks != 1 || (p.groups > 1 && !p.tile_major) ||
        p.head_blocks != 0 ||
        p.n != core.n || p.wgt_capacity != core.wgt_fifo_tiles + isa::kWgtBanks || p.dm * p.k_blocks > 0xFFFF ||
        4 * p.dm > 0xFFFF)
      return false;
  const BatchLayout l = batch_layout(plans, core);
  return l.result_regions >= 2 && l.acc_slots >= 2;
}

bool gemm_batchable(const GemmPlan& plan, const CoreConfig& core) {
  return gemm_batch_fits(std::span(&plan, 1), core);
}

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
                                        {.transpose = t, .group_tiles = 1, .chunk_blocks = p.k_blocks,
                                         .a_regions = 1, .result_regions = 2, .write_tiles = 1,
                                         .order = GemmOptions::Order::kTileMajor, .head_blocks = 0});
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
    throw std::invalid_argument("gemm batch: the products cannot run as one batch on this core (each must be "
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
    uint32_t lanes;     // its ACT's: the last tile's lanes when they need fewer than 4 UB rows a row
    bool write;         // the last of its region: a WHM after its ACT
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
    if (!runs.empty() && runs.back().addr + uint64_t(runs.back().tiles) * tile_bytes == addr) runs.back().tiles += t;
    else runs.push_back({t, addr});
    batch = std::min<int64_t>(batch, weight_batch(p));
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

// ---- one-program form -------------------------------------------------------------------

uint64_t gemm_scratch_bytes(const GemmShape& s, const CoreConfig& core) {
  const GemmPlan p = plan_gemm(s, GemmOutput::kInt32, core);
  return (p.a_bytes() + 63) / 64 * 64 + p.w_bytes();
}

GemmProgram build_gemm(HostMemory& mem, const GemmShape& shape, const GemmAddrs& addrs,
                       const CoreConfig& core, const GemmOptions& options) {
  GemmProgram g;
  g.plan = plan_gemm(shape, GemmOutput::kInt32, core, options);
  const GemmPlan& p = g.plan;
  const uint64_t a_packed = addrs.scratch, w_tiles = addrs.scratch + (p.a_bytes() + 63) / 64 * 64;
  g.c = addrs.c;
  mem.write(a_packed, std::span<const int8_t>(pack_a(p, read_matrix_i8(mem, addrs.a, shape.m, shape.k))));
  mem.write(w_tiles, std::span<const int8_t>(pack_w(p, read_matrix_i8(mem, addrs.w, shape.k, shape.n_out))));
  g.programs = gemm_programs(p, {}, a_packed, w_tiles, g.c, core);
  return g;
}

MatrixI32 read_gemm_result(const HostMemory& mem, const GemmProgram& g) {
  return unpack_c_i32(g.plan, mem.read(g.c, g.plan.c_bytes()));
}

void write_matrix(HostMemory& mem, uint64_t addr, const MatrixI8& m) {
  mem.write(addr, std::span<const int8_t>(m.data));
}

MatrixI8 read_matrix_i8(const HostMemory& mem, uint64_t addr, int rows, int cols) {
  MatrixI8 m(rows, cols);
  mem.read(addr, std::span(reinterpret_cast<uint8_t*>(m.data.data()), m.data.size()));
  return m;
}

}  // namespace tpu::model
