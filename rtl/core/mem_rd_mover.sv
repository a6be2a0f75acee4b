// SPDX-License-Identifier: Apache-2.0
// The memory unit's read side: one RHM (host -> UB) at a time.
//
// Row i of the command comes from host address c + i*b and goes to UB row
// a+i. With b = N the rows are contiguous in host memory and the command is
// one burst request of `count` rows; otherwise it is `count` one-row
// requests. A wide row (the WIDE flag, bf16 and both configurations) is 2N
// host bytes at c + i*b into UB rows a+2i, a+2i+1: a two-row request, or with
// b = 2N one burst of 2*count rows. Rows come back in request order into a
// small FIFO, from which they are written to the UB (a write may wait for its
// bank; the FIFO's ready holds the port's read data meanwhile).
//
// done_o pulses when every row is in the UB. A row with the error bit pulses
// fault_o with the command's pc; after a fault here or stop_i (a fault of
// the write side) the mover requests nothing more and lets nothing more into
// the FIFO (rows already queued still land), and waits for the flush.
// A request offered to the port stays offered until the port takes it.
`include "tpu_macros.svh"

module mem_rd_mover #(
  parameter int unsigned N       = tpu_pkg::ArrayN,
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW     = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter int unsigned RowsW   = 24,
  parameter int unsigned InDepth = 4,   // rows waiting for the UB
  localparam int unsigned UbAddrW = $clog2(UbRows)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  input  logic                       stop_i,      // the other side faulted
  // ---- command ----
  input  logic                       start_i,
  input  core_pkg::unit_cmd_t        cmd_i,       // an RHM
  input  logic [63:0]                first_i,     // its host span
  input  logic [64:0]                last_i,
  output logic                       busy_o,
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic                       waiting_o,   // requested rows not yet returned
  // ---- memory port (reads) ----
  output logic                       req_valid_o,
  input  logic                       req_ready_i,
  output logic [63:0]                req_addr_o,
  output logic [RowsW-1:0]           req_rows_o,
  output logic [63:0]                req_first_o,
  output logic [64:0]                req_last_o,
  input  logic                       rd_valid_i,
  output logic                       rd_ready_o,
  input  logic [N-1:0][7:0]          rd_data_i,
  input  logic                       rd_err_i,
  // ---- unified buffer write port ----
  output logic                       ub_wr_valid_o,
  input  logic                       ub_wr_ready_i,
  output logic [UbAddrW-1:0]         ub_wr_addr_o,
  output logic [N-1:0][7:0]          ub_wr_data_o
);

  logic                active_q, active_d, burst_q, wide_q, faulted_q, faulted_d;
  logic                offered_q;   // a request is on the port, not yet taken
  logic [15:0]         count_q;     // UB rows of the command
  logic [15:0]         req_rows_q, req_rows_d;   // rows covered by accepted requests
  logic [15:0]         arrived_q, arrived_d;     // rows the port delivered
  logic [15:0]         moved_q, moved_d;         // rows written into the UB
  logic [UbAddrW-1:0]  ub_base_q;
  logic [63:0]         addr_q, addr_d, stride_q;
  logic [PcW-1:0]      pc_q;
  logic                req_fire, rd_fire, ub_wr_fire, finished;

  assign busy_o = active_q;

  // left_q: rows not yet requested (req_rows_q != count_q, registered; a
  // command has at least one row).
  logic left_q;
  assign req_valid_o = active_q && left_q && (!faulted_q || offered_q);
  assign req_addr_o  = addr_q;
  assign req_rows_o  = burst_q ? RowsW'(count_q) : wide_q ? RowsW'(2) : RowsW'(1);
  assign req_fire    = req_valid_o && req_ready_i;

  // Rows are checked as they arrive, then queued for the UB.
  logic in_ready, in_valid;
  logic [$clog2(InDepth+1)-1:0] unused_in_count;
  assign rd_ready_o = in_ready;
  assign rd_fire    = rd_valid_i && rd_ready_o;

  stream_fifo #(
    .Width(N * 8),
    .Depth(InDepth)
  ) u_in (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(rd_fire && !rd_err_i && !faulted_q),
    .ready_o(in_ready),
    .data_i (rd_data_i),
    .valid_o(in_valid),
    .ready_i(ub_wr_ready_i),
    .data_o (ub_wr_data_o),
    .count_o(unused_in_count)
  );

  assign ub_wr_valid_o = in_valid;
  assign ub_wr_addr_o  = ub_base_q + UbAddrW'(moved_q);
  assign ub_wr_fire    = ub_wr_valid_o && ub_wr_ready_i;

  assign finished   = active_q && !faulted_q && !fault_o && ub_wr_fire && (moved_q + 16'd1 == count_q);
  assign done_o     = finished;
  assign fault_o    = !faulted_q && rd_fire && rd_err_i;
  assign fault_pc_o = pc_q;
  assign waiting_o  = active_q && (arrived_q != req_rows_q);

  always_comb begin
    req_rows_d = req_rows_q + (req_fire ? 16'(req_rows_o) : 16'd0);
    arrived_d  = arrived_q + 16'(rd_fire);
    moved_d    = moved_q + 16'(ub_wr_fire);
    addr_d     = req_fire ? addr_q + stride_q : addr_q;
    faulted_d  = faulted_q || fault_o || stop_i;
    active_d   = active_q && !finished;
    if (start_i) begin
      active_d   = 1'b1;
      req_rows_d = '0;
      arrived_d  = '0;
      moved_d    = '0;
      addr_d     = cmd_i.ins.c;
    end
    if (flush_i) begin
      active_d  = 1'b0;
      faulted_d = 1'b0;
    end
  end

  `FF(active_q, active_d, 1'b0)
  // Whether the offered request is the last, from registers only, so that
  // the port's ready only selects.
  logic last_req;
  assign last_req = req_rows_q + 16'(req_rows_o) == count_q;
  `FF(left_q, start_i || (left_q && !(req_fire && last_req)), 1'b0)
  `FF(offered_q, req_valid_o && !req_ready_i && !flush_i, 1'b0)
  `FF(faulted_q, faulted_d, 1'b0)
  `FF(req_rows_q, req_rows_d, '0)
  `FF(arrived_q, arrived_d, '0)
  `FF(moved_q, moved_d, '0)
  `FFNR(addr_q, addr_d)
  // UB rows moved: two per wide row (the controller's range check keeps
  // 2*count within the UB's rows).
  logic start_wide;
  assign start_wide = cmd_i.ins.flags[tpu_isa_pkg::FlagRhmWide];
  `FFLNR(wide_q, start_wide, start_i)
  `FFLNR(burst_q, cmd_i.ins.b == (start_wide ? 16'(2 * N) : 16'(N)), start_i)
  `FFLNR(count_q, start_wide ? cmd_i.ins.count << 1 : cmd_i.ins.count, start_i)
  `FFLNR(ub_base_q, cmd_i.ins.a[UbAddrW-1:0], start_i)
  `FFLNR(stride_q, 64'(cmd_i.ins.b), start_i)
  `FFLNR(pc_q, cmd_i.pc[PcW-1:0], start_i)
  `FFLNR(req_first_o, first_i, start_i)
  `FFLNR(req_last_o, last_i, start_i)

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.pc, cmd_i.ins.op, cmd_i.ins.flags, cmd_i.ins.a};

  `ASSERT(RdMoverTakesRhm, start_i |-> cmd_i.ins.op == tpu_isa_pkg::OpRhm && !active_q)
  `ASSERT(ReadsOnlyWhenActive, rd_valid_i |-> active_q)

endmodule
