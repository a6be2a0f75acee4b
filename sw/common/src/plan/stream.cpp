// SPDX-License-Identifier: Apache-2.0
#include "stream.h"

#include <stdexcept>
#include <string>

namespace tpu::plan {

using isa::Instr;

std::vector<std::vector<Instr>> Stream::programs(int depth) const {
  std::vector<std::vector<Instr>> out;
  size_t begin = 0;
  for (const size_t end : cuts(depth)) {
    out.emplace_back(instrs_.begin() + std::ptrdiff_t(begin), instrs_.begin() + std::ptrdiff_t(end));
    out.back().push_back(isa::halt());
    begin = end;
  }
  return out;
}

std::vector<size_t> Stream::cuts(int depth) const {
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

int rw_batch_tiles(int capacity, int rows, int n, const CoreConfig& core) {
  const int cover = int((uint64_t(core.link_latency) + uint64_t(n)) / uint64_t(std::max(1, rows))) + 2;
  return std::max({1, capacity / 2, capacity - cover});
}

WeightStream::WeightStream(Stream& out, const GemmPlan& plan, uint64_t w, const CoreConfig& core)
    : WeightStream(out, plan, std::vector<Run>(size_t(plan.passes), Run{int64_t(plan.col_tiles) * plan.k_blocks, w}),
                   weight_batch(plan, core)) {}

WeightStream::WeightStream(Stream& out, const GemmPlan& plan, std::vector<Run> runs, int64_t batch)
    : out_(out),
      runs_(std::move(runs)),
      tile_bytes_(uint64_t(plan.n) * plan.n * plan.lane_bytes()),
      cap_(plan.wgt_capacity),
      batch_(batch),
      stride_(uint32_t(plan.n * plan.lane_bytes())),
      bf16_(plan.bf16()) {
  for (const Run& r : runs_) total_ += r.tiles;
}

void WeightStream::first_tiles(int64_t count) {
  if (issued_ != 0 || total_ == 0) return;
  const int64_t all = std::min(cap_, total_), first = std::clamp<int64_t>(count, 1, all);
  issue(first);
  rest_ = all - first;
}

int64_t WeightStream::retires_until_rw() const {
  const int64_t left = total_ - issued_;
  if (left == 0) return INT64_MAX;
  if (rest_ > 0) return 1;
  const int64_t room = cap_ - (issued_ - retired_);
  return std::max<int64_t>(1, std::min(batch_, left) - room);
}

void WeightStream::top_up() {
  const int64_t room = cap_ - (issued_ - retired_), left = total_ - issued_;
  if (rest_ > 0) {
    issue(rest_);
    rest_ = 0;
  } else if (left > 0 && room >= std::min<int64_t>(batch_, left)) {
    issue(std::min(room, left));
  }
}

void WeightStream::issue(int64_t count) {
  while (count > 0) {
    while (issued_ - run_begin_ == runs_[run_].tiles) run_begin_ += runs_[run_++].tiles;
    const int64_t s = issued_ - run_begin_, c = std::min(count, runs_[run_].tiles - s);
    out_.add(isa::rw(runs_[run_].addr + uint64_t(s) * tile_bytes_, uint32_t(c), stride_, bf16_));
    issued_ += c;
    count -= c;
  }
}

}  // namespace tpu::plan
