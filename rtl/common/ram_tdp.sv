// SPDX-License-Identifier: Apache-2.0
// True dual-port RAM: two ports, each reads or writes one word per cycle,
// reads synchronous (data the cycle after en_i).
//
// ECP5 DP16KD and Xilinx RAMB18/36 provide this shape; Yosys infers it from
// this description. A port that writes also reads the old word (read-first).
// The two ports must not write the same word in the same cycle, and a read
// of a word the other port writes in the same cycle returns undefined data:
// callers keep such accesses apart.
module ram_tdp #(
  parameter int unsigned Width  = 32,
  parameter int unsigned Depth  = 512,
  localparam int unsigned AddrW = Depth > 1 ? $clog2(Depth) : 1
) (
  input  logic                  clk_i,
  input  logic [1:0]            en_i,
  input  logic [1:0]            we_i,
  input  logic [1:0][AddrW-1:0] addr_i,
  input  logic [1:0][Width-1:0] wr_data_i,
  output logic [1:0][Width-1:0] rd_data_o
);

  (* ram_style = "block", no_rw_check *) logic [Width-1:0] mem_q [Depth] /* verilator public_flat_rd */;

  for (genvar p = 0; p < 2; p++) begin : gen_port
    always_ff @(posedge clk_i) begin
      if (en_i[p]) begin
        if (we_i[p]) mem_q[addr_i[p]] <= wr_data_i[p];
        rd_data_o[p] <= mem_q[addr_i[p]];
      end
    end
  end

endmodule
