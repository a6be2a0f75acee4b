// SPDX-License-Identifier: Apache-2.0
// Instruction streams as the planners' emitters build them (private to
// sw/common/src/plan): a Stream cut into programs that fit the instruction
// memory, a WeightStream that issues the RWs of weight tiles ahead of the
// MMCs that use them, and runs of MMCs folded into LOOPs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tpu/isa.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

// Instructions in groups that must stay in one program (a LOOP and its body),
// kept in one array (a planner builds the stream of each of its best
// candidates to count its instructions, so adding one allocates nothing).
class Stream {
 public:
  void add(const isa::Instr& in) {
    instrs_.push_back(in);
    ends_.push_back(instrs_.size());
  }
  void add_group(std::initializer_list<isa::Instr> g) {
    instrs_.insert(instrs_.end(), g);
    ends_.push_back(instrs_.size());
  }
  // Cuts the stream into programs of at most `depth` instructions with HALT.
  // Reads of host memory (RW, RHM) just before a cut start the next program
  // instead: the HALT would wait a read latency for their data, which only
  // the next program uses.
  std::vector<std::vector<isa::Instr>> programs(int depth) const;
  // The instructions of programs(depth), HALTs included.
  size_t instructions(int depth) const { return instrs_.size() + cuts(depth).size(); }

 private:
  // Where each program ends in instrs_ (the programs keep the stream's order:
  // a cut only moves its trailing reads into the next one).
  std::vector<size_t> cuts(int depth) const;

  std::vector<isa::Instr> instrs_;
  std::vector<size_t> ends_;  // where each group ends in instrs_
};

// Tiles per RW: half the weight capacity, or more when fewer tiles cover
// the link's read latency (each tile serves `rows` MMC rows of an n-wide
// array), so that the next RW's tiles arrive before the MXU runs dry.
int rw_batch_tiles(int capacity, int rows, int n, const CoreConfig& core);

// A GEMM plan's tiles per RW.
inline int weight_batch(const GemmPlan& p, const CoreConfig& core) {
  return rw_batch_tiles(p.wgt_capacity, p.pass_rows, p.n, core);
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
  WeightStream(Stream& out, const GemmPlan& plan, uint64_t w, const CoreConfig& core);
  // plan gives the tile format and the capacity.
  WeightStream(Stream& out, const GemmPlan& plan, std::vector<Run> runs, int64_t batch);

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
  void first_tiles(int64_t count);
  int64_t available() const { return issued_ - retired_; }
  // Retirements until top_up() would issue an RW (a large number if none is left).
  int64_t retires_until_rw() const;
  void top_up();

 private:
  // Tiles issued_ .. issued_+count-1, one RW per run they touch.
  void issue(int64_t count);

  Stream& out_;
  std::vector<Run> runs_;
  size_t run_ = 0;         // the run of tile issued_
  int64_t run_begin_ = 0;  // its first tile
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

// A step between two MMCs that a LOOP's UB or ACC increment can hold.
constexpr bool loop_step_fits(int64_t step) { return step >= isa::kLoopIncMin && step <= isa::kLoopIncMax; }

// The MMCs from i on that one LOOP can repeat (1: none to fold): at most
// `limit`, the same accumulate flag and constant UB and ACC steps, none with
// side work before it (before(k)) but the first, ending at the first with
// side work after it (after(k)).
template <class Before, class After>
size_t loop_run(const std::vector<Mmc>& mmcs, size_t i, int64_t limit, Before&& before, After&& after) {
  size_t run = 1;
  if (after(i) || i + 1 >= mmcs.size()) return run;
  const int64_t dub = int64_t(mmcs[i + 1].ub) - mmcs[i].ub, dacc = int64_t(mmcs[i + 1].acc) - mmcs[i].acc;
  if (!loop_step_fits(dub) || !loop_step_fits(dacc)) return run;
  while (i + run < mmcs.size() && int64_t(run) < limit && run < isa::kMaxCount && !before(i + run) &&
         mmcs[i + run].accumulate == mmcs[i].accumulate && int64_t(mmcs[i + run].ub) - mmcs[i + run - 1].ub == dub &&
         int64_t(mmcs[i + run].acc) - mmcs[i + run - 1].acc == dacc) {
    ++run;
    if (after(i + run - 1)) break;
  }
  return run;
}

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
    const int64_t limit = std::min<int64_t>(weights.available(), weights.retires_until_rw());
    const size_t run = loop_run(
        mmcs, i, limit, [&](size_t k) { return bool(before[k]); }, [&](size_t k) { return bool(after[k]); });
    const isa::Instr mmc = isa::mmc(mmcs[i].ub, mmcs[i].acc, rows, mmcs[i].accumulate, true, bf16);
    if (run > 1)
      out.add_group(
          {isa::loop(uint32_t(run), 1, int32_t(mmcs[i + 1].ub - mmcs[i].ub), int32_t(mmcs[i + 1].acc - mmcs[i].acc)),
           mmc});
    else
      out.add(mmc);
    for (size_t r = 0; r < run; ++r) weights.retire_one();
    i += run;
    if (after[i - 1]) side(i - 1, true);
  }
}

}  // namespace tpu::plan
