// SPDX-License-Identifier: Apache-2.0
// bf16 x bf16 -> fp32 multiplier, combinational (the MXU's bf16 datapath,
// docs/numerics.md). The product of two 8-bit significands has at most 16
// bits, so every result in fp32's normal range is exact: there is no
// rounding. Bit-exact with tpu::bf16_mul (sw/common/src/bf16.cpp):
//
//   - subnormal operands are zero (of their sign);
//   - NaN operand, or inf * zero          -> canonical quiet NaN 0x7FC00000;
//   - inf * nonzero                       -> inf;
//   - product >= 2^128                    -> inf;
//   - nonzero product < 2^-126            -> zero;
//   - every non-NaN result has sign(a) xor sign(b).
//
// Latency 0 (no registers), no handshake; mxu_mac registers around it.
module bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] p_o
);

  localparam logic [31:0] CANONICAL_NAN = 32'h7FC0_0000;

  logic       sign;
  logic [7:0] a_exp, b_exp;
  logic [6:0] a_frac, b_frac;
  logic       a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;

  assign sign   = a_i[15] ^ b_i[15];
  assign a_exp  = a_i[14:7];
  assign b_exp  = b_i[14:7];
  assign a_frac = a_i[6:0];
  assign b_frac = b_i[6:0];
  assign a_zero = a_exp == 8'h00;  // zero or subnormal
  assign b_zero = b_exp == 8'h00;
  assign a_inf  = a_exp == 8'hFF && a_frac == '0;
  assign b_inf  = b_exp == 8'hFF && b_frac == '0;
  assign a_nan  = a_exp == 8'hFF && a_frac != '0;
  assign b_nan  = b_exp == 8'hFF && b_frac != '0;

  // (1.a_frac) * (1.b_frac) = sig / 2^14, sig in [2^14, 2^16).
  logic [15:0] sig;
  logic        carry;      // product in [2, 4)
  logic signed [9:0] exp;  // biased result exponent, -125 .. 382
  logic [22:0] frac;

  assign sig   = {1'b1, a_frac} * {1'b1, b_frac};
  assign carry = sig[15];
  assign exp   = $signed({2'b00, a_exp}) + $signed({2'b00, b_exp}) - 10'sd127
               + $signed({9'd0, carry});
  // Drop the hidden one; the remaining 14 or 15 bits go to the top of the fraction.
  assign frac  = carry ? {sig[14:0], 8'd0} : {sig[13:0], 9'd0};

  always_comb begin
    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) begin
      p_o = CANONICAL_NAN;
    end else if (a_inf || b_inf) begin
      p_o = {sign, 8'hFF, 23'd0};
    end else if (a_zero || b_zero || exp <= 10'sd0) begin
      p_o = {sign, 31'd0};
    end else if (exp >= 10'sd255) begin
      p_o = {sign, 8'hFF, 23'd0};
    end else begin
      p_o = {sign, exp[7:0], frac};
    end
  end

endmodule
