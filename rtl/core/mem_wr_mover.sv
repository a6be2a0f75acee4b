// SPDX-License-Identifier: Apache-2.0
// The memory unit's write side: sends one WHM (UB -> host) at a time, and
// starts the next while the previous one waits for its acknowledges.
//
// Row i of the command is UB row a+i and goes to host address c + i*b (a
// wide row, the WIDE flag: 2N bytes from UB rows a+2i, a+2i+1);
// mem_requests makes the requests. The rows are read from the UB through a
// mem_rd_stream and sent in order, only for requests already accepted.
//
// A command is sent the cycle after its last row has been asked for from the
// UB; busy_o falls then and the next WHM may start: its rows follow the last
// ones through the same stream, and the last rows take a while to reach the
// host anyway (the DMA's packets are store-and-forward), so consecutive
// WHMs keep the port busy every cycle. At most two commands are started
// and not done (pending_o): the one sending and the one before it. The port
// acknowledges each request once, in request order, so an acknowledge
// belongs to the older command. done_o pulses, in order, when a sent
// command's every request is acknowledged. An acknowledge with the error
// bit pulses fault_o with its command's pc; after a fault here or stop_i (a
// fault of the read side) the mover requests nothing more, finishes sending
// the rows of requests already accepted (the port expects them), and waits
// for the flush.
//
// The vector unit's command in progress may still be writing the rows
// (vpu_fill_*): a row it has yet to write waits until it is written.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module mem_wr_mover #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW    = $clog2(tpu_pkg::Cfg.imem_depth),
  localparam int unsigned UbAddrW = $clog2(UbRows),
  localparam type mem_req_t = `CORE_MEM_REQ_T(N),
  localparam type mem_rsp_t = `CORE_MEM_RSP_T(N)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  input  logic                       stop_i,      // the other side faulted
  // ---- command ----
  input  logic                       start_i,
  input  core_pkg::mem_cmd_t         cmd_i,       // a WHM and its host span
  output logic                       busy_o,      // sending a command: start_i waits
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic [1:0]                 pending_o,   // commands started and not done
  output logic                       waiting_o,   // requests not yet acknowledged
  // ---- memory port (writes; its read channel stays idle) ----
  output mem_req_t                   mem_req_o,
  input  mem_rsp_t                   mem_rsp_i,
  // ---- unified buffer read port ----
  output logic                       ub_rd_req_valid_o,
  input  logic                       ub_rd_req_ready_i,
  output logic [UbAddrW-1:0]         ub_rd_req_addr_o,
  input  logic                       ub_rd_rsp_valid_i,
  input  logic [N-1:0][7:0]          ub_rd_rsp_data_i,
  // ---- the UB rows the vector unit's command in progress writes ----
  input  logic                       vpu_fill_i,
  input  logic [UbAddrW-1:0]         vpu_fill_next_i,
  input  logic [UbAddrW:0]           vpu_fill_end_i
);

  logic                sending, sent, faulted;
  logic [15:0]         count, requested;
  logic [15:0]         asked_q;     // UB rows asked for
  logic [UbAddrW-1:0]  unused_base; // the next row's address is kept here (ub_addr)
  logic [PcW-1:0]      unused_pc;   // each entry keeps its own
  logic                req_fire, req_valid, wr_valid, wr_ready, wr_ack_valid;
  logic                ub_addr_valid, ub_addr_ready, ub_addr_fire, unused_user, unwritten, last_asked_q;
  logic [N-1:0][7:0]   wr_data;
  core_pkg::mem_burst_t req;

  assign busy_o       = sending;
  assign mem_req_o    = '{req_valid: req_valid, req: req, rd_ready: 1'b0, wr_valid: wr_valid,
                          wr_data: wr_data};
  assign wr_ready     = mem_rsp_i.wr_ready;
  assign wr_ack_valid = mem_rsp_i.wr_ack_valid;

  mem_requests #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW),
    .Write (1'b1)
  ) u_req (
    .clk_i,
    .rst_ni,
    .flush_i,
    .start_i,
    .cmd_i,
    .stop_i,
    .finish_i   (last_asked_q),
    .error_i    (wr_ack_valid && mem_rsp_i.wr_ack_err),
    .active_o   (sending),
    .faulted_o  (faulted),
    .done_o     (sent),
    .fault_o,
    .count_o    (count),
    .requested_o(requested),
    .ub_base_o  (unused_base),
    .pc_o       (unused_pc),
    .req_valid_o(req_valid),
    .req_ready_i(mem_rsp_i.req_ready),
    .req_fire_o (req_fire),
    .req_o      (req)
  );

  // Write data: UB row by row, only for rows already requested. A WHM may
  // start while the vector unit still writes its rows (the scoreboard lets
  // it follow that command, docs/controller.md); a row the vector unit has
  // yet to write is asked for once it has been written (a write lands at the
  // edge that grants it, and the count follows at that edge).
  // The next row's address is a register of its own (rather than the base
  // plus asked_q), which keeps an adder off the path through the check.
  logic [UbAddrW-1:0] ub_addr;
  `FF(ub_addr, start_i ? cmd_i.cmd.ins.a[UbAddrW-1:0] : ub_addr + UbAddrW'(ub_addr_fire), '0)
  // (Compared only for a row to ask for: a simulator's model then does not
  // redo it at every row the vector unit writes.)
  always_comb begin
    ub_addr_valid = sending && (asked_q != requested);
    unwritten     = 1'b0;
    if (ub_addr_valid && vpu_fill_i)
      unwritten = !(ub_addr < vpu_fill_next_i) && {1'b0, ub_addr} < vpu_fill_end_i;
    ub_addr_valid = ub_addr_valid && !unwritten;
  end
  assign ub_addr_fire  = ub_addr_valid && ub_addr_ready;

  mem_rd_stream #(
    .AddrW(UbAddrW),
    .DataW(N * 8),
    .UserW(1)
  ) u_ub_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(ub_addr_valid),
    .addr_ready_o(ub_addr_ready),
    .addr_i      (ub_addr),
    .addr_user_i (1'b0),
    .req_valid_o (ub_rd_req_valid_o),
    .req_ready_i (ub_rd_req_ready_i),
    .req_addr_o  (ub_rd_req_addr_o),
    .rsp_valid_i (ub_rd_rsp_valid_i),
    .rsp_data_i  (ub_rd_rsp_data_i),
    .data_valid_o(wr_valid),
    .data_ready_i(wr_ready),
    .data_o      (wr_data),
    .data_user_o (unused_user)
  );

  `FF(asked_q, start_i ? '0 : asked_q + 16'(ub_addr_fire), '0)
  // The command's last row was asked for last cycle: it is sent (a register
  // between the row's checks and the command's end).
  `FF(last_asked_q, ub_addr_fire && (asked_q + 16'd1 == count) && !flush_i, 1'b0)

  // ---- commands started and not done, oldest first ----
  // Entry 0 is the oldest; the last entry is the one sending, if any (so
  // entry 0 has been sent when there are two, or when nothing is sending).
  // owed: requests the port took and has not acknowledged.
  logic [1:0]           n_q, n_d;
  logic [1:0][PcW-1:0]  pc_q, pc_d;
  logic [1:0][15:0]     owed_q, owed_d;
  logic                 tail, ack_to_1, head_sent, head_done, head_owes_none;
  logic [1:0]           inc, dec;

  // Which entry a request (the sending one) and an acknowledge (the oldest
  // that owes one) count against. After a fault entry 0 stays (it never
  // finishes) and owes nothing more; the acknowledges still due are entry 1's.
  assign tail     = n_q == 2'd2;
  assign ack_to_1 = tail && owed_q[0] == '0;
  always_comb begin
    for (int e = 0; e < 2; e++) begin
      inc[e] = req_fire && tail == 1'(e);
      dec[e] = wr_ack_valid && ack_to_1 == 1'(e);
    end
  end

  // The acknowledge only selects among values compared from registers, so
  // that no carry chain lies between the port and the done.
  assign head_sent      = tail || !sending || sent;
  assign head_owes_none = (inc[0] == dec[0]) ? owed_q[0] == '0 : dec[0] && owed_q[0] == 16'd1;
  assign head_done      = n_q != '0 && head_sent && head_owes_none && !faulted && !fault_o;

  assign done_o     = head_done;
  assign fault_pc_o = pc_q[0];
  assign pending_o  = n_q;
  assign waiting_o  = (n_q != '0 && owed_q[0] != '0) || (n_q == 2'd2 && owed_q[1] != '0);

  always_comb begin
    n_d    = n_q;
    pc_d   = pc_q;
    owed_d = owed_q;
    for (int e = 0; e < 2; e++) begin
      if (inc[e] && !dec[e]) owed_d[e] = owed_q[e] + 16'd1;
      if (dec[e] && !inc[e]) owed_d[e] = owed_q[e] - 16'd1;
    end
    if (head_done) begin
      n_d       = n_q - 2'd1;
      pc_d[0]   = pc_q[1];
      owed_d[0] = owed_d[1];
    end
    if (start_i) begin
      pc_d[n_d[0]]   = cmd_i.cmd.pc[PcW-1:0];
      owed_d[n_d[0]] = '0;
      n_d            = n_d + 2'd1;
    end
    if (flush_i) n_d = '0;
  end

  `FF(n_q, n_d, '0)
  `FF(owed_q, owed_d, '0)
  `FFNR(pc_q, pc_d)

  `ASSERT_IF(WrMoverTakesWhm, start_i,
             cmd_i.cmd.ins.op == tpu_isa_pkg::OpWhm && !sending && n_q != 2'd2)
  `ASSERT_IF(AckHasRequest, wr_ack_valid, owed_q[ack_to_1] != '0)
  `ASSERT(AckBeforeAFaultIsTheOldest, wr_ack_valid && !faulted -> owed_q[0] != '0)
  `ASSERT(RequestsOnlyWhileSending, req_fire -> sending)

  logic unused_rd;
  assign unused_rd = ^{mem_rsp_i.rd_valid, mem_rsp_i.rd_data, mem_rsp_i.rd_err};

endmodule
