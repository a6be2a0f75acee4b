// SPDX-License-Identifier: Apache-2.0
// fp32 + fp32 adder, combinational, round to nearest even (the MXU's bf16
// datapath accumulates with it; docs/numerics.md): fp_pkg::fp32_add as a
// module, for the block test (tb/mxu/fp_test.cpp), lint and synthesis on its
// own. The rules and the datapath are described in fp_pkg.sv; bit-exact with
// tpu::fp32_add.
//
// Latency 0 (no registers), no handshake.
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sum_o
);

  assign sum_o = fp_pkg::fp32_add(a_i, b_i);

endmodule
