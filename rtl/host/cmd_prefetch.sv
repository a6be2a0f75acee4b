// SPDX-License-Identifier: Apache-2.0
// Command prefetch: while the command slot is empty and the submission ring
// has an entry between the device's head and the host's tail, it
//   1. reads the 32-byte entry by DMA and checks it (a DMA fault: the ring
//      will halt; a bad entry: BAD_COMMAND) and advances SQ_HEAD,
//   2. reads the entry's DMA window list (a bad window: BAD_COMMAND; a
//      fault: FETCH_FAULT) and, requested right after it so both share one
//      host round trip, the program (fault: FETCH_FAULT),
// and fills the slot. Where they go depends on whether a command is being
// executed when the entry arrives (exec_idle_i):
//   - none (direct): the windows go straight into the window table and the
//     program into instruction memory, as they arrive, and the slot fills
//     with the program's first instruction: the core starts on it while the
//     rest arrives (arriving_o; words_o of it are in instruction memory).
//     Should the rest not arrive, fault_o holds (with the class and address
//     in the slot) until the execute side has reported it (fault_clr_i);
//   - one (ahead): the windows and the program go into the prefetch buffer
//     (window i at word i, the program after the MaxWindows words), the
//     program only when it fits; a longer one is fetched when its command is
//     taken (cmd_execute).
// Nothing found is reported here: it is recorded in the slot and reported
// when its command is taken, in command order.
`include "tpu_macros.svh"

module cmd_prefetch #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
  parameter int unsigned PfDepth   = tpu_pkg::Cfg.prefetch_depth,  // prefetch buffer, 16-byte words
  localparam int unsigned PfW    = $clog2(PfDepth),
  localparam int unsigned WinW   = cmd_pkg::WinW,
  localparam int unsigned WordsW = cmd_pkg::words_w(ImemDepth, PfDepth)
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               soft_reset_i,     // forget everything (level, while resetting)
  // ---- the submission ring ----
  input  logic               enable_i,
  input  logic [63:0]        sq_base_i,
  input  logic [3:0]         sq_log2_i,
  input  logic [15:0]        sq_tail_i,        // validated doorbell value
  output logic [15:0]        sq_head_o,
  input  logic               sq_error_i,       // the ring is halted
  // ---- the slot ----
  input  logic               exec_idle_i,      // no command is being executed
  input  logic               run_i,            // the core runs one (cover points only)
  output logic               slot_valid_o,
  output cmd_pkg::slot_t     slot_o,
  input  logic               release_i,        // its command started, or completed without running
  output logic               arriving_o,       // the running program is still arriving, direct:
  output logic [WordsW-1:0]  words_o,          // ... the words written so far,
  output logic               fault_o,          // ... and the rest never will be
  input  logic               fault_clr_i,      // ... which has been reported
  output logic               busy_o,
  // ---- where the fetched words go ----
  output logic               buf_wr_o,         // prefetch buffer, data rd_i.data.data
  output logic [PfW-1:0]     buf_wr_addr_o,
  output logic               win_clr_o,        // window table (direct)
  output logic               win_wr_o,
  output logic [WinW-1:0]    win_idx_o,
  output dma_pkg::window_t   win_o,
  output logic               imem_wr_o,        // instruction memory (direct): word words_o
  // ---- DMA read channel ----
  output dma_pkg::rd_m2s_t   rd_o,
  input  dma_pkg::rd_s2m_t   rd_i
);

  localparam int unsigned MaxW = dma_pkg::MaxWindows;
  // The buffer: the window list in words [0, MaxW), the program after it.
  localparam int unsigned PfProg = PfDepth - MaxW;
  // A window list is an array of win_entry_t, so its address is aligned to one.
  localparam int unsigned WinAlignW = $clog2(host_if_pkg::WinEntryBytes);
  localparam int unsigned InstrBytes = tpu_isa_pkg::InstrW / 8;

  // What is being read: the entry, the window list (and the program right
  // after it), the program.
  typedef enum logic [1:0] {FIdle, FEntry, FWin, FProg} state_e;

  state_e            state_q, state_d;
  logic [15:0]       sq_head_q, sq_head_d;
  logic              beat_q, beat_d;           // the entry's second beat is next
  logic [WinW-1:0]   win_idx_q, win_idx_d;
  logic [WordsW-1:0] prog_idx_q, prog_idx_d;
  // The slot
  logic              nx_valid_q, nx_fill;
  host_if_pkg::sq_entry_t nx_entry_q, nx_entry_d;
  logic [15:0]       nx_head_q, nx_head_d;
  logic              nx_efault_q, nx_efault_d, nx_bad_q, nx_bad_d, nx_win_bad_q, nx_win_bad_d;
  logic              nx_fault_q, nx_fault_d, nx_long_q, nx_long_d, nx_direct_q, nx_direct_d;
  dma_pkg::err_e     nx_fclass_q, nx_fclass_d;
  logic [63:0]       nx_faddr_q, nx_faddr_d;
  // A direct program started before it had all arrived
  logic              arriving_q, arriving_d, st_fault_q, st_fault_d;

  // ---------------------------------------------------------------------------
  // The entry's fields and checks
  // ---------------------------------------------------------------------------
  // The DMA's data beat and status, when beat and done say so.
  dma_pkg::rd_data_t rd_data;
  dma_pkg::rd_done_t rd_status;
  assign rd_data   = rd_i.data;
  assign rd_status = rd_i.done;

  host_if_pkg::sq_entry_t e;
  logic entry_ok, e_fits;
  assign e        = nx_entry_q;
  assign entry_ok = (e.op == host_if_pkg::OpRun) && ((e.flags & ~host_if_pkg::RunFlagsMask) == 8'd0) &&
                    (e.len != 0) && (e.len <= 32'(ImemDepth)) && (e.reserved == '0) &&
                    (e.win_count <= 8'(MaxW)) &&
                    (e.win_count == 0 || e.win_addr[WinAlignW-1:0] == '0);
  // The program fits the buffer (checked with entry_ok).
  assign e_fits   = e.len <= 32'(PfProg);

  logic [15:0] sq_mask;
  assign sq_mask = (16'd1 << sq_log2_i) - 16'd1;

  // A window as it arrives (one per beat). It is legal when its length is not
  // 0, its access is read, write or both, and it ends at or before 2^64 - 1.
  host_if_pkg::win_entry_t w_in;
  logic [64:0] w_end;      // base + length, one past the last byte
  logic        w_ok;
  assign w_in  = rd_data.data;
  assign w_end = {1'b0, w_in.base} + 65'(w_in.len);
  assign w_ok  = (w_in.len != '0) && ((w_in.access & ~host_if_pkg::WinAccessMask) == '0) &&
                 ((w_in.access & host_if_pkg::WinAccessMask) != '0) &&
                 (w_end <= 65'h1_0000_0000_0000_0000);
  assign win_o = '{valid: w_ok, rd: w_in.access[host_if_pkg::WinAccessRead],
                   wr: w_in.access[host_if_pkg::WinAccessWrite],
                   base: w_in.base, last: w_end[63:0] - 64'd1};

  // No command is being executed: this one's windows and program go straight
  // to the window table and instruction memory (nothing is executed until
  // the slot is full, so it stays so until then).
  logic f_direct;
  assign f_direct = exec_idle_i;

  // ---------------------------------------------------------------------------
  // The reads
  // ---------------------------------------------------------------------------
  logic             rd_start, rd_idle, rd_beat, rd_done;
  dma_pkg::rd_req_t entry_req, win_req, prog_req;

  assign entry_req = '{addr: sq_base_i + 64'(sq_head_q) * 64'(host_if_pkg::SqEntryBytes),
                       len: 32'(host_if_pkg::SqEntryBytes)};
  assign win_req   = '{addr: e.win_addr, len: 32'(e.win_count) * 32'(host_if_pkg::WinEntryBytes)};
  assign prog_req  = '{addr: e.addr, len: e.len * 32'(InstrBytes)};
  // Each state's read is requested as it is entered.
  assign rd_start  = state_q != FIdle && rd_idle;

  cmd_dma_rd u_rd (
    .clk_i,
    .rst_ni,
    .clear_i        (soft_reset_i),
    .start_i        (rd_start),
    .chain_i        (state_q == FWin && (e_fits || nx_direct_q)),  // the program right after the list
    .first_i        (state_q == FEntry ? entry_req : state_q == FWin ? win_req : prog_req),
    .second_i       (prog_req),
    .idle_o         (rd_idle),
    .beat_o         (rd_beat),
    .done_o         (rd_done),
    .rd_o,
    .rd_i
  );

  logic rd_err;
  assign rd_err = rd_status.err != dma_pkg::ErrNone;

  always_comb begin
    state_d      = state_q;
    beat_d       = beat_q;
    win_idx_d    = win_idx_q;
    prog_idx_d   = prog_idx_q;
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
    st_fault_d   = st_fault_q && !fault_clr_i;
    win_clr_o     = 1'b0;
    win_wr_o      = 1'b0;
    imem_wr_o     = 1'b0;
    buf_wr_o      = 1'b0;
    buf_wr_addr_o = '0;
    nx_fill       = 1'b0;

    unique case (state_q)
      FIdle: begin
        if (!nx_valid_q && !st_fault_q && enable_i && !sq_error_i && (sq_head_q != sq_tail_i))
          state_d = FEntry;
      end
      // ---- 1. the submission entry, two beats ----
      FEntry: begin
        if (rd_start) begin
          beat_d     = 1'b0;
          nx_entry_d = '0;
        end
        if (rd_beat) begin
          if (!beat_q) nx_entry_d[127:0]   = rd_data.data;
          else         nx_entry_d[255:128] = rd_data.data;
          beat_d = 1'b1;
        end
        if (rd_done) begin
          nx_bad_d     = 1'b0;
          nx_win_bad_d = 1'b0;
          nx_fault_d   = 1'b0;
          nx_long_d    = 1'b0;
          nx_efault_d  = 1'b0;
          nx_direct_d  = f_direct;
          win_idx_d    = '0;
          prog_idx_d   = '0;
          state_d      = FIdle;
          if (rd_err) begin
            // The entry itself could not be read: no id to complete; the
            // ring halts when this slot is taken.
            nx_fill     = 1'b1;
            nx_efault_d = 1'b1;
            nx_fclass_d = rd_status.err;
            nx_faddr_d  = rd_status.err_addr;
          end else begin
            sq_head_d = (sq_head_q + 16'd1) & sq_mask;
            nx_head_d = (sq_head_q + 16'd1) & sq_mask;
            win_clr_o = f_direct;  // the previous command's windows end here
            if (!entry_ok) begin
              nx_fill  = 1'b1;
              nx_bad_d = 1'b1;
            end else if (e.win_count != 0) begin
              state_d = FWin;
            end else if (e_fits || f_direct) begin
              state_d = FProg;
            end else begin
              nx_fill   = 1'b1;
              nx_long_d = 1'b1;
            end
          end
        end
      end
      // ---- 2. the window list, one window per beat (then the program) ----
      FWin: begin
        if (rd_beat && rd_data.keep == '1) begin
          buf_wr_o      = !nx_direct_q;
          win_wr_o      = nx_direct_q;
          buf_wr_addr_o = PfW'(win_idx_q);
          if (!w_ok) nx_win_bad_d = 1'b1;
          win_idx_d = win_idx_q + 1'b1;
        end
        if (rd_done) begin
          if (rd_err) begin
            // Reported before the program's, as its class and address.
            nx_fault_d  = 1'b1;
            nx_fclass_d = rd_status.err;
            nx_faddr_d  = rd_status.err_addr;
          end
          if (e_fits || nx_direct_q) begin
            state_d = FProg;  // already requested
          end else begin
            state_d   = FIdle;
            nx_fill   = 1'b1;
            nx_long_d = 1'b1;
          end
        end
      end
      // ---- 3. the program, one instruction per beat ----
      FProg: begin
        if (rd_beat) begin
          // Straight into imem, unless the list was bad or unreadable (the
          // command will not run); or into the buffer. A beat without data
          // (keep 0) ends a read that failed.
          imem_wr_o     = nx_direct_q && rd_data.keep == '1 && 32'(prog_idx_q) < 32'(ImemDepth) &&
                          !nx_win_bad_q && !nx_fault_q;
          buf_wr_o      = !nx_direct_q && 32'(prog_idx_q) < 32'(PfProg);
          buf_wr_addr_o = PfW'(MaxW) + PfW'(prog_idx_q);
          prog_idx_d    = prog_idx_q + WordsW'(rd_data.keep == '1);
          // Direct: the command can start on its first instruction.
          if (imem_wr_o && !arriving_q) begin
            nx_fill    = 1'b1;
            arriving_d = 1'b1;
          end
        end
        if (rd_done) begin
          state_d = FIdle;
          if (arriving_q) begin
            // Its command runs already: the words that arrived are all it
            // will get when the rest failed.
            arriving_d = 1'b0;
            if (rd_err) begin
              st_fault_d  = 1'b1;
              nx_fclass_d = rd_status.err;
              nx_faddr_d  = rd_status.err_addr;
            end
          end else begin
            // The program's fault counts only when its list was fine (as the
            // list's fault or malformation is the status then).
            if (rd_err && !nx_fault_q && !nx_win_bad_q) begin
              nx_fault_d  = 1'b1;
              nx_fclass_d = rd_status.err;
              nx_faddr_d  = rd_status.err_addr;
            end
            nx_fill = 1'b1;
          end
        end
      end
      default: state_d = FIdle;
    endcase
  end

  // ---------------------------------------------------------------------------
  // Flops; a soft reset empties the slot and restarts at the ring's entry 0
  // ---------------------------------------------------------------------------
  `FF(state_q, soft_reset_i ? FIdle : state_d, FIdle)
  `FF(sq_head_q, soft_reset_i ? '0 : sq_head_d, '0)
  // The slot empties when its command starts or completes without running
  // (it is full then, and the prefetch idle).
  `FF(nx_valid_q, !soft_reset_i && (nx_fill || (nx_valid_q && !release_i)), 1'b0)
  `FF(beat_q, beat_d, 1'b0)
  `FF(win_idx_q, win_idx_d, '0)
  `FF(prog_idx_q, prog_idx_d, '0)
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

  assign sq_head_o    = sq_head_q;
  assign slot_valid_o = nx_valid_q;
  assign slot_o       = '{entry: nx_entry_q, head: nx_head_q, efault: nx_efault_q, bad: nx_bad_q,
                          win_bad: nx_win_bad_q, fault: nx_fault_q, too_long: nx_long_q,
                          direct: nx_direct_q, fclass: nx_fclass_q, faddr: nx_faddr_q};
  assign arriving_o   = arriving_q;
  assign words_o      = prog_idx_q;
  assign fault_o      = st_fault_q;
  assign win_idx_o    = win_idx_q;
  assign busy_o       = state_q != FIdle;

  logic unused;  // the execute side's; the sequencer's
  assign unused = ^{e.id, rd_data.last};

  `ASSERT(FaultOnlyAfterArrival, !(arriving_q && st_fault_q))
  `ASSERT(FillOnlyEmptySlot, !nx_fill || !nx_valid_q)
  // The submission ring's head wraps to entry 0; the next entry read while a
  // program runs; a fetch that found the device idle; a direct program whose
  // rest could not be read while it ran.
  `COVER(SqWraps,              !soft_reset_i && sq_head_q != '0 && sq_head_d == '0)
  `COVER(PrefetchWhileRunning, state_q == FEntry && rd_o.req_valid && rd_i.req_ready && run_i)
  `COVER(DirectFetch,          nx_fill && nx_direct_d && exec_idle_i)
  `COVER(FaultWhileRunning,    arriving_q && st_fault_d)

endmodule
