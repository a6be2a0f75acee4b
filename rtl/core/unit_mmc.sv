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
`include "tpu_macros.svh"

module unit_mmc #(
  parameter int unsigned N       = tpu_pkg::ArrayN,
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned AccRows = tpu_pkg::Cfg.acc_rows,
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
  // ---- weights from the weight unit ----
  input  logic                      wgt_valid_i,
  output logic                      wgt_ready_o,
  input  logic [N-1:0][7:0]         wgt_row_i,
  // ---- accumulators ----
  output logic                      acc_wr_en_o,
  output logic                      acc_wr_accumulate_o,
  output logic [AccAddrW-1:0]       acc_wr_addr_o,
  output logic [N-1:0][31:0]        acc_wr_data_o,
  // ---- status for the performance counters ----
  output logic                      row_fire_o,     // a row entered the array
  output logic                      wgt_stall_o,    // a row waits for its tile
  output logic                      wgt_shift_o     // a weight row entered the array
);

  // Row metadata: {command's last row, MXU pops its tile after it, accumulate,
  // acc address}; rides with the UB read, then beside the MXU.
  localparam int unsigned MetaW     = 3 + AccAddrW;
  localparam int unsigned MetaDepth = 2 * N + 4;  // >= rows the MXU can hold

  logic                active_q, active_d, acc_mode_q, pop_q;
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
  logic                unused_pc, unused_meta_valid, unused_out_last;

  // The next command starts in the cycle the current one asks for its last row.
  assign last_row    = row_q == count_q - 16'd1;
  assign cmd_ready_o = !active_q || (addr_fire && last_row);
  assign start       = cmd_valid_i && cmd_ready_o;

  assign addr_valid = active_q;
  assign addr_fire  = addr_valid && addr_ready;
  assign addr_meta  = {last_row, pop_q && last_row, acc_mode_q, acc_base_q + AccAddrW'(row_q)};

  always_comb begin
    active_d = active_q;
    row_d    = row_q;
    if (addr_fire) begin
      row_d = row_q + 16'd1;
      if (last_row) active_d = 1'b0;
    end
    if (start) begin
      active_d = 1'b1;
      row_d    = '0;
    end
    if (flush_i) active_d = 1'b0;
  end

  `FF(active_q, active_d, 1'b0)
  `FF(row_q, row_d, '0)
  `FFLNR(count_q, cmd_i.ins.count, start)
  `FFLNR(ub_base_q, cmd_i.ins.a[UbAddrW-1:0], start)
  `FFLNR(acc_base_q, cmd_i.ins.b[AccAddrW-1:0], start)
  `FFLNR(acc_mode_q, cmd_i.ins.flags[tpu_isa_pkg::FlagMmcAcc], start)
  `FFLNR(pop_q, cmd_i.ins.flags[tpu_isa_pkg::FlagMmcPop], start)

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
    .addr_i      (ub_base_q + UbAddrW'(row_q)),
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

  assign in_valid   = data_valid && meta_ready;
  assign data_ready = in_ready && meta_ready;
  assign in_fire    = in_valid && in_ready;

  mxu #(
    .N(N)
  ) u_mxu (
    .clk_i,
    .rst_ni,
    .clear_i    (flush_i),
    .wgt_valid_i,
    .wgt_ready_o,
    .wgt_row_i,
    .in_valid_i (in_valid),
    .in_ready_o (in_ready),
    .in_row_i   (data_row),
    .in_last_i  (data_meta[AccAddrW+1]),
    .out_valid_o(out_valid),
    .out_ready_i(1'b1),           // the accumulators take a row every cycle
    .out_row_o  (out_row),
    .out_last_o (out_last),
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
  assign acc_wr_data_o       = out_row;
  `FF(done_q, out_valid && meta_out[AccAddrW+2] && !flush_i, 1'b0)
  assign done_o              = done_q && !flush_i;

  assign row_fire_o  = in_fire;
  assign wgt_shift_o = wgt_valid_i && wgt_ready_o;

  assign unused_pc         = ^{cmd_i.pc, cmd_i.ins.c};
  assign unused_meta_valid = meta_valid ^ meta_out[AccAddrW+1];
  assign unused_out_last   = out_last;

  `ASSERT(MetaBesideEveryRow, out_valid |-> meta_valid)
  `ASSERT(MmcCmdIsMmc, cmd_valid_i |-> cmd_i.ins.op == tpu_isa_pkg::OpMmc)

endmodule
