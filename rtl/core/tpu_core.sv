// SPDX-License-Identifier: Apache-2.0
// TPU compute core: instruction memory, controller, the four execution units
// (memory, weight, matrix, vector), the unified buffer and the accumulators.
//
// Host side (tpu_top connects it to the command processor and the DMA engine):
//   imem_wr_*   writes the program into instruction memory, while no program
//               runs or once the running one's HALT is decoded (imem_free_o),
//               or behind a running program that started before it had all
//               arrived (imem_filling_i: only its first imem_words_i words
//               are fetched; imem_fault_i: the rest will not come)
//   start_i     runs it from start_pc_i; done_o pulses at the end with
//               err_code_o / err_pc_o (index of the faulting instruction)
//   mem_*       one memory port for RHM, WHM and RW, in bursts of rows of N
//               bytes: a request is {write, address, rows}; read data returns
//               one beat per row in request order, each with an error bit;
//               write data leaves one beat per row in request order; each
//               write request gets one acknowledge with an error bit
//
// Datapath (Cfg.datapath): in bf16 and both configurations the controller
// accepts the bf16 forms, the weight FIFO and the MXU have 16-bit lanes, the
// matrix unit reads wide rows through a fifth UB read port and the
// accumulators add fp32 rows in fp32 (docs/numerics.md).
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module tpu_core #(
  // Every size comes from one configuration (rtl/common/tpu_pkg.sv).
  parameter tpu_pkg::cfg_t Cfg   = tpu_pkg::Cfg,
  localparam int unsigned RowsW        = core_pkg::MemRowsW, // bits of a memory request's row count
  localparam int unsigned N            = Cfg.array_n,       // MXU is N x N, rows are N lanes
  localparam int unsigned ImemDepth    = Cfg.imem_depth,    // instructions
  localparam int unsigned UbRows       = Cfg.ub_rows,       // unified buffer rows of N int8
  localparam int unsigned AccRows      = Cfg.acc_rows,      // accumulator rows of N int32
  localparam int unsigned WgtFifoTiles = Cfg.wgt_fifo_tiles,  // weight FIFO depth in N x N tiles
  localparam int unsigned PcW          = $clog2(ImemDepth),
  localparam tpu_pkg::datapath_e Datapath = Cfg.datapath,      // MXU arithmetic
  localparam bit          HasBf16      = Datapath != tpu_pkg::DatapathInt8,
  localparam int unsigned LaneW        = HasBf16 ? 16 : 8       // weight lane bits
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  // ---- program loading and control ----
  input  logic                        imem_wr_en_i,
  input  logic [PcW-1:0]              imem_wr_addr_i,
  input  logic [127:0]                imem_wr_data_i,
  input  logic                        start_i,
  input  logic                        keep_counters_i,  // with start_i: the counters go on from their values
  input  logic [31:0]                 start_pc_i,
  input  logic                        imem_filling_i,  // the program still arriving: only
  input  logic [PcW:0]                imem_words_i,    // ... its first words are in imem,
  input  logic                        imem_fault_i,    // ... and the rest never will be
  output logic                        imem_free_o,  // imem may be written: no word read now is issued
  output logic                        busy_o,
  output logic                        done_o,
  output logic [3:0]                  err_code_o,
  output logic [31:0]                 err_pc_o,
  output logic                        irq_o,
  // ---- memory port ----
  output logic                        mem_req_valid_o,
  input  logic                        mem_req_ready_i,
  output logic                        mem_req_write_o,
  output logic [63:0]                 mem_req_addr_o,
  output logic [RowsW-1:0]            mem_req_rows_o,
  output logic [63:0]                 mem_req_first_o,  // the instruction's host span,
  output logic [64:0]                 mem_req_last_o,   // for the device's DMA windows
  input  logic                        mem_rd_valid_i,
  output logic                        mem_rd_ready_o,
  input  logic [N-1:0][7:0]           mem_rd_data_i,
  input  logic                        mem_rd_err_i,
  output logic                        mem_wr_valid_o,
  input  logic                        mem_wr_ready_i,
  output logic [N-1:0][7:0]           mem_wr_data_o,
  input  logic                        mem_wr_ack_valid_i,
  input  logic                        mem_wr_ack_err_i,
  // ---- performance counters ----
  output logic [63:0]                 perf_cycles_o,
  output logic [63:0]                 perf_mxu_busy_o,
  output logic [63:0]                 perf_useful_macs_o,
  output logic [63:0]                 perf_wgt_stall_o,
  output logic [63:0]                 perf_wgt_shift_o,
  output logic [63:0]                 perf_dep_stall_o,
  output logic [63:0]                 perf_mem_stall_o
);

  import tpu_isa_pkg::*;

  tpu_cfg_check #(.Cfg(Cfg)) u_cfg_check ();
  if (PcW > core_pkg::CmdPcW) begin : gen_bad_imem
    $error("tpu_core: ImemDepth must be at most 2^core_pkg::CmdPcW");
  end

  localparam int unsigned NU       = NumUnits;
  localparam int unsigned UbAddrW  = $clog2(UbRows);
  localparam int unsigned AccAddrW = $clog2(AccRows);
  localparam int unsigned QueueDepth = 4;
  localparam int unsigned SbDepth  = 8;   // commands in flight per unit (the scoreboard's rings)

  // ---------------------------------------------------------------------------
  // Instruction memory
  // ---------------------------------------------------------------------------
  // Block RAM, written by the host while the core is idle or the running
  // program's HALT waits to issue (imem_free_o). The controller
  // reads it synchronously, addressed with its next pc.
  logic [PcW-1:0]    imem_rd_addr;
  instr_t            imem_rd_data;

  ram_1r1w #(
    .Width($bits(instr_t)),
    .Depth(ImemDepth)
  ) u_imem (
    .clk_i,
    .wr_en_i  (imem_wr_en_i),
    .wr_addr_i(imem_wr_addr_i),
    .wr_data_i(imem_wr_data_i),
    .rd_en_i  (1'b1),
    .rd_addr_i(imem_rd_addr),
    .rd_data_o(imem_rd_data)
  );

  // ---------------------------------------------------------------------------
  // Controller and unit queues
  // ---------------------------------------------------------------------------
  logic [NU-1:0]     cmd_valid, cmd_ready, unit_done, unit_start, unit_hold;
  core_pkg::unit_cmd_t cmd;
  logic              flush, mem_block, mem_fault, dep_stall;
  logic [PcW-1:0]    mem_fault_pc;
  logic              mem_quiet;
  err_e              err_code;
  logic              rhm_fill;
  logic [$clog2(UbRows)-1:0] rhm_fill_lo, rhm_fill_last;
  logic [$clog2(UbRows):0]   rhm_fill_rows;
  // The vector unit's command in progress and the UB rows it has written
  // (a WHM of those rows may follow it).
  logic                      vpu_fill;
  logic [$clog2(UbRows)-1:0] vpu_fill_next;
  logic [$clog2(UbRows):0]   vpu_fill_end;
  // The matrix unit's oldest command and the ACC rows it has written (an
  // ACT of those rows may follow it).
  logic                       mmc_fill;
  logic [$clog2(AccRows)-1:0] mmc_fill_lo;
  logic [$clog2(AccRows):0]   mmc_fill_total, mmc_fill_rows;

  tpu_ctrl #(
    .ImemDepth  (ImemDepth),
    .UbRows     (UbRows),
    .AccRows    (AccRows),
    .N          (N),
    .WgtCapacity(WgtFifoTiles + WgtBanks),
    .SbDepth    (SbDepth),
    .Datapath   (Datapath)
  ) u_ctrl (
    .clk_i,
    .rst_ni,
    .start_i,
    .start_pc_i,
    .imem_filling_i,
    .imem_words_i,
    .imem_fault_i,
    .busy_o,
    .done_o,
    .err_code_o    (err_code),
    .err_pc_o,
    .irq_o,
    .imem_rd_addr_o(imem_rd_addr),
    .imem_rd_data_i(imem_rd_data),
    .imem_free_o,
    .cmd_valid_o   (cmd_valid),
    .cmd_ready_i   (cmd_ready),
    .cmd_o         (cmd),
    .unit_start_i  (unit_start),
    .unit_hold_o   (unit_hold),
    .unit_done_i   (unit_done),
    .rhm_fill_i    (rhm_fill),
    .rhm_fill_lo_i (rhm_fill_lo),
    .rhm_fill_last_i(rhm_fill_last),
    .mem_fault_i   (mem_fault),
    .mem_fault_pc_i(mem_fault_pc),
    .mem_block_o   (mem_block),
    .mem_quiet_i   (mem_quiet),
    .flush_o       (flush),
    .dep_stall_o   (dep_stall)
  );
  assign err_code_o = err_code;

  // A queue's head reaches its unit only when the controller does not hold it.
  logic [NU-1:0]     q_valid, q_ready, fifo_valid;
  core_pkg::unit_cmd_t [NU-1:0] q_cmd;

  for (genvar u = 0; u < NU; u++) begin : gen_queue
    logic [$clog2(QueueDepth+1)-1:0] unused_count;
    stream_fifo #(
      .Width($bits(core_pkg::unit_cmd_t)),
      .Depth(QueueDepth)
    ) u_queue (
      .clk_i,
      .rst_ni,
      .clear_i(flush),
      .valid_i(cmd_valid[u]),
      .ready_o(cmd_ready[u]),
      .data_i (cmd),
      .valid_o(fifo_valid[u]),
      .ready_i(q_ready[u] && !unit_hold[u]),
      .data_o (q_cmd[u]),
      .count_o(unused_count)
    );
    assign q_valid[u]    = fifo_valid[u] && !unit_hold[u];
    assign unit_start[u] = q_valid[u] && q_ready[u];
  end

  // ---------------------------------------------------------------------------
  // Memories
  // ---------------------------------------------------------------------------
  // UB ports: reads by the memory unit (WHM), the matrix unit and the VPU
  // (A, B), and in bf16 and both configurations the matrix unit's second
  // (the odd rows of wide rows); writes by the memory unit (RHM) and the VPU.
  localparam int unsigned UbRdMem = 0, UbRdMmc = 1, UbRdVpuA = 2, UbRdVpuB = 3;  // then mmc2
  localparam int unsigned UbWrMem = 0, UbWrVpu = 1;
  localparam int unsigned UbRdPorts = HasBf16 ? 5 : 4;

  logic [3:0]               ub_rd_req_valid, ub_rd_req_ready, ub_rd_rsp_valid;
  logic [3:0][UbAddrW-1:0]  ub_rd_req_addr;
  logic [3:0][N-1:0][7:0]   ub_rd_rsp_data;
  // The matrix unit's second read port (bf16 and both configurations only).
  logic                     mmc2_rd_req_valid, mmc2_rd_req_ready, mmc2_rd_rsp_valid;
  logic [UbAddrW-1:0]       mmc2_rd_req_addr;
  logic [N-1:0][7:0]        mmc2_rd_rsp_data;
  // All read ports of the UB.
  logic [UbRdPorts-1:0]              ub_rd_all_req_valid, ub_rd_all_req_ready, ub_rd_all_rsp_valid;
  logic [UbRdPorts-1:0][UbAddrW-1:0] ub_rd_all_req_addr;
  logic [UbRdPorts-1:0][N-1:0][7:0]  ub_rd_all_rsp_data;

  if (HasBf16) begin : gen_ub_mmc2
    assign ub_rd_all_req_valid = {mmc2_rd_req_valid, ub_rd_req_valid};
    assign ub_rd_all_req_addr  = {mmc2_rd_req_addr, ub_rd_req_addr};
    assign {mmc2_rd_req_ready, ub_rd_req_ready} = ub_rd_all_req_ready;
    assign {mmc2_rd_rsp_valid, ub_rd_rsp_valid} = ub_rd_all_rsp_valid;
    assign {mmc2_rd_rsp_data, ub_rd_rsp_data}   = ub_rd_all_rsp_data;
  end else begin : gen_no_ub_mmc2
    assign ub_rd_all_req_valid = ub_rd_req_valid;
    assign ub_rd_all_req_addr  = ub_rd_req_addr;
    assign ub_rd_req_ready     = ub_rd_all_req_ready;
    assign ub_rd_rsp_valid     = ub_rd_all_rsp_valid;
    assign ub_rd_rsp_data      = ub_rd_all_rsp_data;
    assign mmc2_rd_req_ready   = 1'b0;
    assign mmc2_rd_rsp_valid   = 1'b0;
    assign mmc2_rd_rsp_data    = '0;
    logic unused_mmc2;
    assign unused_mmc2 = ^{mmc2_rd_req_valid, mmc2_rd_req_addr};
  end
  logic [1:0]               ub_wr_valid, ub_wr_ready;
  logic [1:0][UbAddrW-1:0]  ub_wr_addr;
  logic [1:0][N-1:0][7:0]   ub_wr_data;

  tpu_ub #(
    .N      (N),
    .Rows   (UbRows),
    .RdPorts(UbRdPorts),
    .WrPorts(2),
    .RdFirst(HasBf16 ? (1 << UbRdMmc) | (1 << 4) : (1 << UbRdMmc)),
    .Banks  (HasBf16 ? 8 : 4),  // bf16: four parts of two banks (the planner's
    .Parts  (HasBf16 ? 4 : 1)   // copy of the rule: tpu::ub_parts)
  ) u_ub (
    .clk_i,
    .rst_ni,
    .rd_req_valid_i(ub_rd_all_req_valid),
    .rd_req_ready_o(ub_rd_all_req_ready),
    .rd_req_addr_i (ub_rd_all_req_addr),
    .rd_rsp_valid_o(ub_rd_all_rsp_valid),
    .rd_rsp_data_o (ub_rd_all_rsp_data),
    .wr_valid_i    (ub_wr_valid),
    .wr_ready_o    (ub_wr_ready),
    .wr_addr_i     (ub_wr_addr),
    .wr_data_i     (ub_wr_data)
  );

  logic                     acc_wr_en, acc_wr_accumulate, acc_wr_bf16, acc_rd_en;
  logic [AccAddrW-1:0]      acc_wr_addr, acc_rd_addr;
  logic [N-1:0][31:0]       acc_wr_data, acc_rd_data;

  tpu_acc #(
    .N   (N),
    .Rows(AccRows),
    .Fp32(HasBf16)
  ) u_acc (
    .clk_i,
    .rst_ni,
    .wr_en_i        (acc_wr_en),
    .wr_accumulate_i(acc_wr_accumulate),
    .wr_bf16_i      (acc_wr_bf16),
    .wr_addr_i      (acc_wr_addr),
    .wr_data_i      (acc_wr_data),
    .rd_en_i        (acc_rd_en),
    .rd_addr_i      (acc_rd_addr),
    .rd_data_o      (acc_rd_data)
  );

  // ---------------------------------------------------------------------------
  // Memory port, shared by the memory unit (0) and the weight unit (1)
  // ---------------------------------------------------------------------------
  typedef `CORE_MEM_REQ_T(N) mem_req_t;
  typedef `CORE_MEM_RSP_T(N) mem_rsp_t;
  localparam int unsigned MemUnit = 0, WgtUnit = 1;  // the arbiter's requesters
  mem_req_t [1:0] unit_req;
  mem_rsp_t [1:0] unit_rsp;
  mem_req_t       mem_req;
  mem_rsp_t       mem_rsp;

  mem_arbiter #(
    .N          (N),
    .Outstanding(Cfg.mem_outstanding)
  ) u_mem_arb (
    .clk_i,
    .rst_ni,
    .block_i  (mem_block),
    .quiet_o  (mem_quiet),
    .req_i    (unit_req),
    .rsp_o    (unit_rsp),
    .mem_req_o(mem_req),
    .mem_rsp_i(mem_rsp)
  );

  // The port's signals one by one (the simulation harness drives them so).
  assign mem_req_valid_o = mem_req.req_valid;
  assign mem_req_write_o = mem_req.req.write;
  assign mem_req_addr_o  = mem_req.req.addr;
  assign mem_req_rows_o  = mem_req.req.rows;
  assign mem_req_first_o = mem_req.req.first;
  assign mem_req_last_o  = mem_req.req.last;
  assign mem_rd_ready_o  = mem_req.rd_ready;
  assign mem_wr_valid_o  = mem_req.wr_valid;
  assign mem_wr_data_o   = mem_req.wr_data;
  assign mem_rsp = '{req_ready: mem_req_ready_i, rd_valid: mem_rd_valid_i, rd_data: mem_rd_data_i,
                     rd_err: mem_rd_err_i, wr_ready: mem_wr_ready_i,
                     wr_ack_valid: mem_wr_ack_valid_i, wr_ack_err: mem_wr_ack_err_i};

  // ---------------------------------------------------------------------------
  // Units
  // ---------------------------------------------------------------------------
  logic             mem_unit_fault, wgt_unit_fault, mem_waiting, wgt_waiting;
  logic [PcW-1:0]   mem_unit_fault_pc, wgt_unit_fault_pc;

  unit_mem #(
    .N     (N),
    .UbRows(UbRows),
    .PcW   (PcW)
  ) u_unit_mem (
    .clk_i,
    .rst_ni,
    .flush_i     (flush),
    .cmd_valid_i (q_valid[UnitMem]),
    .cmd_ready_o (q_ready[UnitMem]),
    .cmd_i       (q_cmd[UnitMem]),
    .done_o      (unit_done[UnitMem]),
    .fault_o     (mem_unit_fault),
    .fault_pc_o  (mem_unit_fault_pc),
    .waiting_o   (mem_waiting),
    .rhm_fill_o     (rhm_fill),
    .rhm_fill_lo_o  (rhm_fill_lo),
    .rhm_fill_last_o(rhm_fill_last),
    .rhm_fill_rows_o(rhm_fill_rows),
    .vpu_fill_i      (vpu_fill),
    .vpu_fill_next_i (vpu_fill_next),
    .vpu_fill_end_i  (vpu_fill_end),
    .mem_req_o   (unit_req[MemUnit]),
    .mem_rsp_i   (unit_rsp[MemUnit]),
    .ub_rd_req_valid_o(ub_rd_req_valid[UbRdMem]),
    .ub_rd_req_ready_i(ub_rd_req_ready[UbRdMem]),
    .ub_rd_req_addr_o (ub_rd_req_addr[UbRdMem]),
    .ub_rd_rsp_valid_i(ub_rd_rsp_valid[UbRdMem]),
    .ub_rd_rsp_data_i (ub_rd_rsp_data[UbRdMem]),
    .ub_wr_valid_o    (ub_wr_valid[UbWrMem]),
    .ub_wr_ready_i    (ub_wr_ready[UbWrMem]),
    .ub_wr_addr_o     (ub_wr_addr[UbWrMem]),
    .ub_wr_data_o     (ub_wr_data[UbWrMem])
  );

  logic                    wgt_valid, wgt_ready;
  logic [N-1:0][LaneW-1:0] wgt_row;

  unit_wgt #(
    .N        (N),
    .FifoTiles(WgtFifoTiles),
    .PcW      (PcW),
    .Bf16     (HasBf16)
  ) u_unit_wgt (
    .clk_i,
    .rst_ni,
    .flush_i    (flush),
    .cmd_valid_i(q_valid[UnitWgt]),
    .cmd_ready_o(q_ready[UnitWgt]),
    .cmd_i      (q_cmd[UnitWgt]),
    .done_o     (unit_done[UnitWgt]),
    .fault_o    (wgt_unit_fault),
    .fault_pc_o (wgt_unit_fault_pc),
    .waiting_o  (wgt_waiting),
    .mem_req_o  (unit_req[WgtUnit]),
    .mem_rsp_i  (unit_rsp[WgtUnit]),
    .wgt_valid_o(wgt_valid),
    .wgt_ready_i(wgt_ready),
    .wgt_row_o  (wgt_row)
  );

  // Both units can fault in the same cycle (a read row of one, a write
  // acknowledge of the other); the memory unit's is reported.
  assign mem_fault    = mem_unit_fault || wgt_unit_fault;
  assign mem_fault_pc = mem_unit_fault ? mem_unit_fault_pc : wgt_unit_fault_pc;

  logic row_fire, wgt_stall, wgt_shift;

  unit_mmc #(
    .N       (N),
    .UbRows  (UbRows),
    .AccRows (AccRows),
    .Datapath(Datapath),
    .Cmds    (SbDepth)
  ) u_unit_mmc (
    .clk_i,
    .rst_ni,
    .flush_i            (flush),
    .cmd_valid_i        (q_valid[UnitMmc]),
    .cmd_ready_o        (q_ready[UnitMmc]),
    .cmd_i              (q_cmd[UnitMmc]),
    .done_o             (unit_done[UnitMmc]),
    .ub_rd_req_valid_o  (ub_rd_req_valid[UbRdMmc]),
    .ub_rd_req_ready_i  (ub_rd_req_ready[UbRdMmc]),
    .ub_rd_req_addr_o   (ub_rd_req_addr[UbRdMmc]),
    .ub_rd_rsp_valid_i  (ub_rd_rsp_valid[UbRdMmc]),
    .ub_rd_rsp_data_i   (ub_rd_rsp_data[UbRdMmc]),
    .ub2_rd_req_valid_o (mmc2_rd_req_valid),
    .ub2_rd_req_ready_i (mmc2_rd_req_ready),
    .ub2_rd_req_addr_o  (mmc2_rd_req_addr),
    .ub2_rd_rsp_valid_i (mmc2_rd_rsp_valid),
    .ub2_rd_rsp_data_i  (mmc2_rd_rsp_data),
    .ld_fill_i          (rhm_fill),
    .ld_lo_i            (rhm_fill_lo),
    .ld_last_i          (rhm_fill_last),
    .ld_rows_i          (rhm_fill_rows),
    .wgt_valid_i        (wgt_valid),
    .wgt_ready_o        (wgt_ready),
    .wgt_row_i          (wgt_row),
    .acc_wr_en_o        (acc_wr_en),
    .acc_wr_accumulate_o(acc_wr_accumulate),
    .acc_wr_bf16_o      (acc_wr_bf16),
    .acc_wr_addr_o      (acc_wr_addr),
    .acc_wr_data_o      (acc_wr_data),
    .fill_o             (mmc_fill),
    .fill_lo_o          (mmc_fill_lo),
    .fill_total_o       (mmc_fill_total),
    .fill_rows_o        (mmc_fill_rows),
    .row_fire_o         (row_fire),
    .wgt_stall_o        (wgt_stall),
    .wgt_shift_o        (wgt_shift)
  );

  unit_vpu #(
    .N       (N),
    .UbRows  (UbRows),
    .AccRows (AccRows),
    .Datapath(Datapath)
  ) u_unit_vpu (
    .clk_i,
    .rst_ni,
    .flush_i      (flush),
    .cmd_valid_i  (q_valid[UnitVpu]),
    .cmd_ready_o  (q_ready[UnitVpu]),
    .cmd_i        (q_cmd[UnitVpu]),
    .done_o       (unit_done[UnitVpu]),
    .acc_rd_en_o  (acc_rd_en),
    .acc_rd_addr_o(acc_rd_addr),
    .acc_rd_data_i(acc_rd_data),
    .ub_rd_req_valid_o(ub_rd_req_valid[UbRdVpuB:UbRdVpuA]),
    .ub_rd_req_ready_i(ub_rd_req_ready[UbRdVpuB:UbRdVpuA]),
    .ub_rd_req_addr_o (ub_rd_req_addr[UbRdVpuB:UbRdVpuA]),
    .ub_rd_rsp_valid_i(ub_rd_rsp_valid[UbRdVpuB:UbRdVpuA]),
    .ub_rd_rsp_data_i (ub_rd_rsp_data[UbRdVpuB:UbRdVpuA]),
    .ub_wr_valid_o(ub_wr_valid[UbWrVpu]),
    .ub_wr_ready_i(ub_wr_ready[UbWrVpu]),
    .ub_wr_addr_o (ub_wr_addr[UbWrVpu]),
    .ub_wr_data_o (ub_wr_data[UbWrVpu]),
    .mmc_fill_i      (mmc_fill),
    .mmc_fill_lo_i   (mmc_fill_lo),
    .mmc_fill_total_i(mmc_fill_total),
    .mmc_fill_rows_i (mmc_fill_rows),
    .fill_o       (vpu_fill),
    .fill_next_o  (vpu_fill_next),
    .fill_end_o   (vpu_fill_end)
  );

  // ---------------------------------------------------------------------------
  // Performance counters
  // ---------------------------------------------------------------------------
  tpu_perf #(
    .N(N)
  ) u_perf (
    .clk_i,
    .rst_ni,
    .start_i      (start_i && !busy_o && !keep_counters_i),
    .busy_i       (busy_o),
    .row_fire_i   (row_fire),
    .wgt_stall_i  (wgt_stall),
    .wgt_shift_i  (wgt_shift),
    .dep_stall_i  (dep_stall),
    .mem_stall_i  ((mem_waiting && !unit_rsp[MemUnit].rd_valid) || (wgt_waiting && !unit_rsp[WgtUnit].rd_valid)),
    .cycles_o     (perf_cycles_o),
    .mxu_busy_o   (perf_mxu_busy_o),
    .useful_macs_o(perf_useful_macs_o),
    .wgt_stall_o  (perf_wgt_stall_o),
    .wgt_shift_o  (perf_wgt_shift_o),
    .dep_stall_o  (perf_dep_stall_o),
    .mem_stall_o  (perf_mem_stall_o)
  );

endmodule
