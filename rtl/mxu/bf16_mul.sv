// SPDX-License-Identifier: Apache-2.0
// bf16 x bf16 -> fp32 multiplier, combinational (the MXU's bf16 datapath,
// docs/numerics.md): fp_pkg::bf16_mul as a module, for the block test
// (tb/mxu/fp_test.cpp), lint and synthesis on its own. The rules are listed
// in fp_pkg.sv; exact, no rounding, bit-exact with tpu::bf16_mul.
//
// Latency 0 (no registers), no handshake.
module bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] p_o
);

  assign p_o = fp_pkg::bf16_mul(a_i, b_i);

endmodule
