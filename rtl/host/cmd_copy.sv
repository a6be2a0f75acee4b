// SPDX-License-Identifier: Apache-2.0
// Program copy: once the command slot holds a program in the prefetch
// buffer and the core lets its instruction memory be written (idle, or the
// running program's HALT decoded: core_imem_free_i), copies the program
// from the buffer into instruction memory, one instruction a cycle, usually
// while the previous command's last units drain.
//
// The buffer's read port is synchronous: word i is read in one cycle and
// written to instruction memory in the next (imem_wr_o). The copy pauses
// while the window copy has the port (hold_i). done_o holds from the cycle
// the last word is written until the slot is released; the slot's command
// may start before (cmd_execute), its core then fetches only the words_o
// copied so far.
`include "tpu_macros.svh"

module cmd_copy #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
  parameter int unsigned PfDepth   = tpu_pkg::Cfg.prefetch_depth,  // prefetch buffer, 16-byte words
  localparam int unsigned PcW  = $clog2(ImemDepth),
  localparam int unsigned PfW  = $clog2(PfDepth)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               soft_reset_i,     // forget everything (level, while resetting)
  // ---- the slot ----
  input  logic               slot_valid_i,
  input  cmd_pkg::slot_t     slot_i,
  input  logic               release_i,
  input  logic               core_imem_free_i, // imem may be written now
  input  logic               hold_i,           // the window copy has the buffer's read port
  // ---- the copy ----
  output logic               start_o,          // it starts
  output logic               active_o,         // reading the buffer
  output logic               buf_rd_o,
  output logic [PfW-1:0]     buf_rd_addr_o,
  output logic               imem_wr_o,        // the word read last cycle, into imem
  output logic [PcW-1:0]     imem_wr_addr_o,
  output logic               done_o,           // every word is in imem (until released)
  output logic [PcW:0]       words_o           // words written so far
);

  localparam int unsigned MaxW = dma_pkg::MaxWindows;  // the program follows the window list

  logic           active_q, active_d, rd_q, rd_d, done_q, done_d, last;
  logic [PfW-1:0] idx_q, idx_d, wr_idx_q, wr_idx_d;
  logic [PcW:0]   words_q, words_d;

  // Only a command that can run has a program to copy, and only one whose
  // program is in the buffer.
  assign start_o = slot_valid_i && !(slot_i.efault || slot_i.bad || slot_i.win_bad || slot_i.fault) &&
                   !slot_i.too_long && !slot_i.direct && !active_q && !rd_q && !done_q &&
                   core_imem_free_i && !soft_reset_i;
  assign last    = 32'(idx_q) + 32'd1 == slot_i.entry.len;

  always_comb begin
    active_d = active_q;
    idx_d    = idx_q;
    rd_d     = 1'b0;
    wr_idx_d = wr_idx_q;
    done_d   = done_q;
    words_d  = words_q + (PcW+1)'(rd_q);
    if (start_o) begin
      active_d = 1'b1;
      idx_d    = '0;
      words_d  = '0;
    end else if (active_q && !hold_i) begin
      rd_d     = 1'b1;
      wr_idx_d = idx_q;
      idx_d    = idx_q + 1'b1;
      if (last) active_d = 1'b0;
    end
    // The last word lands in instruction memory this cycle.
    if (rd_q && !active_q) done_d = 1'b1;
  end

  `FF(active_q, active_d && !soft_reset_i, 1'b0)
  `FF(rd_q, rd_d && !soft_reset_i, 1'b0)
  `FF(done_q, done_d && !release_i && !soft_reset_i, 1'b0)
  `FF(idx_q, idx_d, '0)
  `FF(wr_idx_q, wr_idx_d, '0)
  `FF(words_q, words_d, '0)

  assign active_o       = active_q;
  assign buf_rd_o       = active_q;
  assign buf_rd_addr_o  = PfW'(MaxW) + idx_q;
  assign imem_wr_o      = rd_q;
  assign imem_wr_addr_o = PcW'(wr_idx_q);
  assign done_o         = done_q;
  assign words_o        = words_q;

  logic unused_slot;
  assign unused_slot = ^{slot_i.entry.op, slot_i.entry.flags, slot_i.entry.id, slot_i.entry.addr,
                         slot_i.entry.win_addr, slot_i.entry.win_count, slot_i.entry.reserved,
                         slot_i.head, slot_i.fclass, slot_i.faddr};

endmodule
