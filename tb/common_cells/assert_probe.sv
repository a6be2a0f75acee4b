// SPDX-License-Identifier: Apache-2.0
// A probe for the assertion macros (assert_test.cpp). `ASSERT: one
// assertion on logic that the inputs feed. Verilator keeps that logic in a
// variable (public_flat_rd, as it does for logic with many readers in the
// device), so that an assertion reading values sampled before the inputs
// arrive would see its old value. `ASSERT_NEXT and `ASSERT_HELD: the rules of
// a stream that offers data_i, as the device's streams use them (an offer
// waits while ready_i is low and may be withdrawn with clear_i). `ASSERT_IF:
// a rule for the cycles an offer is taken only (its data is not zero).
`include "tpu_macros.svh"

module assert_probe (
  input logic clk_i,
  input logic rst_ni,
  input logic a_i,
  input logic b_i,
  input logic        valid_i,
  input logic        ready_i,
  input logic        clear_i,
  input logic [15:0] data_i
);
  logic bad /*verilator public_flat_rd*/;
  always_comb begin
    bad = a_i;
    if (b_i) bad = 1'b0;
  end

  `ASSERT(NeverBad, !bad)

  logic waiting;
  assign waiting = valid_i && !ready_i && !clear_i;
  `ASSERT_NEXT(ValidHeld, waiting, clear_i || valid_i)
  `ASSERT_HELD(DataHeld, waiting, data_i, !clear_i)
  `ASSERT_IF(TakenNotZero, valid_i && ready_i && !clear_i, data_i != '0)
endmodule
