// SPDX-License-Identifier: Apache-2.0
// Accumulator memory: Rows rows of N int32 lanes.
//
// The MMC write port either overwrites a row or adds to it (MMC's ACC flag);
// the VPU has a synchronous read port (rd_data_o the cycle after rd_en_i).
// Sums wrap at 32 bits like the reference model. With Fp32 (bf16 and both
// configurations) a row marked wr_bf16_i holds fp32 lanes and is added with
// fp_pkg::fp32_add, the accumulator's old value as the first operand
// (docs/numerics.md, "Into the accumulator").
//
// Storage is two copies of simple dual-port RAM written together: one is
// read for the additions, the other by the VPU, so neither waits (three
// accesses per cycle, two ports per RAM; docs/decisions.md). A write is a
// two-stage pipeline: the cycle a row arrives the old row is read, the next
// cycle the sum is written. A row written right behind a write of the same
// row takes the sum just written instead of the RAM's stale word. A row
// given at cycle t is in the RAM (readable by the VPU) from cycle t+2: the
// matrix unit reports its commands done one cycle after their last row.
`include "tpu_macros.svh"

module tpu_acc #(
  parameter int unsigned N     = tpu_pkg::ArrayN,
  parameter int unsigned Rows  = tpu_pkg::Cfg.acc_rows,
  parameter int unsigned AccW  = tpu_pkg::AccW,
  parameter bit          Fp32  = 1'b0,  // rows may be fp32 (wr_bf16_i)
  localparam int unsigned AddrW = $clog2(Rows)
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  // ---- MMC results ----
  input  logic                        wr_en_i,
  input  logic                        wr_accumulate_i,
  input  logic                        wr_bf16_i,        // Fp32: an fp32 row
  input  logic [AddrW-1:0]            wr_addr_i,
  input  logic [N-1:0][AccW-1:0]      wr_data_i,
  // ---- VPU reads ----
  input  logic                        rd_en_i,
  input  logic [AddrW-1:0]            rd_addr_i,
  output logic [N-1:0][AccW-1:0]      rd_data_o
);

  // Stage 2: the row whose old value was read last cycle.
  logic                   s2_en_q, s2_acc_q, s2_bf16_q;
  logic [AddrW-1:0]       s2_addr_q;
  logic [N-1:0][AccW-1:0] s2_data_q;
  // The row written last cycle (forwarded when stage 2 adds to it).
  logic                   last_en_q;
  logic [AddrW-1:0]       last_addr_q;
  logic [N-1:0][AccW-1:0] last_row_q;

  logic [N-1:0][AccW-1:0] ram_old, old_row, new_row;

  `FF(s2_en_q, wr_en_i, 1'b0)
  `FFLNR(s2_acc_q, wr_accumulate_i, wr_en_i)
  if (Fp32) begin : gen_fp32_flag
    `FFLNR(s2_bf16_q, wr_bf16_i, wr_en_i)
  end else begin : gen_int_only
    assign s2_bf16_q = 1'b0;
    logic unused_bf16;
    assign unused_bf16 = wr_bf16_i;
  end
  `FFLNR(s2_addr_q, wr_addr_i, wr_en_i)
  `FFLNR(s2_data_q, wr_data_i, wr_en_i)

  assign old_row = (last_en_q && last_addr_q == s2_addr_q) ? last_row_q : ram_old;

  always_comb begin
    for (int j = 0; j < N; j++) begin
      if (!s2_acc_q)       new_row[j] = s2_data_q[j];
      else if (s2_bf16_q)  new_row[j] = fp_pkg::fp32_add(old_row[j], s2_data_q[j]);
      else                 new_row[j] = old_row[j] + s2_data_q[j];
    end
  end

  `FF(last_en_q, s2_en_q, 1'b0)
  `FFLNR(last_addr_q, s2_addr_q, s2_en_q)
  `FFLNR(last_row_q, new_row, s2_en_q)

  ram_1r1w #(
    .Width(N * AccW),
    .Depth(Rows)
  ) u_sum (
    .clk_i,
    .wr_en_i  (s2_en_q),
    .wr_addr_i(s2_addr_q),
    .wr_data_i(new_row),
    .rd_en_i  (wr_en_i),
    .rd_addr_i(wr_addr_i),
    .rd_data_o(ram_old)
  );

  ram_1r1w #(
    .Width(N * AccW),
    .Depth(Rows)
  ) u_vpu (
    .clk_i,
    .wr_en_i  (s2_en_q),
    .wr_addr_i(s2_addr_q),
    .wr_data_i(new_row),
    .rd_en_i,
    .rd_addr_i,
    .rd_data_o
  );

endmodule
