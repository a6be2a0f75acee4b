// SPDX-License-Identifier: Apache-2.0
// Scoreboard: the commands in flight per unit and what each waiting command
// still waits for.
//
// Every command issued to a unit (alloc_i) takes the next slot of that unit's
// ring and leaves it when the unit reports it complete (done_i, oldest first).
// In the cycle after its allocation its footprint is compared once with every
// entry of the other units in flight: those are exactly the older commands of
// other units, and no older one can join later. The entries it conflicts with
// (read after write, write after read, write after write; docs/controller.md)
// become its dependency mask; a mask bit clears when its entry completes. The
// command at the head of a unit's queue is held while its mask is not empty,
// and in that first cycle, while its mask is being found. The per-cycle work
// is a mask test per unit, not a range comparison, and the allocation (the
// issue decision) only loads registers.
//
// Per unit only the ranges its opcodes have are kept: memory one UB range
// (read by WHM, written by RHM), weight none, matrix UB read and ACC write,
// vector two UB reads, a UB write and an ACC read. An MMC's ACC read (when it
// accumulates) is the rows it writes and only the matrix unit writes the ACC,
// so no other unit's command can conflict with it: it is not kept. Ranges are
// stored with the memory's address width.
//
// An MMC may start before the RHM it waits for completes: when that RHM is
// its only dependency left and it is the one the memory unit is writing
// (fill_*: its UB rows [lo, last], written in order). The matrix unit then
// asks for each row of it only once it is written (unit_mmc's ld_*), so the
// MMC follows the load row by row. The check is registered (one cycle late):
// a waiting command's mask only loses bits, so a release seen a cycle ago
// still holds.
//
// A WHM may start while the vector command it waits for writes its rows,
// and an ACT while the matrix command it waits for writes its ACC rows: when
// that command is its only dependency left and has started. The memory unit
// (the vector unit) then reads each of those rows once it is written.
//
// Timing: alloc_i, start_i, done_i and clear_i act at the clock edge; hold_o,
// idle_o and full_o come from flops through a mux and an OR. An entry that
// completes in the cycle a command is allocated, or the next, is no
// dependency of it.
`include "tpu_macros.svh"

module ctrl_scoreboard #(
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned AccRows = tpu_pkg::Cfg.acc_rows,
  parameter int unsigned Depth   = 8,   // commands in flight per unit, a power of two
  localparam int unsigned NU     = tpu_isa_pkg::NumUnits
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  logic                   clear_i,      // flush: empty every ring
  // ---- issue ----
  input  logic                   alloc_i,      // a command enters alloc_unit_i's queue
  input  tpu_isa_pkg::unit_e     alloc_unit_i,
  input  ctrl_pkg::footprint_t   alloc_fp_i,
  // ---- units ----
  input  logic [NU-1:0]          start_i,      // a unit took the command at its queue head
  input  logic [NU-1:0]          done_i,       // a unit's oldest command completed
  output logic [NU-1:0]          hold_o,       // the queue head must wait (dependency)
  // ---- the memory unit's RHM in progress ----
  input  logic                   fill_i,       // an RHM is writing the UB
  input  logic [$clog2(UbRows)-1:0] fill_lo_i, // its UB rows [lo, last]
  input  logic [$clog2(UbRows)-1:0] fill_last_i,
  output logic [NU-1:0]          idle_o,       // no command in flight
  output logic [NU-1:0]          full_o        // no slot for another command
);

  import tpu_isa_pkg::UnitMem, tpu_isa_pkg::UnitWgt, tpu_isa_pkg::UnitMmc,
         tpu_isa_pkg::UnitVpu;

  localparam int unsigned PtrW  = $clog2(Depth);
  localparam int unsigned UbAw  = $clog2(UbRows);
  localparam int unsigned AccAw = $clog2(AccRows);

  typedef struct packed {
    logic            v;
    logic [UbAw-1:0] lo;
    logic [UbAw-1:0] last;
  } ub_rng_t;

  typedef struct packed {
    logic             v;
    logic [AccAw-1:0] lo;
    logic [AccAw-1:0] last;
  } acc_rng_t;

  // Written with < only: Yosys builds a <= from a subtraction's carry plus an
  // equality tree, a < from the carry alone.
  function automatic logic ub_ov(ub_rng_t x, ub_rng_t y);
    return x.v && y.v && !(y.last < x.lo) && !(x.last < y.lo);
  endfunction

  function automatic logic acc_ov(acc_rng_t x, acc_rng_t y);
    return x.v && y.v && !(y.last < x.lo) && !(x.last < y.lo);
  endfunction

  // ---------------------------------------------------------------------------
  // The new command, registered: its unit, slot and footprint, narrowed
  // (issued ranges lie inside the memory). It is "pending" for one cycle.
  // ---------------------------------------------------------------------------
  ub_rng_t   n_rd0, n_rd1, n_wr;
  acc_rng_t  n_acc_rd, n_acc_wr;
  logic      pend_q;
  tpu_isa_pkg::unit_e pend_unit_q;
  logic [PtrW-1:0] pend_slot_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) pend_q <= 1'b0;
    else         pend_q <= alloc_i && !clear_i;
  end

  // Meaningful only while pend_q is set.
  always_ff @(posedge clk_i) begin
    if (alloc_i) begin
      pend_unit_q <= alloc_unit_i;
      n_rd0    <= '{v: alloc_fp_i.ub_rd0.v, lo: alloc_fp_i.ub_rd0.lo[UbAw-1:0],
                    last: alloc_fp_i.ub_rd0.last[UbAw-1:0]};
      n_rd1    <= '{v: alloc_fp_i.ub_rd1.v, lo: alloc_fp_i.ub_rd1.lo[UbAw-1:0],
                    last: alloc_fp_i.ub_rd1.last[UbAw-1:0]};
      n_wr     <= '{v: alloc_fp_i.ub_wr.v, lo: alloc_fp_i.ub_wr.lo[UbAw-1:0],
                    last: alloc_fp_i.ub_wr.last[UbAw-1:0]};
      n_acc_rd <= '{v: alloc_fp_i.acc_rd.v, lo: alloc_fp_i.acc_rd.lo[AccAw-1:0],
                    last: alloc_fp_i.acc_rd.last[AccAw-1:0]};
      n_acc_wr <= '{v: alloc_fp_i.acc_wr.v, lo: alloc_fp_i.acc_wr.lo[AccAw-1:0],
                    last: alloc_fp_i.acc_wr.last[AccAw-1:0]};
    end
  end

  // ---------------------------------------------------------------------------
  // Rings: [head, start) started and not complete, [start, tail) in the queue
  // ---------------------------------------------------------------------------
  logic [NU-1:0][Depth-1:0] valid_q, clr, conf, new_dep;
  logic [NU-1:0][PtrW-1:0]  head_q, start_q, tail_q;
  logic [NU-1:0]            alloc, free, started, pend;
  logic [NU-1:0]            alloc_unit, pend_unit;  // the units of the new and the pending command

  assign alloc_unit = NU'(1) << alloc_unit_i;
  assign pend_unit  = NU'(1) << pend_unit_q;

  // The tail slot at allocation, for the pending cycle.
  always_ff @(posedge clk_i) begin
    if (alloc_i) pend_slot_q <= tail_q[alloc_unit_i];
  end

  for (genvar u = 0; u < NU; u++) begin : gen_ring
    assign alloc[u]   = alloc_i && alloc_unit[u] && !clear_i;
    // The command allocated last cycle: its footprint and mask load now.
    assign pend[u]    = pend_q && pend_unit[u] && !clear_i;
    assign free[u]    = done_i[u] && !clear_i;
    assign started[u] = start_i[u] && !clear_i;
    // The entry that completes this cycle.
    assign clr[u]     = free[u] ? Depth'(1) << head_q[u] : '0;
    assign idle_o[u]  = valid_q[u] == '0;
    assign full_o[u]  = valid_q[u][tail_q[u]];

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        valid_q[u] <= '0;
        head_q[u]  <= '0;
        start_q[u] <= '0;
        tail_q[u]  <= '0;
      end else if (clear_i) begin
        valid_q[u] <= '0;
        head_q[u]  <= '0;
        start_q[u] <= '0;
        tail_q[u]  <= '0;
      end else begin
        if (started[u]) start_q[u] <= start_q[u] + 1'b1;
        if (alloc[u]) begin
          valid_q[u][tail_q[u]] <= 1'b1;
          tail_q[u] <= tail_q[u] + 1'b1;
        end
        if (free[u]) begin
          valid_q[u][head_q[u]] <= 1'b0;
          head_q[u] <= head_q[u] + 1'b1;
        end
      end
    end

    // Dependencies of the pending command on this unit's entries: in flight
    // and not completing now, conflicting, and of another unit.
    assign new_dep[u] = pend_unit[u] ? '0 : conf[u] & valid_q[u] & ~clr[u];

    `ASSERT_IF(DoneHasCommand, done_i[u] && !clear_i, valid_q[u][head_q[u]])
    `ASSERT_IF(StartHasCommand, start_i[u] && !clear_i, valid_q[u][start_q[u]])
    `ASSERT(HeldNotStarted, hold_o[u] -> !start_i[u])
    `ASSERT_IF(AllocHasRoom, alloc[u], !full_o[u])
  end

  // ---------------------------------------------------------------------------
  // Footprints, and the new command's conflicts with each entry
  // ---------------------------------------------------------------------------
  // Memory unit: one UB range; written (RHM) or read (WHM).
  // (Packed arrays: flops with an enable each, not a memory to be mapped.)
  ub_rng_t  [Depth-1:0]  mem_ub_q;
  logic     [Depth-1:0]  mem_wr_q;
  // Matrix unit: UB rows read, ACC rows written.
  ub_rng_t  [Depth-1:0]  mmc_ub_q;
  acc_rng_t [Depth-1:0]  mmc_acc_q;
  // Vector unit: UB rows read (two sources), UB rows written, ACC rows read.
  ub_rng_t  [Depth-1:0]  vpu_rd0_q, vpu_rd1_q, vpu_wr_q;
  acc_rng_t [Depth-1:0]  vpu_acc_q;

  // Each slot loads on its own enable (a write at a variable index would
  // synthesize as shifters). Every enable needs pend_q; testing it first lets
  // a model skip the slots in the cycles nothing is pending.
  always_ff @(posedge clk_i) begin
    if (pend_q) begin
      for (int e = 0; e < Depth; e++) begin
        if (pend[UnitMem] && pend_slot_q == PtrW'(e)) begin
          mem_ub_q[e] <= n_wr.v ? n_wr : n_rd0;
          mem_wr_q[e] <= n_wr.v;
        end
        if (pend[UnitMmc] && pend_slot_q == PtrW'(e)) begin
          mmc_ub_q[e]  <= n_rd0;
          mmc_acc_q[e] <= n_acc_wr;
        end
        if (pend[UnitVpu] && pend_slot_q == PtrW'(e)) begin
          vpu_rd0_q[e] <= n_rd0;
          vpu_rd1_q[e] <= n_rd1;
          vpu_wr_q[e]  <= n_wr;
          vpu_acc_q[e] <= n_acc_rd;
        end
      end
    end
  end

  // Only pairs that can meet are compared: a UB range the new command writes
  // against every kept UB range; a UB range it reads against the UB ranges
  // that memory and vector commands write; its ACC read against matrix ACC
  // writes; its ACC write against vector ACC reads. (n_rd1 exists only for a
  // VOP, so not against the vector unit's own writes.) conf is read only
  // while a command is pending; the test of pend_q keeps a simulator's model
  // from comparing 8 entries' ranges in every other cycle.
  always_comb begin
    conf = '0;
    if (pend_q) begin
      for (int e = 0; e < Depth; e++) begin
        conf[UnitMem][e] = ub_ov(n_wr, mem_ub_q[e]) ||
                           (mem_wr_q[e] && (ub_ov(n_rd0, mem_ub_q[e]) || ub_ov(n_rd1, mem_ub_q[e])));
        conf[UnitMmc][e] = ub_ov(n_wr, mmc_ub_q[e]) || acc_ov(n_acc_rd, mmc_acc_q[e]);
        conf[UnitVpu][e] = ub_ov(n_rd0, vpu_wr_q[e]) || ub_ov(n_wr, vpu_rd0_q[e]) ||
                           ub_ov(n_wr, vpu_rd1_q[e]) || ub_ov(n_wr, vpu_wr_q[e]) ||
                           acc_ov(n_acc_wr, vpu_acc_q[e]);
      end
    end
  end

  // ---------------------------------------------------------------------------
  // Dependency masks: entry e of unit u waits for the set bits of its mask
  // on unit v (entries of unit v). Only memory, matrix and vector commands
  // have any. Only a queue head's masks are read: head_dep[u][v] is the mask
  // of unit u's head (slot start_q[u]) on unit v, so that a simulator's model
  // selects 6 masks a cycle rather than assembling all 48 into one vector.
  // ---------------------------------------------------------------------------
  logic [NU-1:0][NU-1:0][Depth-1:0] head_dep;

  // The masks of entries of unit u on entries of unit v, one register per
  // pair of units. Meaningful only while the slot is valid and loaded whole
  // when it is allocated: neither a reset nor the clear is needed. A pair's
  // masks change only when a command of u is pending or one of v completes,
  // so they load only then (a clock enable; a simulator's model does not
  // visit the 48 masks in the other cycles).
  for (genvar u = 0; u < NU; u++) begin : gen_dep_u
    for (genvar v = 0; v < NU; v++) begin : gen_dep_v
      if (u != v && u != UnitWgt && v != UnitWgt) begin : gen_mask
        logic [Depth-1:0][Depth-1:0] mask_q;  // [entry of u]

        always_ff @(posedge clk_i) begin
          if (pend[u] || free[v]) begin
            for (int e = 0; e < Depth; e++) begin
              if (pend[u] && pend_slot_q == PtrW'(e)) mask_q[e] <= new_dep[v];
              else                                   mask_q[e] <= mask_q[e] & ~clr[v];
            end
          end
        end

        assign head_dep[u][v] = mask_q[start_q[u]];
      end else begin : gen_no_mask
        assign head_dep[u][v] = '0;
      end
    end
  end

  // Weight commands have no footprint: nothing depends on them.
  logic unused_wgt_dep;
  assign unused_wgt_dep = ^{new_dep[UnitWgt], pend[UnitWgt]};

  // ---------------------------------------------------------------------------
  // The matrix unit's head on rows an RHM has already written
  // ---------------------------------------------------------------------------
  logic [PtrW-1:0]  mmc_head;
  logic [Depth-1:0] mmc_on_mem;   // the head's dependencies on memory entries
  logic             on_one, on_filling;
  logic             stream_q;     // last cycle: the head at stream_slot_q may start
  logic [PtrW-1:0]  stream_slot_q;

  assign mmc_head   = start_q[UnitMmc];
  assign mmc_on_mem = head_dep[UnitMmc][UnitMem];
  // Exactly one memory entry left, and no vector one.
  assign on_one     = mmc_on_mem != '0 && (mmc_on_mem & (mmc_on_mem - 1'b1)) == '0 &&
                      head_dep[UnitMmc][UnitVpu] == '0;
  // That entry is the RHM being written: a UB write with its range. (Two
  // RHMs of one range both older than the head would both be in its mask.)
  logic [Depth-1:0] filling;
  for (genvar e = 0; e < Depth; e++) begin : gen_filling
    assign filling[e] = mem_wr_q[e] && mem_ub_q[e].lo == fill_lo_i && mem_ub_q[e].last == fill_last_i;
  end
  assign on_filling = fill_i && |(mmc_on_mem & filling);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      stream_q <= 1'b0;
    end else begin
      stream_q <= !clear_i && valid_q[UnitMmc][mmc_head] &&
                  !(pend_q && pend_unit_q == UnitMmc && pend_slot_q == mmc_head) &&
                  on_one && on_filling;
    end
  end
  always_ff @(posedge clk_i) stream_slot_q <= mmc_head;

  // ---------------------------------------------------------------------------
  // The memory unit's head behind the vector command in progress
  // ---------------------------------------------------------------------------
  // A WHM whose only dependency left is the vector unit's oldest command,
  // once that one has started, starts too: the memory unit asks for each row
  // that command writes only once it is written (unit_mem's vpu_fill_*; the
  // vector unit writes its rows in address order). A WHM only reads the UB,
  // so its dependency on that command is a read after write. Every input is
  // a flop's, so the test needs no registered stage as the MMC's does.
  // (Both tests run only for a head that waits on the unit it may follow,
  // so that a simulator's model skips them in the other cycles.)

  // A head's mask on unit v holds only v's oldest command, which has started
  // (the started commands are [head, start) of v's ring).
  function automatic logic on_oldest_started(logic [Depth-1:0] dep, logic [PtrW-1:0] head,
                                             logic [PtrW-1:0] start);
    return dep == (Depth'(1) << head) && start != head;
  endfunction

  logic whm_follows;
  always_comb begin
    whm_follows = 1'b0;
    if (head_dep[UnitMem][UnitVpu] != '0)
      whm_follows = !mem_wr_q[start_q[UnitMem]] && head_dep[UnitMem][UnitMmc] == '0 &&
                    on_oldest_started(head_dep[UnitMem][UnitVpu], head_q[UnitVpu], start_q[UnitVpu]);
  end

  // ---------------------------------------------------------------------------
  // The vector unit's head behind the matrix command in progress
  // ---------------------------------------------------------------------------
  // An ACT whose only dependency left is the matrix unit's oldest command,
  // once that one has started, starts too: the vector unit asks for each ACC
  // row that command writes only once it is readable (unit_vpu's mmc_fill_*;
  // the matrix unit writes a command's rows in order). Not when the head
  // also writes UB rows that command reads (a write after read), so what is
  // left is the ACT's read of the rows the MMC writes.
  logic act_follows;
  always_comb begin
    act_follows = 1'b0;
    if (head_dep[UnitVpu][UnitMmc] != '0)
      act_follows = head_dep[UnitVpu][UnitMem] == '0 &&
                    on_oldest_started(head_dep[UnitVpu][UnitMmc], head_q[UnitMmc], start_q[UnitMmc]) &&
                    !ub_ov(vpu_wr_q[start_q[UnitVpu]], mmc_ub_q[head_q[UnitMmc]]);
  end

  // Only a command waiting in the queue can be held. The slot at start is
  // valid exactly when one waits (start == tail with a valid slot means the
  // ring is full of waiting commands). A pending command is held.
  for (genvar u = 0; u < NU; u++) begin : gen_hold
    logic streams;
    if (u == UnitMmc) begin : gen_stream
      assign streams = stream_q && stream_slot_q == start_q[u];
    end else if (u == UnitMem) begin : gen_follow
      assign streams = whm_follows;
    end else if (u == UnitVpu) begin : gen_follow_mmc
      assign streams = act_follows;
    end else begin : gen_no_stream
      assign streams = 1'b0;
    end
    assign hold_o[u] = valid_q[u][start_q[u]] &&
                       ((head_dep[u] != '0 && !streams) ||
                        (pend_q && pend_unit_q == 2'(u) && pend_slot_q == start_q[u]));
  end
  `COVER(ActFollowsMatrix, valid_q[UnitVpu][start_q[UnitVpu]] && head_dep[UnitVpu] != '0 &&
         act_follows && start_i[UnitVpu])
  `COVER(WhmFollowsVector, valid_q[UnitMem][start_q[UnitMem]] && head_dep[UnitMem] != '0 &&
         whm_follows && start_i[UnitMem])
  `COVER(MmcStreamsBehindRhm, valid_q[UnitMmc][mmc_head] && head_dep[UnitMmc] != '0 &&
         stream_q && stream_slot_q == mmc_head && start_i[UnitMmc])

  // Cover points: a queue head held by a dependency on another unit's
  // command (not only in the cycle its mask is found), per unit that can be.
  `COVER(HazardHeldMem, valid_q[UnitMem][start_q[UnitMem]] && head_dep[UnitMem] != '0)
  `COVER(HazardHeldMmc, valid_q[UnitMmc][start_q[UnitMmc]] && head_dep[UnitMmc] != '0)
  `COVER(HazardHeldVpu, valid_q[UnitVpu][start_q[UnitVpu]] && head_dep[UnitVpu] != '0)

  // The kept fields are every field each unit's opcodes set (ctrl_pkg).
  `ASSERT_IF(MemFootprint, alloc[UnitMem],
             (alloc_fp_i.ub_wr.v != alloc_fp_i.ub_rd0.v) && !alloc_fp_i.ub_rd1.v &&
             !alloc_fp_i.acc_rd.v && !alloc_fp_i.acc_wr.v)
  `ASSERT_IF(WgtFootprint, alloc[UnitWgt], alloc_fp_i == '0)
  `ASSERT_IF(MmcFootprint, alloc[UnitMmc],
             !alloc_fp_i.ub_rd1.v && !alloc_fp_i.ub_wr.v &&
             (!alloc_fp_i.acc_rd.v || alloc_fp_i.acc_rd == alloc_fp_i.acc_wr))
  `ASSERT_IF(VpuFootprint, alloc[UnitVpu], !alloc_fp_i.acc_wr.v)

  if (Depth != (1 << PtrW) || Depth < 2) begin : gen_bad_depth
    $error("ctrl_scoreboard: Depth must be a power of two, at least 2");
  end

endmodule
