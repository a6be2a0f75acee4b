// SPDX-License-Identifier: Apache-2.0
// Simulation model of the ECP5 MULT18X18D multiplier, for the MXU model built
// with TPU_ECP5_DSP (the FPGA build's MAC, rtl/mxu/mxu_mac.sv), so that the
// path the bitstream uses is simulated against the same tests as the generic
// MAC. Yosys ships only a black box of this cell.
//
// Modelled, after the ECP5 sysDSP description: an 18 x 18 multiply, signed
// per SIGNEDA / SIGNEDB, the A and B input registers and the output register,
// each either bypassed ("NONE") or clocked by CLK0 with clock enable CE0 and
// synchronous reset RST0. The rest of the cell (the pipeline register, C
// input, shift chains, other clocks) is not: a configuration that uses it is
// an elaboration error here, so the model cannot silently differ from the
// cell. Ports as the MAC connects them.
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
module MULT18X18D #(
  parameter REG_INPUTA_CLK   = "NONE",
  parameter REG_INPUTA_CE    = "CE0",
  parameter REG_INPUTA_RST   = "RST0",
  parameter REG_INPUTB_CLK   = "NONE",
  parameter REG_INPUTB_CE    = "CE0",
  parameter REG_INPUTB_RST   = "RST0",
  parameter REG_PIPELINE_CLK = "NONE",
  parameter REG_OUTPUT_CLK   = "NONE",
  parameter REG_OUTPUT_CE    = "CE0",
  parameter REG_OUTPUT_RST   = "RST0",
  parameter GSR              = "ENABLED",  // global set/reset: no effect in simulation
  parameter RESETMODE        = "SYNC"
) (
  input  wire A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
  input  wire B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
  input  wire C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
  input  wire SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
  input  wire CLK0, CLK1, CLK2, CLK3,
  input  wire CE0, CE1, CE2, CE3,
  input  wire RST0, RST1, RST2, RST3,
  output wire P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17, P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35
);
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on UNUSEDPARAM */

  localparam bit AOk = REG_INPUTA_CLK == "NONE" ||
                       (REG_INPUTA_CLK == "CLK0" && REG_INPUTA_CE == "CE0" && REG_INPUTA_RST == "RST0");
  localparam bit BOk = REG_INPUTB_CLK == "NONE" ||
                       (REG_INPUTB_CLK == "CLK0" && REG_INPUTB_CE == "CE0" && REG_INPUTB_RST == "RST0");
  localparam bit POk = REG_OUTPUT_CLK == "NONE" ||
                       (REG_OUTPUT_CLK == "CLK0" && REG_OUTPUT_CE == "CE0" && REG_OUTPUT_RST == "RST0");

  if (!AOk || !BOk || !POk || REG_PIPELINE_CLK != "NONE" || RESETMODE != "SYNC") begin : gen_unsupported
    $error("MULT18X18D model: only CLK0/CE0/RST0 input and output registers, no pipeline register, synchronous reset");
  end

  logic [17:0] a, b, a_q, b_q, a_m, b_m;
  logic        sa_q, sb_q, sa_m, sb_m;
  logic [35:0] prod, p_q;

  assign a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  assign b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};

  // Input registers; the sign controls travel with their operands.
  always_ff @(posedge CLK0) begin
    if (RST0) begin
      a_q  <= '0;
      sa_q <= 1'b0;
    end else if (CE0) begin
      a_q  <= a;
      sa_q <= SIGNEDA;
    end
    if (RST0) begin
      b_q  <= '0;
      sb_q <= 1'b0;
    end else if (CE0) begin
      b_q  <= b;
      sb_q <= SIGNEDB;
    end
  end

  assign a_m  = (REG_INPUTA_CLK == "NONE") ? a : a_q;
  assign sa_m = (REG_INPUTA_CLK == "NONE") ? SIGNEDA : sa_q;
  assign b_m  = (REG_INPUTB_CLK == "NONE") ? b : b_q;
  assign sb_m = (REG_INPUTB_CLK == "NONE") ? SIGNEDB : sb_q;

  // 18 x 18 -> 36 bits, each operand sign- or zero-extended.
  assign prod = 36'($signed({sa_m && a_m[17], a_m}) * $signed({sb_m && b_m[17], b_m}));

  always_ff @(posedge CLK0) begin
    if (RST0)     p_q <= '0;
    else if (CE0) p_q <= prod;
  end

  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = (REG_OUTPUT_CLK == "NONE") ? prod : p_q;

endmodule
