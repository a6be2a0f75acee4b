// SPDX-License-Identifier: Apache-2.0
// Command execute: takes the slot's command when no command is running (in
// order: the previous command's completion and MSI have been written) and
// the device is enabled:
//   - an unreadable entry halts the ring (no completion, sq_error_o); a bad
//     entry or window list or a fetch fault completes at once with
//     BAD_COMMAND / FETCH_FAULT and no cycles,
//   - otherwise, unless its windows and program went straight to the core
//     (a direct command, cmd_prefetch), the window list is copied from the
//     prefetch buffer into the window table (core_dma_bridge checks the
//     core's DMA against it; one window a cycle, the program's copy pauses
//     meanwhile) and a program too long for the buffer is read into
//     instruction memory now (fault: FETCH_FAULT); then the core starts at
//     instruction 0, and the slot is released (the next entry's prefetch may
//     start) at once or, when the program's copy is still going on, once it
//     ends (cmd_copy); RHM, WHM and RW go through the DMA engine meanwhile,
//   - when the core is done (and a program started while it arrived has
//     arrived or failed: FETCH_FAULT at its first missing instruction):
//     wait for room in the completion ring, write the 16-byte completion
//     entry, then send the MSI if enabled and not masked.
// The DMA write channel is this block's except while the core runs (run_o).
`include "tpu_macros.svh"

module cmd_execute #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
  parameter int unsigned PfDepth   = tpu_pkg::Cfg.prefetch_depth,  // prefetch buffer, 16-byte words
  localparam int unsigned PcW    = $clog2(ImemDepth),
  localparam int unsigned PfW    = $clog2(PfDepth),
  localparam int unsigned WinW   = cmd_pkg::WinW,
  localparam int unsigned WordsW = cmd_pkg::words_w(ImemDepth, PfDepth)  // cmd_prefetch's words_o
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               soft_reset_i,     // forget everything (level, while resetting)
  // ---- registers ----
  input  logic               enable_i,
  input  logic [63:0]        cq_base_i,
  input  logic [3:0]         cq_log2_i,
  input  logic [15:0]        cq_head_i,        // validated doorbell value
  output logic [15:0]        cq_tail_o,
  output logic               sq_error_o,       // ring halted
  output logic               cmd_done_o,       // a completion entry was written
  output logic               prog_error_o,     // ... with a nonzero status
  output logic               bad_command_o,
  output logic               dma_fault_o,      // a DMA read failed (reported now)
  output dma_pkg::err_e      dma_fault_class_o,
  output logic [63:0]        dma_fault_addr_o,
  input  logic               irq_pending_i,    // INT_STATUS has an unmasked bit
  input  logic               msi_en_i,
  input  logic [63:0]        msi_addr_i,
  input  logic [31:0]        msi_data_i,
  output logic               idle_o,           // no command is being executed
  output logic               run_o,            // the core runs it
  // ---- the slot and what the prefetch and the copy do with it ----
  input  logic               slot_valid_i,
  input  cmd_pkg::slot_t     slot_i,
  output logic               release_o,        // the slot's command started or completed
  input  logic               arriving_i,       // the running program is still arriving,
  input  logic [WordsW-1:0]  arrived_i,        // ... so many words of it,
  input  logic               fault_i,          // ... and the rest never will be
  output logic               fault_clr_o,      // ... which is reported now
  input  logic               copy_started_i,   // the slot's program is being or was copied
  input  logic               copy_done_i,
  output logic               copy_run_o,       // the slot's command runs during its copy
  // ---- the window table ----
  output logic               win_clr_o,
  output logic               win_wr_o,
  output logic [WinW-1:0]    win_idx_o,
  output dma_pkg::window_t   win_o,
  output logic               buf_rd_o,         // the window list from the prefetch buffer
  output logic [PfW-1:0]     buf_rd_addr_o,
  input  logic [127:0]       buf_rd_data_i,
  // ---- a long program into instruction memory (data rd_i.data.data) ----
  output logic               imem_wr_o,
  output logic [PcW-1:0]     imem_wr_addr_o,
  // ---- core ----
  output logic               core_start_o,
  output logic               core_keep_counters_o,  // with core_start_o: entry flag KEEP_COUNTERS
  input  logic               core_done_i,
  input  logic [3:0]         core_err_i,
  input  logic [31:0]        core_err_pc_i,
  input  logic [31:0]        core_cycles_i,
  // ---- DMA read channel (a long program) ----
  output dma_pkg::rd_m2s_t   rd_o,
  input  dma_pkg::rd_s2m_t   rd_i,
  // ---- DMA write channel (completion entries, MSIs) ----
  output dma_pkg::wr_m2s_t   wr_o,
  input  dma_pkg::wr_s2m_t   wr_i
);

  import host_if_pkg::StatusBadCommand, host_if_pkg::StatusFetchFault;

  localparam int unsigned InstrBytes = tpu_isa_pkg::InstrW / 8;

  typedef enum logic [3:0] {
    BIdle, BLoad, BWinCopy, BProg, BRun, BFetchEnd, BCplWait, BCpl, BMsi
  } state_e;

  state_e          state_q, state_d;
  logic [15:0]     cq_tail_q, cq_tail_d;
  logic            phase_q, phase_d, sq_error_q, sq_error_d;
  logic [15:0]     cur_id_q, cur_id_d, cur_head_q, cur_head_d;
  logic [PcW:0]    prog_idx_q, prog_idx_d;     // a long program's words into imem
  logic [WinW:0]   wc_idx_q, wc_idx_d;         // windows copied into the table
  logic            wc_rd_q, wc_rd_d, wc_start, wc_active;
  logic [WinW-1:0] wc_wr_idx_q, wc_wr_idx_d;
  host_if_pkg::status_t status_q, status_d;
  logic [31:0]     err_pc_q, err_pc_d, cycles_q, cycles_d;
  logic [31:0]     cyc_base_q, cyc_base_d;     // the core's cycle counter when the command started
  logic            copy_run_q, copy_run_d;
  logic            fail;                       // the command completes now, without running
  host_if_pkg::status_t fail_status;

  host_if_pkg::sq_entry_t e;
  assign e = slot_i.entry;

  logic [15:0] cq_mask, cq_next;
  assign cq_mask = (16'd1 << cq_log2_i) - 16'd1;
  assign cq_next = (cq_tail_q + 16'd1) & cq_mask;

  // ---------------------------------------------------------------------------
  // The DMA: a long program's read; the completion entry's and the MSI's writes
  // ---------------------------------------------------------------------------
  logic rd_start, rd_idle, rd_beat, rd_done, wr_start, wr_idle, wr_done;

  // Requested as BProg is entered.
  assign rd_start = state_q == BProg && rd_idle;

  cmd_dma_rd u_rd (
    .clk_i,
    .rst_ni,
    .clear_i        (soft_reset_i),
    .start_i        (rd_start),
    .chain_i        (1'b0),
    .first_i        ('{addr: e.addr, len: e.len * 32'(InstrBytes)}),
    .second_i       ('0),
    .idle_o         (rd_idle),
    .beat_o         (rd_beat),
    .done_o         (rd_done),
    .rd_o,
    .rd_i
  );

  // The completion entry of the current command.
  host_if_pkg::cq_entry_t cpl_entry;
  assign cpl_entry = '{sq_head: cur_head_q, reserved: '0, phase: phase_q, cycles: cycles_q,
                       err_pc: err_pc_q, status: status_q, id: cur_id_q};

  cmd_dma_wr u_wr (
    .clk_i,
    .rst_ni,
    .clear_i        (soft_reset_i),
    .start_i        (wr_start),
    .req_i          (state_q == BCpl ?
                     '{addr: cq_base_i + 64'(cq_tail_q) * 64'(host_if_pkg::CqEntryBytes),
                       len: 32'(host_if_pkg::CqEntryBytes)} :
                     '{addr: msi_addr_i, len: 32'd4}),
    .data_i         (state_q == BCpl ? '{data: cpl_entry, keep: '1, last: 1'b1} :
                                       '{data: 128'(msi_data_i), keep: 16'h000f, last: 1'b1}),
    .idle_o         (wr_idle),
    .done_o         (wr_done),
    .wr_o,
    .wr_i
  );

  // ---------------------------------------------------------------------------
  // Take the slot's command, load it, run it, complete it
  // ---------------------------------------------------------------------------
  always_comb begin
    state_d      = state_q;
    cq_tail_d    = cq_tail_q;
    phase_d      = phase_q;
    sq_error_d   = sq_error_q;
    cur_id_d     = cur_id_q;
    cur_head_d   = cur_head_q;
    prog_idx_d   = prog_idx_q;
    status_d     = status_q;
    err_pc_d     = err_pc_q;
    cycles_d     = cycles_q;
    win_clr_o    = 1'b0;
    win_wr_o     = 1'b0;
    wc_start     = 1'b0;
    wr_start     = 1'b0;
    fail         = 1'b0;
    fail_status  = '0;
    release_o    = 1'b0;
    fault_clr_o  = 1'b0;
    copy_run_d   = copy_run_q;
    // A command that started during its program's copy frees the slot when
    // the copy ends.
    if (copy_run_q && copy_done_i) begin
      release_o  = 1'b1;
      copy_run_d = 1'b0;
    end

    imem_wr_o         = 1'b0;
    core_start_o      = 1'b0;
    cmd_done_o        = 1'b0;
    prog_error_o      = 1'b0;
    bad_command_o     = 1'b0;
    dma_fault_o       = 1'b0;
    dma_fault_class_o = slot_i.fclass;
    dma_fault_addr_o  = slot_i.faddr;

    unique case (state_q)
      // ---- take the next command; report what its prefetch found ----
      BIdle: begin
        if (slot_valid_i && !copy_run_q && enable_i) begin
          cur_id_d   = e.id;
          cur_head_d = slot_i.head;
          if (slot_i.efault) begin
            // No id to complete: halt the ring.
            dma_fault_o = 1'b1;
            sq_error_d  = 1'b1;
            release_o   = 1'b1;
          end else if (slot_i.bad || slot_i.fault || slot_i.win_bad) begin
            // A malformed entry, else a fault (of the list, else of the
            // program), else a malformed list.
            fail          = 1'b1;
            dma_fault_o   = !slot_i.bad && slot_i.fault;
            bad_command_o = !dma_fault_o;
            fail_status   = dma_fault_o ? StatusFetchFault : StatusBadCommand;
          end else if (slot_i.direct) begin
            // Its windows and program are in place already.
            core_start_o = 1'b1;
            release_o    = 1'b1;
            state_d      = BRun;
          end else begin
            win_clr_o = 1'b1;  // the previous command's windows end here
            state_d   = BLoad;
          end
        end
      end
      // ---- its program in instruction memory (or not in the buffer) ----
      BLoad: begin
        if (slot_i.too_long || copy_started_i) begin
          wc_start = 1'b1;
          state_d  = BWinCopy;
        end
      end
      // ---- its window list from the buffer into the window table ----
      BWinCopy: begin
        if (wc_rd_q) begin
          win_wr_o = 1'b1;
        end
        if (32'(wc_idx_q) == 32'(e.win_count) && !wc_rd_q) begin
          if (slot_i.too_long) begin
            state_d = BProg;
          end else begin
            // The slot empties once its program is copied whole.
            core_start_o = 1'b1;
            release_o    = copy_done_i;
            copy_run_d   = !copy_done_i;
            state_d      = BRun;
          end
        end
      end
      // ---- a program too long for the buffer, straight into imem ----
      BProg: begin
        if (rd_start) prog_idx_d = '0;
        if (rd_beat) begin
          imem_wr_o  = prog_idx_q < (PcW+1)'(ImemDepth);
          prog_idx_d = prog_idx_q + 1'b1;
        end
        if (rd_done) begin
          if (rd_i.done.err != dma_pkg::ErrNone) begin
            dma_fault_o       = 1'b1;
            dma_fault_class_o = rd_i.done.err;
            dma_fault_addr_o  = rd_i.done.err_addr;
            fail              = 1'b1;
            fail_status       = StatusFetchFault;
          end else begin
            core_start_o = 1'b1;
            release_o    = 1'b1;
            state_d      = BRun;
          end
        end
      end
      // ---- the program runs ----
      BRun: begin
        if (core_done_i) begin
          status_d = 16'(core_err_i);
          err_pc_d = core_err_pc_i;
          cycles_d = core_cycles_i - cyc_base_q;
          state_d  = (arriving_i || fault_i) ? BFetchEnd : BCplWait;
        end
      end
      // ---- a program started before it had all arrived: its fetch's end ----
      BFetchEnd: begin
        if (!arriving_i) begin
          // Not all of it could be read: FETCH_FAULT at the first instruction
          // missing, whatever the core ended with (it stopped there at the
          // latest), with the cycles it ran.
          if (fault_i) begin
            dma_fault_o = 1'b1;  // slot_i.fclass, slot_i.faddr
            status_d    = StatusFetchFault;
            err_pc_d    = 32'(arrived_i);
          end
          fault_clr_o = 1'b1;
          state_d     = BCplWait;
        end
      end
      // ---- completion entry, then MSI ----
      BCplWait: begin
        if (cq_next != cq_head_i) state_d = BCpl;  // the ring has room
      end
      BCpl: begin
        wr_start = wr_idle;
        if (wr_done) begin
          cmd_done_o   = 1'b1;
          prog_error_o = status_q != 0;
          cq_tail_d    = cq_next;
          if (cq_next == 0) phase_d = !phase_q;
          state_d      = BMsi;
        end
      end
      BMsi: begin
        // INT_STATUS was set in the previous cycle; it decides the MSI now.
        if (wr_idle) begin
          if (!(msi_en_i && irq_pending_i)) state_d = BIdle;
          else                              wr_start = 1'b1;
        end
        if (wr_done) state_d = BIdle;
      end
      default: state_d = BIdle;
    endcase

    // A command that ends before it runs (bad entry or window list, fetch
    // fault) completes with its status and no instruction or cycles.
    if (fail) begin
      status_d  = fail_status;
      err_pc_d  = '0;
      cycles_d  = '0;
      release_o = 1'b1;
      state_d   = BCplWait;
    end
  end

  // The window copy: one buffer word a cycle, written into the table the
  // cycle after (in BWinCopy above).
  assign wc_active = state_q == BWinCopy && 32'(wc_idx_q) < 32'(e.win_count);
  always_comb begin
    wc_idx_d    = wc_idx_q;
    wc_rd_d     = 1'b0;
    wc_wr_idx_d = wc_wr_idx_q;
    if (wc_start) begin
      wc_idx_d = '0;
    end else if (wc_active) begin
      wc_rd_d     = 1'b1;
      wc_wr_idx_d = WinW'(wc_idx_q);
      wc_idx_d    = wc_idx_q + 1'b1;
    end
  end

  // A window as the copy reads it back (checked when it arrived).
  host_if_pkg::win_entry_t c_in;
  assign c_in          = buf_rd_data_i;
  assign win_o         = '{valid: 1'b1, rd: c_in.access[host_if_pkg::WinAccessRead],
                           wr: c_in.access[host_if_pkg::WinAccessWrite],
                           base: c_in.base, last: c_in.base + 64'(c_in.len) - 64'd1};
  assign win_idx_o     = wc_wr_idx_q;
  assign buf_rd_o      = wc_active;
  assign buf_rd_addr_o = PfW'(wc_idx_q);

  // ---------------------------------------------------------------------------
  // Flops; a soft reset restarts at the completion ring's entry 0, phase 1
  // ---------------------------------------------------------------------------
  `FF(state_q, soft_reset_i ? BIdle : state_d, BIdle)
  `FF(cq_tail_q, soft_reset_i ? '0 : cq_tail_d, '0)
  `FF(phase_q, soft_reset_i ? 1'b1 : phase_d, 1'b1)
  `FF(sq_error_q, soft_reset_i ? 1'b0 : sq_error_d, 1'b0)
  `FF(cur_id_q, cur_id_d, '0)
  `FF(cur_head_q, cur_head_d, '0)
  `FF(prog_idx_q, prog_idx_d, '0)
  `FF(wc_idx_q, wc_idx_d, '0)
  `FF(wc_rd_q, wc_rd_d && !soft_reset_i, 1'b0)
  `FF(wc_wr_idx_q, wc_wr_idx_d, '0)
  `FF(status_q, status_d, '0)
  `FF(err_pc_q, err_pc_d, '0)
  `FF(cycles_q, cycles_d, '0)
  `FF(copy_run_q, copy_run_d && !soft_reset_i, 1'b0)
  // A command that keeps the counters reports its own cycles: the counter's
  // value at its start is subtracted.
  assign core_keep_counters_o = e.flags[host_if_pkg::FlagRunKeepCounters];
  assign cyc_base_d = !core_start_o        ? cyc_base_q :
                      core_keep_counters_o ? core_cycles_i : '0;
  `FF(cyc_base_q, cyc_base_d, '0)

  assign imem_wr_addr_o = prog_idx_q[PcW-1:0];
  assign idle_o         = state_q == BIdle;
  assign run_o          = state_q == BRun;
  assign cq_tail_o      = cq_tail_q;
  assign sq_error_o     = sq_error_q;
  assign copy_run_o     = copy_run_q;

  // Every status a completion can carry but OK (the program's error codes,
  // docs/isa.md, and the command processor's own), and the ring halted on an
  // unreadable entry.
  `COVER(CplIllegalOpcode, cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrIllegalOpcode))
  `COVER(CplBadFlags,      cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrBadFlags))
  `COVER(CplUbRange,       cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrUbRange))
  `COVER(CplAccRange,      cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrAccRange))
  `COVER(CplBadCount,      cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrBadCount))
  `COVER(CplNestedLoop,    cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrNestedLoop))
  `COVER(CplBadCfg,        cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrBadCfg))
  `COVER(CplMemFault,      cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrMemFault))
  `COVER(CplPcRange,       cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrPcRange))
  `COVER(CplNoWeights,     cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrNoWeights))
  `COVER(CplWgtOverflow,   cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrWgtOverflow))
  `COVER(CplWgtFormat,     cmd_done_o && status_q == 16'(tpu_isa_pkg::ErrWgtFormat))
  `COVER(CplBadCommand,    cmd_done_o && status_q == StatusBadCommand)
  `COVER(CplFetchFault,    cmd_done_o && status_q == StatusFetchFault)
  `COVER(RingHalted,       dma_fault_o && state_q == BIdle && slot_i.efault)
  // The completion ring's tail wraps to entry 0 (the phase flips); a
  // completion waits for room in its ring; a program too long for the
  // buffer, fetched after the previous command; a prefetched command waiting
  // for the previous completion.
  `COVER(CqWraps,            cmd_done_o && cq_next == '0)
  `COVER(CqFullWaits,        state_q == BCplWait && cq_next == cq_head_i)
  `COVER(LongProgramFetched, state_q == BProg && rd_done)
  `COVER(SlotWaitsForCpl,    slot_valid_i && state_q inside {BCplWait, BCpl})

  logic unused_slot;
  assign unused_slot = ^{e.op, e.flags, e.win_addr, e.reserved, rd_i.data};

endmodule
