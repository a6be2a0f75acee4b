// SPDX-License-Identifier: Apache-2.0
// Synchronous FIFO with valid/ready on both sides.
//
// Depth entries of Width bits; first-word fall-through (a pushed word is
// visible on data_o the next cycle). One push and one pop per cycle. ready_o
// and valid_o depend only on flops, so neither side sees a combinational path
// through the FIFO (a full FIFO takes a new word the cycle after a pop).
// clear_i empties the FIFO synchronously (no push or pop that cycle).
`include "tpu_macros.svh"

module stream_fifo #(
  parameter int unsigned Width = 8,  // payload bits
  parameter int unsigned Depth = 4,  // entries, at least 2
  localparam int unsigned PtrW = $clog2(Depth),
  localparam int unsigned CntW = $clog2(Depth + 1)
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             clear_i,
  // ---- upstream ----
  input  logic             valid_i,
  output logic             ready_o,
  input  logic [Width-1:0] data_i,
  // ---- downstream ----
  output logic             valid_o,
  input  logic             ready_i,
  output logic [Width-1:0] data_o,
  // ---- status ----
  output logic [CntW-1:0]  count_o
);

  if (Depth < 2) begin : gen_bad_depth
    $error("stream_fifo: Depth must be at least 2");
  end

  logic [Width-1:0] mem_q [Depth];
  logic [PtrW-1:0]  wr_ptr_q, wr_ptr_d, rd_ptr_q, rd_ptr_d;
  logic [CntW-1:0]  count_q, count_d;
  logic             push, pop;

  assign ready_o = count_q != CntW'(Depth);
  assign valid_o = count_q != '0;
  assign data_o  = mem_q[rd_ptr_q];
  assign count_o = count_q;

  assign push = valid_i && ready_o && !clear_i;
  assign pop  = valid_o && ready_i && !clear_i;

  function automatic logic [PtrW-1:0] ptr_inc(logic [PtrW-1:0] ptr);
    return (ptr == PtrW'(Depth - 1)) ? '0 : ptr + 1'b1;
  endfunction

  always_comb begin
    wr_ptr_d = push ? ptr_inc(wr_ptr_q) : wr_ptr_q;
    rd_ptr_d = pop  ? ptr_inc(rd_ptr_q) : rd_ptr_q;
    count_d  = count_q + CntW'(push) - CntW'(pop);
    if (clear_i) begin
      wr_ptr_d = '0;
      rd_ptr_d = '0;
      count_d  = '0;
    end
  end

  `FF(wr_ptr_q, wr_ptr_d, '0)
  `FF(rd_ptr_q, rd_ptr_d, '0)
  `FF(count_q, count_d, '0)

  always_ff @(posedge clk_i) begin
    if (push) mem_q[wr_ptr_q] <= data_i;
  end

  // The count can pass Depth only where CntW bits hold more than Depth.
  if (2 ** CntW - 1 > Depth) begin : gen_count_check
    `ASSERT(FifoNoOverflow, 32'(count_q) <= Depth)
  end
  `ASSERT_NEXT(FifoValidHeld, valid_o && !ready_i && !clear_i, valid_o)

endmodule
