// SPDX-License-Identifier: Apache-2.0
// Performance counters, in TPU v1's categories. All count from start_i (a
// program start clears them) while the core is busy, and hold afterwards.
`include "tpu_macros.svh"

module tpu_perf #(
  parameter int unsigned N = tpu_pkg::ArrayN
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic        busy_i,
  input  logic        row_fire_i,    // a row entered the MXU: N*N useful MACs
  input  logic        wgt_stall_i,   // a row waits for its weight tile
  input  logic        wgt_shift_i,   // a weight row entered the MXU
  input  logic        dep_stall_i,   // issue waits on a data dependency
  input  logic        mem_stall_i,   // a unit waits for memory responses
  output logic [63:0] cycles_o,
  output logic [63:0] mxu_busy_o,    // cycles in which the MXU took a row
  output logic [63:0] useful_macs_o,
  output logic [63:0] wgt_stall_o,
  output logic [63:0] wgt_shift_o,
  output logic [63:0] dep_stall_o,
  output logic [63:0] mem_stall_o
);

  logic [6:0][63:0] cnt_q, cnt_d;
  logic [6:0]       events;

  assign events = {mem_stall_i, dep_stall_i, wgt_shift_i, wgt_stall_i,
                   row_fire_i, row_fire_i, 1'b1};

  always_comb begin
    for (int i = 0; i < 7; i++) begin
      cnt_d[i] = cnt_q[i];
      if (busy_i && events[i]) cnt_d[i] = cnt_q[i] + ((i == 2) ? 64'(N * N) : 64'd1);
      if (start_i) cnt_d[i] = '0;
    end
  end

  `FF(cnt_q, cnt_d, '0)

  assign cycles_o      = cnt_q[0];
  assign mxu_busy_o    = cnt_q[1];
  assign useful_macs_o = cnt_q[2];
  assign wgt_stall_o   = cnt_q[3];
  assign wgt_shift_o   = cnt_q[4];
  assign dep_stall_o   = cnt_q[5];
  assign mem_stall_o   = cnt_q[6];

endmodule
