// SPDX-License-Identifier: Apache-2.0
// VPU requantization lane: one int32 accumulator value to one int8 value.
//
//   x   = sat32(acc_i + bias_i)
//   q_o = min(max(zero_point_i + RDBP(SRDHM(x, multiplier_i), shift_i), lo_i), hi_i)
//
// bit for bit as tpu::quant::act_lane in sim/model/quant.h, which follows
// gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT (the
// TFLite reference kernels). The clamp order makes lo_i > hi_i yield hi_i.
// lo_i/hi_i are the final int8 bounds, already narrowed by the activation
// function (vpu_act_row computes them). No parameter is ever out of range for
// this block: every input combination has a defined result.
//
// Purely combinational. The longest path is the 32 x 32 multiply, a 33-bit
// increment, a 32-bit shifter and compare, and two 34-bit compares.
module vpu_requant (
  input  logic [31:0] acc_i,         // accumulator, int32
  input  logic [31:0] bias_i,        // bias, int32 (0 when the ACT has no bias)
  input  logic [31:0] multiplier_i,  // M0, int32 (Q31)
  input  logic [4:0]  shift_i,       // s, rounding right shift 0..31
  input  logic [31:0] zero_point_i,  // zp, int32, added after the shift
  input  logic [7:0]  lo_i,          // lower clamp bound, int8
  input  logic [7:0]  hi_i,          // upper clamp bound, int8
  output logic [7:0]  q_o            // result, int8
);

  localparam logic [31:0] Int32Min = 32'h8000_0000;
  localparam logic [31:0] Int32Max = 32'h7fff_ffff;

  // ---------------------------------------------------------------------------
  // x = sat32(acc + bias): a 33-bit sum saturates when its two top bits differ.
  // ---------------------------------------------------------------------------
  logic [32:0] sum;
  logic [31:0] x;

  assign sum = {acc_i[31], acc_i} + {bias_i[31], bias_i};

  always_comb begin
    x = sum[31:0];
    if (sum[32] != sum[31]) x = sum[32] ? Int32Min : Int32Max;
  end

  // ---------------------------------------------------------------------------
  // y = SRDHM(x, M0). quant.h: ab = x * M0 (exact, 64 bits);
  //   y = trunc((ab + nudge) / 2^31), nudge = 2^30 if ab >= 0 else 1 - 2^30.
  // The truncating division is computed as a floor (an arithmetic shift):
  //   ab >= 0: ab + 2^30 >= 0, so trunc = floor((ab + 2^30) / 2^31).
  //   ab <  0: t = ab + 1 - 2^30 < 0, and for negative t
  //            trunc(t / 2^31) = floor((t + 2^31 - 1) / 2^31)
  //                            = floor((ab + 2^30) / 2^31).
  // So in both cases y = (ab + 2^30) >>> 31: the sign-dependent nudge and the
  // round-toward-zero correction cancel exactly. The quotient fits in 32 bits
  // except for INT32_MIN * INT32_MIN (2^62 -> 2^31), which saturates.
  // ---------------------------------------------------------------------------
  logic [63:0] product, product_rnd;
  logic [31:0] y;

  assign product     = {{32{x[31]}}, x} * {{32{multiplier_i[31]}}, multiplier_i};
  assign product_rnd = product + 64'h0000_0000_4000_0000;
  assign y           = (x == Int32Min && multiplier_i == Int32Min) ? Int32Max
                                                                  : product_rnd[62:31];

  // ---------------------------------------------------------------------------
  // r = RDBP(y, s), written as in quant.h: rounds half away from zero.
  //   mask = 2^s - 1, remainder = y & mask, threshold = mask/2 + (y < 0),
  //   r = (y >>> s) + (remainder > threshold).
  // remainder and threshold are below 2^31, so an unsigned compare is exact;
  // the increment never overflows (s = 0 has remainder 0).
  // ---------------------------------------------------------------------------
  logic [31:0] mask, remainder, threshold, y_shifted, r;

  assign mask      = (32'd1 << shift_i) - 32'd1;
  assign remainder = y & mask;
  assign threshold = (mask >> 1) + {31'd0, y[31]};
  assign y_shifted = $unsigned($signed(y) >>> shift_i);
  assign r         = y_shifted + {31'd0, remainder > threshold};

  // ---------------------------------------------------------------------------
  // q = min(max(zp + r, lo), hi) in 34 bits (zp + r needs 33).
  // ---------------------------------------------------------------------------
  logic signed [33:0] scaled, lo, hi, clamped;

  assign scaled = $signed({{2{zero_point_i[31]}}, zero_point_i}) + $signed({{2{r[31]}}, r});
  assign lo     = $signed({{26{lo_i[7]}}, lo_i});
  assign hi     = $signed({{26{hi_i[7]}}, hi_i});

  always_comb begin
    clamped = scaled;
    if (clamped < lo) clamped = lo;
    if (clamped > hi) clamped = hi;
  end

  assign q_o = clamped[7:0];

  // The quotient's spare sign bit, the discarded fraction and the clamped
  // value's sign extension carry no information.
  logic unused_bits;
  assign unused_bits = ^{product_rnd[63], product_rnd[30:0], clamped[33:8]};

endmodule
