// SPDX-License-Identifier: Apache-2.0
// VPU requantization lane: one int32 accumulator value to one int8 value.
//
//   x   = sat32(acc_i + bias_i)
//   r   = MultiplyByQuantizedMultiplier(x, multiplier_i, exponent_i)
//       = RDBP(SRDHM(x << left, multiplier_i), right)
//         left = max(e, 0), right = max(-e, 0), e = exponent_i
//   q_o = min(max(zero_point_i + r, lo_i), hi_i)
//
// bit for bit as tpu::quant::act_lane in sw/common/include/tpu/quant.h, which
// follows TFLite's reference MultiplyByQuantizedMultiplier and gemmlowp's
// SaturatingRoundingDoublingHighMul and RoundingDivideByPOT. x << left is
// int32 two's complement: bits shifted out of the top are lost (the
// reference's int32 multiply x * 2^left, wrapping). The clamp order makes
// lo_i > hi_i yield hi_i. lo_i/hi_i are the final int8 bounds, already
// narrowed by the activation function (vpu_act_row computes them). No
// parameter is ever out of range for this block: every input combination
// has a defined result (e = -32, which CFG cannot load, acts as e = 0).
//
// Pipeline: 6 stages, all advancing together when en_i is high (the
// caller's pipeline enable; the block has no valid bits and no reset). The
// inputs are sampled at an edge with en_i high; q_o is the result 6 such
// edges later, from a flop, and holds while en_i is low.
//   R1  x = sat32(acc + bias); left, right from e   33-bit add, saturation
//   R2  x << left                                   barrel shift (5 levels of 2:1 muxes)
//   R3  four 17 x 17 partial products of x * M0     one MULT18X18D each
//   R4  y = SRDHM: partial products + 2^30, >> 31   two carry-save levels, one 48-bit add
//   R5  y >>> right and the RDBP rounding bit       barrel shift, AND-OR reductions
//   R6  zp + r, clamp                               three parallel adds, 2:1 muxes
// Every lane has its own M0 and e (per-channel requantization); the per-row
// values (zp - lo, ...) are computed from each lane's copy of the parameters,
// and copies of identical values in different lanes are merged by synthesis.
`include "tpu_macros.svh"

module vpu_requant (
  input  logic        clk_i,
  input  logic        en_i,          // pipeline enable
  input  logic [31:0] acc_i,         // accumulator, int32
  input  logic [31:0] bias_i,        // bias, int32 (0 when the ACT has no bias)
  input  logic [31:0] multiplier_i,  // M0, int32 (Q31)
  input  logic [5:0]  exponent_i,    // e, signed: > 0 left shift by e, <= 0 right shift by -e
  input  logic [31:0] zero_point_i,  // zp, int32, added after the shift
  input  logic [7:0]  lo_i,          // lower clamp bound, int8
  input  logic [7:0]  hi_i,          // upper clamp bound, int8
  output logic [7:0]  q_o            // result, int8, 6 enabled cycles later
);

  localparam logic [31:0] Int32Min = 32'h8000_0000;
  localparam logic [31:0] Int32Max = 32'h7fff_ffff;

  // Row parameters travel beside the lane data; stage k holds r<k>_*_q.
  logic [31:0] r1_m_q, r2_m_q, r1_zp_q, r2_zp_q, r3_zp_q, r4_zp_q;
  logic [7:0]  r5_zp_q;  // only the low byte is added in R6
  logic [4:0]  r1_left_q, r1_right_q, r2_right_q;
  logic [7:0]  r1_lo_q, r1_hi_q, r2_lo_q, r2_hi_q, r3_lo_q, r3_hi_q, r4_lo_q, r4_hi_q;
  logic [7:0]  r5_lo_q, r5_hi_q;

  // The stages' logic is written as functions of the previous stage's
  // registers, called in the registers' loads: a simulator then computes it
  // only in the cycles in which the lane advances (en_i), not in every cycle
  // as it would a continuous assignment. The logic is the same.
  //
  // e > 0: left = e; e <= 0: right = -e, modulo 32 (so e = -32 gives 0).
  `FFLNR(r1_m_q, multiplier_i, en_i)
  `FFLNR(r1_left_q, exponent_i[5] ? 5'd0 : exponent_i[4:0], en_i)
  `FFLNR(r1_right_q, exponent_i[5] ? 5'd0 - exponent_i[4:0] : 5'd0, en_i)
  `FFLNR(r1_zp_q, zero_point_i, en_i)
  `FFLNR(r1_lo_q, lo_i, en_i)
  `FFLNR(r1_hi_q, hi_i, en_i)
  `FFLNR(r2_m_q, r1_m_q, en_i)
  `FFLNR(r2_right_q, r1_right_q, en_i)
  `FFLNR(r2_zp_q, r1_zp_q, en_i)
  `FFLNR(r2_lo_q, r1_lo_q, en_i)
  `FFLNR(r2_hi_q, r1_hi_q, en_i)
  `FFLNR(r3_zp_q, r2_zp_q, en_i)
  `FFLNR(r3_lo_q, r2_lo_q, en_i)
  `FFLNR(r3_hi_q, r2_hi_q, en_i)
  `FFLNR(r4_zp_q, r3_zp_q, en_i)
  `FFLNR(r4_lo_q, r3_lo_q, en_i)
  `FFLNR(r4_hi_q, r3_hi_q, en_i)
  `FFLNR(r5_zp_q, r4_zp_q[7:0], en_i)
  `FFLNR(r5_lo_q, r4_lo_q, en_i)
  `FFLNR(r5_hi_q, r4_hi_q, en_i)

  // ---------------------------------------------------------------------------
  // R1: x = sat32(acc + bias): a 33-bit sum saturates when its two top bits
  // differ.
  // ---------------------------------------------------------------------------
  function automatic logic [31:0] sat_add(logic [31:0] a, logic [31:0] b);
    logic [32:0] sum;
    sum = {a[31], a} + {b[31], b};
    if (sum[32] != sum[31]) return sum[32] ? Int32Min : Int32Max;
    return sum[31:0];
  endfunction

  logic [31:0] r1_x_q;

  `FFLNR(r1_x_q, sat_add(acc_i, bias_i), en_i)

  // ---------------------------------------------------------------------------
  // R2: x << left, int32 two's complement: the bits shifted out of the top
  // are dropped, as the reference's int32 product x * 2^left wraps. A barrel
  // shifter alone in its stage (five levels of 2:1 muxes).
  // ---------------------------------------------------------------------------
  logic [31:0] r2_x_q;

  `FFLNR(r2_x_q, r1_x_q << r1_left_q, en_i)

  // ---------------------------------------------------------------------------
  // R3: partial products. With x = xh * 2^16 + xl and M0 = mh * 2^16 + ml
  // (xh, mh signed 16 bits; xl, ml unsigned 16 bits):
  //   x * M0 = hh * 2^32 + (hl + lh) * 2^16 + ll
  //   hh = xh * mh, hl = xh * ml, lh = xl * mh, ll = xl * ml.
  // Each is a signed 17 x 17 product (one MULT18X18D) and fits in 32 bits:
  // |hh| <= 2^30, hl and lh lie in [-2^31 + 2^15, 2^31 - 2^16], ll < 2^32
  // unsigned.
  // SRDHM saturates only for x = M0 = INT32_MIN; that flag is taken here.
  // ---------------------------------------------------------------------------
  logic [31:0]        r3_hh_q, r3_hl_q, r3_lh_q;
  logic [15:0]        r3_ll_hi_q;  // ll[15:0] never reaches y (see R4)
  logic               r3_sat_q;
  logic [4:0]         r3_s_q;

  // x and M0's halves as 17-bit signed values: the high one signed, the low
  // one unsigned.
  function automatic logic signed [16:0] high(logic [15:0] h);
    return $signed({h[15], h});
  endfunction
  function automatic logic signed [16:0] low(logic [15:0] l);
    return $signed({1'b0, l});
  endfunction
  // The low 32 bits of a 17 x 17 product (its top bits are sign copies).
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [31:0] product(logic signed [16:0] a, logic signed [16:0] b);
    logic signed [33:0] p;
    p = a * b;
    return p[31:0];
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  `FFLNR(r3_hh_q, product(high(r2_x_q[31:16]), high(r2_m_q[31:16])), en_i)
  `FFLNR(r3_hl_q, product(high(r2_x_q[31:16]), low(r2_m_q[15:0])), en_i)
  `FFLNR(r3_lh_q, product(low(r2_x_q[15:0]), high(r2_m_q[31:16])), en_i)
  `FFLNR(r3_ll_hi_q, 16'(product(low(r2_x_q[15:0]), low(r2_m_q[15:0])) >> 16), en_i)
  `FFLNR(r3_sat_q, r2_x_q == Int32Min && r2_m_q == Int32Min, en_i)
  `FFLNR(r3_s_q, r2_right_q, en_i)

  // ---------------------------------------------------------------------------
  // R4: y = SRDHM(x, M0). quant.h: ab = x * M0 (exact, 64 bits);
  //   y = trunc((ab + nudge) / 2^31), nudge = 2^30 if ab >= 0 else 1 - 2^30.
  // The truncating division is computed as a floor (an arithmetic shift):
  //   ab >= 0: ab + 2^30 >= 0, so trunc = floor((ab + 2^30) / 2^31).
  //   ab <  0: t = ab + 1 - 2^30 < 0, and for negative t
  //            trunc(t / 2^31) = floor((t + 2^31 - 1) / 2^31)
  //                            = floor((ab + 2^30) / 2^31).
  // So in both cases y = (ab + 2^30) >>> 31: the sign-dependent nudge and the
  // round-toward-zero correction cancel exactly. The quotient fits in 32 bits
  // except for INT32_MIN * INT32_MIN (2^62 -> 2^31), which saturates.
  //
  // ab + 2^30 = t * 2^16 + ll[15:0] with
  //   t = {hh, ll[31:16]} + hl + lh + 2^14    (48 bits suffice: |t| < 2^47)
  // and y = t[46:15]. The four operands are reduced to two by two carry-save
  // levels (one LUT each), so the stage has a single carry chain.
  // ---------------------------------------------------------------------------
  localparam int unsigned TW = 48;

  logic [31:0]   r4_y_q;
  logic [31:0]   r4_half_q, r4_top_q;
  logic [4:0]    r4_s_q;

  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [31:0] srdhm(logic [31:0] hh, logic [15:0] ll_hi, logic [31:0] hl,
                                        logic [31:0] lh, logic sat);
    logic [TW-1:0] op_a, op_b, op_c, op_d, s1, c1, s2, c2, t;
    op_a = {hh, ll_hi};
    op_b = {{(TW - 32){hl[31]}}, hl};
    op_c = {{(TW - 32){lh[31]}}, lh};
    op_d = TW'(1) << 14;
    s1 = op_a ^ op_b ^ op_c;
    c1 = ((op_a & op_b) | (op_a & op_c) | (op_b & op_c)) << 1;
    s2 = s1 ^ c1 ^ op_d;
    c2 = ((s1 & c1) | (s1 & op_d) | (c1 & op_d)) << 1;
    t  = s2 + c2;  // t[47] is a sign copy, t[14:0] the discarded fraction
    return sat ? Int32Max : t[46:15];
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  // RDBP masks of the row's shift s: the rounding looks at bit s - 1 of y
  // (top) and the bits below it (half = 2^(s-1) - 1); none for s = 0.
  function automatic logic [31:0] mask(logic [4:0] s);
    return (32'd1 << s) - 32'd1;
  endfunction

  `FFLNR(r4_y_q, srdhm(r3_hh_q, r3_ll_hi_q, r3_hl_q, r3_lh_q, r3_sat_q), en_i)
  `FFLNR(r4_half_q, mask(r3_s_q) >> 1, en_i)
  `FFLNR(r4_top_q, mask(r3_s_q) & ~(mask(r3_s_q) >> 1), en_i)
  `FFLNR(r4_s_q, r3_s_q, en_i)

  // ---------------------------------------------------------------------------
  // R5: r = RDBP(y, s) = (y >>> s) + round, as in quant.h: rounds half away
  // from zero.
  //   mask = 2^s - 1, remainder = y & mask, threshold = mask/2 + (y < 0),
  //   round = remainder > threshold.
  // For s >= 1, remainder > 2^(s-1) - 1 means bit s - 1 of y is set, and
  // remainder > 2^(s-1) means that bit and some bit below it; for s = 0,
  // round = 0. So round = y[s-1] && (y >= 0 || (y & half) != 0): two AND-OR
  // reductions instead of a compare. The increment is done in R6, where it
  // costs nothing (carry-in).
  // Per-row values for R6: zp - lo and zp - hi - 1 (33 bits signed), lo > hi.
  // ---------------------------------------------------------------------------
  logic [31:0]        r5_ysh_q;
  logic               r5_round_q, r5_lo_gt_hi_q;
  logic signed [32:0] r5_zp_lo_q, r5_zp_hi1_q;

  `FFLNR(r5_ysh_q, $unsigned($signed(r4_y_q) >>> r4_s_q), en_i)
  `FFLNR(r5_round_q, |(r4_y_q & r4_top_q) && (!r4_y_q[31] || |(r4_y_q & r4_half_q)), en_i)
  `FFLNR(r5_zp_lo_q,
         $signed({r4_zp_q[31], r4_zp_q}) - $signed({{25{r4_lo_q[7]}}, r4_lo_q}), en_i)
  `FFLNR(r5_zp_hi1_q,
         $signed({r4_zp_q[31], r4_zp_q}) + $signed({{25{~r4_hi_q[7]}}, ~r4_hi_q}), en_i)
  `FFLNR(r5_lo_gt_hi_q, $signed(r4_lo_q) > $signed(r4_hi_q), en_i)

  // ---------------------------------------------------------------------------
  // R6: q = min(max(v, lo), hi), v = zp + r, r = ysh + round.
  //   max(v, lo) > hi  <=>  v > hi || lo > hi          -> hi
  //   otherwise v < lo                                 -> lo
  //   otherwise lo <= v <= hi, so v is int8            -> v[7:0]
  // with v < lo  <=>  ysh + (zp - lo) + round < 0
  // and  v > hi  <=>  ysh + (zp - hi - 1) + round >= 0,
  // three adds that run in parallel (34 bits exact), each taking round as its
  // carry-in: {a, 1} + {b, cin} = 2 (a + b + cin) + (1 - cin), so a + b + cin
  // is the sum's bits [W:1].
  // ---------------------------------------------------------------------------
  logic [7:0] q_q;

  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [7:0] clamp(logic [31:0] ysh, logic round, logic [7:0] zp,
                                       logic signed [32:0] zp_lo, logic signed [32:0] zp_hi1,
                                       logic lo_gt_hi, logic [7:0] lo, logic [7:0] hi);
    logic [34:0] lt_sum, ge_sum;  // only their signs matter; bit 0 holds the carry-in
    logic [8:0]  v_sum;
    lt_sum = {{2{ysh[31]}}, ysh, 1'b1} + {zp_lo[32], zp_lo, round};
    ge_sum = {{2{ysh[31]}}, ysh, 1'b1} + {zp_hi1[32], zp_hi1, round};
    v_sum  = {ysh[7:0], 1'b1} + {zp, round};
    if (!ge_sum[34] || lo_gt_hi) return hi;  // v > hi
    if (lt_sum[34]) return lo;               // v < lo
    return v_sum[8:1];
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  `FFLNR(q_q, clamp(r5_ysh_q, r5_round_q, r5_zp_q, r5_zp_lo_q, r5_zp_hi1_q, r5_lo_gt_hi_q, r5_lo_q,
                    r5_hi_q), en_i)

  assign q_o = q_q;

endmodule
