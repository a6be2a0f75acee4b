// SPDX-License-Identifier: Apache-2.0
// VPU activation row: one row of N int32 accumulators to one row of N int8
// values (the non-RAW ACT instruction, see docs/isa.md and docs/vpu.md).
//
// Per lane j, exactly tpu::quant::act_lane of sw/common/include/tpu/quant.h:
//   q[j] = clamp(zp + MBQM(sat32(acc[j] + bias[j]), M0[j], e[j]), lo, hi)
//   MBQM(x, M0, e) = RDBP(SRDHM(x << max(e, 0), M0), max(-e, 0))
// (TFLite's MultiplyByQuantizedMultiplier; each lane has its own multiplier
// and exponent, for per-channel requantization)
//   lo = QMIN, hi = QMAX                       func = none or LUT
//   lo = max(QMIN, zp)                         func = ReLU, ReLU6
//   hi = min(QMAX, RELU6_MAX)                  func = ReLU6
//   out[j] = func == LUT ? LUT[q[j] + 128] : q[j]
// bias[j] is in_bias_i[j] when in_bias_en_i is set, else 0. Every parameter
// travels with its row, so rows with different parameters may follow each
// other back to back. The LUT is held here (vpu_lut, block RAM) and written
// through the lut_wr_* port.
//
// Pipeline (Stages = 8 registers before the output register, all moving
// together on the global enable `en`):
//   S1      input register (with zp saturated to int8); the activation
//           bounds lo/hi are computed from it
//   S2..S7  vpu_requant (6 stages), its result q is S7
//   S8      the LUT lookup (vpu_lut; its read register is the stage) and q
// then the output register (a stream_spill, whose first slot drives out_*).
// Latency: 9 cycles from an input handshake to out_valid_o.
// Throughput: one row per cycle.
// Handshake: valid/ready; out_valid_o and out_row_o come from flops and are
// held while out_ready_i is low. in_ready_o depends on flops and clear_i only
// (the global enable `en`): a full output slot with a row in S8 stops the
// whole pipeline, the LUT read register included, so a stalled row keeps its
// looked-up values.
// LUT writes: lut_wr_en_i writes one entry. The caller must not write while
// a LUT row is in flight (from its handshake until it leaves S8), nor before
// lut_ready_o rises (the 256-cycle clear of the table after reset; rows are
// not accepted then either); both asserted below.
// clear_i drops every row in flight (the core's flush after a fault); the
// block is then as after reset, except that the table keeps its contents.
`include "tpu_macros.svh"

module vpu_act_row #(
  parameter int unsigned N     = tpu_pkg::ArrayN,  // lanes per row
  parameter int unsigned UserW = 1                 // sideband bits carried with each row
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  input  logic                                clear_i,          // flush: drops every row in flight
  // ---- lookup table (entry i maps q = i - 128) ----
  output logic                                lut_ready_o,      // the table's reset clear is done
  input  logic                                lut_wr_en_i,      // no LUT row may be in flight
  input  logic [7:0]                          lut_wr_idx_i,
  input  logic [tpu_pkg::Int8W-1:0]           lut_wr_data_i,
  // ---- input rows ----
  input  logic                                in_valid_i,
  output logic                                in_ready_o,
  input  logic [N-1:0][tpu_pkg::AccW-1:0]     in_acc_i,         // accumulators, int32
  input  logic [N-1:0][tpu_pkg::AccW-1:0]     in_bias_i,        // biases, int32
  input  logic                                in_bias_en_i,     // 0: bias is 0
  input  logic [N-1:0][31:0]                  in_multiplier_i,  // M0 per lane, Q31
  input  logic [N-1:0][5:0]                   in_exponent_i,    // e per lane, -31..31 (> 0 left)
  input  logic [31:0]                         in_zero_point_i,  // zp, int32
  input  logic [7:0]                          in_qmin_i,        // int8
  input  logic [7:0]                          in_qmax_i,        // int8
  input  logic [7:0]                          in_relu6_max_i,   // int8
  input  tpu_isa_pkg::act_func_e              in_func_i,
  input  logic [UserW-1:0]                    in_user_i,        // carried to out_user_o
  // ---- output rows ----
  output logic                                out_valid_o,
  input  logic                                out_ready_i,
  output logic [N-1:0][tpu_pkg::Int8W-1:0]    out_row_o,        // int8
  output logic [UserW-1:0]                    out_user_o
);

  if (N < 1 || UserW < 1) begin : gen_bad_param
    $error("vpu_act_row: N and UserW must be at least 1");
  end
  if (tpu_pkg::AccW != 32 || tpu_pkg::Int8W != 8) begin : gen_bad_width
    $error("vpu_act_row: requantization is defined for int32 in, int8 out");
  end

  localparam int unsigned Stages = 8;  // S1, vpu_requant's 6, the LUT stage

  // ---------------------------------------------------------------------------
  // Stage 1: input register. The pipeline advances when en is high.
  // ---------------------------------------------------------------------------
  logic                        en, in_fire, slot_ready, lut_ready;
  logic                        s1_valid_q;
  logic [N-1:0][31:0]          s1_acc_q, s1_bias_q;
  logic                        s1_bias_en_q;
  logic [N-1:0][31:0]          s1_mult_q;
  logic [N-1:0][5:0]           s1_exp_q;
  logic [31:0]                 s1_zp_q;
  logic signed [7:0]           in_zp_sat8, s1_zp_sat8_q;  // zp saturated to int8
  logic [7:0]                  s1_qmin_q, s1_qmax_q, s1_relu6_max_q;
  tpu_isa_pkg::act_func_e      s1_func_q;
  logic [UserW-1:0]            s1_user_q;

  assign in_ready_o = en && lut_ready && !clear_i;
  assign in_fire    = in_valid_i && in_ready_o;

  `FFL(s1_valid_q, in_fire, en || clear_i, 1'b0)
  `FFLNR(s1_acc_q, in_acc_i, in_fire)
  `FFLNR(s1_bias_q, in_bias_i, in_fire)
  `FFLNR(s1_bias_en_q, in_bias_en_i, in_fire)
  `FFLNR(s1_mult_q, in_multiplier_i, in_fire)
  `FFLNR(s1_exp_q, in_exponent_i, in_fire)
  `FFLNR(s1_zp_q, in_zero_point_i, in_fire)
  `FFLNR(s1_zp_sat8_q, in_zp_sat8, in_fire)
  `FFLNR(s1_qmin_q, in_qmin_i, in_fire)
  `FFLNR(s1_qmax_q, in_qmax_i, in_fire)
  `FFLNR(s1_relu6_max_q, in_relu6_max_i, in_fire)
  `FFLNR(s1_func_q, in_func_i, in_fire)
  `FFLNR(s1_user_q, in_user_i, in_fire)

  // ---------------------------------------------------------------------------
  // Clamp bounds of the activation, from stage 1. quant.h computes
  // lo = max(QMIN, zp) in 64 bits; here zp is first saturated to int8. That
  // gives the same final result: zp < -128 leaves lo = QMIN either way, and
  // zp > 127 gives lo = 127 instead of zp, where both make the clamp return hi
  // (hi <= 127, and max(v, 127) >= 127 >= hi).
  // ---------------------------------------------------------------------------
  // The saturation of zp (zp > 127 and zp < -128 as reductions of zp[31:7])
  // is done on the input, before the stage-1 register, so that only the
  // compares and muxes of the bounds lie between stage 1 and vpu_requant's
  // first register (that path was the block's critical one).
  logic signed [7:0] lo, hi;
  logic              relu, relu6, zp_above, zp_below;

  assign relu     = s1_func_q == tpu_isa_pkg::ActRelu || s1_func_q == tpu_isa_pkg::ActRelu6;
  assign relu6    = s1_func_q == tpu_isa_pkg::ActRelu6;
  assign zp_above = !in_zero_point_i[31] && |in_zero_point_i[30:7];
  assign zp_below = in_zero_point_i[31] && !(&in_zero_point_i[30:7]);

  always_comb begin
    in_zp_sat8 = $signed(in_zero_point_i[7:0]);
    if (zp_above) in_zp_sat8 = 8'sd127;
    else if (zp_below) in_zp_sat8 = -8'sd128;
  end

  always_comb begin
    lo = $signed(s1_qmin_q);
    hi = $signed(s1_qmax_q);
    if (relu && s1_zp_sat8_q > lo) lo = s1_zp_sat8_q;
    if (relu6 && $signed(s1_relu6_max_q) < hi) hi = $signed(s1_relu6_max_q);
  end

  // ---------------------------------------------------------------------------
  // Stages 2..7: requantization lanes. Row sideband (valid, LUT, user) moves
  // beside them; index k of the *_q vectors below is stage k + 2.
  // ---------------------------------------------------------------------------
  localparam int unsigned Side = Stages - 1;  // stages 2..8

  logic [Side-1:0]              side_valid_q;
  logic [Side-1:0]              side_lut_q;
  logic [Side-1:0][UserW-1:0]   side_user_q;
  logic [N-1:0][7:0]            q7;  // stage 7: requantized lanes

  `FFL(side_valid_q, clear_i ? '0 : {side_valid_q[Side-2:0], s1_valid_q}, en || clear_i, '0)
  `FFLNR(side_lut_q, {side_lut_q[Side-2:0], s1_func_q == tpu_isa_pkg::ActLut}, en)
  `FFLNR(side_user_q, {side_user_q[Side-2:0], s1_user_q}, en)

  // The lanes advance only while a row is in stages 1..6 (a row in stage 7,
  // q7, is taken by stage 8 without them): an idle VPU's requantization
  // registers hold, which costs a simulator nothing and saves their power.
  logic lane_en;
  assign lane_en = en && (s1_valid_q || |side_valid_q[Side-3:0]);

  for (genvar j = 0; j < N; j++) begin : gen_lane
    vpu_requant u_requant (
      .clk_i,
      .en_i        (lane_en),
      .acc_i       (s1_acc_q[j]),
      .bias_i      (s1_bias_en_q ? s1_bias_q[j] : 32'd0),
      .multiplier_i(s1_mult_q[j]),
      .exponent_i  (s1_exp_q[j]),
      .zero_point_i(s1_zp_q),
      .lo_i        (lo),
      .hi_i        (hi),
      .q_o         (q7[j])
    );
  end

  // ---------------------------------------------------------------------------
  // Stage 8: LUT lookup at index q + 128 (q with its sign bit inverted). The
  // table's read register is this stage's register for the looked-up value;
  // q itself is registered beside it. The table is read only for a stage-7
  // row that uses it (lut_rd): stage 8 reads lut_val only for such a row, and
  // the 16 lookups of an idle or a non-LUT row would cost the block RAMs
  // their read power and a simulator a table read per lane in every cycle.
  // ---------------------------------------------------------------------------
  logic [N-1:0][7:0] lut_idx, lut_val, s8_q_q, row_d;
  logic              s8_valid, s8_lut, lut_rd;

  assign lut_rd = en && side_valid_q[Side-2] && side_lut_q[Side-2];

  // Formed only for a row that reads the table (zero otherwise), so that a
  // simulator does not gather the lanes' results into it in every cycle.
  always_comb begin
    lut_idx = '0;
    if (lut_rd) lut_idx = q7 ^ {N{8'h80}};
  end

  vpu_lut #(
    .N(N)
  ) u_lut (
    .clk_i,
    .rst_ni,
    .ready_o  (lut_ready),
    .wr_en_i  (lut_wr_en_i),
    .wr_idx_i (lut_wr_idx_i),
    .wr_data_i(lut_wr_data_i),
    .rd_en_i  (lut_rd),
    .rd_idx_i (lut_idx),
    .rd_data_o(lut_val)
  );

  assign lut_ready_o = lut_ready;

  `FFLNR(s8_q_q, q7, en && side_valid_q[Side-2])  // a stage-7 row; idle otherwise

  assign s8_valid = side_valid_q[Side-1];
  assign s8_lut   = side_lut_q[Side-1];
  assign row_d    = s8_lut ? lut_val : s8_q_q;

  // ---------------------------------------------------------------------------
  // Output register. The pipeline moves unless stage 8 holds a row and the
  // slot cannot take it; slot_ready comes from a flop.
  // ---------------------------------------------------------------------------
  assign en = slot_ready || !s8_valid;

  stream_spill #(
    .Width(N * 8 + UserW)
  ) u_out_slot (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(s8_valid),
    .ready_o(slot_ready),
    .data_i ({side_user_q[Side-1], row_d}),
    .valid_o(out_valid_o),
    .ready_i(out_ready_i),
    .data_o ({out_user_o, out_row_o})
  );

  // ---------------------------------------------------------------------------
  // Interface rules
  // ---------------------------------------------------------------------------
  `ASSERT_NEXT(InValidHeld, in_valid_i && !in_ready_o && !clear_i, in_valid_i)
  `ASSERT_HELD(InDataHeld, in_valid_i && !in_ready_o && !clear_i,
      ({in_acc_i, in_bias_i, in_bias_en_i, in_multiplier_i, in_exponent_i, in_zero_point_i,
        in_qmin_i, in_qmax_i, in_relu6_max_i, in_func_i, in_user_i}))
  // A write changes the table under a LUT row in flight, and (through port 0
  // of the RAM) the looked-up value a stalled stage 8 holds.
  `ASSERT_IF(LutWriteNoLutRowInFlight, lut_wr_en_i,
             !(in_fire && in_func_i == tpu_isa_pkg::ActLut) &&
             !(s1_valid_q && s1_func_q == tpu_isa_pkg::ActLut) && !(|(side_valid_q & side_lut_q)))
  `ASSERT(LutWriteAfterClear, lut_wr_en_i -> lut_ready)

endmodule
