// SPDX-License-Identifier: Apache-2.0
// DMA engine: the device's bus master on the TLP-lite rq/rc streams.
//
// Two client channels (payloads: the dma_pkg channel structs):
//   read   descriptor (address, length 0 .. 2^20 bytes) -> data stream, bytes
//          packed from byte 0 in address order, 16 a beat -> rd_done with an
//          error code and the start address of the failing sub-request.
//          Up to RdXfers descriptors in flight, completed strictly in order.
//   write  descriptor + data stream (packed from byte 0) -> posted writes ->
//          wr_done once the last beat has left rq. The next descriptor is
//          accepted once the previous one's data is taken, while its packets
//          still drain; up to 8 in flight, done strictly in order.
// Reads are split into requests of at most max_read_req bytes, writes into
// packets of at most max_payload bytes (and at most WrBufBeats * 8); neither
// crosses a 4 KiB boundary. Up to Tags reads are outstanding, limited also by
// the reorder buffer (RobBytes); completions may arrive split, interleaved and
// out of order across tags and are delivered in order. Bad completions are
// classified (see dma_cpl.sv): unexpected and malformed ones are dropped and
// counted; UR, CA, poisoned and timeout end the read transfer with an error.
//
// Ordering: the channels are independent; rq is shared packet by packet,
// round robin between a read request and a write packet. A client that needs
// a read to see an earlier write waits for wr_done before issuing the read
// (a posted write that has left rq is ahead of every later request).
//
// Soft reset (soft_reset_i, a pulse or a level): from the cycle it is seen no
// new request or packet starts on rq and no descriptor is accepted; a write
// packet already started on rq is finished (its data is all buffered) and
// the rq output register drains; then everything is dropped (channels idle,
// buffers empty, every tag still awaited abandoned: its late completions are
// dropped as unexpected). reset_busy_o is high from the cycle soft_reset_i is
// seen until that has happened; after it falls nothing more leaves rq until
// a new descriptor arrives. Counters keep their values.
//
// Latency: rq and rc each pass one register (stream_spill); rc is always
// ready. Throughput: 16 bytes a cycle each way given enough tags and buffer
// for the link's latency (docs/dma.md has the numbers).
`include "tpu_macros.svh"

module dma_engine #(
  parameter int unsigned Tags          = tpu_pkg::Cfg.dma_tags,     // outstanding reads, power of two 2 .. 128
  parameter int unsigned RobBytes      = tpu_pkg::Cfg.dma_rob_bytes,  // read reorder buffer, power of two
  parameter int unsigned RdXfers       = tpu_pkg::Cfg.dma_rd_xfers,     // read descriptors in flight, power of two 2 .. 256
  parameter int unsigned WrBufBeats    = tpu_pkg::Cfg.dma_wr_buf_beats,     // write packet buffer, power of two >= 16
  parameter int unsigned TimeoutCycles = tpu_pkg::Cfg.dma_timeout    // completion timeout when cpl_timeout_i is 0
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  // ---- control ----
  input  logic               soft_reset_i,
  output logic               reset_busy_o,
  input  tlp_pkg::link_cfg_t link_cfg_i,
  input  logic [31:0]        cpl_timeout_i,      // cycles; 0 selects TimeoutCycles
  // ---- read channel ----
  input  logic               rd_req_valid_i,
  output logic               rd_req_ready_o,
  input  dma_pkg::rd_req_t   rd_req_i,
  output logic               rd_data_valid_o,
  input  logic               rd_data_ready_i,
  output dma_pkg::rd_data_t  rd_data_o,
  output logic               rd_done_valid_o,
  input  logic               rd_done_ready_i,
  output dma_pkg::rd_done_t  rd_done_o,
  // ---- write channel ----
  input  logic               wr_req_valid_i,
  output logic               wr_req_ready_o,
  input  dma_pkg::wr_req_t   wr_req_i,
  input  logic               wr_data_valid_i,
  output logic               wr_data_ready_o,
  input  dma_pkg::wr_data_t  wr_data_i,
  output logic               wr_done_valid_o,
  input  logic               wr_done_ready_i,
  output dma_pkg::wr_done_t  wr_done_o,
  // ---- TLP-lite ----
  output logic               rq_valid_o,
  input  logic               rq_ready_i,
  output tlp_pkg::rq_t       rq_o,
  input  logic               rc_valid_i,
  output logic               rc_ready_o,
  input  tlp_pkg::rc_t       rc_i,
  // ---- counters (saturating) ----
  output logic [15:0]        cnt_unexpected_o,
  output logic [15:0]        cnt_malformed_o
);

  localparam int unsigned RqW = $bits(tlp_pkg::rq_t);
  localparam int unsigned RcW = $bits(tlp_pkg::rc_t);
  localparam int unsigned WrPayloadCap = (WrBufBeats * 8 > 4096) ? 4096 : WrBufBeats * 8;

  if (WrBufBeats < 16 || (WrBufBeats & (WrBufBeats - 1)) != 0) begin : gen_bad_wrbuf
    $error("dma_engine: WrBufBeats must be a power of two, at least 16");
  end
  if (TimeoutCycles < 1 || TimeoutCycles >= (1 << 20)) begin : gen_bad_timeout
    $error("dma_engine: TimeoutCycles must be in 1 .. 2^20 - 1");
  end

  // ---------------------------------------------------------------------------
  // Link configuration, registered (it is static while DMA runs).
  // ---------------------------------------------------------------------------
  logic        bme_q;
  logic [12:0] mrrs_q, mps_q;
  logic [31:0] timeout_q;

  `FF(bme_q, link_cfg_i.bus_master_en, 1'b0)
  `FF(mrrs_q, dma_pkg::pow2_size(link_cfg_i.max_read_req, 13'd4096), 13'd128)
  `FF(mps_q, dma_pkg::pow2_size(link_cfg_i.max_payload, 13'(WrPayloadCap)), 13'd128)
  `FF(timeout_q, (cpl_timeout_i == '0) ? 32'(TimeoutCycles) : cpl_timeout_i, 32'(TimeoutCycles))

  logic unused_cfg;
  assign unused_cfg = ^{link_cfg_i.msi_en, link_cfg_i.msi_addr, link_cfg_i.msi_data};

  // ---------------------------------------------------------------------------
  // Soft reset: stop starting, drain rq, then clear.
  // ---------------------------------------------------------------------------
  logic rst_pend_q, rst_req, drained, clear, start_ok, lock_q;

  assign rst_req      = soft_reset_i || rst_pend_q;
  assign drained      = !rq_valid_o && !lock_q;
  assign clear        = rst_req && drained;
  assign start_ok     = !rst_req;
  assign reset_busy_o = rst_req;

  `FF(rst_pend_q, soft_reset_i || (rst_pend_q && !drained), 1'b0)

  // ---------------------------------------------------------------------------
  // Channels
  // ---------------------------------------------------------------------------
  logic         rc_valid, rd_rq_valid, rd_rq_ready, wr_rq_valid, wr_rq_ready, wr_rq_final;
  logic         final_sent, unexpected, malformed;
  tlp_pkg::rc_t rc;
  tlp_pkg::rq_t rd_rq, wr_rq;

  stream_spill #(
    .Width(RcW)
  ) u_rc_reg (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),
    .valid_i(rc_valid_i),
    .ready_o(rc_ready_o),
    .data_i (rc_i),
    .valid_o(rc_valid),
    .ready_i(1'b1),
    .data_o (rc)
  );

  dma_rd #(
    .Tags    (Tags),
    .RobBytes(RobBytes),
    .MaxXfers(RdXfers)
  ) u_rd (
    .clk_i,
    .rst_ni,
    .clear_i        (clear),
    .start_ok_i     (start_ok),
    .bus_master_en_i(bme_q),
    .max_read_req_i (mrrs_q),
    .timeout_i      (timeout_q),
    .req_valid_i    (rd_req_valid_i),
    .req_ready_o    (rd_req_ready_o),
    .req_i          (rd_req_i),
    .data_valid_o   (rd_data_valid_o),
    .data_ready_i   (rd_data_ready_i),
    .data_o         (rd_data_o),
    .done_valid_o   (rd_done_valid_o),
    .done_ready_i   (rd_done_ready_i),
    .done_o         (rd_done_o),
    .rq_valid_o     (rd_rq_valid),
    .rq_ready_i     (rd_rq_ready),
    .rq_o           (rd_rq),
    .cpl_valid_i    (rc_valid),
    .cpl_i          (rc),
    .unexpected_o   (unexpected),
    .malformed_o    (malformed)
  );

  dma_wr #(
    .BufBeats(WrBufBeats)
  ) u_wr (
    .clk_i,
    .rst_ni,
    .clear_i        (clear),
    .start_ok_i     (start_ok),
    .bus_master_en_i(bme_q),
    .max_payload_i  (mps_q),
    .req_valid_i    (wr_req_valid_i),
    .req_ready_o    (wr_req_ready_o),
    .req_i          (wr_req_i),
    .data_valid_i   (wr_data_valid_i),
    .data_ready_o   (wr_data_ready_o),
    .data_i         (wr_data_i),
    .done_valid_o   (wr_done_valid_o),
    .done_ready_i   (wr_done_ready_i),
    .done_o         (wr_done_o),
    .rq_valid_o     (wr_rq_valid),
    .rq_ready_i     (wr_rq_ready),
    .rq_o           (wr_rq),
    .rq_final_o     (wr_rq_final),
    .final_sent_i   (final_sent),
    .rq_idle_i      (!rq_valid_o)
  );

  // ---------------------------------------------------------------------------
  // rq: round robin between the channels, packet by packet, into one register.
  // lock_q holds rq for a write packet until its last beat.
  // ---------------------------------------------------------------------------
  logic         rr_q, rr_d, lock_d, rd_go, wr_go, pick_wr, spill_ready, spill_valid;
  logic         out_final;
  tlp_pkg::rq_t spill_beat;

  assign rd_go       = rd_rq_valid && start_ok && !lock_q;
  assign wr_go       = wr_rq_valid && (start_ok || lock_q);
  assign pick_wr     = lock_q || (wr_go && (!rd_go || rr_q));
  assign spill_valid = pick_wr ? wr_go : rd_go;
  assign spill_beat  = pick_wr ? wr_rq : rd_rq;
  assign rd_rq_ready = spill_ready && !pick_wr && start_ok && !lock_q;
  assign wr_rq_ready = spill_ready && pick_wr && (start_ok || lock_q);

  always_comb begin
    rr_d   = rr_q;
    lock_d = lock_q;
    if (spill_valid && spill_ready) begin
      if (!lock_q) rr_d = !pick_wr;  // the other channel first at the next packet start
      if (pick_wr) lock_d = !wr_rq.last;
    end
    if (clear) begin
      rr_d   = 1'b0;
      lock_d = 1'b0;
    end
  end

  `FF(rr_q, rr_d, 1'b0)
  `FF(lock_q, lock_d, 1'b0)

  stream_spill #(
    .Width(RqW + 1)
  ) u_rq_reg (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),
    .valid_i(spill_valid),
    .ready_o(spill_ready),
    .data_i ({pick_wr && wr_rq_final, spill_beat}),
    .valid_o(rq_valid_o),
    .ready_i(rq_ready_i),
    .data_o ({out_final, rq_o})
  );

  // One pulse per final write beat, in the order they entered: the register
  // may hold the final beats of two transfers.
  assign final_sent = rq_valid_o && rq_ready_i && out_final;

  // ---------------------------------------------------------------------------
  // Counters
  // ---------------------------------------------------------------------------
  logic [15:0] cnt_unexpected_q, cnt_malformed_q;

  `FF(cnt_unexpected_q, cnt_unexpected_q + 16'(unexpected && (cnt_unexpected_q != '1)), '0)
  `FF(cnt_malformed_q, cnt_malformed_q + 16'(malformed && (cnt_malformed_q != '1)), '0)

  assign cnt_unexpected_o = cnt_unexpected_q;
  assign cnt_malformed_o  = cnt_malformed_q;

  // ---------------------------------------------------------------------------
  // Interface rules
  // ---------------------------------------------------------------------------
  `ASSERT_IF(RqNoCross4K, rq_valid_o, (13'(rq_o.addr[11:0]) + rq_o.len) <= 13'd4096)
  `ASSERT_IF(RqLenNonZero, rq_valid_o, rq_o.len != '0)
  `ASSERT_IF(RqReadOneBeat, rq_valid_o && !rq_o.write, rq_o.last)
  `ASSERT(RqNothingWhileClear, clear -> !rq_valid_o)
  `ASSERT(RcAlwaysReady, rc_ready_o)
  `ASSERT_HELD(WrDataHeld, wr_data_valid_i && !wr_data_ready_o && !rst_req, wr_data_i, !rst_req,
               wr_data_valid_i)
  `ASSERT_HELD(RdDataHeld, rd_data_valid_o && !rd_data_ready_i && !clear, rd_data_o, 1'b1,
               rd_data_valid_o)
  `ASSERT_NEXT(RdDoneHeld, rd_done_valid_o && !rd_done_ready_i && !clear, rd_done_valid_o)
  `ASSERT_NEXT(WrDoneHeld, wr_done_valid_o && !wr_done_ready_i && !clear, wr_done_valid_o)

endmodule
