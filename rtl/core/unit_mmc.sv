// SPDX-License-Identifier: Apache-2.0
// Matrix unit: executes MMC. Streams UB rows a .. a+count-1 into the MXU and
// writes (or adds) the result rows into accumulator rows b .. b+count-1.
//
// An address generator walks the command's UB rows through a mem_rd_stream
// (the UB answers a cycle after it grants a read); each row's accumulator
// address and mode travel with it, and from the MXU's input to its output in
// a small FIFO beside the MXU, where the accumulator write happens. Rows of
// the next command follow the previous command's rows directly, so
// back-to-back MMCs keep the array full. done_o pulses the cycle after the
// last row of a command is given to the accumulators, when the row is in
// their RAM (tpu_acc). The weight port comes from the weight unit's FIFO;
// rows wait in the MXU until their tile is complete.
//
// A row that the RHM in progress has yet to write (ld_*: its UB rows
// [lo, last], the first ld_rows_i of them written) is not asked for until it
// is written, so an MMC that the scoreboard starts behind a load follows it
// row by row (ctrl_scoreboard).
//
// Datapath bf16 or both: an MMC BF16 row is a wide row, UB rows a+2i and
// a+2i+1 (lanes 0 .. N/2-1 in the first). A second address generator and UB
// read port fetch the odd rows beside the even ones (rows r and r+1 are in
// different banks), so wide rows stream at one per cycle too. The row's
// format drives the MXU's in_bf16_i and travels with the row to the
// accumulators, which add bf16 results in fp32. int8 rows fill the low byte
// of each 16-bit lane.
`include "tpu_macros.svh"

module unit_mmc #(
  parameter int unsigned N       = tpu_pkg::ArrayN,
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned AccRows = tpu_pkg::Cfg.acc_rows,
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,
  parameter int unsigned Cmds    = 8,   // commands started and not done, at most (the scoreboard's ring)
  localparam bit          HasBf16  = Datapath != tpu_pkg::DatapathInt8,
  localparam int unsigned LaneW    = HasBf16 ? 16 : 8,
  localparam int unsigned UbAddrW  = $clog2(UbRows),
  localparam int unsigned AccAddrW = $clog2(AccRows)
) (
  input  logic                      clk_i,
  input  logic                      rst_ni,
  input  logic                      flush_i,
  // ---- commands ----
  input  logic                      cmd_valid_i,
  output logic                      cmd_ready_o,
  input  core_pkg::unit_cmd_t       cmd_i,
  output logic                      done_o,
  // ---- unified buffer (a read port of tpu_ub) ----
  output logic                      ub_rd_req_valid_o,
  input  logic                      ub_rd_req_ready_i,
  output logic [UbAddrW-1:0]        ub_rd_req_addr_o,
  input  logic                      ub_rd_rsp_valid_i,
  input  logic [N-1:0][7:0]         ub_rd_rsp_data_i,
  // ---- the second UB read port: odd rows of wide rows (bf16, both) ----
  output logic                      ub2_rd_req_valid_o,
  input  logic                      ub2_rd_req_ready_i,
  output logic [UbAddrW-1:0]        ub2_rd_req_addr_o,
  input  logic                      ub2_rd_rsp_valid_i,
  input  logic [N-1:0][7:0]         ub2_rd_rsp_data_i,
  // ---- the RHM writing the UB (unit_mem's rhm_fill_*) ----
  input  logic                      ld_fill_i,
  input  logic [UbAddrW-1:0]        ld_lo_i,
  input  logic [UbAddrW-1:0]        ld_last_i,
  input  logic [UbAddrW:0]          ld_rows_i,
  // ---- weights from the weight unit ----
  input  logic                      wgt_valid_i,
  output logic                      wgt_ready_o,
  input  logic [N-1:0][LaneW-1:0]   wgt_row_i,
  // ---- accumulators ----
  output logic                      acc_wr_en_o,
  output logic                      acc_wr_accumulate_o,
  output logic                      acc_wr_bf16_o,      // fp32 row: add in fp32
  output logic [AccAddrW-1:0]       acc_wr_addr_o,
  output logic [N-1:0][31:0]        acc_wr_data_o,
  // ---- the ACC rows the oldest command in flight writes (an ACT may follow it) ----
  output logic                      fill_o,         // a command is in flight
  output logic [AccAddrW-1:0]       fill_lo_o,      // its rows lo + [0, total), in order
  output logic [AccAddrW:0]         fill_total_o,
  output logic [AccAddrW:0]         fill_rows_o,    // the first ones readable by the VPU
  // ---- status for the performance counters ----
  output logic                      row_fire_o,     // a row entered the array
  output logic                      wgt_stall_o,    // a row waits for its tile
  output logic                      wgt_shift_o     // a weight row entered the array
);

  // Row metadata: {bf16 (mixed and bf16 datapaths only), command's last row,
  // MXU pops its tile after it, accumulate, acc address}; rides with the UB
  // read, then beside the MXU.
  localparam int unsigned MetaW     = 3 + AccAddrW + (HasBf16 ? 1 : 0);
  localparam int unsigned MetaDepth = 2 * N + 4;  // >= rows the MXU can hold

  logic                active_q, active_d, acc_mode_q, pop_q, bf16_q;
  logic [15:0]         count_q, row_q, row_d;
  logic [UbAddrW-1:0]  ub_base_q;
  logic [AccAddrW-1:0] acc_base_q;
  logic                start, last_row, addr_valid, addr_ready, addr_fire;
  logic                data_valid, data_ready;
  logic [N-1:0][7:0]   data_row;
  logic [MetaW-1:0]    addr_meta, data_meta;
  logic                in_valid, in_ready, in_fire;
  logic                meta_ready, meta_valid;
  logic [MetaW-1:0]    meta_out;
  logic                out_valid, out_last, done_q;
  logic [N-1:0][31:0]  out_row;
  logic [$clog2(MetaDepth+1)-1:0] unused_meta_count;
  logic                unused_pc, unused_meta_valid, unused_out_last, out_bf16;

  // The next command starts in the cycle the current one asks for its last
  // row (for a wide row, the later of its two halves). The even-row
  // generator (A) stops after its last row and waits for the odd one (B).
  logic a_done_q, a_done_d, b_last, b_fin, asked_all;
  assign last_row    = row_q == count_q - 16'd1;
  assign asked_all   = (a_done_q || (addr_fire && last_row)) && b_fin;
  assign cmd_ready_o = !active_q || asked_all;
  assign start       = cmd_valid_i && cmd_ready_o;

  // A UB row the RHM in progress has yet to write. Its rows lie inside the
  // UB, and its written count only grows, so a row once written stays so.
  function automatic logic unwritten(logic [UbAddrW-1:0] addr);
    return ld_fill_i && {1'b0, addr} >= {1'b0, ld_lo_i} + ld_rows_i && addr <= ld_last_i;
  endfunction

  logic [UbAddrW-1:0] a_addr;
  assign a_addr     = bf16_q ? ub_base_q + UbAddrW'({row_q, 1'b0}) : ub_base_q + UbAddrW'(row_q);
  assign addr_valid = active_q && !a_done_q && !unwritten(a_addr);
  assign addr_fire  = addr_valid && addr_ready;
  if (HasBf16) begin : gen_meta_bf16
    assign addr_meta = {bf16_q, last_row, pop_q && last_row, acc_mode_q,
                        acc_base_q + AccAddrW'(row_q)};
  end else begin : gen_meta_int8
    assign addr_meta = {last_row, pop_q && last_row, acc_mode_q, acc_base_q + AccAddrW'(row_q)};
  end

  always_comb begin
    active_d = active_q;
    row_d    = row_q;
    a_done_d = a_done_q;
    if (addr_fire) begin
      row_d = row_q + 16'd1;
      if (last_row) a_done_d = 1'b1;
    end
    if (active_q && asked_all) begin
      active_d = 1'b0;
      a_done_d = 1'b0;
    end
    if (start) begin
      active_d = 1'b1;
      row_d    = '0;
      a_done_d = 1'b0;
    end
    if (flush_i) begin
      active_d = 1'b0;
      a_done_d = 1'b0;
    end
  end
  `FF(a_done_q, a_done_d, 1'b0)

  `FF(active_q, active_d, 1'b0)
  `FF(row_q, row_d, '0)
  `FFLNR(count_q, cmd_i.ins.count, start)
  `FFLNR(ub_base_q, cmd_i.ins.a[UbAddrW-1:0], start)
  `FFLNR(acc_base_q, cmd_i.ins.b[AccAddrW-1:0], start)
  `FFLNR(acc_mode_q, cmd_i.ins.flags[tpu_isa_pkg::FlagMmcAcc], start)
  `FFLNR(pop_q, cmd_i.ins.flags[tpu_isa_pkg::FlagMmcPop], start)
  // The row format: the BF16 flag in the mixed datapath, fixed otherwise.
  `FFLNR(bf16_q, Datapath == tpu_pkg::DatapathBf16 ||
                 (Datapath == tpu_pkg::DatapathBoth && cmd_i.ins.flags[tpu_isa_pkg::FlagMmcBf16]), start)

  mem_rd_stream #(
    .AddrW(UbAddrW),
    .DataW(N * 8),
    .UserW(MetaW)
  ) u_ub_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(addr_valid),
    .addr_ready_o(addr_ready),
    .addr_i      (a_addr),
    .addr_user_i (addr_meta),
    .req_valid_o (ub_rd_req_valid_o),
    .req_ready_i (ub_rd_req_ready_i),
    .req_addr_o  (ub_rd_req_addr_o),
    .rsp_valid_i (ub_rd_rsp_valid_i),
    .rsp_data_i  (ub_rd_rsp_data_i),
    .data_valid_o(data_valid),
    .data_ready_i(data_ready),
    .data_o      (data_row),
    .data_user_o (data_meta)
  );

  // ---- the odd rows of wide rows, and the MXU's input lanes ----
  logic                    row_bf16, hi_valid, hi_ready;
  logic [N-1:0][LaneW-1:0] in_row;

  if (HasBf16) begin : gen_wide
    logic [15:0]       row_b_q, row_b_d;
    logic              b_done_q, b_done_d, b_valid, b_ready, b_fire;
    logic [N-1:0][7:0] hi_row;
    logic              unused_b_user;

    logic [UbAddrW-1:0] b_addr;
    assign b_addr  = ub_base_q + UbAddrW'({row_b_q, 1'b1});
    assign b_valid = active_q && bf16_q && !b_done_q && !unwritten(b_addr);
    assign b_last  = row_b_q == count_q - 16'd1;
    assign b_fin   = !bf16_q || b_done_q || (b_fire && b_last);

    always_comb begin
      row_b_d  = row_b_q;
      b_done_d = b_done_q;
      if (b_fire) begin
        row_b_d = row_b_q + 16'd1;
        if (b_last) b_done_d = 1'b1;
      end
      if ((active_q && asked_all) || start || flush_i) begin
        row_b_d  = '0;
        b_done_d = 1'b0;
      end
    end
    `FF(row_b_q, row_b_d, '0)
    `FF(b_done_q, b_done_d, 1'b0)

    mem_rd_stream #(
      .AddrW(UbAddrW),
      .DataW(N * 8),
      .UserW(1)
    ) u_ub_rd_hi (
      .clk_i,
      .rst_ni,
      .clear_i     (flush_i),
      .addr_valid_i(b_valid),
      .addr_ready_o(b_ready),
      .addr_i      (b_addr),
      .addr_user_i (1'b0),
      .req_valid_o (ub2_rd_req_valid_o),
      .req_ready_i (ub2_rd_req_ready_i),
      .req_addr_o  (ub2_rd_req_addr_o),
      .rsp_valid_i (ub2_rd_rsp_valid_i),
      .rsp_data_i  (ub2_rd_rsp_data_i),
      .data_valid_o(hi_valid),
      .data_ready_i(hi_ready),
      .data_o      (hi_row),
      .data_user_o (unused_b_user)
    );
    assign b_fire = b_valid && b_ready;

    // Lane j of a wide row: bytes 2j (low) and 2j+1 of the 2N bytes.
    assign row_bf16 = data_meta[MetaW-1];
    for (genvar j = 0; j < N; j++) begin : gen_lane
      if (j < N / 2) begin : gen_low
        assign in_row[j] = row_bf16 ? {data_row[2*j+1], data_row[2*j]} : {8'd0, data_row[j]};
      end else begin : gen_high
        assign in_row[j] = row_bf16 ? {hi_row[2*j+1-N], hi_row[2*j-N]} : {8'd0, data_row[j]};
      end
    end
  end else begin : gen_narrow
    assign b_fin              = 1'b1;
    assign b_last             = 1'b1;
    assign row_bf16           = 1'b0;
    assign hi_valid           = 1'b0;
    assign in_row             = data_row;
    assign ub2_rd_req_valid_o = 1'b0;
    assign ub2_rd_req_addr_o  = '0;
    logic unused_ub2;
    assign unused_ub2 = ^{ub2_rd_req_ready_i, ub2_rd_rsp_valid_i, ub2_rd_rsp_data_i, hi_ready, b_last};
  end

  // A wide row enters the array once both halves are here.
  assign in_valid   = data_valid && meta_ready && (!row_bf16 || hi_valid);
  assign data_ready = in_ready && meta_ready && (!row_bf16 || hi_valid);
  assign hi_ready   = in_ready && meta_ready && data_valid && row_bf16;
  assign in_fire    = in_valid && in_ready;

  mxu #(
    .N       (N),
    .Datapath(Datapath)
  ) u_mxu (
    .clk_i,
    .rst_ni,
    .clear_i    (flush_i),
    .wgt_valid_i,
    .wgt_ready_o,
    .wgt_row_i,
    .in_valid_i (in_valid),
    .in_ready_o (in_ready),
    .in_row_i   (in_row),
    .in_last_i  (data_meta[AccAddrW+1]),
    .in_bf16_i  (row_bf16),
    .out_valid_o(out_valid),
    .out_ready_i(1'b1),           // the accumulators take a row every cycle
    .out_row_o  (out_row),
    .out_last_o (out_last),
    .out_bf16_o (out_bf16),
    .wgt_stall_o
  );

  stream_fifo #(
    .Width(MetaW),
    .Depth(MetaDepth)
  ) u_meta (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(in_fire),
    .ready_o(meta_ready),
    .data_i (data_meta),
    .valid_o(meta_valid),
    .ready_i(out_valid),
    .data_o (meta_out),
    .count_o(unused_meta_count)
  );

  assign acc_wr_en_o         = out_valid;
  assign acc_wr_accumulate_o = meta_out[AccAddrW];
  assign acc_wr_addr_o       = meta_out[AccAddrW-1:0];
  assign acc_wr_bf16_o       = HasBf16 && meta_out[MetaW-1];
  assign acc_wr_data_o       = out_row;
  `FF(done_q, out_valid && meta_out[AccAddrW+2] && !flush_i, 1'b0)
  assign done_o              = done_q && !flush_i;

  // The ACC rows of the commands started and not done, oldest first. The
  // oldest one's rows are the next to leave the MXU, in order; a row given
  // to the accumulators at cycle t is readable from t+2 (tpu_acc), so the
  // count of its rows given is reported a cycle late. Its entry leaves with
  // its done, when the next command's count starts from its first row.
  logic                rng_ready;
  logic [AccAddrW:0]   given_q;
  logic [$clog2(Cmds+1)-1:0] unused_rng_count;
  stream_fifo #(
    .Width(2 * AccAddrW + 1),
    .Depth(Cmds)
  ) u_ranges (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(start),
    .ready_o(rng_ready),
    .data_i ({(AccAddrW + 1)'(cmd_i.ins.count), cmd_i.ins.b[AccAddrW-1:0]}),
    .valid_o(fill_o),
    .ready_i(done_o),
    .data_o ({fill_total_o, fill_lo_o}),
    .count_o(unused_rng_count)
  );
  `FF(given_q, flush_i ? '0 : !out_valid ? given_q : meta_out[AccAddrW+2] ? '0 : given_q + 1'b1, '0)
  `FF(fill_rows_o, flush_i ? '0 : given_q, '0)
  `ASSERT_IF(RangeHasRoom, start, rng_ready)

  assign row_fire_o  = in_fire;
  assign wgt_shift_o = wgt_valid_i && wgt_ready_o;

  assign unused_pc         = ^{cmd_i.pc, cmd_i.ins.c};
  assign unused_meta_valid = meta_valid ^ meta_out[AccAddrW+1];
  assign unused_out_last   = out_last ^ out_bf16;

  `ASSERT(MetaBesideEveryRow, out_valid -> meta_valid)
  `ASSERT_IF(MmcCmdIsMmc, cmd_valid_i, cmd_i.ins.op == tpu_isa_pkg::OpMmc)

endmodule
