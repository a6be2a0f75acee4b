// SPDX-License-Identifier: Apache-2.0
// One RHM or WHM of a mover (mem_rd_mover, mem_wr_mover): the command
// latched at start_i, its state (active until done, or faulted until the
// flush) and its requests, offered to the memory port while it is active.
// The mover says when its last row has moved (finish_i) and when a row or
// acknowledge came back with an error (error_i).
//
// Row i of the command is at host address c + i*b. With b = N (2N for a
// wide row, the WIDE flag) the rows are contiguous and the command is one
// burst request of all its UB rows; otherwise one request per row (two UB
// rows for a wide row). A request offered to the port stays offered, even
// after a fault, until the port takes it; after a fault no new one is
// offered. Every request carries the command's host span [first, last].
// Write: the mover's direction (mem_wr_mover), in every request.
`include "tpu_macros.svh"

module mem_requests #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned PcW    = $clog2(tpu_pkg::Cfg.imem_depth),
  parameter bit          Write  = 1'b0,
  localparam int unsigned UbAddrW = $clog2(UbRows)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 flush_i,
  input  logic                 start_i,
  input  core_pkg::mem_cmd_t   cmd_i,
  input  logic                 stop_i,        // the other side faulted
  input  logic                 finish_i,      // the command's last row moved
  input  logic                 error_i,       // a row or acknowledge with the error bit
  output logic                 active_o,      // started, not done (a faulted command stays until the flush)
  output logic                 faulted_o,
  output logic                 done_o,
  output logic                 fault_o,
  // ---- the command, as latched ----
  output logic [15:0]          count_o,       // UB rows (two per wide row)
  output logic [15:0]          requested_o,   // UB rows of the requests the port took
  output logic [UbAddrW-1:0]   ub_base_o,
  output logic [PcW-1:0]       pc_o,
  // ---- memory port ----
  output logic                 req_valid_o,
  input  logic                 req_ready_i,
  output logic                 req_fire_o,
  output core_pkg::mem_burst_t req_o
);

  localparam int unsigned RowsW = core_pkg::MemRowsW;

  logic        burst_q, wide_q, left_q, offered_q, last_req;
  logic [63:0] stride_q, addr_q, first_q;
  logic [64:0] last_q;
  logic [RowsW-1:0] rows;

  // left_q: rows not yet requested (requested_o != count_o; a command has at
  // least one row). Whether the offered request is the last comes from
  // registers only, so that the port's ready only selects.
  assign done_o  = active_o && !faulted_o && !fault_o && finish_i;
  assign fault_o = !faulted_o && error_i;

  `FF(active_o, (start_i || (active_o && !done_o)) && !flush_i, 1'b0)
  `FF(faulted_o, (faulted_o || fault_o || stop_i) && !flush_i, 1'b0)

  assign req_valid_o = active_o && left_q && (!faulted_o || offered_q);
  assign rows        = burst_q ? RowsW'(count_o) : wide_q ? RowsW'(2) : RowsW'(1);
  assign req_o       = '{write: Write, addr: addr_q, rows: rows, first: first_q, last: last_q};
  assign req_fire_o  = req_valid_o && req_ready_i;
  assign last_req    = requested_o + 16'(rows) == count_o;

  `FF(left_q, start_i || (left_q && !(req_fire_o && last_req)), 1'b0)
  `FF(offered_q, req_valid_o && !req_ready_i && !flush_i, 1'b0)
  `FF(requested_o, start_i ? '0 : requested_o + (req_fire_o ? 16'(rows) : 16'd0), '0)
  `FFNR(addr_q, start_i ? cmd_i.cmd.ins.c : req_fire_o ? addr_q + stride_q : addr_q)

  // UB rows: two per wide row (the controller's range check keeps 2*count
  // within the UB's rows).
  logic start_wide;
  assign start_wide = cmd_i.cmd.ins.flags[tpu_isa_pkg::FlagRhmWide];
  `FFLNR(wide_q, start_wide, start_i)
  `FFLNR(burst_q, core_pkg::mem_burst(cmd_i.cmd.ins.b, start_wide, N), start_i)
  `FFLNR(count_o, start_wide ? cmd_i.cmd.ins.count << 1 : cmd_i.cmd.ins.count, start_i)
  `FFLNR(ub_base_o, cmd_i.cmd.ins.a[UbAddrW-1:0], start_i)
  `FFLNR(stride_q, 64'(cmd_i.cmd.ins.b), start_i)
  `FFLNR(pc_o, cmd_i.cmd.pc[PcW-1:0], start_i)
  `FFLNR(first_q, cmd_i.first, start_i)
  `FFLNR(last_q, cmd_i.last, start_i)

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.cmd.pc, cmd_i.cmd.ins.op, cmd_i.cmd.ins.flags, cmd_i.cmd.ins.a};

endmodule
