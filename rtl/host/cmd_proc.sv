// SPDX-License-Identifier: Apache-2.0
// Command processor: runs the submission ring, fetching the next command
// while the current one runs.
//
// Two state machines share the work, with one command slot between them:
//
// Prefetch (f_*): while the slot is empty and the ring has an entry between
// the device's head and the host's tail, it
//   1. reads the 32-byte entry by DMA and checks it (a DMA fault: the ring
//      will halt; a bad entry: BAD_COMMAND) and advances SQ_HEAD,
//   2. reads the entry's DMA window list (a bad window: BAD_COMMAND; a
//      fault: FETCH_FAULT) and, requested right after it so both share one
//      host round trip, the program (fault: FETCH_FAULT),
// and fills the slot. Where they go depends on whether a command is being
// executed when the entry arrives:
//   - none (direct): the windows go straight into the window table and the
//     program into instruction memory, as they arrive, and the slot fills
//     with the program's first instruction: the core starts on it while the
//     rest arrives (core_imem_filling_o: it fetches only the instructions
//     already written). Should the rest not arrive (a fault), the core's
//     fetch ends the program at the first missing instruction and the
//     command completes with FETCH_FAULT once the core has stopped;
//   - one (ahead): the core runs it meanwhile (the DMA engine's read channel
//     is shared with the core's bridge in tpu_top, its data routed back by
//     request order); the windows and the program go into the prefetch
//     buffer, the program only when it fits (PfDepth - 8 instructions): a
//     longer one is fetched when its command is taken, straight into
//     instruction memory.
// Nothing the prefetch learns is reported yet: faults, bad entries and the
// ring's halt are recorded in the slot and reported when the command is
// taken, so every register, interrupt and completion happens in the order it
// did when commands were fetched one after the other.
//
// Copy: once the slot holds a program in the buffer and the core lets its
// instruction memory be written (idle, or the running program's HALT
// decoded: core_imem_free_i), the program is copied from the buffer into
// instruction memory, one instruction a cycle, usually while the previous
// command's last units drain. Its command may start before the copy ends
// (the core fetches only the words copied, as for a direct program); the
// slot stays full until the copy ends, so the next prefetch cannot write
// the buffer under it.
//
// Execute (b_*): takes the slot's command when no command is running (in
// order: the previous command's completion and MSI have been written) and
// the device is enabled:
//   - an unreadable entry halts the ring (no completion, STATUS.sq_error);
//     a bad entry or window list or a fetch fault completes at once with
//     BAD_COMMAND / FETCH_FAULT and no cycles,
//   - otherwise (fetched ahead) the window list is copied from the buffer
//     into the window table (core_dma_bridge checks the core's DMA against
//     it; the program's copy pauses meanwhile) and a program too long for
//     the buffer is read into instruction memory now (fault: FETCH_FAULT);
//     then the core starts at instruction 0, and the slot is freed (the next
//     entry's prefetch may start) at once or, when the program's copy is
//     still going on, once it ends; RHM, WHM and RW go through the DMA
//     engine meanwhile,
//   - when the core is done: wait for room in the completion ring, write the
//     16-byte completion entry, then send the MSI if enabled and not masked.
// Entry formats and status codes: docs/host_interface.md.
// The DMA read channel is this block's whenever it asks; the write channel is
// this block's except while the core runs (run_o), when the bridge has it.
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

  import host_if_pkg::StatusBadCommand, host_if_pkg::StatusFetchFault;

  localparam int unsigned MaxW   = dma_pkg::MaxWindows;
  localparam int unsigned WinW   = $clog2(MaxW);
  localparam int unsigned PfW    = $clog2(PfDepth);
  // The buffer: the window list in words [0, MaxW), the program after it.
  localparam int unsigned PfProg = PfDepth - MaxW;
  // A program word's index: up to ImemDepth (direct) or PfProg (buffer).
  localparam int unsigned IdxW   = ((PcW > PfW) ? PcW : PfW) + 1;

  if (PfDepth <= MaxW || (PfDepth & (PfDepth - 1)) != 0) begin : gen_bad_pf
    $error("cmd_proc: PfDepth must be a power of two above dma_pkg::MaxWindows");
  end

  typedef enum logic [3:0] {
    FIdle, FEntryReq, FEntryData, FEntryDone, FWinReq, FWinProgReq, FWinData, FWinDone,
    FProgReq, FProgData, FProgDone
  } f_state_e;

  typedef enum logic [3:0] {
    BIdle, BLoad, BWinCopy, BProgReq, BProgData, BProgDone, BRun,
    BFetchEnd, BCplWait, BCplReq, BCplData, BCplDone, BMsiReq, BMsiData, BMsiDone
  } b_state_e;

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------
  f_state_e      f_state_q, f_state_d;
  b_state_e      b_state_q, b_state_d;
  logic [15:0]   sq_head_q, sq_head_d, cq_tail_q, cq_tail_d;
  logic          phase_q, phase_d, sq_error_q, sq_error_d;
  // Prefetch
  logic          f_beat_q, f_beat_d;
  logic [WinW-1:0] f_win_idx_q, f_win_idx_d;
  logic [IdxW-1:0] f_prog_idx_q, f_prog_idx_d;
  // The slot: the next command, its entry and what its prefetch found
  logic          nx_valid_q, nx_fill;    // the prefetch fills the slot; release_slot empties it
  host_if_pkg::sq_entry_t nx_entry_q, nx_entry_d;
  logic [15:0]   nx_head_q, nx_head_d;       // SQ_HEAD after its entry
  logic          nx_efault_q, nx_efault_d;   // the entry could not be read: halt the ring
  logic          nx_bad_q, nx_bad_d;         // malformed entry
  logic          nx_win_bad_q, nx_win_bad_d; // malformed window list
  logic          nx_fault_q, nx_fault_d;     // the list or the program could not be read
  logic          nx_long_q, nx_long_d;       // the program is not in the buffer
  logic          nx_direct_q, nx_direct_d;   // windows and program went straight to the core
  // The running command's program, started before it had all arrived
  logic          arriving_q, arriving_d;     // more of it is still to come (a direct
                                             // program, its slot filled at its first word)
  // The rest could not be read (its class and address in nx_fclass_q and
  // nx_faddr_q, the words that did arrive in f_prog_idx_q: the next prefetch
  // waits until this is reported).
  logic          st_fault_q, st_fault_d;
  logic          st_fault_clr;               // the back end has reported it
  dma_pkg::err_e nx_fclass_q, nx_fclass_d;   // the fault to report when taken
  logic [63:0]   nx_faddr_q, nx_faddr_d;
  // Copy of the slot's program into instruction memory
  logic          cp_active_q, cp_active_d, cp_rd_q, cp_rd_d, cp_done_q, cp_done_d;
  logic [PfW-1:0] cp_idx_q, cp_idx_d, cp_wr_idx_q, cp_wr_idx_d;
  logic [PcW:0]  cp_words_q, cp_words_d;    // words copied so far
  logic          cp_run_q, cp_run_d;        // the slot's command runs while its copy goes on
  // Execute: the current command
  logic [15:0]   cur_id_q, cur_id_d, cur_head_q, cur_head_d;
  logic [PcW:0]  prog_idx_q, prog_idx_d;     // a long program's words into imem
  logic [WinW:0] wc_idx_q, wc_idx_d;         // windows copied into the table
  logic          wc_rd_q, wc_rd_d;
  logic [WinW-1:0] wc_wr_idx_q, wc_wr_idx_d;
  host_if_pkg::status_t status_q, status_d;
  logic [31:0]   err_pc_q, err_pc_d, cycles_q, cycles_d;
  logic [31:0]   cyc_base_q, cyc_base_d;  // the core's cycle counter when the command started
  dma_pkg::window_t [MaxW-1:0] win_q;
  logic          win_b_clr, win_b_wr;  // the window table: the back end clears it, writes a window
  logic          fail;         // the command completes now, without running
  logic [15:0]   fail_status;

  // The prefetch buffer: window list and program words, written by the
  // prefetch, read by the copies.
  logic           pf_wr_en, pf_rd_en;
  logic [PfW-1:0] pf_wr_addr, pf_rd_addr;
  logic [127:0]   pf_rd_data;

  ram_1r1w #(
    .Width(128),
    .Depth(PfDepth)
  ) u_buf (
    .clk_i,
    .wr_en_i  (pf_wr_en),
    .wr_addr_i(pf_wr_addr),
    .wr_data_i(rd_data_i.data),
    .rd_en_i  (pf_rd_en),
    .rd_addr_i(pf_rd_addr),
    .rd_data_o(pf_rd_data)
  );

  // ---------------------------------------------------------------------------
  // The slot's entry fields (docs/host_interface.md)
  // ---------------------------------------------------------------------------
  logic [7:0]  e_op, e_flags;
  logic [15:0] e_id;
  logic [31:0] e_len;
  logic [63:0] e_addr, e_win_addr;
  logic [7:0]  e_win_count;
  assign e_op        = nx_entry_q.op;
  assign e_flags     = nx_entry_q.flags;
  assign e_id        = nx_entry_q.id;
  assign e_len       = nx_entry_q.len;
  assign e_addr      = nx_entry_q.addr;
  assign e_win_addr  = nx_entry_q.win_addr;
  assign e_win_count = nx_entry_q.win_count;

  // A window list is an array of win_entry_t, so its address is aligned to one.
  localparam int unsigned WinAlignW = $clog2(host_if_pkg::WinEntryBytes);

  logic entry_ok, e_fits;
  assign entry_ok = (e_op == host_if_pkg::OpRun) && ((e_flags & ~host_if_pkg::RunFlagsMask) == 8'd0) &&
                    (e_len != 0) && (e_len <= 32'(ImemDepth)) && (nx_entry_q.reserved == '0) &&
                    (e_win_count <= 8'(MaxW)) &&
                    (e_win_count == 0 || e_win_addr[WinAlignW-1:0] == '0);
  // The program fits the buffer (checked with entry_ok).
  assign e_fits   = e_len <= 32'(PfProg);

  logic [15:0] sq_mask, cq_mask, cq_next;
  assign sq_mask = (16'd1 << sq_log2_i) - 16'd1;
  assign cq_mask = (16'd1 << cq_log2_i) - 16'd1;
  assign cq_next = (cq_tail_q + 16'd1) & cq_mask;

  // A window as it arrives (one per beat). It is legal when its length is not
  // 0, its access is read, write or both, and it ends at or before 2^64 - 1.
  host_if_pkg::win_entry_t w_in;
  logic [64:0] w_end;      // base + length, one past the last byte
  logic        w_ok;
  assign w_in  = rd_data_i.data;
  assign w_end = {1'b0, w_in.base} + 65'(w_in.len);
  assign w_ok  = (w_in.len != '0) && ((w_in.access & ~host_if_pkg::WinAccessMask) == '0) &&
                 ((w_in.access & host_if_pkg::WinAccessMask) != '0) &&
                 (w_end <= 65'h1_0000_0000_0000_0000);

  // A window as the copy reads it back (checked when it arrived).
  host_if_pkg::win_entry_t c_in;
  logic [63:0] c_last;
  assign c_in   = pf_rd_data;
  assign c_last = c_in.base + 64'(c_in.len) - 64'd1;

  // The slot's command can run (nothing recorded against it).
  logic nx_runnable;
  assign nx_runnable = !(nx_efault_q || nx_bad_q || nx_win_bad_q || nx_fault_q);

  // ---------------------------------------------------------------------------
  // Prefetch: the next entry, its window list and program, into the slot
  // ---------------------------------------------------------------------------
  logic [PfW-1:0] prog_word;   // buffer word of the program's next instruction
  assign prog_word = PfW'(MaxW) + PfW'(f_prog_idx_q);

  // No command is being executed: this one's windows and program go straight
  // to the window table and instruction memory (nothing is executed until
  // the slot is full, so it stays so until then).
  logic f_direct;
  assign f_direct = b_state_q == BIdle;

  logic f_rd_req_valid, f_rd_data_ready, f_rd_done_ready, f_win_clr, f_win_wr, f_imem_wr;
  dma_pkg::rd_req_t f_rd_req;

  always_comb begin
    f_state_d    = f_state_q;
    f_beat_d     = f_beat_q;
    f_win_idx_d  = f_win_idx_q;
    f_prog_idx_d = f_prog_idx_q;
    sq_head_d    = sq_head_q;
    nx_entry_d   = nx_entry_q;
    nx_head_d    = nx_head_q;
    nx_efault_d  = nx_efault_q;
    nx_bad_d     = nx_bad_q;
    nx_win_bad_d = nx_win_bad_q;
    nx_fault_d   = nx_fault_q;
    nx_long_d    = nx_long_q;
    nx_fclass_d  = nx_fclass_q;
    nx_faddr_d   = nx_faddr_q;
    nx_direct_d  = nx_direct_q;
    arriving_d   = arriving_q;
    st_fault_d   = st_fault_q && !st_fault_clr;
    f_win_clr    = 1'b0;
    f_win_wr     = 1'b0;
    f_imem_wr    = 1'b0;
    f_rd_req_valid  = 1'b0;
    f_rd_req        = '0;
    f_rd_data_ready = 1'b0;
    f_rd_done_ready = 1'b0;
    pf_wr_en        = 1'b0;
    pf_wr_addr      = '0;
    nx_fill         = 1'b0;

    unique case (f_state_q)
      FIdle: begin
        if (!nx_valid_q && !st_fault_q && enable_i && !sq_error_q && (sq_head_q != sq_tail_i))
          f_state_d = FEntryReq;
      end
      // ---- 1. the submission entry ----
      FEntryReq: begin
        f_rd_req_valid = 1'b1;
        f_rd_req       = '{addr: sq_base_i + 64'(sq_head_q) * 64'(host_if_pkg::SqEntryBytes),
                           len: 32'(host_if_pkg::SqEntryBytes)};
        if (rd_req_ready_i) begin
          f_state_d  = FEntryData;
          f_beat_d   = 1'b0;
          nx_entry_d = '0;
        end
      end
      FEntryData: begin
        f_rd_data_ready = 1'b1;
        if (rd_data_valid_i) begin
          if (!f_beat_q) nx_entry_d[127:0] = rd_data_i.data;
          else           nx_entry_d[255:128] = rd_data_i.data;
          f_beat_d = 1'b1;
          if (rd_data_i.last) f_state_d = FEntryDone;
        end
      end
      FEntryDone: begin
        f_rd_done_ready = 1'b1;
        if (rd_done_valid_i) begin
          nx_bad_d     = 1'b0;
          nx_win_bad_d = 1'b0;
          nx_fault_d   = 1'b0;
          nx_long_d    = 1'b0;
          nx_efault_d  = 1'b0;
          nx_direct_d  = f_direct;
          f_win_idx_d  = '0;
          f_prog_idx_d = '0;
          f_state_d    = FIdle;
          if (rd_done_i.err != dma_pkg::ErrNone) begin
            // The entry itself could not be read: no id to complete; the
            // ring halts when this slot is taken.
            nx_fill     = 1'b1;
            nx_efault_d = 1'b1;
            nx_fclass_d = rd_done_i.err;
            nx_faddr_d  = rd_done_i.err_addr;
          end else begin
            sq_head_d = (sq_head_q + 16'd1) & sq_mask;
            nx_head_d = (sq_head_q + 16'd1) & sq_mask;
            f_win_clr = f_direct;  // the previous command's windows end here
            if (!entry_ok) begin
              nx_fill    = 1'b1;
              nx_bad_d   = 1'b1;
            end else if (e_win_count != 0) begin
              f_state_d = FWinReq;
            end else if (e_fits || f_direct) begin
              f_state_d = FProgReq;
            end else begin
              nx_fill    = 1'b1;
              nx_long_d  = 1'b1;
            end
          end
        end
      end
      // ---- 2. the window list, one window per beat, then the program ----
      FWinReq: begin
        f_rd_req_valid = 1'b1;
        f_rd_req       = '{addr: e_win_addr, len: 32'(e_win_count) * 32'(host_if_pkg::WinEntryBytes)};
        if (rd_req_ready_i) f_state_d = (e_fits || nx_direct_q) ? FWinProgReq : FWinData;
      end
      FWinProgReq: begin
        f_rd_req_valid = 1'b1;
        f_rd_req       = '{addr: e_addr, len: e_len * 32'd16};
        if (rd_req_ready_i) f_state_d = FWinData;
      end
      FWinData: begin
        f_rd_data_ready = 1'b1;
        if (rd_data_valid_i) begin
          if (rd_data_i.keep == '1) begin
            pf_wr_en    = !nx_direct_q;
            f_win_wr    = nx_direct_q;
            pf_wr_addr  = PfW'(f_win_idx_q);
            if (!w_ok) nx_win_bad_d = 1'b1;
            f_win_idx_d = f_win_idx_q + 1'b1;
          end
          if (rd_data_i.last) f_state_d = FWinDone;
        end
      end
      FWinDone: begin
        f_rd_done_ready = 1'b1;
        if (rd_done_valid_i) begin
          if (rd_done_i.err != dma_pkg::ErrNone) begin
            // Reported before the program's, as its class and address.
            nx_fault_d  = 1'b1;
            nx_fclass_d = rd_done_i.err;
            nx_faddr_d  = rd_done_i.err_addr;
          end
          if (e_fits || nx_direct_q) begin
            f_state_d = FProgData;  // already requested
          end else begin
            f_state_d  = FIdle;
            nx_fill    = 1'b1;
            nx_long_d  = 1'b1;
          end
        end
      end
      // ---- 3. the program, one instruction per beat ----
      FProgReq: begin
        f_rd_req_valid = 1'b1;
        f_rd_req       = '{addr: e_addr, len: e_len * 32'd16};
        if (rd_req_ready_i) f_state_d = FProgData;
      end
      FProgData: begin
        f_rd_data_ready = 1'b1;
        if (rd_data_valid_i) begin
          // Straight into imem, unless the list was bad or unreadable (the
          // command will not run); or into the buffer. A beat without data
          // (keep 0) ends a read that failed.
          f_imem_wr    = nx_direct_q && rd_data_i.keep == '1 && 32'(f_prog_idx_q) < 32'(ImemDepth) &&
                         !nx_win_bad_q && !nx_fault_q;
          pf_wr_en     = !nx_direct_q && 32'(f_prog_idx_q) < 32'(PfProg);
          pf_wr_addr   = prog_word;
          f_prog_idx_d = f_prog_idx_q + IdxW'(rd_data_i.keep == '1);
          // Direct: the command can start on its first instruction.
          if (f_imem_wr && !arriving_q) begin
            nx_fill    = 1'b1;
            arriving_d = 1'b1;
          end
          if (rd_data_i.last) f_state_d = FProgDone;
        end
      end
      FProgDone: begin
        f_rd_done_ready = 1'b1;
        if (rd_done_valid_i) begin
          f_state_d = FIdle;
          if (arriving_q) begin
            // Its command runs already: the words that arrived are all it
            // will get when the rest failed.
            arriving_d = 1'b0;
            if (rd_done_i.err != dma_pkg::ErrNone) begin
              st_fault_d  = 1'b1;
              nx_fclass_d = rd_done_i.err;
              nx_faddr_d  = rd_done_i.err_addr;
            end
          end else begin
            // The program's fault counts only when its list was fine (as the
            // list's fault or malformation is the status then).
            if (rd_done_i.err != dma_pkg::ErrNone && !nx_fault_q && !nx_win_bad_q) begin
              nx_fault_d  = 1'b1;
              nx_fclass_d = rd_done_i.err;
              nx_faddr_d  = rd_done_i.err_addr;
            end
            nx_fill = 1'b1;
          end
        end
      end
      default: f_state_d = FIdle;
    endcase
  end

  // ---------------------------------------------------------------------------
  // Copy: the slot's program from the buffer into instruction memory
  // ---------------------------------------------------------------------------
  logic cp_start, cp_last;
  logic wc_active;   // the window copy reads the buffer (execute side)

  assign cp_start = nx_valid_q && nx_runnable && !nx_long_q && !nx_direct_q && !cp_active_q && !cp_rd_q &&
                    !cp_done_q && core_imem_free_i && !soft_reset_i;
  assign cp_last  = 32'(cp_idx_q) + 32'd1 == e_len;

  always_comb begin
    cp_active_d = cp_active_q;
    cp_idx_d    = cp_idx_q;
    cp_rd_d     = 1'b0;
    cp_wr_idx_d = cp_wr_idx_q;
    cp_done_d   = cp_done_q;
    cp_words_d  = cp_words_q + (PcW+1)'(cp_rd_q);
    if (cp_start) begin
      cp_active_d = 1'b1;
      cp_idx_d    = '0;
      cp_words_d  = '0;
    end else if (cp_active_q && !wc_active) begin  // the window copy has the buffer's port
      cp_rd_d     = 1'b1;
      cp_wr_idx_d = cp_idx_q;
      cp_idx_d    = cp_idx_q + 1'b1;
      if (cp_last) cp_active_d = 1'b0;
    end
    // The last word lands in instruction memory this cycle.
    if (cp_rd_q && !cp_active_q) cp_done_d = 1'b1;
  end

  // ---------------------------------------------------------------------------
  // Execute: take the slot's command, load it, run it, complete it
  // ---------------------------------------------------------------------------
  // The completion entry of the current command.
  host_if_pkg::cq_entry_t cpl_entry;
  assign cpl_entry = '{sq_head: cur_head_q, reserved: '0, phase: phase_q, cycles: cycles_q,
                       err_pc: err_pc_q, status: status_q, id: cur_id_q};

  logic b_rd_req_valid, b_rd_data_ready, b_rd_done_ready, wc_start, b_imem_wr;
  logic release_slot;
  dma_pkg::rd_req_t b_rd_req;

  always_comb begin
    b_state_d   = b_state_q;
    cq_tail_d   = cq_tail_q;
    phase_d     = phase_q;
    sq_error_d  = sq_error_q;
    cur_id_d    = cur_id_q;
    cur_head_d  = cur_head_q;
    prog_idx_d  = prog_idx_q;
    status_d    = status_q;
    err_pc_d    = err_pc_q;
    cycles_d    = cycles_q;
    win_b_clr   = 1'b0;
    win_b_wr    = 1'b0;
    wc_start    = 1'b0;
    fail        = 1'b0;
    fail_status = '0;
    release_slot = 1'b0;
    st_fault_clr = 1'b0;
    cp_run_d     = cp_run_q;
    // A command that started during its program's copy frees the slot when
    // the copy ends.
    if (cp_run_q && cp_done_q) begin
      release_slot = 1'b1;
      cp_run_d     = 1'b0;
    end

    b_rd_req_valid  = 1'b0;
    b_rd_req        = '0;
    b_rd_data_ready = 1'b0;
    b_rd_done_ready = 1'b0;
    b_imem_wr       = 1'b0;
    wr_req_valid_o  = 1'b0;
    wr_req_o        = '0;
    wr_data_valid_o = 1'b0;
    wr_data_o       = '0;
    wr_done_ready_o = 1'b0;
    core_start_o    = 1'b0;
    cmd_done_o      = 1'b0;
    prog_error_o    = 1'b0;
    bad_command_o   = 1'b0;
    dma_fault_o       = 1'b0;
    dma_fault_class_o = nx_fclass_q;
    dma_fault_addr_o  = nx_faddr_q;

    unique case (b_state_q)
      // ---- take the next command; report what its prefetch found ----
      BIdle: begin
        if (nx_valid_q && !cp_run_q && enable_i) begin
          cur_id_d   = e_id;
          cur_head_d = nx_head_q;
          if (nx_efault_q) begin
            // No id to complete: halt the ring.
            dma_fault_o  = 1'b1;
            sq_error_d   = 1'b1;
            release_slot = 1'b1;
          end else if (nx_bad_q) begin
            bad_command_o = 1'b1;
            fail          = 1'b1;
            fail_status   = StatusBadCommand;
          end else if (nx_fault_q) begin
            dma_fault_o = 1'b1;
            fail        = 1'b1;
            fail_status = StatusFetchFault;
          end else if (nx_win_bad_q) begin
            bad_command_o = 1'b1;
            fail          = 1'b1;
            fail_status   = StatusBadCommand;
          end else if (nx_direct_q) begin
            // Its windows and program are in place already.
            core_start_o = 1'b1;
            release_slot = 1'b1;
            b_state_d    = BRun;
          end else begin
            win_b_clr = 1'b1;  // the previous command's windows end here
            b_state_d = BLoad;
          end
        end
      end
      // ---- its program in instruction memory (or not in the buffer) ----
      BLoad: begin
        if (nx_long_q || cp_active_q || cp_rd_q || cp_done_q) begin
          wc_start  = 1'b1;
          b_state_d = BWinCopy;
        end
      end
      // ---- its window list from the buffer into the window table ----
      BWinCopy: begin
        if (wc_rd_q) begin
          win_b_wr = 1'b1;
        end
        if (32'(wc_idx_q) == 32'(e_win_count) && !wc_rd_q) begin
          if (nx_long_q) begin
            b_state_d = BProgReq;
          end else begin
            // The slot empties once its program is copied whole.
            core_start_o = 1'b1;
            release_slot = cp_done_q;
            cp_run_d     = !cp_done_q;
            b_state_d    = BRun;
          end
        end
      end
      // ---- a program too long for the buffer, straight into imem ----
      BProgReq: begin
        b_rd_req_valid = 1'b1;
        b_rd_req       = '{addr: e_addr, len: e_len * 32'd16};
        if (rd_req_ready_i) begin
          b_state_d  = BProgData;
          prog_idx_d = '0;
        end
      end
      BProgData: begin
        b_rd_data_ready = 1'b1;
        if (rd_data_valid_i) begin
          b_imem_wr  = prog_idx_q < (PcW+1)'(ImemDepth);
          prog_idx_d = prog_idx_q + 1'b1;
          if (rd_data_i.last) b_state_d = BProgDone;
        end
      end
      BProgDone: begin
        b_rd_done_ready = 1'b1;
        if (rd_done_valid_i) begin
          if (rd_done_i.err != dma_pkg::ErrNone) begin
            dma_fault_o       = 1'b1;
            dma_fault_class_o = rd_done_i.err;
            dma_fault_addr_o  = rd_done_i.err_addr;
            fail              = 1'b1;
            fail_status       = StatusFetchFault;
          end else begin
            core_start_o = 1'b1;
            release_slot = 1'b1;
            b_state_d    = BRun;
          end
        end
      end
      // ---- 4. the program runs ----
      BRun: begin
        if (core_done_i) begin
          status_d  = 16'(core_err_i);
          err_pc_d  = core_err_pc_i;
          cycles_d  = core_cycles_i - cyc_base_q;
          b_state_d = (arriving_q || st_fault_q) ? BFetchEnd : BCplWait;
        end
      end
      // ---- a program started before it had all arrived: its fetch's end ----
      BFetchEnd: begin
        if (!arriving_q) begin
          // Not all of it could be read: FETCH_FAULT at the first instruction
          // missing, whatever the core ended with (it stopped there at the
          // latest), with the cycles it ran.
          if (st_fault_q) begin
            dma_fault_o = 1'b1;  // nx_fclass_q, nx_faddr_q
            status_d    = StatusFetchFault;
            err_pc_d    = 32'(f_prog_idx_q);
          end
          st_fault_clr = 1'b1;
          b_state_d    = BCplWait;
        end
      end
      // ---- 5. completion entry, then MSI ----
      BCplWait: begin
        if (cq_next != cq_head_i) b_state_d = BCplReq;  // the ring has room
      end
      BCplReq: begin
        wr_req_valid_o = 1'b1;
        wr_req_o       = '{addr: cq_base_i + 64'(cq_tail_q) * 64'(host_if_pkg::CqEntryBytes),
                           len: 32'(host_if_pkg::CqEntryBytes)};
        if (wr_req_ready_i) b_state_d = BCplData;
      end
      BCplData: begin
        wr_data_valid_o = 1'b1;
        wr_data_o       = '{data: cpl_entry, keep: '1, last: 1'b1};
        if (wr_data_ready_i) b_state_d = BCplDone;
      end
      BCplDone: begin
        wr_done_ready_o = 1'b1;
        if (wr_done_valid_i) begin
          cmd_done_o   = 1'b1;
          prog_error_o = status_q != 0;
          cq_tail_d    = cq_next;
          if (cq_next == 0) phase_d = !phase_q;
          b_state_d    = BMsiReq;
        end
      end
      BMsiReq: begin
        // INT_STATUS was set in the previous cycle; it decides the MSI now.
        if (!(msi_en_i && irq_pending_i)) begin
          b_state_d = BIdle;
        end else begin
          wr_req_valid_o = 1'b1;
          wr_req_o       = '{addr: msi_addr_i, len: 32'd4};
          if (wr_req_ready_i) b_state_d = BMsiData;
        end
      end
      BMsiData: begin
        wr_data_valid_o = 1'b1;
        wr_data_o       = '{data: 128'(msi_data_i), keep: 16'h000f, last: 1'b1};
        if (wr_data_ready_i) b_state_d = BMsiDone;
      end
      BMsiDone: begin
        wr_done_ready_o = 1'b1;
        if (wr_done_valid_i) b_state_d = BIdle;
      end
      default: b_state_d = BIdle;
    endcase

    // A command that ends before it runs (bad entry or window list, fetch
    // fault) completes with its status and no instruction or cycles.
    if (fail) begin
      status_d     = fail_status;
      err_pc_d     = '0;
      cycles_d     = '0;
      release_slot = 1'b1;
      b_state_d    = BCplWait;
    end
  end

  // The window copy: one buffer word a cycle, written into the table the
  // cycle after (in BWinCopy above).
  assign wc_active = b_state_q == BWinCopy && 32'(wc_idx_q) < 32'(e_win_count);
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

  // The buffer's read port: the window copy, or else the program copy (which
  // waits meanwhile).
  assign pf_rd_en   = cp_active_q || wc_active;
  assign pf_rd_addr = wc_active ? PfW'(wc_idx_q) : PfW'(MaxW) + cp_idx_q;

  // ---------------------------------------------------------------------------
  // Soft reset, flops
  // ---------------------------------------------------------------------------
  f_state_e      f_state_n;
  b_state_e      b_state_n;
  logic [15:0]   sq_head_n, cq_tail_n;
  logic          phase_n, sq_error_n, nx_valid_n, cp_active_n, cp_done_n;

  always_comb begin
    f_state_n   = f_state_d;
    b_state_n   = b_state_d;
    sq_head_n   = sq_head_d;
    cq_tail_n   = cq_tail_d;
    phase_n     = phase_d;
    sq_error_n  = sq_error_d;
    // The slot empties when its command starts or completes without running
    // (it is full then, and the prefetch idle).
    nx_valid_n  = nx_fill || (nx_valid_q && !release_slot);
    cp_active_n = cp_active_d;
    cp_done_n   = cp_done_d && !release_slot;
    if (soft_reset_i) begin
      f_state_n   = FIdle;
      b_state_n   = BIdle;
      sq_head_n   = '0;
      cq_tail_n   = '0;
      phase_n     = 1'b1;
      sq_error_n  = 1'b0;
      nx_valid_n  = 1'b0;
      cp_active_n = 1'b0;
      cp_done_n   = 1'b0;
    end
  end

  `FF(f_state_q, f_state_n, FIdle)
  `FF(b_state_q, b_state_n, BIdle)
  `FF(sq_head_q, sq_head_n, '0)
  `FF(cq_tail_q, cq_tail_n, '0)
  `FF(phase_q, phase_n, 1'b1)
  `FF(sq_error_q, sq_error_n, 1'b0)
  `FF(f_beat_q, f_beat_d, 1'b0)
  `FF(f_win_idx_q, f_win_idx_d, '0)
  `FF(f_prog_idx_q, f_prog_idx_d, '0)
  `FF(nx_valid_q, nx_valid_n, 1'b0)
  `FFNR(nx_entry_q, nx_entry_d)
  `FF(nx_head_q, nx_head_d, '0)
  `FF(nx_efault_q, nx_efault_d, 1'b0)
  `FF(nx_bad_q, nx_bad_d, 1'b0)
  `FF(nx_win_bad_q, nx_win_bad_d, 1'b0)
  `FF(nx_fault_q, nx_fault_d, 1'b0)
  `FF(nx_long_q, nx_long_d, 1'b0)
  `FF(nx_direct_q, nx_direct_d, 1'b0)
  `FF(arriving_q, arriving_d && !soft_reset_i, 1'b0)
  `FF(st_fault_q, st_fault_d && !soft_reset_i, 1'b0)
  `FF(nx_fclass_q, nx_fclass_d, dma_pkg::ErrNone)
  `FF(nx_faddr_q, nx_faddr_d, '0)
  `FF(cp_active_q, cp_active_n, 1'b0)
  `FF(cp_rd_q, cp_rd_d && !soft_reset_i, 1'b0)
  `FF(cp_done_q, cp_done_n, 1'b0)
  `FF(cp_idx_q, cp_idx_d, '0)
  `FF(cp_wr_idx_q, cp_wr_idx_d, '0)
  `FF(cp_words_q, cp_words_d, '0)
  `FF(cp_run_q, cp_run_d && !soft_reset_i, 1'b0)
  `FF(cur_id_q, cur_id_d, '0)
  `FF(cur_head_q, cur_head_d, '0)
  `FF(prog_idx_q, prog_idx_d, '0)
  `FF(wc_idx_q, wc_idx_d, '0)
  `FF(wc_rd_q, wc_rd_d && !soft_reset_i, 1'b0)
  `FF(wc_wr_idx_q, wc_wr_idx_d, '0)
  `FF(status_q, status_d, '0)
  `FF(err_pc_q, err_pc_d, '0)
  `FF(cycles_q, cycles_d, '0)
  // A command that keeps the counters reports its own cycles: the counter's
  // value at its start is subtracted.
  assign core_keep_counters_o = e_flags[host_if_pkg::FlagRunKeepCounters];
  assign cyc_base_d = !core_start_o        ? cyc_base_q :
                      core_keep_counters_o ? core_cycles_i : '0;
  `FF(cyc_base_q, cyc_base_d, '0)
  // The window table changes only where a window is written or the table
  // cleared, so it is not copied in every cycle (a model's work). The back
  // end clears it for a command whose windows are not in place and copies a
  // window list into it; the prefetch writes its windows straight into it (no
  // command is being executed then), after the back end's change, and its
  // clear drops that change; a soft reset empties it.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      win_q <= '0;
    end else if (soft_reset_i) begin
      win_q <= '0;
    end else begin
      if (win_b_clr || f_win_clr) win_q <= '0;
      else if (win_b_wr)
        win_q[wc_wr_idx_q] <= '{valid: 1'b1, rd: c_in.access[host_if_pkg::WinAccessRead],
                                wr: c_in.access[host_if_pkg::WinAccessWrite],
                                base: c_in.base, last: c_last};
      if (f_win_wr)
        win_q[f_win_idx_q] <= '{valid: w_ok, rd: w_in.access[host_if_pkg::WinAccessRead],
                                wr: w_in.access[host_if_pkg::WinAccessWrite],
                                base: w_in.base, last: w_end[63:0] - 64'd1};
    end
  end
  assign windows_o = win_q;

  // ---------------------------------------------------------------------------
  // Outputs
  // ---------------------------------------------------------------------------
  // The prefetch and a long program's fetch never read at the same time (the
  // prefetch waits for an empty slot; the long fetch runs while the slot holds
  // its command).
  assign rd_req_valid_o  = f_rd_req_valid || b_rd_req_valid;
  assign rd_req_o        = f_rd_req_valid ? f_rd_req : b_rd_req;
  assign rd_data_ready_o = f_rd_data_ready || b_rd_data_ready;
  assign rd_done_ready_o = f_rd_done_ready || b_rd_done_ready;

  // Instruction memory: the copy from the buffer, or the program's words as
  // they arrive (direct, or a long program's).
  assign imem_wr_en_o   = cp_rd_q || b_imem_wr || f_imem_wr;
  assign imem_wr_addr_o = cp_rd_q   ? PcW'(cp_wr_idx_q) :
                          f_imem_wr ? f_prog_idx_q[PcW-1:0] : prog_idx_q[PcW-1:0];
  assign imem_wr_data_o = cp_rd_q ? pf_rd_data : rd_data_i.data;

  // The running program's words while it arrives or is copied, and after a
  // fault the ones that did arrive (the core's fetch waits at the next, or
  // ends there).
  assign core_imem_filling_o = arriving_q || st_fault_q || cp_run_q;
  assign core_imem_words_o   = cp_run_q ? cp_words_q : (PcW+1)'(f_prog_idx_q);
  assign core_imem_fault_o   = st_fault_q;

  assign run_o      = b_state_q == BRun;
  assign busy_o     = f_state_q != FIdle || b_state_q != BIdle || nx_valid_q;
  assign sq_head_o  = sq_head_q;
  assign cq_tail_o  = cq_tail_q;
  assign sq_error_o = sq_error_q;

  // ---------------------------------------------------------------------------
  // Assertions and cover points
  // ---------------------------------------------------------------------------
  // One reader of the DMA read channel at a time; instruction memory written
  // by one source at a time, and by the copy only while the core allows it.
  `ASSERT(OneReader, !(f_rd_req_valid && b_rd_req_valid) &&
                     !((f_rd_data_ready || f_rd_done_ready) && (b_rd_data_ready || b_rd_done_ready)))
  `ASSERT(OneImemWriter, 32'(cp_rd_q) + 32'(b_imem_wr) + 32'(f_imem_wr) <= 1)
  `ASSERT(DirectOnlyWhileIdle, !(f_win_wr || f_win_clr) || (b_state_q == BIdle && !run_o))
  `ASSERT(DirectProgramWhileIdleOrArriving, !f_imem_wr || (b_state_q == BIdle && !run_o) || arriving_q)
  `ASSERT(FaultOnlyAfterArrival, !(arriving_q && st_fault_q))
  `ASSERT(FillOnlyEmptySlot, !nx_fill || !nx_valid_q)
  `ASSERT(CopyWhileImemFree, !cp_rd_q || core_imem_free_i || cp_run_q || soft_reset_i)
  `ASSERT(StartAfterCopyStarted, !core_start_o || nx_long_q || nx_direct_q || cp_done_q || cp_active_q || cp_rd_q)
  `ASSERT(CopyRunsOnlyItsSlot, !cp_run_q || nx_valid_q)
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
  `COVER(RingHalted,       dma_fault_o && b_state_q == BIdle && nx_efault_q)
  // The submission ring's head and the completion ring's tail wrap to entry
  // 0 (the completion phase flips); a completion waits for room in its ring.
  `COVER(SqWraps,          !soft_reset_i && sq_head_q != '0 && sq_head_d == '0)
  `COVER(CqWraps,          cmd_done_o && cq_next == '0)
  `COVER(CqFullWaits,      b_state_q == BCplWait && cq_next == cq_head_i)
  // Prefetch: the next entry read while a program runs; its program copied
  // while the running one drains (HALT decoded); a program too long for the
  // buffer, fetched after the previous command; a prefetched command waiting
  // for the previous completion.
  `COVER(PrefetchWhileRunning, f_state_q == FEntryReq && rd_req_ready_i && b_state_q == BRun)
  `COVER(DirectFetch,          nx_fill && nx_direct_d && b_state_q == BIdle)
  `COVER(RunsWhileArriving,    run_o && arriving_q && f_imem_wr)
  `COVER(FaultWhileRunning,    arriving_q && st_fault_d)
  `COVER(CopyWhileDraining,    cp_start && b_state_q == BRun)
  `COVER(RunsWhileCopied,      cp_run_q && cp_rd_q && run_o)
  `COVER(WindowsPauseTheCopy,  cp_active_q && wc_active)
  `COVER(LongProgramFetched,   b_state_q == BProgDone && rd_done_valid_i)
  `COVER(SlotWaitsForCpl,      nx_valid_q && b_state_q inside {BCplWait, BCplReq, BCplData, BCplDone})

  logic unused;
  assign unused = ^{wr_done_i, c_in.access};

endmodule
