// SPDX-License-Identifier: Apache-2.0
// DMA read channel: up to MaxXfers descriptors in flight, split into read
// requests on rq, completions reassembled in a reorder buffer and delivered
// in order, descriptor by descriptor.
//
// Descriptors: each accepted descriptor gets an entry in a circular table
// {addr, len, base, err} and a 16-byte-aligned base offset: the running sum of
// the lengths before it, each rounded up to 16 (modulo 2^OffW). Byte k of the
// descriptor has the global offset base + k; tags, the reorder buffer (byte at
// offset o lives at position o mod RobBytes) and the frontier all use global
// offsets. Every comparison is a modular difference to the base of the
// descriptor being delivered (the head), which the issue window keeps below
// 2^20 + RobBytes + 4 KiB. Four pointers walk the table: tail (next free),
// iss (being issued), rd (the head: lines being read out) and done (rd_done
// pending); done <= rd <= iss <= tail.
// Splitting and issue: sub-requests end at multiples of max_read_req_i (a
// power of two dividing 4096), so none crosses 4 KiB or exceeds it. One
// sub-request may be issued per cycle while a tag slot is free and the
// reorder buffer has room for all of its bytes (space is reserved at issue, so
// completions are never stalled: rc is always ready); the issue pointer moves
// on to the next descriptor in the cycle its last sub-request goes out, so the
// requests of consecutive descriptors leave back to back.
// Reassembly: completions land in the buffer in any order; the sub-requests
// are retired oldest first (order FIFO), and frontier_q is the global offset
// below which every issued byte is complete. Whole lines of the head below the
// frontier (and its final line once complete) are read out to the output FIFO,
// 16 bytes a beat; the next descriptor's lines follow at once.
// Delivery: a descriptor's beats, the last with last = 1, then its rd_done.
// The beats of the next descriptor are held back (data_valid_o low) while a
// done is offered, so the client sees data i, done i, data i+1, ...
// Errors (UR, CA, poisoned, timeout; bus master off when the head still has
// sub-requests to issue) belong to the descriptor whose bytes the failing
// sub-request covers. Each error abandons every Active tag and clears the
// order FIFO.
//   Head: it ends as a single transfer did before: from the cycle of
//     detection none of its sub-requests is issued and no further line is
//     read out; beats already in the output FIFO still go out, then one beat
//     with last = 1 and keep = 0; rd_done reports the error and the start
//     address of its sub-request. Issue restarts at the next descriptor.
//   Later descriptor: recorded (perr_q: code and offset) and the head restarts
//     issuing from the first line not yet read out; the descriptor with the
//     recorded error is not issued again, and when it becomes the head it ends
//     at once with that error (no data, one beat with last = 1, keep = 0).
//     Descriptors between the head and it run normally. Only one error is
//     recorded: a later one can only come from an earlier descriptor (nothing
//     past the recorded one is issued), and it replaces it; the replaced one
//     is then fetched again.
// done: offered the cycle after the beat with last = 1 has been taken (a
// descriptor of length 0 has no data beats and is done once the ones before
// it are).
// Throughput: one sub-request per cycle on rq; one completion beat per cycle
// on rc; one 16-byte beat per cycle out, plus one cycle per descriptor for
// its done.
`include "tpu_macros.svh"

module dma_rd #(
  parameter int unsigned  Tags     = tpu_pkg::Cfg.dma_tags,     // outstanding sub-requests
  parameter int unsigned  RobBytes = tpu_pkg::Cfg.dma_rob_bytes,  // reorder buffer, bytes
  parameter int unsigned  MaxXfers = tpu_pkg::Cfg.dma_rd_xfers,     // descriptors in flight, power of two 2 .. 256
  parameter int unsigned  OutDepth = 4,      // output FIFO, beats
  localparam int unsigned SlotW    = $clog2(Tags),
  localparam int unsigned OffW     = dma_pkg::OffW,
  localparam int unsigned LineCntW = OffW - 3,  // lines of a transfer, 0 .. 2^16
  localparam int unsigned LineW    = OffW - 4,  // global line numbers (offset / 16)
  localparam int unsigned RobLines = RobBytes / 16,
  localparam int unsigned RobLineW = $clog2(RobLines),
  localparam int unsigned IdxW     = $clog2(MaxXfers),
  localparam int unsigned PtrW     = IdxW + 1
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  clear_i,          // soft reset: abandon everything
  input  logic                  start_ok_i,       // low: accept nothing, issue nothing
  input  logic                  bus_master_en_i,
  input  logic [12:0]           max_read_req_i,   // power of two, 128 .. 4096
  input  logic [31:0]           timeout_i,        // completion timeout, cycles
  // ---- descriptors ----
  input  logic                  req_valid_i,
  output logic                  req_ready_o,
  input  dma_pkg::rd_req_t      req_i,
  // ---- data ----
  output logic                  data_valid_o,
  input  logic                  data_ready_i,
  output dma_pkg::rd_data_t     data_o,
  // ---- status ----
  output logic                  done_valid_o,
  input  logic                  done_ready_i,
  output dma_pkg::rd_done_t     done_o,
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

  if (MaxXfers < 2 || MaxXfers > 256 || (MaxXfers & (MaxXfers - 1)) != 0) begin : gen_bad_xfers
    $error("dma_rd: MaxXfers must be a power of two in 2 .. 256");
  end

  // An offset 1.5 MiB or more past the head's base (modulo 2^OffW) is behind
  // it. The issue window never goes more than 2^20 + RobBytes + 4 KiB ahead,
  // and the only tag that can be behind is the oldest one, complete and being
  // retired, at most 4 KiB + 16 behind.
  function automatic logic behind(logic [OffW-1:0] rel);
    return rel[OffW-1] && rel[OffW-2];
  endfunction

  typedef enum logic {
    RdRun,   // the head's lines are read out as they complete
    RdTerm   // the head failed: its terminating beat goes into the output FIFO next
  } state_e;

  // ---- descriptor table ----
  // addr, len and base are written once, at accept, and eoff once, when the
  // head fails: each is a RAM with one write port and a read port per reader
  // (LUT RAM, see docs/dma.md). err has two writers (accept, head error) and
  // stays in flops.
  logic [63:0]                    tab_addr_q [MaxXfers];
  logic [OffW-1:0]                tab_len_q  [MaxXfers];
  logic [LineW-1:0]               tab_base_q [MaxXfers];   // base offset / 16
  logic [OffW-1:0]                tab_eoff_q [MaxXfers];   // failing byte offset in the transfer
  logic [OffW-1:0]                tab_eoff_w;
  err_e [MaxXfers-1:0]            tab_err_q, tab_err_d;
  logic [PtrW-1:0]                tail_q, tail_d, iss_q, iss_d, rd_q, rd_d, done_q, done_d;
  logic [LineW-1:0]               next_base_q, next_base_d;

  state_e               state_q, state_d;
  logic [OffW-1:0]      iss_rel_q, iss_rel_d, frontier_q, frontier_d;
  logic [LineCntW-1:0]  lines_q, lines_d, total_lines;
  logic                 pend_q, pend_last_q, last_seen_q, last_seen_d;
  logic [15:0]          pend_keep_q;
  logic                 accept, issue, err_event, head_err, restart_next, term_push, rob_re;
  logic                 rob_room, line_done, final_line;

  // ---- recorded error of a later descriptor ----
  logic                 perr_q, perr_d;
  err_e                 perr_code_q, perr_code_d;
  logic [OffW-1:0]      perr_off_q, perr_off_d;

  // ---- tag table, completion checker, reorder buffer ----
  logic                     alloc_valid, cpl_active, cpl_zombie, commit, retire, cpl_err;
  logic [tlp_pkg::TagW-1:0] alloc_tag, cpl_tag;
  logic [OffW-1:0]          cpl_off, head_off, to_off, cpl_err_off, rob_pos;
  logic [12:0]              cpl_len, cpl_rem, head_len, head_rem, head_got, commit_len;
  logic                     timeout, rob_we;
  logic [127:0]             rob_wdata, rob_rdata;
  logic [15:0]              rob_mask;
  err_e                     cpl_err_code;
  logic                     ord_valid, ord_release, ord_clear;
  logic [SlotW-1:0]         ord_head;

  // ---- the head (rd), the descriptor being issued (iss) and the oldest one (done) ----
  logic [IdxW-1:0]  rd_idx, iss_idx, done_idx;
  logic             have_head, run, iss_has, iss_pending, iss_at_head, iss_block;
  logic [OffW-1:0]  h_len, h_base, i_len, i_base, iss_rem, iss_off, restart_off;
  logic [63:0]      iss_addr;
  logic [12:0]      sub_len_w;

  assign rd_idx    = rd_q[IdxW-1:0];
  assign iss_idx   = iss_q[IdxW-1:0];
  assign done_idx  = done_q[IdxW-1:0];
  assign have_head = rd_q != tail_q;
  assign run       = have_head && (state_q == RdRun);
  assign h_len     = tab_len_q[rd_idx];
  assign h_base    = {tab_base_q[rd_idx], 4'd0};
  assign i_len     = tab_len_q[iss_idx];
  assign i_base    = {tab_base_q[iss_idx], 4'd0};

  dma_tags #(
    .Tags(Tags)
  ) u_tags (
    .clk_i,
    .rst_ni,
    .timeout_i,
    .alloc_valid_o(alloc_valid),
    .alloc_tag_o  (alloc_tag),
    .alloc_i      (issue),
    .alloc_off_i  (iss_off),
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

  logic [LineW-1:0] rob_line;
  assign rob_line = tab_base_q[rd_idx] + LineW'(lines_q);

  dma_rob #(
    .RobBytes(RobBytes)
  ) u_rob (
    .clk_i,
    .we_i   (rob_we),
    .wpos_i (rob_pos[RobLineW+3:0]),
    .wdata_i(rob_wdata),
    .wmask_i(rob_mask),
    .re_i   (rob_re),
    .rline_i(rob_line[RobLineW-1:0]),
    .rdata_o(rob_rdata)
  );

  // Sub-requests in issue order; the head retires once its data is complete.
  // It has room for all Tags, so it is never full when a slot is allocated.
  logic                      unused_ord_ready;
  logic [$clog2(Tags+1)-1:0] unused_ord_count;
  logic [OffW-RobLineW-5:0]  unused_rob_pos;
  logic [LineW-RobLineW-1:0] unused_rob_line;
  assign unused_rob_pos  = rob_pos[OffW-1:RobLineW+4];
  assign unused_rob_line = rob_line[LineW-1:RobLineW];

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

  // ---- errors: whose are they? ----
  logic [OffW-1:0] rel_cpl, rel_to, rel_perr, rel_perr_iss;
  logic            cpl_head, to_head, perr_head, bme_head, cpl_later, to_later;

  assign rel_cpl      = cpl_err_off - h_base;
  assign rel_to       = to_off - h_base;
  assign rel_perr     = perr_off_q - h_base;
  assign rel_perr_iss = perr_off_q - i_base;
  // An error inside the head ends it; one past it is recorded for later. One
  // behind it (a tag whose bytes are all in, not yet retired) has nothing left
  // to fail, and one during the head's termination is its own, already
  // abandoned: both only abandon the tags like any other error.
  assign cpl_head  = cpl_err && run && (rel_cpl < h_len);
  assign to_head   = timeout && run && (rel_to < h_len);
  assign perr_head = perr_q && run && (rel_perr < h_len);
  assign bme_head  = run && iss_at_head && iss_pending && !bus_master_en_i;
  assign cpl_later = cpl_err && have_head && !behind(rel_cpl) && (rel_cpl >= h_len);
  assign to_later  = timeout && have_head && !behind(rel_to) && (rel_to >= h_len);

  assign head_err  = (perr_head || cpl_head || to_head || bme_head) && !clear_i;
  assign err_event = (perr_head || bme_head || cpl_err || timeout) && !clear_i;
  // After an error the issue restarts at the head's first line not yet read
  // out, or at the next descriptor when the head ends.
  assign restart_next = head_err || (state_q == RdTerm);
  assign restart_off  = !have_head   ? {next_base_q, 4'd0} :
                        restart_next ? h_base + OffW'({total_lines, 4'd0}) :
                                       h_base + OffW'({lines_q, 4'd0});

  always_comb begin
    perr_d      = perr_q;
    perr_code_d = perr_code_q;
    perr_off_d  = perr_off_q;
    if (perr_head) begin
      perr_d = 1'b0;
    end else if (!head_err && cpl_later) begin
      perr_d      = 1'b1;
      perr_code_d = cpl_err_code;
      perr_off_d  = cpl_err_off;
    end else if (!head_err && to_later) begin
      perr_d      = 1'b1;
      perr_code_d = ErrTimeout;
      perr_off_d  = to_off;
    end
    if (clear_i) perr_d = 1'b0;
  end

  // ---- issue ----
  assign iss_has     = iss_q != tail_q;
  assign iss_at_head = iss_q == rd_q;
  assign iss_rem     = iss_has ? i_len - iss_rel_q : '0;
  assign iss_pending = iss_rem != '0;
  assign iss_off     = iss_has ? i_base + iss_rel_q : {next_base_q, 4'd0};
  assign iss_addr    = tab_addr_q[iss_idx] + 64'(iss_rel_q);
  // The descriptor with a recorded error is not issued again.
  assign iss_block   = perr_q && (rel_perr_iss < i_len);
  assign sub_len_w   = sub_len(iss_addr[11:0], iss_rem, max_read_req_i);
  assign total_lines = LineCntW'((h_len + OffW'(15)) >> 4);

  // Lines up to the end of the sub-request, counted from the head's base, must
  // fit in the buffer next to what is still unread.
  // (The difference is taken in OffW bits first: it wraps with the offsets.)
  logic [OffW-1:0] iss_rel_h;
  logic [OffW:0]   iss_end_h;
  assign iss_rel_h = iss_off - h_base;
  assign iss_end_h = (OffW + 1)'(iss_rel_h) + (OffW + 1)'(sub_len_w);
  assign rob_room  = ((iss_end_h + (OffW + 1)'(15)) >> 4) <=
                     (OffW + 1)'(lines_q) + (OffW + 1)'(RobLines);

  assign rq_valid_o = iss_pending && !iss_block && bus_master_en_i && alloc_valid && rob_room &&
                      start_ok_i && !err_event;
  assign issue      = rq_valid_o && rq_ready_i;
  assign rq_o       = '{write: 1'b0,
                        tag:   alloc_tag,
                        addr:  iss_addr,
                        len:   sub_len_w,
                        data:  '0,
                        keep:  '0,
                        last:  1'b1};

  always_comb begin
    iss_d     = iss_q;
    iss_rel_d = issue ? iss_rel_q + OffW'(sub_len_w) : iss_rel_q;
    // On to the next descriptor with the last sub-request (at once for length 0).
    if (iss_has && (!iss_pending || (issue && (OffW'(sub_len_w) == iss_rem)))) begin
      iss_d     = iss_q + 1'b1;
      iss_rel_d = '0;
    end
    if (err_event) begin
      iss_d     = restart_next ? rd_q + 1'b1 : rd_q;
      iss_rel_d = restart_next ? '0 : OffW'({lines_q, 4'd0});
    end
    if (clear_i) begin
      iss_d     = '0;
      iss_rel_d = '0;
    end
  end

  // ---- delivery: line by line, behind the frontier ----
  logic [$clog2(OutDepth+1)-1:0] out_count;
  logic                          out_ready, out_valid;
  logic [15:0][7:0]              out_bytes;  // bytes past the end of the transfer read as 0
  logic [OffW-1:0]               rel_f;

  always_comb begin
    for (int b = 0; b < 16; b++) out_bytes[b] = pend_keep_q[b] ? rob_rdata[8*b +: 8] : 8'd0;
  end

  assign rel_f      = frontier_q - h_base;
  assign line_done  = !behind(rel_f) &&
                      (((OffW + 1)'(rel_f) >= (OffW + 1)'({lines_q + 1'b1, 4'd0})) ||
                       (rel_f >= h_len));
  assign rob_re     = run && (lines_q != total_lines) && line_done &&
                      (32'(out_count) + 32'(pend_q) < OutDepth) && !err_event && !clear_i;
  assign final_line = lines_q == total_lines - 1'b1;
  assign term_push  = have_head && (state_q == RdTerm) && !pend_q && out_ready;

  rd_data_t out_beat;
  assign out_beat = pend_q ? '{data: out_bytes, keep: pend_keep_q, last: pend_last_q}
                           : '{data: '0, keep: '0, last: 1'b1};

  stream_fifo #(
    .Width($bits(rd_data_t)),
    .Depth(OutDepth)
  ) u_out (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(pend_q || term_push),
    .ready_o(out_ready),
    .data_i (out_beat),
    .valid_o(out_valid),
    .ready_i(data_ready_i && !done_valid_o),
    .data_o (data_o),
    .count_o(out_count)
  );

  // A done offered holds back the next descriptor's beats.
  assign data_valid_o = out_valid && !done_valid_o;

  // ---- frontier: every issued byte below it is complete ----
  assign head_got = head_len - head_rem;
  always_comb begin
    if (err_event)      frontier_d = restart_off;
    else if (ord_valid) frontier_d = head_off + OffW'(head_got);
    else                frontier_d = iss_off;
    if (clear_i) frontier_d = '0;
  end

  // ---- head: read out, or terminate ----
  always_comb begin
    state_d = state_q;
    rd_d    = rd_q;
    lines_d = rob_re ? lines_q + 1'b1 : lines_q;
    if (run) begin
      if (head_err) begin
        state_d = RdTerm;
      end else if ((h_len == '0) || (rob_re && final_line)) begin
        rd_d    = rd_q + 1'b1;
        lines_d = '0;
      end
    end
    if (term_push) begin
      state_d = RdRun;
      rd_d    = rd_q + 1'b1;
      lines_d = '0;
    end
    if (clear_i) begin
      state_d = RdRun;
      rd_d    = '0;
      lines_d = '0;
    end
  end

  // ---- descriptors in, done out ----
  logic [PtrW-1:0] in_flight;
  logic            done_take;

  assign in_flight    = tail_q - done_q;
  assign req_ready_o  = start_ok_i && (in_flight != PtrW'(MaxXfers));
  assign accept       = req_valid_i && req_ready_o;
  assign done_valid_o = (done_q != rd_q) && ((tab_len_q[done_idx] == '0) || last_seen_q);
  assign done_take    = done_valid_o && done_ready_i;
  assign done_o.err      = tab_err_q[done_idx];
  assign done_o.err_addr = (tab_err_q[done_idx] == ErrNone) ? 64'd0 :
                           tab_addr_q[done_idx] + 64'(tab_eoff_q[done_idx]);

  always_comb begin
    last_seen_d = last_seen_q;
    if (done_take) last_seen_d = 1'b0;
    if (data_valid_o && data_ready_i && data_o.last) last_seen_d = 1'b1;
    if (clear_i) last_seen_d = 1'b0;
  end

  always_comb begin
    tail_d      = accept ? tail_q + 1'b1 : tail_q;
    done_d      = done_take ? done_q + 1'b1 : done_q;
    next_base_d = accept ? next_base_q + LineW'((OffW'(req_i.len) + OffW'(15)) >> 4)
                         : next_base_q;
    tab_err_d   = tab_err_q;
    tab_eoff_w  = iss_rel_q;
    if (accept) tab_err_d[tail_q[IdxW-1:0]] = ErrNone;
    if (head_err) begin
      if (perr_head) begin
        tab_err_d[rd_idx] = perr_code_q;
        tab_eoff_w        = rel_perr;
      end else if (cpl_head) begin
        tab_err_d[rd_idx] = cpl_err_code;
        tab_eoff_w        = rel_cpl;
      end else if (to_head) begin
        tab_err_d[rd_idx] = ErrTimeout;
        tab_eoff_w        = rel_to;
      end else begin
        tab_err_d[rd_idx] = ErrBusMasterOff;
      end
    end
    if (clear_i) begin
      tail_d      = '0;
      done_d      = '0;
      next_base_d = '0;
    end
  end

  `FF(state_q, state_d, RdRun)
  `FF(tail_q, tail_d, '0)
  `FF(iss_q, iss_d, '0)
  `FF(rd_q, rd_d, '0)
  `FF(done_q, done_d, '0)
  `FF(next_base_q, next_base_d, '0)
  `FF(iss_rel_q, iss_rel_d, '0)
  `FF(lines_q, lines_d, '0)
  `FF(frontier_q, frontier_d, '0)
  `FF(last_seen_q, last_seen_d, 1'b0)
  `FF(perr_q, perr_d, 1'b0)
  `FF(perr_code_q, perr_code_d, ErrNone)
  `FF(perr_off_q, perr_off_d, '0)
  `FF(tab_err_q, tab_err_d, '0)
  always_ff @(posedge clk_i) begin
    if (accept) begin
      tab_addr_q[tail_q[IdxW-1:0]] <= req_i.addr;
      tab_len_q[tail_q[IdxW-1:0]]  <= OffW'(req_i.len);
      tab_base_q[tail_q[IdxW-1:0]] <= next_base_q;
    end
  end
  // Read only while the descriptor's err is not ErrNone, so never stale.
  always_ff @(posedge clk_i) begin
    if (head_err) tab_eoff_q[rd_idx] <= tab_eoff_w;
  end
  `FF(pend_q, rob_re, 1'b0)
  `FFL(pend_last_q, final_line, rob_re, 1'b0)
  `FFL(pend_keep_q, final_line ? low_bytes({h_len[3:0] == '0, h_len[3:0]}) : 16'hffff,
       rob_re, '0)

  // ---- rules ----
  `ASSERT_IF(RdLenInRange, accept, req_i.len <= 32'(1 << 20))
  // A client may withdraw a descriptor only during a soft reset.
  `ASSERT_HELD(RdReqHeld, req_valid_i && !req_ready_o && start_ok_i, req_i, start_ok_i, req_valid_i)
  `ASSERT(RdOutRoom, pend_q -> out_ready)
  `ASSERT_IF(RdNoCross4K, rq_valid_o, (13'(iss_addr[11:0]) + sub_len_w) <= 13'd4096)
  `ASSERT_IF(RdSubLenMax, rq_valid_o, (sub_len_w != '0) && (sub_len_w <= max_read_req_i))
  // Nothing is received for a descriptor that is not in the table.
  `ASSERT(RdIdleNoCpl, !have_head -> !commit)
  // done <= rd <= iss <= tail, at most MaxXfers in flight.
  `ASSERT(RdPtrOrder, ((rd_q - done_q) <= in_flight) && ((iss_q - rd_q) <= (tail_q - rd_q)) &&
                      (in_flight <= PtrW'(MaxXfers)))
  // The issue window stays ahead of the head and within 2^20 + RobBytes + 4 KiB of its base.
  `ASSERT_IF(RdIssAhead, iss_has, have_head && !behind(iss_rel_h))
  `ASSERT_IF(RdIssWindow, rq_valid_o,
             have_head && (iss_end_h <= (OffW + 1)'((1 << 20) + RobBytes + 4096)))
  // The frontier is never behind the head's base (line_done checks it all the same).
  `ASSERT(RdFrontierAhead, run -> !behind(rel_f))
  // The descriptor with a recorded error is never passed by the head, and a
  // new later error can only come from a descriptor before it.
  `ASSERT_IF(RdPerrAhead, perr_q && have_head, !behind(rel_perr))
  `ASSERT_IF(RdPerrEarlier, perr_q && (cpl_later || to_later) && !head_err,
             (cpl_later ? rel_cpl : rel_to) < rel_perr)
  // A terminating head has no tags left, so its own errors cannot come back.
  `ASSERT_IF(RdTermNoOwnErr, have_head && (state_q == RdTerm) && cpl_err, rel_cpl >= h_len)
  `ASSERT(RdDataNotWithDone, data_valid_o -> !done_valid_o)

endmodule
