// SPDX-License-Identifier: Apache-2.0
// Shares the core's memory port between the memory unit (RHM/WHM) and the
// weight unit (RW).
//
// The port moves bursts of rows: a request is {write, address, rows}; read
// data comes back as one beat per row in request order (each with an error
// bit); write data goes out as one beat per row in request order; every write
// request gets one acknowledge (with an error bit). Requests are granted
// round-robin, one per cycle; a FIFO of {requester, rows} routes read data
// home. Only the memory unit writes, so write data and acknowledges pass
// straight through. Read data goes to its owner when the owner is ready
// (rd_ready_i; the weight unit always is, as it only asks for rows it has
// room for); the memory unit's rows wait briefly when its UB bank is busy.
// A request offered to the port is held, same requester and same fields,
// until the port takes it. block_i stops new grants (while the core aborts
// after a fault) but never withdraws an offered request; quiet_o says no
// request is in flight or offered.
// A request's host-span sideband (first, last) passes with it.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module mem_arbiter #(
  parameter int unsigned N           = tpu_pkg::ArrayN,  // bytes per row
  parameter int unsigned Outstanding = tpu_pkg::Cfg.mem_outstanding,  // read requests in flight, at most
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  block_i,
  output logic                  quiet_o,
  // ---- requesters (0: memory unit, 1: weight unit, which only reads) ----
  input  mem_req_t [1:0]        req_i,
  output mem_rsp_t [1:0]        rsp_o,
  // ---- memory port ----
  output mem_req_t              mem_req_o,
  input  mem_rsp_t              mem_rsp_i
);

  localparam int unsigned CntW  = $clog2(Outstanding + 1);
  localparam int unsigned RowsW = core_pkg::MemRowsW;

  logic [1:0]        req_valid, req_ready, rd_valid, rd_ready;
  logic              port_req_valid, port_req_ready, port_req_write;
  logic [RowsW-1:0]  port_req_rows;
  logic              port_rd_valid, port_rd_ready, port_wr_ack_valid;
  for (genvar r = 0; r < 2; r++) begin : gen_requester
    assign req_valid[r] = req_i[r].req_valid;
    assign rd_ready[r]  = req_i[r].rd_ready;
  end
  assign port_req_ready    = mem_rsp_i.req_ready;
  assign port_rd_valid     = mem_rsp_i.rd_valid;
  assign port_wr_ack_valid = mem_rsp_i.wr_ack_valid;

  logic              sel, grant_ok, req_fire, rd_fire;
  logic              held;   // an offered request waits for the port
  logic              ids_ready, ids_valid, head_id;
  logic [RowsW-1:0]  head_rows, head_done_q, head_done_d;
  logic [CntW-1:0]   unused_ids_count;
  logic [15:0]       writes_q, writes_d;  // write requests not yet acknowledged

  // Round robin; an offered request keeps its requester until taken. A held
  // read already had FIFO room (room only grows while it waits).
  rr2_select u_rr (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),
    .valid_i(req_valid),
    .offer_i(port_req_valid),
    .take_i (req_fire),
    .sel_o  (sel),
    .held_o (held)
  );
  assign grant_ok = held || (!block_i && ids_ready);

  assign port_req_valid = held || (grant_ok && |req_valid);
  assign port_req_write = req_i[sel].req.write;
  assign port_req_rows  = req_i[sel].req.rows;
  assign req_fire       = port_req_valid && port_req_ready;
  // Only the memory unit writes: its write channel passes straight through.
  assign mem_req_o = '{req_valid: port_req_valid, req: req_i[sel].req, rd_ready: port_rd_ready,
                       wr_valid: req_i[0].wr_valid, wr_data: req_i[0].wr_data};

  always_comb begin
    req_ready      = '0;
    req_ready[sel] = grant_ok && port_req_ready;
  end

  // Read requests in flight, oldest first: who asked and for how many rows.
  stream_fifo #(
    .Width(1 + RowsW),
    .Depth(Outstanding)
  ) u_ids (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),  // the core flushes only when nothing is in flight
    .valid_i(req_fire && !port_req_write),
    .ready_o(ids_ready),
    .data_i ({sel, port_req_rows}),
    .valid_o(ids_valid),
    .ready_i(rd_fire && (head_done_q + 1'b1 == head_rows)),
    .data_o ({head_id, head_rows}),
    .count_o(unused_ids_count)
  );

  assign port_rd_ready = ids_valid && rd_ready[head_id];
  assign rd_fire       = port_rd_valid && port_rd_ready;

  always_comb begin
    rd_valid          = '0;
    rd_valid[head_id] = rd_fire;
    head_done_d       = head_done_q;
    if (rd_fire) head_done_d = (head_done_q + 1'b1 == head_rows) ? '0 : head_done_q + 1'b1;
  end

  // Read rows to their owner; the write channel's answers to the memory unit.
  always_comb begin
    for (int r = 0; r < 2; r++) begin
      rsp_o[r] = '{req_ready: req_ready[r], rd_valid: rd_valid[r], rd_data: mem_rsp_i.rd_data,
                   rd_err: mem_rsp_i.rd_err, wr_ready: 1'b0, wr_ack_valid: 1'b0, wr_ack_err: 1'b0};
    end
    rsp_o[0].wr_ready     = mem_rsp_i.wr_ready;
    rsp_o[0].wr_ack_valid = mem_rsp_i.wr_ack_valid;
    rsp_o[0].wr_ack_err   = mem_rsp_i.wr_ack_err;
  end

  `FF(head_done_q, head_done_d, '0)

  assign writes_d = writes_q + 16'(req_fire && port_req_write) - 16'(port_wr_ack_valid);
  `FF(writes_q, writes_d, '0)

  assign quiet_o = !ids_valid && (writes_q == '0) && !held;

  `ASSERT(ReadDataHasRequest, port_rd_valid -> ids_valid)
  `ASSERT(AckHasWrite, port_wr_ack_valid -> writes_q != '0)
  `ASSERT_IF(NoEmptyRequest, port_req_valid, port_req_rows != '0)
  `ASSERT(RequestHeld, held -> port_req_valid && sel == $past(sel))

  logic unused_wgt_wr;  // the weight unit's write channel is idle
  assign unused_wgt_wr = ^{req_i[1].wr_valid, req_i[1].wr_data};

endmodule
