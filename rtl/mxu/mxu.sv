// SPDX-License-Identifier: Apache-2.0
// MXU: weight-stationary N x N systolic matrix unit.
//
// Computes out_row = in_row x W for every input row, where W is the N x N
// weight tile currently in use. Whole rows in, whole rows out; the skew into
// the array and the de-skew out of it are inside this block.
//
// Weights: N beats on wgt_* make one tile, row 0 first (beat k is row k of W,
//   element j is W[k][j]). Every PE holds two tiles (double buffering): the
//   next tile shifts in while the current one computes. wgt_ready_o is low
//   while both banks hold a tile that has not been retired.
// Inputs: in_row_i is one row of A (element k is A[m][k]). in_last_i marks the
//   last row that uses the current tile; the next row uses the next tile.
//   A row is held (in_ready_o low) until its tile is completely loaded, so a
//   swap to an incomplete tile, or rows with no weights at all, wait; they
//   never see a partial tile.
// Outputs: out_row_o element j is sum_k A[m][k] * W[k][j] (int32, wrapping),
//   in input order; out_last_o repeats in_last_i of that row.
//
// Datapath (docs/mxu.md, docs/numerics.md):
//   DatapathInt8 : int8 operands (DataW = 8), int32 results.
//   DatapathBf16 : bf16 operands (DataW = 16), fp32 results: column j is
//                  summed top to bottom from +0, each step an fp32 addition
//                  rounded to nearest even (tpu::bf16_dot_column).
//   DatapathBoth : 16-bit operand lanes, 32-bit results, and a format per
//                  input row: in_bf16_i = 1 computes the row as bf16 (fp32
//                  result), 0 as int8 on the low 8 bits of every lane (int32
//                  result). The format travels with the row through the skew
//                  and the PEs like the bank tag, so rows of either format
//                  follow each other with no bubble; out_bf16_o repeats it.
//   in_bf16_i is ignored and out_bf16_o is constant (0 for int8, 1 for bf16)
//   in the fixed datapaths, which have no register for it.
//
// Throughput: one input row and one output row per cycle. A tile used for at
// least N rows hides the loading of the next tile completely.
// Latency: 2*N + 3 cycles from an input handshake to out_valid_o, in every
// datapath (the PEs' multiply-add is pipelined, see mxu_pe.sv). The block
// holds up to 2*N + 4 rows: 2*N + 2 in the pipeline and 2 in the output slot.
// Backpressure: when the output slot is full and out_ready_i is low the
// whole array stops (one global enable, driven by flops).
// clear_i drops every tile, weight beat and row in flight (the core's flush
// after a fault); the block is then as after reset.
`include "tpu_macros.svh"

module mxu #(
  // ---- geometry ----
  parameter int unsigned        N        = tpu_pkg::ArrayN,       // array is N x N
  // ---- number format ----
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,  // PE arithmetic
  parameter int unsigned        DataW    = Datapath == tpu_pkg::DatapathInt8
                                           ? tpu_pkg::Int8W : 16,  // operand (lane) bits
  parameter int unsigned        AccW     = tpu_pkg::AccW          // result bits
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  logic                    clear_i,
  // ---- weight rows ----
  input  logic                    wgt_valid_i,
  output logic                    wgt_ready_o,
  input  logic [N-1:0][DataW-1:0] wgt_row_i,
  // ---- input rows ----
  input  logic                    in_valid_i,
  output logic                    in_ready_o,
  input  logic [N-1:0][DataW-1:0] in_row_i,
  input  logic                    in_last_i,
  input  logic                    in_bf16_i,    // DatapathBoth: the row is bf16 (else int8)
  // ---- output rows ----
  output logic                    out_valid_o,
  input  logic                    out_ready_i,
  output logic [N-1:0][AccW-1:0]  out_row_o,
  output logic                    out_last_o,
  output logic                    out_bf16_o,   // the row's format (in_bf16_i)
  // ---- status (for performance counters) ----
  output logic                    wgt_stall_o   // rows waiting for their tile
);

  if (N < 2) begin : gen_bad_n
    $error("mxu: N must be at least 2");
  end
  if (Datapath != tpu_pkg::DatapathInt8 && (DataW != 16 || AccW != 32)) begin : gen_bad_width
    $error("mxu: the bf16 and mixed datapaths need DataW = 16 and AccW = 32");
  end

  // The row format: a register per stage in the mixed datapath, a constant
  // in the fixed ones.
  localparam bit Mixed     = Datapath == tpu_pkg::DatapathBoth;
  localparam bit FixedBf16 = Datapath == tpu_pkg::DatapathBf16;

  localparam int unsigned RowW      = $clog2(N);
  localparam int unsigned MacStages = 3;  // PE: activation in -> psum out (mxu_pe.sv)
  // input handshake -> de-skewed array output: entry register, N-1 skew
  // stages, N PEs of which the last takes MacStages, N-1 de-skew stages
  localparam int unsigned Latency   = 2 * N + MacStages - 1;
  // One pass sums N int8 products (|a*w| <= 2^14), which needs 16 + log2(N)
  // bits: partial sums are that wide inside the array, the de-skew and the
  // output slot, and sign-extended to AccW at the port (bit-exact; saves flops
  // and shortens the adders). fp32 partial sums (bf16, mixed) need all 32.
  localparam int unsigned PsumW     = (Datapath == tpu_pkg::DatapathInt8 &&
                                       2 * DataW + $clog2(N) < AccW)
                                      ? 2 * DataW + $clog2(N) : AccW;

  // ---------------------------------------------------------------------------
  // Bank bookkeeping. Tiles fill bank load_bank_q and are consumed from bank
  // use_bank_q, both alternating 0, 1, 0, ... A bank is ready from the cycle
  // after its last beat until the cycle after the in_last_i row that retires
  // it; loading into a retired bank may start right then, because each weight
  // beat reaches a PE no earlier than the last row that used the old value
  // (both flows are skewed identically; see docs/mxu.md).
  // ---------------------------------------------------------------------------
  logic            en;
  logic [1:0]      bank_ready_q, bank_ready_d;
  logic            load_bank_q, load_bank_d, use_bank_q, use_bank_d;
  logic [RowW-1:0] load_row_q, load_row_d;
  logic            wgt_fire, in_fire;

  assign wgt_ready_o = en && !bank_ready_q[load_bank_q] && !clear_i;
  assign in_ready_o  = en && bank_ready_q[use_bank_q] && !clear_i;
  assign wgt_fire    = wgt_valid_i && wgt_ready_o;
  assign in_fire     = in_valid_i && in_ready_o;
  assign wgt_stall_o = in_valid_i && !bank_ready_q[use_bank_q];

  always_comb begin
    bank_ready_d = bank_ready_q;
    load_bank_d  = load_bank_q;
    use_bank_d   = use_bank_q;
    load_row_d   = load_row_q;
    if (wgt_fire) begin
      load_row_d = load_row_q + 1'b1;
      if (load_row_q == RowW'(N - 1)) begin
        load_row_d                = '0;
        bank_ready_d[load_bank_q] = 1'b1;
        load_bank_d               = !load_bank_q;
      end
    end
    if (in_fire && in_last_i) begin
      bank_ready_d[use_bank_q] = 1'b0;
      use_bank_d               = !use_bank_q;
    end
    if (clear_i) begin
      bank_ready_d = '0;
      load_bank_d  = 1'b0;
      use_bank_d   = 1'b0;
      load_row_d   = '0;
    end
  end

  `FF(bank_ready_q, bank_ready_d, '0)
  `FF(load_bank_q, load_bank_d, 1'b0)
  `FF(use_bank_q, use_bank_d, 1'b0)
  `FF(load_row_q, load_row_d, '0)

  // ---------------------------------------------------------------------------
  // Entry registers and skew. Activations and weight beats both go through one
  // entry register and a triangular skew (row r by r, column c by c), so a
  // beat and a row handshaken in the same cycle meet every PE in step.
  // ---------------------------------------------------------------------------
  // {format (mixed only), bank, element} per row
  localparam int unsigned ActLaneW = DataW + 1 + (Mixed ? 1 : 0);

  logic [N-1:0][DataW-1:0]    act_q;
  logic                       act_bank_q;
  logic [N-1:0][ActLaneW-1:0] act_lanes, act_skewed;

  `FFLNR(act_q, in_row_i, en)
  `FFLNR(act_bank_q, use_bank_q, en)

  if (Mixed) begin : gen_mixed_lanes
    logic act_bf16_q;
    `FFLNR(act_bf16_q, in_bf16_i, en)
    for (genvar r = 0; r < N; r++) begin : gen_act_lane
      assign act_lanes[r] = {act_bf16_q, act_bank_q, act_q[r]};
    end
  end else begin : gen_fixed_lanes
    logic unused_in_bf16;
    assign unused_in_bf16 = in_bf16_i;
    for (genvar r = 0; r < N; r++) begin : gen_act_lane
      assign act_lanes[r] = {act_bank_q, act_q[r]};
    end
  end

  mxu_skew #(
    .Lanes    (N),
    .Width    (ActLaneW),
    .Ascending(1'b1),
    .Reset    (1'b0)
  ) u_act_skew (
    .clk_i,
    .rst_ni,
    .en_i  (en),
    .clear_i(1'b0),
    .data_i(act_lanes),
    .data_o(act_skewed)
  );

  // Only the valid bits need reset and clear; the payload skews alongside.
  localparam int unsigned WgtLaneW = RowW + 1 + DataW;  // {row, bank, value}

  logic                       wgt_valid_q;
  logic [RowW-1:0]            wgt_flight_q, wgt_flight_d;
  logic                       wgt_skew_en;
  logic [N-1:0][WgtLaneW-1:0] wgt_lanes_q, wgt_skewed;
  logic [N-1:0]               wgt_valid_lanes, wgt_valid_skewed;

  `FFL(wgt_valid_q, wgt_fire && !clear_i, en || clear_i, 1'b0)
  // The beat's lanes load only with a beat: without one they are never read
  // (a clock enable; a simulator packs them only then).
  always_ff @(posedge clk_i) begin
    if (wgt_fire) begin
      for (int c = 0; c < N; c++) wgt_lanes_q[c] <= {load_row_q, load_bank_q, wgt_row_i[c]};
    end
  end

  for (genvar c = 0; c < N; c++) begin : gen_wgt_lane
    assign wgt_valid_lanes[c] = wgt_valid_q;
  end

  // The valid skew too advances only while a beat is in it (wgt_skew_en,
  // below): otherwise every stage holds zero and the input is zero.
  mxu_skew #(
    .Lanes    (N),
    .Width    (1),
    .Ascending(1'b1),
    .Reset    (1'b1)
  ) u_wgt_valid_skew (
    .clk_i,
    .rst_ni,
    .en_i  (wgt_skew_en),
    .clear_i,
    .data_i(wgt_valid_lanes),
    .data_o(wgt_valid_skewed)
  );

  // The payload skew advances only while a beat is in it: a lane's payload is
  // read only beside its valid bit, so with no beat in flight it may stand
  // still (a clock enable; a simulator skips its stages). wgt_flight_q counts
  // the advances the last beat in still needs to leave (N - 1 after it
  // enters); the last of them also moves its valid bit out of the valid
  // skew, which therefore holds only zeros when it stands still.

  assign wgt_skew_en = en && (wgt_valid_q || wgt_flight_q != '0);
  always_comb begin
    wgt_flight_d = wgt_flight_q;
    if (clear_i)          wgt_flight_d = '0;
    else if (wgt_skew_en) wgt_flight_d = wgt_valid_q ? RowW'(N - 1) : wgt_flight_q - 1'b1;
  end
  `FF(wgt_flight_q, wgt_flight_d, '0)

  mxu_skew #(
    .Lanes    (N),
    .Width    (WgtLaneW),
    .Ascending(1'b1),
    .Reset    (1'b0)
  ) u_wgt_skew (
    .clk_i,
    .rst_ni,
    .en_i  (wgt_skew_en),
    .clear_i(1'b0),
    .data_i(wgt_lanes_q),
    .data_o(wgt_skewed)
  );

  // ---------------------------------------------------------------------------
  // Array
  // ---------------------------------------------------------------------------
  // The skewed lanes go in as they are, {format (mixed), bank, element} per
  // row and {row, bank, element} per column: the array takes a lane's fields
  // apart only where it reads them (a beat only when it is valid).
  logic [N-1:0][PsumW-1:0] arr_psum, out_cols;

  mxu_array #(
    .N       (N),
    .Datapath(Datapath),
    .DataW   (DataW),
    .PsumW   (PsumW)
  ) u_array (
    .clk_i,
    .rst_ni,
    .en_i       (en),
    .clear_i,
    .act_i      (act_skewed),
    .wgt_valid_i(wgt_valid_skewed),
    .wgt_i      (wgt_skewed),
    .psum_o     (arr_psum)
  );

  // Column c leaves the array c cycles after column 0: delay it N-1-c more.
  mxu_skew #(
    .Lanes    (N),
    .Width    (PsumW),
    .Ascending(1'b0),
    .Reset    (1'b0)
  ) u_out_deskew (
    .clk_i,
    .rst_ni,
    .en_i  (en),
    .clear_i(1'b0),
    .data_i(arr_psum),
    .data_o(out_cols)
  );

  // ---------------------------------------------------------------------------
  // Row tracking and output slot. Valid and last travel beside the array in a
  // shift register as long as the array's latency.
  // ---------------------------------------------------------------------------
  logic [Latency-1:0]      row_valid_q, row_last_q;
  logic                    slot_ready;
  logic [N-1:0][PsumW-1:0] slot_row;

  `FFL(row_valid_q, clear_i ? '0 : {row_valid_q[Latency-2:0], in_fire}, en || clear_i, '0)
  `FFL(row_last_q, clear_i ? '0 : {row_last_q[Latency-2:0], in_fire && in_last_i},
       en || clear_i, '0)

  // The array moves unless a finished row is waiting for a full output slot:
  // en = slot_ready || !row_valid_q[Latency-1]. en drives the enable of every
  // register in the block, so it comes straight from a flop: en_q is loaded
  // with next cycle's value of that expression, computed from the next state
  // of the spill register's second slot (ready_o = !b_full_q in
  // stream_spill.sv) and of the last row-valid stage. EnIsExact checks it.
  logic en_q, en_d, slot_ready_d, last_valid_d;

  always_comb begin
    if (!slot_ready) begin
      slot_ready_d = out_ready_i;  // the second slot moves to the first
    end else begin                 // a row fills the second slot?
      slot_ready_d = !(row_valid_q[Latency-1] && out_valid_o && !out_ready_i);
    end
    last_valid_d = en ? row_valid_q[Latency-2] : row_valid_q[Latency-1];
    en_d         = clear_i || slot_ready_d || !last_valid_d;
  end

  `FF(en_q, en_d, 1'b1)
  assign en = en_q;

  localparam int unsigned SlotW = N * PsumW + 1 + (Mixed ? 1 : 0);
  logic [SlotW-1:0] slot_in, slot_out;

  if (Mixed) begin : gen_slot_mixed
    // The row format beside valid and last; payload (qualified by
    // row_valid_q), so no reset.
    logic [Latency-1:0] row_bf16_q;
    `FFLNR(row_bf16_q, {row_bf16_q[Latency-2:0], in_bf16_i}, en)
    assign slot_in = {row_bf16_q[Latency-1], row_last_q[Latency-1], out_cols};
    assign {out_bf16_o, out_last_o, slot_row} = slot_out;
  end else begin : gen_slot_fixed
    assign slot_in = {row_last_q[Latency-1], out_cols};
    assign {out_last_o, slot_row} = slot_out;
    assign out_bf16_o = FixedBf16;
  end

  stream_spill #(
    .Width(SlotW)
  ) u_out_slot (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(row_valid_q[Latency-1]),
    .ready_o(slot_ready),
    .data_i (slot_in),
    .valid_o(out_valid_o),
    .ready_i(out_ready_i),
    .data_o (slot_out)
  );

  for (genvar c = 0; c < N; c++) begin : gen_out_extend
    assign out_row_o[c] = AccW'($signed(slot_row[c]));
  end

  // ---------------------------------------------------------------------------
  // Interface rules
  // ---------------------------------------------------------------------------
  // A clear (the core's flush) releases the senders from their offers.
  logic in_waiting, wgt_waiting;
  assign in_waiting  = in_valid_i && !in_ready_o && !clear_i;
  assign wgt_waiting = wgt_valid_i && !wgt_ready_o && !clear_i;
  `ASSERT_NEXT(InValidHeld, in_waiting, !clear_i -> in_valid_i)
  `ASSERT_HELD(InDataHeld, in_waiting, ({in_row_i, in_last_i}), !clear_i)
  `ASSERT_NEXT(WgtValidHeld, wgt_waiting, !clear_i -> wgt_valid_i)
  `ASSERT_HELD(WgtDataHeld, wgt_waiting, wgt_row_i, !clear_i)
  `ASSERT(EnIsExact, en == (slot_ready || !row_valid_q[Latency-1]))
  if (Mixed) begin : gen_mode_held
    `ASSERT_HELD(InModeHeld, in_waiting, in_bf16_i, !clear_i)
  end

endmodule
