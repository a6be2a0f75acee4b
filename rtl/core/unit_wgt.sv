// Weight unit: executes RW. Reads count*N weight rows from host memory into
// the weight FIFO, which feeds the MXU's weight port tile after tile.
//
// Row r of tile t comes from host address c + (t*N + r)*b. A read is only
// requested when the FIFO has room for it and every read already in flight,
// so responses never wait. done_o pulses when the command's last row is in
// the FIFO. Faults behave as in unit_mem.
`include "tpu_macros.svh"

module unit_wgt #(
  parameter int unsigned N         = tpu_pkg::ArrayN,
  parameter int unsigned FifoTiles = 4,
  parameter int unsigned PcW       = 10,
  localparam int unsigned FifoRows = FifoTiles * N,
  localparam int unsigned CntW     = $clog2(FifoRows + 1)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 flush_i,
  // ---- commands ----
  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  tpu_isa_pkg::instr_t  cmd_i,
  input  logic [PcW-1:0]       cmd_pc_i,
  output logic                 done_o,
  output logic                 fault_o,
  output logic [PcW-1:0]       fault_pc_o,
  output logic                 waiting_o,
  // ---- memory port (reads only) ----
  output logic                 req_valid_o,
  input  logic                 req_ready_i,
  output logic [63:0]          req_addr_o,
  input  logic                 rsp_valid_i,
  output logic                 rsp_ready_o,
  input  logic [N-1:0][7:0]    rsp_rdata_i,
  input  logic                 rsp_err_i,
  // ---- MXU weight port ----
  output logic                 wgt_valid_o,
  input  logic                 wgt_ready_i,
  output logic [N-1:0][7:0]    wgt_row_o
);

  localparam int unsigned RowsW = 16 + $clog2(N);

  logic               active_q, active_d, faulted_q, faulted_d;
  logic [RowsW-1:0]   total_q, sent_q, sent_d, recv_q, recv_d;
  logic [63:0]        addr_q, addr_d, stride_q;
  logic [PcW-1:0]     pc_q;
  logic [CntW-1:0]    inflight_q, inflight_d, fifo_count;
  logic               start, req_fire, rsp_fire, finished, fifo_push, fifo_ready, room;
  logic               unused_fifo_ready;

  assign cmd_ready_o = !active_q;
  assign start       = cmd_valid_i && cmd_ready_o;

  // Room for one more row after everything in flight has landed.
  assign room        = (32'(fifo_count) + 32'(inflight_q)) < FifoRows;
  assign req_valid_o = active_q && !faulted_q && (sent_q != total_q) && room;
  assign req_addr_o  = addr_q;
  assign req_fire    = req_valid_o && req_ready_i;

  assign rsp_ready_o = 1'b1;
  assign rsp_fire    = rsp_valid_i && rsp_ready_o;
  assign fifo_push   = rsp_fire && !rsp_err_i && !faulted_q;

  assign finished   = active_q && !faulted_q && (recv_d == total_q);
  assign done_o     = finished;
  assign fault_o    = rsp_fire && rsp_err_i && !faulted_q;
  assign fault_pc_o = pc_q;
  assign waiting_o  = inflight_q != '0;

  always_comb begin
    sent_d     = sent_q + RowsW'(req_fire);
    recv_d     = recv_q + RowsW'(rsp_fire);
    addr_d     = req_fire ? addr_q + stride_q : addr_q;
    inflight_d = inflight_q + CntW'(req_fire) - CntW'(rsp_fire);
    faulted_d  = faulted_q || fault_o;
    active_d   = active_q && !finished;
    if (start) begin
      active_d  = 1'b1;
      sent_d    = '0;
      recv_d    = '0;
      addr_d    = cmd_i.c;
      faulted_d = 1'b0;
    end
    if (flush_i) begin
      active_d   = 1'b0;
      faulted_d  = 1'b0;
      inflight_d = '0;
    end
  end

  `FF(active_q, active_d, 1'b0)
  `FF(faulted_q, faulted_d, 1'b0)
  `FF(sent_q, sent_d, '0)
  `FF(recv_q, recv_d, '0)
  `FF(inflight_q, inflight_d, '0)
  `FFNR(addr_q, addr_d)
  `FFLNR(total_q, RowsW'(cmd_i.count) * RowsW'(N), start)
  `FFLNR(stride_q, 64'(cmd_i.b), start)
  `FFLNR(pc_q, cmd_pc_i, start)

  // The FIFO is cleared by a flush along with the rest of the unit.
  stream_fifo #(
    .Width(N * 8),
    .Depth(FifoRows)
  ) u_fifo (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(fifo_push),
    .ready_o(fifo_ready),
    .data_i (rsp_rdata_i),
    .valid_o(wgt_valid_o),
    .ready_i(wgt_ready_i),
    .data_o (wgt_row_o),
    .count_o(fifo_count)
  );
  assign unused_fifo_ready = fifo_ready;

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.op, cmd_i.flags, cmd_i.a};

  `ASSERT(WgtFifoNeverFull, fifo_push |-> fifo_ready)

endmodule
