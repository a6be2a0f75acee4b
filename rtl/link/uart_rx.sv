// SPDX-License-Identifier: Apache-2.0
// UART receiver, 8N1, least significant bit first, idle high.
//
// The asynchronous rx pin passes a two-flop synchronizer. A low level in idle
// starts a byte; the start bit is checked again half a bit time later (a
// shorter glitch is ignored), then each data bit and the stop bit are sampled
// one bit time (div_i cycles) apart, i.e. in the middle of each bit. The
// synchronizer delays the edge and every sample alike, so it costs no margin.
// A byte with a high stop bit leaves on data_o with a one-cycle valid_o pulse
// (no ready: bytes come at most every 10 * div_i cycles and the consumer
// takes every one). A low stop bit drops the byte and pulses frame_err_o;
// the receiver then waits for the line to go high (a break is one error).
// div_i (clock cycles per bit, at least 4) may change only while the line is idle.
`include "tpu_macros.svh"

module uart_rx (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [15:0] div_i,        // clock cycles per bit, >= 4
  input  logic        rx_i,         // serial in, asynchronous
  output logic        valid_o,      // one cycle per good byte
  output logic [7:0]  data_o,
  output logic        frame_err_o   // one cycle per byte with a low stop bit
);

  typedef enum logic [2:0] {
    Idle, Start, Data, Stop, WaitHigh
  } state_e;

  state_e      state_q, state_d;
  logic        sync1_q, rx_q;
  logic [15:0] cnt_q, cnt_d;
  logic [2:0]  bit_q, bit_d;
  logic [7:0]  shift_q, shift_d;
  logic        valid_d, err_d, tick;

  // Two flops on the pin; reset to idle (high) so reset is not a start bit.
  `FF(sync1_q, rx_i, 1'b1)
  `FF(rx_q, sync1_q, 1'b1)

  assign tick = cnt_q == '0;  // the sample point of the current bit

  always_comb begin
    state_d = state_q;
    cnt_d   = tick ? '0 : cnt_q - 16'd1;
    bit_d   = bit_q;
    shift_d = shift_q;
    valid_d = 1'b0;
    err_d   = 1'b0;
    unique case (state_q)
      Idle: if (!rx_q) begin
        state_d = Start;
        cnt_d   = (div_i >> 1) - 16'd1;  // to the middle of the start bit
      end
      Start: if (tick) begin
        state_d = rx_q ? Idle : Data;    // high again: a glitch
        cnt_d   = div_i - 16'd1;
        bit_d   = '0;
      end
      Data: if (tick) begin
        shift_d = {rx_q, shift_q[7:1]};
        cnt_d   = div_i - 16'd1;
        bit_d   = bit_q + 3'd1;
        if (bit_q == 3'd7) state_d = Stop;
      end
      Stop: if (tick) begin
        valid_d = rx_q;
        err_d   = !rx_q;
        state_d = rx_q ? Idle : WaitHigh;
      end
      WaitHigh: if (rx_q) state_d = Idle;
      default: state_d = Idle;
    endcase
  end

  `FF(state_q, state_d, Idle)
  `FF(cnt_q, cnt_d, '0)
  `FF(bit_q, bit_d, '0)
  `FF(shift_q, shift_d, '0)
  `FF(valid_o, valid_d, 1'b0)
  `FF(frame_err_o, err_d, 1'b0)

  assign data_o = shift_q;

endmodule
