// SPDX-License-Identifier: Apache-2.0
// Test top: mxu_mac with the bf16 datapath (an enum parameter cannot be set
// from Verilator's -G), for tb/mxu/fp_test.cpp and the lint run.
module mxu_mac_bf16 (
  input  logic        clk_i,
  input  logic        en_i,
  input  logic [15:0] a_i,
  input  logic [15:0] w_i,
  input  logic [31:0] psum_i,
  output logic [31:0] psum_o
);

  mxu_mac #(
    .Datapath(tpu_pkg::DatapathBf16),
    .DataW   (16),
    .PsumW   (32)
  ) u_mac (
    .clk_i,
    .en_i,
    .a_i,
    .w_i,
    .bf16_i(1'b1),  // ignored by the bf16 datapath
    .psum_i,
    .psum_o
  );

endmodule
