// SPDX-License-Identifier: Apache-2.0
// DMA write channel: one descriptor at a time, its data stream cut into
// posted writes on rq.
//
// The packer (dma_wr_pack) repacks the client's bytes into packets of at most
// max_payload_i bytes that never cross 4 KiB. Store and forward: a packet's
// beats collect in the data FIFO and its header enters the header FIFO with
// its last beat, so a packet is only offered on rq when all of it is here,
// and once started it goes out on consecutive beats without waiting for the
// client (a soft reset can always let it finish). max_payload_i must be at
// most half the data FIFO (BufBeats * 8 bytes) so that the next packet fills
// while one drains: 16 bytes a cycle.
// Bus master off (at the descriptor or at any later packet start): the
// remaining packets of the transfer are dropped, the client's data is still
// consumed, and done reports err = 1.
// done: offered when the transfer's last beat has left rq (or its last packet
// was dropped and rq is idle). A transfer of length 0 takes no data beats and
// is done at once.
`include "tpu_macros.svh"

module dma_wr #(
  parameter int unsigned  BufBeats = tpu_pkg::Cfg.dma_wr_buf_beats,  // data FIFO, beats
  parameter int unsigned  HdrDepth = 8,   // packets buffered
  localparam int unsigned OffW     = dma_pkg::OffW,
  localparam int unsigned BeatW    = 128 + 16 + 1,
  localparam int unsigned HdrW     = 64 + 13 + 1
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
  output logic                  rq_final_o,       // this beat ends the transfer
  input  logic                  final_sent_i,     // the final beat has left rq
  input  logic                  rq_idle_i         // nothing is waiting on rq
);

  import dma_pkg::*;

  typedef enum logic [1:0] {
    WrIdle,
    WrRun,
    WrDone
  } state_e;

  state_e state_q, state_d;
  logic   accept, drop_q, drop_d, drop_final_q, drop_final_d, active_q, active_d;

  // ---- packer ----
  logic             pk_valid, pk_ready, pk_last, pk_final, pk_in_last, pk_busy;
  logic [15:0][7:0] pk_data;
  logic [15:0]      pk_keep, pk_in_keep;
  logic [63:0]      pk_addr;
  logic [12:0]      pk_len;
  logic             df_ready, hf_ready;

  dma_wr_pack u_pack (
    .clk_i,
    .rst_ni,
    .clear_i,
    .start_i      (accept && (req_i.len != '0)),
    .addr_i       (req_i.addr),
    .len_i        (OffW'(req_i.len)),
    .max_payload_i,
    .busy_o       (pk_busy),
    .in_valid_i   (data_valid_i && (state_q == WrRun)),
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
  logic             df_valid, hf_valid, df_last, hf_final, df_pop, hf_pop;
  logic [127:0]     df_data;
  logic [15:0]      df_keep;
  logic [63:0]      hf_addr;
  logic [12:0]      hf_len;
  logic [$clog2(BufBeats+1)-1:0] unused_df_count;
  logic [$clog2(HdrDepth+1)-1:0] unused_hf_count;

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
    .valid_i(pk_valid && pk_ready && pk_last),
    .ready_o(hf_ready),
    .data_i ({pk_addr, pk_len, pk_final}),
    .valid_o(hf_valid),
    .ready_i(hf_pop),
    .data_o ({hf_addr, hf_len, hf_final}),
    .count_o(unused_hf_count)
  );

  // ---- emitter: whole packets, or drop them ----
  logic drop_beat, send;

  assign drop_beat  = hf_valid && !active_q && (drop_q || !bus_master_en_i) && !clear_i;
  assign rq_valid_o = hf_valid && !drop_q && (active_q || bus_master_en_i);
  assign send       = rq_valid_o && rq_ready_i;
  assign df_pop     = send || drop_beat;
  assign hf_pop     = df_pop && df_last;
  assign rq_final_o = df_last && hf_final;
  assign rq_o       = '{write: 1'b1,
                        tag:   '0,
                        addr:  hf_addr,
                        len:   hf_len,
                        data:  df_data,
                        keep:  df_keep,
                        last:  df_last};

  // ---- descriptor state ----
  assign req_ready_o  = (state_q == WrIdle) && start_ok_i;
  assign accept       = req_valid_i && req_ready_o;
  assign done_valid_o = state_q == WrDone;
  assign done_o.err   = drop_q;

  always_comb begin
    state_d      = state_q;
    drop_d       = drop_q || drop_beat;
    drop_final_d = drop_final_q || (drop_beat && df_last && hf_final);
    active_d     = send ? !df_last : active_q;
    unique case (state_q)
      WrIdle: begin
        if (accept) begin
          state_d      = (req_i.len == '0) ? WrDone : WrRun;
          drop_d       = !bus_master_en_i && (req_i.len != '0);
          drop_final_d = 1'b0;
        end
      end
      WrRun: if (final_sent_i || (drop_final_q && rq_idle_i)) state_d = WrDone;
      WrDone: if (done_ready_i) state_d = WrIdle;
      default: state_d = WrIdle;
    endcase
    if (clear_i) begin
      state_d      = WrIdle;
      drop_d       = 1'b0;
      drop_final_d = 1'b0;
      active_d     = 1'b0;
    end
  end

  `FF(state_q, state_d, WrIdle)
  `FF(drop_q, drop_d, 1'b0)
  `FF(drop_final_q, drop_final_d, 1'b0)
  `FF(active_q, active_d, 1'b0)

  // ---- rules ----
  logic data_fire;
  assign data_fire = data_valid_i && data_ready_o;
  `ASSERT(WrLenInRange, accept |-> req_i.len <= 32'(1 << 20))
  `ASSERT(WrLastMatchesLen, data_fire |-> data_i.last == pk_in_last)
  `ASSERT(WrKeepPacked, data_fire |-> data_i.keep == pk_in_keep)
  `ASSERT(WrPacketBuffered, rq_valid_o |-> df_valid)
  `ASSERT(WrFinalWhenRunning, final_sent_i |-> state_q == WrRun)
  `ASSERT(WrPayloadFits, max_payload_i <= 13'(BufBeats * 8))
  `ASSERT(WrStartIdle, accept && (req_i.len != '0) |-> !pk_busy)
  `ASSERT(WrReqHeld, $past(req_valid_i && !req_ready_o && start_ok_i) && start_ok_i |->
                     req_valid_i && (req_i == $past(req_i)))

endmodule
