// SPDX-License-Identifier: Apache-2.0
// DMA read reorder buffer: RobBytes of transfer data in 16-byte lines.
//
// Write port: one completion beat per cycle, its bytes (packed from byte 0,
// selected by wmask_i) placed at any byte position wpos_i. A beat at an
// unaligned position covers two consecutive lines: the byte that lands in
// column c goes to the first line when c >= the position's low four bits,
// else to the next one.
// Storage: one RAM per byte column (16 x ram_1r1w of Lines x 8 bits), each
// with its own write address and write enable, so a beat is one write per
// column and no RAM needs byte enables (block RAMs have them only at 9-bit
// granularity, and two lines' worth of enables would be needed). See
// docs/dma.md.
// Read port: one whole line per cycle (every column at the same row);
// rdata_o is valid the cycle after re_i and holds until the next read. A read
// in the cycle a byte of its line is written returns the old byte; the line
// reads back new from the next cycle on.
// Positions wrap at RobBytes (the read channel keeps at most RobBytes of a
// transfer in the buffer).
module dma_rob #(
  parameter int unsigned  RobBytes = tpu_pkg::Cfg.dma_rob_bytes,  // a power of two, at least 64
  localparam int unsigned Lines    = RobBytes / 16,
  localparam int unsigned LineW    = $clog2(Lines),
  localparam int unsigned PosW     = LineW + 4
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

  // ---- write: rotate the beat to its byte position ----
  logic [3:0]       rot;
  logic [LineW-1:0] line0;
  logic [15:0]      wrap;  // columns below rot: their byte goes to the next line

  assign rot   = wpos_i[3:0];
  assign line0 = wpos_i[PosW-1:4];
  assign wrap  = dma_pkg::low_bytes({1'b0, rot});

  for (genvar c = 0; c < 16; c++) begin : gen_col
    logic [LineW-1:0] waddr;
    logic [7:0]       wbyte;
    logic             wen;

    // Column c holds beat byte c - rot, in line0 when c >= rot, else in the
    // next line (wrapping at the end of the buffer).
    assign wbyte = wdata_i[4'(c) - rot];
    assign wen   = we_i && wmask_i[4'(c) - rot];
    assign waddr = line0 + LineW'(wrap[c]);

    ram_1r1w #(
      .Width(8),
      .Depth(Lines)
    ) u_col (
      .clk_i,
      .wr_en_i  (wen),
      .wr_addr_i(waddr),
      .wr_data_i(wbyte),
      .rd_en_i  (re_i),
      .rd_addr_i(rline_i),
      .rd_data_o(rdata_o[c])
    );
  end

endmodule
