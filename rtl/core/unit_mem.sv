// SPDX-License-Identifier: Apache-2.0
// Memory unit: executes RHM (host -> UB) and WHM (UB -> host).
//
// Reads and writes have their own side: mem_rd_mover runs one RHM at a time,
// mem_wr_mover sends one WHM at a time and may hold the one before it while
// that one waits for its acknowledges, so an RHM can run while a WHM does, as
// the link's two directions allow. Commands arrive in program order into a
// one-entry stage, which computes the command's UB range and host span; from
// there a command starts on its side when that side is free and, if the
// other side is still moving, neither its UB rows nor its host bytes overlap
// the other side's (an RHM may not overtake a WHM of the same rows or bytes,
// nor a WHM an RHM). The controller's scoreboard sees one unit in order:
// done_o reports the commands' completions in the order they arrived (a
// younger command that finishes first waits for the older's report).
//
// A fault pulses fault_o once with the faulting command's pc, in program
// order: a younger command's fault waits while an older command still
// moves, and if the older one faults too, its fault is the one reported.
// A reported fault stops both sides; the unit then starts nothing and waits
// for the core's flush.
//
// Every request also carries the command's whole host span, [first, last]
// (last has a 65th bit for a span that wraps past 2^64 - 1), which the
// device checks against the command's DMA windows (core_dma_bridge). The two
// sides share the port's request channel, round-robin; an offered request
// keeps its side until the port takes it.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module unit_mem #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW    = $clog2(tpu_pkg::Cfg.imem_depth),
  localparam int unsigned UbAddrW = $clog2(UbRows),
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  // ---- commands ----
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  core_pkg::unit_cmd_t        cmd_i,
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic                       waiting_o,   // accepted rows not yet returned
  // ---- the RHM's progress (mem_rd_mover) ----
  output logic                       rhm_fill_o,
  output logic [UbAddrW-1:0]         rhm_fill_lo_o,
  output logic [UbAddrW-1:0]         rhm_fill_last_o,
  output logic [UbAddrW:0]           rhm_fill_rows_o,
  // ---- the UB rows the vector unit's command in progress writes (a WHM
  //      may follow it: a row is read once it is written) ----
  input  logic                       vpu_fill_i,
  input  logic [UbAddrW-1:0]         vpu_fill_next_i,
  input  logic [UbAddrW:0]           vpu_fill_end_i,
  // ---- memory port ----
  output mem_req_t                   mem_req_o,
  input  mem_rsp_t                   mem_rsp_i,
  // ---- unified buffer (a read port and a write port of tpu_ub) ----
  output logic                       ub_rd_req_valid_o,
  input  logic                       ub_rd_req_ready_i,
  output logic [UbAddrW-1:0]         ub_rd_req_addr_o,
  input  logic                       ub_rd_rsp_valid_i,
  input  logic [N-1:0][7:0]          ub_rd_rsp_data_i,
  output logic                       ub_wr_valid_o,
  input  logic                       ub_wr_ready_i,
  output logic [UbAddrW-1:0]         ub_wr_addr_o,
  output logic [N-1:0][7:0]          ub_wr_data_o
);

  localparam bit Rd = 1'b0, Wr = 1'b1;

  // ---- the stage: the next command, its UB range and host span ----------------
  core_pkg::mem_cmd_t   pend_q;
  logic                 pend_valid_q, pend_write_q, pend_burst_q;
  logic [UbAddrW-1:0]   pend_ub_lo_q, pend_ub_last_q;
  logic                 accept, dispatch, faulted_q, hazard;

  logic [1:0]           side_busy, side_done, side_fault, side_waiting;
  logic [1:0][PcW-1:0]  side_pc;
  logic [1:0][UbAddrW-1:0] side_ub_lo_q, side_ub_last_q;
  mem_req_t [1:0]       side_req;   // each side's port: reads (Rd), writes (Wr)
  mem_rsp_t [1:0]       side_rsp;

  assign cmd_ready_o = (!pend_valid_q || dispatch) && !faulted_q;
  assign accept      = cmd_valid_i && cmd_ready_o;

  // The command's rows: two UB rows per wide row. Host bytes: row i at
  // c + i*b, so the last byte is c + (count-1)*b + N-1 (2N-1 for wide rows).
  logic        cmd_wide;
  logic [UbAddrW-1:0] cmd_ub_rows;
  logic [31:0] cmd_extent;
  assign cmd_wide    = cmd_i.ins.flags[tpu_isa_pkg::FlagRhmWide];
  assign cmd_ub_rows = UbAddrW'(cmd_wide ? cmd_i.ins.count << 1 : cmd_i.ins.count);
  assign cmd_extent  = (32'(cmd_i.ins.count) - 32'd1) * 32'(cmd_i.ins.b) +
                       (cmd_wide ? 32'(2 * N - 1) : 32'(N - 1));

  `FF(pend_valid_q, (pend_valid_q && !dispatch || accept) && !flush_i, 1'b0)
  `FFLNR(pend_q, '{cmd: cmd_i, first: cmd_i.ins.c, last: {1'b0, cmd_i.ins.c} + 65'(cmd_extent)},
         accept)
  `FFLNR(pend_write_q, cmd_i.ins.op == tpu_isa_pkg::OpWhm, accept)
  `FFLNR(pend_burst_q, core_pkg::mem_burst(cmd_i.ins.b, cmd_wide, N), accept)
  `FFLNR(pend_ub_lo_q, cmd_i.ins.a[UbAddrW-1:0], accept)
  `FFLNR(pend_ub_last_q, cmd_i.ins.a[UbAddrW-1:0] + cmd_ub_rows - UbAddrW'(1), accept)

  // ---- start: the command's side is free, and no overlap with the other -----
  // The staged command is compared with each side's command in the cycle
  // after it is staged and the result registered (checked_q), which keeps
  // the 65-bit comparisons out of the start path. A side's command changes
  // only when the staged one starts, so the result stays valid while the
  // command waits. Written with < only, as in the scoreboard.
  logic       pend_side, checked_q;
  logic [1:0] overlap, overlap_q;
  assign pend_side = pend_write_q;
  always_comb begin
    for (int s = 0; s < 2; s++)
      overlap[s] = (!(side_ub_last_q[s] < pend_ub_lo_q) && !(pend_ub_last_q < side_ub_lo_q[s])) ||
                   (!(side_req[s].req.last < {1'b0, pend_q.first}) &&
                    !(pend_q.last < {1'b0, side_req[s].req.first}));
  end
  // Only a command still moving matters: one that finished but waits to
  // report has no effect left to order against. The write side may hold two
  // WHMs (wr_pending); the range registers are the newer one's, so an RHM
  // waits while there are two.
  logic [1:0] wr_pending;
  // A WHM of one request per row (host rows apart) waits while the vector
  // unit still has rows of it to write: each request waits at the port for
  // the previous one's row, and would hold the port, and the weight unit's
  // reads behind it, until the vector unit writes that row. A contiguous WHM
  // is one burst request, which the port takes at once: it follows the
  // writes row by row (mem_wr_mover).
  logic vpu_owes;

  // Registered like the overlaps (a command starts no sooner than the cycle
  // after it is staged): the rows left to write only shrink while a WHM
  // waits here (a vector command that starts later and writes its rows is
  // younger, and waits for it), so a value a cycle old only delays it.
  logic vpu_owes_q;
  always_comb begin
    vpu_owes = 1'b0;
    if (pend_valid_q && pend_write_q && !pend_burst_q && vpu_fill_i)
      vpu_owes = {1'b0, pend_ub_lo_q} < vpu_fill_end_i && !(pend_ub_last_q < vpu_fill_next_i);
  end
  `FF(vpu_owes_q, vpu_owes && !flush_i, 1'b0)

  always_comb begin
    if (pend_side == Rd) hazard = wr_pending != '0 && (overlap_q[Wr] || wr_pending == 2'd2);
    else                 hazard = (side_busy[Rd] && overlap_q[Rd]) || vpu_owes_q;
  end

  // Commands started and not yet reported: at most one RHM and two WHMs. A
  // side finishes its commands in order, so per side a count of the finished
  // ones (fin) says which have; rank is the number of open WHMs older than
  // the open RHM.
  logic       rd_open_q, rd_fin_q, rd_fin_now, rd_first, side_free;
  logic       report_rd, report_wr, rd_open_d, rd_fin_d;
  logic [1:0] wr_open_q, wr_fin_q, wr_fin_now, rank_q, wr_open_d, wr_fin_d, rank_d;
  assign side_free = pend_side == Rd ? !rd_open_q : (wr_open_q != 2'd2 && !side_busy[Wr]);
  assign dispatch  = pend_valid_q && checked_q && side_free && !hazard && !faulted_q && !flush_i;

  `FF(checked_q, pend_valid_q && !dispatch && !flush_i, 1'b0)
  `FFNR(overlap_q, overlap)

  // done_o reports the oldest open command once it has finished (now or
  // before). The RHM is the oldest when no WHM older than it is still open;
  // rd_first: every WHM older than the RHM has finished.
  assign rd_fin_now = rd_fin_q || side_done[Rd];
  assign wr_fin_now = wr_fin_q + 2'(side_done[Wr]);
  assign rd_first   = rd_open_q && rank_q <= wr_fin_now;
  assign report_rd  = rd_open_q && rank_q == '0 && rd_fin_now;
  assign report_wr  = !(rd_open_q && rank_q == '0) && wr_open_q != '0 && wr_fin_now != '0;
  assign done_o     = report_rd || report_wr;

  always_comb begin
    rd_open_d = (rd_open_q && !report_rd) || (dispatch && pend_side == Rd);
    rd_fin_d  = rd_fin_now && !report_rd;
    wr_open_d = wr_open_q - 2'(report_wr) + 2'(dispatch && pend_side == Wr);
    wr_fin_d  = wr_fin_now - 2'(report_wr);
    rank_d    = rank_q;
    if (dispatch && pend_side == Rd) rank_d = wr_open_q - 2'(report_wr);
    else if (report_wr && rank_q != '0) rank_d = rank_q - 2'd1;
    if (flush_i) begin
      rd_open_d = 1'b0;
      rd_fin_d  = 1'b0;
      wr_open_d = '0;
      wr_fin_d  = '0;
      rank_d    = '0;
    end
  end

  `FF(rd_open_q, rd_open_d, 1'b0)
  `FF(rd_fin_q, rd_fin_d, 1'b0)
  `FF(wr_open_q, wr_open_d, '0)
  `FF(wr_fin_q, wr_fin_d, '0)
  `FF(rank_q, rank_d, '0)
  `FFLNR(side_ub_lo_q[Rd], pend_ub_lo_q, dispatch && pend_side == Rd)
  `FFLNR(side_ub_last_q[Rd], pend_ub_last_q, dispatch && pend_side == Rd)
  `FFLNR(side_ub_lo_q[Wr], pend_ub_lo_q, dispatch && pend_side == Wr)
  `FFLNR(side_ub_last_q[Wr], pend_ub_last_q, dispatch && pend_side == Wr)

  // ---- faults ---------------------------------------------------------------
  // Reported in program order. A side's fault belongs to its oldest
  // unfinished command, and each side faults at most once before the flush
  // (it then requests nothing more), so a fault is held (flt_q) until
  // nothing older still moves: a fault of the WHM waits while an older RHM
  // moves, an RHM's while an older WHM does. If the older command faults
  // too, its fault is the one reported.
  logic [1:0]           flt_q, flt;
  logic [1:0][PcW-1:0]  flt_pc_q, flt_pc;
  logic                 fault_side, fault_go;
  always_comb begin
    for (int s = 0; s < 2; s++) begin
      flt[s]    = flt_q[s] || side_fault[s];
      flt_pc[s] = side_fault[s] ? side_pc[s] : flt_pc_q[s];
    end
    fault_side = Wr;
    fault_go   = 1'b0;
    if (flt[Rd] && flt[Wr]) begin
      fault_side = rd_first ? Rd : Wr;
      fault_go   = 1'b1;
    end else if (flt[Wr]) begin
      fault_go   = !(rd_first && !rd_fin_now);
    end else if (flt[Rd]) begin
      fault_side = Rd;
      fault_go   = rd_first;
    end
  end
  assign fault_o    = fault_go && !faulted_q;
  assign fault_pc_o = flt_pc[fault_side];

  `FF(flt_q, flt & {2{!flush_i}}, '0)
  `FFNR(flt_pc_q, flt_pc)
  `FF(faulted_q, (faulted_q || fault_o) && !flush_i, 1'b0)

  assign waiting_o = |side_waiting;

  // ---- the two sides --------------------------------------------------------
  mem_rd_mover #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW)
  ) u_rd (
    .clk_i,
    .rst_ni,
    .flush_i,
    .stop_i       (faulted_q || fault_o),
    .start_i      (dispatch && pend_side == Rd),
    .cmd_i        (pend_q),
    .busy_o       (side_busy[Rd]),
    .done_o       (side_done[Rd]),
    .fault_o      (side_fault[Rd]),
    .fault_pc_o   (side_pc[Rd]),
    .waiting_o    (side_waiting[Rd]),
    .fill_o       (rhm_fill_o),
    .fill_lo_o    (rhm_fill_lo_o),
    .fill_last_o  (rhm_fill_last_o),
    .fill_rows_o  (rhm_fill_rows_o),
    .mem_req_o    (side_req[Rd]),
    .mem_rsp_i    (side_rsp[Rd]),
    .ub_wr_valid_o,
    .ub_wr_ready_i,
    .ub_wr_addr_o,
    .ub_wr_data_o
  );

  mem_wr_mover #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW)
  ) u_wr (
    .clk_i,
    .rst_ni,
    .flush_i,
    .stop_i       (faulted_q || fault_o),
    .start_i      (dispatch && pend_side == Wr),
    .cmd_i        (pend_q),
    .busy_o       (side_busy[Wr]),
    .pending_o    (wr_pending),
    .done_o       (side_done[Wr]),
    .fault_o      (side_fault[Wr]),
    .fault_pc_o   (side_pc[Wr]),
    .waiting_o    (side_waiting[Wr]),
    .mem_req_o    (side_req[Wr]),
    .mem_rsp_i    (side_rsp[Wr]),
    .ub_rd_req_valid_o,
    .ub_rd_req_ready_i,
    .ub_rd_req_addr_o,
    .ub_rd_rsp_valid_i,
    .ub_rd_rsp_data_i,
    .vpu_fill_i,
    .vpu_fill_next_i,
    .vpu_fill_end_i
  );

  // ---- the port: the request channel round-robin between the sides, the
  //      read channel the read side's, the write channel the write side's ----
  logic sel, unused_held;
  rr2_select u_rr (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i({side_req[Wr].req_valid, side_req[Rd].req_valid}),
    .offer_i(mem_req_o.req_valid),
    .take_i (mem_req_o.req_valid && mem_rsp_i.req_ready),
    .sel_o  (sel),
    .held_o (unused_held)
  );
  // (sel is the side: a request's write bit is its side's, Wr.)
  assign mem_req_o = '{req_valid: side_req[sel].req_valid, req: side_req[sel].req,
                       rd_ready: side_req[Rd].rd_ready, wr_valid: side_req[Wr].wr_valid,
                       wr_data: side_req[Wr].wr_data};
  always_comb begin
    side_rsp                = {2{mem_rsp_i}};
    side_rsp[Rd].req_ready  = mem_rsp_i.req_ready && sel == Rd;
    side_rsp[Wr].req_ready  = mem_rsp_i.req_ready && sel == Wr;
  end

  logic unused_sides;  // each side leaves the other's channel idle
  assign unused_sides = ^{side_req[Rd].wr_valid, side_req[Rd].wr_data, side_req[Wr].rd_ready};

  `ASSERT_IF(MemCmdIsRhmOrWhm, cmd_valid_i,
             (cmd_i.ins.op == tpu_isa_pkg::OpRhm) || (cmd_i.ins.op == tpu_isa_pkg::OpWhm))
  `ASSERT_IF(ReportsOnlyOpenCommands, done_o, rd_open_q || wr_open_q != '0)
  `ASSERT(WritesPendingAreOpen, wr_pending <= wr_open_q)
  `ASSERT(StartsOnlyOnAFreeSide, dispatch -> !side_busy[pend_side])

endmodule
