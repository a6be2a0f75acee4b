// SPDX-License-Identifier: Apache-2.0
// Send side of the serial link: go-back-N over Window = 4 retransmission
// slots, frame building, CRC and byte stuffing (docs/link.md).
//
// Slots: one ram_1r1w of 8 bits x 2048, four slots of 512 bytes, used as a
// ring. base_q is the slot of the oldest unacknowledged message, base_seq_q
// its seq; the n_q slots from base_q hold committed messages with seqs
// base_seq_q + 0 .. n_q - 1. The message builder writes the next message into
// slot base_q + n_q (in_ready_o only while n_q < 4, so back-pressure reaches
// the TPU streams); its last byte commits it (n_q + 1). Slot index (2 bits)
// and seq (8 bits) are separate counters.
//
// Sending (one frame at a time, each opened and closed by a flag): offsets
// [0, next_q) of the committed messages have gone out in this round, [0,
// sent_q) at least once. Between frames, in this order: SYNC_ACK when a SYNC
// came, DATA for offset next_q, an ACK-only frame when one is pending. The
// header is built at the frame's start: kind, seq, ack = expected_i (link_rx),
// time = the free-running cycle counter, len; the payload is read from the
// slot RAM; the CRC is run over the body while it goes out; 0x7E / 0x7D are
// escaped. Any frame carries the current ack, so starting one clears a
// pending ACK (need_ack_i / ping_i set it again).
//
// Acks are cumulative: ack value a frees k = a - base_seq_q slots when
// 1 <= k <= sent_q (frames we did send), else it is ignored. With frames
// sent and no ack progress for RetxCycles cycles, next_q returns to 0: all
// unacknowledged frames go again, oldest first (retx_o per frame sent again).
// sync_i drops every committed message (a message being written completes and
// becomes the new session's seq 0), restarts seq at 0 and sends SYNC_ACK
// (seq 0, ack 0: link_rx restarts its expected seq with the same pulse);
// link_up_o rises when that SYNC_ACK has gone out. A frame already on the line
// finishes; its slot is not written again until it has (the host ignores
// frames from before SYNC_ACK and duplicates of acknowledged ones).
`include "tpu_macros.svh"

module link_tx
  import link_pkg::*;
#(
  parameter int unsigned RetxCycles = 1 << 18,  // retransmission timeout, clock cycles
  localparam int unsigned TimerW = $clog2(RetxCycles)
) (
  input  logic       clk_i,
  input  logic       rst_ni,
  // ---- messages from link_msg_tx ----
  input  logic       in_valid_i,
  output logic       in_ready_o,
  input  logic [7:0] in_data_i,
  input  logic       in_last_i,    // the message's final byte
  // ---- from link_rx ----
  input  logic       ack_valid_i,
  input  logic [7:0] ack_i,
  input  logic       need_ack_i,
  input  logic       ping_i,
  input  logic       sync_i,
  input  logic [7:0] expected_i,
  // ---- bytes to uart_tx ----
  output logic       out_valid_o,
  input  logic       out_ready_i,
  output logic [7:0] out_data_o,
  // ---- status ----
  output logic       link_up_o,
  output logic       retx_o        // a DATA frame went out again
);

  localparam int unsigned Slots     = Window;
  localparam int unsigned SlotBytes = 512;
  localparam int unsigned SlotW     = $clog2(Slots);
  localparam int unsigned OffW      = $clog2(SlotBytes);
  localparam int unsigned CntW      = $clog2(Slots + 1);

  if (RetxCycles < 2) begin : gen_bad_retx
    $error("link_tx: RetxCycles must be at least 2");
  end

  typedef enum logic [1:0] {Idle, Body} state_e;

  // ---- window ----
  logic [SlotW-1:0] base_q, base_d, wr_slot;
  logic [7:0]       base_seq_q, base_seq_d, k;
  logic [CntW-1:0]  n_q, n_d, next_q, next_d, sent_q, sent_d;
  logic [OffW-1:0]  wr_off_q;
  logic [8:0]       slot_len_q [Slots];
  logic [TimerW-1:0] timer_q, timer_d;
  logic             ack_ok, timeout, commit, wr, events;
  logic             sync_pend_q, ack_pend_q, link_up_q;
  logic [31:0]      time_q;

  // ---- sender ----
  state_e           state_q;
  logic [71:0]      hdr_q;        // body bytes 0..8, byte 0 in [7:0]
  logic [8:0]       idx_q, len_q; // body byte index; payload bytes
  logic [SlotW-1:0] tx_slot_q;
  logic             tx_data_q, tx_sync_q, ram_ok_q, esc_pend_q, out_valid_q;
  logic [7:0]       esc_byte_q, out_q;
  logic [15:0]      crc_q;
  logic             start, start_sync, start_data, start_ack, step, payload, ram_re;
  logic [7:0]       ram_rdata, b, new_kind, new_seq, new_ack;
  logic [8:0]       new_len;

  // ---- writing the next message ----
  assign wr_slot    = base_q + SlotW'(n_q);
  // The slot of a DATA frame on the line is not overwritten under it.
  assign in_ready_o = (n_q < CntW'(Slots)) && !(tx_data_q && tx_slot_q == wr_slot);
  assign wr         = in_valid_i && in_ready_o;
  assign commit     = wr && in_last_i;

  `FF(wr_off_q, commit ? '0 : wr ? wr_off_q + 1'b1 : wr_off_q, '0)
  for (genvar s = 0; s < Slots; s++) begin : gen_len
    `FFL(slot_len_q[s], 9'(wr_off_q) + 9'd1, commit && wr_slot == SlotW'(s), '0)
  end

  ram_1r1w #(
    .Width(8),
    .Depth(Slots * SlotBytes)
  ) u_ram (
    .clk_i,
    .wr_en_i  (wr),
    .wr_addr_i({wr_slot, wr_off_q}),
    .wr_data_i(in_data_i),
    .rd_en_i  (ram_re),
    .rd_addr_i({tx_slot_q, OffW'(idx_q - 9'(HeaderBytes))}),
    .rd_data_o(ram_rdata)
  );

  // ---- acks, timeout, window bookkeeping ----
  assign k       = ack_i - base_seq_q;
  assign ack_ok  = ack_valid_i && k != '0 && k <= 8'(sent_q);
  assign timeout = sent_q != '0 && timer_q == TimerW'(RetxCycles - 1) && !ack_ok && !sync_i;
  // A frame starts only in a cycle without window events, so each cycle
  // changes the window for one reason (plus a commit, which only adds).
  assign events  = ack_valid_i || sync_i || timeout;

  always_comb begin
    base_d     = base_q;
    base_seq_d = base_seq_q;
    n_d        = n_q;
    next_d     = next_q;
    sent_d     = sent_q;
    if (ack_ok) begin
      base_d     = base_q + SlotW'(k);
      base_seq_d = ack_i;
      n_d        = n_q - CntW'(k);
      sent_d     = sent_q - CntW'(k);
      next_d     = (8'(next_q) > k) ? next_q - CntW'(k) : '0;
    end
    if (timeout) next_d = '0;
    if (start_data) begin
      next_d = next_q + 1'b1;
      if (next_q >= sent_q) sent_d = next_q + 1'b1;
    end
    if (commit) n_d = n_d + 1'b1;
    if (sync_i) begin
      base_d     = wr_slot;  // the message being written (if any) becomes seq 0
      base_seq_d = '0;
      n_d        = CntW'(commit);
      next_d     = '0;
      sent_d     = '0;
    end
    timer_d = timer_q + 1'b1;
    if (sent_q == '0 || ack_ok || timeout || sync_i) timer_d = '0;
  end

  `FF(base_q, base_d, '0)
  `FF(base_seq_q, base_seq_d, '0)
  `FF(n_q, n_d, '0)
  `FF(next_q, next_d, '0)
  `FF(sent_q, sent_d, '0)
  `FF(timer_q, timer_d, '0)
  `FF(retx_o, start_data && next_q < sent_q, 1'b0)
  `FF(time_q, time_q + 32'd1, '0)

  // ---- what to send next ----
  assign start      = state_q == Idle && !out_valid_q && !events;
  assign start_sync = start && sync_pend_q;
  assign start_data = start && !sync_pend_q && next_q < n_q;
  assign start_ack  = start && !sync_pend_q && !(next_q < n_q) && ack_pend_q;

  `FF(sync_pend_q, sync_i || (sync_pend_q && !start_sync), 1'b0)
  `FF(ack_pend_q, need_ack_i || ping_i || (ack_pend_q && !(start_sync || start_data || start_ack)), 1'b0)

  // ---- the frame on the line ----
  assign payload = idx_q >= 9'(HeaderBytes) && idx_q < len_q + 9'(HeaderBytes);
  assign step    = state_q == Body && !out_valid_q;
  assign ram_re  = step && !esc_pend_q && payload && !ram_ok_q;

  // A new frame's header: kind, seq, ack, time (4), len (2), little endian.
  assign new_kind = start_sync ? 8'(KindSyncAck) : start_data ? 8'(KindData) : 8'(KindAck);
  assign new_seq  = start_data ? base_seq_q + 8'(next_q) : 8'd0;
  assign new_ack  = start_sync ? 8'd0 : expected_i;
  assign new_len  = start_data ? slot_len_q[base_q + SlotW'(next_q)] : 9'd0;

  // The body byte at idx_q: header, payload (RAM), CRC high, CRC low.
  always_comb begin
    if (idx_q < 9'(HeaderBytes))               b = hdr_q[7:0];
    else if (payload)                          b = ram_rdata;
    else if (idx_q == len_q + 9'(HeaderBytes)) b = crc_q[15:8];
    else                                       b = crc_q[7:0];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= Idle;
      hdr_q       <= '0;
      idx_q       <= '0;
      len_q       <= '0;
      tx_slot_q   <= '0;
      tx_data_q   <= 1'b0;
      tx_sync_q   <= 1'b0;
      ram_ok_q    <= 1'b0;
      esc_pend_q  <= 1'b0;
      esc_byte_q  <= '0;
      out_valid_q <= 1'b0;
      out_q       <= '0;
      crc_q       <= '1;
      link_up_q   <= 1'b0;
    end else begin
      if (out_valid_q && out_ready_i) out_valid_q <= 1'b0;
      if (start_sync || start_data || start_ack) begin
        hdr_q       <= {7'd0, new_len, time_q, new_ack, new_seq, new_kind};
        len_q       <= new_len;
        idx_q       <= '0;
        tx_slot_q   <= base_q + SlotW'(next_q);
        tx_data_q   <= start_data;
        tx_sync_q   <= start_sync;
        crc_q       <= '1;
        out_q       <= Flag;
        out_valid_q <= 1'b1;
        state_q     <= Body;
      end
      if (ram_re) ram_ok_q <= 1'b1;
      if (step) begin
        if (esc_pend_q) begin
          out_q       <= esc_byte_q;
          out_valid_q <= 1'b1;
          esc_pend_q  <= 1'b0;
        end else if (idx_q == len_q + 9'(HeaderBytes + CrcBytes)) begin
          out_q       <= Flag;  // closing flag
          out_valid_q <= 1'b1;
          state_q     <= Idle;
          tx_data_q   <= 1'b0;
          if (tx_sync_q) link_up_q <= 1'b1;
        end else if (!payload || ram_ok_q) begin
          if (idx_q < len_q + 9'(HeaderBytes)) crc_q <= crc16_byte(crc_q, b);
          if (idx_q < 9'(HeaderBytes)) hdr_q <= hdr_q >> 8;
          ram_ok_q    <= 1'b0;
          idx_q       <= idx_q + 9'd1;
          out_valid_q <= 1'b1;
          if (b == Flag || b == Escape) begin
            out_q      <= Escape;
            esc_pend_q <= 1'b1;
            esc_byte_q <= b ^ EscapeXor;
          end else begin
            out_q <= b;
          end
        end
      end
    end
  end

  assign out_valid_o = out_valid_q;
  assign out_data_o  = out_q;
  assign link_up_o   = link_up_q;

  `ASSERT(TxWindow, n_q <= CntW'(Slots) && next_q <= n_q && sent_q <= n_q)
  `ASSERT(TxSlotSize, wr -> wr_off_q <= OffW'(MaxPayload - 1))
  `ASSERT(TxStartIdle, (start_sync || start_data || start_ack) -> !step)

endmodule
