// SPDX-License-Identifier: Apache-2.0
// The bf16 datapath's arithmetic as functions (docs/numerics.md), so that
// one description serves the per-PE modules (bf16_mul.sv, fp32_add.sv,
// mxu_mac.sv) and the MXU array written as loops (mxu_array.sv, gen_grid),
// where a module instance per PE is what the loop form avoids. Both
// functions are combinational; the callers put the registers around them.
// Bit-exact with tpu::bf16_mul and tpu::fp32_add (sw/common/src/bf16.cpp).
//
// bf16_mul: bf16 x bf16 -> fp32. The product of two 8-bit significands has
// at most 16 bits, so every result in fp32's normal range is exact: there is
// no rounding.
//   - subnormal operands are zero (of their sign);
//   - NaN operand, or inf * zero          -> canonical quiet NaN 0x7FC00000;
//   - inf * nonzero                       -> inf;
//   - product >= 2^128                    -> inf;
//   - nonzero product < 2^-126            -> zero;
//   - every non-NaN result has sign(a) xor sign(b).
//
// fp32_add: fp32 + fp32, round to nearest even.
//   - subnormal operands are zero (of their sign);
//   - NaN operand, or inf + -inf              -> canonical quiet NaN 0x7FC00000;
//   - inf + finite                            -> that inf;
//   - x + -x                                  -> +0, (-0) + (-0) -> -0;
//   - a nonzero sum below 2^-126              -> zero with the sum's sign. Such
//     a sum is a multiple of 2^-149, hence exact: flushing before or after
//     rounding is the same;
//   - a sum that rounds to 2^128 or more      -> inf.
//   Datapath: order the operands by magnitude (op_hi, op_lo); shift op_lo
//   right by the exponent difference into 24 significand bits plus guard,
//   round and sticky; add or subtract; normalize (one right shift on a carry,
//   or a left shift by the leading-zero count after a cancellation); round to
//   nearest even on guard/round/sticky; a carry out of the rounding bumps the
//   exponent. Three extra bits give the correctly rounded result: a left
//   shift by more than one happens only when the exponents differ by at most
//   one, and then nothing has reached the sticky bit.
package fp_pkg;

  localparam logic [31:0] CANONICAL_NAN = 32'h7FC0_0000;

  // fp32_add's widths
  localparam int unsigned SIG_W  = 24;         // significand with the hidden one
  localparam int unsigned EXT_W  = SIG_W + 3;  // + guard, round, sticky
  localparam int unsigned MAX_SH = EXT_W - 1;  // shifting further leaves only sticky

  function automatic logic [31:0] bf16_mul(logic [15:0] a, logic [15:0] b);
    logic              sign;
    logic [7:0]        a_exp, b_exp;
    logic [6:0]        a_frac, b_frac;
    logic              a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [15:0]       sig;    // (1.a_frac) * (1.b_frac) = sig / 2^14, in [2^14, 2^16)
    logic              carry;  // product in [2, 4)
    logic signed [9:0] exp;    // biased result exponent, -125 .. 382
    logic [22:0]       frac;

    sign   = a[15] ^ b[15];
    a_exp  = a[14:7];
    b_exp  = b[14:7];
    a_frac = a[6:0];
    b_frac = b[6:0];
    a_zero = a_exp == 8'h00;  // zero or subnormal
    b_zero = b_exp == 8'h00;
    a_inf  = a_exp == 8'hFF && a_frac == '0;
    b_inf  = b_exp == 8'hFF && b_frac == '0;
    a_nan  = a_exp == 8'hFF && a_frac != '0;
    b_nan  = b_exp == 8'hFF && b_frac != '0;

    sig   = {1'b1, a_frac} * {1'b1, b_frac};
    carry = sig[15];
    exp   = $signed({2'b00, a_exp}) + $signed({2'b00, b_exp}) - 10'sd127
          + $signed({9'd0, carry});
    // Drop the hidden one; the remaining 14 or 15 bits go to the top of the fraction.
    frac  = carry ? {sig[14:0], 8'd0} : {sig[13:0], 9'd0};

    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) return CANONICAL_NAN;
    if (a_inf || b_inf)                                         return {sign, 8'hFF, 23'd0};
    if (a_zero || b_zero || exp <= 10'sd0)                      return {sign, 31'd0};
    if (exp >= 10'sd255)                                        return {sign, 8'hFF, 23'd0};
    return {sign, exp[7:0], frac};
  endfunction

  function automatic logic [31:0] fp32_add(logic [31:0] a, logic [31:0] b);
    logic                    a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [31:0]             op_hi;             // the operand of larger magnitude
    logic [30:0]             op_lo;             // the other one's magnitude
    logic                    swap, eff_sub;
    logic [7:0]              exp_diff;
    logic [4:0]              shamt;
    logic [SIG_W+MAX_SH-1:0] lo_wide;           // op_lo's significand shifted right, all bits kept
    logic [EXT_W-1:0]        hi_ext, lo_ext;
    logic [EXT_W:0]          raw;
    logic [4:0]              lz;                // leading zeros of raw[EXT_W-1:0]
    logic [EXT_W-1:0]        norm;
    logic signed [9:0]       exp_n;             // biased exponent of norm
    logic                    round_up;
    logic [SIG_W:0]          sig_r;             // rounded; bit SIG_W set if it rounded up to 2.0
    logic signed [9:0]       exp_r;

    // ---- operands ----
    a_zero = a[30:23] == 8'h00;  // zero or subnormal
    b_zero = b[30:23] == 8'h00;
    a_inf  = a[30:23] == 8'hFF && a[22:0] == '0;
    b_inf  = b[30:23] == 8'hFF && b[22:0] == '0;
    a_nan  = a[30:23] == 8'hFF && a[22:0] != '0;
    b_nan  = b[30:23] == 8'hFF && b[22:0] != '0;

    // The result takes op_hi's sign; op_lo's sign is in eff_sub.
    swap    = b[30:0] > a[30:0];
    op_hi   = swap ? b : a;
    op_lo   = swap ? a[30:0] : b[30:0];
    eff_sub = a[31] ^ b[31];

    // ---- alignment ----
    exp_diff = op_hi[30:23] - op_lo[30:23];
    shamt    = exp_diff > 8'(MAX_SH) ? 5'(MAX_SH) : exp_diff[4:0];
    lo_wide  = {1'b1, op_lo[22:0], {MAX_SH{1'b0}}} >> shamt;
    hi_ext   = {1'b1, op_hi[22:0], 3'b000};
    // Top 26 bits (significand, guard, round), then everything below ORed into sticky.
    lo_ext   = {lo_wide[SIG_W+MAX_SH-1 -: EXT_W-1], |lo_wide[SIG_W-1:0]};

    // ---- add or subtract (op_hi >= op_lo, so no negative result) ----
    raw = eff_sub ? {1'b0, hi_ext} - {1'b0, lo_ext}
                  : {1'b0, hi_ext} + {1'b0, lo_ext};

    // ---- normalize: hidden one to bit EXT_W-1 ----
    lz = 5'(EXT_W);
    for (int i = 0; i < EXT_W; i++) begin
      if (raw[i]) lz = 5'(EXT_W - 1 - i);
    end
    if (raw[EXT_W]) begin  // carry out of an addition: one bit right, keep the sticky
      norm  = {raw[EXT_W:2], raw[1] | raw[0]};
      exp_n = $signed({2'b00, op_hi[30:23]}) + 10'sd1;
    end else begin         // cancellation: exact, nothing reached the sticky bit if lz > 1
      norm  = raw[EXT_W-1:0] << lz;
      exp_n = $signed({2'b00, op_hi[30:23]}) - $signed({5'd0, lz});
    end

    // ---- round to nearest, ties to even ----
    round_up = norm[2] & (norm[1] | norm[0] | norm[3]);
    sig_r    = {1'b0, norm[EXT_W-1:3]} + (SIG_W+1)'(round_up);
    exp_r    = exp_n + $signed({9'd0, sig_r[SIG_W]});
    // On a carry out of the rounding sig_r is exactly 2^24: its fraction bits
    // are zero. The hidden one (sig_r[SIG_W-1]) is implied by the exponent.

    // ---- result ----
    if (a_nan || b_nan || (a_inf && b_inf && eff_sub)) return CANONICAL_NAN;
    if (a_inf)                        return {a[31], 8'hFF, 23'd0};
    if (b_inf)                        return {b[31], 8'hFF, 23'd0};
    if (a_zero && b_zero)             return {a[31] & b[31], 31'd0};
    if (a_zero)                       return b;
    if (b_zero)                       return a;
    if (raw == '0)                    return 32'd0;                       // exact cancellation
    if (exp_n <= 10'sd0)              return {op_hi[31], 31'd0};          // below 2^-126 (exact): flush
    if (exp_r >= 10'sd255)            return {op_hi[31], 8'hFF, 23'd0};
    return {op_hi[31], exp_r[7:0], sig_r[SIG_W-2:0]};
  endfunction

  // ---- The VPU's fp32 lanes (ACT F32, VOP BF16; docs/numerics.md) ----

  // fp32 x fp32, round to nearest even; tpu::fp32_mul. Subnormal operands
  // are zero; NaN, or inf x zero, is the canonical NaN; an exact product
  // below 2^-126 is zero (decided before rounding); a rounded product of
  // 2^128 or more is inf. The 48-bit significand product is exact; the 24
  // bits below its leading one are kept, the rest gives guard and sticky.
  function automatic logic [31:0] fp32_mul(logic [31:0] a, logic [31:0] b);
    logic               sign;
    logic               a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    logic [47:0]        prod;   // (1.fa)(1.fb) = prod / 2^46, in [2^46, 2^48)
    logic               carry;  // product in [2, 4)
    logic signed [10:0] exp;    // biased exponent before rounding, -125 .. 382
    logic [22:0]        frac;   // the kept significand below its leading one
    logic               guard, sticky, round_up;
    logic [23:0]        frac_r; // rounded; bit 23 set if it rounded up to 2.0
    logic signed [10:0] exp_r;

    sign   = a[31] ^ b[31];
    a_zero = a[30:23] == 8'h00;  // zero or subnormal
    b_zero = b[30:23] == 8'h00;
    a_inf  = a[30:23] == 8'hFF && a[22:0] == '0;
    b_inf  = b[30:23] == 8'hFF && b[22:0] == '0;
    a_nan  = a[30:23] == 8'hFF && a[22:0] != '0;
    b_nan  = b[30:23] == 8'hFF && b[22:0] != '0;

    prod   = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};
    carry  = prod[47];
    exp    = $signed({3'b000, a[30:23]}) + $signed({3'b000, b[30:23]}) - 11'sd127
           + $signed({10'd0, carry});
    frac   = carry ? prod[46:24] : prod[45:23];
    guard  = carry ? prod[23] : prod[22];
    sticky = carry ? |prod[22:0] : |prod[21:0];
    round_up = guard & (sticky | frac[0]);
    frac_r = {1'b0, frac} + {23'd0, round_up};
    exp_r  = exp + $signed({10'd0, frac_r[23]});
    // A carry out of the fraction means the significand rounded up to 2.0:
    // the fraction bits are then zero, as the fraction of 2^(exp + 1) is.

    if (a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf)) return CANONICAL_NAN;
    if (a_inf || b_inf)                                         return {sign, 8'hFF, 23'd0};
    if (a_zero || b_zero || exp <= 11'sd0)                      return {sign, 31'd0};
    if (exp_r >= 11'sd255)                                      return {sign, 8'hFF, 23'd0};
    return {sign, exp_r[7:0], frac_r[22:0]};
  endfunction

  // a < b for non-NaN operands, -inf < ... < -0 < +0 < ... < +inf.
  function automatic logic fp32_less(logic [31:0] a, logic [31:0] b);
    if (a[31] != b[31]) return a[31];
    return a[31] ? a[30:0] > b[30:0] : a[30:0] < b[30:0];
  endfunction

  // A subnormal as a zero of its sign.
  function automatic logic [31:0] fp32_flush(logic [31:0] x);
    return x[30:23] == 8'h00 ? {x[31], 31'd0} : x;
  endfunction

  function automatic logic fp32_is_nan(logic [30:0] x);  // the magnitude
    return x[30:23] == 8'hFF && x[22:0] != '0;
  endfunction

  // Maximum and minimum (tpu::fp32_max, fp32_min): NaN in gives the canonical
  // NaN; subnormals are zeros; -0 is below +0.
  function automatic logic [31:0] fp32_minmax(logic [31:0] a, logic [31:0] b, logic max);
    logic [31:0] x, y;
    x = fp32_flush(a);
    y = fp32_flush(b);
    if (fp32_is_nan(a[30:0]) || fp32_is_nan(b[30:0])) return CANONICAL_NAN;
    return (max ? fp32_less(x, y) : fp32_less(y, x)) ? y : x;
  endfunction

  function automatic logic [31:0] fp32_max(logic [31:0] a, logic [31:0] b);
    return fp32_minmax(a, b, 1'b1);
  endfunction

  function automatic logic [31:0] fp32_min(logic [31:0] a, logic [31:0] b);
    return fp32_minmax(a, b, 1'b0);
  endfunction

  // fp32 -> bf16 (tpu::fp32_to_bf16): NaN -> 0x7FC0; zeros and subnormals
  // -> signed zero; inf stays; otherwise the upper half rounded to nearest
  // even on the lower, a carry running into the exponent (up to inf).
  function automatic logic [15:0] fp32_to_bf16(logic [31:0] x);
    logic round_up;
    round_up = x[15] & ((x[14:0] != '0) | x[16]);
    if (fp32_is_nan(x[30:0]))  return 16'h7FC0;
    if (x[30:23] == 8'h00)     return {x[31], 15'd0};
    if (x[30:23] == 8'hFF)     return x[31:16];
    return x[31:16] + {15'd0, round_up};
  endfunction

endpackage
