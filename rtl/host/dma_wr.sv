// SPDX-License-Identifier: Apache-2.0
// DMA write channel: descriptors in order, each one's data stream cut into
// posted writes on rq. Up to Xfers descriptors are in flight (accepted, done
// not yet taken).
//
// The packer (dma_wr_pack) repacks the client's bytes into packets of at most
// max_payload_i bytes that never cross 4 KiB. Store and forward: a packet's
// beats collect in the data FIFO and its header enters the header FIFO with
// its last beat, so a packet is only offered on rq when all of it is here,
// and once started it goes out on consecutive beats without waiting for the
// client (a soft reset can always let it finish). max_payload_i must be at
// most half the data FIFO (BufBeats * 8 bytes) so that the next packet fills
// while one drains: 16 bytes a cycle.
// The next descriptor is accepted as soon as the packer has taken all of the
// previous one's data, while that one's packets still wait in the store or
// go out on rq, so back-to-back transfers do not pay for the store's drain.
// A transfer of length 0 enters the header FIFO as a header without data.
// Bus master off (at the descriptor or at any later packet start): the
// remaining packets of the transfer are dropped, the client's data is still
// consumed, and done reports err = 1. The drop state belongs to the transfer
// at the emitter and ends with its final packet; bus master off at the
// descriptor travels with the transfer's headers.
// done: one per descriptor, in descriptor order, offered when the transfer's
// final beat has left rq (or its last packet was dropped and rq is idle).
// A transfer of length 0 is done once the transfers before it are. Dones wait
// in a FIFO; a descriptor is accepted only while the FIFO has room for it.
`include "tpu_macros.svh"

module dma_wr #(
  parameter int unsigned  BufBeats = tpu_pkg::Cfg.dma_wr_buf_beats,  // data FIFO, beats
  parameter int unsigned  HdrDepth = 8,   // packets buffered
  parameter int unsigned  Xfers    = 8,   // descriptors in flight, at least 2
  localparam int unsigned OffW     = dma_pkg::OffW,
  localparam int unsigned BeatW    = 128 + 16 + 1,
  localparam int unsigned HdrW     = 64 + 13 + 3,
  localparam int unsigned XfW      = $clog2(Xfers + 1)
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic                  clear_i,          // soft reset: drop everything
  input  logic                  start_ok_i,       // low: accept no descriptor
  input  logic                  bus_master_en_i,
  input  logic [12:0]           max_payload_i,    // power of two, 128 .. BufBeats * 8
  // ---- descriptors ----
  input  logic                  req_valid_i,
  output logic                  req_ready_o,
  input  dma_pkg::wr_req_t      req_i,
  // ---- data ----
  input  logic                  data_valid_i,
  output logic                  data_ready_o,
  input  dma_pkg::wr_data_t     data_i,
  // ---- status ----
  output logic                  done_valid_o,
  input  logic                  done_ready_i,
  output dma_pkg::wr_done_t     done_o,
  // ---- posted writes to rq ----
  output logic                  rq_valid_o,
  input  logic                  rq_ready_i,
  output tlp_pkg::rq_t          rq_o,
  output logic                  rq_final_o,       // this beat ends its transfer
  input  logic                  final_sent_i,     // a final beat has left rq (one pulse each)
  input  logic                  rq_idle_i         // nothing is waiting on rq
);

  import dma_pkg::*;

  // ---- descriptors ----
  // xfers_q counts the descriptors whose done has not been taken, so the
  // done FIFO (Xfers entries) always has room for the next done.
  logic           accept, zero, off_q;
  logic [XfW-1:0] xfers_q, xfers_d;

  // ---- packer ----
  logic             pk_valid, pk_ready, pk_last, pk_final, pk_in_last, pk_busy;
  logic [15:0][7:0] pk_data;
  logic [15:0]      pk_keep, pk_in_keep;
  logic [63:0]      pk_addr;
  logic [12:0]      pk_len;
  logic             df_ready, hf_ready;

  assign zero        = req_i.len == '0;
  assign req_ready_o = start_ok_i && !pk_busy && hf_ready && (xfers_q != XfW'(Xfers));
  assign accept      = req_valid_i && req_ready_o;

  // Bus master off at the descriptor: every packet of the transfer is dropped,
  // whatever bus master is when the packets reach the emitter.
  `FFL(off_q, !bus_master_en_i, accept, 1'b0)

  dma_wr_pack u_pack (
    .clk_i,
    .rst_ni,
    .clear_i,
    .start_i      (accept && !zero),
    .addr_i       (req_i.addr),
    .len_i        (OffW'(req_i.len)),
    .max_payload_i,
    .busy_o       (pk_busy),
    .in_valid_i   (data_valid_i),
    .in_ready_o   (data_ready_o),
    .in_data_i    (data_i.data),
    .in_last_o    (pk_in_last),
    .in_keep_o    (pk_in_keep),
    .beat_valid_o (pk_valid),
    .beat_ready_i (pk_ready),
    .beat_data_o  (pk_data),
    .beat_keep_o  (pk_keep),
    .beat_last_o  (pk_last),
    .pkt_addr_o   (pk_addr),
    .pkt_len_o    (pk_len),
    .pkt_final_o  (pk_final)
  );

  assign pk_ready = df_ready && (!pk_last || hf_ready);

  // ---- packet store ----
  // A header: the packet, whether it is its transfer's final one, whether
  // bus master was off at the descriptor, and whether it stands for a
  // transfer of length 0 (no data beats; its address, length and off bit are
  // not used). The packer is idle when a descriptor is accepted, so a
  // length-0 header never meets a packet's.
  logic             df_valid, hf_valid, df_last, hf_final, hf_off, hf_zero, df_pop, hf_pop;
  logic             pk_hdr_push, zero_push;
  logic [127:0]     df_data;
  logic [15:0]      df_keep;
  logic [63:0]      hf_addr;
  logic [12:0]      hf_len;
  logic [$clog2(BufBeats+1)-1:0] unused_df_count;
  logic [$clog2(HdrDepth+1)-1:0] unused_hf_count;

  assign pk_hdr_push = pk_valid && pk_ready && pk_last;
  assign zero_push   = accept && zero;

  // The packet data (BufBeats x 145 bits) is stored in block RAM.
  stream_fifo_ram #(
    .Width(BeatW),
    .Depth(BufBeats)
  ) u_data (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(pk_valid && pk_ready),
    .ready_o(df_ready),
    .data_i ({pk_data, pk_keep, pk_last}),
    .valid_o(df_valid),
    .ready_i(df_pop),
    .data_o ({df_data, df_keep, df_last}),
    .count_o(unused_df_count)
  );

  stream_fifo #(
    .Width(HdrW),
    .Depth(HdrDepth)
  ) u_hdr (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(pk_hdr_push || zero_push),
    .ready_o(hf_ready),
    .data_i ({pk_addr, pk_len, pk_final || zero_push, off_q, zero_push}),
    .valid_o(hf_valid),
    .ready_i(hf_pop),
    .data_o ({hf_addr, hf_len, hf_final, hf_off, hf_zero}),
    .count_o(unused_hf_count)
  );

  // ---- emitter: whole packets, or drop them ----
  // drop_q: the transfer at the emitter drops its remaining packets; it ends
  // with the transfer's final packet. fin_q: final beats sent on rq whose
  // final_sent_i has not come yet; a done that does not wait for one (a
  // dropped or length-0 transfer) waits for fin_q == 0 so that the dones
  // stay in order.
  logic           drop_q, drop_d, active_q, active_d, drop_pkt, fin_beat, fin_clear;
  logic           drop_beat, zero_end, send;
  logic [XfW-1:0] fin_q, fin_d;

  assign drop_pkt   = hf_off || drop_q || !bus_master_en_i;
  assign fin_beat   = df_last && hf_final;
  assign fin_clear  = fin_q == '0;
  assign drop_beat  = hf_valid && !hf_zero && !active_q && drop_pkt &&
                      (!fin_beat || (fin_clear && rq_idle_i)) && !clear_i;
  assign zero_end   = hf_valid && hf_zero && fin_clear && !clear_i;
  assign rq_valid_o = hf_valid && !hf_zero && (active_q || !drop_pkt);
  assign send       = rq_valid_o && rq_ready_i;
  assign df_pop     = send || drop_beat;
  assign hf_pop     = (df_pop && df_last) || zero_end;
  assign rq_final_o = fin_beat;
  assign rq_o       = '{write: 1'b1,
                        tag:   '0,
                        addr:  hf_addr,
                        len:   hf_len,
                        data:  df_data,
                        keep:  df_keep,
                        last:  df_last};

  always_comb begin
    drop_d   = drop_q || drop_beat;
    active_d = send ? !df_last : active_q;
    fin_d    = fin_q + XfW'(send && fin_beat) - XfW'(final_sent_i);
    xfers_d  = xfers_q + XfW'(accept) - XfW'(done_valid_o && done_ready_i);
    if (hf_pop && hf_final) drop_d = 1'b0;
    if (clear_i) begin
      drop_d   = 1'b0;
      active_d = 1'b0;
      fin_d    = '0;
      xfers_d  = '0;
    end
  end

  `FF(drop_q, drop_d, 1'b0)
  `FF(active_q, active_d, 1'b0)
  `FF(fin_q, fin_d, '0)
  `FF(xfers_q, xfers_d, '0)

  // ---- done ----
  // At most one source a cycle: final_sent_i needs fin_q != 0, the other two
  // fin_q == 0 and the head header, with or without data.
  logic           drop_end, done_push, done_room;
  logic [XfW-1:0] done_count;

  assign drop_end  = drop_beat && fin_beat;
  assign done_push = final_sent_i || drop_end || zero_end;

  stream_fifo #(
    .Width(1),
    .Depth(Xfers)
  ) u_done (
    .clk_i,
    .rst_ni,
    .clear_i,
    .valid_i(done_push),
    .ready_o(done_room),
    .data_i (drop_end),
    .valid_o(done_valid_o),
    .ready_i(done_ready_i),
    .data_o (done_o.err),
    .count_o(done_count)
  );

  // ---- rules ----
  logic data_fire;
  assign data_fire = data_valid_i && data_ready_o;
  `ASSERT_IF(WrLenInRange, accept, req_i.len <= 32'(1 << 20))
  `ASSERT_IF(WrLastMatchesLen, data_fire, data_i.last == pk_in_last)
  `ASSERT_IF(WrKeepPacked, data_fire, data_i.keep == pk_in_keep)
  `ASSERT(WrPacketBuffered, rq_valid_o -> df_valid)
  `ASSERT(WrPayloadFits, max_payload_i <= 13'(BufBeats * 8))
  `ASSERT(WrStartIdle, accept -> !pk_valid)  // so a length-0 header never meets a packet's
  `ASSERT(WrFinalWhenSent, final_sent_i -> !fin_clear)
  `ASSERT(WrOneDone, $onehot0({final_sent_i, drop_end, zero_end}))
  `ASSERT(WrDoneRoom, done_push -> done_room)
  `ASSERT(WrDoneCounted, done_count <= xfers_q)
  `ASSERT(WrInFlight, xfers_q <= XfW'(Xfers) && fin_q <= xfers_q)
  `ASSERT_IF(WrActivePacket, active_q, hf_valid && !hf_zero)
  `ASSERT_HELD(WrReqHeld, req_valid_i && !req_ready_o && start_ok_i, req_i, start_ok_i, req_valid_i)

endmodule
