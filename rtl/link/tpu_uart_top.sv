// SPDX-License-Identifier: Apache-2.0
// The TPU behind the serial host link: the UART bridge (docs/link.md) on
// tpu_top's host-interface streams. What a board top instantiates, and what
// the board simulation (sim/board/) runs with its serial line on a pty.
//
// DMA reads cross the line, where a lost frame is sent again only after the
// host's retransmission timeout (up to 2 s, docs/link.md), so the completion
// timeout is 2^28 cycles (8.9 s at 30 MHz), not the configuration's.
`include "tpu_macros.svh"

module tpu_uart_top #(
  parameter tpu_pkg::cfg_t Cfg        = tpu_pkg::Cfg,
  parameter int unsigned   RetxCycles = 1 << 18  // the bridge's retransmission timeout
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [15:0] div_i,       // clock cycles per serial bit, >= 4
  input  logic        rx_i,        // serial in (asynchronous)
  output logic        tx_o,        // serial out
  output logic        link_up_o,   // the host has opened the link
  output logic        link_err_o,  // pulses on a bad frame or message
  output logic        busy_o,      // the TPU runs a command
  output logic        error_o      // the TPU recorded an error since its last soft reset
);

  localparam logic [31:0] CplTimeout = 32'd1 << 28;

  tlp_pkg::link_cfg_t link_cfg;
  logic               cq_valid, cq_ready, cc_valid, cc_ready, rq_valid, rq_ready, rc_valid, rc_ready;
  tlp_pkg::cq_t       cq;
  tlp_pkg::cc_t       cc;
  tlp_pkg::rq_t       rq;
  tlp_pkg::rc_t       rc;

  uart_bridge #(
    .RetxCycles(RetxCycles)
  ) u_bridge (
    .clk_i,
    .rst_ni,
    .div_i,
    .rx_i,
    .tx_o,
    .link_up_o,
    .link_err_o,
    .link_cfg_o(link_cfg),
    .cq_valid_o(cq_valid),
    .cq_ready_i(cq_ready),
    .cq_o      (cq),
    .cc_valid_i(cc_valid),
    .cc_ready_o(cc_ready),
    .cc_i      (cc),
    .rq_valid_i(rq_valid),
    .rq_ready_o(rq_ready),
    .rq_i      (rq),
    .rc_valid_o(rc_valid),
    .rc_ready_i(rc_ready),
    .rc_o      (rc)
  );

  tpu_top #(
    .Cfg(Cfg)
  ) u_tpu (
    .clk_i,
    .rst_ni,
    .link_cfg_i   (link_cfg),
    .cpl_timeout_i(CplTimeout),
    .cq_valid_i   (cq_valid),
    .cq_ready_o   (cq_ready),
    .cq_i         (cq),
    .cc_valid_o   (cc_valid),
    .cc_ready_i   (cc_ready),
    .cc_o         (cc),
    .rq_valid_o   (rq_valid),
    .rq_ready_i   (rq_ready),
    .rq_o         (rq),
    .rc_valid_i   (rc_valid),
    .rc_ready_o   (rc_ready),
    .rc_i         (rc),
    .busy_o,
    .error_o
  );

endmodule
