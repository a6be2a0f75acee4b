// SPDX-License-Identifier: Apache-2.0
// The compute core's memory port (tpu_core's mem_*) as two packed structs,
// for rows of n bytes: what a requester drives (_REQ_T) and what the port
// answers (_RSP_T). A block with the port declares its types from these,
// e.g. `localparam type mem_req_t = `CORE_MEM_REQ_T(N)`, so every unit,
// mover, the arbiter and the DMA bridge carry it as two ports.
//
// Three channels, in request order:
//   request   req_valid / req_ready, req: a burst (core_pkg::mem_burst_t)
//   read data rd_valid / rd_ready, rd_data: one row a beat; rd_err: the row
//             could not be read (the command faults)
//   write     wr_valid / wr_ready, wr_data: one row a beat; wr_ack_valid:
//             one acknowledge per write request (no ready), wr_ack_err: it
//             failed
// A requester that only reads leaves the write channel idle and ignores its
// answers, and the other way round.
`ifndef CORE_MEM_PORT_SVH
`define CORE_MEM_PORT_SVH

`define CORE_MEM_REQ_T(n) struct packed { \
    logic                 req_valid;      \
    core_pkg::mem_burst_t req;            \
    logic                 rd_ready;       \
    logic                 wr_valid;       \
    logic [(n)-1:0][7:0]  wr_data;        \
  }

`define CORE_MEM_RSP_T(n) struct packed { \
    logic                req_ready;       \
    logic                rd_valid;        \
    logic [(n)-1:0][7:0] rd_data;         \
    logic                rd_err;          \
    logic                wr_ready;        \
    logic                wr_ack_valid;    \
    logic                wr_ack_err;      \
  }

`endif
