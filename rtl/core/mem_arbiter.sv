// Shares the core's memory port between the memory unit (RHM/WHM) and the
// weight unit (RW).
//
// Requests are granted round-robin, one per cycle. The port answers every
// request (read data or write acknowledge, with an error bit) exactly once
// and in order, so a FIFO of requester ids routes each response home.
// block_i stops new grants (used while the core aborts after a fault);
// outstanding_o counts requests not yet answered.
`include "tpu_macros.svh"

module mem_arbiter #(
  parameter int unsigned DataW       = 128,  // bits per row
  parameter int unsigned Outstanding = 64,   // requests in flight, at most
  localparam int unsigned CntW = $clog2(Outstanding + 1)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  block_i,
  output logic [CntW-1:0]       outstanding_o,
  // ---- requesters (0: memory unit, 1: weight unit) ----
  input  logic [1:0]            req_valid_i,
  output logic [1:0]            req_ready_o,
  input  logic [1:0]            req_write_i,
  input  logic [1:0][63:0]      req_addr_i,
  input  logic [1:0][DataW-1:0] req_wdata_i,
  output logic [1:0]            rsp_valid_o,
  input  logic [1:0]            rsp_ready_i,
  output logic [DataW-1:0]      rsp_rdata_o,
  output logic                  rsp_err_o,
  // ---- memory port ----
  output logic                  mem_req_valid_o,
  input  logic                  mem_req_ready_i,
  output logic                  mem_req_write_o,
  output logic [63:0]           mem_req_addr_o,
  output logic [DataW-1:0]      mem_req_wdata_o,
  input  logic                  mem_rsp_valid_i,
  output logic                  mem_rsp_ready_o,
  input  logic [DataW-1:0]      mem_rsp_rdata_i,
  input  logic                  mem_rsp_err_i
);

  logic       prio_q, prio_d;   // requester preferred this cycle
  logic       sel;              // requester granted
  logic       grant_ok, req_fire;
  logic       id_ready, id_valid, id_head;

  // Round robin: the preferred requester wins if it asks, else the other.
  assign sel = req_valid_i[prio_q] ? prio_q : !prio_q;
  assign grant_ok = !block_i && id_ready;

  assign mem_req_valid_o = grant_ok && |req_valid_i;
  assign mem_req_write_o = req_write_i[sel];
  assign mem_req_addr_o  = req_addr_i[sel];
  assign mem_req_wdata_o = req_wdata_i[sel];
  assign req_fire        = mem_req_valid_o && mem_req_ready_i;

  always_comb begin
    req_ready_o      = '0;
    req_ready_o[sel] = grant_ok && mem_req_ready_i;
    prio_d           = req_fire ? !sel : prio_q;
  end

  `FF(prio_q, prio_d, 1'b0)

  // Ids of requests in flight, oldest first.
  logic [$clog2(Outstanding+1)-1:0] id_count;
  stream_fifo #(
    .Width(1),
    .Depth(Outstanding)
  ) u_ids (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),  // the core flushes only when nothing is in flight
    .valid_i(req_fire),
    .ready_o(id_ready),
    .data_i (sel),
    .valid_o(id_valid),
    .ready_i(mem_rsp_valid_i && mem_rsp_ready_o),
    .data_o (id_head),
    .count_o(id_count)
  );
  assign outstanding_o = id_count;

  always_comb begin
    rsp_valid_o          = '0;
    rsp_valid_o[id_head] = mem_rsp_valid_i && id_valid;
  end
  assign mem_rsp_ready_o = id_valid && rsp_ready_i[id_head];
  assign rsp_rdata_o     = mem_rsp_rdata_i;
  assign rsp_err_o       = mem_rsp_err_i;

  // A response with no request in flight is a broken memory port.
  `ASSERT(RspHasRequest, mem_rsp_valid_i |-> id_valid)

endmodule
