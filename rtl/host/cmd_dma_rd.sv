// SPDX-License-Identifier: Apache-2.0
// The command processor's DMA reads: request, data beats, done, for one read
// or two requested back to back (a window list and its program share one
// host round trip that way).
//
// start_i, while idle, requests first_i in the same cycle (and second_i
// right after it, with chain_i); both descriptors must hold until they are
// taken. Once every request is taken, each read's data beats are accepted
// (beat_o: rd_i.data is the client's) until its last, then its status
// (done_o: rd_i.done is the client's), the first read's before the second's.
// The DMA engine delivers both in request order. Nothing is stored but the
// state: the client keeps the descriptors and takes the data as it passes.
`include "tpu_macros.svh"

module cmd_dma_rd (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              clear_i,         // soft reset: forget the reads
  // ---- client ----
  input  logic              start_i,         // while idle_o
  input  logic              chain_i,         // with start_i: then second_i
  input  dma_pkg::rd_req_t  first_i,
  input  dma_pkg::rd_req_t  second_i,
  output logic              idle_o,
  output logic              beat_o,          // a data beat (rd_i.data) is taken
  output logic              done_o,          // a read's status (rd_i.done) is taken
  // ---- DMA read channel ----
  output dma_pkg::rd_m2s_t  rd_o,
  input  dma_pkg::rd_s2m_t  rd_i
);

  typedef enum logic [2:0] {Idle, ReqFirst, ReqSecond, Data, Done} state_e;

  state_e state_q, state_d;
  logic   chain_q, chain_d;    // the second read is requested or still to come
  logic   second_q, second_d;  // the data and done are the second read's

  assign idle_o = state_q == Idle;
  assign beat_o = state_q == Data && rd_i.data_valid;
  assign done_o = state_q == Done && rd_i.done_valid;
  assign rd_o   = '{req_valid: (state_q == Idle && start_i) || state_q == ReqFirst ||
                               state_q == ReqSecond,
                    req: state_q == ReqSecond ? second_i : first_i,
                    data_ready: state_q == Data,
                    done_ready: state_q == Done};

  always_comb begin
    state_d  = state_q;
    chain_d  = chain_q;
    second_d = second_q;
    unique case (state_q)
      Idle: begin
        if (start_i) begin
          chain_d   = chain_i;
          second_d  = 1'b0;
          state_d   = !rd_i.req_ready ? ReqFirst : chain_i ? ReqSecond : Data;
        end
      end
      ReqFirst:  if (rd_i.req_ready) state_d = chain_q ? ReqSecond : Data;
      ReqSecond: if (rd_i.req_ready) state_d = Data;
      Data:      if (beat_o && rd_i.data.last) state_d = Done;
      Done: begin
        if (done_o) begin
          state_d  = (chain_q && !second_q) ? Data : Idle;
          second_d = 1'b1;
        end
      end
      default: state_d = Idle;
    endcase
    if (clear_i) state_d = Idle;
  end

  `FF(state_q, state_d, Idle)
  `FF(chain_q, chain_d, 1'b0)
  `FF(second_q, second_d, 1'b0)

  logic unused;  // the client's
  assign unused = ^{rd_i.data.data, rd_i.data.keep, rd_i.done};

endmodule
