// SPDX-License-Identifier: Apache-2.0
// UART transmitter, 8N1, least significant bit first, idle high.
//
// Takes a byte (valid/ready) and sends start bit, 8 data bits and stop bit,
// div_i clock cycles each (at least 4). ready_o rises in the last cycle of
// the stop bit, so bytes offered back to back leave with no idle time
// between them (exactly 10 * div_i cycles a byte). tx_o comes from a flop.
// ready_o depends only on flops.
// div_i may change only while idle.
`include "tpu_macros.svh"

module uart_tx (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [15:0] div_i,    // clock cycles per bit, >= 4
  input  logic        valid_i,
  output logic        ready_o,
  input  logic [7:0]  data_i,
  output logic        tx_o      // serial out
);

  logic        busy_q, busy_d, tx_q, tx_d, take;
  logic [15:0] cnt_q, cnt_d;
  logic [3:0]  left_q, left_d;   // bits still to send after the current one
  logic [8:0]  shift_q, shift_d; // data bits, then the stop bit

  assign ready_o = !busy_q || (cnt_q == '0 && left_q == '0);
  assign take    = valid_i && ready_o;
  assign tx_o    = tx_q;

  always_comb begin
    busy_d  = busy_q;
    tx_d    = tx_q;
    cnt_d   = cnt_q;
    left_d  = left_q;
    shift_d = shift_q;
    if (busy_q) begin
      cnt_d = cnt_q - 16'd1;
      if (cnt_q == '0) begin
        if (left_q != '0) begin  // next bit
          tx_d    = shift_q[0];
          shift_d = {1'b1, shift_q[8:1]};
          left_d  = left_q - 4'd1;
          cnt_d   = div_i - 16'd1;
        end else begin           // stop bit done
          busy_d = 1'b0;
          cnt_d  = '0;
        end
      end
    end
    if (take) begin              // start bit now
      busy_d  = 1'b1;
      tx_d    = 1'b0;
      shift_d = {1'b1, data_i};
      left_d  = 4'd9;
      cnt_d   = div_i - 16'd1;
    end
  end

  `FF(busy_q, busy_d, 1'b0)
  `FF(tx_q, tx_d, 1'b1)
  `FF(cnt_q, cnt_d, '0)
  `FF(left_q, left_d, '0)
  `FF(shift_q, shift_d, '1)

endmodule
