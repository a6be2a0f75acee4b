// SPDX-License-Identifier: Apache-2.0
// Simple dual-port RAM: one write port, one synchronous read port.
//
// The shape every FPGA block RAM (ECP5 DP16KD, Xilinx RAMB18/36) and every
// two-port SRAM provides, written so Yosys infers it without primitives.
// Read data appears the cycle after rd_en_i and holds until the next read.
// A read of the row being written in the same cycle returns the old data
// (read-first); callers that need the new data forward it themselves.
// BlockRam selects block RAM over LUT RAM for small instances too.
module ram_1r1w #(
  parameter int unsigned Width    = 32,
  parameter int unsigned Depth    = 512,
  parameter bit          BlockRam = 1'b1,
  localparam int unsigned AddrW   = Depth > 1 ? $clog2(Depth) : 1
) (
  input  logic             clk_i,
  // ---- write port ----
  input  logic             wr_en_i,
  input  logic [AddrW-1:0] wr_addr_i,
  input  logic [Width-1:0] wr_data_i,
  // ---- read port ----
  input  logic             rd_en_i,
  input  logic [AddrW-1:0] rd_addr_i,
  output logic [Width-1:0] rd_data_o
);

  if (BlockRam) begin : gen_block
    (* ram_style = "block", no_rw_check *) logic [Width-1:0] mem_q [Depth] /* verilator public_flat_rd */;

    always_ff @(posedge clk_i) begin
      if (wr_en_i) mem_q[wr_addr_i] <= wr_data_i;
    end
    always_ff @(posedge clk_i) begin
      if (rd_en_i) rd_data_o <= mem_q[rd_addr_i];
    end
  end else begin : gen_lut
    (* ram_style = "distributed", no_rw_check *) logic [Width-1:0] mem_q [Depth] /* verilator public_flat_rd */;

    always_ff @(posedge clk_i) begin
      if (wr_en_i) mem_q[wr_addr_i] <= wr_data_i;
    end
    always_ff @(posedge clk_i) begin
      if (rd_en_i) rd_data_o <= mem_q[rd_addr_i];
    end
  end

endmodule
