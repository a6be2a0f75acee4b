// SPDX-License-Identifier: Apache-2.0
// A probe for `ASSERT (assert_test.cpp): one assertion on logic that the
// inputs feed. Verilator keeps that logic in a variable (public_flat_rd, as
// it does for logic with many readers in the device), so that an assertion
// reading values sampled before the inputs arrive would see its old value.
`include "tpu_macros.svh"

module assert_probe (
  input logic clk_i,
  input logic rst_ni,
  input logic a_i,
  input logic b_i
);
  logic bad /*verilator public_flat_rd*/;
  always_comb begin
    bad = a_i;
    if (b_i) bad = 1'b0;
  end

  `ASSERT(NeverBad, !bad)
endmodule
