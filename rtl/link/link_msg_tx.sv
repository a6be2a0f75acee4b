// SPDX-License-Identifier: Apache-2.0
// TPU host-interface streams to device -> host messages (docs/link.md),
// written a byte at a time into link_tx's send slots.
//
//   cc beat                          -> 0x81: type, tag, status, data (4)
//   rq read beat (write = 0)         -> 0x82: type, tag, address (8), length (2)
//   rq posted write (ceil(len/16) beats, header on each)
//                                    -> 0x83: type, address (8), n (2), n bytes
//   counters request (link_msg_rx)  -> 0x84: type, the six counters (2 each)
// One whole message at a time, never interleaved. Between messages cc, rq and
// the counters request are served round robin. A message starts (its first
// beat is taken) only while link_tx can take bytes (out_ready_i: a send slot
// is free), so with every slot full the streams see ready low. The message's
// fixed part is held in a 13-byte shift register, a write's current beat in
// a 16-byte register; the write's next beat is taken when this one's bytes
// are all out. A write's data bytes are exactly len bytes, from byte 0 of
// each beat (the packing rule of docs/host_interface.md; keep and last are
// checked by assertions). The counters are sampled when their message starts.
// out_valid_o depends only on flops.
`include "tpu_macros.svh"

module link_msg_tx
  import link_pkg::*;
(
  input  logic          clk_i,
  input  logic          rst_ni,
  // ---- TPU streams ----
  input  logic          cc_valid_i,
  output logic          cc_ready_o,
  input  tlp_pkg::cc_t  cc_i,
  input  logic          rq_valid_i,
  output logic          rq_ready_o,
  input  tlp_pkg::rq_t  rq_i,
  // ---- counters request (link_msg_rx) and the counters ----
  input  logic          cnt_req_valid_i,
  output logic          cnt_req_ready_o,
  input  logic [NumCounters-1:0][15:0] counters_i,
  // ---- message bytes to link_tx ----
  output logic          out_valid_o,
  input  logic          out_ready_i,
  output logic [7:0]    out_data_o,
  output logic          out_last_o     // the message's final byte
);

  typedef enum logic [1:0] {Idle, Hdr, Data, NextBeat} state_e;
  localparam int unsigned SrcCc = 0, SrcRq = 1, SrcCnt = 2;

  state_e           state_q;
  logic [12:0][7:0] msg_q;         // fixed part, byte 0 goes first
  logic [3:0]       hdr_n_q;       // its bytes still to send
  logic             write_q;       // a DATA write: data bytes follow
  logic [15:0][7:0] beat_q;
  logic [3:0]       pos_q;         // byte of beat_q sent next
  logic [8:0]       rem_q;         // data bytes still to send
  logic [1:0]       last_src_q;    // round robin: the source served last
  logic [2:0]       req, grant;
  logic             idle_go, out_take, beat_take;

  // ---- round robin from the source after the last one served ----
  assign req = {cnt_req_valid_i, rq_valid_i, cc_valid_i};
  always_comb begin
    unique case (last_src_q)
      2'(SrcCc): grant = req[SrcRq]  ? 3'b010 : req[SrcCnt] ? 3'b100 : req[SrcCc]  ? 3'b001 : 3'b000;
      2'(SrcRq): grant = req[SrcCnt] ? 3'b100 : req[SrcCc]  ? 3'b001 : req[SrcRq]  ? 3'b010 : 3'b000;
      default:   grant = req[SrcCc]  ? 3'b001 : req[SrcRq]  ? 3'b010 : req[SrcCnt] ? 3'b100 : 3'b000;
    endcase
  end

  assign idle_go         = state_q == Idle && out_ready_i;
  assign cc_ready_o      = idle_go && grant[SrcCc];
  assign cnt_req_ready_o = idle_go && grant[SrcCnt];
  assign rq_ready_o      = (idle_go && grant[SrcRq]) || state_q == NextBeat;
  assign beat_take       = rq_valid_i && rq_ready_o;

  assign out_valid_o = state_q == Hdr || state_q == Data;
  assign out_data_o  = state_q == Hdr ? msg_q[0] : beat_q[pos_q];
  assign out_last_o  = state_q == Hdr ? (hdr_n_q == 4'd1 && !write_q) : rem_q == 9'd1;
  assign out_take    = out_valid_o && out_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q    <= Idle;
      hdr_n_q    <= '0;
      write_q    <= 1'b0;
      pos_q      <= '0;
      rem_q      <= '0;
      last_src_q <= 2'(SrcCnt);
    end else begin
      unique case (state_q)
        Idle: if (idle_go && grant != '0) begin
          state_q <= Hdr;
          write_q <= 1'b0;
          if (grant[SrcCc]) begin
            last_src_q <= 2'(SrcCc);
            hdr_n_q    <= 4'd7;
          end else if (grant[SrcRq]) begin
            last_src_q <= 2'(SrcRq);
            hdr_n_q    <= rq_i.write ? 4'd11 : 4'd12;
            write_q    <= rq_i.write;
            rem_q      <= 9'(rq_i.len);
            pos_q      <= '0;
          end else begin
            last_src_q <= 2'(SrcCnt);
            hdr_n_q    <= 4'd13;
          end
        end
        Hdr: if (out_take) begin
          hdr_n_q <= hdr_n_q - 4'd1;
          if (hdr_n_q == 4'd1) state_q <= write_q ? Data : Idle;
        end
        Data: if (out_take) begin
          rem_q <= rem_q - 9'd1;
          pos_q <= pos_q + 4'd1;
          if (rem_q == 9'd1) state_q <= Idle;
          else if (pos_q == 4'd15) state_q <= NextBeat;
        end
        NextBeat: if (beat_take) begin
          pos_q   <= '0;
          state_q <= Data;
        end
        default: state_q <= Idle;
      endcase
    end
  end

  // The message's fixed part, little endian, loaded as it starts.
  always_ff @(posedge clk_i) begin
    if (state_q == Idle && idle_go && grant != '0) begin
      if (grant[SrcCc])
        msg_q <= {48'd0, cc_i.data, 6'd0, cc_i.status, cc_i.tag, MsgMmioCpl};
      else if (grant[SrcRq] && !rq_i.write)
        msg_q <= {8'd0, 3'd0, rq_i.len, rq_i.addr, rq_i.tag, MsgDmaRead};
      else if (grant[SrcRq])
        msg_q <= {16'd0, 3'd0, rq_i.len, rq_i.addr, MsgDmaWrite};
      else
        msg_q <= {counters_i, MsgCounters};
    end else if (state_q == Hdr && out_take) begin
      msg_q <= msg_q >> 8;
    end
    if (beat_take) beat_q <= rq_i.data;
  end

  // A write's beats carry exactly its len bytes, packed from byte 0.
  function automatic logic [15:0] low_keep(logic [8:0] n);
    return (n >= 9'd16) ? 16'hFFFF : 16'((17'd1 << n) - 17'd1);
  endfunction
  logic [8:0] beat_rem;
  assign beat_rem = state_q == Idle ? 9'(rq_i.len) : rem_q;

  `ASSERT_IF(MsgTxWriteLen, beat_take && state_q == Idle && rq_i.write,
             rq_i.len != '0 && rq_i.len <= 13'd256)
  `ASSERT_IF(MsgTxWriteKeep, beat_take && (rq_i.write || state_q == NextBeat),
             rq_i.keep == low_keep(beat_rem) && rq_i.last == (beat_rem <= 9'd16))
  `ASSERT(MsgTxReadLast, (beat_take && state_q == Idle && !rq_i.write) -> rq_i.last)

endmodule
