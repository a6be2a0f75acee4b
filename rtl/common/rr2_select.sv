// SPDX-License-Identifier: Apache-2.0
// Round-robin choice between two requesters of one request channel whose
// offered request must not change until it is taken: the requester not
// served last wins if it asks, else the other; while the channel offers a
// request that is not taken, the choice stays. The owner says when the
// chosen request is offered (offer_i) and taken (take_i), so that it may
// gate the offer (credits, a block) without this module knowing why.
`include "tpu_macros.svh"

module rr2_select (
  input  logic       clk_i,
  input  logic       rst_ni,
  input  logic       clear_i,  // forget a held choice (a flush)
  input  logic [1:0] valid_i,  // which requesters ask
  input  logic       offer_i,  // the chosen request is offered this cycle
  input  logic       take_i,   // ... and taken
  output logic       sel_o,    // the chosen requester
  output logic       held_o    // a request offered before is still waiting (sel_o is its requester)
);

  logic prio_q, held_q, held_sel_q;

  assign sel_o  = held_q ? held_sel_q : (valid_i[prio_q] ? prio_q : !prio_q);
  assign held_o = held_q;

  `FF(prio_q, take_i ? !sel_o : prio_q, 1'b0)
  `FF(held_q, offer_i && !take_i && !clear_i, 1'b0)
  `FF(held_sel_q, sel_o, 1'b0)

endmodule
