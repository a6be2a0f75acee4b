// SPDX-License-Identifier: Apache-2.0
// Accumulator memory: AccRows rows of N int32 lanes.
//
// One write port that either overwrites a row or adds to it (MMC's ACC flag;
// the read-modify-write happens in the write cycle), and one combinational
// read port for the VPU. Sums wrap at 32 bits like the reference model.
module tpu_acc #(
  parameter int unsigned N     = tpu_pkg::ArrayN,
  parameter int unsigned Rows  = tpu_pkg::Cfg.acc_rows,
  parameter int unsigned AccW  = tpu_pkg::AccW,
  localparam int unsigned AddrW = $clog2(Rows)
) (
  input  logic                        clk_i,
  // ---- MMC results ----
  input  logic                        wr_en_i,
  input  logic                        wr_accumulate_i,
  input  logic [AddrW-1:0]            wr_addr_i,
  input  logic [N-1:0][AccW-1:0]      wr_data_i,
  // ---- VPU reads ----
  input  logic [AddrW-1:0]            rd_addr_i,
  output logic [N-1:0][AccW-1:0]      rd_data_o
);

  logic [N-1:0][AccW-1:0] mem_q [Rows] /* verilator public_flat_rd */;
  logic [N-1:0][AccW-1:0] old_row, new_row;

  assign rd_data_o = mem_q[rd_addr_i];
  assign old_row   = mem_q[wr_addr_i];

  always_comb begin
    for (int j = 0; j < N; j++) begin
      new_row[j] = wr_accumulate_i ? old_row[j] + wr_data_i[j] : wr_data_i[j];
    end
  end

  always_ff @(posedge clk_i) begin
    if (wr_en_i) mem_q[wr_addr_i] <= new_row;
  end

endmodule
