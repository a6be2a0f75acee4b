// SPDX-License-Identifier: Apache-2.0
// The memory unit's read side: one RHM (host -> UB) at a time.
//
// Row i of the command comes from host address c + i*b and goes to UB row
// a+i (a wide row, the WIDE flag: 2N host bytes into UB rows a+2i, a+2i+1);
// mem_requests makes the requests. Rows come back in request order into a
// small FIFO, from which they are written to the UB (a write may wait for its
// bank; the FIFO's ready holds the port's read data meanwhile).
//
// done_o pulses when every row is in the UB. Meanwhile fill_o tells which
// rows already are: the RHM's UB rows [fill_lo_o, fill_last_o] are written in
// order, and the first fill_rows_o of them have landed (a matrix unit command
// that reads only those may start before the RHM completes; ctrl_scoreboard).
//
// A row with the error bit pulses fault_o with the command's pc; after a
// fault here or stop_i (a fault of the write side) the mover requests nothing
// more and lets nothing more into the FIFO (rows already queued still land),
// and waits for the flush.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module mem_rd_mover #(
  parameter int unsigned N       = tpu_pkg::ArrayN,
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW     = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter int unsigned InDepth = 4,   // rows waiting for the UB
  localparam int unsigned UbAddrW = $clog2(UbRows),
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  input  logic                       stop_i,      // the other side faulted
  // ---- command ----
  input  logic                       start_i,
  input  core_pkg::mem_cmd_t         cmd_i,       // an RHM and its host span
  output logic                       busy_o,
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic                       waiting_o,   // requested rows not yet returned
  // ---- progress, while the RHM writes the UB and has not faulted ----
  output logic                       fill_o,
  output logic [UbAddrW-1:0]         fill_lo_o,
  output logic [UbAddrW-1:0]         fill_last_o,
  output logic [UbAddrW:0]           fill_rows_o,
  // ---- memory port (reads; its write channel stays idle) ----
  output mem_req_t                   mem_req_o,
  input  mem_rsp_t                   mem_rsp_i,
  // ---- unified buffer write port ----
  output logic                       ub_wr_valid_o,
  input  logic                       ub_wr_ready_i,
  output logic [UbAddrW-1:0]         ub_wr_addr_o,
  output logic [N-1:0][7:0]          ub_wr_data_o
);

  logic                active, faulted;
  logic [15:0]         count, requested;
  logic [15:0]         arrived_q;   // rows the port delivered
  logic [15:0]         moved_q;     // rows written into the UB
  logic [UbAddrW-1:0]  ub_base;
  logic                unused_req_fire, rd_fire, ub_wr_fire;
  logic                req_valid, in_ready;
  core_pkg::mem_burst_t req;

  assign busy_o = active;

  assign mem_req_o = '{req_valid: req_valid, req: req, rd_ready: in_ready, wr_valid: 1'b0,
                       wr_data: '0};

  mem_requests #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW),
    .Write (1'b0)
  ) u_req (
    .clk_i,
    .rst_ni,
    .flush_i,
    .start_i,
    .cmd_i,
    .stop_i,
    .finish_i   (ub_wr_fire && (moved_q + 16'd1 == count)),
    .error_i    (rd_fire && mem_rsp_i.rd_err),
    .active_o   (active),
    .faulted_o  (faulted),
    .done_o,
    .fault_o,
    .count_o    (count),
    .requested_o(requested),
    .ub_base_o  (ub_base),
    .pc_o       (fault_pc_o),
    .req_valid_o(req_valid),
    .req_ready_i(mem_rsp_i.req_ready),
    .req_fire_o (unused_req_fire),
    .req_o      (req)
  );

  // Rows are checked as they arrive, then queued for the UB.
  logic in_valid;
  logic [$clog2(InDepth+1)-1:0] unused_in_count;
  assign rd_fire = mem_rsp_i.rd_valid && in_ready;

  stream_fifo #(
    .Width(N * 8),
    .Depth(InDepth)
  ) u_in (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(rd_fire && !mem_rsp_i.rd_err && !faulted),
    .ready_o(in_ready),
    .data_i (mem_rsp_i.rd_data),
    .valid_o(in_valid),
    .ready_i(ub_wr_ready_i),
    .data_o (ub_wr_data_o),
    .count_o(unused_in_count)
  );

  assign ub_wr_valid_o = in_valid;
  assign ub_wr_addr_o  = ub_base + UbAddrW'(moved_q);
  assign ub_wr_fire    = ub_wr_valid_o && ub_wr_ready_i;

  assign waiting_o = active && (arrived_q != requested);

  // (count and moved_q are at most UbRows: an RHM's rows lie inside the UB)
  assign fill_o      = active && !faulted;
  assign fill_lo_o   = ub_base;
  assign fill_last_o = ub_base + UbAddrW'(count - 16'd1);
  assign fill_rows_o = (UbAddrW + 1)'(moved_q);

  `FF(arrived_q, start_i ? '0 : arrived_q + 16'(rd_fire), '0)
  `FF(moved_q, start_i ? '0 : moved_q + 16'(ub_wr_fire), '0)

  `ASSERT_IF(RdMoverTakesRhm, start_i, cmd_i.cmd.ins.op == tpu_isa_pkg::OpRhm && !active)
  `ASSERT(ReadsOnlyWhenActive, mem_rsp_i.rd_valid -> active)

  logic unused_wr;
  assign unused_wr = ^{mem_rsp_i.wr_ready, mem_rsp_i.wr_ack_valid, mem_rsp_i.wr_ack_err};

endmodule
