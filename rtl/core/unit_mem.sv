// SPDX-License-Identifier: Apache-2.0
// Memory unit: executes RHM (host -> UB) and WHM (UB -> host), one command at
// a time.
//
// Row i of a command moves between UB row a+i and host address c + i*b. With
// b = N the rows are contiguous in host memory and the command is one burst
// request of `count` rows; otherwise it is `count` one-row requests. A wide
// row (the WIDE flag, bf16 and both configurations) is 2N host bytes at
// c + i*b and UB rows a+2i, a+2i+1: a two-row request, or with b = 2N one
// burst of 2*count rows. Read
// rows come back in order into a small FIFO, from which they are written to
// the UB (a write may wait for its bank; the FIFO's ready holds the port's
// read data meanwhile). Write rows are read from the UB through a
// mem_rd_stream and sent in order, only for requests already accepted.
// done_o pulses when a command has completely finished: every RHM row is in
// the UB, every WHM request is acknowledged. A row or acknowledge with the
// error bit pulses fault_o with the command's pc; the unit then requests
// nothing more and writes nothing more into the UB, finishes sending the rows
// of write requests already accepted (the port expects them), and waits for
// the core to flush it.
//
// Every request also carries the command's whole host span, [first, last]
// (last has a 65th bit for a span that wraps past 2^64 - 1), which the
// device checks against the command's DMA windows (core_dma_bridge).
`include "tpu_macros.svh"

module unit_mem #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW    = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter int unsigned RowsW  = 24,
  parameter int unsigned InDepth = 4,   // RHM rows waiting for the UB
  localparam int unsigned UbAddrW = $clog2(UbRows)
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
  // ---- memory port ----
  output logic                       req_valid_o,
  input  logic                       req_ready_i,
  output logic                       req_write_o,
  output logic [63:0]                req_addr_o,
  output logic [RowsW-1:0]           req_rows_o,
  output logic [63:0]                req_first_o,
  output logic [64:0]                req_last_o,
  input  logic                       rd_valid_i,
  output logic                       rd_ready_o,
  input  logic [N-1:0][7:0]          rd_data_i,
  input  logic                       rd_err_i,
  output logic                       wr_valid_o,
  input  logic                       wr_ready_i,
  output logic [N-1:0][7:0]          wr_data_o,
  input  logic                       wr_ack_valid_i,
  input  logic                       wr_ack_err_i,
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

  logic                active_q, active_d, write_q, burst_q, wide_q;
  logic                faulted_q, faulted_d;
  logic [15:0]         count_q;
  logic [15:0]         req_rows_q, req_rows_d;   // rows covered by accepted requests
  logic [15:0]         reqs_q, reqs_d;           // requests accepted (writes: to count acks)
  logic [15:0]         moved_q, moved_d;         // rows written into the UB / sent as write data
  logic [15:0]         asked_q, asked_d;         // WHM: UB rows asked for
  logic [15:0]         arrived_q, arrived_d;     // RHM: rows the port delivered
  logic [15:0]         acks_q, acks_d;
  logic [UbAddrW-1:0]  ub_base_q;
  logic [63:0]         addr_q, addr_d, stride_q;
  logic [PcW-1:0]      pc_q;
  logic                start, req_fire, rd_fire, wr_fire, ub_wr_fire, finished, last_ack;
  logic                offered_q;   // a request is on the port, not yet taken

  assign cmd_ready_o = !active_q;
  assign start       = cmd_valid_i && cmd_ready_o;

  // Requests: one burst, or one per row. An offered request stays offered,
  // even after a fault, until the port takes it.
  assign req_valid_o = active_q && (req_rows_q != count_q) && (!faulted_q || offered_q);
  assign req_write_o = write_q;
  assign req_addr_o  = addr_q;
  assign req_rows_o  = burst_q ? RowsW'(count_q) : wide_q ? RowsW'(2) : RowsW'(1);
  assign req_fire    = req_valid_o && req_ready_i;

  // Write data: UB row by row, only for rows already requested.
  logic ub_addr_valid, ub_addr_ready, ub_addr_fire, ub_data_valid, unused_user;
  assign ub_addr_valid = active_q && write_q && (asked_q != req_rows_q);
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
    .data_valid_o(ub_data_valid),
    .data_ready_i(wr_ready_i),
    .data_o      (wr_data_o),
    .data_user_o (unused_user)
  );

  assign wr_valid_o = ub_data_valid;
  assign wr_fire    = wr_valid_o && wr_ready_i;

  // Read data: checked as it arrives, then queued for the UB. After a fault
  // nothing more enters the queue; rows already queued still land.
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

  assign last_ack   = wr_ack_valid_i && (acks_q + 16'd1 == reqs_q) && (req_rows_q == count_q);
  assign finished   = active_q && !faulted_q && !fault_o &&
                      (write_q ? last_ack : ub_wr_fire && (moved_q + 16'd1 == count_q));
  assign done_o     = finished;
  assign fault_o    = !faulted_q && ((rd_fire && rd_err_i) || (wr_ack_valid_i && wr_ack_err_i));
  assign fault_pc_o = pc_q;
  assign waiting_o  = active_q && (write_q ? acks_q != reqs_q : arrived_q != req_rows_q);

  always_comb begin
    req_rows_d = req_rows_q + (req_fire ? 16'(req_rows_o) : 16'd0);
    reqs_d     = reqs_q + 16'(req_fire);
    moved_d    = moved_q + (write_q ? 16'(wr_fire) : 16'(ub_wr_fire));
    asked_d    = asked_q + 16'(ub_addr_fire);
    arrived_d  = arrived_q + 16'(rd_fire);
    acks_d     = acks_q + 16'(wr_ack_valid_i);
    addr_d     = req_fire ? addr_q + stride_q : addr_q;
    faulted_d  = faulted_q || fault_o;
    active_d   = active_q && !finished;
    if (start) begin
      active_d   = 1'b1;
      req_rows_d = '0;
      reqs_d     = '0;
      moved_d    = '0;
      asked_d    = '0;
      arrived_d  = '0;
      acks_d     = '0;
      addr_d     = cmd_i.ins.c;
      faulted_d  = 1'b0;
    end
    if (flush_i) begin
      active_d  = 1'b0;
      faulted_d = 1'b0;
    end
  end

  `FF(active_q, active_d, 1'b0)
  `FF(offered_q, req_valid_o && !req_ready_i && !flush_i, 1'b0)
  `FF(faulted_q, faulted_d, 1'b0)
  `FF(req_rows_q, req_rows_d, '0)
  `FF(reqs_q, reqs_d, '0)
  `FF(moved_q, moved_d, '0)
  `FF(asked_q, asked_d, '0)
  `FF(arrived_q, arrived_d, '0)
  `FF(acks_q, acks_d, '0)
  `FFNR(addr_q, addr_d)
  `FFLNR(write_q, cmd_i.ins.op == tpu_isa_pkg::OpWhm, start)
  // UB rows moved: two per wide row (the controller's range check keeps
  // 2*count within the UB's rows).
  logic start_wide;
  assign start_wide = cmd_i.ins.flags[tpu_isa_pkg::FlagRhmWide];
  `FFLNR(wide_q, start_wide, start)
  `FFLNR(burst_q, cmd_i.ins.b == (start_wide ? 16'(2 * N) : 16'(N)), start)
  `FFLNR(count_q, start_wide ? cmd_i.ins.count << 1 : cmd_i.ins.count, start)
  `FFLNR(ub_base_q, cmd_i.ins.a[UbAddrW-1:0], start)
  `FFLNR(stride_q, 64'(cmd_i.ins.b), start)
  `FFLNR(pc_q, cmd_i.pc[PcW-1:0], start)

  // Host span: row i at c + i*b, so the last byte is c + (count-1)*b + N-1
  // (2N-1 for wide rows).
  logic [31:0] span_extent;
  assign span_extent = (32'(cmd_i.ins.count) - 32'd1) * 32'(cmd_i.ins.b) +
                       (start_wide ? 32'(2 * N - 1) : 32'(N - 1));
  `FFLNR(req_first_o, cmd_i.ins.c, start)
  `FFLNR(req_last_o, {1'b0, cmd_i.ins.c} + 65'(span_extent), start)

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.pc, cmd_i.ins.flags[7:1], cmd_i.ins.a};

  `ASSERT(MemCmdIsRhmOrWhm, cmd_valid_i |-> (cmd_i.ins.op == tpu_isa_pkg::OpRhm) ||
                                            (cmd_i.ins.op == tpu_isa_pkg::OpWhm))
  `ASSERT(ReadsOnlyWhenReading, rd_valid_i |-> active_q && !write_q)

endmodule
