// SPDX-License-Identifier: Apache-2.0
// Command processor: runs the submission ring.
//
// For each submission entry between the device's head and the host's tail:
//   1. read the 32-byte entry by DMA          (a DMA fault halts the ring)
//   2. check it                               (bad entry: status BAD_COMMAND)
//   2b. read its DMA window list into the window table by DMA (a bad window:
//      BAD_COMMAND; fault: FETCH_FAULT); the core's DMA is held to them
//   3. read the program into instruction memory by DMA (fault: FETCH_FAULT).
//      Its request follows the window list's at once, so the two reads share
//      one host round trip (the DMA delivers them in order: the list's data
//      and done, then the program's); the statuses are decided when both are
//      in, the list's first
//   4. start the core at instruction 0 and wait for it to finish; RHM, WHM
//      and RW go through the DMA engine meanwhile (core_dma_bridge)
//   5. wait for room in the completion ring, write the 16-byte completion
//      entry, then send the MSI if enabled and not masked -- in that order
// Entry formats and status codes: docs/host_interface.md.
// The DMA read and write channels belong to this block except while the core
// runs (run_o), when the core's bridge has them.
`include "tpu_macros.svh"

module cmd_proc #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
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
  // ---- DMA (owned unless run_o) ----
  output logic               run_o,
  output logic               rd_req_valid_o,
  input  logic               rd_req_ready_i,
  output dma_pkg::rd_req_t   rd_req_o,
  input  logic               rd_data_valid_i,
  output logic               rd_data_ready_o,
  input  dma_pkg::rd_data_t  rd_data_i,
  input  logic               rd_done_valid_i,
  output logic               rd_done_ready_o,
  input  dma_pkg::rd_done_t  rd_done_i,
  output logic               dma_fault_o,      // a DMA read of this block failed
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
  output logic               core_start_o,
  input  logic               core_done_i,
  input  logic [3:0]         core_err_i,
  input  logic [31:0]        core_err_pc_i,
  input  logic [31:0]        core_cycles_i,
  // ---- the running command's DMA windows (core_dma_bridge checks them) ----
  output dma_pkg::window_t [dma_pkg::MaxWindows-1:0] windows_o
);

  localparam logic [7:0]  OpRun        = 8'h01;
  localparam logic [15:0] StBadCommand = 16'h0010;
  localparam logic [15:0] StFetchFault = 16'h0011;

  localparam int unsigned WinW = $clog2(dma_pkg::MaxWindows);

  typedef enum logic [4:0] {
    StIdle, StEntryReq, StEntryData, StEntryDone, StWinReq, StWinProgReq, StWinData, StWinDone,
    StProgReq, StProgData, StProgDone,
    StRun, StCplWait, StCplReq, StCplData, StCplDone, StMsiReq, StMsiData, StMsiDone
  } state_e;

  state_e        state_q, state_d;
  logic [15:0]   sq_head_q, sq_head_d, cq_tail_q, cq_tail_d;
  logic          phase_q, phase_d, sq_error_q, sq_error_d;
  logic [255:0]  entry_q, entry_d;
  logic          beat_q, beat_d;
  logic [PcW:0]  prog_idx_q, prog_idx_d;
  logic [15:0]   status_q, status_d;
  logic [31:0]   err_pc_q, err_pc_d, cycles_q, cycles_d;
  dma_pkg::window_t [dma_pkg::MaxWindows-1:0] win_q, win_d;
  logic [WinW-1:0] win_idx_q, win_idx_d;
  logic          win_bad_q, win_bad_d;
  logic          win_fault_q, win_fault_d;  // the window list could not be read
  logic          fail;         // the command completes now, without running
  logic [15:0]   fail_status;

  // Submission entry fields.
  logic [7:0]  e_op, e_flags;
  logic [15:0] e_id;
  logic [31:0] e_len;
  logic [63:0] e_addr, e_win_addr;
  logic [7:0]  e_win_count;
  assign e_op        = entry_q[7:0];
  assign e_flags     = entry_q[15:8];
  assign e_id        = entry_q[31:16];
  assign e_len       = entry_q[63:32];
  assign e_addr      = entry_q[127:64];
  assign e_win_addr  = entry_q[191:128];
  assign e_win_count = entry_q[199:192];

  logic [15:0] sq_mask, cq_mask, cq_next;
  assign sq_mask = (16'd1 << sq_log2_i) - 16'd1;
  assign cq_mask = (16'd1 << cq_log2_i) - 16'd1;
  assign cq_next = (cq_tail_q + 16'd1) & cq_mask;

  logic entry_ok;
  assign entry_ok = (e_op == OpRun) && (e_flags == 8'd0) && (e_len != 0) &&
                    (e_len <= 32'(ImemDepth)) && (entry_q[255:200] == '0) &&
                    (e_win_count <= 8'(dma_pkg::MaxWindows)) &&
                    (e_win_count == 0 || e_win_addr[3:0] == 4'd0);

  // A window as it arrives (one per beat): base, 56-bit length, access byte.
  // It is legal when its length is not 0, its access is read, write or both,
  // and it ends at or before 2^64 - 1.
  logic [63:0] w_base;
  logic [55:0] w_len;
  logic [7:0]  w_access;
  logic [64:0] w_end;      // base + length, one past the last byte
  logic        w_ok;
  assign w_base   = rd_data_i.data[63:0];
  assign w_len    = rd_data_i.data[119:64];
  assign w_access = rd_data_i.data[127:120];
  assign w_end    = {1'b0, w_base} + 65'(w_len);
  assign w_ok     = (w_len != '0) && (w_access[7:2] == '0) && (w_access[1:0] != 2'b00) &&
                    (w_end <= 65'h1_0000_0000_0000_0000);

  always_comb begin
    state_d    = state_q;
    sq_head_d  = sq_head_q;
    cq_tail_d  = cq_tail_q;
    phase_d    = phase_q;
    sq_error_d = sq_error_q;
    entry_d    = entry_q;
    beat_d     = beat_q;
    prog_idx_d = prog_idx_q;
    status_d   = status_q;
    err_pc_d   = err_pc_q;
    cycles_d   = cycles_q;
    win_d      = win_q;
    win_idx_d  = win_idx_q;
    win_bad_d  = win_bad_q;
    win_fault_d = win_fault_q;
    fail       = 1'b0;
    fail_status = '0;

    rd_req_valid_o  = 1'b0;
    rd_req_o        = '0;
    rd_data_ready_o = 1'b0;
    rd_done_ready_o = 1'b0;
    wr_req_valid_o  = 1'b0;
    wr_req_o        = '0;
    wr_data_valid_o = 1'b0;
    wr_data_o       = '0;
    wr_done_ready_o = 1'b0;
    imem_wr_en_o    = 1'b0;
    core_start_o    = 1'b0;
    cmd_done_o      = 1'b0;
    prog_error_o    = 1'b0;
    bad_command_o   = 1'b0;
    dma_fault_o     = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (enable_i && !sq_error_q && (sq_head_q != sq_tail_i)) state_d = StEntryReq;
      end
      // ---- 1. the submission entry ----
      StEntryReq: begin
        rd_req_valid_o = 1'b1;
        rd_req_o       = '{addr: sq_base_i + 64'(sq_head_q) * 64'd32, len: 32'd32};
        if (rd_req_ready_i) begin
          state_d = StEntryData;
          beat_d  = 1'b0;
          entry_d = '0;
        end
      end
      StEntryData: begin
        rd_data_ready_o = 1'b1;
        if (rd_data_valid_i) begin
          if (!beat_q) entry_d[127:0] = rd_data_i.data;
          else         entry_d[255:128] = rd_data_i.data;
          beat_d = 1'b1;
          if (rd_data_i.last) state_d = StEntryDone;
        end
      end
      StEntryDone: begin
        rd_done_ready_o = 1'b1;
        if (rd_done_valid_i) begin
          if (rd_done_i.err != dma_pkg::ErrNone) begin
            // The entry itself could not be read: no id to complete; halt.
            dma_fault_o = 1'b1;
            sq_error_d  = 1'b1;
            state_d     = StIdle;
          end else begin
            sq_head_d = (sq_head_q + 16'd1) & sq_mask;
            win_d     = '0;  // the previous command's windows end here
            win_idx_d = '0;
            win_bad_d = 1'b0;
            win_fault_d = 1'b0;
            if (entry_ok) begin
              state_d = (e_win_count != 0) ? StWinReq : StProgReq;
            end else begin
              bad_command_o = 1'b1;
              fail          = 1'b1;
              fail_status   = StBadCommand;
            end
          end
        end
      end
      // ---- 2b. the window list, one window per beat ----
      StWinReq: begin
        rd_req_valid_o = 1'b1;
        rd_req_o       = '{addr: e_win_addr, len: 32'(e_win_count) * 32'd16};
        if (rd_req_ready_i) state_d = StWinProgReq;
      end
      StWinProgReq: begin
        rd_req_valid_o = 1'b1;
        rd_req_o       = '{addr: e_addr, len: e_len * 32'd16};
        if (rd_req_ready_i) begin
          state_d    = StWinData;
          prog_idx_d = '0;
        end
      end
      StWinData: begin
        rd_data_ready_o = 1'b1;
        if (rd_data_valid_i) begin
          if (rd_data_i.keep == '1) begin
            win_d[win_idx_q] = '{valid: w_ok, rd: w_access[0], wr: w_access[1],
                                 base: w_base, last: w_end[63:0] - 64'd1};
            if (!w_ok) win_bad_d = 1'b1;
            win_idx_d = win_idx_q + 1'b1;
          end
          if (rd_data_i.last) state_d = StWinDone;
        end
      end
      StWinDone: begin
        rd_done_ready_o = 1'b1;
        if (rd_done_valid_i) begin
          if (rd_done_i.err != dma_pkg::ErrNone) begin
            dma_fault_o = 1'b1;  // its class and address, before the program's
            win_fault_d = 1'b1;
          end
          state_d = StProgData;  // already requested
        end
      end
      // ---- 3. the program, one instruction per beat ----
      StProgReq: begin
        rd_req_valid_o = 1'b1;
        rd_req_o       = '{addr: e_addr, len: e_len * 32'd16};
        if (rd_req_ready_i) begin
          state_d    = StProgData;
          prog_idx_d = '0;
        end
      end
      StProgData: begin
        rd_data_ready_o = 1'b1;
        if (rd_data_valid_i) begin
          imem_wr_en_o = prog_idx_q < (PcW+1)'(ImemDepth) && !win_fault_q && !win_bad_q;
          prog_idx_d   = prog_idx_q + 1'b1;
          if (rd_data_i.last) state_d = StProgDone;
        end
      end
      StProgDone: begin
        rd_done_ready_o = 1'b1;
        if (rd_done_valid_i) begin
          if (win_fault_q) begin
            fail        = 1'b1;
            fail_status = StFetchFault;
          end else if (win_bad_q) begin
            bad_command_o = 1'b1;
            fail          = 1'b1;
            fail_status   = StBadCommand;
          end else if (rd_done_i.err != dma_pkg::ErrNone) begin
            dma_fault_o = 1'b1;
            fail        = 1'b1;
            fail_status = StFetchFault;
          end else begin
            core_start_o = 1'b1;
            state_d      = StRun;
          end
        end
      end
      // ---- 4. the program runs ----
      StRun: begin
        if (core_done_i) begin
          status_d = 16'(core_err_i);
          err_pc_d = core_err_pc_i;
          cycles_d = core_cycles_i;
          state_d  = StCplWait;
        end
      end
      // ---- 5. completion entry, then MSI ----
      StCplWait: begin
        if (cq_next != cq_head_i) state_d = StCplReq;  // the ring has room
      end
      StCplReq: begin
        wr_req_valid_o = 1'b1;
        wr_req_o       = '{addr: cq_base_i + 64'(cq_tail_q) * 64'd16, len: 32'd16};
        if (wr_req_ready_i) state_d = StCplData;
      end
      StCplData: begin
        wr_data_valid_o = 1'b1;
        wr_data_o       = '{data: {sq_head_q, 15'd0, phase_q, cycles_q, err_pc_q, status_q, e_id},
                            keep: '1,
                            last: 1'b1};
        if (wr_data_ready_i) state_d = StCplDone;
      end
      StCplDone: begin
        wr_done_ready_o = 1'b1;
        if (wr_done_valid_i) begin
          cmd_done_o   = 1'b1;
          prog_error_o = status_q != 0;
          cq_tail_d    = cq_next;
          if (cq_next == 0) phase_d = !phase_q;
          state_d      = StMsiReq;
        end
      end
      StMsiReq: begin
        // INT_STATUS was set in the previous cycle; it decides the MSI now.
        if (!(msi_en_i && irq_pending_i)) begin
          state_d = StIdle;
        end else begin
          wr_req_valid_o = 1'b1;
          wr_req_o       = '{addr: msi_addr_i, len: 32'd4};
          if (wr_req_ready_i) state_d = StMsiData;
        end
      end
      StMsiData: begin
        wr_data_valid_o = 1'b1;
        wr_data_o       = '{data: 128'(msi_data_i), keep: 16'h000f, last: 1'b1};
        if (wr_data_ready_i) state_d = StMsiDone;
      end
      StMsiDone: begin
        wr_done_ready_o = 1'b1;
        if (wr_done_valid_i) state_d = StIdle;
      end
      default: state_d = StIdle;
    endcase

    // A command that ends before it runs (bad entry or window list, fetch
    // fault) completes with its status and no instruction or cycles.
    if (fail) begin
      status_d = fail_status;
      err_pc_d = '0;
      cycles_d = '0;
      state_d  = StCplWait;
    end

    if (soft_reset_i) begin
      state_d    = StIdle;
      sq_head_d  = '0;
      cq_tail_d  = '0;
      phase_d    = 1'b1;
      sq_error_d = 1'b0;
      win_d      = '0;
    end
  end

  `FF(state_q, state_d, StIdle)
  `FF(sq_head_q, sq_head_d, '0)
  `FF(cq_tail_q, cq_tail_d, '0)
  `FF(phase_q, phase_d, 1'b1)
  `FF(sq_error_q, sq_error_d, 1'b0)
  `FF(beat_q, beat_d, 1'b0)
  `FF(prog_idx_q, prog_idx_d, '0)
  `FF(status_q, status_d, '0)
  `FF(err_pc_q, err_pc_d, '0)
  `FF(cycles_q, cycles_d, '0)
  `FFNR(entry_q, entry_d)
  `FF(win_q, win_d, '0)
  `FF(win_idx_q, win_idx_d, '0)
  `FF(win_bad_q, win_bad_d, 1'b0)
  `FF(win_fault_q, win_fault_d, 1'b0)
  assign windows_o = win_q;

  assign imem_wr_addr_o = prog_idx_q[PcW-1:0];
  assign imem_wr_data_o = rd_data_i.data;
  assign run_o          = state_q == StRun;
  assign busy_o         = state_q != StIdle;
  assign sq_head_o      = sq_head_q;
  assign cq_tail_o      = cq_tail_q;
  assign sq_error_o     = sq_error_q;

  // Cover points. Every status a completion can carry but OK (the program's
  // error codes, docs/isa.md, and the command processor's own), and the ring
  // halted on an unreadable entry.
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
  `COVER(CplBadCommand,    cmd_done_o && status_q == StBadCommand)
  `COVER(CplFetchFault,    cmd_done_o && status_q == StFetchFault)
  `COVER(RingHalted,       dma_fault_o && state_q == StEntryDone)
  // The submission ring's head and the completion ring's tail wrap to entry
  // 0 (the completion phase flips); a completion waits for room in its ring.
  `COVER(SqWraps,          !soft_reset_i && sq_head_q != '0 && sq_head_d == '0)
  `COVER(CqWraps,          cmd_done_o && cq_next == '0)
  `COVER(CqFullWaits,      state_q == StCplWait && cq_next == cq_head_i)

  // Entries and programs are whole beats (their lengths are multiples of 16);
  // a failed read's class and address reach the registers in tpu_top.
  logic unused_dma;
  assign unused_dma = ^{rd_data_i.keep, rd_done_i.err_addr, wr_done_i};

endmodule
