// SPDX-License-Identifier: Apache-2.0
// Transaction-level driver for the MXU: pushes weight tiles and input rows
// with optional random gaps and output backpressure, collects output rows,
// and records when each handshake happened so tests can check timing.
//
// Two job forms run through the same cycle loop: MxuJob (int8 matrices,
// results as int32 matrices) for the int8 datapath, and MxuLaneJob (raw
// LaneW-bit lanes with a format bit per row, results as raw 32-bit words)
// for the bf16 and mixed datapaths.
#pragma once

#include <cstdint>
#include <deque>
#include <type_traits>
#include <vector>

#include "bits.h"
#include "tpu/ref_matmul.h"
#include "sim.h"

namespace tb {

using tpu::MatrixI32;
using tpu::MatrixI8;

// One weight tile (N x N) and the input rows (M x N) that use it.
struct MxuJob {
  MatrixI8 weights;
  MatrixI8 rows;
};

// One weight tile and its input rows as raw lanes (bf16 bits, or an int8 in
// the low 8 bits): weights[k * N + j] is W[k][j], rows[m * N + k] is A[m][k],
// bf16[m] is the format of row m (in_bf16_i; empty: every row 0).
struct MxuLaneJob {
  std::vector<uint16_t> weights;
  std::vector<uint16_t> rows;
  std::vector<uint8_t> bf16;
};

// How the driver paces the streams. Probabilities are per cycle.
struct MxuPacing {
  double wgt_gap = 0.0;    // weight valid withheld
  double in_gap = 0.0;     // input valid withheld
  double out_stall = 0.0;  // out_ready low
  uint64_t wgt_start = 0;  // first cycle a weight beat may be offered
};

// What happened during a run, cycle numbers relative to the run's start.
struct MxuRecord {
  std::vector<MatrixI32> results;       // int8 jobs: one per job, in job order
  std::vector<std::vector<uint32_t>> raw;  // lane jobs: out_row_o words per job, row-major
  std::vector<bool> out_last;           // last flag of every output row
  std::vector<bool> out_bf16;           // out_bf16_o of every output row
  std::vector<uint64_t> tile_loaded;    // cycle of each tile's final weight beat
  std::vector<uint64_t> in_fire;        // cycle of every input handshake
  std::vector<uint64_t> out_fire;       // cycle of every output handshake
  std::vector<uint64_t> out_valid;      // cycles with out_valid_o high
  std::vector<int> in_tile;             // job index of every input handshake
  uint64_t cycles = 0;                  // until the last output row
  bool timed_out = false;
};

// LaneW: bits per element on wgt_row_i/in_row_i (8 for int8, 16 for the
// bf16 and mixed datapaths); out_row_o elements are 32 bits.
template <class Model, int N, int LaneW = 8>
class MxuDriver {
 public:
  explicit MxuDriver(Sim<Model>& sim) : sim_(sim), dut_(sim.dut()) {
    dut_.clear_i = 0;
    dut_.in_bf16_i = 0;
  }

  // int8 jobs: results as int32 matrices.
  MxuRecord run(const std::vector<MxuJob>& jobs, const MxuPacing& pace,
                uint64_t timeout_cycles = 0) {
    auto lanes_of = [](const std::vector<int8_t>& v) {
      std::vector<uint16_t> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = uint16_t(uint8_t(v[i]));
      return out;
    };
    std::vector<MxuLaneJob> lanes;
    for (const auto& j : jobs) lanes.push_back({lanes_of(j.weights.data), lanes_of(j.rows.data), {}});
    MxuRecord rec = run(lanes, pace, timeout_cycles);
    for (size_t j = 0; j < jobs.size(); ++j) {
      rec.results.emplace_back(jobs[j].rows.rows, N);
      for (size_t i = 0; i < rec.raw[j].size(); ++i)
        rec.results[j].data[i] = static_cast<int32_t>(rec.raw[j][i]);
    }
    return rec;
  }

  // Raw lane jobs: results as raw 32-bit words, one vector per job.
  MxuRecord run(const std::vector<MxuLaneJob>& jobs, const MxuPacing& pace,
                uint64_t timeout_cycles = 0) {
    std::deque<std::pair<const uint16_t*, int>> beats;  // (row pointer, job index)
    struct InRow { const uint16_t* data; bool last; bool bf16; int job; };
    std::deque<InRow> rows;
    std::vector<int> job_rows;
    size_t total_rows = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      for (int k = 0; k < N; ++k) beats.push_back({&jobs[j].weights[size_t(k) * N], int(j)});
      const int m = int(jobs[j].rows.size()) / N;
      for (int r = 0; r < m; ++r)
        rows.push_back({&jobs[j].rows[size_t(r) * N], r == m - 1,
                        !jobs[j].bf16.empty() && jobs[j].bf16[size_t(r)] != 0, int(j)});
      job_rows.push_back(m);
      total_rows += size_t(m);
    }
    if (timeout_cycles == 0) timeout_cycles = 200 + 40 * (beats.size() + total_rows) + 20 * N;

    MxuRecord rec;
    for (int m : job_rows) rec.raw.emplace_back(size_t(m) * N, 0u);
    size_t out_job = 0;
    int out_row = 0;
    bool wgt_offer = false, in_offer = false;
    int beats_in_tile = 0;
    const uint64_t start = sim_.cycle();

    while (rec.out_fire.size() < total_rows) {
      const uint64_t now = sim_.cycle() - start;
      if (now >= timeout_cycles) {
        rec.timed_out = true;
        break;
      }
      // Offer (and keep offering until accepted) the next weight beat and row.
      if (!wgt_offer && !beats.empty() && now >= pace.wgt_start)
        wgt_offer = !sim_.chance(pace.wgt_gap);
      if (!in_offer && !rows.empty()) in_offer = !sim_.chance(pace.in_gap);
      dut_.wgt_valid_i = wgt_offer;
      if (wgt_offer) set_row(dut_.wgt_row_i, beats.front().first);
      dut_.in_valid_i = in_offer;
      if (in_offer) {
        set_row(dut_.in_row_i, rows.front().data);
        dut_.in_last_i = rows.front().last;
        dut_.in_bf16_i = rows.front().bf16;
      }
      dut_.out_ready_i = !sim_.chance(pace.out_stall);
      sim_.settle();

      if (dut_.out_valid_o) rec.out_valid.push_back(now);
      if (wgt_offer && dut_.wgt_ready_o) {
        beats.pop_front();
        wgt_offer = false;
        if (++beats_in_tile == N) {
          beats_in_tile = 0;
          rec.tile_loaded.push_back(now);
        }
      }
      if (in_offer && dut_.in_ready_o) {
        rec.in_fire.push_back(now);
        rec.in_tile.push_back(rows.front().job);
        rows.pop_front();
        in_offer = false;
      }
      if (dut_.out_valid_o && dut_.out_ready_i) {
        rec.out_fire.push_back(now);
        rec.out_last.push_back(dut_.out_last_o);
        rec.out_bf16.push_back(dut_.out_bf16_o);
        while (out_job < jobs.size() && out_row >= job_rows[out_job]) {
          ++out_job;
          out_row = 0;
        }
        if (out_job < jobs.size()) {
          get_row(dut_.out_row_o, &rec.raw[out_job][size_t(out_row) * N]);
          ++out_row;
        }
      }
      sim_.tick_settled();
    }
    rec.cycles = sim_.cycle() - start;
    dut_.wgt_valid_i = 0;
    dut_.in_valid_i = 0;
    dut_.out_ready_i = 1;
    return rec;
  }

  // Counts output rows that appear after all expected rows were received.
  int drain_extra(int cycles) {
    int extra = 0;
    dut_.out_ready_i = 1;
    for (int i = 0; i < cycles; ++i) {
      sim_.settle();
      if (dut_.out_valid_o) ++extra;
      sim_.tick_settled();
    }
    return extra;
  }

 private:
  // The row's lanes a whole 32-bit word at a time: these two run in every
  // cycle, and lane-by-lane field access would be about 6 % of mxu_bench's time.
  template <class Sig>
  static void set_row(Sig& sig, const uint16_t* row) {
    static_assert(32 % LaneW == 0 && (N * LaneW) % 32 == 0, "lanes fill whole 32-bit words");
    constexpr int kPerWord = 32 / LaneW;
    constexpr uint32_t kMask = LaneW == 32 ? ~0u : (1u << LaneW) - 1;
    for (int w = 0; w < N / kPerWord; ++w) {
      uint32_t word = 0;
      for (int i = 0; i < kPerWord; ++i) word |= (row[w * kPerWord + i] & kMask) << (i * LaneW);
      if constexpr (std::is_integral_v<Sig>) set_field(sig, unsigned(w) * 32, 32, word);
      else sig[w] = word;
    }
  }

  template <class Sig>
  static void get_row(const Sig& sig, uint32_t* out) {
    for (int c = 0; c < N; ++c) {
      if constexpr (std::is_integral_v<Sig>) out[c] = static_cast<uint32_t>(get_field(sig, unsigned(c) * 32, 32));
      else out[c] = sig[c];
    }
  }

  Sim<Model>& sim_;
  Model& dut_;
};

}  // namespace tb
