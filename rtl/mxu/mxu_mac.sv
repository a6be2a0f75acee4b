// SPDX-License-Identifier: Apache-2.0
// Pipelined multiply-accumulate of one PE, three register stages:
//
//   cycle t   : a_q, w_q <= a_i, w_i             (operand registers)
//   cycle t+1 : prod_q   <= a_q * w_q            (product register)
//   cycle t+2 : psum_o   <= psum_i + prod_q      (partial-sum register)
//
// so psum_o (visible from t+3) = psum_i (as seen in t+2) + a_i * w_i (as seen
// in t). Register -> multiplier -> register and register -> adder ->
// register are the only paths. All stages advance only when en_i is high.
//
// Two implementations of the same schedule:
//   - generic (simulation, any FPGA or ASIC flow): the registers are flops
//     around a `*`; synthesis maps the `*` to a DSP and the registers stay in
//     the fabric (Yosys does not pack registers into ECP5 multipliers).
//   - TPU_ECP5_DSP defined (scripts/fpga.sh defines it for ECP5): one
//     MULT18X18D with its input and output registers enabled, which hold a_q,
//     w_q and prod_q. The multiplier then runs between its own registers, and
//     only routing is left on the paths into and out of the DSP.
//
// Per PE, this is the only place that knows the number format (the array
// written as loops, mxu_array.sv, repeats these stages register for register
// with the same arithmetic: fp_pkg's functions). The bf16 datapath
// (Datapath = DatapathBf16, DataW = 16, PsumW = 32) is a second branch of the
// generate below with the same ports and the same three stages:
//
//   cycle t   : a_q, w_q <= a_i, w_i                      (operand registers)
//   cycle t+1 : prod_q   <= bf16_mul(a_q, w_q)            (exact fp32 product)
//   cycle t+2 : psum_o   <= fp32_add(psum_i, prod_q)      (rounded to nearest even)
//
// (docs/numerics.md). The array around it does not change.
//
// The mixed datapath (Datapath = DatapathBoth, DataW = 16, PsumW = 32) runs
// either on the same three stages, chosen per activation by bf16_i, which is
// registered with the operands and follows them through the product stage:
//
//   bf16_i = 1 : exactly the bf16 branch above (fp32 partial sums);
//   bf16_i = 0 : the int8 branch on the low 8 bits of a_i and w_i (the upper
//                8 are ignored), the product sign-extended and added to
//                psum_i at 32 bits (int32 partial sums).
//
// So consecutive activations may alternate between the formats with no
// bubble: each product and each sum uses the mode of its own activation, and
// the partial sum from above belongs to the same input row, hence the same
// mode. The int8 and bf16 datapaths ignore bf16_i.
`include "tpu_macros.svh"

module mxu_mac #(
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned        DataW    = Datapath == tpu_pkg::DatapathInt8
                                           ? tpu_pkg::Int8W : 16,  // operand bits
  parameter int unsigned        PsumW    = tpu_pkg::AccW    // partial-sum bits
) (
  input  logic             clk_i,
  input  logic             en_i,
  input  logic [DataW-1:0] a_i,     // activation
  input  logic [DataW-1:0] w_i,     // stationary weight
  input  logic             bf16_i,  // DatapathBoth: a_i (and w_i) are bf16, else int8
  input  logic [PsumW-1:0] psum_i,  // partial sum from the PE above, two cycles later
  output logic [PsumW-1:0] psum_o   // partial sum to the PE below (a flop)
);

  if (Datapath != tpu_pkg::DatapathBoth) begin : gen_fixed_format
    logic unused_bf16;
    assign unused_bf16 = bf16_i;  // the format is the parameter's
  end

  if (Datapath == tpu_pkg::DatapathInt8) begin : gen_int8
    // Signed int8 x int8 is exact in 16 bits; the sum wraps at PsumW bits,
    // which the array sizes so that one pass never wraps (docs/mxu.md).
    logic signed [2*DataW-1:0] prod_q;
    logic        [PsumW-1:0]   psum_d;

`ifdef TPU_ECP5_DSP
    if (DataW > 18) begin : gen_bad_width
      $error("mxu_mac: the ECP5 multiplier takes at most 18-bit operands");
    end
    logic [17:0] dsp_a, dsp_b;
    logic [35:0] dsp_p;
    assign dsp_a  = 18'($signed(a_i));
    assign dsp_b  = 18'($signed(w_i));
    assign prod_q = dsp_p[2*DataW-1:0];
    // A product of two DataW-bit operands needs 2*DataW bits.
    logic [35-2*DataW:0] unused_dsp_high;
    assign unused_dsp_high = dsp_p[35:2*DataW];

    MULT18X18D #(
      .REG_INPUTA_CLK  ("CLK0"),
      .REG_INPUTA_CE   ("CE0"),
      .REG_INPUTA_RST  ("RST0"),
      .REG_INPUTB_CLK  ("CLK0"),
      .REG_INPUTB_CE   ("CE0"),
      .REG_INPUTB_RST  ("RST0"),
      .REG_PIPELINE_CLK("NONE"),
      .REG_OUTPUT_CLK  ("CLK0"),
      .REG_OUTPUT_CE   ("CE0"),
      .REG_OUTPUT_RST  ("RST0"),
      .GSR             ("DISABLED"),
      .RESETMODE       ("SYNC")
    ) u_dsp (
      .A0(dsp_a[0]), .A1(dsp_a[1]), .A2(dsp_a[2]), .A3(dsp_a[3]), .A4(dsp_a[4]), .A5(dsp_a[5]), .A6(dsp_a[6]), .A7(dsp_a[7]), .A8(dsp_a[8]), .A9(dsp_a[9]), .A10(dsp_a[10]), .A11(dsp_a[11]), .A12(dsp_a[12]), .A13(dsp_a[13]), .A14(dsp_a[14]), .A15(dsp_a[15]), .A16(dsp_a[16]), .A17(dsp_a[17]),
      .B0(dsp_b[0]), .B1(dsp_b[1]), .B2(dsp_b[2]), .B3(dsp_b[3]), .B4(dsp_b[4]), .B5(dsp_b[5]), .B6(dsp_b[6]), .B7(dsp_b[7]), .B8(dsp_b[8]), .B9(dsp_b[9]), .B10(dsp_b[10]), .B11(dsp_b[11]), .B12(dsp_b[12]), .B13(dsp_b[13]), .B14(dsp_b[14]), .B15(dsp_b[15]), .B16(dsp_b[16]), .B17(dsp_b[17]),
      .C0(1'b0), .C1(1'b0), .C2(1'b0), .C3(1'b0), .C4(1'b0), .C5(1'b0), .C6(1'b0), .C7(1'b0), .C8(1'b0), .C9(1'b0), .C10(1'b0), .C11(1'b0), .C12(1'b0), .C13(1'b0), .C14(1'b0), .C15(1'b0), .C16(1'b0), .C17(1'b0),
      .SIGNEDA(1'b1), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),
      .CLK0(clk_i), .CLK1(1'b0), .CLK2(1'b0), .CLK3(1'b0),
      .CE0(en_i), .CE1(1'b0), .CE2(1'b0), .CE3(1'b0),
      .RST0(1'b0), .RST1(1'b0), .RST2(1'b0), .RST3(1'b0),
      .P0(dsp_p[0]), .P1(dsp_p[1]), .P2(dsp_p[2]), .P3(dsp_p[3]), .P4(dsp_p[4]), .P5(dsp_p[5]), .P6(dsp_p[6]), .P7(dsp_p[7]), .P8(dsp_p[8]), .P9(dsp_p[9]), .P10(dsp_p[10]), .P11(dsp_p[11]), .P12(dsp_p[12]), .P13(dsp_p[13]), .P14(dsp_p[14]), .P15(dsp_p[15]), .P16(dsp_p[16]), .P17(dsp_p[17]), .P18(dsp_p[18]), .P19(dsp_p[19]), .P20(dsp_p[20]), .P21(dsp_p[21]), .P22(dsp_p[22]), .P23(dsp_p[23]), .P24(dsp_p[24]), .P25(dsp_p[25]), .P26(dsp_p[26]), .P27(dsp_p[27]), .P28(dsp_p[28]), .P29(dsp_p[29]), .P30(dsp_p[30]), .P31(dsp_p[31]), .P32(dsp_p[32]), .P33(dsp_p[33]), .P34(dsp_p[34]), .P35(dsp_p[35])
    );
`else
    logic [DataW-1:0] a_q, w_q;
    `FFLNR(a_q, a_i, en_i)
    `FFLNR(w_q, w_i, en_i)
    `FFLNR(prod_q, $signed(a_q) * $signed(w_q), en_i)
`endif

    if (PsumW >= 2 * DataW) begin : gen_extend
      assign psum_d = psum_i + PsumW'(prod_q);
    end else begin : gen_wrap
      logic [2*DataW-PsumW-1:0] unused_prod_high;
      assign unused_prod_high = prod_q[2*DataW-1:PsumW];
      assign psum_d = psum_i + prod_q[PsumW-1:0];
    end
    `FFLNR(psum_o, psum_d, en_i)
  end else if (Datapath == tpu_pkg::DatapathBf16) begin : gen_bf16
    // bf16 x bf16 is exact in fp32 (fp_pkg::bf16_mul); the sum is an fp32
    // addition rounded to nearest even (fp_pkg::fp32_add). psum_i is added
    // first, so a column is summed top to bottom, starting from the +0 the
    // array feeds into row 0 (docs/numerics.md). The same three stages as
    // int8; generic flops only (TPU_ECP5_DSP does not apply: the 8 x 8
    // significand product is inside bf16_mul).
    if (DataW != 16 || PsumW != 32) begin : gen_bad_width
      $error("mxu_mac: the bf16 datapath needs DataW = 16 and PsumW = 32");
    end
    logic [DataW-1:0] a_q, w_q;
    logic [31:0]      prod_q;

    `FFLNR(a_q, a_i, en_i)
    `FFLNR(w_q, w_i, en_i)
    `FFLNR(prod_q, fp_pkg::bf16_mul(a_q[15:0], w_q[15:0]), en_i)
    `FFLNR(psum_o, PsumW'(fp_pkg::fp32_add(psum_i[31:0], prod_q)), en_i)
  end else if (Datapath == tpu_pkg::DatapathBoth) begin : gen_both
    // One set of registers for both formats: the operands (16 bits), the
    // product (32 bits: the fp32 product, or the int8 product sign-extended)
    // and the sum; the mode bit rides along through the first two stages.
    // Two multipliers (fp_pkg::bf16_mul's 8 x 8 significands and the signed
    // 8 x 8 int8 product) and two adders (fp_pkg::fp32_add and a 32-bit
    // integer adder), selected by the registered mode.
    if (DataW != 16 || PsumW != 32) begin : gen_bad_width
      $error("mxu_mac: the mixed datapath needs DataW = 16 and PsumW = 32");
    end
    logic [DataW-1:0]   a_q, w_q;
    logic               bf16_q, prod_bf16_q;
    logic [31:0]        prod_d, prod_q;
    logic signed [15:0] int_prod;
    logic [31:0]        fp_sum, int_sum;

    `FFLNR(a_q, a_i, en_i)
    `FFLNR(w_q, w_i, en_i)
    `FFLNR(bf16_q, bf16_i, en_i)

    assign int_prod = $signed(a_q[7:0]) * $signed(w_q[7:0]);
    assign prod_d   = bf16_q ? fp_pkg::bf16_mul(a_q[15:0], w_q[15:0]) : 32'($signed(int_prod));
    `FFLNR(prod_q, prod_d, en_i)
    `FFLNR(prod_bf16_q, bf16_q, en_i)

    assign fp_sum  = fp_pkg::fp32_add(psum_i[31:0], prod_q);
    assign int_sum = psum_i[31:0] + prod_q;
    `FFLNR(psum_o, PsumW'(prod_bf16_q ? fp_sum : int_sum), en_i)
  end else begin : gen_unsupported
    $error("mxu_mac: unknown datapath");
  end

endmodule
