// SPDX-License-Identifier: Apache-2.0
// N x N grid of PEs, wired systolically.
//
// Row r receives the (already skewed) activation element r on the left;
// column c receives the (already skewed) weight beat for column c on top and
// produces the partial sum of column c at the bottom. Nothing here is
// combinational across PEs: every flow is registered once per PE. The row
// format (act_bf16_i) flows along the rows only in the mixed datapath; in the
// fixed ones it is a constant that every PE of the row takes directly.
module mxu_array #(
  parameter int unsigned        N        = tpu_pkg::ArrayN,
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned        DataW    = tpu_pkg::Int8W,
  parameter int unsigned        PsumW    = tpu_pkg::AccW,
  localparam int unsigned       RowW     = $clog2(N)
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        en_i,
  input  logic                        clear_i,
  // ---- activations, one element per row ----
  input  logic [N-1:0][DataW-1:0]     act_i,
  input  logic [N-1:0]                act_bank_i,
  input  logic [N-1:0]                act_bf16_i,  // DatapathBoth: row format
  // ---- weight beats, one element per column ----
  input  logic [N-1:0]                wgt_valid_i,
  input  logic [N-1:0][RowW-1:0]      wgt_row_i,
  input  logic [N-1:0]                wgt_bank_i,
  input  logic [N-1:0][DataW-1:0]     wgt_i,
  // ---- column sums ----
  output logic [N-1:0][PsumW-1:0]     psum_o
);

  // Nets between PEs: act/bank flow along a row (index c = entering column c),
  // psum/weights flow down a column (index r = entering row r).
  logic [DataW-1:0] act  [N][N+1];
  logic             bank [N][N+1];
  logic             bf16 [N][N+1];
  logic [PsumW-1:0] psum [N+1][N];
  logic             wv   [N+1][N];
  logic [RowW-1:0]  wrow [N+1][N];
  logic             wbank[N+1][N];
  logic [DataW-1:0] wgt  [N+1][N];

  for (genvar r = 0; r < N; r++) begin : gen_row_edge
    assign act[r][0]  = act_i[r];
    assign bank[r][0] = act_bank_i[r];
    assign bf16[r][0] = act_bf16_i[r];
  end

  for (genvar c = 0; c < N; c++) begin : gen_col_edge
    assign psum[0][c]  = '0;
    assign wv[0][c]    = wgt_valid_i[c];
    assign wrow[0][c]  = wgt_row_i[c];
    assign wbank[0][c] = wgt_bank_i[c];
    assign wgt[0][c]   = wgt_i[c];
    assign psum_o[c]   = psum[N][c];
  end

  for (genvar r = 0; r < N; r++) begin : gen_row
    for (genvar c = 0; c < N; c++) begin : gen_col
      mxu_pe #(
        .Datapath(Datapath),
        .DataW   (DataW),
        .PsumW   (PsumW),
        .RowW    (RowW),
        .Row     (r)
      ) u_pe (
        .clk_i,
        .rst_ni,
        .en_i,
        .clear_i,
        .act_i      (act[r][c]),
        .act_bank_i (bank[r][c]),
        .act_bf16_i (Datapath == tpu_pkg::DatapathBoth ? bf16[r][c] : act_bf16_i[r]),
        .act_o      (act[r][c+1]),
        .act_bank_o (bank[r][c+1]),
        .act_bf16_o (bf16[r][c+1]),
        .psum_i     (psum[r][c]),
        .psum_o     (psum[r+1][c]),
        .wgt_valid_i(wv[r][c]),
        .wgt_row_i  (wrow[r][c]),
        .wgt_bank_i (wbank[r][c]),
        .wgt_i      (wgt[r][c]),
        .wgt_valid_o(wv[r+1][c]),
        .wgt_row_o  (wrow[r+1][c]),
        .wgt_bank_o (wbank[r+1][c]),
        .wgt_o      (wgt[r+1][c])
      );
    end
  end

  // The right-most activations and bottom weight beats leave the array unused.
  logic unused_edges;
  always_comb begin
    unused_edges = 1'b0;
    for (int r = 0; r < N; r++) unused_edges ^= ^act[r][N] ^ bank[r][N] ^ bf16[r][N];
    for (int c = 0; c < N; c++) unused_edges ^= wv[N][c] ^ ^wrow[N][c] ^ wbank[N][c] ^ ^wgt[N][c];
  end

endmodule
