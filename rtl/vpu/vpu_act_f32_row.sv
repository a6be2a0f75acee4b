// SPDX-License-Identifier: Apache-2.0
// VPU datapath for ACT F32 (bf16 and both configurations): one accumulator
// row of N fp32 lanes in, one fp32 row out, per lane in the order of
// docs/numerics.md (tpu::vpu_f32::act_lane):
//   y = bias_en ? fp32_add(x, bias[j]) : x     stage 1
//   y = fp32_mul(y, scale)                     stage 2
//   y = fp32_min(fp32_max(y, lo), hi)          stage 3
// lo and hi are the clamp bounds after the function (the caller raises FMIN
// to +0 for ReLU and ReLU6 and lowers FMAX to RELU6_F32 for ReLU6).
// out_bf16_o is the result rounded to bf16 (fp32_to_bf16, nearest even).
//
// The parameters (bias, scale, lo, hi) must hold still while rows are in
// the pipeline: the vector unit runs one command at a time and a CFG waits
// for the ACT before it.
// Handshake: valid/ready on both sides. Three register stages with one
// enable (the pipeline moves when its last stage is empty or being taken),
// so one row per cycle streams through; latency 3 cycles. A stage's data
// registers load only when a row moves into it.
// clear_i drops every row in flight.
`include "tpu_macros.svh"

module vpu_act_f32_row #(
  parameter int unsigned N = tpu_pkg::ArrayN  // lanes
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 clear_i,
  // ---- rows in ----
  input  logic                 in_valid_i,
  output logic                 in_ready_o,
  input  logic [N-1:0][31:0]   in_acc_i,
  // ---- parameters (held while rows are in flight) ----
  input  logic [N-1:0][31:0]   bias_i,
  input  logic                 bias_en_i,
  input  logic [31:0]          scale_i,
  input  logic [31:0]          lo_i,
  input  logic [31:0]          hi_i,
  // ---- rows out ----
  output logic                 out_valid_o,
  input  logic                 out_ready_i,
  output logic [N-1:0][31:0]   out_row_o,
  output logic [N-1:0][15:0]   out_bf16_o
);

  logic                 en;
  logic [2:0]           valid_q;
  logic [N-1:0][31:0]   s1_q, s2_q, s3_q;

  assign en         = !valid_q[2] || out_ready_i;
  assign in_ready_o = en && !clear_i;

  `FFL(valid_q, clear_i ? 3'b000 : {valid_q[1:0], in_valid_i}, en || clear_i, 3'b000)

  // A stage's data registers load only with a row, and the lane arithmetic
  // is written in the loads, so a simulator's model computes no fp32
  // arithmetic while no row moves (in the hardware, each data register's
  // enable also takes the row's valid bit).
  for (genvar j = 0; j < N; j++) begin : gen_lane
    `FFLNR(s1_q[j], bias_en_i ? fp_pkg::fp32_add(in_acc_i[j], bias_i[j]) : in_acc_i[j],
           en && in_valid_i)
    `FFLNR(s2_q[j], fp_pkg::fp32_mul(s1_q[j], scale_i), en && valid_q[0])
    `FFLNR(s3_q[j], fp_pkg::fp32_min(fp_pkg::fp32_max(s2_q[j], lo_i), hi_i), en && valid_q[1])
  end

  assign out_valid_o = valid_q[2];
  assign out_row_o   = s3_q;
  for (genvar j = 0; j < N; j++) begin : gen_bf16
    assign out_bf16_o[j] = fp_pkg::fp32_to_bf16(s3_q[j]);
  end

endmodule
