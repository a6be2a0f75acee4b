// SPDX-License-Identifier: Apache-2.0
// fp32 + fp32 adder, combinational, round to nearest even (the MXU's bf16
// datapath accumulates with it; docs/numerics.md). Bit-exact with
// tpu::fp32_add (sw/common/src/bf16.cpp):
//
//   - subnormal operands are zero (of their sign);
//   - NaN operand, or inf + -inf              -> canonical quiet NaN 0x7FC00000;
//   - inf + finite                            -> that inf;
//   - x + -x                                  -> +0, (-0) + (-0) -> -0;
//   - a nonzero sum below 2^-126              -> zero with the sum's sign. Such
//     a sum is a multiple of 2^-149, hence exact: flushing before or after
//     rounding is the same;
//   - a sum that rounds to 2^128 or more      -> inf.
//
// Datapath: order the operands by magnitude (op_hi, op_lo); shift op_lo right
// by the exponent difference into 24 significand bits plus guard, round and
// sticky; add or subtract; normalize (one right shift on a carry, or a left
// shift by the leading-zero count after a cancellation); round to nearest
// even on guard/round/sticky; a carry out of the rounding bumps the
// exponent. Three extra bits give the correctly rounded result: a left shift
// by more than one happens only when the exponents differ by at most one,
// and then nothing has reached the sticky bit.
//
// Latency 0 (no registers), no handshake; mxu_mac registers around it.
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sum_o
);

  localparam logic [31:0] CANONICAL_NAN = 32'h7FC0_0000;
  localparam int unsigned SigW  = 24;        // significand with the hidden one
  localparam int unsigned ExtW  = SigW + 3;  // + guard, round, sticky
  localparam int unsigned MaxSh = ExtW - 1;  // shifting further leaves only sticky

  // ---- operands ----
  logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  assign a_zero = a_i[30:23] == 8'h00;  // zero or subnormal
  assign b_zero = b_i[30:23] == 8'h00;
  assign a_inf  = a_i[30:23] == 8'hFF && a_i[22:0] == '0;
  assign b_inf  = b_i[30:23] == 8'hFF && b_i[22:0] == '0;
  assign a_nan  = a_i[30:23] == 8'hFF && a_i[22:0] != '0;
  assign b_nan  = b_i[30:23] == 8'hFF && b_i[22:0] != '0;

  // op_hi has the larger magnitude (op_lo the other); the result takes its sign.
  logic [31:0] op_hi, op_lo;
  logic        swap, eff_sub;
  assign swap    = b_i[30:0] > a_i[30:0];
  assign op_hi   = swap ? b_i : a_i;
  assign op_lo   = swap ? a_i : b_i;
  assign eff_sub = a_i[31] ^ b_i[31];

  // ---- alignment ----
  logic [7:0]            exp_diff;
  logic [4:0]            shamt;
  logic [SigW+MaxSh-1:0] lo_wide;  // op_lo's significand shifted right, all bits kept
  logic [ExtW-1:0]       hi_ext, lo_ext;

  assign exp_diff = op_hi[30:23] - op_lo[30:23];
  assign shamt    = exp_diff > 8'(MaxSh) ? 5'(MaxSh) : exp_diff[4:0];
  assign lo_wide  = {1'b1, op_lo[22:0], {MaxSh{1'b0}}} >> shamt;
  assign hi_ext   = {1'b1, op_hi[22:0], 3'b000};
  // Top 26 bits (significand, guard, round), then everything below ORed into sticky.
  assign lo_ext   = {lo_wide[SigW+MaxSh-1 -: ExtW-1], |lo_wide[SigW-1:0]};

  // ---- add or subtract (op_hi >= op_lo, so no negative result) ----
  logic [ExtW:0] raw;
  assign raw = eff_sub ? {1'b0, hi_ext} - {1'b0, lo_ext}
                       : {1'b0, hi_ext} + {1'b0, lo_ext};

  // ---- normalize: hidden one to bit ExtW-1 ----
  logic [4:0]        lz;     // leading zeros of raw[ExtW-1:0]
  logic [ExtW-1:0]   norm;
  logic signed [9:0] exp_n;  // biased exponent of norm

  always_comb begin
    lz = 5'(ExtW);
    for (int i = 0; i < ExtW; i++) begin
      if (raw[i]) lz = 5'(ExtW - 1 - i);
    end
  end

  always_comb begin
    if (raw[ExtW]) begin  // carry out of an addition: one bit right, keep the sticky
      norm  = {raw[ExtW:2], raw[1] | raw[0]};
      exp_n = $signed({2'b00, op_hi[30:23]}) + 10'sd1;
    end else begin        // cancellation: exact, nothing reached the sticky bit if lz > 1
      norm  = raw[ExtW-1:0] << lz;
      exp_n = $signed({2'b00, op_hi[30:23]}) - $signed({5'd0, lz});
    end
  end

  // ---- round to nearest, ties to even ----
  logic              round_up;
  logic [SigW:0]     sig_r;  // rounded significand; bit SigW set if it rounded up to 2.0
  logic signed [9:0] exp_r;

  assign round_up = norm[2] & (norm[1] | norm[0] | norm[3]);
  assign sig_r    = {1'b0, norm[ExtW-1:3]} + (SigW+1)'(round_up);
  assign exp_r    = exp_n + $signed({9'd0, sig_r[SigW]});
  // On a carry out of the rounding sig_r is exactly 2^24: its fraction bits are zero.

  // ---- result ----
  always_comb begin
    if (a_nan || b_nan || (a_inf && b_inf && eff_sub)) begin
      sum_o = CANONICAL_NAN;
    end else if (a_inf) begin
      sum_o = {a_i[31], 8'hFF, 23'd0};
    end else if (b_inf) begin
      sum_o = {b_i[31], 8'hFF, 23'd0};
    end else if (a_zero && b_zero) begin
      sum_o = {a_i[31] & b_i[31], 31'd0};
    end else if (a_zero) begin
      sum_o = b_i;
    end else if (b_zero) begin
      sum_o = a_i;
    end else if (raw == '0) begin  // exact cancellation
      sum_o = 32'd0;
    end else if (exp_n <= 10'sd0) begin  // below 2^-126 (exact): flush
      sum_o = {op_hi[31], 31'd0};
    end else if (exp_r >= 10'sd255) begin
      sum_o = {op_hi[31], 8'hFF, 23'd0};
    end else begin
      sum_o = {op_hi[31], exp_r[7:0], sig_r[SigW-2:0]};
    end
  end

  // The hidden one of the rounded significand is implied by the exponent;
  // op_lo's sign is in eff_sub.
  logic unused_bits;
  assign unused_bits = sig_r[SigW-1] ^ op_lo[31];

endmodule
