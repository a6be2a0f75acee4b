// SPDX-License-Identifier: Apache-2.0
// DMA write packer: cuts a write transfer's byte stream into posted-write
// packets and repacks the bytes so that each packet's payload starts at byte
// 0 of its first beat.
//
// start_i loads a transfer (len >= 1). Client beats (16 bytes, the last one
// len mod 16) enter a 32-byte shift buffer; packet beats (16 bytes, a
// packet's last one shorter) leave it from byte 0. Packets end at multiples of
// max_payload_i (a power of two dividing 4096), so none crosses 4 KiB or
// exceeds it. With each packet's last beat the packer offers the packet's
// address, length, and whether it is the transfer's final packet.
// Throughput: one beat in and one beat out per cycle (a short packet beat
// stalls the input for at most one cycle; a one-beat packet is followed by
// one idle output cycle).
//
// Timing: the next packet's length (sub_len of its address and the bytes not
// yet in a packet) is computed a cycle ahead into plen_q, from registers that
// change only when a packet starts, so the 4 KiB / max-payload arithmetic is
// not on the path from the buffer count to the buffer shift.
// in_ready_o depends only on flops and beat_ready_i; beat_valid_o only on flops.
`include "tpu_macros.svh"

module dma_wr_pack #(
  localparam int unsigned OffW = dma_pkg::OffW
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             clear_i,
  // ---- transfer ----
  input  logic             start_i,
  input  logic [63:0]      addr_i,
  input  logic [OffW-1:0]  len_i,
  input  logic [12:0]      max_payload_i,  // power of two, 128 .. 4096
  output logic             busy_o,         // bytes of the transfer not yet packed
  // ---- client bytes ----
  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [15:0][7:0] in_data_i,
  output logic             in_last_o,      // the beat taken now is the transfer's last
  output logic [15:0]      in_keep_o,      // its bytes
  // ---- packet beats ----
  output logic             beat_valid_o,
  input  logic             beat_ready_i,
  output logic [15:0][7:0] beat_data_o,
  output logic [15:0]      beat_keep_o,
  output logic             beat_last_o,    // last beat of a packet
  output logic [63:0]      pkt_addr_o,     // with the last beat: the packet
  output logic [12:0]      pkt_len_o,
  output logic             pkt_final_o     // ... and it ends the transfer
);

  import dma_pkg::*;

  // Bytes [lo, lo + n) of the buffer.
  function automatic logic [255:0] byte_window(logic [5:0] lo, logic [4:0] n);
    return ~({256{1'b1}} << {n, 3'b000}) << {lo, 3'b000};
  endfunction

  logic [OffW-1:0]  in_rem_q, in_rem_d, out_rem_q, out_rem_d, rest_q, rest_d;
  logic [12:0]      pkt_rem_q, pkt_rem_d, pkt_len_q, plen_q, cur_rem;
  logic [63:0]      pkt_addr_q, next_addr_q, next_addr_d;
  logic [31:0][7:0] buf_q;
  logic [5:0]       cnt_q, cnt_d, base;
  logic [4:0]       in_n, out_n, pop_n;
  logic             new_pkt, push, pop, pkt_start, plen_ok_q;

  // ---- next packet's length, a cycle ahead ----
  // rest_q: bytes of the transfer not yet in a started packet. plen_q is
  // sub_len of last cycle's next_addr_q and rest_q; plen_ok_q says those did
  // not change since.
  `FF(plen_q, sub_len(next_addr_q[11:0], rest_q, max_payload_i), '0)
  `FF(plen_ok_q, !(start_i || pkt_start), 1'b0)

  // ---- packet beat from the front of the buffer ----
  assign new_pkt      = pkt_rem_q == '0;
  assign cur_rem      = new_pkt ? plen_q : pkt_rem_q;
  assign out_n        = (cur_rem >= 13'd16) ? 5'd16 : cur_rem[4:0];
  assign beat_valid_o = (out_rem_q != '0) && (!new_pkt || plen_ok_q) && (cnt_q >= 6'(out_n));
  assign beat_keep_o  = low_bytes(out_n);
  assign beat_last_o  = cur_rem <= 13'd16;
  assign pkt_addr_o   = new_pkt ? next_addr_q : pkt_addr_q;
  assign pkt_len_o    = new_pkt ? plen_q : pkt_len_q;
  assign pkt_final_o  = out_rem_q == OffW'(out_n);
  assign pop          = beat_valid_o && beat_ready_i && !clear_i;
  assign pop_n        = pop ? out_n : 5'd0;
  assign pkt_start    = pop && new_pkt;

  always_comb begin
    for (int b = 0; b < 16; b++) beat_data_o[b] = beat_keep_o[b] ? buf_q[b] : 8'd0;
  end

  // ---- client beat to the back of the buffer ----
  assign in_n       = (in_rem_q >= OffW'(16)) ? 5'd16 : in_rem_q[4:0];
  assign base       = cnt_q - 6'(pop_n);
  assign in_ready_o = (in_rem_q != '0) && (base <= 6'd16) && !start_i && !clear_i;
  assign push       = in_valid_i && in_ready_o;
  assign in_last_o  = in_rem_q <= OffW'(16);
  assign in_keep_o  = low_bytes(in_n);
  assign busy_o     = out_rem_q != '0;

  // Popped bytes leave from byte 0 (zeros shift in at the top); the client
  // beat's in_n bytes land at byte base. Whole-vector shifts, and nothing in
  // the cycles nothing moves: the same byte muxes in hardware, and a
  // simulator's model does not visit 32 bytes in every cycle (buf_next is
  // evaluated only when the buffer loads, below).
  function automatic logic [255:0] buf_next(logic [255:0] b, logic [4:0] popped, logic pushed,
                                            logic [5:0] at, logic [4:0] n, logic [127:0] data);
    logic [255:0] next, window;
    next = b >> {popped, 3'b000};
    if (pushed) begin
      window = byte_window(at, n);
      next   = (next & ~window) | ((256'(data) << {at, 3'b000}) & window);
    end
    return next;
  endfunction

  always_comb begin
    cnt_d       = base + (push ? 6'(in_n) : 6'd0);
    in_rem_d    = push ? in_rem_q - OffW'(in_n) : in_rem_q;
    out_rem_d   = pop ? out_rem_q - OffW'(out_n) : out_rem_q;
    pkt_rem_d   = pop ? cur_rem - 13'(out_n) : pkt_rem_q;
    next_addr_d = pkt_start ? next_addr_q + 64'(plen_q) : next_addr_q;
    rest_d      = pkt_start ? rest_q - OffW'(plen_q) : rest_q;
    if (start_i) begin
      cnt_d       = '0;
      in_rem_d    = len_i;
      out_rem_d   = len_i;
      rest_d      = len_i;
      pkt_rem_d   = '0;
      next_addr_d = addr_i;
    end
    if (clear_i) begin
      cnt_d     = '0;
      in_rem_d  = '0;
      out_rem_d = '0;
      rest_d    = '0;
      pkt_rem_d = '0;
    end
  end

  `FF(cnt_q, cnt_d, '0)
  `FF(in_rem_q, in_rem_d, '0)
  `FF(out_rem_q, out_rem_d, '0)
  `FF(pkt_rem_q, pkt_rem_d, '0)
  `FF(rest_q, rest_d, '0)
  `FF(next_addr_q, next_addr_d, '0)
  `FFL(pkt_addr_q, next_addr_q, pkt_start, '0)
  `FFL(pkt_len_q, plen_q, pkt_start, '0)
  `FFLNR(buf_q, buf_next(buf_q, pop_n, push, base, in_n, in_data_i), pop || push)

  `ASSERT_IF(PackStartIdle, start_i, !busy_o && (len_i != '0))
  `ASSERT(PackCntMax, cnt_q <= 6'd32)

endmodule
