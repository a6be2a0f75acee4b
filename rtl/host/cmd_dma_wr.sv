// SPDX-License-Identifier: Apache-2.0
// The command processor's DMA writes of one beat (a completion entry, an
// MSI): request, data, done.
//
// start_i, while idle, requests req_i in the same cycle; the beat data_i
// follows once the request is taken, and done_o pulses when the engine
// reports the write done. req_i and data_i must hold until then: nothing is
// stored but the state.
`include "tpu_macros.svh"

module cmd_dma_wr (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              clear_i,         // soft reset: forget the write
  // ---- client ----
  input  logic              start_i,         // while idle_o
  input  dma_pkg::wr_req_t  req_i,
  input  dma_pkg::wr_data_t data_i,          // one beat, its last
  output logic              idle_o,
  output logic              done_o,          // the write is done (a dropped write too)
  // ---- DMA write channel ----
  output dma_pkg::wr_m2s_t  wr_o,
  input  dma_pkg::wr_s2m_t  wr_i
);

  typedef enum logic [1:0] {Idle, Req, Data, Done} state_e;

  state_e state_q, state_d;

  assign idle_o = state_q == Idle;
  assign done_o = state_q == Done && wr_i.done_valid;
  assign wr_o   = '{req_valid: (state_q == Idle && start_i) || state_q == Req, req: req_i,
                    data_valid: state_q == Data, data: data_i, done_ready: state_q == Done};

  always_comb begin
    state_d = state_q;
    unique case (state_q)
      Idle:    if (start_i) state_d = wr_i.req_ready ? Data : Req;
      Req:     if (wr_i.req_ready) state_d = Data;
      Data:    if (wr_i.data_ready) state_d = Done;
      Done:    if (done_o) state_d = Idle;
      default: state_d = Idle;
    endcase
    if (clear_i) state_d = Idle;
  end

  `FF(state_q, state_d, Idle)

  logic unused;  // a dropped write is not reported
  assign unused = ^wr_i.done;

endmodule
