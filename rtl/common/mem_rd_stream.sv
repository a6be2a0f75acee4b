// SPDX-License-Identifier: Apache-2.0
// Turns a synchronous-read memory port into a stream: addresses in, data out.
//
// A unit offers addresses (with UserW bits of its own that travel with each
// address) as a valid/ready stream; the block requests them from a memory
// port that may refuse a request (req_ready_i low: another unit won the
// bank) and answers a granted request exactly one cycle later
// (rsp_valid_i). Answers land in a Depth-entry FIFO that the unit pops at its
// own pace. A request is made only when the FIFO has room for it and for
// every answer still on its way, so the memory never waits for the unit.
// With Depth >= 3 a unit that pops every cycle gets one word per cycle.
// With FallThrough an answer reaches the unit in the cycle it arrives when
// the FIFO is empty.
// clear_i (the core's flush) drops every word, granted or buffered.
`include "tpu_macros.svh"

module mem_rd_stream #(
  parameter int unsigned AddrW = 10,
  parameter int unsigned DataW = 64,
  parameter int unsigned UserW = 1,
  parameter int unsigned Depth = 4,
  parameter bit          FallThrough = 1'b0,  // an answer to an empty FIFO is offered in its cycle
  localparam int unsigned CntW = $clog2(Depth + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             clear_i,
  // ---- addresses from the unit ----
  input  logic             addr_valid_i,
  output logic             addr_ready_o,
  input  logic [AddrW-1:0] addr_i,
  input  logic [UserW-1:0] addr_user_i,
  // ---- memory port ----
  output logic             req_valid_o,
  input  logic             req_ready_i,
  output logic [AddrW-1:0] req_addr_o,
  input  logic             rsp_valid_i,
  input  logic [DataW-1:0] rsp_data_i,
  // ---- data to the unit ----
  output logic             data_valid_o,
  input  logic             data_ready_i,
  output logic [DataW-1:0] data_o,
  output logic [UserW-1:0] data_user_o
);

  if (Depth < 3) begin : gen_bad_depth
    $error("mem_rd_stream: Depth must be at least 3 for one word per cycle");
  end

  logic [CntW-1:0]  owed_q, owed_d;   // words granted or buffered, not yet popped
  logic [UserW-1:0] user_q;           // user bits of the request granted last cycle
  logic             req_fire, pop, fifo_ready;
  logic [CntW-1:0]  unused_count;

  assign req_valid_o  = addr_valid_i && (owed_q != CntW'(Depth)) && !clear_i;
  assign req_addr_o   = addr_i;
  assign addr_ready_o = req_ready_i && (owed_q != CntW'(Depth)) && !clear_i;
  assign req_fire     = req_valid_o && req_ready_i;
  assign pop          = data_valid_o && data_ready_i && !clear_i;

  assign owed_d = clear_i ? '0 : owed_q + CntW'(req_fire) - CntW'(pop);
  `FF(owed_q, owed_d, '0)
  `FFLNR(user_q, addr_user_i, req_fire)

  // With FallThrough an answer that finds the FIFO empty is offered to the
  // unit in the cycle it arrives, and enters the FIFO only if the unit does
  // not take it: a cycle sooner, for a longer path from the memory.
  logic                   fifo_in, fifo_valid, fifo_pop;
  logic [UserW+DataW-1:0] fifo_data;
  if (FallThrough) begin : gen_through
    logic through;
    assign through      = rsp_valid_i && !fifo_valid && !clear_i;
    assign fifo_in      = rsp_valid_i && !(through && data_ready_i);
    assign data_valid_o = fifo_valid || through;
    assign {data_user_o, data_o} = fifo_valid ? fifo_data : {user_q, rsp_data_i};
  end else begin : gen_fifo
    assign fifo_in      = rsp_valid_i;
    assign data_valid_o = fifo_valid;
    assign {data_user_o, data_o} = fifo_data;
  end
  assign fifo_pop = data_ready_i && fifo_valid;

  stream_fifo #(
    .Width(UserW + DataW),
    .Depth(Depth)
  ) u_fifo (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(fifo_in),
    .ready_o(fifo_ready),
    .data_i ({user_q, rsp_data_i}),
    .valid_o(fifo_valid),
    .ready_i(fifo_pop),
    .data_o (fifo_data),
    .count_o(unused_count)
  );

  // An answer arriving in a clear cycle belongs to a request made before it.
  `ASSERT(AnswerHasRoom, rsp_valid_i && !clear_i -> fifo_ready)

endmodule
