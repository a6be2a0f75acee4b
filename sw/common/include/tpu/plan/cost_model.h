// SPDX-License-Identifier: Apache-2.0
// The GEMM planner's cost model: a rough analytic estimate of a plan's
// cycles, only used to compare plans (plan_gemm ranks its candidates by it).
//
// The estimate is the busiest of the MXU (slowed when a weight tile serves
// too few rows for the weight FIFO to cover the read latency), the memory
// unit (L loads, each with the read latency, and C writes), the VPU and the
// link's read direction; plus the exposed start (first load) and end (last
// group's write-back) and the fixed cost of each extra program.
//
// Its constants come from the core (CoreConfig: the link's read latency and
// bytes a cycle, the weight FIFO's tiles, the instruction memory's depth);
// the few that the configuration table has no entry for are the device's
// fixed costs, named below with the reason each is what it is.
#pragma once

#include <cstdint>

#include "tpu/core_config.h"
#include "tpu/plan/gemm.h"

namespace tpu::plan {

class GemmCostModel {
 public:
  explicit GemmCostModel(const CoreConfig& core);

  // The plan's cycles; `instructions` is the stream's exact length (HALTs
  // included) when known, else 0 and a count estimated from the plan.
  uint64_t cycles(const GemmPlan& plan, uint64_t instructions = 0) const;

  // A plan with a head: the weight tiles its first RW reads ahead of the
  // first load (the first group's tiles of K block 0, one MMC each), as
  // many as keep the MXU busy until the next tile arrives behind the head's
  // rows of L.
  int head_first_tiles(const GemmPlan& plan) const;

  // Link cycles a UB row of an n-wide array takes (n bytes).
  uint64_t row_link_cycles(int n) const;

  // The cycles of MXU work the weight FIFO holds beyond the read latency and
  // the tiles in flight, when each tile serves `rows` rows (may be
  // negative). The port answers reads in request order, so a load that
  // holds it longer than this makes the MXU wait for the weight tiles
  // requested behind it.
  int64_t weight_fifo_slack(int rows, int n) const;

  uint64_t read_latency() const { return read_latency_; }

  // A command's fixed cost: the HALT-only command's cycles (docs/driver.md,
  // "Roofline"). Each program after the first pays it and a read latency.
  static constexpr uint64_t kCommandCycles = 1042;
  // What a WHM costs the memory unit beyond its rows: a DMA packet to fill
  // and an acknowledge to wait for.
  static constexpr uint64_t kWhmCycles = 40;

 private:
  uint64_t instructions_of(const GemmPlan& plan) const;   // when the stream's count is not known
  uint64_t head_start(const GemmPlan& plan) const;        // a head's first MMC
  uint64_t head_wait_cycles(const GemmPlan& plan) const;  // the MXU's waits behind a head's first load

  CoreConfig core_;
  uint64_t read_latency_;  // cycles from a read request to its first data
  uint64_t link_bytes_;    // per cycle, each way
};

}  // namespace tpu::plan
