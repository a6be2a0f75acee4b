// SPDX-License-Identifier: Apache-2.0
// Command processor: runs the submission ring, fetching the next command
// while the current one runs. Three parts share the work, with one command
// slot (cmd_pkg::slot_t) between them:
//
//   cmd_prefetch  while the slot is empty: the next entry, its window list
//                 and its program, into the slot; straight into the window
//                 table and instruction memory when no command is being
//                 executed (the core then starts on the program's first
//                 word), else into the prefetch buffer
//   cmd_copy      the slot's program from the buffer into instruction
//                 memory, as soon as the core lets it be written (the
//                 running program's HALT decoded), while its units drain
//   cmd_execute   takes the slot's command in order, loads its windows (and
//                 a program too long for the buffer), runs it, writes its
//                 completion entry and MSI
//
// What a prefetch finds (faults, bad entries, the ring's halt) is recorded
// in the slot and reported when its command is taken, so every register,
// interrupt and completion happens in the order it would if commands were
// fetched one after the other. This wrapper holds what the parts share: the
// prefetch buffer (the window list in words [0, MaxWindows), the program
// after it), the window table, and the DMA read channel and instruction
// memory write port, each used by one part at a time. Every DMA access goes
// through a small sequencer (cmd_dma_rd, cmd_dma_wr).
// Entry formats and status codes: docs/host_interface.md.
// The DMA read channel is this block's whenever it asks (the core's bridge
// shares it in tpu_top, its data routed back by request order); the write
// channel is this block's except while the core runs (run_o), when the
// bridge has it.
`include "tpu_macros.svh"

module cmd_proc #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
  parameter int unsigned PfDepth   = tpu_pkg::Cfg.prefetch_depth,  // prefetch buffer, 16-byte words
  localparam int unsigned PcW = $clog2(ImemDepth)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               soft_reset_i,     // forget everything (level, while resetting)
  // ---- registers ----
  input  logic               enable_i,
  input  logic [63:0]        sq_base_i,
  input  logic [3:0]         sq_log2_i,
  input  logic [15:0]        sq_tail_i,        // validated doorbell value
  output logic [15:0]        sq_head_o,
  input  logic [63:0]        cq_base_i,
  input  logic [3:0]         cq_log2_i,
  input  logic [15:0]        cq_head_i,        // validated doorbell value
  output logic [15:0]        cq_tail_o,
  output logic               busy_o,
  output logic               sq_error_o,       // ring halted
  output logic               cmd_done_o,       // a completion entry was written
  output logic               prog_error_o,     // ... with a nonzero status
  output logic               bad_command_o,
  input  logic               irq_pending_i,    // INT_STATUS has an unmasked bit
  input  logic               msi_en_i,
  input  logic [63:0]        msi_addr_i,
  input  logic [31:0]        msi_data_i,
  // ---- DMA (read channel when asking; write channel unless run_o) ----
  output logic               run_o,
  output logic               rd_req_valid_o,
  input  logic               rd_req_ready_i,
  output dma_pkg::rd_req_t   rd_req_o,
  input  logic               rd_data_valid_i,  // this block's transfers only
  output logic               rd_data_ready_o,
  input  dma_pkg::rd_data_t  rd_data_i,
  input  logic               rd_done_valid_i,
  output logic               rd_done_ready_o,
  input  dma_pkg::rd_done_t  rd_done_i,
  output logic               dma_fault_o,      // a DMA read of this block failed (reported now)
  output dma_pkg::err_e      dma_fault_class_o,  // ... its class
  output logic [63:0]        dma_fault_addr_o,   // ... and address
  output logic               wr_req_valid_o,
  input  logic               wr_req_ready_i,
  output dma_pkg::wr_req_t   wr_req_o,
  output logic               wr_data_valid_o,
  input  logic               wr_data_ready_i,
  output dma_pkg::wr_data_t  wr_data_o,
  input  logic               wr_done_valid_i,
  output logic               wr_done_ready_o,
  input  dma_pkg::wr_done_t  wr_done_i,        // not used (a dropped write is not reported)
  // ---- core ----
  output logic               imem_wr_en_o,
  output logic [PcW-1:0]     imem_wr_addr_o,
  output logic [127:0]       imem_wr_data_o,
  input  logic               core_imem_free_i, // imem may be written now
  output logic               core_start_o,
  output logic               core_imem_filling_o,  // the running program is still arriving:
  output logic [PcW:0]       core_imem_words_o,    // ... its first words are in imem
  output logic               core_imem_fault_o,    // ... and the rest never will be
  output logic               core_keep_counters_o,  // with core_start_o: entry flag KEEP_COUNTERS
  input  logic               core_done_i,
  input  logic [3:0]         core_err_i,
  input  logic [31:0]        core_err_pc_i,
  input  logic [31:0]        core_cycles_i,
  // ---- the running command's DMA windows (core_dma_bridge checks them) ----
  output dma_pkg::window_t [dma_pkg::MaxWindows-1:0] windows_o
);

  localparam int unsigned MaxW   = dma_pkg::MaxWindows;
  localparam int unsigned WinW   = cmd_pkg::WinW;
  localparam int unsigned PfW    = $clog2(PfDepth);
  localparam int unsigned WordsW = cmd_pkg::words_w(ImemDepth, PfDepth);  // cmd_prefetch's words_o

  if (PfDepth <= MaxW || (PfDepth & (PfDepth - 1)) != 0) begin : gen_bad_pf
    $error("cmd_proc: PfDepth must be a power of two above dma_pkg::MaxWindows");
  end

  // ---------------------------------------------------------------------------
  // The slot and the parts
  // ---------------------------------------------------------------------------
  logic              slot_valid, release_slot;
  cmd_pkg::slot_t    slot;
  // A direct program started before it had all arrived.
  logic              arriving, st_fault, st_fault_clr;
  logic [WordsW-1:0] arrived;
  // Prefetch (f_*), copy (cp_*), execute (b_*).
  logic              f_busy, f_buf_wr, f_win_clr, f_win_wr, f_imem_wr;
  logic [PfW-1:0]    f_buf_addr;
  logic [WinW-1:0]   f_win_idx;
  dma_pkg::window_t  f_win;
  dma_pkg::rd_m2s_t  f_rd;
  logic              cp_start, cp_active, cp_buf_rd, cp_imem_wr, cp_done, cp_run;
  logic [PfW-1:0]    cp_buf_addr;
  logic [PcW-1:0]    cp_imem_addr;
  logic [PcW:0]      cp_words;
  logic              b_idle, b_win_clr, b_win_wr, wc_active, b_imem_wr;
  logic [WinW-1:0]   b_win_idx;
  dma_pkg::window_t  b_win;
  logic [PfW-1:0]    wc_addr;
  logic [PcW-1:0]    b_imem_addr;
  dma_pkg::rd_m2s_t  b_rd;
  dma_pkg::wr_m2s_t  b_wr;
  logic [127:0]      pf_rd_data;

  // The DMA channels as bundles for the parts.
  dma_pkg::rd_s2m_t rd;
  dma_pkg::wr_s2m_t wr;
  assign rd = '{req_ready: rd_req_ready_i, data_valid: rd_data_valid_i, data: rd_data_i,
                done_valid: rd_done_valid_i, done: rd_done_i};
  assign wr = '{req_ready: wr_req_ready_i, data_ready: wr_data_ready_i,
                done_valid: wr_done_valid_i, done: wr_done_i};

  cmd_prefetch #(
    .ImemDepth(ImemDepth),
    .PfDepth  (PfDepth)
  ) u_prefetch (
    .clk_i,
    .rst_ni,
    .soft_reset_i,
    .enable_i,
    .sq_base_i,
    .sq_log2_i,
    .sq_tail_i,
    .sq_head_o,
    .sq_error_i     (sq_error_o),
    .exec_idle_i    (b_idle),
    .run_i          (run_o),
    .slot_valid_o   (slot_valid),
    .slot_o         (slot),
    .release_i      (release_slot),
    .arriving_o     (arriving),
    .words_o        (arrived),
    .fault_o        (st_fault),
    .fault_clr_i    (st_fault_clr),
    .busy_o         (f_busy),
    .buf_wr_o       (f_buf_wr),
    .buf_wr_addr_o  (f_buf_addr),
    .win_clr_o      (f_win_clr),
    .win_wr_o       (f_win_wr),
    .win_idx_o      (f_win_idx),
    .win_o          (f_win),
    .imem_wr_o      (f_imem_wr),
    .rd_o           (f_rd),
    .rd_i           (rd)
  );

  cmd_copy #(
    .ImemDepth(ImemDepth),
    .PfDepth  (PfDepth)
  ) u_copy (
    .clk_i,
    .rst_ni,
    .soft_reset_i,
    .slot_valid_i    (slot_valid),
    .slot_i          (slot),
    .release_i       (release_slot),
    .core_imem_free_i,
    .hold_i          (wc_active),
    .start_o         (cp_start),
    .active_o        (cp_active),
    .buf_rd_o        (cp_buf_rd),
    .buf_rd_addr_o   (cp_buf_addr),
    .imem_wr_o       (cp_imem_wr),
    .imem_wr_addr_o  (cp_imem_addr),
    .done_o          (cp_done),
    .words_o         (cp_words)
  );

  cmd_execute #(
    .ImemDepth(ImemDepth),
    .PfDepth  (PfDepth)
  ) u_execute (
    .clk_i,
    .rst_ni,
    .soft_reset_i,
    .enable_i,
    .cq_base_i,
    .cq_log2_i,
    .cq_head_i,
    .cq_tail_o,
    .sq_error_o,
    .cmd_done_o,
    .prog_error_o,
    .bad_command_o,
    .dma_fault_o,
    .dma_fault_class_o,
    .dma_fault_addr_o,
    .irq_pending_i,
    .msi_en_i,
    .msi_addr_i,
    .msi_data_i,
    .idle_o          (b_idle),
    .run_o,
    .slot_valid_i    (slot_valid),
    .slot_i          (slot),
    .release_o       (release_slot),
    .arriving_i      (arriving),
    .arrived_i       (arrived),
    .fault_i         (st_fault),
    .fault_clr_o     (st_fault_clr),
    .copy_started_i  (cp_active || cp_imem_wr || cp_done),
    .copy_done_i     (cp_done),
    .copy_run_o      (cp_run),
    .win_clr_o       (b_win_clr),
    .win_wr_o        (b_win_wr),
    .win_idx_o       (b_win_idx),
    .win_o           (b_win),
    .buf_rd_o        (wc_active),
    .buf_rd_addr_o   (wc_addr),
    .buf_rd_data_i   (pf_rd_data),
    .imem_wr_o       (b_imem_wr),
    .imem_wr_addr_o  (b_imem_addr),
    .core_start_o,
    .core_keep_counters_o,
    .core_done_i,
    .core_err_i,
    .core_err_pc_i,
    .core_cycles_i,
    .rd_o            (b_rd),
    .rd_i            (rd),
    .wr_o            (b_wr),
    .wr_i            (wr)
  );

  // ---------------------------------------------------------------------------
  // The prefetch buffer: the prefetch writes window lists and programs as
  // they arrive; the window copy reads it, or else the program copy (which
  // waits meanwhile).
  // ---------------------------------------------------------------------------
  ram_1r1w #(
    .Width(128),
    .Depth(PfDepth)
  ) u_buf (
    .clk_i,
    .wr_en_i  (f_buf_wr),
    .wr_addr_i(f_buf_addr),
    .wr_data_i(rd_data_i.data),
    .rd_en_i  (cp_buf_rd || wc_active),
    .rd_addr_i(wc_active ? wc_addr : cp_buf_addr),
    .rd_data_o(pf_rd_data)
  );

  // ---------------------------------------------------------------------------
  // The window table
  // ---------------------------------------------------------------------------
  // It changes only where a window is written or the table cleared, so it is
  // not copied in every cycle (a model's work). The execute side clears it
  // for a command whose windows are not in place and copies a window list
  // into it; the prefetch writes its windows straight into it (no command is
  // being executed then), after the execute side's change, and its clear
  // drops that change; a soft reset empties it.
  dma_pkg::window_t [MaxW-1:0] win_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      win_q <= '0;
    end else if (soft_reset_i) begin
      win_q <= '0;
    end else begin
      if (b_win_clr || f_win_clr) win_q <= '0;
      else if (b_win_wr)          win_q[b_win_idx] <= b_win;
      if (f_win_wr)               win_q[f_win_idx] <= f_win;
    end
  end
  assign windows_o = win_q;

  // ---------------------------------------------------------------------------
  // Outputs
  // ---------------------------------------------------------------------------
  // The prefetch and a long program's fetch never read at the same time (the
  // prefetch waits for an empty slot; the long fetch runs while the slot holds
  // its command).
  assign rd_req_valid_o  = f_rd.req_valid || b_rd.req_valid;
  assign rd_req_o        = f_rd.req_valid ? f_rd.req : b_rd.req;
  assign rd_data_ready_o = f_rd.data_ready || b_rd.data_ready;
  assign rd_done_ready_o = f_rd.done_ready || b_rd.done_ready;
  assign wr_req_valid_o  = b_wr.req_valid;
  assign wr_req_o        = b_wr.req;
  assign wr_data_valid_o = b_wr.data_valid;
  assign wr_data_o       = b_wr.data;
  assign wr_done_ready_o = b_wr.done_ready;

  // Instruction memory: the copy from the buffer, or the program's words as
  // they arrive (direct, or a long program's).
  assign imem_wr_en_o   = cp_imem_wr || b_imem_wr || f_imem_wr;
  assign imem_wr_addr_o = cp_imem_wr ? cp_imem_addr : f_imem_wr ? arrived[PcW-1:0] : b_imem_addr;
  assign imem_wr_data_o = cp_imem_wr ? pf_rd_data : rd_data_i.data;

  // The running program's words while it arrives or is copied, and after a
  // fault the ones that did arrive (the core's fetch waits at the next, or
  // ends there).
  assign core_imem_filling_o = arriving || st_fault || cp_run;
  assign core_imem_words_o   = cp_run ? cp_words : (PcW+1)'(arrived);
  assign core_imem_fault_o   = st_fault;

  assign busy_o = f_busy || !b_idle || slot_valid;

  // ---------------------------------------------------------------------------
  // Assertions and cover points
  // ---------------------------------------------------------------------------
  // One reader of the DMA read channel at a time; instruction memory written
  // by one source at a time, and by the copy only while the core allows it.
  `ASSERT(OneReader, !(f_rd.req_valid && b_rd.req_valid) &&
                     !((f_rd.data_ready || f_rd.done_ready) && (b_rd.data_ready || b_rd.done_ready)))
  `ASSERT(OneImemWriter, 32'(cp_imem_wr) + 32'(b_imem_wr) + 32'(f_imem_wr) <= 1)
  `ASSERT(DirectOnlyWhileIdle, !(f_win_wr || f_win_clr) || (b_idle && !run_o))
  `ASSERT(DirectProgramWhileIdleOrArriving, !f_imem_wr || (b_idle && !run_o) || arriving)
  `ASSERT(CopyWhileImemFree, !cp_imem_wr || core_imem_free_i || cp_run || soft_reset_i)
  `ASSERT(StartAfterCopyStarted, !core_start_o || slot.too_long || slot.direct || cp_done || cp_active ||
                                 cp_imem_wr)
  `ASSERT(CopyRunsOnlyItsSlot, !cp_run || slot_valid)
  // A direct program runs while it arrives; a program copied in while the
  // running one's HALT waits, and run while it is still copied; the window
  // copy pausing the program's.
  `COVER(RunsWhileArriving,   run_o && arriving && f_imem_wr)
  `COVER(CopyWhileDraining,   cp_start && run_o)
  `COVER(RunsWhileCopied,     cp_run && cp_imem_wr && run_o)
  `COVER(WindowsPauseTheCopy, cp_active && wc_active)

endmodule
