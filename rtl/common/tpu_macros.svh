// SPDX-License-Identifier: Apache-2.0
// Flop and assertion macros shared by every block.
//
// FF     : flop with asynchronous active-low reset        q <= rst ? rst_val : d
// FFL    : as FF, loads only when `load` is high
// FFNR   : flop without reset (wide datapath registers)
// FFLNR  : as FFNR, loads only when `load` is high
// ASSERT : a boolean checked at every rising edge out of reset, in
//          simulation; removed in synthesis. Write an implication with the
//          logical `->` (a -> b), a value of an earlier cycle with $past.
//          It is an immediate assertion in a clocked block, so it reads what
//          the flops read at the edge, also in a harness that changes inputs
//          and clocks in one evaluation; a concurrent one would read values
//          sampled before those inputs, and Verilator copies every sampled
//          value on every evaluation (docs/decisions.md).
// ASSERT_IF : ASSERT(name, cond -> prop), for a wide prop such as a held
//          payload compared with its $past: prop is evaluated only in the
//          cycles cond holds. Verilator computes both sides of an `->` in
//          every cycle.
// COVER  : cover point, counted in a coverage build (make coverage: cycles in
//          which prop held out of reset), ignored otherwise, removed in
//          synthesis. A single-cycle property (Verilator 5.006: $past, not ##).
`ifndef TPU_MACROS_SVH
`define TPU_MACROS_SVH

`define FF(q, d, rst_val, clk = clk_i, rst_n = rst_ni) \
  always_ff @(posedge clk or negedge rst_n) begin      \
    if (!rst_n) q <= (rst_val);                        \
    else        q <= (d);                              \
  end

`define FFL(q, d, load, rst_val, clk = clk_i, rst_n = rst_ni) \
  always_ff @(posedge clk or negedge rst_n) begin              \
    if (!rst_n)      q <= (rst_val);                           \
    else if (load)   q <= (d);                                 \
  end

`define FFNR(q, d, clk = clk_i) \
  always_ff @(posedge clk) q <= (d);

`define FFLNR(q, d, load, clk = clk_i) \
  always_ff @(posedge clk) if (load) q <= (d);

`ifndef SYNTHESIS
`define ASSERT(name, prop, clk = clk_i, rst_n = rst_ni)                      \
  always_ff @(posedge clk) if (rst_n) name: assert (prop)                    \
    else $error("assertion %s failed", `"name`");
`define ASSERT_IF(name, cond, prop, clk = clk_i, rst_n = rst_ni)             \
  always_ff @(posedge clk) if (rst_n && (cond)) name: assert (prop)          \
    else $error("assertion %s failed", `"name`");
`define COVER(name, prop, clk = clk_i, rst_n = rst_ni)                       \
  name: cover property (@(posedge clk) disable iff (!rst_n) (prop));
`else
`define ASSERT(name, prop, clk = clk_i, rst_n = rst_ni)
`define ASSERT_IF(name, cond, prop, clk = clk_i, rst_n = rst_ni)
`define COVER(name, prop, clk = clk_i, rst_n = rst_ni)
`endif

`endif  // TPU_MACROS_SVH
