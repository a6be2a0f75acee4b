// SPDX-License-Identifier: Apache-2.0
// The memory unit's write side: one WHM (UB -> host) at a time.
//
// Row i of the command is UB row a+i and goes to host address c + i*b (a
// wide row, the WIDE flag: 2N bytes from UB rows a+2i, a+2i+1);
// mem_requests makes the requests. The rows are read from the UB through a
// mem_rd_stream and sent in order, only for requests already accepted.
//
// done_o pulses when every request is acknowledged. An acknowledge with the
// error bit pulses fault_o with the command's pc; after a fault here or
// stop_i (a fault of the read side) the mover requests nothing more, finishes
// sending the rows of requests already accepted (the port expects them), and
// waits for the flush.
`include "tpu_macros.svh"

module mem_wr_mover #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW    = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter int unsigned RowsW  = 24,
  localparam int unsigned UbAddrW = $clog2(UbRows)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  input  logic                       stop_i,      // the other side faulted
  // ---- command ----
  input  logic                       start_i,
  input  core_pkg::unit_cmd_t        cmd_i,       // a WHM
  input  logic [63:0]                first_i,     // its host span
  input  logic [64:0]                last_i,
  output logic                       busy_o,
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic                       waiting_o,   // requests not yet acknowledged
  // ---- memory port (writes) ----
  output logic                       req_valid_o,
  input  logic                       req_ready_i,
  output logic [63:0]                req_addr_o,
  output logic [RowsW-1:0]           req_rows_o,
  output logic [63:0]                req_first_o,
  output logic [64:0]                req_last_o,
  output logic                       wr_valid_o,
  input  logic                       wr_ready_i,
  output logic [N-1:0][7:0]          wr_data_o,
  input  logic                       wr_ack_valid_i,
  input  logic                       wr_ack_err_i,
  // ---- unified buffer read port ----
  output logic                       ub_rd_req_valid_o,
  input  logic                       ub_rd_req_ready_i,
  output logic [UbAddrW-1:0]         ub_rd_req_addr_o,
  input  logic                       ub_rd_rsp_valid_i,
  input  logic [N-1:0][7:0]          ub_rd_rsp_data_i
);

  logic                active, unused_faulted;
  logic [15:0]         count, requested;
  logic [15:0]         reqs_q;      // requests accepted
  logic [15:0]         asked_q;     // UB rows asked for
  logic [15:0]         acks_q;
  logic [UbAddrW-1:0]  ub_base;
  logic                req_fire;

  assign busy_o = active;

  mem_requests #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW),
    .RowsW (RowsW)
  ) u_req (
    .clk_i,
    .rst_ni,
    .flush_i,
    .start_i,
    .cmd_i,
    .first_i,
    .last_i,
    .stop_i,
    .finish_i   (wr_ack_valid_i && (acks_q + 16'd1 == reqs_q) && (requested == count)),
    .error_i    (wr_ack_valid_i && wr_ack_err_i),
    .active_o   (active),
    .faulted_o  (unused_faulted),
    .done_o,
    .fault_o,
    .count_o    (count),
    .requested_o(requested),
    .ub_base_o  (ub_base),
    .pc_o       (fault_pc_o),
    .req_valid_o,
    .req_ready_i,
    .req_fire_o (req_fire),
    .req_addr_o,
    .req_rows_o,
    .req_first_o,
    .req_last_o
  );

  // Write data: UB row by row, only for rows already requested.
  logic ub_addr_valid, ub_addr_ready, ub_addr_fire, unused_user;
  assign ub_addr_valid = active && (asked_q != requested);
  assign ub_addr_fire  = ub_addr_valid && ub_addr_ready;

  mem_rd_stream #(
    .AddrW(UbAddrW),
    .DataW(N * 8),
    .UserW(1)
  ) u_ub_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(ub_addr_valid),
    .addr_ready_o(ub_addr_ready),
    .addr_i      (ub_base + UbAddrW'(asked_q)),
    .addr_user_i (1'b0),
    .req_valid_o (ub_rd_req_valid_o),
    .req_ready_i (ub_rd_req_ready_i),
    .req_addr_o  (ub_rd_req_addr_o),
    .rsp_valid_i (ub_rd_rsp_valid_i),
    .rsp_data_i  (ub_rd_rsp_data_i),
    .data_valid_o(wr_valid_o),
    .data_ready_i(wr_ready_i),
    .data_o      (wr_data_o),
    .data_user_o (unused_user)
  );

  assign waiting_o = active && (acks_q != reqs_q);

  `FF(reqs_q, start_i ? '0 : reqs_q + 16'(req_fire), '0)
  `FF(asked_q, start_i ? '0 : asked_q + 16'(ub_addr_fire), '0)
  `FF(acks_q, start_i ? '0 : acks_q + 16'(wr_ack_valid_i), '0)

  `ASSERT(WrMoverTakesWhm, start_i |-> cmd_i.ins.op == tpu_isa_pkg::OpWhm && !active)

endmodule
