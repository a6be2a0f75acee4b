// SPDX-License-Identifier: Apache-2.0
// Controller: fetch, decode, check, dependency tracking and dispatch.
//
// Four stages, one instruction per cycle:
//   fetch   (ctrl_fetch) reads the instruction memory ahead, following LOOP
//           back edges, into a small queue. The memory reads synchronously
//           and its address comes from a flop; it must not be written while
//           a program runs, except once its HALT has been decoded (imem_free_o).
//   offset  takes the queue head and adds the loop offsets to its address
//           fields; a LOOP sets the offsets and restarts fetch after it.
//   decode  checks the instruction (docs/isa.md, "Errors") and computes its
//           footprint, into the decode register.
//   issue   sends the decoded command to its unit's queue when the unit has
//           room, or ends the program on an error, in program order.
//
// Units run decoupled. The scoreboard (ctrl_scoreboard) keeps, per unit, the
// UB and ACC row ranges of every issued command that has not completed, and
// for each command the older commands of other units it conflicts with,
// found once at issue. The command at the head of a unit's queue may start
// only when none of those is still in flight: no older command of another
// unit still has to write rows it reads, or read or write rows it writes
// (docs/controller.md); until then the unit waits and the other units go on.
// A unit runs its own commands in order.
//
// Datapath (docs/numerics.md): in a bf16 or both configuration the bf16
// forms are legal (RHM/WHM WIDE, RW BF16, MMC BF16, ACT F32, VOP BF16, the
// fp32 CFG registers); a wide row counts two UB rows in the range checks and
// the footprints. Every loaded weight tile keeps its format in program order
// beside the tile count, and an MMC whose BF16 flag differs from its tile's
// format is WGT_FORMAT. A bf16-only core has no int8 RW or MMC. In an int8
// configuration every bf16 form is BAD_FLAGS.
//
// Program end: HALT waits for every unit and ends with OK. An error stops
// issue; the core waits for the units to drain (a memory fault aborts them
// instead, once the memory port is quiet), flushes every unit, queue and
// weight tile, and ends with the error code and the instruction's index.
`include "tpu_macros.svh"

module tpu_ctrl #(
  parameter int unsigned ImemDepth = tpu_pkg::Cfg.imem_depth,
  parameter int unsigned UbRows    = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned AccRows   = tpu_pkg::Cfg.acc_rows,
  parameter int unsigned N         = tpu_pkg::ArrayN,
  parameter int unsigned SbDepth   = 8,   // commands in flight per unit
  parameter int unsigned WgtCapacity = tpu_pkg::Cfg.wgt_fifo_tiles + tpu_isa_pkg::WgtBanks, // tiles the weight FIFO and MXU hold
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,     // which forms are legal
  localparam int unsigned PcW      = $clog2(ImemDepth),
  localparam int unsigned NU       = tpu_isa_pkg::NumUnits
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  // ---- host control ----
  input  logic                         start_i,
  input  logic [31:0]                  start_pc_i,
  input  logic                         imem_filling_i, // the program still arriving: only
  input  logic [PcW:0]                 imem_words_i,   // ... its first words are in imem,
  input  logic                         imem_fault_i,   // ... and the rest never will be
  output logic                         busy_o,
  output logic                         done_o,       // one cycle at program end
  output tpu_isa_pkg::err_e            err_code_o,   // valid from done_o until the next start
  output logic [31:0]                  err_pc_o,
  output logic                         irq_o,        // one cycle per IRQ instruction
  // ---- instruction memory ----
  output logic [PcW-1:0]               imem_rd_addr_o, // read next cycle: the next pc
  input  tpu_isa_pkg::instr_t          imem_rd_data_i, // the word at pc (a cycle after its address)
  output logic                         imem_free_o,    // no word read from now on is issued
  // ---- unit command queues ----
  output logic [NU-1:0]                cmd_valid_o,
  input  logic [NU-1:0]                cmd_ready_i,
  output core_pkg::unit_cmd_t          cmd_o,        // common to all queues
  input  logic [NU-1:0]                unit_start_i, // a unit took the command at its queue head
  output logic [NU-1:0]                unit_hold_o,  // the queue head must wait (dependency)
  input  logic [NU-1:0]                unit_done_i,  // oldest command of a unit completed
  // ---- the memory unit's RHM in progress (an MMC may start while it writes) ----
  input  logic                         rhm_fill_i,
  input  logic [$clog2(UbRows)-1:0]    rhm_fill_lo_i,
  input  logic [$clog2(UbRows)-1:0]    rhm_fill_last_i,
  // ---- faults and abort ----
  input  logic                         mem_fault_i,
  input  logic [PcW-1:0]               mem_fault_pc_i,
  output logic                         mem_block_o,  // stop new memory requests
  input  logic                         mem_quiet_i,  // no memory request in flight
  output logic                         flush_o,
  // ---- status for the performance counters ----
  output logic                         dep_stall_o
);

  import tpu_isa_pkg::*;

  typedef enum logic [2:0] {
    StIdle,
    StRun,
    StDrain,   // error: let units finish
    StAbort,   // memory fault: wait for the memory port to go quiet
    StFlush    // one cycle: clear units, queues and weights
  } state_e;

  // The bf16 forms exist (bf16, both); the int8 MXU forms exist (int8, both).
  localparam bit HasBf16 = Datapath != tpu_pkg::DatapathInt8;
  localparam bit HasInt8 = Datapath != tpu_pkg::DatapathBf16;

  typedef ctrl_pkg::range_t     range_t;
  typedef ctrl_pkg::footprint_t footprint_t;

  // A range [start, start+len) checked against a memory of `rows` rows.
  function automatic logic in_range(logic signed [33:0] start, logic [33:0] len, int unsigned rows);
    return (start >= 0) && (start + $signed(len) <= $signed(34'(rows)));
  endfunction

  // Rows [start, start+len) as an inclusive range; meaningful once in_range
  // holds (the instruction issues only then) and len > 0.
  function automatic range_t mk_range(logic signed [33:0] start, logic [33:0] len);
    range_t r;
    r.v    = 1'b1;
    r.lo   = start[15:0];
    r.last = 16'(start + $signed(len) - 34'sd1);
    return r;
  endfunction

  // ---------------------------------------------------------------------------
  // Program state
  // ---------------------------------------------------------------------------
  state_e                state_q, state_d;
  err_e                  err_q, err_d;
  logic [31:0]           err_pc_q, err_pc_d;
  // Weight tiles: room for more (the capacity minus RW tiles issued plus
  // POPs) and whether none is loaded. RW issues only within the room and a
  // POP only with a tile loaded, so room stays in [0, WgtCapacity].
  logic [15:0]           room_q, room_d;
  logic                  no_tiles_q;
  // The format of every loaded tile (1 = bf16), oldest in bit 0; bits at and
  // above the tile count are unused.
  logic [WgtCapacity-1:0] tile_bf16_q;
  logic                  run;

  assign run = state_q == StRun;

  // Commands in flight per unit (the scoreboard, below).
  logic [NU-1:0]         unit_idle, unit_full;

  // ---------------------------------------------------------------------------
  // Fetch
  // ---------------------------------------------------------------------------
  instr_t                f_ins;           // the queue head
  logic [31:0]           f_pc;            // its pc
  logic                  f_valid, f_in_loop, f_back_edge;
  logic                  x_accept;        // the offset stage takes the head
  logic                  take_loop;       // ... and it is a LOOP

  ctrl_fetch #(
    .ImemDepth(ImemDepth)
  ) u_fetch (
    .clk_i,
    .rst_ni,
    .run_i         (run),
    .start_i       (state_q == StIdle && start_i),
    .start_pc_i,
    .filling_i     (imem_filling_i),
    .words_i       (imem_words_i),
    .fill_fault_i  (imem_fault_i),
    .imem_rd_addr_o,
    .imem_rd_data_i,
    .loop_i        (take_loop),
    .loop_pc_i     (f_pc),
    .loop_body_i   (f_ins.a),
    .loop_count_i  (f_ins.count),
    .valid_o       (f_valid),
    .ready_i       (x_accept),
    .word_o        (f_ins),
    .pc_o          (f_pc),
    .in_loop_o     (f_in_loop),
    .back_edge_o   (f_back_edge)
  );

  // ---------------------------------------------------------------------------
  // Offset stage: the loop offsets added to the head's address fields
  // ---------------------------------------------------------------------------
  // The offsets step as this stage takes the words of each iteration: the
  // LOOP clears them, the last word of an iteration followed by another adds
  // the increments. They apply inside the loop body only. The LOOP itself
  // restarts fetch from here (its checks come in decode).
  logic signed [31:0]    ub_inc_q, acc_inc_q, ub_off_q, acc_off_q;
  logic signed [63:0]    host_inc_q, host_off_q;
  logic signed [31:0]    ub_off, acc_off;
  logic signed [63:0]    host_off;

  assign ub_off   = f_in_loop ? ub_off_q : '0;
  assign acc_off  = f_in_loop ? acc_off_q : '0;
  assign host_off = f_in_loop ? host_off_q : '0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ub_inc_q   <= '0;
      acc_inc_q  <= '0;
      host_inc_q <= '0;
      ub_off_q   <= '0;
      acc_off_q  <= '0;
      host_off_q <= '0;
    end else if (take_loop) begin
      ub_inc_q   <= 32'($signed(f_ins.b));
      acc_inc_q  <= 32'($signed(f_ins.c[15:0]));
      host_inc_q <= 64'($signed(f_ins.c[63:32]));
      ub_off_q   <= '0;
      acc_off_q  <= '0;
      host_off_q <= '0;
    end else if (x_accept && f_back_edge) begin
      ub_off_q   <= ub_off_q + ub_inc_q;
      acc_off_q  <= acc_off_q + acc_inc_q;
      host_off_q <= host_off_q + host_inc_q;
    end
  end

  // The address fields with the offsets, as unsigned 16-bit fields plus signed
  // offsets, without wrapping (decode checks them against the memories).
  typedef struct packed {
    logic [31:0]        pc;
    instr_t             ins;
    logic               in_loop;
    logic signed [33:0] ub_a, ub_b, ub_c, acc_a, acc_b;
    logic [63:0]        host_c;
    logic [33:0]        pool_rows;  // rows a pooling VOP reads: count << shift
    logic [17:0]        act_rows;   // UB rows an ACT writes: count x those of a result's lanes
  } offset_t;

  offset_t x_q;
  logic    x_valid_q, accept;

  assign x_accept  = run && f_valid && (!x_valid_q || accept);
  assign take_loop = x_accept && (f_ins.op == OpLoop);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) x_valid_q <= 1'b0;
    else         x_valid_q <= run && (x_accept || (x_valid_q && !accept));
  end

  always_ff @(posedge clk_i) begin
    if (x_accept) begin
      x_q <= '{pc: f_pc, ins: f_ins, in_loop: f_in_loop,
               ub_a:  $signed({18'd0, f_ins.a}) + 34'(ub_off),
               ub_b:  $signed({18'd0, f_ins.b}) + 34'(ub_off),
               ub_c:  $signed({18'd0, f_ins.c[15:0]}) + 34'(ub_off),
               acc_a: $signed({18'd0, f_ins.a}) + 34'(acc_off),
               acc_b: $signed({18'd0, f_ins.b}) + 34'(acc_off),
               host_c: f_ins.c + host_off,
               pool_rows: 34'(f_ins.count) << f_ins.flags[FlagVopShiftLsb +: 4],
               act_rows: core_pkg::times_parts(f_ins.count,
                                               core_pkg::act_ub_rows(f_ins.flags[FlagActRaw], f_ins.flags[FlagActF32],
                                                                     f_ins.c[15:0], N))};
    end
  end

  // ---------------------------------------------------------------------------
  // Decode and check (the checks that do not depend on earlier issues)
  // ---------------------------------------------------------------------------
  instr_t                ins;
  logic [31:0]           pc;
  instr_t                issued;
  logic                  fetch_ok;        // pc inside instruction memory
  err_e                  dec_err;
  footprint_t            fp;
  unit_e                 unit;            // unit that executes ins
  logic                  to_unit;         // ins goes to a unit queue
  logic                  is_sync, is_irq, is_halt;
  logic signed [33:0]    ub_a, ub_b, ub_c, acc_a, acc_b;
  logic [33:0]           cnt;
  logic [3:0]            vop_shift;
  logic [2:0]            vop_op;
  logic                  vop_pool;
  logic [33:0]           pool_rows;
  // bf16 forms: the flag as given, and whether it is legal here
  logic                  wide_xfer, rw_bf16, mmc_bf16, act_f32, act_raw, vop_bf16;
  logic [33:0]           xfer_rows, mmc_rows, act_rows, vop_rows, vop_a_rows;

  assign ins      = x_q.ins;
  assign pc       = x_q.pc;
  assign fetch_ok = pc < ImemDepth;

  always_comb begin
    cnt       = 34'(ins.count);
    ub_a      = x_q.ub_a;
    ub_b      = x_q.ub_b;
    ub_c      = x_q.ub_c;
    acc_a     = x_q.acc_a;
    acc_b     = x_q.acc_b;
    vop_op    = ins.flags[FlagVopOpLsb +: 3];
    vop_shift = ins.flags[FlagVopShiftLsb +: 4];
    vop_pool  = !vop_binary(vop_e'(vop_op));
    pool_rows = x_q.pool_rows;
    wide_xfer = ins.flags[FlagRhmWide];
    rw_bf16   = ins.flags[FlagRwBf16];
    mmc_bf16  = ins.flags[FlagMmcBf16];
    act_f32   = ins.flags[FlagActF32];
    act_raw   = ins.flags[FlagActRaw];
    vop_bf16  = ins.flags[FlagVopBf16];
    // UB rows: a wide row is two; an ACT's row of RAW four, of F32 two, but
    // only those that hold the lanes it asks for.
    xfer_rows  = wide_xfer ? cnt << 1 : cnt;
    mmc_rows   = mmc_bf16 ? cnt << 1 : cnt;
    act_rows   = 34'(x_q.act_rows);  // (computed a stage before, off the decode's checks)
    vop_rows   = vop_bf16 ? cnt << 1 : cnt;
    vop_a_rows = vop_pool ? (vop_bf16 ? pool_rows << 1 : pool_rows) : vop_rows;
  end

  always_comb begin
    dec_err = ErrOk;
    fp      = '0;
    unit    = UnitVpu;
    to_unit = 1'b0;
    is_sync = 1'b0;
    is_irq  = 1'b0;
    is_halt = 1'b0;
    issued  = ins;

    unique case (ins.op)
      OpRhm, OpWhm: begin
        unit    = UnitMem;
        to_unit = 1'b1;
        if (reserved_bits_set(ins, ins.op == OpRhm ? RhmUsedBits : WhmUsedBits) ||
            (wide_xfer && !HasBf16)) dec_err = ErrBadFlags;
        else if (ins.count == 0) dec_err = ErrBadCount;
        else if (!in_range(ub_a, xfer_rows, UbRows)) dec_err = ErrUbRange;
        if (ins.op == OpRhm) fp.ub_wr  = mk_range(ub_a, xfer_rows);
        else                 fp.ub_rd0 = mk_range(ub_a, xfer_rows);
        issued.a = ub_a[15:0];
        issued.c = x_q.host_c;
      end
      OpRw: begin
        // The weight capacity is checked at issue.
        unit    = UnitWgt;
        to_unit = 1'b1;
        if (reserved_bits_set(ins, RwUsedBits) || (rw_bf16 && !HasBf16) || (!rw_bf16 && !HasInt8))
          dec_err = ErrBadFlags;
        else if (ins.count == 0) dec_err = ErrBadCount;
        issued.c = x_q.host_c;
      end
      OpMmc: begin
        // Whether weights are loaded is checked at issue.
        unit    = UnitMmc;
        to_unit = 1'b1;
        if (reserved_bits_set(ins, MmcUsedBits) || (mmc_bf16 && !HasBf16) || (!mmc_bf16 && !HasInt8))
          dec_err = ErrBadFlags;
        else if (ins.count == 0) dec_err = ErrBadCount;
        else if (!in_range(ub_a, mmc_rows, UbRows)) dec_err = ErrUbRange;
        else if (!in_range(acc_b, cnt, AccRows)) dec_err = ErrAccRange;
        fp.ub_rd0 = mk_range(ub_a, mmc_rows);
        fp.acc_wr = mk_range(acc_b, cnt);
        if (ins.flags[FlagMmcAcc]) fp.acc_rd = mk_range(acc_b, cnt);
        issued.a = ub_a[15:0];
        issued.b = acc_b[15:0];
      end
      OpAct: begin
        unit    = UnitVpu;
        to_unit = 1'b1;
        // RAW alone takes no other flag; F32 has no LUT function; c is the
        // lanes to write, at most N.
        if (reserved_bits_set(ins, ActUsedBits) || ins.c[15:0] > 16'(N) ||
            (act_f32 && !HasBf16) ||
            (act_raw && !act_f32 && ins.flags[4:1] != 0) ||
            (act_f32 && act_func_e'(ins.flags[FlagActFuncLsb +: 2]) == ActLut)) dec_err = ErrBadFlags;
        else if (ins.count == 0) dec_err = ErrBadCount;
        else if (!in_range(ub_b, act_rows, UbRows)) dec_err = ErrUbRange;
        else if (!in_range(acc_a, cnt, AccRows)) dec_err = ErrAccRange;
        fp.acc_rd = mk_range(acc_a, cnt);
        fp.ub_wr  = mk_range(ub_b, act_rows);
        issued.a = acc_a[15:0];
        issued.b = ub_b[15:0];
      end
      OpVop: begin
        unit    = UnitVpu;
        to_unit = 1'b1;
        // The operations and their SHIFT ranges come from the ISA table.
        if (reserved_bits_set(ins, VopUsedBits) || (vop_bf16 && !HasBf16) || !vop_defined(vop_e'(vop_op)) ||
            vop_shift > vop_max_shift(vop_e'(vop_op), vop_bf16) || (vop_pool && ins.b != 0)) dec_err = ErrBadFlags;
        else if (ins.count == 0) dec_err = ErrBadCount;
        else if (!in_range(ub_a, vop_a_rows, UbRows) ||
                 (!vop_pool && !in_range(ub_b, vop_rows, UbRows)) ||
                 !in_range(ub_c, vop_rows, UbRows)) dec_err = ErrUbRange;
        fp.ub_rd0 = mk_range(ub_a, vop_a_rows);
        if (!vop_pool) fp.ub_rd1 = mk_range(ub_b, vop_rows);
        fp.ub_wr = mk_range(ub_c, vop_rows);
        issued.a = ub_a[15:0];
        issued.b = vop_pool ? 16'd0 : ub_b[15:0];
        issued.c = {48'd0, ub_c[15:0]};
      end
      OpCfg: begin
        unit    = UnitVpu;
        to_unit = 1'b1;
        if (reserved_bits_set(ins, CfgUsedBits)) dec_err = ErrBadFlags;
        else if (ins.count != 0) dec_err = ErrBadCount;
        else if (!cfg_ok(ins.a, ins.c[31:0])) dec_err = ErrBadCfg;
      end
      OpSync: begin
        is_sync = 1'b1;
        if (reserved_bits_set(ins, SyncUsedBits)) dec_err = ErrBadFlags;
        else if (ins.count != 0) dec_err = ErrBadCount;
      end
      OpLoop: begin
        if (reserved_bits_set(ins, LoopUsedBits)) dec_err = ErrBadFlags;
        else if (ins.count == 0 || ins.a == 0 || ins.a > 255 ||
                 pc + 32'd1 + 32'(ins.a) > ImemDepth) dec_err = ErrBadCount;
        else if (x_q.in_loop) dec_err = ErrNestedLoop;
      end
      OpIrq, OpHalt: begin
        is_irq  = ins.op == OpIrq;
        is_halt = ins.op == OpHalt;
        if (reserved_bits_set(ins, ins.op == OpIrq ? IrqUsedBits : HaltUsedBits)) dec_err = ErrBadFlags;
        else if (ins.count != 0) dec_err = ErrBadCount;
      end
      default: dec_err = ErrIllegalOpcode;
    endcase
    if (!fetch_ok) dec_err = ErrPcRange;
  end

  // CFG register index and value checks (docs/isa.md, CFG).
  function automatic logic cfg_ok(logic [15:0] index, logic [31:0] value);
    logic signed [31:0] v;
    v = $signed(value);
    if (index == CfgQmult || index == CfgQzp) return 1'b1;
    // The fp32 registers take any bits, in bf16 and both cores only.
    if (index >= CfgScale && index <= CfgFmax) return HasBf16;
    if (index == CfgQshift) return value <= 32'd31;
    if (index == CfgQmin || index == CfgQmax || index == CfgRelu6Max)
      return (v >= -128) && (v <= 127);
    if (index >= CfgBiasBase && index < CfgBiasBase + 16'(N)) return 1'b1;
    if (index >= CfgChMultBase && index < CfgChMultBase + 16'(N)) return 1'b1;
    if (index >= CfgChShiftBase && index < CfgChShiftBase + 16'(N))
      return (v >= -31) && (v <= 31);
    if (index >= CfgLutBase && index < CfgLutBase + 16'd256) return value[31:8] == 0;
    return 1'b0;
  endfunction

  // ---------------------------------------------------------------------------
  // Decode register
  // ---------------------------------------------------------------------------
  typedef struct packed {
    logic [31:0] pc;
    instr_t      ins;      // as issued: loop offsets applied
    footprint_t  fp;
    err_e        err;      // the decode checks' verdict
    unit_e       unit;
    logic        to_unit;
    logic        is_sync, is_irq, is_halt;
    logic        is_rw, is_mmc;
  } decoded_t;

  decoded_t d_q;
  logic     d_valid_q, issue;

  assign accept = run && x_valid_q && (!d_valid_q || issue);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      d_valid_q <= 1'b0;
    end else begin
      d_valid_q <= run && (accept || (d_valid_q && !issue));
    end
  end

  always_ff @(posedge clk_i) begin
    if (accept) begin
      d_q <= '{pc: pc, ins: issued, fp: fp, err: dec_err, unit: unit, to_unit: to_unit,
               is_sync: is_sync, is_irq: is_irq, is_halt: is_halt,
               is_rw: ins.op == OpRw, is_mmc: ins.op == OpMmc};
    end
  end

  // ---------------------------------------------------------------------------
  // Issue
  // ---------------------------------------------------------------------------
  err_e          iss_err;
  logic          waits, sync_ready;
  logic [NU-1:0] sync_mask;

  // The checks that depend on the RW and MMC instructions issued before.
  always_comb begin
    iss_err = d_q.err;
    if (d_q.err == ErrOk) begin
      if (d_q.is_rw && d_q.ins.count > room_q) iss_err = ErrWgtOverflow;
      if (d_q.is_mmc && no_tiles_q) iss_err = ErrNoWeights;
      else if (d_q.is_mmc && d_q.ins.flags[FlagMmcBf16] != tile_bf16_q[0]) iss_err = ErrWgtFormat;
    end
  end

  assign sync_mask  = (d_q.ins.flags[3:0] == 0) ? '1 : d_q.ins.flags[3:0];
  assign sync_ready = ((~unit_idle & sync_mask) == '0);

  always_comb begin
    waits = 1'b0;
    if (d_q.to_unit)
      waits = !cmd_ready_i[d_q.unit] || unit_full[d_q.unit];
    else if (d_q.is_sync)
      waits = !sync_ready;
    else if (d_q.is_irq || d_q.is_halt)
      waits = unit_idle != '1;
  end

  assign issue = run && d_valid_q && (iss_err == ErrOk) && !waits;
  // Input/RAW stall: the matrix unit has an MMC but must wait for its data.
  assign dep_stall_o = unit_hold_o[UnitMmc];

  always_comb begin
    cmd_valid_o = '0;
    if (issue && d_q.to_unit) cmd_valid_o[d_q.unit] = 1'b1;
  end
  assign cmd_o = '{pc: core_pkg::CmdPcW'(d_q.pc[PcW-1:0]), ins: d_q.ins};

  // ---------------------------------------------------------------------------
  // Next state
  // ---------------------------------------------------------------------------
  logic fault_now;

  assign fault_now = mem_fault_i && (state_q inside {StRun, StDrain});

  always_comb begin
    state_d     = state_q;
    err_d       = err_q;
    err_pc_d    = err_pc_q;
    room_d      = room_q;
    done_o      = 1'b0;
    irq_o       = 1'b0;
    flush_o     = 1'b0;
    mem_block_o = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (start_i) begin
          state_d  = StRun;
          err_d    = ErrOk;
          err_pc_d = '0;
        end
      end
      StRun: begin
        if (d_valid_q && iss_err != ErrOk) begin
          err_d    = iss_err;
          err_pc_d = d_q.pc;
          state_d  = StDrain;
        end else if (issue) begin
          if (d_q.is_halt) begin
            state_d = StIdle;
            done_o  = 1'b1;
          end
          irq_o = d_q.is_irq;
          if (d_q.is_rw) room_d = room_q - d_q.ins.count;
          if (d_q.is_mmc && d_q.ins.flags[FlagMmcPop]) room_d = room_q + 16'd1;
        end
      end
      StDrain: begin
        if (unit_idle == '1) state_d = StFlush;
      end
      StAbort: begin
        mem_block_o = 1'b1;
        if (mem_quiet_i) state_d = StFlush;
      end
      StFlush: begin
        flush_o = 1'b1;
        room_d  = 16'(WgtCapacity);
        state_d = StIdle;
        done_o  = 1'b1;
      end
      default: state_d = StIdle;
    endcase

    // A memory fault belongs to an instruction issued before any instruction
    // that failed its checks, so it is the error reported (as in program
    // order). The units are aborted rather than drained.
    if (fault_now) begin
      err_d    = ErrMemFault;
      err_pc_d = 32'(mem_fault_pc_i);
      state_d  = StAbort;
      done_o  = 1'b0;
      irq_o   = 1'b0;
    end
  end

  `FF(state_q, state_d, StIdle)
  `FF(err_q, err_d, ErrOk)
  `FF(err_pc_q, err_pc_d, '0)
  `FF(room_q, room_d, 16'(WgtCapacity))
  `FF(no_tiles_q, room_d == 16'(WgtCapacity), 1'b1)

  // Tile formats in program order: an RW appends count tiles of its format
  // after the loaded ones, an MMC POP drops the oldest. Only the mixed
  // datapath has a choice; the fixed ones are constant.
  if (Datapath == tpu_pkg::DatapathBoth) begin : gen_tile_fmt
    logic [WgtCapacity-1:0] tile_bf16_d, rw_tiles;
    logic [15:0]            loaded;
    assign loaded   = 16'(WgtCapacity) - room_q;
    // Bits loaded .. loaded + count - 1; an RW issues only within the room.
    assign rw_tiles = ((WgtCapacity'(1) << d_q.ins.count) - WgtCapacity'(1)) << loaded;
    always_comb begin
      tile_bf16_d = tile_bf16_q;
      if (state_q == StRun && issue && d_q.is_rw)
        tile_bf16_d = d_q.ins.flags[FlagRwBf16] ? tile_bf16_q | rw_tiles : tile_bf16_q & ~rw_tiles;
      if (state_q == StRun && issue && d_q.is_mmc && d_q.ins.flags[FlagMmcPop])
        tile_bf16_d = tile_bf16_q >> 1;
    end
    `FF(tile_bf16_q, tile_bf16_d, '0)
  end else begin : gen_tile_fmt_fixed
    assign tile_bf16_q = {WgtCapacity{Datapath == tpu_pkg::DatapathBf16}};
    logic unused_tile_bf16;
    assign unused_tile_bf16 = ^tile_bf16_q[WgtCapacity-1:1];
  end

  // Cover points: LOOPs taken and iterating; issue held by a full unit queue
  // or by a SYNC waiting for its units; every weight tile slot taken (an RW
  // beyond that is an error, not a wait).
  `COVER(LoopTaken, take_loop)
  `COVER(LoopIterates, x_accept && f_back_edge)
  `COVER(IssueHeldUnitFull, run && d_valid_q && d_q.to_unit && unit_full[d_q.unit])
  `COVER(IssueHeldSync, run && d_valid_q && d_q.is_sync && !sync_ready)
  `COVER(WeightRoomUsedUp, run && room_q == '0)
  `COVER(WeightFormatMismatch, run && d_valid_q && iss_err == ErrWgtFormat)

  assign busy_o     = state_q != StIdle;
  // The instruction memory may be written (the next program, while this one
  // drains): no program runs, or the running one's HALT has passed its
  // checks and waits to issue. Nothing behind a HALT is ever issued, and the
  // program ends when it issues (or with a memory fault), so the words read
  // from now on are dropped.
  assign imem_free_o = !run || (d_valid_q && d_q.is_halt && d_q.err == ErrOk);
  assign err_code_o = err_q;
  assign err_pc_o   = err_pc_q;

  // ---------------------------------------------------------------------------
  // Scoreboard: allocate on issue, dependencies found once, free on done
  // ---------------------------------------------------------------------------
  ctrl_scoreboard #(
    .UbRows (UbRows),
    .AccRows(AccRows),
    .Depth  (SbDepth)
  ) u_sb (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_o),
    .alloc_i     (issue && d_q.to_unit),
    .alloc_unit_i(d_q.unit),
    .alloc_fp_i  (d_q.fp),
    .start_i     (unit_start_i),
    .done_i      (unit_done_i),
    .hold_o      (unit_hold_o),
    .fill_i      (rhm_fill_i),
    .fill_lo_i   (rhm_fill_lo_i),
    .fill_last_i (rhm_fill_last_i),
    .idle_o      (unit_idle),
    .full_o      (unit_full)
  );

endmodule
