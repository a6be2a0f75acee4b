// SPDX-License-Identifier: Apache-2.0
// ULX3S board top (LFE5U-85F): the TPU behind the serial host link
// (tpu_uart_top, docs/link.md) on the FTDI UART, for the FPGA build
// (`make fpga`).
//
// Clock: the 25 MHz oscillator (clk_25mhz) feeds an EHXPLLL that makes the
// TPU clock clk_core = 25 MHz * ClkfbDiv / ClkiDiv, with the VCO at clk_core *
// ClkopDiv (400 to 800 MHz). The defaults give 30 MHz (25 / 5 * 6, VCO 600 /
// 20); scripts/fpga.sh picks the dividers for FREQ= and nextpnr derives the
// clk_core constraint from them. BaudDiv is clk_core / 3 Mbaud (10 at 30 MHz).
// Reset: btn[0] (PWRn, low while pressed) or an unlocked PLL resets the TPU
// through a 4-flop synchronizer (asserted at once, released on clk_core).
// Serial: ftdi_txd (M1) is the FTDI's transmit line, the FPGA's input;
// ftdi_rxd (L4) the FPGA's output.
// LEDs: 0 idle (link open, TPU not busy), 1 busy, 2 error (the TPU recorded
// an error since its last soft reset), 3 link open, 4 link error (a bad
// frame, lit for about 0.3 s), 5 PLL locked, 7:6 heartbeat.
`include "tpu_macros.svh"

module ulx3s_top #(
  parameter int unsigned ClkiDiv  = 5,
  parameter int unsigned ClkfbDiv = 6,
  parameter int unsigned ClkopDiv = 20,
  parameter int unsigned BaudDiv  = 10
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
  // The TPU on the serial link
  // ---------------------------------------------------------------------------
  logic link_up, link_err, busy, error;

  tpu_uart_top u_dev (
    .clk_i     (clk_core),
    .rst_ni    (rst_n),
    .div_i     (16'(BaudDiv)),
    .rx_i      (ftdi_txd),
    .tx_o      (ftdi_rxd),
    .link_up_o (link_up),
    .link_err_o(link_err),
    .busy_o    (busy),
    .error_o   (error)
  );

  // ---------------------------------------------------------------------------
  // LEDs
  // ---------------------------------------------------------------------------
  logic [23:0] err_hold_q;
  logic [25:0] beat_q;

  `FF(err_hold_q, link_err ? '1 : (err_hold_q != '0 ? err_hold_q - 24'd1 : '0), '0, clk_core, rst_n)
  `FF(beat_q, beat_q + 26'd1, '0, clk_core, rst_n)

  assign led = {beat_q[25:24], pll_locked, err_hold_q != '0, link_up, error, busy, link_up && !busy};

endmodule
