// SPDX-License-Identifier: Apache-2.0
// Processing element of the weight-stationary systolic array.
//
// Holds two weights (bank 0 and bank 1). Every activation travels with the
// bank it must be multiplied by, so a PE switches tiles exactly when the
// first row of the new tile reaches it, while the other bank is written.
//
// Flows, one register per PE each, all advancing when en_i is high:
//   activations + bank tag   left  -> right
//   partial sums             top   -> bottom
//   weight beats             top   -> bottom; a beat tagged with this PE's
//                            row is written into the tagged bank and goes
//                            no further (no PE below reads it).
//
// The multiply-add is pipelined (mxu_mac.sv, MacStages = 3 cycles from an
// activation at act_i to its partial sum in psum_o): in the cycle an
// activation arrives, the PE hands it and the tagged bank's weight to the
// MAC's operand registers; the MAC registers the product one cycle later and
// adds it to psum_i the cycle after. Every PE is shifted by the same two
// cycles, so psum_i from the PE above arrives exactly when the product is
// ready, and the bank is still read in the cycle the activation arrives (the
// double-buffering argument in docs/mxu.md is unchanged).
//
// Mixed datapath (DatapathBoth): each activation also carries its format
// (act_bf16_i: 1 = bf16, 0 = int8 in the low 8 bits), registered beside the
// bank tag, so the format changes from one input row to the next exactly like
// the tile does. For the int8 and bf16 datapaths the format is a constant,
// passed on without a register.
`include "tpu_macros.svh"

module mxu_pe #(
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned        DataW    = tpu_pkg::Int8W,
  parameter int unsigned        PsumW    = tpu_pkg::AccW,
  parameter int unsigned        RowW     = 4,  // bits of a weight-row tag
  parameter int unsigned        Row      = 0   // this PE's row in the array
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             en_i,
  input  logic             clear_i,   // drops weight beats in flight
  // ---- activations (left -> right) ----
  input  logic [DataW-1:0] act_i,
  input  logic             act_bank_i,
  input  logic             act_bf16_i,  // DatapathBoth: this activation is bf16
  output logic [DataW-1:0] act_o,
  output logic             act_bank_o,
  output logic             act_bf16_o,
  // ---- partial sums (top -> bottom) ----
  input  logic [PsumW-1:0] psum_i,
  output logic [PsumW-1:0] psum_o,
  // ---- weight beats (top -> bottom) ----
  input  logic             wgt_valid_i,
  input  logic [RowW-1:0]  wgt_row_i,
  input  logic             wgt_bank_i,
  input  logic [DataW-1:0] wgt_i,
  output logic             wgt_valid_o,
  output logic [RowW-1:0]  wgt_row_o,
  output logic             wgt_bank_o,
  output logic [DataW-1:0] wgt_o
);

  // Packed: two flops per bit and a 2:1 mux (as an unpacked array read into
  // a register, Yosys would make it LUT RAM, larger than the flops).
  logic [1:0][DataW-1:0] bank_q;
  logic                  wgt_mine, wgt_write, wgt_pass;

  mxu_mac #(
    .Datapath(Datapath),
    .DataW   (DataW),
    .PsumW   (PsumW)
  ) u_mac (
    .clk_i,
    .en_i,
    .a_i   (act_i),
    .w_i   (bank_q[act_bank_i]),
    .bf16_i(act_bf16_i),
    .psum_i(psum_i),
    .psum_o(psum_o)
  );

  assign wgt_mine  = wgt_row_i == RowW'(Row);
  assign wgt_write = en_i && wgt_valid_i && wgt_mine;
  assign wgt_pass  = wgt_valid_i && !wgt_mine;

  always_ff @(posedge clk_i) begin
    if (wgt_write) bank_q[wgt_bank_i] <= wgt_i;
  end

  `FFLNR(act_o, act_i, en_i)
  `FFLNR(act_bank_o, act_bank_i, en_i)
  if (Datapath == tpu_pkg::DatapathBoth) begin : gen_mode_reg
    `FFLNR(act_bf16_o, act_bf16_i, en_i)
  end else begin : gen_mode_const
    assign act_bf16_o = act_bf16_i;
  end
  // A beat's row, bank and weight load only with a beat that goes on down
  // (a clock enable): an invalid beat is never read below.
  `FFL(wgt_valid_o, wgt_pass && !clear_i, en_i || clear_i, 1'b0)
  `FFLNR(wgt_row_o, wgt_row_i, en_i && wgt_pass)
  `FFLNR(wgt_bank_o, wgt_bank_i, en_i && wgt_pass)
  `FFLNR(wgt_o, wgt_i, en_i && wgt_pass)

endmodule
