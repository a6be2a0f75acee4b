// SPDX-License-Identifier: Apache-2.0
// Receive side of the serial link: frames from the line's bytes, checked, and
// the DATA frames' messages kept in order, exactly once (docs/link.md).
//
// Bytes come from uart_rx (a valid pulse at most every 40 cycles, no ready).
// Every flag ends the frame before it and starts a new one. The body is
// unstuffed, its header fields kept in flops, its CRC run on the fly (over the
// CRC bytes too: a good frame leaves 0). At the closing flag the frame is
// checked as the host's decoder does (tpu/link.h): aborted (escape + flag) or
// hit by a framing error, shorter than header + CRC, len above MaxPayload,
// body not 11 + len bytes, reserved kind bits -> bad_frame_o; CRC mismatch ->
// crc_err_o; a lone pair of flags is ignored.
//
// Receive buffer: one ram_1r1w of 9 bits x 2048, a ring of messages, each a
// length entry (9 bits) followed by its bytes. A DATA frame's payload is
// written speculatively behind a reserved length entry at base_q; at the
// closing flag it is committed (length written, base_q moved past it) when the
// frame is good, its seq is the expected one and the buffer had room for a
// whole largest frame (1 + MaxPayload entries) when the frame started;
// otherwise the write pointer rolls back. Committed messages leave as a byte
// stream with msg_last_o on the final byte and msg_len_o (the message's
// length) on every byte, so the parser can reject a message whole before it
// emits anything. A good in-order DATA frame with an empty payload is
// acknowledged but carries no message (empty_msg_o; counted as a bad message).
//
// To link_tx: the ack field of every good frame but SYNC, need_ack_o when a
// DATA frame is taken or dropped as duplicate / out of order / no room (the
// device acknowledges again), ping_o, sync_o (expected_o returns to 0 with
// it), and expected_o, the ack field for outgoing frames. All event outputs
// are one-cycle pulses from flops, aligned with the expected_o they imply.
`include "tpu_macros.svh"

module link_rx
  import link_pkg::*;
(
  input  logic       clk_i,
  input  logic       rst_ni,
  // ---- bytes from uart_rx ----
  input  logic       byte_valid_i,
  input  logic [7:0] byte_i,
  input  logic       byte_err_i,    // a byte was lost to a framing error
  // ---- committed messages ----
  output logic       msg_valid_o,
  input  logic       msg_ready_i,
  output logic [7:0] msg_data_o,
  output logic       msg_last_o,    // final byte of the message
  output logic [8:0] msg_len_o,     // bytes of the current message, 1 .. MaxPayload
  // ---- to link_tx ----
  output logic       ack_valid_o,   // a good frame's ack field
  output logic [7:0] ack_o,
  output logic       need_ack_o,
  output logic       ping_o,
  output logic       sync_o,
  output logic [7:0] expected_o,    // seq of the next DATA frame we take
  // ---- counter events (pulses) ----
  output logic       crc_err_o,
  output logic       bad_frame_o,
  output logic       dup_o,
  output logic       no_room_o,
  output logic       empty_msg_o
);

  localparam int unsigned Depth   = 2048;
  localparam int unsigned AddrW   = $clog2(Depth);
  localparam int unsigned PtrW    = AddrW + 1;           // one wrap bit
  localparam int unsigned MaxUsed = Depth - 1 - MaxPayload;  // room for a length entry + MaxPayload

  // ---- frame parse ----
  logic        in_frame_q, esc_q, bad_q, room_q;
  logic [8:0]  cnt_q;                  // body bytes, saturating
  logic [7:0]  kind_q, seq_q, ack_q, expected_q;
  logic [15:0] len_q, crc_q;
  logic        is_flag, is_esc, body, frame_end, hdr_ok, good, is_data, in_seq, take;
  logic [7:0]  b;                      // the body byte, unstuffed
  logic [7:0]  seq_diff;
  logic [16:0] body_len;               // 11 + len

  // ---- buffer ----
  logic [PtrW-1:0] base_q, base_d, wr_q, wr_d, rd_q;
  logic [PtrW-1:0] used;
  logic            ram_we, ram_re;
  logic [AddrW-1:0] ram_waddr;
  logic [8:0]      ram_wdata, ram_rdata;
  logic            pay_we;

  // ---- reader ----
  logic       pend_q, pend_len_q, out_valid_q, out_last_q;
  logic [8:0] rem_q, cur_len_q;

  assign is_flag   = byte_valid_i && byte_i == Flag;
  assign is_esc    = byte_valid_i && byte_i == Escape && !esc_q;
  assign body      = byte_valid_i && in_frame_q && !is_flag && !is_esc;
  assign b         = esc_q ? byte_i ^ EscapeXor : byte_i;
  // Something between two flags: a frame to check.
  assign frame_end = is_flag && in_frame_q && (cnt_q != '0 || esc_q || bad_q);
  assign body_len  = 17'(len_q) + 17'(HeaderBytes + CrcBytes);
  assign hdr_ok    = !esc_q && !bad_q && cnt_q >= 9'(HeaderBytes + CrcBytes) && len_q <= 16'(MaxPayload)
                  && 17'(cnt_q) == body_len && kind_q[7:3] == '0;
  assign good      = frame_end && hdr_ok && crc_q == '0;
  assign is_data   = kind_q[1:0] == KindData;
  assign seq_diff  = seq_q - expected_q;
  assign in_seq    = seq_diff == '0;
  assign take      = good && is_data && in_seq && room_q;

  // The payload goes to the buffer while it is inside len (known from byte 8
  // on) and the frame started with room; a bad frame is rolled back.
  assign pay_we = body && room_q && cnt_q >= 9'(HeaderBytes) && len_q <= 16'(MaxPayload)
               && 17'(cnt_q) < 17'(len_q) + 17'(HeaderBytes);

  always_comb begin
    base_d = base_q;
    wr_d   = pay_we ? wr_q + 1'b1 : wr_q;
    if (is_flag) begin
      if (take && len_q != '0) base_d = wr_q;  // commit
      wr_d = base_d + 1'b1;                    // the next frame's bytes follow its length entry
    end
  end

  assign ram_we    = pay_we || (take && len_q != '0);
  assign ram_waddr = pay_we ? wr_q[AddrW-1:0] : base_q[AddrW-1:0];
  assign ram_wdata = pay_we ? {1'b0, b} : len_q[8:0];
  assign used      = base_q - rd_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      in_frame_q <= 1'b0;
      esc_q      <= 1'b0;
      bad_q      <= 1'b0;
      room_q     <= 1'b0;
      cnt_q      <= '0;
      kind_q     <= '0;
      seq_q      <= '0;
      ack_q      <= '0;
      len_q      <= '0;
      crc_q      <= '1;
    end else begin
      if (is_flag) begin
        in_frame_q <= 1'b1;
        esc_q      <= 1'b0;
        bad_q      <= 1'b0;
        cnt_q      <= '0;
        crc_q      <= '1;
      end else if (is_esc) begin
        esc_q <= in_frame_q;
      end else if (body) begin
        esc_q <= 1'b0;
        crc_q <= crc16_byte(crc_q, b);
        if (cnt_q != '1) cnt_q <= cnt_q + 9'd1;
        unique case (cnt_q)
          9'd0: begin
            kind_q <= b;
            room_q <= used <= PtrW'(MaxUsed);  // room checked once, as the frame starts
          end
          9'd1:    seq_q <= b;
          9'd2:    ack_q <= b;
          9'd7:    len_q[7:0] <= b;
          9'd8:    len_q[15:8] <= b;
          default: ;
        endcase
      end
      // A byte lost to a framing error spoils the frame it was in.
      if (byte_err_i && in_frame_q) bad_q <= 1'b1;
    end
  end

  `FF(base_q, base_d, '0)
  `FF(wr_q, wr_d, PtrW'(1))
  `FF(expected_q, good && kind_q[1:0] == KindSync ? 8'd0 : take ? expected_q + 8'd1 : expected_q, '0)

  // ---- events, one cycle after the closing flag (with expected_q) ----
  `FF(ack_valid_o, good && kind_q[1:0] != KindSync, 1'b0)
  `FFL(ack_o, ack_q, good, '0)
  `FF(need_ack_o, good && is_data, 1'b0)
  `FF(ping_o, good && kind_q[PingBit] && kind_q[1:0] != KindSync, 1'b0)
  `FF(sync_o, good && kind_q[1:0] == KindSync, 1'b0)
  `FF(crc_err_o, frame_end && hdr_ok && crc_q != '0, 1'b0)
  `FF(bad_frame_o, frame_end && !hdr_ok, 1'b0)
  `FF(dup_o, good && is_data && seq_diff[7], 1'b0)  // up to 128 behind: an old number
  `FF(no_room_o, good && is_data && in_seq && !room_q, 1'b0)
  `FF(empty_msg_o, take && len_q == '0, 1'b0)
  assign expected_o = expected_q;

  ram_1r1w #(
    .Width(9),
    .Depth(Depth)
  ) u_ram (
    .clk_i,
    .wr_en_i  (ram_we),
    .wr_addr_i(ram_waddr),
    .wr_data_i(ram_wdata),
    .rd_en_i  (ram_re),
    .rd_addr_i(rd_q[AddrW-1:0]),
    .rd_data_o(ram_rdata)
  );

  // ---- reader: committed entries -> message bytes ----
  // One entry in flight at a time; rem_q == 0 means the next entry is a
  // message's length. The RAM's output register holds the byte on offer.
  assign ram_re = !pend_q && !out_valid_q && rd_q != base_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q        <= '0;
      pend_q      <= 1'b0;
      pend_len_q  <= 1'b0;
      out_valid_q <= 1'b0;
      out_last_q  <= 1'b0;
      rem_q       <= '0;
      cur_len_q   <= '0;
    end else begin
      pend_q <= ram_re;
      if (ram_re) begin
        rd_q       <= rd_q + 1'b1;
        pend_len_q <= rem_q == '0;
        if (rem_q != '0) begin
          rem_q      <= rem_q - 9'd1;
          out_last_q <= rem_q == 9'd1;
        end
      end
      if (pend_q && pend_len_q) begin
        rem_q     <= ram_rdata;
        cur_len_q <= ram_rdata;
      end
      if (pend_q && !pend_len_q) out_valid_q <= 1'b1;
      else if (msg_ready_i)      out_valid_q <= 1'b0;
    end
  end

  assign msg_valid_o = out_valid_q;
  assign msg_data_o  = ram_rdata[7:0];
  assign msg_last_o  = out_last_q;
  assign msg_len_o   = cur_len_q;

  `ASSERT(RxNoOverrun, pay_we -> (wr_q - rd_q) < PtrW'(Depth))
  `ASSERT(RxUsedMax, used <= PtrW'(Depth))
  `ASSERT_IF(RxLenEntry, pend_q && pend_len_q, ram_rdata != '0 && ram_rdata <= 9'(MaxPayload))

endmodule
