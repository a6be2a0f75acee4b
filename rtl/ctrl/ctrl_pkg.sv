// SPDX-License-Identifier: Apache-2.0
// Controller: the footprint of a command, as the scoreboard records it.
// See docs/controller.md, "Dependency rules".
package ctrl_pkg;

  // Rows [lo, last] of the UB or the ACC, inclusive (an issued command touches
  // at least one row, and last fits 16 bits for memories of up to 2^16 rows).
  typedef struct packed {
    logic        v;
    logic [15:0] lo;
    logic [15:0] last;
  } range_t;

  // The rows a command reads and writes. Which fields an opcode sets:
  //   RHM ub_wr; WHM ub_rd0; RW none; MMC ub_rd0, acc_wr (and acc_rd, the
  //   same rows, when it accumulates); ACT acc_rd, ub_wr; VOP ub_rd0,
  //   ub_rd1 (not for pooling), ub_wr; CFG none.
  typedef struct packed {
    range_t ub_rd0;
    range_t ub_rd1;
    range_t ub_wr;
    range_t acc_rd;
    range_t acc_wr;
  } footprint_t;

endpackage
