// SPDX-License-Identifier: Apache-2.0
// The memory unit's write side: one WHM (UB -> host) at a time.
//
// Row i of the command is UB row a+i and goes to host address c + i*b: one
// burst request of `count` rows when b = N, else one request per row (a wide
// row, the WIDE flag: 2N bytes from UB rows a+2i, a+2i+1, as for RHM). The
// rows are read from the UB through a mem_rd_stream and sent in order, only
// for requests already accepted.
//
// done_o pulses when every request is acknowledged. An acknowledge with the
// error bit pulses fault_o with the command's pc; after a fault here or
// stop_i (a fault of the read side) the mover requests nothing more, finishes
// sending the rows of requests already accepted (the port expects them), and
// waits for the flush. A request offered to the port stays offered until the
// port takes it.
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

  logic                active_q, active_d, burst_q, wide_q, faulted_q, faulted_d;
  logic                offered_q;   // a request is on the port, not yet taken
  logic [15:0]         count_q;     // UB rows of the command
  logic [15:0]         req_rows_q, req_rows_d;   // rows covered by accepted requests
  logic [15:0]         reqs_q, reqs_d;           // requests accepted
  logic [15:0]         asked_q, asked_d;         // UB rows asked for
  logic [15:0]         acks_q, acks_d;
  logic [UbAddrW-1:0]  ub_base_q;
  logic [63:0]         addr_q, addr_d, stride_q;
  logic [PcW-1:0]      pc_q;
  logic                req_fire, finished, last_ack;

  assign busy_o = active_q;

  // left_q: rows not yet requested (req_rows_q != count_q, registered; a
  // command has at least one row).
  logic left_q;
  assign req_valid_o = active_q && left_q && (!faulted_q || offered_q);
  assign req_addr_o  = addr_q;
  assign req_rows_o  = burst_q ? RowsW'(count_q) : wide_q ? RowsW'(2) : RowsW'(1);
  assign req_fire    = req_valid_o && req_ready_i;

  // Write data: UB row by row, only for rows already requested.
  logic ub_addr_valid, ub_addr_ready, ub_addr_fire, unused_user;
  assign ub_addr_valid = active_q && (asked_q != req_rows_q);
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
    .addr_i      (ub_base_q + UbAddrW'(asked_q)),
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

  assign last_ack   = wr_ack_valid_i && (acks_q + 16'd1 == reqs_q) && (req_rows_q == count_q);
  assign finished   = active_q && !faulted_q && !fault_o && last_ack;
  assign done_o     = finished;
  assign fault_o    = !faulted_q && wr_ack_valid_i && wr_ack_err_i;
  assign fault_pc_o = pc_q;
  assign waiting_o  = active_q && (acks_q != reqs_q);

  always_comb begin
    req_rows_d = req_rows_q + (req_fire ? 16'(req_rows_o) : 16'd0);
    reqs_d     = reqs_q + 16'(req_fire);
    asked_d    = asked_q + 16'(ub_addr_fire);
    acks_d     = acks_q + 16'(wr_ack_valid_i);
    addr_d     = req_fire ? addr_q + stride_q : addr_q;
    faulted_d  = faulted_q || fault_o || stop_i;
    active_d   = active_q && !finished;
    if (start_i) begin
      active_d   = 1'b1;
      req_rows_d = '0;
      reqs_d     = '0;
      asked_d    = '0;
      acks_d     = '0;
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
  `FF(reqs_q, reqs_d, '0)
  `FF(asked_q, asked_d, '0)
  `FF(acks_q, acks_d, '0)
  `FFNR(addr_q, addr_d)
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

  `ASSERT(WrMoverTakesWhm, start_i |-> cmd_i.ins.op == tpu_isa_pkg::OpWhm && !active_q)

endmodule
