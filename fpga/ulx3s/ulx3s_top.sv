// SPDX-License-Identifier: Apache-2.0
// ULX3S board top (LFE5U-85F): tpu_top on the board's pins, for the FPGA
// build (`make fpga`). A placeholder until the UART host link exists.
//
// Clock: the 25 MHz oscillator (clk_25mhz) feeds an EHXPLLL that makes the
// TPU clock clk_core = 25 MHz * ClkfbDiv / ClkiDiv, with the VCO at clk_core *
// ClkopDiv (400 to 800 MHz). The defaults give 100 MHz (25 / 1 * 4, VCO 600 /
// 6); scripts/fpga.sh picks the dividers for FREQ= and nextpnr derives the
// clk_core constraint from them.
// Reset: btn[0] (PWRn, low while pressed) or an unlocked PLL resets the TPU
// through a 4-flop synchronizer (asserted at once, released on clk_core).
// Keep-alive: synthesis must see every input of tpu_top driven and every
// output used, or it would remove the design. A 16-bit LFSR mixed with the
// UART input pin (ftdi_txd) feeds a shift register as wide as all of
// tpu_top's inputs; the XOR of all its outputs is registered onto led[0]
// and ftdi_rxd. led[1] shows the PLL lock, led[7:2] a heartbeat.
`include "tpu_macros.svh"

module ulx3s_top #(
  parameter int unsigned ClkiDiv  = 1,
  parameter int unsigned ClkfbDiv = 4,
  parameter int unsigned ClkopDiv = 6
) (
  input  logic       clk_25mhz,
  input  logic [0:0] btn,
  output logic [7:0] led,
  input  logic       ftdi_txd,
  output logic       ftdi_rxd
);

  // ---------------------------------------------------------------------------
  // Clock and reset
  // ---------------------------------------------------------------------------
  logic clk_core, pll_locked;

  EHXPLLL #(
    .PLLRST_ENA      ("DISABLED"),
    .INTFB_WAKE      ("DISABLED"),
    .STDBY_ENABLE    ("DISABLED"),
    .DPHASE_SOURCE   ("DISABLED"),
    .OUTDIVIDER_MUXA ("DIVA"),
    .OUTDIVIDER_MUXB ("DIVB"),
    .OUTDIVIDER_MUXC ("DIVC"),
    .OUTDIVIDER_MUXD ("DIVD"),
    .CLKI_DIV        (ClkiDiv),
    .CLKOP_ENABLE    ("ENABLED"),
    .CLKOP_DIV       (ClkopDiv),
    .CLKOP_CPHASE    ((ClkopDiv - 1) / 2),
    .CLKOP_FPHASE    (0),
    .FEEDBK_PATH     ("CLKOP"),
    .CLKFB_DIV       (ClkfbDiv)
  ) u_pll (
    .RST         (1'b0),
    .STDBY       (1'b0),
    .CLKI        (clk_25mhz),
    .CLKOP       (clk_core),
    .CLKFB       (clk_core),
    .CLKINTFB    (),
    .PHASESEL0   (1'b0),
    .PHASESEL1   (1'b0),
    .PHASEDIR    (1'b1),
    .PHASESTEP   (1'b1),
    .PHASELOADREG(1'b1),
    .PLLWAKESYNC (1'b0),
    .ENCLKOP     (1'b0),
    .LOCK        (pll_locked)
  );

  logic       arst_n;
  logic [3:0] rst_sync_q;
  logic       rst_n;

  assign arst_n = btn[0] && pll_locked;
  `FF(rst_sync_q, {rst_sync_q[2:0], 1'b1}, '0, clk_core, arst_n)
  assign rst_n = rst_sync_q[3];

  // ---------------------------------------------------------------------------
  // Stimulus: every input of tpu_top comes from a flop fed by a pin
  // ---------------------------------------------------------------------------
  localparam int unsigned StimW = $bits(tlp_pkg::link_cfg_t) + 20 + 1 + $bits(tlp_pkg::cq_t)
                                  + 1 + 1 + 1 + $bits(tlp_pkg::rc_t);

  logic [1:0]        rxd_sync_q;
  logic [15:0]       lfsr_q;
  logic [StimW-1:0]  stim_q;

  `FF(rxd_sync_q, {rxd_sync_q[0], ftdi_txd}, 2'b11, clk_core, rst_n)
  // Galois LFSR, x^16 + x^14 + x^13 + x^11 + 1 (maximal length).
  `FF(lfsr_q, (lfsr_q >> 1) ^ (lfsr_q[0] ? 16'hb400 : 16'h0), 16'hace1, clk_core, rst_n)
  `FF(stim_q, {stim_q[StimW-2:0], lfsr_q[0] ^ rxd_sync_q[1]}, '0, clk_core, rst_n)

  tlp_pkg::link_cfg_t link_cfg;
  logic [19:0]        cpl_timeout;
  logic               cq_valid, cc_ready, rq_ready, rc_valid;
  tlp_pkg::cq_t       cq;
  tlp_pkg::rc_t       rc;

  assign {link_cfg, cpl_timeout, cq_valid, cq, cc_ready, rq_ready, rc_valid, rc} = stim_q;

  // ---------------------------------------------------------------------------
  // The TPU
  // ---------------------------------------------------------------------------
  logic          cq_ready, cc_valid, rq_valid, rc_ready;
  tlp_pkg::cc_t  cc;
  tlp_pkg::rq_t  rq;

  tpu_top u_tpu (
    .clk_i        (clk_core),
    .rst_ni       (rst_n),
    .link_cfg_i   (link_cfg),
    .cpl_timeout_i(cpl_timeout),
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
    .rc_i         (rc)
  );

  // ---------------------------------------------------------------------------
  // Outputs: the XOR of every output bit, registered
  // ---------------------------------------------------------------------------
  logic        fold_q;
  logic [25:0] beat_q;

  `FF(fold_q, ^{cq_ready, cc_valid, cc, rq_valid, rq, rc_ready}, 1'b0, clk_core, rst_n)
  `FF(beat_q, beat_q + 26'd1, '0, clk_core, rst_n)

  assign led      = {beat_q[25:20], pll_locked, fold_q};
  assign ftdi_rxd = fold_q;

endmodule
