// SPDX-License-Identifier: Apache-2.0
// Spill register: a two-entry valid/ready register slice.
//
// Cuts every combinational path between its two sides: valid_o/data_o come
// from a flop and ready_o comes from a flop. Full throughput (one transfer per
// cycle) with a latency of one cycle. clear_i drops both slots synchronously.
`include "tpu_macros.svh"

module stream_spill #(
  parameter int unsigned Width = 8  // payload bits
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             clear_i,
  // ---- upstream ----
  input  logic             valid_i,
  output logic             ready_o,
  input  logic [Width-1:0] data_i,
  // ---- downstream ----
  output logic             valid_o,
  input  logic             ready_i,
  output logic [Width-1:0] data_o
);

  // Slot A drives the output; slot B catches the beat that arrives while A
  // is full and blocked.
  logic             a_full_q, a_full_d, b_full_q, b_full_d;
  logic [Width-1:0] a_data_q, b_data_q;
  logic             in_fire, a_load, b_load;

  assign ready_o = !b_full_q;
  assign valid_o = a_full_q;
  assign data_o  = a_data_q;
  assign in_fire = valid_i && ready_o;

  always_comb begin
    a_full_d = a_full_q;
    b_full_d = b_full_q;
    a_load   = 1'b0;
    b_load   = 1'b0;
    if (b_full_q) begin
      // Upstream is stalled; B moves to A when A drains.
      if (ready_i) begin
        a_load   = 1'b1;
        b_full_d = 1'b0;
      end
    end else if (in_fire) begin
      if (a_full_q && !ready_i) begin
        b_load   = 1'b1;
        b_full_d = 1'b1;
      end else begin
        a_load   = 1'b1;
        a_full_d = 1'b1;
      end
    end else if (ready_i) begin
      a_full_d = 1'b0;
    end
    if (clear_i) begin
      a_full_d = 1'b0;
      b_full_d = 1'b0;
    end
  end

  `FF(a_full_q, a_full_d, 1'b0)
  `FF(b_full_q, b_full_d, 1'b0)
  // A loads from B when B is full, from the input otherwise; the payload is
  // chosen only when A loads (a model copies a wide payload no more often).
  `FFLNR(a_data_q, b_full_q ? b_data_q : data_i, a_load)
  `FFLNR(b_data_q, data_i, b_load)

  `ASSERT_NEXT(SpillValidHeld, valid_o && !ready_i && !clear_i, valid_o)
  `ASSERT_HELD(SpillDataHeld, valid_o && !ready_i && !clear_i, data_o)

endmodule
