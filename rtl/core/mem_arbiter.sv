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

module mem_arbiter #(
  parameter int unsigned DataW       = 128,  // bits per row
  parameter int unsigned RowsW       = 24,   // bits of a request's row count
  parameter int unsigned Outstanding = tpu_pkg::Cfg.mem_outstanding  // read requests in flight, at most
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  block_i,
  output logic                  quiet_o,
  // ---- requesters (0: memory unit, 1: weight unit) ----
  input  logic [1:0]            req_valid_i,
  output logic [1:0]            req_ready_o,
  input  logic [1:0]            req_write_i,
  input  logic [1:0][63:0]      req_addr_i,
  input  logic [1:0][RowsW-1:0] req_rows_i,
  input  logic [1:0][63:0]      req_first_i,
  input  logic [1:0][64:0]      req_last_i,
  output logic [1:0]            rd_valid_o,
  input  logic [1:0]            rd_ready_i,
  output logic [DataW-1:0]      rd_data_o,
  output logic                  rd_err_o,
  // ---- memory port ----
  output logic                  mem_req_valid_o,
  input  logic                  mem_req_ready_i,
  output logic                  mem_req_write_o,
  output logic [63:0]           mem_req_addr_o,
  output logic [RowsW-1:0]      mem_req_rows_o,
  output logic [63:0]           mem_req_first_o,
  output logic [64:0]           mem_req_last_o,
  input  logic                  mem_rd_valid_i,
  output logic                  mem_rd_ready_o,
  input  logic [DataW-1:0]      mem_rd_data_i,
  input  logic                  mem_rd_err_i,
  input  logic                  mem_wr_ack_valid_i
);

  localparam int unsigned CntW = $clog2(Outstanding + 1);

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
    .valid_i(req_valid_i),
    .offer_i(mem_req_valid_o),
    .take_i (req_fire),
    .sel_o  (sel),
    .held_o (held)
  );
  assign grant_ok = held || (!block_i && ids_ready);

  assign mem_req_valid_o = held || (grant_ok && |req_valid_i);
  assign mem_req_write_o = req_write_i[sel];
  assign mem_req_addr_o  = req_addr_i[sel];
  assign mem_req_rows_o  = req_rows_i[sel];
  assign mem_req_first_o = req_first_i[sel];
  assign mem_req_last_o  = req_last_i[sel];
  assign req_fire        = mem_req_valid_o && mem_req_ready_i;

  always_comb begin
    req_ready_o      = '0;
    req_ready_o[sel] = grant_ok && mem_req_ready_i;
  end

  // Read requests in flight, oldest first: who asked and for how many rows.
  stream_fifo #(
    .Width(1 + RowsW),
    .Depth(Outstanding)
  ) u_ids (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),  // the core flushes only when nothing is in flight
    .valid_i(req_fire && !mem_req_write_o),
    .ready_o(ids_ready),
    .data_i ({sel, mem_req_rows_o}),
    .valid_o(ids_valid),
    .ready_i(rd_fire && (head_done_q + 1'b1 == head_rows)),
    .data_o ({head_id, head_rows}),
    .count_o(unused_ids_count)
  );

  assign mem_rd_ready_o = ids_valid && rd_ready_i[head_id];
  assign rd_fire        = mem_rd_valid_i && mem_rd_ready_o;
  assign rd_data_o      = mem_rd_data_i;
  assign rd_err_o       = mem_rd_err_i;

  always_comb begin
    rd_valid_o          = '0;
    rd_valid_o[head_id] = rd_fire;
    head_done_d         = head_done_q;
    if (rd_fire) head_done_d = (head_done_q + 1'b1 == head_rows) ? '0 : head_done_q + 1'b1;
  end

  `FF(head_done_q, head_done_d, '0)

  assign writes_d = writes_q + 16'(req_fire && mem_req_write_o) - 16'(mem_wr_ack_valid_i);
  `FF(writes_q, writes_d, '0)

  assign quiet_o = !ids_valid && (writes_q == '0) && !held;

  `ASSERT(ReadDataHasRequest, mem_rd_valid_i -> ids_valid)
  `ASSERT(AckHasWrite, mem_wr_ack_valid_i -> writes_q != '0)
  `ASSERT_IF(NoEmptyRequest, mem_req_valid_o, mem_req_rows_o != '0)
  `ASSERT(RequestHeld, held -> mem_req_valid_o && sel == $past(sel))

endmodule
