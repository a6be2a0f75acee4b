// SPDX-License-Identifier: Apache-2.0
// Plans and builds the programs of a chained MLP: every layer of a dense
// network on the device in one command, the activations kept in the unified
// buffer (UB) from one layer to the next, only the inputs and the final
// outputs crossing the link. The driver's Mlp::run uses it when the network
// fits (docs/driver.md, "Chained MLP").
//
// A launch of B samples runs as S *steps* of P samples each (the last step
// padded with zero rows): a step is what the UB holds at once. In one step:
//   - layer 0 reads the step's input rows (RHM'd into IN[t % 2] by the step
//     before, or by the prologue for step 0);
//   - each layer l computes its output tiles one after the other: K block
//     after K block into an accumulator (ACC) region, then one ACT
//     (bias, requantization, activation) writes the tile's P int8 rows into
//     the UB, where they are K block j of layer l + 1's input;
//   - the last layer's ACTs write OUT[t % 2], which one WHM sends to host
//     memory.
// UB layout, in rows (kb0 = layer 0's K blocks, ctL = the last layer's
// output tiles, X and Y the most output tiles of the even and of the odd
// hidden layers):
//   IN[0], IN[1]   kb0 * P each  the step's input, block-major (block k: P rows)
//   X, Y           X * P, Y * P  hidden activations: layer l writes X when l
//                                is even, Y when odd; layer l + 1 reads it
//   OUT[0], OUT[1] ctL * P each  the last layer's int8 outputs, tile-major
// The ACC holds R = 2 or 4 regions of P rows (R * P <= AccRows): the output
// tiles of a pair of steps take them in turn, so a tile's ACT overlaps the
// next tile's MMCs.
//
// Overlap: step t loads step t + 1's input into the other IN region after
// its first MMC, so the load crosses the link while step t computes; the
// weight tiles of the step stream through RWs issued ahead of the MMCs
// within the weight capacity (WgtFifoTiles + 2), and the first tiles of step
// t + 1 are requested before step t ends. The scoreboard orders everything
// else (docs/controller.md).
//
// Device loop: the steps of a pair (t even, t + 1) are the same
// instructions but for their host addresses, so a LOOP repeats a body of two
// steps with a host increment of one *slot* (two steps' inputs and a copy of
// the packed weights in the records, two steps' logits in the outputs, the
// larger of the two): TPUs' steps_per_execution. A LOOP adds its host
// increment to every RHM, WHM and RW of its body (docs/isa.md), so each
// slot carries its own copy of the weights; the link carries the same bytes
// as re-reading one copy would. The LOOP needs at least two iterations and
// a body of at most 255 instructions (no MMC LOOPs inside: LOOPs do not
// nest); otherwise the steps are unrolled, their K-block MMC runs as LOOPs,
// and the program is cut into several when it outgrows the instruction
// memory.
//
// Host images (the driver writes the records, reads the outputs):
//   records  step t's input at in_addr(t): block k (columns k*n .. k*n+n-1,
//            zero-padded) of sample t*P + r at in_addr(t) + (k*P + r)*n;
//            the packed weights at w_addr(t): every layer's n x n tiles in
//            the order the MMCs use them (layer, output tile, K block)
//   outputs  step t's logits at out_addr(t): column j*n + c of sample
//            t*P + r at out_addr(t) + (j*P + r)*n + c
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tpu/core_config.h"
#include "tpu/isa.h"
#include "tpu/matrix.h"
#include "tpu/quant.h"

namespace tpu::plan {

// One dense layer as the planner sees it: out = act(requant(in * W + bias)).
struct ChainLayer {
  int k = 0;                       // inputs (rows of W)
  int n_out = 0;                   // outputs (columns of W)
  quant::QuantParams q;            // per-tensor requantization and clamp
  isa::Act act = isa::Act::kNone;  // none, relu or relu6
  std::vector<int32_t> bias;       // empty (no bias) or n_out entries
};

struct ChainOptions {
  int step_rows = 0;  // samples per step, at most the batch (0: the planner's choice)
  bool loop = true;   // repeat pairs of steps with a device LOOP when possible
};

struct ChainPlan {
  int n = 0;                // array size
  int batch = 0;            // samples of the launch
  std::vector<int> kb, ct;  // per layer: K blocks, output tiles
  int step_rows = 0;        // P
  int steps = 0;            // S; 0 when the network does not chain (why_not)
  std::string why_not;      // why there is no plan
  int tiles_per_step = 0;   // weight tiles a step streams (sum of kb * ct)
  int first_tiles = 0;      // a step's tiles requested before it starts
  int acc_regions = 0;      // R
  int ub_in[2] = {0, 0}, ub_x = 0, ub_y = 0, ub_out[2] = {0, 0};
  int ub_rows_used = 0;
  int loop_iterations = 0;    // LOOP count, two steps each (0: unrolled)
  int body_instructions = 0;  // the LOOP body's length
  uint64_t step_in_bytes = 0, step_out_bytes = 0, w_bytes = 0;
  uint64_t slot_bytes = 0;  // the LOOP's host increment
  int instructions = 0;     // of all programs, HALTs included
  int programs = 0;
  uint64_t estimate = 0;  // estimate_chain()

  bool fits() const { return steps > 0; }
  bool looped() const { return loop_iterations > 0; }
  // Byte offsets in the records and outputs images.
  uint64_t in_addr(int step) const;
  uint64_t w_addr(int step) const;
  uint64_t out_addr(int step) const;
  uint64_t records_bytes() const;
  uint64_t out_bytes() const;
};

// The plan for `batch` samples, or one with steps = 0 and why_not set when
// the network does not chain on this core (a step of one sample does not fit
// the UB or the accumulators, a forced step_rows does not fit, an activation
// other than none/relu/relu6). Throws std::invalid_argument when the layers
// do not chain (shapes, bias sizes) or batch < 1.
ChainPlan plan_chain(const std::vector<ChainLayer>& layers, int batch, const CoreConfig& core,
                     const ChainOptions& options = {});

// A rough model of the chained plan's cycles (command cost, program fetch,
// the first load, the busiest of MXU, memory unit and link per step, layer
// boundaries, the last write-back), comparable with estimate_per_layer().
uint64_t estimate_chain(const ChainPlan& plan, const CoreConfig& core);

// The same for the per-layer path: each layer a GEMM of `batch` rows
// (plan_gemm's estimate) plus one command's fixed cost per program.
uint64_t estimate_per_layer(const std::vector<ChainLayer>& layers, int batch, const CoreConfig& core);

// The records image (inputs and weights) for x (batch x layers[0].k) and the
// layers' weights.
std::vector<int8_t> pack_chain_records(const ChainPlan& plan, const MatrixI8& x,
                                       std::span<const MatrixI8* const> weights);
// The batch x n_out logits from the outputs image.
MatrixI8 unpack_chain_output(const ChainPlan& plan, int n_out, std::span<const uint8_t> out);

// The programs, for the records image at host address `records` and the
// outputs image at `out`: run them in order (one when they fit the
// instruction memory). The first expects no weight tiles pending; the last
// leaves none.
std::vector<std::vector<isa::Instr>> chain_programs(const ChainPlan& plan, const std::vector<ChainLayer>& layers,
                                                    uint64_t records, uint64_t out, const CoreConfig& core);

}  // namespace tpu::plan
