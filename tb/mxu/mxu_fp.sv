// SPDX-License-Identifier: Apache-2.0
// Test top: mxu with the bf16 datapath (bf16 operands, fp32 results) or,
// with -GMixed=1, the mixed one (int8 or bf16 per input row). Verilator 5.006
// cannot set an enum parameter with -G, so this top chooses Datapath from a
// number and passes N through (-GN=<n>); for tb/mxu/mxu_bf16_test.cpp, the
// benchmark and the lint run.
module mxu_fp #(
  parameter int unsigned N     = 4,
  parameter int unsigned Mixed = 0  // 1: the mixed datapath (an int, as -G sets it)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 clear_i,
  input  logic                 wgt_valid_i,
  output logic                 wgt_ready_o,
  input  logic [N-1:0][15:0]   wgt_row_i,
  input  logic                 in_valid_i,
  output logic                 in_ready_o,
  input  logic [N-1:0][15:0]   in_row_i,
  input  logic                 in_last_i,
  input  logic                 in_bf16_i,
  output logic                 out_valid_o,
  input  logic                 out_ready_i,
  output logic [N-1:0][31:0]   out_row_o,
  output logic                 out_last_o,
  output logic                 out_bf16_o,
  output logic                 wgt_stall_o
);

  mxu #(
    .N       (N),
    .Datapath(Mixed != 0 ? tpu_pkg::DatapathBoth : tpu_pkg::DatapathBf16)
  ) u_mxu (.*);

endmodule
