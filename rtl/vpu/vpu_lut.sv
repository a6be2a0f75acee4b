// SPDX-License-Identifier: Apache-2.0
// VPU activation table: 256 x int8 in block RAM, N lookups per cycle.
//
// ceil(N/2) identical copies of the table, each a ram_tdp (one DP16KD on
// ECP5): port 0 of copy c reads for lane 2c, port 1 for lane 2c + 1. A write
// goes to every copy through port 0, so all copies always hold the same table.
//
// Read: rd_en_i high at a clock edge latches rd_idx_i[j] of every lane; from
// the next cycle rd_data_o[j] is that entry, held until the next edge with
// rd_en_i high (the caller uses rd_en_i as its pipeline enable, so a stalled
// pipeline keeps its looked-up values). Latency 1, one lookup per lane per
// cycle.
// Write: wr_en_i writes wr_data_i to entry wr_idx_i at the clock edge. A write
// reuses port 0 of every copy, so it disturbs the read data of the even lanes
// and must not coincide with reads the caller still needs (the caller keeps
// writes and lookups apart; vpu_act_row asserts it).
// Reset: the RAM cannot be reset, so after rst_ni the block writes 0 to the
// 256 entries, one per cycle, through port 0 (the ISA's reset value of every
// LUT entry). ready_o is low during those 256 cycles; the caller issues no
// write and needs no read until it rises.
`include "tpu_macros.svh"

module vpu_lut #(
  parameter int unsigned N = tpu_pkg::ArrayN  // lanes (lookups per cycle)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  output logic                 ready_o,    // the reset clear has finished
  // ---- write port (CFG) ----
  input  logic                 wr_en_i,
  input  logic [7:0]           wr_idx_i,
  input  logic [7:0]           wr_data_i,
  // ---- lookups ----
  input  logic                 rd_en_i,    // latch new indices (pipeline enable)
  input  logic [N-1:0][7:0]    rd_idx_i,
  output logic [N-1:0][7:0]    rd_data_o
);

  if (N < 1) begin : gen_bad_param
    $error("vpu_lut: N must be at least 1");
  end

  localparam int unsigned Copies = (N + 1) / 2;

  // ---------------------------------------------------------------------------
  // Reset clear: clr_idx_q walks 0..255; clr_busy_q falls after entry 255.
  // ---------------------------------------------------------------------------
  logic       clr_busy_q;
  logic [7:0] clr_idx_q;

  `FF(clr_busy_q, clr_busy_q && clr_idx_q != 8'hff, 1'b1)
  `FF(clr_idx_q, clr_idx_q + 8'(clr_busy_q), '0)

  assign ready_o = !clr_busy_q;

  logic       wr;
  logic [7:0] wr_idx, wr_data;

  assign wr      = wr_en_i || clr_busy_q;
  assign wr_idx  = clr_busy_q ? clr_idx_q : wr_idx_i;
  assign wr_data = clr_busy_q ? 8'd0 : wr_data_i;

  // ---------------------------------------------------------------------------
  // Table copies
  // ---------------------------------------------------------------------------
  for (genvar c = 0; c < Copies; c++) begin : gen_copy
    localparam int unsigned Odd = 2 * c + 1;  // the lane on port 1, if any
    localparam bit HasOdd = Odd < N;

    logic [1:0]       en, we;
    logic [1:0][7:0]  addr, wdata, rdata;

    assign en    = {rd_en_i && HasOdd, rd_en_i || wr};
    assign we    = {1'b0, wr};
    assign addr  = {HasOdd ? rd_idx_i[HasOdd ? Odd : 0] : 8'd0, wr ? wr_idx : rd_idx_i[2 * c]};
    assign wdata = {8'd0, wr_data};

    ram_tdp #(
      .Width(8),
      .Depth(256)
    ) u_ram (
      .clk_i,
      .en_i     (en),
      .we_i     (we),
      .addr_i   (addr),
      .wr_data_i(wdata),
      .rd_data_o(rdata)
    );

    assign rd_data_o[2 * c] = rdata[0];
    if (HasOdd) begin : gen_odd
      assign rd_data_o[Odd] = rdata[1];
    end else begin : gen_no_odd
      logic [7:0] unused_rdata;
      assign unused_rdata = rdata[1];
    end
  end

  `ASSERT(LutWriteAfterClear, wr_en_i -> !clr_busy_q)

endmodule
