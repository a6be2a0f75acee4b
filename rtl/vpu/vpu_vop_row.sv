// SPDX-License-Identifier: Apache-2.0
// VPU element-wise row operations and pooling on int8 rows (the VOP
// instruction, see docs/isa.md and docs/vpu.md).
//
// Per lane j, exactly as in sim/model/quant.h:
//   ADD      out = sat8(a + b)                       one output row per input row
//   MUL      out = sat8(RDBP(a * b, shift))          one output row per input row
//   MAX      out = max(a, b)                         one output row per input row
//   POOLMAX  out = max of a over the group           one output row per group
//   POOLAVG  out = sat8(RDBP(sum of a, shift))       one output row per group
// A pooling group is the beats from one with in_first_i = 1 to the next one
// with in_last_i = 1 (one beat may be both); the output row appears for the
// group's last beat and carries that beat's in_user_i (and its shift, for
// POOLAVG). The caller makes groups of 2^shift rows; the sum is kept in 16
// bits, exact for groups of up to 256 rows. in_b_i is ignored by the pools.
// ADD, MUL and MAX ignore in_first_i and in_last_i, but must not appear
// inside a pooling group (asserted). Undefined op codes give a row of zeros.
//
// Pipeline: an input register (stage 1); the product, ADD/MAX and the pooling
// accumulator update, registered in stage 2 (rows that produce an output
// only); the rounding divide, saturation and op select; then the output
// register (a stream_spill).
// Latency: 3 cycles from the handshake of an ADD/MUL/MAX row, or of a group's
// last row, to out_valid_o.
// Throughput: one input row per cycle.
// Handshake: valid/ready; out_valid_o and out_row_o come from flops and are
// held while out_ready_i is low. in_ready_o depends on flops and clear_i: a
// full output slot stops stage 2, and stage 1 when it holds a row that
// produces an output (rows inside a pooling group keep flowing into the
// accumulator).
// clear_i drops every row in flight (the core's flush after a fault); the
// block is then as after reset.
`include "tpu_macros.svh"

module vpu_vop_row #(
  parameter int unsigned N     = tpu_pkg::ArrayN,  // lanes per row
  parameter int unsigned UserW = 1                 // sideband bits carried with each row
) (
  input  logic                              clk_i,
  input  logic                              rst_ni,
  input  logic                              clear_i,     // flush: drops every row in flight
  // ---- input rows ----
  input  logic                              in_valid_i,
  output logic                              in_ready_o,
  input  logic [N-1:0][tpu_pkg::Int8W-1:0]  in_a_i,      // row A, int8
  input  logic [N-1:0][tpu_pkg::Int8W-1:0]  in_b_i,      // row B, int8 (not used by pools)
  input  tpu_isa_pkg::vop_e                 in_op_i,
  input  logic [3:0]                        in_shift_i,  // MUL: 0..15, POOLAVG: log2(group)
  input  logic                              in_first_i,  // pools: first row of a group
  input  logic                              in_last_i,   // pools: last row of a group
  input  logic [UserW-1:0]                  in_user_i,   // carried to out_user_o
  // ---- output rows ----
  output logic                              out_valid_o,
  input  logic                              out_ready_i,
  output logic [N-1:0][tpu_pkg::Int8W-1:0]  out_row_o,   // int8
  output logic [UserW-1:0]                  out_user_o
);

  if (N < 1 || UserW < 1) begin : gen_bad_param
    $error("vpu_vop_row: N and UserW must be at least 1");
  end
  if (tpu_pkg::Int8W != 8) begin : gen_bad_width
    $error("vpu_vop_row: the operations are defined for int8 rows");
  end

  // Width of the lane arithmetic: the int8 x int8 product (-16256..16384) and
  // a pooling sum of up to 256 int8 values both fit in 16 bits, signed.
  localparam int unsigned SumW = 16;

  // Rounding divide by 2^s, half away from zero: quant.h's rdbp on a value that
  // fits in SumW bits (identical to rdbp on its int32 sign extension).
  //   mask = 2^s - 1, remainder = x & mask, threshold = mask/2 + (x < 0),
  //   rdbp = (x >>> s) + (remainder > threshold).
  // As in vpu_requant, the compare is two AND-OR reductions: for s >= 1,
  // remainder > 2^(s-1) - 1 is bit s - 1 of x (top = 2^(s-1)), and
  // remainder > 2^(s-1) is that bit and any bit below it (half = 2^(s-1) - 1);
  // top = half = 0 for s = 0 (no rounding).
  function automatic logic [SumW-1:0] rdbp(logic [SumW-1:0] x, logic [3:0] s,
                                           logic [SumW-1:0] top, logic [SumW-1:0] half);
    logic round;
    round = |(x & top) && (!x[SumW-1] || |(x & half));
    return $unsigned($signed(x) >>> s) + SumW'(round);
  endfunction

  // Saturates a signed SumW-bit value to int8. x > 127 and x < -128 are
  // reductions of x[SumW-1:7] (a few LUT levels) rather than compare chains:
  // in stage 2 they follow the rounding divide's shift and increment.
  function automatic logic [7:0] sat8(logic [SumW-1:0] x);
    if (!x[SumW-1] && |x[SumW-2:7]) return 8'h7f;
    if (x[SumW-1] && !(&x[SumW-2:7])) return 8'h80;
    return x[7:0];
  endfunction

  function automatic logic [SumW-1:0] sext(logic [7:0] v);
    return {{(SumW - 8){v[7]}}, v};
  endfunction

  // A lane's functions of stage 1: its int8 operands a and b, and its open
  // pooling group's running value pool.
  // The group's running maximum (POOLMAX) or sum (POOLAVG) after a; the
  // group's first row restarts it.
  function automatic logic [SumW-1:0] pool_next(tpu_isa_pkg::vop_e op, logic first, logic [7:0] a,
                                                logic [SumW-1:0] pool);
    if (first) return sext(a);
    if (op == tpu_isa_pkg::VopPoolMax) return ($signed(sext(a)) > $signed(pool)) ? sext(a) : pool;
    return pool + sext(a);
  endfunction

  // The input of the rounding divide, shared by MUL (the product) and
  // POOLAVG (the sum).
  function automatic logic [SumW-1:0] rounding_input(tpu_isa_pkg::vop_e op, logic first,
                                                     logic [7:0] a, logic [7:0] b,
                                                     logic [SumW-1:0] pool);
    if (op == tpu_isa_pkg::VopMul) return $unsigned($signed(sext(a)) * $signed(sext(b)));
    return pool_next(op, first, a, pool);
  endfunction

  // The result of the operations that need no rounding.
  function automatic logic [7:0] direct(tpu_isa_pkg::vop_e op, logic first, logic [7:0] a,
                                        logic [7:0] b, logic [SumW-1:0] pool);
    unique case (op)
      tpu_isa_pkg::VopAdd:     return sat8(sext(a) + sext(b));
      tpu_isa_pkg::VopMax:     return ($signed(a) > $signed(b)) ? a : b;
      tpu_isa_pkg::VopMin:     return ($signed(a) < $signed(b)) ? a : b;
      tpu_isa_pkg::VopPoolMax: return 8'(pool_next(op, first, a, pool));
      default:                 return '0;  // MUL, POOLAVG (rounded below), undefined ops
    endcase
  endfunction

  function automatic logic is_pool(tpu_isa_pkg::vop_e op);
    return !tpu_isa_pkg::vop_binary(op);
  endfunction

  // ---------------------------------------------------------------------------
  // Stage 1: input register. The pipeline advances when en is high.
  // ---------------------------------------------------------------------------
  logic                 en, en2, in_fire, slot_ready;
  logic                 s1_valid_q;
  logic [N-1:0][7:0]    s1_a_q, s1_b_q;
  tpu_isa_pkg::vop_e    s1_op_q;
  logic [3:0]           s1_shift_q;
  logic                 s1_first_q, s1_last_q;
  logic [UserW-1:0]     s1_user_q;

  assign in_ready_o = en && !clear_i;
  assign in_fire    = in_valid_i && in_ready_o;

  `FFL(s1_valid_q, in_fire, en || clear_i, 1'b0)
  `FFLNR(s1_a_q, in_a_i, in_fire)
  `FFLNR(s1_b_q, in_b_i, in_fire)
  `FFLNR(s1_op_q, in_op_i, in_fire)
  `FFLNR(s1_shift_q, in_shift_i, in_fire)
  `FFLNR(s1_first_q, in_first_i, in_fire)
  `FFLNR(s1_last_q, in_last_i, in_fire)
  `FFLNR(s1_user_q, in_user_i, in_fire)

  // ---------------------------------------------------------------------------
  // Stage 1 -> 2: lanes. pool_q holds the running sum (POOLAVG) or maximum
  // (POOLMAX) of the open group; the group's first row restarts it. A row
  // that produces an output moves to stage 2 with its rounding input (the
  // product or the pooling sum) and its ADD/MAX/POOLMAX result.
  // ---------------------------------------------------------------------------
  logic              s1_pool, s1_emit, pool_load, s1_rdbp;
  logic [SumW-1:0]   mask, half;
  logic              s2_valid_q, s2_rdbp_q;
  logic [3:0]        s2_shift_q;
  logic [SumW-1:0]   s2_top_q, s2_half_q;
  logic [UserW-1:0]  s2_user_q;
  logic [N-1:0][7:0] row_d;

  assign s1_pool   = is_pool(s1_op_q);
  assign s1_emit   = !s1_pool || s1_last_q;  // stage 1's row produces an output row
  assign pool_load = en && s1_valid_q && s1_pool;
  assign s1_rdbp   = s1_op_q == tpu_isa_pkg::VopMul || s1_op_q == tpu_isa_pkg::VopPoolAvg;
  assign mask      = (SumW'(1) << s1_shift_q) - SumW'(1);
  assign half      = mask >> 1;

  // Stage 2's data registers load only with a row (s2_load): without one
  // they are never read. The lanes' logic is written as functions called in
  // the loads of pool_q and stage 2, not as continuous assignments, so an
  // idle VPU's lanes cost a simulator's model no arithmetic (the logic is
  // the same).
  logic s2_load;
  assign s2_load = en2 && s1_valid_q;

  `FFL(s2_valid_q, s1_valid_q && s1_emit && !clear_i, en2 || clear_i, 1'b0)
  `FFLNR(s2_rdbp_q, s1_rdbp, s2_load)
  `FFLNR(s2_shift_q, s1_shift_q, s2_load)
  `FFLNR(s2_top_q, mask & ~half, s2_load)
  `FFLNR(s2_half_q, half, s2_load)
  `FFLNR(s2_user_q, s1_user_q, s2_load)

  for (genvar j = 0; j < N; j++) begin : gen_lane
    logic [SumW-1:0] pool_q, s2_x_q;
    logic [7:0]      s2_direct_q;

    // One block, pool_q's readers first: as three blocks, Verilator 5.006
    // kept a shadow copy of pool_q that it copied in and out in every cycle.
    always_ff @(posedge clk_i) begin
      if (s2_load) begin
        s2_x_q      <= rounding_input(s1_op_q, s1_first_q, s1_a_q[j], s1_b_q[j], pool_q);
        s2_direct_q <= direct(s1_op_q, s1_first_q, s1_a_q[j], s1_b_q[j], pool_q);
      end
      if (pool_load) pool_q <= pool_next(s1_op_q, s1_first_q, s1_a_q[j], pool_q);
    end

    // Stage 2: the rounding divide and saturation (MUL, POOLAVG). An if, not
    // a ?:, so that the simulator computes them only after such a row: it
    // evaluates this logic in every cycle, and the functions' bodies would
    // run in full either side of a ?:.
    always_comb begin
      row_d[j] = s2_direct_q;
      if (s2_rdbp_q) row_d[j] = sat8(rdbp(s2_x_q, s2_shift_q, s2_top_q, s2_half_q));
    end
  end

  // ---------------------------------------------------------------------------
  // Output register. Stage 2 moves unless it holds a row and the slot cannot
  // take it (en2); stage 1 moves when stage 2 does or when its row produces
  // no output (en). Both come from flops.
  // ---------------------------------------------------------------------------
  assign en2 = slot_ready || !s2_valid_q;
  assign en  = en2 || !(s1_valid_q && s1_emit);

  stream_spill #(
    .Width(N * 8 + UserW)
  ) u_out_slot (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(s2_valid_q),
    .ready_o(slot_ready),
    .data_i ({s2_user_q, row_d}),
    .valid_o(out_valid_o),
    .ready_i(out_ready_i),
    .data_o ({out_user_o, out_row_o})
  );

  // ---------------------------------------------------------------------------
  // Interface rules. Pooling groups are well formed: a group starts with
  // first, continues with the same pooling op and ends with last, and no
  // other row comes in between.
  // ---------------------------------------------------------------------------
  `ASSERT_NEXT(InValidHeld, in_valid_i && !in_ready_o && !clear_i, in_valid_i)
  `ASSERT_HELD(InDataHeld, in_valid_i && !in_ready_o && !clear_i,
      ({in_a_i, in_b_i, in_op_i, in_shift_i, in_first_i, in_last_i, in_user_i}))
  `ASSERT_IF(InOpDefined, in_valid_i, tpu_isa_pkg::vop_defined(in_op_i))

`ifndef SYNTHESIS
  logic              group_open_q;
  tpu_isa_pkg::vop_e group_op_q;

  `FFL(group_open_q, !in_last_i && !clear_i, (in_fire && is_pool(in_op_i)) || clear_i, 1'b0)
  `FFLNR(group_op_q, in_op_i, in_fire && is_pool(in_op_i) && in_first_i)

  `ASSERT_IF(InGroupOrder, in_valid_i && is_pool(in_op_i),
             (in_first_i != group_open_q) && (in_first_i || in_op_i == group_op_q))
  `ASSERT(InGroupClosed, in_valid_i && !is_pool(in_op_i) -> !group_open_q)
`endif

endmodule
