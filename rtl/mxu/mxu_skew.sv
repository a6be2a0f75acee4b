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

  function automatic int unsigned delay(int unsigned lane);
    return Ascending ? lane : Lanes - 1 - lane;
  endfunction

  if (!Reset) begin : gen_no_reset
    logic unused_clear;
    assign unused_clear = clear_i;  // rst_ni is unused too (waived in lint.vlt)
  end

  // Lane i's delay line is the stages of a shared shift register up to its
  // delay, then an output register of its own (out_q). The lanes are split
  // in two groups (lower and upper half), each with a shift register only as
  // deep as its longest delay, so the short half does not carry the long
  // half's stages (about a third fewer stage bits; synthesis removed the
  // unused ones either way). No other clocked block reads a group's stages
  // (lanes packed, stages unpacked), so they update in place with blocking
  // assignments, oldest stage first: a simulator's model copies each stage
  // once a cycle, where a next-state array and a non-blocking load of the
  // array cost it three copies. Stages past a lane's delay are left unused
  // (removed in synthesis; waived in lint.vlt). The registers read outside,
  // out_q, are non-blocking.
  if (Lanes > 1) begin : gen_stages
    localparam int unsigned Groups = Lanes >= 4 ? 2 : 1;
    for (genvar g = 0; g < Groups; g++) begin : gen_group
      localparam int unsigned Lo = g * Lanes / Groups;             // first lane
      localparam int unsigned GL = (g + 1) * Lanes / Groups - Lo;  // lanes
      localparam int unsigned MaxDelay = Ascending ? Lo + GL - 1 : Lanes - 1 - Lo;
      localparam int unsigned Stages = MaxDelay > 2 ? MaxDelay - 1 : 1;
      typedef logic [GL-1:0][Width-1:0] row_t;
      // stage_q[s]: the group's data_i of s + 1 cycles ago. The output
      // register of a lane of delay D loads from stage D - 2, or from data_i
      // if D = 1.
      row_t stage_q [Stages];
      // out_q[j] (lane Lo + j) loads only when the line advances, before the
      // stages shift (so it reads their old values); a lane of delay 0 has
      // no output register.
      row_t out_q;

      // One step of the line, for either clocked block below: the output
      // registers load from the stages, then the stages shift.
      task automatic advance();
        for (int unsigned j = 0; j < GL; j++) begin
          if (delay(Lo + j) == 1)      out_q[j] <= data_i[Lo + j];
          else if (delay(Lo + j) >= 2) out_q[j] <= stage_q[delay(Lo + j) - 2][j];
        end
        for (int s = int'(MaxDelay) - 2; s > 0; s--) stage_q[s] = stage_q[s-1];
        stage_q[0] = data_i[Lo +: GL];
      endtask

      if (Reset) begin : gen_rst
        always_ff @(posedge clk_i or negedge rst_ni) begin
          if (!rst_ni) begin
            out_q <= '0;
            for (int s = 0; s < Stages; s++) stage_q[s] = '0;
          end else if (clear_i) begin
            out_q <= '0;
            for (int s = 0; s < Stages; s++) stage_q[s] = '0;
          end else if (en_i) begin
            advance();
          end
        end
      end else begin : gen_nrst
        always_ff @(posedge clk_i) begin
          if (en_i) begin
            advance();
          end
        end
      end

      for (genvar j = 0; j < GL; j++) begin : gen_lane
        if (delay(Lo + j) == 0) begin : gen_wire
          assign data_o[Lo + j] = data_i[Lo + j];
        end else begin : gen_delay
          assign data_o[Lo + j] = out_q[j];
        end
      end
    end
  end else begin : gen_single
    assign data_o = data_i;
    logic unused_en;
    assign unused_en = en_i;
  end

endmodule
