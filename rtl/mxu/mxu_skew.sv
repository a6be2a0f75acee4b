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

  for (genvar i = 0; i < Lanes; i++) begin : gen_lane
    localparam int unsigned Delay = Ascending ? i : Lanes - 1 - i;
    if (Delay == 0) begin : gen_wire
      assign data_o[i] = data_i[i];
    end else begin : gen_delay
      logic [Delay-1:0][Width-1:0] stage_q;
      for (genvar s = 0; s < Delay; s++) begin : gen_stage
        logic [Width-1:0] stage_d;
        assign stage_d = (s == 0) ? data_i[i] : stage_q[s-1];
        if (Reset) begin : gen_rst
          `FFL(stage_q[s], clear_i ? '0 : stage_d, en_i || clear_i, '0)
        end else begin : gen_nrst
          `FFLNR(stage_q[s], stage_d, en_i)
        end
      end
      assign data_o[i] = stage_q[Delay-1];
    end
  end

endmodule
