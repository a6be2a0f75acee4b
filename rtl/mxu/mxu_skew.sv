// SPDX-License-Identifier: Apache-2.0
// Triangular delay line: lane i is delayed by i cycles (Ascending) or by
// Lanes-1-i cycles (descending). Skews rows into the systolic array and
// de-skews columns out of it. Advances only when en_i is high; clear_i zeroes
// the registers of a skew built with Reset = 1.
`include "tpu_macros.svh"

module mxu_skew #(
  parameter int unsigned Lanes     = 4,  // number of lanes
  parameter int unsigned Width     = 8,  // bits per lane
  parameter bit          Ascending = 1,  // 1: delay(i) = i, 0: delay(i) = Lanes-1-i
  parameter bit          Reset     = 0   // 1: registers reset to zero (control lanes)
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        en_i,
  input  logic                        clear_i,
  input  logic [Lanes-1:0][Width-1:0] data_i,
  output logic [Lanes-1:0][Width-1:0] data_o
);

  if (!Reset) begin : gen_no_reset
    logic unused_clear;
    assign unused_clear = clear_i;  // rst_ni is unused too (waived in lint.vlt)
  end

  // One shift register of Lanes-1 stages carries every lane; lane i is read
  // out after its delay, and the stages past it are left unused (removed in
  // synthesis; waived in lint.vlt). Stages are unpacked, lanes packed, so a
  // simulator's model shifts the whole triangle in O(Lanes) statements
  // rather than one process per register (docs/decisions.md).
  if (Lanes > 1) begin : gen_stages
    logic [Lanes-1:0][Width-1:0] stage_q [Lanes-1], stage_d [Lanes-1];

    always_comb begin
      stage_d[0] = data_i;
      for (int s = 1; s < Lanes - 1; s++) stage_d[s] = stage_q[s-1];
    end

    if (Reset) begin : gen_rst
      always_ff @(posedge clk_i or negedge rst_ni) begin
        if (!rst_ni)      stage_q <= '{default: '0};
        else if (clear_i) stage_q <= '{default: '0};
        else if (en_i)    stage_q <= stage_d;
      end
    end else begin : gen_nrst
      always_ff @(posedge clk_i) begin
        if (en_i) stage_q <= stage_d;
      end
    end

    for (genvar i = 0; i < Lanes; i++) begin : gen_lane
      localparam int unsigned Delay = Ascending ? i : Lanes - 1 - i;
      if (Delay == 0) begin : gen_wire
        assign data_o[i] = data_i[i];
      end else begin : gen_delay
        assign data_o[i] = stage_q[Delay-1][i];
      end
    end
  end else begin : gen_single
    assign data_o = data_i;
    logic unused_en;
    assign unused_en = en_i;
  end

endmodule
