// SPDX-License-Identifier: Apache-2.0
// Transaction-level driver for the MXU: pushes weight tiles and input rows
// with optional random gaps and output backpressure, collects output rows,
// and records when each handshake happened so tests can check timing.
#pragma once

#include <deque>
#include <vector>

#include "bits.h"
#include "tpu/ref_matmul.h"
#include "sim.h"

namespace tb {

using tpu::model::MatrixI32;
using tpu::model::MatrixI8;

// One weight tile (N x N) and the input rows (M x N) that use it.
struct MxuJob {
  MatrixI8 weights;
  MatrixI8 rows;
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
  std::vector<MatrixI32> results;       // one per job, in job order
  std::vector<bool> out_last;           // last flag of every output row
  std::vector<uint64_t> tile_loaded;    // cycle of each tile's final weight beat
  std::vector<uint64_t> in_fire;        // cycle of every input handshake
  std::vector<uint64_t> out_fire;       // cycle of every output handshake
  std::vector<uint64_t> out_valid;      // cycles with out_valid_o high
  std::vector<int> in_tile;             // job index of every input handshake
  uint64_t cycles = 0;                  // until the last output row
  bool timed_out = false;
};

template <class Model, int N>
class MxuDriver {
 public:
  explicit MxuDriver(Sim<Model>& sim) : sim_(sim), dut_(sim.dut()) { dut_.clear_i = 0; }

  MxuRecord run(const std::vector<MxuJob>& jobs, const MxuPacing& pace,
                uint64_t timeout_cycles = 0) {
    std::deque<std::pair<const int8_t*, int>> beats;  // (row pointer, job index)
    struct InRow { const int8_t* data; bool last; int job; };
    std::deque<InRow> rows;
    size_t total_rows = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
      for (int k = 0; k < N; ++k) beats.push_back({&jobs[j].weights.at(k, 0), int(j)});
      const int m = jobs[j].rows.rows;
      for (int r = 0; r < m; ++r) rows.push_back({&jobs[j].rows.at(r, 0), r == m - 1, int(j)});
      total_rows += size_t(m);
    }
    if (timeout_cycles == 0) timeout_cycles = 200 + 40 * (beats.size() + total_rows) + 20 * N;

    MxuRecord rec;
    for (const auto& j : jobs) rec.results.emplace_back(j.rows.rows, N);
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
        while (out_job < jobs.size() && out_row >= jobs[out_job].rows.rows) {
          ++out_job;
          out_row = 0;
        }
        if (out_job < jobs.size()) {
          for (int c = 0; c < N; ++c)
            rec.results[out_job].at(out_row, c) =
                static_cast<int32_t>(get_field(dut_.out_row_o, unsigned(c) * 32, 32));
          ++out_row;
        }
      }
      sim_.tick();
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
      sim_.tick();
    }
    return extra;
  }

 private:
  template <class Sig>
  static void set_row(Sig& sig, const int8_t* row) {
    for (int k = 0; k < N; ++k) set_field(sig, unsigned(k) * 8, 8, static_cast<uint8_t>(row[k]));
  }

  Sim<Model>& sim_;
  Model& dut_;
};

}  // namespace tb
