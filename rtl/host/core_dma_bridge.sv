// SPDX-License-Identifier: Apache-2.0
// Connects the core's memory port (bursts of N-byte rows) to the DMA engine
// (byte streams, 16 bytes a beat).
//
// Read burst  -> one DMA read of rows*N bytes; its beats are cut into rows.
//                If the transfer fails, the rows it did not deliver are sent
//                as error rows, so the core always gets exactly `rows` beats.
// Write burst -> one DMA write of rows*N bytes; rows are packed into beats;
//                the DMA's write-done is the core's acknowledge.
// Every DMA error is also reported on err_* (class and address) for the
// error registers.
//
// DMA windows (docs/host_interface.md): a request whose instruction's host
// span [first, last] is not inside one window granting its direction is
// denied: no DMA is issued for it; a denied read gives the core its rows as
// error rows, a denied write swallows its rows and is acknowledged with an
// error, so the core stops with MEM_FAULT exactly as for a failed transfer,
// and err_* report dma_pkg::ErrWindowRead/ErrWindowWrite with `first`. The
// check is made as a request enters a spill register, so it adds a cycle
// to each burst and no logic on the paths into the DMA engine. Rows of N <= 16 bytes share a beat (16/N rows a beat);
// rows of N > 16 bytes take N/16 beats. N is a power of two, 4 .. 256.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module core_dma_bridge #(
  parameter int unsigned N     = tpu_pkg::ArrayN,  // bytes per row
  parameter int unsigned Depth = tpu_pkg::Cfg.mem_outstanding,  // bursts in flight per direction
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               clear_i,       // soft reset: forget bursts in flight
  // ---- core memory port ----
  input  mem_req_t           mem_req_i,
  output mem_rsp_t           mem_rsp_o,
  input  dma_pkg::window_t [dma_pkg::MaxWindows-1:0] windows_i,
  // ---- DMA read channel ----
  output logic               rd_req_valid_o,
  input  logic               rd_req_ready_i,
  output dma_pkg::rd_req_t   rd_req_o,
  input  logic               rd_data_valid_i,
  output logic               rd_data_ready_o,
  input  dma_pkg::rd_data_t  rd_data_i,
  input  logic               rd_done_valid_i,
  output logic               rd_done_ready_o,
  input  dma_pkg::rd_done_t  rd_done_i,
  // ---- DMA write channel ----
  output logic               wr_req_valid_o,
  input  logic               wr_req_ready_i,
  output dma_pkg::wr_req_t   wr_req_o,
  output logic               wr_data_valid_o,
  input  logic               wr_data_ready_i,
  output dma_pkg::wr_data_t  wr_data_o,
  input  logic               wr_done_valid_i,
  output logic               wr_done_ready_o,
  input  dma_pkg::wr_done_t  wr_done_i,
  // ---- errors seen ----
  output logic               err_valid_o,   // one cycle per failed transfer
  output dma_pkg::err_e      err_class_o,   // ErrBusMasterOff for a dropped write
  output logic [63:0]        err_addr_o
);

  if (N < 4 || N > 256 || (N & (N - 1)) != 0) begin : gen_bad_n
    $error("core_dma_bridge: N must be a power of two from 4 to 256");
  end

  localparam int unsigned RowsW = core_pkg::MemRowsW;

  // The core's side of the port.
  logic           core_req_ready, core_rd_valid, core_rd_err, core_wr_ready;
  logic           core_wr_ack_valid, core_wr_ack_err;
  logic [N*8-1:0] core_rd_data;
  assign mem_rsp_o = '{req_ready: core_req_ready, rd_valid: core_rd_valid, rd_data: core_rd_data,
                       rd_err: core_rd_err, wr_ready: core_wr_ready,
                       wr_ack_valid: core_wr_ack_valid, wr_ack_err: core_wr_ack_err};

  localparam int unsigned RowsPerBeat = (N <= 16) ? 16 / N : 1;
  localparam int unsigned BeatsPerRow = (N >= 16) ? N / 16 : 1;
  localparam int unsigned IdxW        = (RowsPerBeat > BeatsPerRow) ? $clog2(RowsPerBeat) + 1
                                                                    : $clog2(BeatsPerRow) + 1;
  // A row padded to at least a beat, so both cases slice the same vectors.
  localparam int unsigned WideW       = (N * 8 > 128) ? N * 8 : 128;

  // ---------------------------------------------------------------------------
  // Requests: a read or write descriptor, plus the row count for the data path
  // ---------------------------------------------------------------------------
  typedef struct packed {
    logic             write;
    logic             denied;
    logic [63:0]      addr;
    logic [RowsW-1:0] rows;
    logic [63:0]      first;
  } req_t;

  // Window check on the way into the spill register. Only a valid request's
  // result is used; computed only then, so that a simulator's model does not
  // compare eight 64-bit windows in every cycle (the logic is the same).
  logic [dma_pkg::MaxWindows-1:0] win_hit;
  always_comb begin
    win_hit = '0;
    if (mem_req_i.req_valid) begin
      for (int w = 0; w < dma_pkg::MaxWindows; w++) begin
        win_hit[w] = windows_i[w].valid &&
                     (mem_req_i.req.write ? windows_i[w].wr : windows_i[w].rd) &&
                     (mem_req_i.req.first >= windows_i[w].base) &&
                     (mem_req_i.req.last <= {1'b0, windows_i[w].last});
      end
    end
  end

  req_t req_in, req_q;
  logic req_valid, req_ready;
  assign req_in = '{write: mem_req_i.req.write, denied: !(|win_hit), addr: mem_req_i.req.addr,
                    rows: mem_req_i.req.rows, first: mem_req_i.req.first};

  stream_spill #(.Width($bits(req_t))) u_req (
    .clk_i, .rst_ni, .clear_i,
    .valid_i(mem_req_i.req_valid), .ready_o(core_req_ready), .data_i(req_in),
    .valid_o(req_valid), .ready_i(req_ready), .data_o(req_q)
  );

  logic rd_rows_ready, wr_rows_ready, rd_rows_valid, wr_rows_valid, ack_order_ready;
  logic rd_rows_denied, wr_rows_denied;
  logic [RowsW-1:0] rd_rows_head, wr_rows_head;
  logic [$clog2(Depth+1)-1:0] unused_rd_cnt, unused_wr_cnt;
  logic req_rd_fire, req_wr_fire, req_denied_fire;
  logic [31:0] req_len;

  // A denied request takes only a place in its rows FIFO.
  assign rd_req_valid_o  = req_valid && !req_q.write && !req_q.denied && rd_rows_ready;
  assign wr_req_valid_o  = req_valid && req_q.write && !req_q.denied && wr_rows_ready;
  assign req_len         = 32'(req_q.rows) * 32'(N);
  assign rd_req_o        = '{addr: req_q.addr, len: req_len};
  assign wr_req_o        = '{addr: req_q.addr, len: req_len};
  assign req_ready       = req_q.write ? (wr_rows_ready && ack_order_ready &&
                                          (req_q.denied || wr_req_ready_i))
                                       : (rd_rows_ready && (req_q.denied || rd_req_ready_i));
  assign req_rd_fire     = req_valid && req_ready && !req_q.write;
  assign req_wr_fire     = req_valid && req_ready && req_q.write;
  assign req_denied_fire = req_valid && req_ready && req_q.denied;

  logic rd_burst_done, wr_burst_packed;

  stream_fifo #(.Width(1 + RowsW), .Depth(Depth)) u_rd_rows (
    .clk_i, .rst_ni, .clear_i,
    .valid_i(req_rd_fire), .ready_o(rd_rows_ready), .data_i({req_q.denied, req_q.rows}),
    .valid_o(rd_rows_valid), .ready_i(rd_burst_done), .data_o({rd_rows_denied, rd_rows_head}),
    .count_o(unused_rd_cnt)
  );
  stream_fifo #(.Width(1 + RowsW), .Depth(Depth)) u_wr_rows (
    .clk_i, .rst_ni, .clear_i,
    .valid_i(req_wr_fire), .ready_o(wr_rows_ready), .data_i({req_q.denied, req_q.rows}),
    .valid_o(wr_rows_valid), .ready_i(wr_burst_packed), .data_o({wr_rows_denied, wr_rows_head}),
    .count_o(unused_wr_cnt)
  );

  // ---------------------------------------------------------------------------
  // Read data: beats -> rows; then the transfer's status; then padding rows
  // ---------------------------------------------------------------------------
  typedef enum logic [1:0] {RdData, RdStatus, RdPad} rd_state_e;
  rd_state_e           rd_state_q, rd_state_d;
  logic [RowsW-1:0]    rd_sent_q, rd_sent_d;      // rows given to the core in this burst
  logic [IdxW-1:0]     rd_idx_q, rd_idx_d;        // row within beat, or beat within row
  logic [WideW-1:0]    row_buf_q, row_buf_d;      // N > 16: row being assembled
  logic                row_fire, beat_rows_done, rd_err;
  logic [7:0]          beat_bytes;
  logic [WideW-1:0]    rd_data_wide;

  assign rd_data_wide = WideW'(rd_data_i.data);
  logic [IdxW-1:0]     beat_rows;

  assign beat_bytes = 8'($countones(rd_data_i.keep));
  assign beat_rows  = IdxW'(beat_bytes / 8'(N < 16 ? N : 16));
  assign rd_err     = rd_done_i.err != dma_pkg::ErrNone;

  always_comb begin
    core_rd_valid   = 1'b0;
    core_rd_data    = '0;
    core_rd_err     = 1'b0;
    rd_data_ready_o = 1'b0;
    rd_done_ready_o = 1'b0;
    rd_burst_done   = 1'b0;
    rd_state_d      = rd_state_q;
    rd_sent_d       = rd_sent_q;
    rd_idx_d        = rd_idx_q;
    row_buf_d       = row_buf_q;
    beat_rows_done  = 1'b0;
    row_fire        = 1'b0;

    unique case (rd_state_q)
      RdData: begin
        if (rd_rows_valid && rd_rows_denied) begin
          // Denied: no data comes for it; its rows are all errors.
          rd_state_d = RdPad;
        end else if (rd_rows_valid && rd_data_valid_i) begin
          if (N <= 16) begin
            // Rows of this beat one by one; a beat with no whole row is dropped.
            core_rd_valid  = (beat_rows != 0) && (rd_sent_q != rd_rows_head);
            core_rd_data   = (N*8)'(rd_data_wide >> (32'(rd_idx_q) * N * 8));
            row_fire       = core_rd_valid && mem_req_i.rd_ready;
            beat_rows_done = !core_rd_valid || (row_fire && rd_idx_q + 1'b1 == beat_rows);
            if (row_fire) rd_idx_d = rd_idx_q + 1'b1;
          end else begin
            // Beats of a row one by one; the row goes out with its last beat.
            row_buf_d = row_buf_q;
            row_buf_d[32'(rd_idx_q) * 128 +: 128] = rd_data_i.data;
            core_rd_valid  = (rd_idx_q == IdxW'(BeatsPerRow - 1)) && (beat_bytes == 8'd16) &&
                             (rd_sent_q != rd_rows_head);
            core_rd_data   = (N*8)'(row_buf_d);
            row_fire       = core_rd_valid && mem_req_i.rd_ready;
            beat_rows_done = (core_rd_valid && row_fire) || !core_rd_valid;
            if (beat_rows_done) rd_idx_d = core_rd_valid ? '0 : rd_idx_q + 1'b1;
          end
          if (beat_rows_done) begin
            rd_data_ready_o = 1'b1;
            if (N <= 16) rd_idx_d = '0;
            if (rd_data_i.last) begin
              rd_state_d = RdStatus;
              rd_idx_d   = '0;
            end
          end
          if (row_fire) rd_sent_d = rd_sent_q + 1'b1;
        end
      end
      RdStatus: begin
        rd_done_ready_o = rd_done_valid_i;
        if (rd_done_valid_i) rd_state_d = (rd_sent_q == rd_rows_head) ? RdData : RdPad;
        if (rd_done_valid_i && rd_sent_q == rd_rows_head) begin
          rd_burst_done = 1'b1;
          rd_sent_d     = '0;
        end
      end
      RdPad: begin
        // The transfer failed (or ended short): the missing rows are errors.
        core_rd_valid = 1'b1;
        core_rd_err   = 1'b1;
        row_fire      = mem_req_i.rd_ready;
        if (row_fire) begin
          rd_sent_d = rd_sent_q + 1'b1;
          if (rd_sent_q + 1'b1 == rd_rows_head) begin
            rd_burst_done = 1'b1;
            rd_sent_d     = '0;
            rd_state_d    = RdData;
          end
        end
      end
      default: rd_state_d = RdData;
    endcase
    if (clear_i) begin
      rd_state_d = RdData;
      rd_sent_d  = '0;
      rd_idx_d   = '0;
    end
  end

  `FF(rd_state_q, rd_state_d, RdData)
  `FF(rd_sent_q, rd_sent_d, '0)
  `FF(rd_idx_q, rd_idx_d, '0)
  `FFNR(row_buf_q, row_buf_d)

  // ---------------------------------------------------------------------------
  // Write data: rows -> beats
  // ---------------------------------------------------------------------------
  logic [RowsW-1:0]  wr_rows_q, wr_rows_d;   // rows of the head burst taken
  logic [IdxW-1:0]   wr_idx_q, wr_idx_d;
  logic [WideW-1:0]  wr_buf_q, wr_buf_d;
  logic              wr_last_row, beat_fire, deny_ack;
  logic [WideW-1:0]  wr_row_wide;

  assign wr_row_wide = WideW'(mem_req_i.wr_data);

  assign wr_last_row = (wr_rows_q + 1'b1 == wr_rows_head);
  assign beat_fire   = wr_data_valid_o && wr_data_ready_i;

  always_comb begin
    core_wr_ready   = 1'b0;
    wr_data_valid_o = 1'b0;
    wr_data_o       = '0;
    wr_burst_packed = 1'b0;
    wr_rows_d       = wr_rows_q;
    wr_idx_d        = wr_idx_q;
    wr_buf_d        = wr_buf_q;
    deny_ack        = 1'b0;
    if (wr_rows_valid && wr_rows_denied && mem_req_i.wr_valid) begin
      // Denied: its rows are taken and dropped; it is acknowledged with an error.
      core_wr_ready = 1'b1;
      wr_rows_d     = wr_rows_q + 1'b1;
      if (wr_last_row) begin
        wr_burst_packed = 1'b1;
        wr_rows_d       = '0;
        deny_ack        = 1'b1;
      end
    end else if (wr_rows_valid && mem_req_i.wr_valid) begin
      if (N <= 16) begin
        // Collect rows; a beat leaves when full or with the burst's last row.
        wr_buf_d = wr_buf_q;
        wr_buf_d[32'(wr_idx_q) * N * 8 +: N * 8] = mem_req_i.wr_data;
        if (wr_idx_q == IdxW'(RowsPerBeat - 1) || wr_last_row) begin
          wr_data_valid_o = 1'b1;
          wr_data_o       = '{data: wr_buf_d[127:0],
                              keep: 16'((17'd1 << ((32'(wr_idx_q) + 1) * N)) - 17'd1),
                              last: wr_last_row};
          core_wr_ready   = wr_data_ready_i;
        end else begin
          core_wr_ready = 1'b1;
        end
        if (core_wr_ready) begin
          wr_idx_d  = wr_data_valid_o ? '0 : wr_idx_q + 1'b1;
          wr_rows_d = wr_rows_q + 1'b1;
        end
      end else begin
        // A row leaves as N/16 beats.
        wr_data_valid_o = 1'b1;
        wr_data_o       = '{data: wr_row_wide[32'(wr_idx_q) * 128 +: 128],
                            keep: '1,
                            last: wr_last_row && (wr_idx_q == IdxW'(BeatsPerRow - 1))};
        core_wr_ready   = wr_data_ready_i && (wr_idx_q == IdxW'(BeatsPerRow - 1));
        if (beat_fire) wr_idx_d = (wr_idx_q == IdxW'(BeatsPerRow - 1)) ? '0 : wr_idx_q + 1'b1;
        if (core_wr_ready) wr_rows_d = wr_rows_q + 1'b1;
      end
      if (core_wr_ready && wr_last_row) begin
        wr_burst_packed = 1'b1;
        wr_rows_d       = '0;
        wr_idx_d        = '0;
      end
    end
    if (clear_i) begin
      wr_rows_d = '0;
      wr_idx_d  = '0;
    end
  end

  `FF(wr_rows_q, wr_rows_d, '0)
  `FF(wr_idx_q, wr_idx_d, '0)
  `FFNR(wr_buf_q, wr_buf_d)

  // Acknowledges, one per write request and in request order, because the
  // core counts them per command and may have two commands' requests in
  // flight: the DMA's write-dones, and an error one per denied write once
  // its rows are swallowed (counted while they wait). u_ack_order holds
  // whether each request in flight was denied. It is deeper than u_wr_rows
  // because a request leaves u_wr_rows when its rows are packed, before the
  // DMA is done with it.
  localparam int unsigned AckDepth = 2 * Depth;
  localparam int unsigned DenyW    = $clog2(Depth + 1);
  logic                          ack_order_valid, ack_order_denied, deny_ack_out;
  logic [$clog2(AckDepth+1)-1:0] unused_ack_cnt;
  logic [DenyW-1:0]              deny_acks_q, deny_acks_d;

  stream_fifo #(.Width(1), .Depth(AckDepth)) u_ack_order (
    .clk_i, .rst_ni, .clear_i,
    .valid_i(req_wr_fire), .ready_o(ack_order_ready), .data_i(req_q.denied),
    .valid_o(ack_order_valid), .ready_i(core_wr_ack_valid), .data_o(ack_order_denied),
    .count_o(unused_ack_cnt)
  );

  assign deny_ack_out       = ack_order_valid && ack_order_denied && (deny_acks_q != '0);
  assign wr_done_ready_o    = ack_order_valid && !ack_order_denied;
  assign core_wr_ack_valid = deny_ack_out || (wr_done_valid_i && wr_done_ready_o);
  assign core_wr_ack_err   = ack_order_denied || wr_done_i.err;
  assign deny_acks_d        = clear_i ? '0 : deny_acks_q + DenyW'(deny_ack) - DenyW'(deny_ack_out);
  `FF(deny_acks_q, deny_acks_d, '0)

  // ---------------------------------------------------------------------------
  // Errors
  // ---------------------------------------------------------------------------
  // A denied request's report waits in a register for a cycle without a DMA
  // error; a second denial while one waits is not reported again (the core
  // stops at the first fault it sees either way).
  logic        dma_err, win_err_q, win_err_d;
  dma_pkg::err_e win_class_q;
  logic [63:0] win_addr_q;
  assign dma_err = (rd_done_valid_i && rd_done_ready_o && rd_err) ||
                   (wr_done_valid_i && wr_done_i.err);
  logic win_load;
  assign win_load  = req_denied_fire && (!win_err_q || !dma_err);
  assign win_err_d = !clear_i && ((win_err_q && dma_err) || req_denied_fire);
  `FF(win_err_q, win_err_d, 1'b0)
  `FFLNR(win_class_q, req_q.write ? dma_pkg::ErrWindowWrite : dma_pkg::ErrWindowRead, win_load)
  `FFLNR(win_addr_q, req_q.first, win_load)

  assign err_valid_o = dma_err || win_err_q;
  assign err_class_o = (rd_done_valid_i && rd_done_ready_o && rd_err) ? rd_done_i.err :
                       (wr_done_valid_i && wr_done_i.err) ? dma_pkg::ErrBusMasterOff : win_class_q;
  assign err_addr_o  = (rd_done_valid_i && rd_done_ready_o && rd_err) ? rd_done_i.err_addr :
                       (wr_done_valid_i && wr_done_i.err) ? mem_req_i.req.addr : win_addr_q;

  `ASSERT(RowsNotPastBurst, core_rd_valid -> rd_rows_valid)
  `ASSERT(WrDoneHasRequest, wr_done_valid_i -> ack_order_valid)

endmodule
