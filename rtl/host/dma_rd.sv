// DMA read channel: one descriptor at a time, split into read requests on rq,
// completions reassembled in a reorder buffer and delivered in order.
//
// Splitting: sub-requests end at multiples of max_read_req_i (a power of two
// dividing 4096), so none crosses 4 KiB or exceeds it. One sub-request may be
// issued per cycle while a tag slot is free and the reorder buffer has room
// for all of its bytes (space is reserved at issue, so completions are never
// stalled: rc is always ready).
// Reassembly: a transfer occupies the reorder buffer from line 0, its byte k
// at position k mod RobBytes. Completions land there in any order; the
// sub-requests are retired oldest first (order FIFO), and frontier_q counts
// the leading bytes of the transfer known to be complete. Whole lines below
// the frontier (and the transfer's final line once complete) are read out to
// the output FIFO, 16 bytes a beat, in order.
// Errors (UR, CA, poisoned, timeout, bus master off) end the transfer: from
// the cycle of detection no sub-request is issued and no further line is read
// out; beats already in the output FIFO (at most OutDepth, all correct data
// in order) still go out, then one beat with last = 1 and keep = 0; every
// Active tag is abandoned; rd_done reports the first error and the start
// address of its sub-request.
// done: offered after the beat with last = 1 has been taken (a transfer of
// length 0 has no data beats and is done at once).
// Throughput: one sub-request per cycle on rq; one completion beat per cycle
// on rc; one 16-byte beat per cycle out.
`include "tpu_macros.svh"

module dma_rd #(
  parameter int unsigned  Tags     = 32,
  parameter int unsigned  RobBytes = 16384,
  parameter int unsigned  OutDepth = 4,
  localparam int unsigned SlotW    = $clog2(Tags),
  localparam int unsigned OffW     = dma_pkg::OffW,
  localparam int unsigned LineCntW = OffW - 3,  // lines of a transfer, 0 .. 2^16
  localparam int unsigned RobLines = RobBytes / 16,
  localparam int unsigned RobLineW = $clog2(RobLines),
  localparam int unsigned OutW     = 128 + 16 + 1
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  clear_i,          // soft reset: abandon everything
  input  logic                  start_ok_i,       // low: accept nothing, issue nothing
  input  logic                  bus_master_en_i,
  input  logic [12:0]           max_read_req_i,   // power of two, 128 .. 4096
  input  logic [19:0]           timeout_i,        // completion timeout, cycles
  // ---- descriptors ----
  input  logic                  req_valid_i,
  output logic                  req_ready_o,
  input  logic [63:0]           req_addr_i,
  input  logic [31:0]           req_len_i,
  // ---- data ----
  output logic                  data_valid_o,
  input  logic                  data_ready_i,
  output logic [127:0]          data_o,
  output logic [15:0]           keep_o,
  output logic                  last_o,
  // ---- status ----
  output logic                  done_valid_o,
  input  logic                  done_ready_i,
  output dma_pkg::err_e         done_err_o,
  output logic [63:0]           done_err_addr_o,
  // ---- read requests to rq ----
  output logic                  rq_valid_o,
  input  logic                  rq_ready_i,
  output tlp_pkg::rq_t          rq_o,
  // ---- completions from rc (always taken) ----
  input  logic                  cpl_valid_i,
  input  tlp_pkg::rc_t          cpl_i,
  // ---- completion counters ----
  output logic                  unexpected_o,
  output logic                  malformed_o
);

  import dma_pkg::*;

  typedef enum logic [2:0] {
    RdIdle,  // waiting for a descriptor
    RdRun,   // issuing, receiving, delivering
    RdTerm,  // error: the terminating beat goes into the output FIFO next
    RdLast,  // the beat with last = 1 is in the output FIFO
    RdDone   // rd_done offered
  } state_e;

  state_e               state_q, state_d;
  logic [63:0]          xfer_addr_q, iss_addr_q, iss_addr_d, err_addr_q, err_addr_d;
  logic [OffW-1:0]      xfer_len_q, iss_off_q, iss_off_d, frontier_q, frontier_d;
  logic [LineCntW-1:0]  lines_q, lines_d, total_lines;
  err_e                 err_q, err_d;
  logic                 pend_q, pend_last_q;
  logic [15:0]          pend_keep_q;
  logic                 accept, issue, iss_pending, err_event, bme_err, ord_clear;
  logic [12:0]          sub_len_w;
  logic [OffW:0]        iss_end;
  logic                 rob_room, line_done, rob_re, final_line, term_push;

  // ---- tag table, completion checker, reorder buffer ----
  logic                     alloc_valid, cpl_active, cpl_zombie, commit, retire, cpl_err;
  logic [tlp_pkg::TagW-1:0] alloc_tag, cpl_tag;
  logic [OffW-1:0]          cpl_off, head_off, to_off, cpl_err_off, rob_pos;
  logic [12:0]              cpl_len, cpl_rem, head_len, head_rem, head_got, commit_len;
  logic                     timeout, rob_we;
  logic [127:0]             rob_wdata, rob_rdata;
  logic [15:0]              rob_mask;
  err_e                     cpl_err_code;
  logic                     ord_valid, ord_release;
  logic [SlotW-1:0]         ord_head;

  dma_tags #(
    .Tags(Tags)
  ) u_tags (
    .clk_i,
    .rst_ni,
    .timeout_i,
    .alloc_valid_o(alloc_valid),
    .alloc_tag_o  (alloc_tag),
    .alloc_i      (issue),
    .alloc_off_i  (iss_off_q),
    .alloc_len_i  (sub_len_w),
    .cpl_tag_i    (cpl_tag),
    .cpl_active_o (cpl_active),
    .cpl_zombie_o (cpl_zombie),
    .cpl_off_o    (cpl_off),
    .cpl_len_o    (cpl_len),
    .cpl_rem_o    (cpl_rem),
    .head_slot_i  (ord_head),
    .head_off_o   (head_off),
    .head_len_o   (head_len),
    .head_rem_o   (head_rem),
    .commit_i     (commit),
    .commit_len_i (commit_len),
    .retire_i     (retire),
    .release_i    (ord_release),
    .abandon_i    (err_event || clear_i),
    .timeout_o    (timeout),
    .timeout_off_o(to_off)
  );

  dma_cpl u_cpl (
    .clk_i,
    .rst_ni,
    .beat_valid_i(cpl_valid_i),
    .beat_i      (cpl_i),
    .tag_o       (cpl_tag),
    .tag_active_i(cpl_active),
    .tag_zombie_i(cpl_zombie),
    .tag_off_i   (cpl_off),
    .tag_len_i   (cpl_len),
    .tag_rem_i   (cpl_rem),
    .rob_we_o    (rob_we),
    .rob_pos_o   (rob_pos),
    .rob_data_o  (rob_wdata),
    .rob_mask_o  (rob_mask),
    .commit_o    (commit),
    .commit_len_o(commit_len),
    .retire_o    (retire),
    .err_o       (cpl_err),
    .err_code_o  (cpl_err_code),
    .err_off_o   (cpl_err_off),
    .unexpected_o,
    .malformed_o
  );

  dma_rob #(
    .RobBytes(RobBytes)
  ) u_rob (
    .clk_i,
    .we_i   (rob_we),
    .wpos_i (rob_pos[RobLineW+3:0]),
    .wdata_i(rob_wdata),
    .wmask_i(rob_mask),
    .re_i   (rob_re),
    .rline_i(lines_q[RobLineW-1:0]),
    .rdata_o(rob_rdata)
  );

  // Sub-requests in issue order; the head retires once its data is complete.
  // It has room for all Tags, so it is never full when a slot is allocated.
  logic                   unused_ord_ready;
  logic [$clog2(Tags+1)-1:0] unused_ord_count;
  logic [OffW-RobLineW-5:0]  unused_rob_pos;
  assign unused_rob_pos = rob_pos[OffW-1:RobLineW+4];

  assign ord_clear   = err_event || clear_i;
  assign ord_release = ord_valid && (head_rem == '0) && !ord_clear;

  stream_fifo #(
    .Width(SlotW),
    .Depth(Tags)
  ) u_order (
    .clk_i,
    .rst_ni,
    .clear_i(ord_clear),
    .valid_i(issue),
    .ready_o(unused_ord_ready),
    .data_i (alloc_tag[SlotW-1:0]),
    .valid_o(ord_valid),
    .ready_i(ord_release),
    .data_o (ord_head),
    .count_o(unused_ord_count)
  );

  // ---- issue ----
  assign total_lines = LineCntW'((xfer_len_q + OffW'(15)) >> 4);
  assign iss_pending = (state_q == RdRun) && (iss_off_q != xfer_len_q);
  assign sub_len_w   = sub_len(iss_addr_q[11:0], xfer_len_q - iss_off_q, max_read_req_i);
  assign iss_end     = (OffW + 1)'(iss_off_q) + (OffW + 1)'(sub_len_w);
  // Lines [0, ceil(iss_end / 16)) must fit in the buffer next to what is still unread.
  assign rob_room    = ((iss_end + (OffW + 1)'(15)) >> 4) <=
                       (OffW + 1)'(lines_q) + (OffW + 1)'(RobLines);
  assign bme_err     = iss_pending && !bus_master_en_i;
  assign err_event   = (state_q == RdRun) && (cpl_err || timeout || bme_err) && !clear_i;

  assign rq_valid_o  = iss_pending && bus_master_en_i && alloc_valid && rob_room &&
                       start_ok_i && !err_event;
  assign issue       = rq_valid_o && rq_ready_i;
  assign rq_o        = '{write: 1'b0,
                         tag:   alloc_tag,
                         addr:  iss_addr_q,
                         len:   sub_len_w,
                         data:  '0,
                         keep:  '0,
                         last:  1'b1};

  // ---- delivery: line by line, behind the frontier ----
  logic [$clog2(OutDepth+1)-1:0] out_count;
  logic                          out_ready;
  logic [15:0][7:0]              out_bytes;  // bytes past the end of the transfer read as 0

  always_comb begin
    for (int b = 0; b < 16; b++) out_bytes[b] = pend_keep_q[b] ? rob_rdata[8*b +: 8] : 8'd0;
  end

  assign line_done  = (frontier_q >= OffW'({lines_q + 1'b1, 4'd0})) || (frontier_q == xfer_len_q);
  assign rob_re     = (state_q == RdRun) && (lines_q != total_lines) && line_done &&
                      (32'(out_count) + 32'(pend_q) < OutDepth) && !err_event && !clear_i;
  assign final_line = lines_q == total_lines - 1'b1;
  assign term_push  = (state_q == RdTerm) && !pend_q && out_ready;

  stream_fifo #(
    .Width(OutW),
    .Depth(OutDepth)
  ) u_out (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(pend_q || term_push),
    .ready_o(out_ready),
    .data_i (pend_q ? {out_bytes, pend_keep_q, pend_last_q} : {128'd0, 16'd0, 1'b1}),
    .valid_o(data_valid_o),
    .ready_i(data_ready_i),
    .data_o ({data_o, keep_o, last_o}),
    .count_o(out_count)
  );

  // ---- frontier: leading bytes of the transfer that are complete ----
  assign head_got = head_len - head_rem;
  always_comb begin
    frontier_d = '0;
    if (state_q == RdRun) begin
      frontier_d = ord_valid ? head_off + OffW'(head_got) : iss_off_q;
    end
  end

  // ---- descriptor state ----
  assign accept       = req_valid_i && req_ready_o;
  assign req_ready_o  = (state_q == RdIdle) && start_ok_i;
  assign done_valid_o = state_q == RdDone;
  assign done_err_o   = err_q;
  assign done_err_addr_o = err_addr_q;

  always_comb begin
    state_d    = state_q;
    iss_addr_d = issue ? iss_addr_q + 64'(sub_len_w) : iss_addr_q;
    iss_off_d  = issue ? iss_off_q + OffW'(sub_len_w) : iss_off_q;
    lines_d    = rob_re ? lines_q + 1'b1 : lines_q;
    err_d      = err_q;
    err_addr_d = err_addr_q;
    unique case (state_q)
      RdIdle: begin
        if (accept) begin
          state_d    = (req_len_i == '0) ? RdDone : RdRun;
          iss_addr_d = req_addr_i;
          iss_off_d  = '0;
          lines_d    = '0;
          err_d      = ErrNone;
          err_addr_d = '0;
        end
      end
      RdRun: begin
        if (err_event) begin
          state_d = RdTerm;
          if (cpl_err) begin
            err_d      = cpl_err_code;
            err_addr_d = xfer_addr_q + 64'(cpl_err_off);
          end else if (timeout) begin
            err_d      = ErrTimeout;
            err_addr_d = xfer_addr_q + 64'(to_off);
          end else begin
            err_d      = ErrBusMasterOff;
            err_addr_d = iss_addr_q;
          end
        end else if (rob_re && final_line) begin
          state_d = RdLast;
        end
      end
      RdTerm: if (term_push) state_d = RdLast;
      RdLast: if (data_valid_o && data_ready_i && last_o) state_d = RdDone;
      RdDone: if (done_ready_i) state_d = RdIdle;
      default: state_d = RdIdle;
    endcase
    if (clear_i) state_d = RdIdle;
  end

  `FF(state_q, state_d, RdIdle)
  `FF(err_q, err_d, ErrNone)
  `FF(err_addr_q, err_addr_d, '0)
  `FF(iss_addr_q, iss_addr_d, '0)
  `FF(iss_off_q, iss_off_d, '0)
  `FF(lines_q, lines_d, '0)
  `FF(frontier_q, frontier_d, '0)
  `FF(pend_q, rob_re, 1'b0)
  `FFL(xfer_addr_q, req_addr_i, accept, '0)
  `FFL(xfer_len_q, OffW'(req_len_i), accept, '0)
  `FFL(pend_last_q, final_line, rob_re, 1'b0)
  `FFL(pend_keep_q, final_line ? low_bytes({xfer_len_q[3:0] == '0, xfer_len_q[3:0]}) : 16'hffff,
       rob_re, '0)

  // ---- rules ----
  `ASSERT(RdLenInRange, accept |-> req_len_i <= 32'(1 << 20))
  // A client may withdraw a descriptor only during a soft reset.
  `ASSERT(RdReqHeld, $past(req_valid_i && !req_ready_o && start_ok_i) && start_ok_i |->
                     req_valid_i && (req_addr_i == $past(req_addr_i)) &&
                     (req_len_i == $past(req_len_i)))
  `ASSERT(RdOutRoom, pend_q |-> out_ready)
  `ASSERT(RdNoCross4K, rq_valid_o |-> (13'(iss_addr_q[11:0]) + sub_len_w) <= 13'd4096)
  `ASSERT(RdSubLenMax, rq_valid_o |-> (sub_len_w != '0) && (sub_len_w <= max_read_req_i))
  `ASSERT(RdIdleNoCpl, (state_q != RdRun) |-> !commit && !cpl_err)

endmodule
