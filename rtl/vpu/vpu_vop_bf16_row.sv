// SPDX-License-Identifier: Apache-2.0
// VPU element-wise operations and pooling on bf16 lanes (VOP BF16, bf16 and
// both configurations; docs/numerics.md and tpu::vpu_f32).
//
// A wide row (N bf16 lanes) is two UB rows, its halves: lanes 0 .. N/2-1 in
// the first, N/2 .. N-1 in the second, two bytes each. This block takes half
// rows (N bytes = N/2 lanes) and works lane by lane, each lane widened to
// fp32 (exact) and the result rounded back to bf16 (fp32_to_bf16):
//   ADD      out = fp32_add(a, b)        (the product of two bf16 values is exact)
//   MUL      out = fp32_mul(a, b)
//   MAX      out = fp32_max(a, b)
//   POOLMAX  m = v0; m = fp32_max(m, v_r) for r = 1 .. k-1
//   POOLAVG  s = v0; s = fp32_add(s, v_r) for r = 1 .. k-1; out = fp32_mul(s, 2^-shift)
// Results leave a wide row at a time, after both of its halves came in, so
// a wide row's sources are all read before its result is written (the
// model's order, row by row). A group is the half rows from the one with
// in_first_i = 1 to the one with in_last_i = 1: for ADD, MUL and MAX the two
// halves of one wide row (the first half's result waits for the second);
// for the pools k = 2^shift wide rows in row order, that is 2k half rows
// alternating first half, second half, folded into one accumulator per half.
// After the group's last half row both results leave, first half first.
// in_b_i is ignored by the pools.
//
// Pipeline: the operation is combinational from the input and the
// accumulators (or the held first half) into a two-row output buffer;
// latency 1 cycle from a group's last half row. Throughput: a group's two
// results take two cycles to leave, during which the block takes no input:
// ADD, MUL and MAX run at one wide row per two cycles.
// Handshake: valid/ready; out_valid_o and out_row_o come from flops; in_ready_o
// depends on flops, out_ready_i and clear_i. clear_i drops everything.
`include "tpu_macros.svh"

module vpu_vop_bf16_row #(
  parameter int unsigned N = tpu_pkg::ArrayN,  // bytes per half row (N/2 lanes)
  localparam int unsigned L = N / 2            // bf16 lanes per half row
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                clear_i,
  // ---- input half rows ----
  input  logic                in_valid_i,
  output logic                in_ready_o,
  input  logic [L-1:0][15:0]  in_a_i,
  input  logic [L-1:0][15:0]  in_b_i,
  input  tpu_isa_pkg::vop_e   in_op_i,
  input  logic [3:0]          in_shift_i,  // POOLAVG: log2(k), 0 .. 4
  input  logic                in_first_i,  // pools: the group's first half row
  input  logic                in_last_i,   // pools: the group's last half row
  // ---- output half rows ----
  output logic                out_valid_o,
  input  logic                out_ready_i,
  output logic [L-1:0][15:0]  out_row_o
);

  import tpu_isa_pkg::*;

  if (N < 2 || N % 2 != 0) begin : gen_bad_n
    $error("vpu_vop_bf16_row: N must be even");
  end

  logic                    pool, in_fire, out_fire, half, first_of_half;
  logic                    half_q;      // pools: the half of the last half row taken
  logic                    second_q;    // pools: the next half row is past the first wide row
  logic [1:0]              count_q, count_d;  // rows in the output buffer
  logic                    rd_q, wr;    // the buffer row that leaves next; where rows go
  logic [1:0][L-1:0][15:0] buf_q;
  logic [1:0][L-1:0][31:0] acc_q;       // pools: each half's running value
  logic [L-1:0][15:0]      held_q;      // ADD, MUL, MAX: the first half's result
  logic [L-1:0][31:0]      fold;        // this half's value after this half row
  logic [L-1:0][15:0]      binary, first_out, second_out;
  logic [31:0]             pow2;        // 2^-shift (exact: shift <= 4)

  assign pool       = !vop_binary(in_op_i);
  assign out_fire   = out_valid_o && out_ready_i;
  // A row is taken only when the buffer is empty after this cycle.
  assign in_ready_o = !clear_i && (count_q == 2'd0 || (count_q == 2'd1 && out_ready_i));
  assign in_fire    = in_valid_i && in_ready_o;
  // Half rows of a group alternate from the first half; the first wide row
  // starts each half's value.
  assign half          = in_first_i ? 1'b0 : !half_q;
  assign first_of_half = in_first_i || !second_q;
  assign pow2          = {1'b0, 8'd127 - {4'd0, in_shift_i}, 23'd0};

  always_comb begin
    for (int j = 0; j < L; j++) begin
      logic [31:0] a, b;
      a = {in_a_i[j], 16'd0};
      b = {in_b_i[j], 16'd0};
      unique case (in_op_i)
        VopAdd:  binary[j] = fp_pkg::fp32_to_bf16(fp_pkg::fp32_add(a, b));
        VopMul:  binary[j] = fp_pkg::fp32_to_bf16(fp_pkg::fp32_mul(a, b));
        VopMax:  binary[j] = fp_pkg::fp32_to_bf16(fp_pkg::fp32_max(a, b));
        VopMin:  binary[j] = fp_pkg::fp32_to_bf16(fp_pkg::fp32_min(a, b));
        default: binary[j] = '0;
      endcase
      if (first_of_half)              fold[j] = a;
      else if (in_op_i == VopPoolMax) fold[j] = fp_pkg::fp32_max(acc_q[half][j], a);
      else                            fold[j] = fp_pkg::fp32_add(acc_q[half][j], a);
      if (!pool) begin
        first_out[j]  = held_q[j];
        second_out[j] = binary[j];
      end else if (in_op_i == VopPoolMax) begin
        first_out[j]  = fp_pkg::fp32_to_bf16(acc_q[0][j]);
        second_out[j] = fp_pkg::fp32_to_bf16(fold[j]);
      end else begin
        first_out[j]  = fp_pkg::fp32_to_bf16(fp_pkg::fp32_mul(acc_q[0][j], pow2));
        second_out[j] = fp_pkg::fp32_to_bf16(fp_pkg::fp32_mul(fold[j], pow2));
      end
    end
  end

  // A group's last half row (the second half of its last wide row) pushes
  // both halves' results.
  always_comb begin
    count_d = count_q - 2'(out_fire);
    if (in_fire && in_last_i) count_d = count_d + 2'd2;
    if (clear_i) count_d = '0;
  end
  assign wr = rd_q ^ out_fire;  // the buffer is empty after this cycle's pop

  always_ff @(posedge clk_i) begin
    if (in_fire && !pool) held_q <= binary;
    if (in_fire && in_last_i) begin
      buf_q[wr]  <= first_out;
      buf_q[!wr] <= second_out;
    end
    if (in_fire && pool) acc_q[half] <= fold;
  end

  `FF(count_q, count_d, '0)
  `FF(rd_q, clear_i ? 1'b0 : rd_q ^ out_fire, 1'b0)
  `FFL(half_q, half, in_fire && pool, 1'b0)
  // After half row t of a group, the next one is past the first wide row
  // when t >= 1 (and the group goes on).
  `FFL(second_q, !in_last_i && !in_first_i, in_fire && pool, 1'b0)

  assign out_valid_o = count_q != 2'd0;
  assign out_row_o   = buf_q[rd_q];

endmodule
