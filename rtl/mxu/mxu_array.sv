// SPDX-License-Identifier: Apache-2.0
// N x N grid of PEs, wired systolically.
//
// Row r receives the (already skewed) activation lane r on the left:
// {format (mixed only), bank, element}; column c receives the (already
// skewed) weight beat for column c on top: {destination row, bank, element},
// and produces the partial sum of column c at the bottom. Nothing here is
// combinational across PEs: every flow is registered once per PE. The row
// format flows along the rows only in the mixed datapath; in the fixed ones
// it is a constant.
//
// Two bodies build the registers of N x N mxu_pe: gen_grid (int8, bf16 and
// mixed) writes the array as loop-updated arrays, so that a simulator's
// model does not grow with N^2 instances (docs/decisions.md); gen_pes
// instantiates the N x N mxu_pe themselves, for int8 on the ECP5 multiplier
// cells (TPU_ECP5_DSP), whose registers are inside a vendor cell per PE.
module mxu_array #(
  parameter int unsigned        N        = tpu_pkg::ArrayN,
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned        DataW    = tpu_pkg::Int8W,
  parameter int unsigned        PsumW    = tpu_pkg::AccW,
  localparam int unsigned       RowW     = $clog2(N),
  localparam bit                Mixed    = Datapath == tpu_pkg::DatapathBoth,
  localparam int unsigned       ActLaneW = DataW + 1 + (Mixed ? 1 : 0),  // {(format,) bank, element}
  localparam int unsigned       WgtLaneW = RowW + 1 + DataW              // {row, bank, element}
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        en_i,
  input  logic                        clear_i,
  // ---- activations, one lane per row ----
  input  logic [N-1:0][ActLaneW-1:0]  act_i,
  // ---- weight beats, one lane per column ----
  input  logic [N-1:0]                wgt_valid_i,
  input  logic [N-1:0][WgtLaneW-1:0]  wgt_i,
  // ---- column sums ----
  output logic [N-1:0][PsumW-1:0]     psum_o
);

`ifdef TPU_ECP5_DSP
  localparam bit EcpDsp = 1'b1;  // the int8 MAC is an ECP5 multiplier cell per PE
`else
  localparam bit EcpDsp = 1'b0;
`endif

  if (Datapath != tpu_pkg::DatapathInt8 || !EcpDsp) begin : gen_grid
    // The array as N x N registers updated by loops: the same PEs as
    // mxu_pe/mxu_mac (see gen_pes), flop for flop and cycle for cycle,
    // written so that a simulator's model stays the same size for any N
    // instead of growing with N^2 module instances (docs/decisions.md, "The
    // MXU array is written as loops"). One description serves every
    // datapath: only the product and the sum depend on it, chosen by the
    // constants Fp and Mixed, so a model or a netlist keeps only the chosen
    // arithmetic. Per PE (r, c), all advancing when en_i is high:
    //
    //   act_q, abank_q (, fmt_q) <= the activation, its bank (, its format)
    //   w_q                      <= the weight of the activation's bank
    //   prod_q (, pfmt_q)        <= int8: act_q * w_q, sign-extended to the
    //                               sum's width; bf16: bf16_mul(act_q, w_q)
    //                               (, fmt_q)
    //   psum                     <= int8: psum from above + prod_q;
    //                               bf16: fp32_add(psum from above, prod_q)
    //
    // (int8: act_q, w_q and the stored weights hold the 8-bit operands
    // sign-extended to 16 bits; see OpW below.)
    //
    // The mixed datapath (Mixed) chooses per PE by the row format it
    // carries; its int8 rows multiply the operands' low bytes. act_q is also
    // the MAC's operand register (mxu_mac's a_q always holds the same value
    // as mxu_pe's act_o; in the int8 array, act_q's low byte), and in the
    // mixed array fmt_q is its format register (bf16_q). Only the mixed
    // datapath writes the format arrays; in the others they are never
    // written and synthesis removes them.
    // Fp: bf16 arithmetic, in some rows or all; Mixed (a module localparam,
    // as the lane widths need it): the row format chooses.
    localparam bit Fp = Datapath != tpu_pkg::DatapathInt8;
    if (Fp && (DataW != 16 || PsumW != 32)) begin : gen_bad_width
      $error("mxu_array: the bf16 and mixed datapaths need DataW = 16 and PsumW = 32");
    end
    typedef logic [DataW-1:0]   data_t;
    typedef logic [PsumW-1:0]   psum_t;
    typedef logic [RowW-1:0]    row_t;
    // The int8 operands are held sign-extended to the product's width (16
    // bits) from where they enter the array: the activation at the row's
    // edge, a weight when a PE stores it. The product is then one 16-bit
    // multiply, extended once to the sum's width. Their upper bits are
    // copies of bit 7, whose flops synthesis merges, and a model no longer
    // extends both operands in every PE and cycle (docs/decisions.md, "The
    // MXU array is written as loops"). The bf16 and mixed operands stay
    // DataW bits.
    localparam int unsigned OpW = Fp ? DataW : 2 * DataW;
    typedef logic [OpW-1:0]     op_t;

    function automatic op_t operand(data_t x);
      return op_t'($signed(x));
    endfunction

    // Every N x N array below holds row r's PEs from the right: element k is
    // column N-1-k. Moving a row's activations one column to the right is
    // then an ascending copy (element k from element k+1), which the
    // simulator's compiler turns into vector moves; it copies a descending
    // one element by element.
    op_t   act_q  [N][N];     // activation leaving PE (r, N-1-k) to the right; MAC operand
    // Its weight bank as a mask of OpW copies of the bank bit, so that choosing
    // the weight is bitwise logic on equal-width values, which a simulator's
    // compiler vectorizes across a row, where an indexed read is a load per
    // PE. Synthesis merges the copies' flops into one.
    op_t   abank_q[N][N];
    logic  fmt_q  [N][N];     // mixed: its format (1 = bf16)
    // A weight beat in flight: its destination row, bank and value, packed
    // so that passing it down a row is one copy (the simulator's work per PE
    // and cycle while a tile loads).
    typedef struct packed {
      row_t  row;
      logic  bank;
      data_t data;
    } beat_t;
    beat_t wbeat_q[N][N];     // weight beat leaving PE (r, N-1-k) downwards
    op_t   bank0_q[N][N];     // the two stationary weights
    op_t   bank1_q[N][N];
    op_t   w_q    [N][N];     // MAC weight register
    // The int8 product is sign-extended to the sum's width where it is made:
    // its upper bits are copies of bit 2*DataW-1 (synthesis merges their
    // flops), and the simulation extends it once instead of again in the sum
    // (docs/decisions.md, "The MXU array is written as loops").
    psum_t prod_q [N][N];
    logic  pfmt_q [N][N];     // mixed: the product's format
    psum_t psum_q [N][N];     // partial sum leaving PE (r, N-1-k) downwards (row N-1: below)
    logic [N-1:0][PsumW-1:0] psum_last_q, psum_last_d;  // ... and leaving row N-1
    // Row r: the weight-valid flags of wbeat_q[r], unpacked (the row loop
    // reads them with a variable index, which is one access in an array and
    // a multi-word shift in a packed vector). A beat stops at its row: the
    // PE that stores it does not pass it on, so it travels (row + 1) rows,
    // not N (mxu_pe's wgt_valid_o).
    logic [N-1:0]            wv_q [N];
    // A row's bank tags load only while a tag change travels along the row:
    // tag_moves_q[r] counts the loads it still needs to reach the row's end
    // (N - 1 when a new tag enters). Otherwise every tag register of the row
    // holds the tag at its input, and loading would not change it (a clock
    // enable; a simulator skips the row's N copies).
    logic [RowW-1:0]         tag_moves_q [N];
    // High in reset and in the first cycle after it: the weight-valid flags
    // and the tag counters are updated in place with the other arrays, in a
    // block without a reset, which clears the flags (as on clear_i) and has
    // every row's tags load N - 1 times when this is high.
    logic                    flush_q;
    // Each row's activation lane, unpacked for the same reason.
    typedef logic [ActLaneW-1:0] act_lane_t;
    act_lane_t               act_in [N];

    for (genvar r = 0; r < N; r++) begin : gen_rows_in
      assign act_in[r] = act_i[r];
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) flush_q <= 1'b1;
      else         flush_q <= 1'b0;
    end

    // The clocked block updates the registers in place with blocking
    // assignments (the one form of per-element array update in a loop that
    // the simulator compiles to a loop; waived in lint.vlt). It visits the rows
    // bottom-up and, within a row, one kind of register across the columns
    // at a time, each before the one that feeds it: the sums, the products,
    // the formats (mixed), the weight operands, the operands (right to
    // left), the weight beats. So every register still reads old values. A
    // column loop's body is one statement, which Verilator unrolls into
    // constant-index statements that the C++ compiler vectorizes; the rows
    // stay a loop, which keeps the model quick to compile. The sum and the
    // product choose with if/else, not ?:, so that a model evaluates only the
    // arithmetic of the row's format; the casts only match the widths of the
    // arithmetic that a datapath does not use. Nothing outside the block
    // reads these arrays (the weight-valid flags and the tag counters
    // included): the column sums are ordinary non-blocking registers.
    //
    // A weight beat's registers load only with a valid beat that goes on
    // down (mxu_pe's clock enable): an invalid or stored beat is never read,
    // and a row that no beat enters is skipped. When en_i is low nothing
    // moves, so the loops are skipped whole.
    always_ff @(posedge clk_i) begin
      // Untraced and assigned before any branch, so that Verilator makes the
      // row index a C++ local rather than a member of the model.
      // verilator tracing_off
      int r;
      // verilator tracing_on
      r = 0;
      psum_last_d = psum_last_q;
      if (en_i) begin
        for (r = N - 1; r >= 0; r--) begin
          // The top row adds its product to zero; the test is made once per
          // row, not per element, so that a row's sums are one simple loop
          // (which a model's compiler vectorizes).
          if (r == 0) begin
            for (int k = 0; k < N; k++) begin
              if (Fp && (!Mixed || pfmt_q[0][k]))
                psum_q[0][k] = psum_t'(fp_pkg::fp32_add('0, 32'(prod_q[0][k])));
              else
                psum_q[0][k] = prod_q[0][k];
            end
          end else begin
            for (int k = 0; k < N; k++) begin
              if (Fp && (!Mixed || pfmt_q[r][k]))
                psum_q[r][k] = psum_t'(fp_pkg::fp32_add(32'(psum_q[r-1][k]),
                                                        32'(prod_q[r][k])));
              else
                psum_q[r][k] = psum_q[r-1][k] + prod_q[r][k];
            end
          end
          for (int k = 0; k < N; k++) begin
            if (Fp && (!Mixed || fmt_q[r][k]))
              prod_q[r][k] = psum_t'(fp_pkg::bf16_mul(16'(act_q[r][k]), 16'(w_q[r][k])));
            else  // int8 (see OpW); a mixed array's int8 row: the operands' low bytes
              prod_q[r][k] = Fp ? psum_t'(int'($signed(act_q[r][k][7:0])) * int'($signed(w_q[r][k][7:0])))
                                : psum_t'($signed(op_t'(act_q[r][k] * w_q[r][k])));
          end
          // Element k's left neighbour is element k+1; column 0 (element
          // N-1) takes the row's input.
          if (Mixed) begin
            for (int k = 0; k < N - 1; k++) begin
              pfmt_q[r][k] = fmt_q[r][k];
              fmt_q[r][k]  = fmt_q[r][k+1];
            end
            pfmt_q[r][N-1] = fmt_q[r][N-1];
            fmt_q[r][N-1]  = act_in[r][ActLaneW-1];
          end
          for (int k = 0; k < N - 1; k++)
            w_q[r][k] = bank0_q[r][k] ^ ((bank0_q[r][k] ^ bank1_q[r][k]) & abank_q[r][k+1]);
          // Column 0 chooses on the input bit with ?: : written like the
          // others, it stopped GCC vectorizing the whole row's choices.
          w_q[r][N-1] = act_in[r][DataW] ? bank1_q[r][N-1] : bank0_q[r][N-1];
          for (int k = 0; k < N - 1; k++) act_q[r][k] = act_q[r][k+1];
          act_q[r][N-1] = operand(act_in[r][DataW-1:0]);
          if (tag_moves_q[r] != '0 || abank_q[r][N-1][0] != act_in[r][DataW]) begin
            tag_moves_q[r] = abank_q[r][N-1][0] != act_in[r][DataW] ? RowW'(N - 1)
                                                                     : tag_moves_q[r] - 1'b1;
            for (int k = 0; k < N - 1; k++) abank_q[r][k] = abank_q[r][k+1];
            abank_q[r][N-1] = {OpW{act_in[r][DataW]}};
          end
          if (r > 0) begin
            wv_q[r] = wv_q[r-1];
            if (|wv_q[r]) begin
              for (int c = 0; c < N; c++) begin
                if (wv_q[r][c]) begin
                  if (wbeat_q[r-1][N-1-c].row == RowW'(r)) begin
                    wv_q[r][c] = 1'b0;
                    if (wbeat_q[r-1][N-1-c].bank) bank1_q[r][N-1-c] = operand(wbeat_q[r-1][N-1-c].data);
                    else                          bank0_q[r][N-1-c] = operand(wbeat_q[r-1][N-1-c].data);
                  end else begin
                    wbeat_q[r][N-1-c] = wbeat_q[r-1][N-1-c];
                  end
                end
              end
            end
          end
        end
        for (int c = 0; c < N; c++) psum_last_d[c] = psum_q[N-1][N-1-c];
        // Row 0's weight beats come from the top edge, not from a row above,
        // so they are loaded here rather than in the row loop's r > 0 branch.
        wv_q[0] = wgt_valid_i;
        if (|wgt_valid_i) begin
          for (int c = 0; c < N; c++) begin
            if (wgt_valid_i[c]) begin
              wbeat_q[0][N-1-c] = beat_t'(wgt_i[c]);
              if (wbeat_q[0][N-1-c].row == '0) begin
                wv_q[0][c] = 1'b0;
                if (wbeat_q[0][N-1-c].bank) bank1_q[0][N-1-c] = operand(wbeat_q[0][N-1-c].data);
                else                        bank0_q[0][N-1-c] = operand(wbeat_q[0][N-1-c].data);
              end
            end
          end
        end
      end
      if (clear_i || flush_q) begin
        for (int i = 0; i < N; i++) wv_q[i] = '0;
      end
      if (flush_q) begin
        for (int i = 0; i < N; i++) tag_moves_q[i] = RowW'(N - 1);
      end
      psum_last_q <= psum_last_d;
    end

    assign psum_o = psum_last_q;
  end else begin : gen_pes
    // int8 on the ECP5 multiplier cells (TPU_ECP5_DSP).
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
      assign act[r][0]  = act_i[r][DataW-1:0];
      assign bank[r][0] = act_i[r][DataW];
      assign bf16[r][0] = Mixed ? act_i[r][ActLaneW-1] : Datapath == tpu_pkg::DatapathBf16;
    end

    for (genvar c = 0; c < N; c++) begin : gen_col_edge
      assign psum[0][c]  = '0;
      assign wv[0][c]    = wgt_valid_i[c];
      assign {wrow[0][c], wbank[0][c], wgt[0][c]} = wgt_i[c];
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
          .act_bf16_i (Mixed ? bf16[r][c] : Datapath == tpu_pkg::DatapathBf16),
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
  end

endmodule
