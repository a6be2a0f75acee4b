// SPDX-License-Identifier: Apache-2.0
// Synchronous FIFO with valid/ready on both sides, storage in a RAM.
//
// Same interface and contract as stream_fifo: Depth entries of Width bits,
// first-word fall-through (a word pushed into an empty FIFO is on data_o the
// next cycle), one push and one pop per cycle, ready_o and valid_o driven by
// flops, clear_i empties it synchronously (no push or pop that cycle).
//
// The words live in a ram_1r1w (block RAM: synchronous read, one cycle of
// latency) behind a two-word output buffer of flops that drives data_o. A
// word read from the RAM lands in the buffer the next cycle; the buffer
// fetches whenever it would otherwise run dry, so a consumer that is always
// ready takes one word per cycle. While the RAM holds nothing a pushed word
// goes straight into the buffer (behind a word arriving from the RAM in the
// same cycle), which gives the one-cycle fall-through. Whenever the RAM holds
// words, buffer + read in flight hold two, so valid_o is high exactly when
// count_o is not zero, as in stream_fifo. count_o counts every word, wherever it is; the
// buffer's two words count towards Depth.
`include "tpu_macros.svh"

module stream_fifo_ram #(
  parameter int unsigned Width    = 8,     // payload bits
  parameter int unsigned Depth    = 16,    // entries, at least 2
  parameter bit          BlockRam = 1'b1,  // block RAM, else LUT RAM
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
    $error("stream_fifo_ram: Depth must be at least 2");
  end

  logic [PtrW-1:0]  wr_ptr_q, wr_ptr_d, rd_ptr_q, rd_ptr_d;
  logic [CntW-1:0]  count_q, count_d, ram_cnt_q, ram_cnt_d;
  logic             push, pop, bypass, ram_we, ram_re, pend_q;
  logic [1:0]       ob_cnt_q, ob_cnt_d, ob_left, ob_room;
  logic [Width-1:0] ob_q [2];
  logic [Width-1:0] ob_d [2];
  logic [Width-1:0] ram_rdata;

  assign ready_o = count_q != CntW'(Depth);
  assign valid_o = ob_cnt_q != '0;
  assign data_o  = ob_q[0];
  assign count_o = count_q;

  assign push = valid_i && ready_o && !clear_i;
  assign pop  = valid_o && ready_i && !clear_i;

  // Words left in the buffer after this cycle's pop.
  assign ob_left = ob_cnt_q - 2'(pop);
  // Words in the buffer after this cycle's pop and the read data arriving.
  assign ob_room = ob_left + 2'(pend_q);
  // Straight into the buffer while the RAM holds nothing before the word.
  assign bypass  = push && (ram_cnt_q == '0) && (ob_room != 2'd2);
  assign ram_we  = push && !bypass;
  // Fetch so that buffer + read in flight stay at most two words.
  assign ram_re  = (ram_cnt_q != '0) && (ob_room != 2'd2) && !clear_i;

  function automatic logic [PtrW-1:0] ptr_inc(logic [PtrW-1:0] ptr);
    return (ptr == PtrW'(Depth - 1)) ? '0 : ptr + 1'b1;
  endfunction

  ram_1r1w #(
    .Width   (Width),
    .Depth   (Depth),
    .BlockRam(BlockRam)
  ) u_ram (
    .clk_i,
    .wr_en_i  (ram_we),
    .wr_addr_i(wr_ptr_q),
    .wr_data_i(data_i),
    .rd_en_i  (ram_re),
    .rd_addr_i(rd_ptr_q),
    .rd_data_o(ram_rdata)
  );

  // Up to two words enter the buffer per cycle, in order: the read data,
  // then a bypassed push.
  always_comb begin
    logic [1:0] n;
    ob_d[0] = ob_q[0];
    ob_d[1] = ob_q[1];
    if (pop) ob_d[0] = ob_q[1];
    n = ob_left;
    if (pend_q) begin
      ob_d[n[0]] = ram_rdata;
      n = n + 2'd1;
    end
    if (bypass) ob_d[n[0]] = data_i;
  end

  always_comb begin
    wr_ptr_d  = ram_we ? ptr_inc(wr_ptr_q) : wr_ptr_q;
    rd_ptr_d  = ram_re ? ptr_inc(rd_ptr_q) : rd_ptr_q;
    ram_cnt_d = ram_cnt_q + CntW'(ram_we) - CntW'(ram_re);
    ob_cnt_d  = ob_room + 2'(bypass);
    count_d   = count_q + CntW'(push) - CntW'(pop);
    if (clear_i) begin
      wr_ptr_d  = '0;
      rd_ptr_d  = '0;
      ram_cnt_d = '0;
      ob_cnt_d  = '0;
      count_d   = '0;
    end
  end

  `FF(wr_ptr_q, wr_ptr_d, '0)
  `FF(rd_ptr_q, rd_ptr_d, '0)
  `FF(ram_cnt_q, ram_cnt_d, '0)
  `FF(count_q, count_d, '0)
  `FF(ob_cnt_q, ob_cnt_d, '0)
  `FF(pend_q, ram_re, 1'b0)
  `FFNR(ob_q[0], ob_d[0])
  `FFNR(ob_q[1], ob_d[1])

  `ASSERT(FifoRamNoOverflow, 32'(count_q) <= Depth)
  `ASSERT(FifoRamCount, count_q == ram_cnt_q + CntW'(pend_q) + CntW'(ob_cnt_q))
  `ASSERT(FifoRamBuffer, 32'(ob_cnt_q) + 32'(pend_q) <= 2)
  `ASSERT(FifoRamFull, (ram_cnt_q != '0) -> 32'(ob_cnt_q) + 32'(pend_q) == 2)
  `ASSERT(FifoRamValid, valid_o == (count_q != '0))
  `ASSERT_NEXT(FifoRamValidHeld, valid_o && !ready_i && !clear_i, valid_o)

endmodule
