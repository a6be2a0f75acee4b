// SPDX-License-Identifier: Apache-2.0
// Multiply-accumulate of one PE: psum_o = psum_i + a_i * w_i.
//
// This is the only place that knows the number format. A second datapath
// (bf16 x bf16 + fp32) is added as another branch of the generate below with
// the same ports; the array around it does not change.
// Purely combinational.
module mxu_mac #(
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned        DataW    = tpu_pkg::Int8W,  // operand bits
  parameter int unsigned        PsumW    = tpu_pkg::AccW    // partial-sum bits
) (
  input  logic [DataW-1:0] a_i,     // activation
  input  logic [DataW-1:0] w_i,     // stationary weight
  input  logic [PsumW-1:0] psum_i,  // partial sum from the PE above
  output logic [PsumW-1:0] psum_o   // partial sum to the PE below
);

  if (Datapath == tpu_pkg::DatapathInt8) begin : gen_int8
    // Signed int8 x int8 is exact in 16 bits; the sum wraps at PsumW bits like
    // the int32 accumulators (see docs/mxu.md for the overflow bound).
    logic signed [2*DataW-1:0] product;
    assign product = $signed(a_i) * $signed(w_i);
    assign psum_o  = psum_i + PsumW'(product);
  end else begin : gen_unsupported
    $error("mxu_mac: only the int8 datapath is implemented");
  end

endmodule
