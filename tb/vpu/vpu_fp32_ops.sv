// SPDX-License-Identifier: Apache-2.0
// Test top: the VPU's fp32 lane operations of fp_pkg (fp32_mul, fp32_max,
// fp32_min, fp32_to_bf16) as one combinational block, so fp_test can compare
// them with the C++ reference (tpu/bf16.h) bit for bit.
module vpu_fp32_ops (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] mul_o,   // fp32_mul(a, b)
  output logic [31:0] max_o,   // fp32_max(a, b)
  output logic [31:0] min_o,   // fp32_min(a, b)
  output logic [15:0] bf16_o   // fp32_to_bf16(a)
);

  assign mul_o  = fp_pkg::fp32_mul(a_i, b_i);
  assign max_o  = fp_pkg::fp32_max(a_i, b_i);
  assign min_o  = fp_pkg::fp32_min(a_i, b_i);
  assign bf16_o = fp_pkg::fp32_to_bf16(a_i);

endmodule
