// SPDX-License-Identifier: Apache-2.0
// Unified buffer: UbRows rows of N int8 lanes.
//
// Every unit has its own port, so DMA (RHM/WHM), MXU reads (MMC) and VPU
// reads and writes proceed in the same cycle without arbitration. Reads are
// combinational (data in the same cycle as the address); writes land at the
// clock edge. The controller never lets two units write the same row or read
// a row another unit is writing (docs/controller.md), so ports need no
// ordering among themselves. See docs/decisions.md for why this is a
// multi-ported array rather than single-ported banks.
module tpu_ub #(
  parameter int unsigned N      = tpu_pkg::ArrayN,  // lanes per row
  parameter int unsigned Rows   = tpu_pkg::Cfg.ub_rows,  // rows
  parameter int unsigned RdPorts = 4,
  parameter int unsigned WrPorts = 2,
  localparam int unsigned AddrW = $clog2(Rows)
) (
  input  logic                                clk_i,
  // ---- reads ----
  input  logic [RdPorts-1:0][AddrW-1:0]       rd_addr_i,
  output logic [RdPorts-1:0][N-1:0][7:0]      rd_data_o,
  // ---- writes ----
  input  logic [WrPorts-1:0]                  wr_en_i,
  input  logic [WrPorts-1:0][AddrW-1:0]       wr_addr_i,
  input  logic [WrPorts-1:0][N-1:0][7:0]      wr_data_i
);

  logic [N-1:0][7:0] mem_q [Rows] /* verilator public_flat_rd */;

  for (genvar p = 0; p < RdPorts; p++) begin : gen_rd
    assign rd_data_o[p] = mem_q[rd_addr_i[p]];
  end

  always_ff @(posedge clk_i) begin
    for (int p = 0; p < WrPorts; p++) begin
      if (wr_en_i[p]) mem_q[wr_addr_i[p]] <= wr_data_i[p];
    end
  end

endmodule
