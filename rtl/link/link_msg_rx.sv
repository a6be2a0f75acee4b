// SPDX-License-Identifier: Apache-2.0
// Host -> device messages (docs/link.md) to the TPU's host-interface streams.
//
// Takes link_rx's committed messages a byte at a time (msg_len_i, the
// message's length, is valid with every byte) and emits:
//   0x01 MMIO write (11 bytes)  -> one cq beat, write = 1
//   0x02 MMIO read  (7 bytes)   -> one cq beat, write = 0, data 0
//       (addr = the 32-bit offset zero-extended, be = byte 6 bits 3:0)
//   0x03 read completion (7 + n bytes) -> rc beats: tag, status, poisoned,
//       byte_count, len = n, data packed 16 bytes a beat from byte 0, keep,
//       last on the final beat; n = 0: one beat, keep 0, last
//   0x04 counters request (1 byte) -> one cnt_req handshake (link_msg_tx)
// A message is checked before any of it leaves: type and length at its first
// byte, and for 0x03 at byte 6 that n = length - 7, that byte_count fits
// 13 bits and that a completion other than SC has no data (rc rule). A
// message failing a check is dropped whole and pulses bad_msg_o once.
// Byte-serial: the input stalls while a beat or request waits on its output
// (the line brings a byte at most every 40 cycles). All outputs are flops.
`include "tpu_macros.svh"

module link_msg_rx
  import link_pkg::*;
(
  input  logic          clk_i,
  input  logic          rst_ni,
  // ---- committed messages from link_rx ----
  input  logic          msg_valid_i,
  output logic          msg_ready_o,
  input  logic [7:0]    msg_data_i,
  input  logic          msg_last_i,
  input  logic [8:0]    msg_len_i,
  // ---- TPU streams ----
  output logic          cq_valid_o,
  input  logic          cq_ready_i,
  output tlp_pkg::cq_t  cq_o,
  output logic          rc_valid_o,
  input  logic          rc_ready_i,
  output tlp_pkg::rc_t  rc_o,
  // ---- to link_msg_tx ----
  output logic          cnt_req_valid_o,
  input  logic          cnt_req_ready_i,
  // ---- counter event ----
  output logic          bad_msg_o
);

  localparam int unsigned HdrBytes = 11;  // the longest fixed part: an MMIO write

  logic [8:0]  idx_q;                     // byte index in the message
  logic        drop_q, cq_valid_q, rc_valid_q, rc_last_q, cnt_valid_q, bad_q;
  logic [7:0]  type_q;
  logic [7:0]  hdr_q [HdrBytes];          // bytes 1 .. 10 (0: type_q)
  logic [15:0][7:0] beat_q;
  logic [15:0] keep_q;
  logic        take, type_ok, first, cpl_hdr;
  logic [7:0]  typ;
  logic [15:0] n_now;
  logic [3:0]  fill;

  assign msg_ready_o = !(cq_valid_q || rc_valid_q || cnt_valid_q);
  assign take        = msg_valid_i && msg_ready_o;
  assign first       = idx_q == '0;
  assign typ         = first ? msg_data_i : type_q;
  assign n_now       = {msg_data_i, hdr_q[5]};  // at byte 6: n
  assign cpl_hdr     = typ == MsgReadCpl && idx_q == 9'd6;
  assign fill        = 4'(idx_q - 9'd7);

  // The first byte's type and the message's length agree.
  always_comb begin
    unique case (msg_data_i)
      MsgMmioWrite: type_ok = msg_len_i == 9'd11;
      MsgMmioRead:  type_ok = msg_len_i == 9'd7;
      MsgReadCpl:   type_ok = msg_len_i >= 9'd7;
      MsgCntReq:    type_ok = msg_len_i == 9'd1;
      default:      type_ok = 1'b0;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      idx_q       <= '0;
      drop_q      <= 1'b0;
      type_q      <= '0;
      cq_valid_q  <= 1'b0;
      rc_valid_q  <= 1'b0;
      rc_last_q   <= 1'b0;
      cnt_valid_q <= 1'b0;
      bad_q       <= 1'b0;
      keep_q      <= '0;
    end else begin
      bad_q <= 1'b0;
      if (cq_valid_q && cq_ready_i) cq_valid_q <= 1'b0;
      if (cnt_valid_q && cnt_req_ready_i) cnt_valid_q <= 1'b0;
      if (rc_valid_q && rc_ready_i) begin
        rc_valid_q <= 1'b0;
        keep_q     <= '0;
      end
      if (take) begin
        idx_q <= msg_last_i ? '0 : idx_q + 9'd1;
        if (msg_last_i) drop_q <= 1'b0;
        if (first) begin
          type_q <= msg_data_i;
          if (!type_ok) begin
            bad_q  <= 1'b1;
            drop_q <= !msg_last_i;
          end else if (msg_data_i == MsgCntReq) begin
            cnt_valid_q <= 1'b1;
          end
        end else if (!drop_q) begin
          if ((typ == MsgMmioWrite || typ == MsgMmioRead) && msg_last_i) cq_valid_q <= 1'b1;
          if (cpl_hdr) begin
            // n must match the length, byte_count must fit, non-SC has no data
            if (n_now != 16'(msg_len_i) - 16'd7 || hdr_q[4][7:5] != '0
                || (hdr_q[2][1:0] != 2'd0 && n_now != '0)) begin
              bad_q  <= 1'b1;
              drop_q <= !msg_last_i;
            end else if (n_now == '0) begin
              rc_valid_q <= 1'b1;  // one beat, keep 0
              rc_last_q  <= 1'b1;
            end
          end
          if (typ == MsgReadCpl && idx_q >= 9'd7) begin
            keep_q[fill] <= 1'b1;
            if (fill == 4'd15 || msg_last_i) begin
              rc_valid_q <= 1'b1;
              rc_last_q  <= msg_last_i;
            end
          end
        end
      end
    end
  end

  // Header bytes and the beat's data need no reset.
  always_ff @(posedge clk_i) begin
    if (take && !first && idx_q < 9'(HdrBytes)) hdr_q[idx_q[3:0]] <= msg_data_i;
    if (take && !first && !drop_q && typ == MsgReadCpl && idx_q >= 9'd7) beat_q[fill] <= msg_data_i;
    else if (rc_valid_q && rc_ready_i) beat_q <= '0;  // bytes past keep read 0
  end

  assign cq_valid_o = cq_valid_q;
  always_comb begin
    cq_o       = '0;
    cq_o.write = type_q == MsgMmioWrite;
    cq_o.tag   = hdr_q[1];
    cq_o.addr  = {32'd0, hdr_q[5], hdr_q[4], hdr_q[3], hdr_q[2]};
    cq_o.be    = hdr_q[6][3:0];
    cq_o.data  = (type_q == MsgMmioWrite) ? {hdr_q[10], hdr_q[9], hdr_q[8], hdr_q[7]} : 32'd0;
  end

  assign rc_valid_o = rc_valid_q;
  always_comb begin
    rc_o            = '0;
    rc_o.tag        = hdr_q[1];
    rc_o.status     = tlp_pkg::cpl_status_e'(hdr_q[2][1:0]);
    rc_o.poisoned   = hdr_q[2][2];
    rc_o.byte_count = {hdr_q[4][4:0], hdr_q[3]};
    rc_o.len        = {hdr_q[6][4:0], hdr_q[5]};
    rc_o.data       = beat_q;
    rc_o.keep       = keep_q;
    rc_o.last       = rc_last_q;
  end

  assign cnt_req_valid_o = cnt_valid_q;
  assign bad_msg_o       = bad_q;

  `ASSERT(MsgRxOneOutput, 32'(cq_valid_q) + 32'(rc_valid_q) + 32'(cnt_valid_q) <= 1)

endmodule
