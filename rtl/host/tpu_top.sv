// SPDX-License-Identifier: Apache-2.0
// The TPU as a PCIe-style device: BAR0 registers on the MMIO streams (cq/cc),
// a DMA engine on the memory streams (rq/rc), the command processor that
// runs the submission and completion rings, and the compute core.
//
//   cq -> MMIO decode -> tpu_regs (generated from rtl/host/tpu_regs.rdl) -> cc
//   cmd_proc: ring entries, program fetch into instruction memory (the next
//             command's while the current one runs), completion entry, MSI
//                                             -> DMA engine <-> rq/rc
//   tpu_core: RHM/WHM/RW -> core_dma_bridge  -> DMA engine (reads shared with
//             cmd_proc, writes while the core runs)
// MMIO: one 32-bit access per cq beat. Reads are answered on cc; an offset
// past the 4 KiB BAR, an unaligned one or an unmapped one reads as UR (and a
// write is dropped), and either sets ERR_CAUSE.mmio_unmapped.
// Doorbells are checked: a tail or head value outside the ring is ignored and
// sets ERR_CAUSE.bad_doorbell (ERR_ADDR = the value). A soft reset (CTRL)
// stops the DMA engine (no request leaves after STATUS.reset_busy falls),
// holds the core in reset, empties the rings' state and clears the doorbells.
// See docs/host_interface.md.
`include "tpu_macros.svh"
`include "core_mem_port.svh"

module tpu_top #(
  // Every size comes from one configuration (rtl/common/tpu_pkg.sv,
  // generated from scripts/config_table.py).
  parameter tpu_pkg::cfg_t Cfg = tpu_pkg::Cfg
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  tlp_pkg::link_cfg_t link_cfg_i,
  input  logic [31:0]        cpl_timeout_i,    // cycles; 0 selects Cfg.dma_timeout
  // ---- MMIO ----
  input  logic               cq_valid_i,
  output logic               cq_ready_o,
  input  tlp_pkg::cq_t       cq_i,
  output logic               cc_valid_o,
  input  logic               cc_ready_i,
  output tlp_pkg::cc_t       cc_o,
  // ---- DMA ----
  output logic               rq_valid_o,
  input  logic               rq_ready_i,
  output tlp_pkg::rq_t       rq_o,
  input  logic               rc_valid_i,
  output logic               rc_ready_o,
  input  tlp_pkg::rc_t       rc_i,
  // ---- status, for a board's LEDs ----
  output logic               busy_o,           // STATUS.busy
  output logic               error_o           // ERR_CAUSE is not zero
);

  localparam int unsigned N         = Cfg.array_n;
  localparam int unsigned ImemDepth = Cfg.imem_depth;
  localparam int unsigned PcW       = $clog2(ImemDepth);

  tpu_regs_pkg::tpu_regs__in_t  hwif_in;
  tpu_regs_pkg::tpu_regs__out_t hwif_out;

  // ---------------------------------------------------------------------------
  // MMIO: cq beats become register accesses; reads answer on cc
  // ---------------------------------------------------------------------------
  logic        cc_slot_ready, mmio_fire, mmio_in_bar, req, rd_ack, rd_err, wr_ack, wr_err;
  logic        unused_stall_wr, unused_stall_rd;
  logic [31:0] reg_rd_data, biten;
  tlp_pkg::cc_t cc_beat;

  // The requests enter through a register slice, so nothing past its
  // registers is combinational from the cq inputs: the register block's
  // decode sees a flop, and cq_ready_o is one. An access takes one cycle more; a
  // simulator evaluates the decode once per cycle instead of twice
  // (docs/decisions.md, "MMIO requests enter through a register slice").
  tlp_pkg::cq_t cq_beat;
  logic         cq_valid, cq_take;
  stream_spill #(
    .Width($bits(tlp_pkg::cq_t))
  ) u_cq_slot (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),
    .valid_i(cq_valid_i),
    .ready_o(cq_ready_o),
    .data_i (cq_i),
    .valid_o(cq_valid),
    .ready_i(cq_take),
    .data_o (cq_beat)
  );
  // A read needs room for its completion; a write is always taken.
  assign cq_take     = cq_beat.write || cc_slot_ready;
  assign mmio_fire   = cq_valid && cq_take;
  assign mmio_in_bar = (cq_beat.addr[63:12] == '0) && (cq_beat.addr[1:0] == 2'b00);
  assign req         = mmio_fire && mmio_in_bar && !(cq_beat.write && cq_beat.be == 4'h0);
  for (genvar b = 0; b < 4; b++) begin : gen_biten
    assign biten[8*b +: 8] = {8{cq_beat.be[b]}};
  end

  tpu_regs u_regs (
    .clk                 (clk_i),
    .arst_n              (rst_ni),
    .s_cpuif_req         (req),
    .s_cpuif_req_is_wr   (cq_beat.write),
    .s_cpuif_addr        (cq_beat.addr[11:0]),
    .s_cpuif_wr_data     (cq_beat.data),
    .s_cpuif_wr_biten    (biten),
    .s_cpuif_req_stall_wr(unused_stall_wr),  // the block never stalls
    .s_cpuif_req_stall_rd(unused_stall_rd),
    .s_cpuif_rd_ack      (rd_ack),
    .s_cpuif_rd_err      (rd_err),
    .s_cpuif_rd_data     (reg_rd_data),
    .s_cpuif_wr_ack      (wr_ack),
    .s_cpuif_wr_err      (wr_err),
    .hwif_in,
    .hwif_out
  );

  logic read_outside, mmio_bad;
  assign read_outside = mmio_fire && !cq_beat.write && !mmio_in_bar;
  assign mmio_bad     = (mmio_fire && !mmio_in_bar) || (rd_ack && rd_err) || (wr_ack && wr_err);

  assign cc_beat.tag    = cq_beat.tag;
  assign cc_beat.status = (read_outside || rd_err) ? tlp_pkg::CplUr : tlp_pkg::CplSc;
  assign cc_beat.data   = (read_outside || rd_err) ? 32'd0 : reg_rd_data;

  stream_spill #(
    .Width($bits(tlp_pkg::cc_t))
  ) u_cc_slot (
    .clk_i,
    .rst_ni,
    .clear_i(1'b0),
    .valid_i(read_outside || rd_ack),
    .ready_o(cc_slot_ready),
    .data_i (cc_beat),
    .valid_o(cc_valid_o),
    .ready_i(cc_ready_i),
    .data_o (cc_o)
  );

  // ---------------------------------------------------------------------------
  // Soft reset: requested by CTRL.soft_reset, held until the DMA is quiet
  // ---------------------------------------------------------------------------
  logic resetting_q, resetting_d, dma_reset_busy, core_rst_nq, soft_reset_pulse;

  // The DMA engine takes the one-cycle request and stays busy while it drains;
  // the rest of the device is held until then.
  assign soft_reset_pulse = hwif_out.CTRL.soft_reset.value;
  assign resetting_d      = soft_reset_pulse || (resetting_q && dma_reset_busy);
  `FF(resetting_q, resetting_d, 1'b0)
  // The core's reset comes straight from a flop (low during the device's own
  // reset and during a soft reset), so it never glitches.
  `FF(core_rst_nq, !resetting_d, 1'b0)

  // ---------------------------------------------------------------------------
  // Doorbells, checked against the ring sizes (values land a cycle after swmod)
  // ---------------------------------------------------------------------------
  logic        sq_db_q, cq_db_q;
  logic [15:0] sq_tail_q, sq_tail_d, cq_head_q, cq_head_d, sq_size, cq_size;
  logic        bad_doorbell;
  logic [63:0] bad_doorbell_value;

  `FF(sq_db_q, hwif_out.SQ_TAIL.tail.swmod, 1'b0)
  `FF(cq_db_q, hwif_out.CQ_HEAD.head.swmod, 1'b0)
  assign sq_size = 16'd1 << hwif_out.SQ_LOG2SIZE.log2size.value;
  assign cq_size = 16'd1 << hwif_out.CQ_LOG2SIZE.log2size.value;

  always_comb begin
    sq_tail_d          = sq_tail_q;
    cq_head_d          = cq_head_q;
    bad_doorbell       = 1'b0;
    bad_doorbell_value = '0;
    if (sq_db_q) begin
      if (hwif_out.SQ_TAIL.tail.value < sq_size && hwif_out.SQ_LOG2SIZE.log2size.value != 0)
        sq_tail_d = hwif_out.SQ_TAIL.tail.value;
      else begin
        bad_doorbell       = 1'b1;
        bad_doorbell_value = 64'(hwif_out.SQ_TAIL.tail.value);
      end
    end
    if (cq_db_q) begin
      if (hwif_out.CQ_HEAD.head.value < cq_size && hwif_out.CQ_LOG2SIZE.log2size.value != 0)
        cq_head_d = hwif_out.CQ_HEAD.head.value;
      else begin
        bad_doorbell       = 1'b1;
        bad_doorbell_value = 64'(hwif_out.CQ_HEAD.head.value);
      end
    end
    if (resetting_q) begin
      sq_tail_d = '0;
      cq_head_d = '0;
    end
  end

  `FF(sq_tail_q, sq_tail_d, '0)
  `FF(cq_head_q, cq_head_d, '0)

  // ---------------------------------------------------------------------------
  // DMA engine, shared by the command processor and the core's bridge
  // ---------------------------------------------------------------------------
  logic              run;
  // Engine side
  logic              rd_req_valid, rd_req_ready, rd_data_valid, rd_data_ready;
  logic              rd_done_valid, rd_done_ready, wr_req_valid, wr_req_ready, wr_data_valid;
  logic              wr_data_ready, wr_done_valid, wr_done_ready;
  dma_pkg::rd_req_t  rd_req;
  dma_pkg::rd_data_t rd_data;
  dma_pkg::rd_done_t rd_done;
  dma_pkg::wr_req_t  wr_req;
  dma_pkg::wr_data_t wr_data;
  dma_pkg::wr_done_t wr_done;
  logic [15:0]       cnt_unexpected, cnt_malformed;

  dma_engine #(
    .Tags         (Cfg.dma_tags),
    .RobBytes     (Cfg.dma_rob_bytes),
    .RdXfers      (Cfg.dma_rd_xfers),
    .WrBufBeats   (Cfg.dma_wr_buf_beats),
    .TimeoutCycles(Cfg.dma_timeout)
  ) u_dma (
    .clk_i,
    .rst_ni,
    .soft_reset_i      (soft_reset_pulse),
    .reset_busy_o      (dma_reset_busy),
    .link_cfg_i,
    .cpl_timeout_i,
    .rd_req_valid_i  (rd_req_valid),
    .rd_req_ready_o  (rd_req_ready),
    .rd_req_i        (rd_req),
    .rd_data_valid_o (rd_data_valid),
    .rd_data_ready_i (rd_data_ready),
    .rd_data_o       (rd_data),
    .rd_done_valid_o (rd_done_valid),
    .rd_done_ready_i (rd_done_ready),
    .rd_done_o       (rd_done),
    .wr_req_valid_i  (wr_req_valid),
    .wr_req_ready_o  (wr_req_ready),
    .wr_req_i        (wr_req),
    .wr_data_valid_i (wr_data_valid),
    .wr_data_ready_o (wr_data_ready),
    .wr_data_i       (wr_data),
    .wr_done_valid_o (wr_done_valid),
    .wr_done_ready_i (wr_done_ready),
    .wr_done_o       (wr_done),
    .rq_valid_o,
    .rq_ready_i,
    .rq_o,
    .rc_valid_i,
    .rc_ready_o,
    .rc_i,
    .cnt_unexpected_o(cnt_unexpected),
    .cnt_malformed_o (cnt_malformed)
  );

  // Command processor side (c_*) and bridge side (b_*). The write channel is
  // the bridge's while the core runs (run), else the command processor's.
  // The read channel is shared: the command processor fetches the next
  // command while the core's bridge reads for the running one. Requests are
  // arbitrated (the command processor first; a request on offer keeps its
  // grant until taken), and since the engine delivers every transfer's data
  // and done in request order, a FIFO of the requesters routes them back.
  logic              c_rd_req_valid, c_rd_req_ready, c_rd_data_valid, c_rd_data_ready;
  logic              c_rd_done_valid, c_rd_done_ready, c_wr_req_valid;
  logic              c_wr_data_valid, c_wr_done_ready, c_dma_fault;
  dma_pkg::err_e     c_dma_class;
  logic [63:0]       c_dma_addr;
  dma_pkg::rd_req_t  c_rd_req;
  dma_pkg::wr_req_t  c_wr_req;
  dma_pkg::wr_data_t c_wr_data;
  logic              b_rd_req_valid, b_rd_data_ready, b_rd_done_ready, b_wr_req_valid;
  logic              b_wr_data_valid, b_wr_done_ready;
  dma_pkg::rd_req_t  b_rd_req;
  dma_pkg::wr_req_t  b_wr_req;
  dma_pkg::wr_data_t b_wr_data;

  logic rd_sel_b, rd_lock_q, rd_lock_b_q, own_ready, own_valid, own_b;
  logic [$clog2(Cfg.dma_rd_xfers+1)-1:0] unused_own_count;

  assign rd_sel_b      = rd_lock_q ? rd_lock_b_q : !c_rd_req_valid;
  assign rd_req_valid  = own_ready && (rd_sel_b ? b_rd_req_valid : c_rd_req_valid);
  assign rd_req        = rd_sel_b ? b_rd_req : c_rd_req;
  `FF(rd_lock_q, rd_req_valid && !rd_req_ready && !resetting_q, 1'b0)
  `FF(rd_lock_b_q, rd_sel_b, 1'b0)

  // One entry per transfer in flight (at most Cfg.dma_rd_xfers): 1 = bridge.
  stream_fifo #(
    .Width(1),
    .Depth(Cfg.dma_rd_xfers)
  ) u_rd_owner (
    .clk_i,
    .rst_ni,
    .clear_i(resetting_q),
    .valid_i(rd_req_valid && rd_req_ready),
    .ready_o(own_ready),
    .data_i (rd_sel_b),
    .valid_o(own_valid),
    .ready_i(rd_done_valid && rd_done_ready),
    .data_o (own_b),
    .count_o(unused_own_count)
  );

  assign c_rd_req_ready  = rd_req_ready && own_ready && !rd_sel_b;
  assign c_rd_data_valid = rd_data_valid && own_valid && !own_b;
  assign c_rd_done_valid = rd_done_valid && own_valid && !own_b;
  assign rd_data_ready   = own_valid && (own_b ? b_rd_data_ready : c_rd_data_ready);
  assign rd_done_ready   = own_valid && (own_b ? b_rd_done_ready : c_rd_done_ready);
  assign wr_req_valid  = run ? b_wr_req_valid  : c_wr_req_valid;
  assign wr_req        = run ? b_wr_req        : c_wr_req;
  assign wr_data_valid = run ? b_wr_data_valid : c_wr_data_valid;
  assign wr_data       = run ? b_wr_data       : c_wr_data;
  assign wr_done_ready = run ? b_wr_done_ready : c_wr_done_ready;

  // ---------------------------------------------------------------------------
  // Command processor
  // ---------------------------------------------------------------------------
  logic               imem_wr_en, core_start, core_keep_counters, core_done, core_busy, core_irq, core_imem_free;
  logic [PcW-1:0]     imem_wr_addr;
  logic [127:0]       imem_wr_data;
  logic               imem_filling, imem_fault;
  logic [PcW:0]       imem_words;
  logic [3:0]         core_err;
  logic [31:0]        core_err_pc;
  logic [63:0]        perf_cycles, perf_mxu_busy, perf_macs, perf_wgt_stall, perf_wgt_shift;
  logic [63:0]        perf_dep_stall, perf_mem_stall;
  logic               cmd_busy, sq_error, cmd_done, prog_error, bad_command;
  logic [15:0]        sq_head, cq_tail;
  logic [31:0]        commands_q;
  dma_pkg::window_t [dma_pkg::MaxWindows-1:0] windows;

  // The config-space sideband the command processor uses, registered: it is
  // static while the device works (the DMA engine registers its own part),
  // and a register keeps the sideband's fan-out out of the logic that a
  // simulator evaluates again whenever an input may have changed.
  logic        cmd_bme_q, msi_en_q;
  logic [63:0] msi_addr_q;
  logic [31:0] msi_data_q;
  `FF(cmd_bme_q, link_cfg_i.bus_master_en, 1'b0)
  `FF(msi_en_q, link_cfg_i.msi_en, 1'b0)
  `FF(msi_addr_q, link_cfg_i.msi_addr, '0)
  `FF(msi_data_q, link_cfg_i.msi_data, '0)

  cmd_proc #(
    .ImemDepth(ImemDepth),
    .PfDepth  (Cfg.prefetch_depth)
  ) u_cmd (
    .clk_i,
    .rst_ni,
    .soft_reset_i   (resetting_q),
    .enable_i       (hwif_out.CTRL.enable.value && cmd_bme_q),
    .sq_base_i      ({hwif_out.SQ_BASE_HI.addr.value, hwif_out.SQ_BASE_LO.addr.value, 6'd0}),
    .sq_log2_i      (hwif_out.SQ_LOG2SIZE.log2size.value),
    .sq_tail_i      (sq_tail_q),
    .sq_head_o      (sq_head),
    .cq_base_i      ({hwif_out.CQ_BASE_HI.addr.value, hwif_out.CQ_BASE_LO.addr.value, 6'd0}),
    .cq_log2_i      (hwif_out.CQ_LOG2SIZE.log2size.value),
    .cq_head_i      (cq_head_q),
    .cq_tail_o      (cq_tail),
    .busy_o         (cmd_busy),
    .sq_error_o     (sq_error),
    .cmd_done_o     (cmd_done),
    .prog_error_o   (prog_error),
    .bad_command_o  (bad_command),
    .irq_pending_i  (hwif_out.INT_STATUS.intr),
    .msi_en_i       (msi_en_q),
    .msi_addr_i     (msi_addr_q),
    .msi_data_i     (msi_data_q),
    .run_o          (run),
    .rd_req_valid_o (c_rd_req_valid),
    .rd_req_ready_i (c_rd_req_ready),
    .rd_req_o       (c_rd_req),
    .rd_data_valid_i(c_rd_data_valid),
    .rd_data_ready_o(c_rd_data_ready),
    .rd_data_i      (rd_data),
    .rd_done_valid_i(c_rd_done_valid),
    .rd_done_ready_o(c_rd_done_ready),
    .rd_done_i      (rd_done),
    .dma_fault_o    (c_dma_fault),
    .dma_fault_class_o(c_dma_class),
    .dma_fault_addr_o (c_dma_addr),
    .wr_req_valid_o (c_wr_req_valid),
    .wr_req_ready_i (wr_req_ready),
    .wr_req_o       (c_wr_req),
    .wr_data_valid_o(c_wr_data_valid),
    .wr_data_ready_i(wr_data_ready),
    .wr_data_o      (c_wr_data),
    .wr_done_valid_i(wr_done_valid),
    .wr_done_ready_o(c_wr_done_ready),
    .wr_done_i      (wr_done),
    .imem_wr_en_o   (imem_wr_en),
    .imem_wr_addr_o (imem_wr_addr),
    .imem_wr_data_o (imem_wr_data),
    .core_imem_free_i(core_imem_free),
    .core_start_o   (core_start),
    .core_imem_filling_o(imem_filling),
    .core_imem_words_o  (imem_words),
    .core_imem_fault_o  (imem_fault),
    .core_keep_counters_o(core_keep_counters),
    .core_done_i    (core_done),
    .core_err_i     (core_err),
    .core_err_pc_i  (core_err_pc),
    .core_cycles_i  (perf_cycles[31:0]),
    .windows_o      (windows)
  );

  `FF(commands_q, resetting_q ? '0 : commands_q + 32'(cmd_done), '0)

  // ---------------------------------------------------------------------------
  // Core and its DMA bridge
  // ---------------------------------------------------------------------------
  typedef `CORE_MEM_REQ_T(N) mem_req_t;
  typedef `CORE_MEM_RSP_T(N) mem_rsp_t;
  mem_req_t           mem_req;
  mem_rsp_t           mem_rsp;
  logic               br_err_valid;
  dma_pkg::err_e      br_err_class;
  logic [63:0]        br_err_addr;

  tpu_core #(
    .Cfg(Cfg)
  ) u_core (
    .clk_i,
    .rst_ni            (core_rst_nq),
    .imem_wr_en_i      (imem_wr_en),
    .imem_wr_addr_i    (imem_wr_addr),
    .imem_wr_data_i    (imem_wr_data),
    .start_i           (core_start),
    .keep_counters_i   (core_keep_counters),
    .start_pc_i        ('0),
    .imem_filling_i    (imem_filling),
    .imem_words_i      (imem_words),
    .imem_fault_i      (imem_fault),
    .imem_free_o       (core_imem_free),
    .busy_o            (core_busy),
    .done_o            (core_done),
    .err_code_o        (core_err),
    .err_pc_o          (core_err_pc),
    .irq_o             (core_irq),
    .mem_req_valid_o   (mem_req.req_valid),
    .mem_req_ready_i   (mem_rsp.req_ready),
    .mem_req_write_o   (mem_req.req.write),
    .mem_req_addr_o    (mem_req.req.addr),
    .mem_req_rows_o    (mem_req.req.rows),
    .mem_req_first_o   (mem_req.req.first),
    .mem_req_last_o    (mem_req.req.last),
    .mem_rd_valid_i    (mem_rsp.rd_valid),
    .mem_rd_ready_o    (mem_req.rd_ready),
    .mem_rd_data_i     (mem_rsp.rd_data),
    .mem_rd_err_i      (mem_rsp.rd_err),
    .mem_wr_valid_o    (mem_req.wr_valid),
    .mem_wr_ready_i    (mem_rsp.wr_ready),
    .mem_wr_data_o     (mem_req.wr_data),
    .mem_wr_ack_valid_i(mem_rsp.wr_ack_valid),
    .mem_wr_ack_err_i  (mem_rsp.wr_ack_err),
    .perf_cycles_o     (perf_cycles),
    .perf_mxu_busy_o   (perf_mxu_busy),
    .perf_useful_macs_o(perf_macs),
    .perf_wgt_stall_o  (perf_wgt_stall),
    .perf_wgt_shift_o  (perf_wgt_shift),
    .perf_dep_stall_o  (perf_dep_stall),
    .perf_mem_stall_o  (perf_mem_stall)
  );

  logic b_rd_req_ready, b_rd_data_valid, b_rd_done_valid, b_wr_req_ready, b_wr_data_ready;
  logic b_wr_done_valid;
  assign b_rd_req_ready  = rd_req_ready && own_ready && rd_sel_b;
  assign b_rd_data_valid = rd_data_valid && own_valid && own_b;
  assign b_rd_done_valid = rd_done_valid && own_valid && own_b;
  assign b_wr_req_ready  = run && wr_req_ready;
  assign b_wr_data_ready = run && wr_data_ready;
  assign b_wr_done_valid = run && wr_done_valid;

  core_dma_bridge #(
    .N    (N),
    .Depth(Cfg.mem_outstanding)
  ) u_bridge (
    .clk_i,
    .rst_ni,
    .clear_i           (resetting_q),
    .mem_req_i         (mem_req),
    .mem_rsp_o         (mem_rsp),
    .windows_i         (windows),
    .rd_req_valid_o    (b_rd_req_valid),
    .rd_req_ready_i    (b_rd_req_ready),
    .rd_req_o          (b_rd_req),
    .rd_data_valid_i   (b_rd_data_valid),
    .rd_data_ready_o   (b_rd_data_ready),
    .rd_data_i         (rd_data),
    .rd_done_valid_i   (b_rd_done_valid),
    .rd_done_ready_o   (b_rd_done_ready),
    .rd_done_i         (rd_done),
    .wr_req_valid_o    (b_wr_req_valid),
    .wr_req_ready_i    (b_wr_req_ready),
    .wr_req_o          (b_wr_req),
    .wr_data_valid_o   (b_wr_data_valid),
    .wr_data_ready_i   (b_wr_data_ready),
    .wr_data_o         (b_wr_data),
    .wr_done_valid_i   (b_wr_done_valid),
    .wr_done_ready_o   (b_wr_done_ready),
    .wr_done_i         (wr_done),
    .err_valid_o       (br_err_valid),
    .err_class_o       (br_err_class),
    .err_addr_o        (br_err_addr)
  );

  // ---------------------------------------------------------------------------
  // Register inputs: capabilities, status, errors, interrupts, counters
  // ---------------------------------------------------------------------------
  logic        dma_err_valid;
  dma_pkg::err_e dma_err_class;
  logic [63:0] dma_err_addr, err_addr_q, err_addr_d;

  // A failed DMA read of the command processor (reported when its command is
  // taken, with the class and address it recorded, so while the core and its
  // bridge are idle) or of the bridge.
  assign dma_err_valid = c_dma_fault || br_err_valid;
  assign dma_err_class = br_err_valid ? br_err_class : c_dma_class;
  assign dma_err_addr  = br_err_valid ? br_err_addr : c_dma_addr;
  `ASSERT(OneDmaErrorAtATime, !(c_dma_fault && br_err_valid))

  always_comb begin
    err_addr_d = err_addr_q;
    if (dma_err_valid) err_addr_d = dma_err_addr;
    if (bad_doorbell) err_addr_d = bad_doorbell_value;
  end
  `FF(err_addr_q, err_addr_d, '0)

  // Status for LEDs: busy as STATUS.busy; error from any recorded error
  // until the next soft reset (the register block does not export ERR_CAUSE).
  logic error_q;
  `FF(error_q, !soft_reset_pulse && (error_q || prog_error || dma_err_valid || bad_doorbell ||
                                     bad_command || mmio_bad || sq_error), 1'b0)
  assign busy_o  = cmd_busy || core_busy;
  assign error_o = error_q;

  always_comb begin
    hwif_in = '0;
    hwif_in.CAPS0.array_n.next          = 16'(N);
    hwif_in.CAPS0.dtype_int8.next       = Cfg.datapath != tpu_pkg::DatapathBf16;
    hwif_in.CAPS0.dtype_bf16.next       = Cfg.datapath != tpu_pkg::DatapathInt8;
    hwif_in.CAPS1.ub_rows.next          = 16'(Cfg.ub_rows);
    hwif_in.CAPS1.acc_rows.next         = 16'(Cfg.acc_rows);
    hwif_in.CAPS2.imem_depth.next       = 16'(ImemDepth);
    hwif_in.CAPS2.wgt_fifo_tiles.next   = 8'(Cfg.wgt_fifo_tiles);
    hwif_in.CAPS2.dma_tags.next         = 8'(Cfg.dma_tags);
    hwif_in.STATUS.busy.next            = cmd_busy || core_busy;
    hwif_in.STATUS.reset_busy.next      = resetting_q;
    hwif_in.STATUS.sq_error.next        = sq_error;
    hwif_in.ERR_CAUSE.prog_error.hwset  = prog_error;
    hwif_in.ERR_CAUSE.dma_ur.hwset         = dma_err_valid && dma_err_class == dma_pkg::ErrUr;
    hwif_in.ERR_CAUSE.dma_ca.hwset         = dma_err_valid && dma_err_class == dma_pkg::ErrCa;
    hwif_in.ERR_CAUSE.dma_poisoned.hwset   = dma_err_valid && dma_err_class == dma_pkg::ErrPoisoned;
    hwif_in.ERR_CAUSE.dma_timeout.hwset    = dma_err_valid && dma_err_class == dma_pkg::ErrTimeout;
    hwif_in.ERR_CAUSE.bus_master_off.hwset = dma_err_valid && dma_err_class == dma_pkg::ErrBusMasterOff;
    hwif_in.ERR_CAUSE.window_read.hwset    = dma_err_valid && dma_err_class == dma_pkg::ErrWindowRead;
    hwif_in.ERR_CAUSE.window_write.hwset   = dma_err_valid && dma_err_class == dma_pkg::ErrWindowWrite;
    hwif_in.ERR_CAUSE.bad_doorbell.hwset = bad_doorbell;
    hwif_in.ERR_CAUSE.bad_command.hwset  = bad_command;
    hwif_in.ERR_CAUSE.mmio_unmapped.hwset = mmio_bad;
    hwif_in.ERR_ADDR_LO.addr.next       = err_addr_q[31:0];
    hwif_in.ERR_ADDR_HI.addr.next       = err_addr_q[63:32];
    hwif_in.INT_STATUS.completion.next  = cmd_done;
    hwif_in.INT_STATUS.error.next       = (cmd_done && prog_error) || bad_doorbell || c_dma_fault;
    hwif_in.SQ_TAIL.tail.hwclr          = resetting_q;
    hwif_in.CQ_HEAD.head.hwclr          = resetting_q;
    hwif_in.SQ_HEAD.head.next           = sq_head;
    hwif_in.CQ_TAIL.tail.next           = cq_tail;
    hwif_in.CYCLES_LO.value.next        = perf_cycles[31:0];
    hwif_in.CYCLES_HI.value.next        = perf_cycles[63:32];
    hwif_in.MXU_BUSY_LO.value.next      = perf_mxu_busy[31:0];
    hwif_in.MXU_BUSY_HI.value.next      = perf_mxu_busy[63:32];
    hwif_in.USEFUL_MACS_LO.value.next   = perf_macs[31:0];
    hwif_in.USEFUL_MACS_HI.value.next   = perf_macs[63:32];
    hwif_in.WGT_STALL_LO.value.next     = perf_wgt_stall[31:0];
    hwif_in.WGT_STALL_HI.value.next     = perf_wgt_stall[63:32];
    hwif_in.WGT_SHIFT_LO.value.next     = perf_wgt_shift[31:0];
    hwif_in.WGT_SHIFT_HI.value.next     = perf_wgt_shift[63:32];
    hwif_in.DEP_STALL_LO.value.next     = perf_dep_stall[31:0];
    hwif_in.DEP_STALL_HI.value.next     = perf_dep_stall[63:32];
    hwif_in.MEM_STALL_LO.value.next     = perf_mem_stall[31:0];
    hwif_in.MEM_STALL_HI.value.next     = perf_mem_stall[63:32];
    hwif_in.COMMANDS_DONE.count.next    = commands_q;
    hwif_in.DMA_DROPPED.unexpected.next = cnt_unexpected;
    hwif_in.DMA_DROPPED.malformed.next  = cnt_malformed;
  end

  logic unused;
  // A program's IRQ instruction does not reach the host yet (docs/host_interface.md).
  assign unused = core_irq;

endmodule
