// SPDX-License-Identifier: Apache-2.0
// UART bridge: the device side of the serial host link (docs/link.md). It
// stands in for the host: the TPU's host-interface streams (cq, cc, rq, rc,
// docs/host_interface.md) travel over one 8N1 line each way.
//
//   rx_i -> uart_rx -> link_rx -> link_msg_rx -> cq, rc (and counters requests)
//   cc, rq -> link_msg_tx -> link_tx -> uart_tx -> tx_o
//
// link_rx hands link_tx the acks it receives, the need to acknowledge, pings,
// SYNC and the expected seq. The six link counters (16 bits, saturating,
// since reset) live here and go out in the 0x84 message. The link
// configuration is fixed: bus mastering on, max payload and max read request
// 256 bytes (a 256-byte DMA write is the largest message), MSI on at
// 0xFEE0_0000 with data 1.
// Resources: two block RAMs (link_rx 9 x 2048, link_tx 8 x 2048).
`include "tpu_macros.svh"

module uart_bridge #(
  parameter int unsigned RetxCycles = 1 << 18  // retransmission timeout, clock cycles
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic [15:0]        div_i,        // clock cycles per bit, >= 4
  input  logic               rx_i,         // serial in (asynchronous)
  output logic               tx_o,         // serial out, idle high
  output logic               link_up_o,    // a SYNC has been answered since reset
  output logic               link_err_o,   // pulses on a CRC error, bad frame or bad message
  // ---- the device's host interface (tpu_top's ports) ----
  output tlp_pkg::link_cfg_t link_cfg_o,   // fixed: bus master on, max payload 256, max read req 256, MSI on at 0xFEE0_0000 data 1
  output logic               cq_valid_o,
  input  logic               cq_ready_i,
  output tlp_pkg::cq_t       cq_o,
  input  logic               cc_valid_i,
  output logic               cc_ready_o,
  input  tlp_pkg::cc_t       cc_i,
  input  logic               rq_valid_i,
  output logic               rq_ready_o,
  input  tlp_pkg::rq_t       rq_i,
  output logic               rc_valid_o,
  input  logic               rc_ready_i,
  output tlp_pkg::rc_t       rc_o
);

  import link_pkg::*;

  // ---- line ----
  logic       rxb_valid, rxb_err, txb_valid, txb_ready;
  logic [7:0] rxb, txb;

  uart_rx u_uart_rx (
    .clk_i,
    .rst_ni,
    .div_i,
    .rx_i,
    .valid_o    (rxb_valid),
    .data_o     (rxb),
    .frame_err_o(rxb_err)
  );

  uart_tx u_uart_tx (
    .clk_i,
    .rst_ni,
    .div_i,
    .valid_i(txb_valid),
    .ready_o(txb_ready),
    .data_i (txb),
    .tx_o
  );

  // ---- frames and reliability ----
  logic       msg_valid, msg_ready, msg_last;
  logic [7:0] msg_data;
  logic [8:0] msg_len;
  logic       ack_valid, need_ack, ping, sync;
  logic [7:0] ack, expected;
  logic       crc_err, bad_frame, dup, no_room, empty_msg, retx, bad_msg;

  link_rx u_link_rx (
    .clk_i,
    .rst_ni,
    .byte_valid_i(rxb_valid),
    .byte_i      (rxb),
    .byte_err_i  (rxb_err),
    .msg_valid_o (msg_valid),
    .msg_ready_i (msg_ready),
    .msg_data_o  (msg_data),
    .msg_last_o  (msg_last),
    .msg_len_o   (msg_len),
    .ack_valid_o (ack_valid),
    .ack_o       (ack),
    .need_ack_o  (need_ack),
    .ping_o      (ping),
    .sync_o      (sync),
    .expected_o  (expected),
    .crc_err_o   (crc_err),
    .bad_frame_o (bad_frame),
    .dup_o       (dup),
    .no_room_o   (no_room),
    .empty_msg_o (empty_msg)
  );

  logic       in_valid, in_ready, in_last;
  logic [7:0] in_data;

  link_tx #(
    .RetxCycles(RetxCycles)
  ) u_link_tx (
    .clk_i,
    .rst_ni,
    .in_valid_i (in_valid),
    .in_ready_o (in_ready),
    .in_data_i  (in_data),
    .in_last_i  (in_last),
    .ack_valid_i(ack_valid),
    .ack_i      (ack),
    .need_ack_i (need_ack),
    .ping_i     (ping),
    .sync_i     (sync),
    .expected_i (expected),
    .out_valid_o(txb_valid),
    .out_ready_i(txb_ready),
    .out_data_o (txb),
    .link_up_o,
    .retx_o     (retx)
  );

  // ---- messages ----
  logic                             cnt_req_valid, cnt_req_ready;
  logic [NumCounters-1:0][15:0]     counters_q;
  logic [NumCounters-1:0]           cnt_inc;

  link_msg_rx u_link_msg_rx (
    .clk_i,
    .rst_ni,
    .msg_valid_i    (msg_valid),
    .msg_ready_o    (msg_ready),
    .msg_data_i     (msg_data),
    .msg_last_i     (msg_last),
    .msg_len_i      (msg_len),
    .cq_valid_o,
    .cq_ready_i,
    .cq_o,
    .rc_valid_o,
    .rc_ready_i,
    .rc_o,
    .cnt_req_valid_o(cnt_req_valid),
    .cnt_req_ready_i(cnt_req_ready),
    .bad_msg_o      (bad_msg)
  );

  link_msg_tx u_link_msg_tx (
    .clk_i,
    .rst_ni,
    .cc_valid_i,
    .cc_ready_o,
    .cc_i,
    .rq_valid_i,
    .rq_ready_o,
    .rq_i,
    .cnt_req_valid_i(cnt_req_valid),
    .cnt_req_ready_o(cnt_req_ready),
    .counters_i     (counters_q),
    .out_valid_o    (in_valid),
    .out_ready_i    (in_ready),
    .out_data_o     (in_data),
    .out_last_o     (in_last)
  );

  // ---- link counters: 16 bits, saturating ----
  // An empty DATA message is accepted by the link but is no message at all.
  always_comb begin
    cnt_inc                = '0;
    cnt_inc[CntCrcErrors]  = crc_err;
    cnt_inc[CntBadFrames]  = bad_frame;
    cnt_inc[CntDuplicates] = dup;
    cnt_inc[CntNoRoom]     = no_room;
    cnt_inc[CntRetransmit] = retx;
    cnt_inc[CntBadMsgs]    = bad_msg || empty_msg;
  end

  for (genvar c = 0; c < NumCounters; c++) begin : gen_cnt
    `FFL(counters_q[c], counters_q[c] + 16'd1, cnt_inc[c] && counters_q[c] != '1, '0)
  end

  `FF(link_err_o, crc_err || bad_frame || bad_msg || empty_msg, 1'b0)

  // ---- fixed link configuration ----
  always_comb begin
    link_cfg_o               = '0;
    link_cfg_o.bus_master_en = 1'b1;
    link_cfg_o.max_payload   = 13'd256;
    link_cfg_o.max_read_req  = 13'd256;
    link_cfg_o.msi_en        = 1'b1;
    link_cfg_o.msi_addr      = 64'hFEE0_0000;
    link_cfg_o.msi_data      = 32'd1;
  end

endmodule
