// SPDX-License-Identifier: Apache-2.0
// DMA read reorder buffer: RobBytes of transfer data in 16-byte lines.
//
// Write port: one completion beat per cycle, its bytes (packed from byte 0,
// selected by wmask_i) placed at any byte position wpos_i. A beat at an
// unaligned position covers two consecutive lines, one even and one odd, so
// the lines live in two banks (even, odd) that are written together, each
// with its own byte enables.
// Read port: one whole line per cycle; rdata_o is valid the cycle after re_i.
// A line written at a clock edge reads back new from the next cycle on.
// Positions wrap at RobBytes (the read channel keeps at most RobBytes of a
// transfer in the buffer).
`include "tpu_macros.svh"

module dma_rob #(
  parameter int unsigned  RobBytes = tpu_pkg::Cfg.dma_rob_bytes,  // a power of two, at least 64
  localparam int unsigned Lines    = RobBytes / 16,
  localparam int unsigned LineW    = $clog2(Lines),
  localparam int unsigned PosW     = LineW + 4,
  localparam int unsigned Rows     = Lines / 2
) (
  input  logic                  clk_i,
  // ---- write: one beat at a byte position ----
  input  logic                  we_i,
  input  logic [PosW-1:0]       wpos_i,
  input  logic [15:0][7:0]      wdata_i,
  input  logic [15:0]           wmask_i,
  // ---- read: one line ----
  input  logic                  re_i,
  input  logic [LineW-1:0]      rline_i,
  output logic [15:0][7:0]      rdata_o
);

  if (RobBytes < 64 || (RobBytes & (RobBytes - 1)) != 0) begin : gen_bad_size
    $error("dma_rob: RobBytes must be a power of two, at least 64");
  end

  logic [15:0][7:0] mem_even [Rows];
  logic [15:0][7:0] mem_odd  [Rows];

  // ---- write: rotate the beat to its byte position, split over two lines ----
  logic [3:0]       rot;
  logic [LineW-1:0] line0;
  logic [LineW-2:0] row_even, row_odd;
  logic [15:0][7:0] rot_data;
  logic [15:0]      rot_mask, mask0, mask1, mask_even, mask_odd;

  assign rot   = wpos_i[3:0];
  assign line0 = wpos_i[PosW-1:4];

  always_comb begin
    for (int c = 0; c < 16; c++) begin
      rot_data[c] = wdata_i[4'(c) - rot];
      rot_mask[c] = wmask_i[4'(c) - rot];
      // Column c of the first line holds beat byte c - rot when c >= rot.
      mask0[c]    = rot_mask[c] && (4'(c) >= rot);
      mask1[c]    = rot_mask[c] && (4'(c) < rot);
    end
  end

  // The beat covers line0 and line0 + 1: the odd one of the two is in row
  // line0 / 2 of the odd bank, the even one in row (line0 + 1) / 2.
  assign row_odd   = line0[LineW-1:1];
  assign row_even  = line0[LineW-1:1] + (LineW-1)'(line0[0]);
  assign mask_even = line0[0] ? mask1 : mask0;
  assign mask_odd  = line0[0] ? mask0 : mask1;

  always_ff @(posedge clk_i) begin
    if (we_i) begin
      for (int b = 0; b < 16; b++) begin
        if (mask_even[b]) mem_even[row_even][b] <= rot_data[b];
        if (mask_odd[b])  mem_odd[row_odd][b]   <= rot_data[b];
      end
    end
  end

  // ---- read ----
  logic [15:0][7:0] rdata_q;
  `FFLNR(rdata_q, rline_i[0] ? mem_odd[rline_i[LineW-1:1]] : mem_even[rline_i[LineW-1:1]], re_i)
  assign rdata_o = rdata_q;

endmodule
