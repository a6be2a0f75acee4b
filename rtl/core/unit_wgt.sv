// SPDX-License-Identifier: Apache-2.0
// Weight unit: executes RW. Reads count*N weight rows from host memory into
// the weight FIFO, which feeds the MXU's weight port tile after tile.
//
// Row r of tile t comes from host address c + (t*N + r)*b. With b = N the
// rows are contiguous and are read in bursts as large as the FIFO has room
// for (at least a tile, or what is left); otherwise one row per request.
// Rows are only requested when the FIFO has room for them and for every row
// already in flight, so read data never waits. done_o pulses when the
// command's last row is in the FIFO. Faults behave as in unit_mem.
//
// The unit takes the next RW as soon as every row of the current one has been
// requested, so back-to-back RWs keep the read latency covered: commands
// whose rows are still in flight wait in a small queue (oldest first) that
// counts their rows home and gives done_o and the fault pc.
//
// Every request also carries the command's whole host span, [first, last]
// (see unit_mem), for the device's DMA window check.
//
// With Bf16 (bf16 and both configurations) the FIFO's lanes are 16 bits. An
// RW BF16 row is 2N host bytes, two port rows (beats) joined into one FIFO
// row, lane j from bytes 2j (low) and 2j+1; with b = 2N its rows are
// contiguous and burst as above. An int8 row fills the low byte of every
// lane (the MXU's mixed datapath computes int8 on the low 8 bits). Room and
// rows in flight count FIFO rows; the port's requests ask for beats.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module unit_wgt #(
  parameter int unsigned N         = tpu_pkg::ArrayN,
  parameter int unsigned FifoTiles = tpu_pkg::Cfg.wgt_fifo_tiles,
  parameter int unsigned PcW       = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter int unsigned RxDepth   = 4,   // RWs with rows in flight, at most
  parameter bit          Bf16      = 1'b0, // 16-bit lanes and RW BF16
  localparam int unsigned LaneW    = Bf16 ? 16 : 8,
  localparam int unsigned FifoRows = FifoTiles * N,
  localparam int unsigned CntW     = $clog2(FifoRows + 1),
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 flush_i,
  // ---- commands ----
  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  core_pkg::unit_cmd_t  cmd_i,
  output logic                 done_o,
  output logic                 fault_o,
  output logic [PcW-1:0]       fault_pc_o,
  output logic                 waiting_o,
  // ---- memory port (reads only; always ready for read data) ----
  output mem_req_t             mem_req_o,
  input  mem_rsp_t             mem_rsp_i,
  // ---- MXU weight port ----
  output logic                 wgt_valid_o,
  input  logic                 wgt_ready_i,
  output logic [N-1:0][LaneW-1:0] wgt_row_o
);

  localparam int unsigned TotalW = 16 + $clog2(N) + (Bf16 ? 1 : 0);
  localparam int unsigned RowsW  = core_pkg::MemRowsW;

  // The port. Read data is always taken: rows are asked for only when the
  // FIFO has room for them. The write channel stays idle.
  logic                 req_valid, req_ready, rd_valid, rd_err;
  logic [63:0]          req_addr, req_first;
  logic [64:0]          req_last;
  logic [RowsW-1:0]     req_rows;
  logic [N-1:0][7:0]    rd_data;
  assign mem_req_o = '{req_valid: req_valid,
                       req: '{write: 1'b0, addr: req_addr, rows: req_rows, first: req_first,
                              last: req_last},
                       rd_ready: 1'b1, wr_valid: 1'b0, wr_data: '0};
  assign req_ready = mem_rsp_i.req_ready;
  assign rd_valid  = mem_rsp_i.rd_valid;
  assign rd_data   = mem_rsp_i.rd_data;
  assign rd_err    = mem_rsp_i.rd_err;

  typedef struct packed {
    logic [TotalW-1:0] rows;   // beats
    logic              bf16;   // two beats per FIFO row
    logic [PcW-1:0]    pc;
  } rx_cmd_t;

  // ---- request side: the command whose rows are being requested ----
  logic               active_q, active_d, burst_q, bf16_q;
  logic [TotalW-1:0]  total_q, sent_q, sent_d, left;
  logic [63:0]        addr_q, addr_d, stride_q;
  logic [CntW-1:0]    inflight_q, inflight_d, fifo_count, room;
  logic [TotalW-1:0]  burst_rows, burst_beats;  // FIFO rows of a request; port rows
  logic               start, req_fire, start_bf16, row_done;
  logic               offered_q;         // a request is on the port, not yet taken
  logic [TotalW-1:0]  offered_rows_q;    // ... and its size, held until taken
  // ---- receive side: commands with rows still to arrive ----
  logic               rx_ready, rx_valid, faulted_q, faulted_d;
  rx_cmd_t            rx_head;
  logic [TotalW-1:0]  recv_q, recv_d;
  logic               finished, beat, fifo_push, fifo_ready, unused_fifo_ready;
  logic [N-1:0][LaneW-1:0] fifo_row;
  logic [$clog2(RxDepth+1)-1:0] unused_rx_count;

  assign cmd_ready_o = !active_q && rx_ready;
  assign start_bf16  = Bf16 && cmd_i.ins.flags[tpu_isa_pkg::FlagRwBf16];
  assign start       = cmd_valid_i && cmd_ready_o;

  // Room after everything in flight has landed; a burst takes all of it (a
  // tile at least, unless less is left).
  assign room       = CntW'(FifoRows) - fifo_count - inflight_q;
  assign left       = total_q - sent_q;
  assign burst_rows = offered_q ? offered_rows_q :
                      !burst_q ? TotalW'(1) : (left < TotalW'(room) ? left : TotalW'(room));
  // An offered request stays offered, same size, until the port takes it.
  assign req_valid = offered_q ||
                       (active_q && !faulted_q && (left != 0) &&
                        (burst_q ? (TotalW'(room) >= TotalW'(N) || TotalW'(room) >= left)
                                 : room != 0));
  assign req_addr  = addr_q;
  assign burst_beats = bf16_q ? burst_rows << 1 : burst_rows;
  assign req_rows  = RowsW'(burst_beats);
  assign req_fire    = req_valid && req_ready;

  assign beat       = rd_valid && !rd_err && !faulted_q;
  assign finished   = rx_valid && !faulted_q && !fault_o && rd_valid &&
                      (recv_q + 1'b1 == rx_head.rows);
  assign done_o     = finished;
  assign fault_o    = rd_valid && rd_err && !faulted_q;
  assign fault_pc_o = rx_head.pc;
  assign waiting_o  = inflight_q != '0;

  always_comb begin
    sent_d     = sent_q + (req_fire ? burst_rows : '0);
    recv_d     = finished ? '0 : recv_q + TotalW'(rd_valid);
    addr_d     = req_fire ? addr_q + stride_q * 64'(burst_rows) : addr_q;
    inflight_d = inflight_q + (req_fire ? CntW'(burst_rows) : '0) - CntW'(row_done);
    faulted_d  = faulted_q || fault_o;
    // Every row requested: the next command may start.
    active_d   = active_q && !(req_fire && burst_rows == left);
    if (start) begin
      active_d = 1'b1;
      sent_d   = '0;
      addr_d   = cmd_i.ins.c;
    end
    if (flush_i) begin
      active_d   = 1'b0;
      faulted_d  = 1'b0;
      inflight_d = '0;
      recv_d     = '0;
    end
  end

  `FF(active_q, active_d, 1'b0)
  `FF(offered_q, req_valid && !req_ready && !flush_i, 1'b0)
  `FFNR(offered_rows_q, burst_rows)
  `FF(faulted_q, faulted_d, 1'b0)
  `FF(sent_q, sent_d, '0)
  `FF(recv_q, recv_d, '0)
  `FF(inflight_q, inflight_d, '0)
  `FFNR(addr_q, addr_d)
  `FFLNR(total_q, TotalW'(cmd_i.ins.count) * TotalW'(N), start)
  `FFLNR(burst_q, cmd_i.ins.b == (start_bf16 ? 16'(2 * N) : 16'(N)), start)
  `FFLNR(bf16_q, start_bf16, start)
  `FFLNR(stride_q, 64'(cmd_i.ins.b), start)

  // Host span: row r of tile t at c + (t*N + r)*b, count*N rows in all.
  localparam int unsigned SpanW = TotalW + 16;
  logic [TotalW-1:0] span_rows_m1;
  logic [SpanW-1:0]  span_extent;
  assign span_rows_m1 = TotalW'(cmd_i.ins.count) * TotalW'(N) - TotalW'(1);
  assign span_extent  = SpanW'(span_rows_m1) * SpanW'(cmd_i.ins.b) +
                        (start_bf16 ? SpanW'(2 * N) : SpanW'(N)) - SpanW'(1);
  `FFLNR(req_first, cmd_i.ins.c, start)
  `FFLNR(req_last, {1'b0, cmd_i.ins.c} + 65'(span_extent), start)

  // FIFO rows from beats: one beat each (int8), or two (bf16: the first is
  // held, lanes 0 .. N/2-1).
  if (Bf16) begin : gen_wide_rows
    logic              half_q;      // the first beat of a bf16 row is held
    logic [N-1:0][7:0] low_q;
    // A row is done with its last beat, good or not (as rows in flight
    // count); it enters the FIFO only without a fault.
    assign row_done  = rd_valid && (!rx_head.bf16 || half_q);
    assign fifo_push = row_done && beat;
    for (genvar j = 0; j < N; j++) begin : gen_lane
      if (j < N / 2) begin : gen_low
        assign fifo_row[j] = rx_head.bf16 ? {low_q[2*j+1], low_q[2*j]} : {8'd0, rd_data[j]};
      end else begin : gen_high
        assign fifo_row[j] = rx_head.bf16 ? {rd_data[2*j+1-N], rd_data[2*j-N]}
                                          : {8'd0, rd_data[j]};
      end
    end
    `FF(half_q, flush_i ? 1'b0 : (rd_valid && rx_head.bf16) ? !half_q : half_q, 1'b0)
    `FFLNR(low_q, rd_data, beat && !half_q)
  end else begin : gen_byte_rows
    assign row_done  = rd_valid;
    assign fifo_push = beat;
    assign fifo_row  = rd_data;
    logic unused_rx_bf16;
    assign unused_rx_bf16 = rx_head.bf16;
  end

  stream_fifo #(
    .Width($bits(rx_cmd_t)),
    .Depth(RxDepth)
  ) u_rx (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(start),
    .ready_o(rx_ready),
    .data_i (rx_cmd_t'{rows: (TotalW'(cmd_i.ins.count) * TotalW'(N)) << start_bf16,
                       bf16: start_bf16, pc: cmd_i.pc[PcW-1:0]}),
    .valid_o(rx_valid),
    .ready_i(finished),
    .data_o (rx_head),
    .count_o(unused_rx_count)
  );

  // The FIFO is cleared by a flush along with the rest of the unit. Its rows
  // live in block RAM; the RAM FIFO still gives one row per cycle.
  stream_fifo_ram #(
    .Width(N * LaneW),
    .Depth(FifoRows)
  ) u_fifo (
    .clk_i,
    .rst_ni,
    .clear_i(flush_i),
    .valid_i(fifo_push),
    .ready_o(fifo_ready),
    .data_i (fifo_row),
    .valid_o(wgt_valid_o),
    .ready_i(wgt_ready_i),
    .data_o (wgt_row_o),
    .count_o(fifo_count)
  );
  assign unused_fifo_ready = fifo_ready;

  logic unused_cmd, unused_wr;
  assign unused_cmd = ^{cmd_i.pc, cmd_i.ins.op, cmd_i.ins.flags[7:1], cmd_i.ins.a};
  assign unused_wr  = ^{mem_rsp_i.wr_ready, mem_rsp_i.wr_ack_valid, mem_rsp_i.wr_ack_err};

  `ASSERT(WgtFifoNeverFull, fifo_push -> fifo_ready)
  // Cover points: the weight FIFO full, and requests waiting for its room.
  `COVER(WgtFifoFull, fifo_count == CntW'(FifoRows))
  `COVER(WgtWaitsForRoom, active_q && !faulted_q && left != 0 && !req_valid)

endmodule
