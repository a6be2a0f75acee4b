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
// ASSERT_IF : ASSERT(name, cond -> prop) with prop evaluated only in the
//          cycles cond holds, for a rare cond and a prop of several terms
//          (a request's fields, a range check): a simulator computes both
//          sides of an `->` in every cycle.
// ASSERT_NEXT : ASSERT(name, $past(cond) -> prop) without $past: in every
//          cycle after one in which `cond` held, `prop`. `cond` is kept in a
//          register of its own (name_after_q); $past would have Verilator
//          5.006 copy each of cond's signals in every evaluation.
// ASSERT_HELD : a stream's payload stays put while it waits. In a cycle
//          after one in which `waiting` held (valid, not ready), and in which
//          `now` holds, `valid` must hold and `payload` must equal its value
//          in the waiting cycle. The payload is kept in a register that loads
//          only in waiting cycles: $past would copy a wide payload in every
//          evaluation (twice, in Verilator 5.006), and a stream waits in few
//          cycles. Declares name_waiting_q and name_held_q.
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
`ifdef VERILATOR
// For a Verilated model the check is an if and a $error, which reports and
// stops (counts an error) as a failed assert does, without the assert's test
// of the run-time assertion switch in every cycle (docs/decisions.md).
`define TPU_CHECK(name, prop) \
  if (!(prop)) $error("assertion %s failed", `"name`");
`else
`define TPU_CHECK(name, prop) \
  name: assert (prop) else $error("assertion %s failed", `"name`");
`endif
`define ASSERT(name, prop, clk = clk_i, rst_n = rst_ni)                      \
  always_ff @(posedge clk) if (rst_n) `TPU_CHECK(name, prop)
`define ASSERT_IF(name, cond, prop, clk = clk_i, rst_n = rst_ni)             \
  always_ff @(posedge clk) if (rst_n && (cond)) `TPU_CHECK(name, prop)
`define ASSERT_NEXT(name, cond, prop, clk = clk_i, rst_n = rst_ni)           \
  logic name``_after_q;                                                     \
  always_ff @(posedge clk) name``_after_q <= rst_n && (cond);               \
  always_ff @(posedge clk) if (rst_n && name``_after_q) `TPU_CHECK(name, prop)
`define ASSERT_HELD(name, waiting, payload, now = 1'b1, valid = 1'b1, clk = clk_i, rst_n = rst_ni) \
  logic                      name``_waiting_q;                              \
  logic [$bits(payload)-1:0] name``_held_q;                                 \
  always_ff @(posedge clk) begin                                            \
    name``_waiting_q <= rst_n && (waiting);                                 \
    if (waiting) name``_held_q <= (payload);                                \
  end                                                                       \
  always_ff @(posedge clk)                                                  \
    if (rst_n && name``_waiting_q && (now))                                 \
      `TPU_CHECK(name, (valid) && ((payload) == name``_held_q))
`define COVER(name, prop, clk = clk_i, rst_n = rst_ni)                       \
  name: cover property (@(posedge clk) disable iff (!rst_n) (prop));
`else
`define ASSERT(name, prop, clk = clk_i, rst_n = rst_ni)
`define ASSERT_IF(name, cond, prop, clk = clk_i, rst_n = rst_ni)
`define ASSERT_NEXT(name, cond, prop, clk = clk_i, rst_n = rst_ni)
`define ASSERT_HELD(name, waiting, payload, now = 1'b1, valid = 1'b1, clk = clk_i, rst_n = rst_ni)
`define COVER(name, prop, clk = clk_i, rst_n = rst_ni)
`endif

`endif  // TPU_MACROS_SVH
