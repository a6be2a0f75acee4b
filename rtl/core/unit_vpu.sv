// SPDX-License-Identifier: Apache-2.0
// Vector unit: executes ACT, VOP and CFG, one command at a time and in
// program order, so a CFG never changes parameters under a row in flight and
// a VOP never reads a row the previous command is still writing.
//
//   ACT      ACC rows -> vpu_act_row (bias, requantize, activation) -> UB
//   ACT RAW  ACC row i -> UB rows b+4i .. b+4i+3, unconverted (4N bytes); with
//            a lane count (c) only the R rows that hold those lanes, at b+Ri
//   VOP      UB rows -> vpu_vop_row (element-wise, pooling) -> UB
//   CFG      writes a quantization parameter, a bias or a LUT entry
// In bf16 and both configurations (Datapath) also:
//   ACT F32      ACC rows as fp32 -> vpu_act_f32_row (bias, SCALE, clamp) ->
//                bf16, the wide row at UB rows b+2i, b+2i+1
//   ACT F32 RAW  the same fp32 results unconverted, UB rows b+4i .. b+4i+3
//                (with a lane count, as ACT RAW; ACT F32 writes b+i only when
//                the lanes fit the first half of the wide row)
//   VOP BF16     wide rows (two UB rows each) -> vpu_vop_bf16_row -> UB, half
//                row by half row (the int8 sequence over twice the UB rows), in
//                groups: a wide row's two UB rows (ADD, MUL, MAX) or a pool's
//                2^shift wide rows' 2^(shift+1); a group gives the two UB rows
//                of one result
//   CFG          SCALE, RELU6_F32, FMIN, FMAX (fp32 bits); BIAS holds fp32
//                bits for ACT F32
// The requantization scale is per lane (per output channel): every lane has
// its own multiplier and exponent (CH_MULT+j, CH_SHIFT+j); QMULT and QSHIFT
// write all lanes at once (QSHIFT s as the exponent -s).
// done_o pulses in the cycle the command's last UB row is written (for CFG,
// the cycle the register is written). Streams one row per cycle.
// Sources are read through mem_rd_stream blocks (ACC; UB A and B), whose
// address generators run ahead of the datapath; the UB may refuse a read or
// a write for a cycle when another unit uses the bank.
// A VOP is defined row by row (a result row is written before the next row's
// sources are read). When its destination overlaps a source other than row
// for row, the unit therefore asks for the first row of each group only once
// every earlier result has landed ("serial" mode); otherwise rows stream.
`include "tpu_macros.svh"

module unit_vpu #(
  parameter int unsigned N       = tpu_pkg::ArrayN,
  parameter int unsigned UbRows  = tpu_pkg::Cfg.ub_rows,
  parameter int unsigned AccRows = tpu_pkg::Cfg.acc_rows,
  parameter tpu_pkg::datapath_e Datapath = tpu_pkg::MxuDatapath,  // bf16, both: the fp32 path
  localparam bit          HasBf16  = Datapath != tpu_pkg::DatapathInt8,
  localparam int unsigned UbAddrW  = $clog2(UbRows),
  localparam int unsigned AccAddrW = $clog2(AccRows)
) (
  input  logic                          clk_i,
  input  logic                          rst_ni,
  input  logic                          flush_i,
  // ---- commands ----
  input  logic                          cmd_valid_i,
  output logic                          cmd_ready_o,
  input  core_pkg::unit_cmd_t           cmd_i,
  output logic                          done_o,
  // ---- accumulators: a read port that always grants, data a cycle later ----
  output logic                          acc_rd_en_o,
  output logic [AccAddrW-1:0]           acc_rd_addr_o,
  input  logic [N-1:0][31:0]            acc_rd_data_i,
  // ---- unified buffer: two read ports (A, B), one write port ----
  output logic [1:0]                    ub_rd_req_valid_o,
  input  logic [1:0]                    ub_rd_req_ready_i,
  output logic [1:0][UbAddrW-1:0]       ub_rd_req_addr_o,
  input  logic [1:0]                    ub_rd_rsp_valid_i,
  input  logic [1:0][N-1:0][7:0]        ub_rd_rsp_data_i,
  output logic                          ub_wr_valid_o,
  input  logic                          ub_wr_ready_i,
  output logic [UbAddrW-1:0]            ub_wr_addr_o,
  output logic [N-1:0][7:0]             ub_wr_data_o,
  // ---- the ACC rows the matrix unit's oldest command writes (an ACT may
  //      follow it: a row is read once it is written) ----
  input  logic                          mmc_fill_i,
  input  logic [AccAddrW-1:0]           mmc_fill_lo_i,
  input  logic [AccAddrW:0]             mmc_fill_total_i,
  input  logic [AccAddrW:0]             mmc_fill_rows_i,
  // ---- the UB rows the command in progress writes ----
  output logic                          fill_o,        // an ACT or VOP is writing the UB
  output logic [UbAddrW-1:0]            fill_next_o,   // its rows [next, end) are still to be written, in order
  output logic [UbAddrW:0]              fill_end_o
);

  import tpu_isa_pkg::*;

  if (N % 4 != 0) begin : gen_bad_n
    $error("unit_vpu: RAW rows need N to be a multiple of 4");
  end

  typedef enum logic [1:0] {StIdle, StAct, StRaw, StVop} state_e;

  instr_t ins;  // the command's instruction
  assign ins = cmd_i.ins;

  // ---------------------------------------------------------------------------
  // Configuration registers (docs/isa.md, CFG)
  // ---------------------------------------------------------------------------
  logic [31:0]          qzp_q;
  logic [7:0]           qmin_q, qmax_q, relu6_q;
  logic [N-1:0][31:0]   bias_q, ch_mult_q;
  logic [N-1:0][5:0]    ch_exp_q;     // TFLite's exponent: > 0 left shift, <= 0 right
  logic [5:0]           qshift_exp;   // QSHIFT s as an exponent, -s
  logic                 cfg_wr, lut_wr, lut_ready;
  logic [15:0]          cfg_idx;
  logic [31:0]          cfg_val;

  assign cfg_idx = ins.a;
  assign cfg_val = ins.c[31:0];

  `FFL(qzp_q, cfg_val, cfg_wr && cfg_idx == CfgQzp, '0)
  `FFL(qmin_q, cfg_val[7:0], cfg_wr && cfg_idx == CfgQmin, 8'h80)
  `FFL(qmax_q, cfg_val[7:0], cfg_wr && cfg_idx == CfgQmax, 8'h7f)
  `FFL(relu6_q, cfg_val[7:0], cfg_wr && cfg_idx == CfgRelu6Max, 8'h7f)

  for (genvar j = 0; j < N; j++) begin : gen_bias
    `FFL(bias_q[j], cfg_val, cfg_wr && cfg_idx == CfgBiasBase + 16'(j), '0)
  end

  // Per-lane scales: QMULT / QSHIFT write every lane, CH_MULT+j / CH_SHIFT+j
  // lane j. The controller has checked the ranges (QSHIFT 0..31, CH_SHIFT
  // -31..31), so the low 6 bits hold the value.
  assign qshift_exp = 6'd0 - {1'b0, cfg_val[4:0]};

  for (genvar j = 0; j < N; j++) begin : gen_scale
    `FFL(ch_mult_q[j], cfg_val,
         cfg_wr && (cfg_idx == CfgQmult || cfg_idx == CfgChMultBase + 16'(j)), 32'h4000_0000)
    `FFL(ch_exp_q[j], cfg_idx == CfgQshift ? qshift_exp : cfg_val[5:0],
         cfg_wr && (cfg_idx == CfgQshift || cfg_idx == CfgChShiftBase + 16'(j)), '0)
  end
  // LUT entries live in vpu_act_row's block RAM (cleared after reset, during
  // which no command is taken); CFG writes them while no ACT is in flight.
  assign lut_wr = cfg_wr && cfg_idx >= CfgLutBase && cfg_idx < CfgLutBase + 16'd256;

  // ---------------------------------------------------------------------------
  // Command sequencing. Sources: `ask_*` rows requested per stream; `sent`
  // rows entered the datapath; `written` UB rows written.
  // ---------------------------------------------------------------------------
  state_e             state_q, state_d;
  logic [19:0]        ask_acc_q, ask_acc_d, ask_a_q, ask_a_d, ask_b_q, ask_b_d;
  logic [19:0]        sent_q, sent_d, written_q, written_d, in_total_q, out_total_q;
  logic [15:0]        src_a_q, src_b_q;  // full fields; upper bits are 0 after checks
  logic [UbAddrW-1:0] wr_addr_q, start_dst;  // the next UB row to write; the destination at start
  logic [UbAddrW:0]   wr_end_q;              // the end of the command's UB rows
  logic [19:0]        start_total;           // UB rows the command taken writes
  logic               bias_en_q, pool_q, serial_q, f32_q, raw_q, vbf16_q;
  logic               vb_in_ready, vb_out_valid;
  logic [N-1:0][7:0]  vb_out_row;
  logic [3:0]         group_shift;  // log2 of the UB rows of a pooling group
  logic               f32_in_ready, f32_out_valid;
  logic               start_f32;    // the command taken is ACT F32
  logic [N-1:0][31:0] f32_out_row;
  logic [N-1:0][15:0] f32_out_bf16;
  logic [1:0]         quarter_q, quarter_d;     // RAW, F32: part of the ACC row being written
  logic [1:0]         last_part_q;              // its last part: UB rows per ACC row - 1
  logic [2:0]         start_parts;              // UB rows per ACC row of the command taken
  logic               group_first, group_last;
  act_func_e          func_q;
  vop_e               vop_q;
  logic [3:0]         shift_q;
  logic               start, in_fire, out_write, last_write;

  logic               act_in_ready, act_out_valid, vop_in_ready, vop_out_valid;
  logic [N-1:0][7:0]  act_out_row, vop_out_row;
  logic               unused_act_user, unused_vop_user;

  logic [15:0] vop_group_mask;
  // VOP BF16: a group is a wide row's two UB rows, or a pool's 2^SHIFT wide
  // rows' 2^(SHIFT+1) (SHIFT <= 4: no overflow); it gives two result rows.
  assign group_shift    = vbf16_q ? (pool_q ? shift_q + 4'd1 : 4'd1) : shift_q;
  assign vop_group_mask = (16'd1 << group_shift) - 16'd1;

  // The next command starts in the cycle the current one writes its last
  // row: every stage behind the write is empty by then, and its first read
  // comes a cycle later, after that row has landed. Not a CFG, which
  // completes in the cycle it starts (one completion a cycle).
  assign cmd_ready_o = (state_q == StIdle || (last_write && ins.op != OpCfg)) && lut_ready;
  assign start       = cmd_valid_i && cmd_ready_o;
  assign cfg_wr      = start && ins.op == OpCfg;

  // ---- source streams ----
  // ACT reads ACC[a + i]; RAW reads each ACC[a + i] once and writes it as
  // four UB rows; VOP reads UB[a + i] (A) and, unless pooling, UB[b + i] (B).
  // In serial mode the first row of a group is asked for only when every
  // earlier group's result is in the UB.
  // Groups are 2^shift rows (pooling) or single rows; a group gives one
  // result row, or with BF16 two (both halves of a wide row; a BF16 group is
  // a wide row's two UB rows, or a pool's 2^(shift+1)).
  function automatic logic serial_ok(logic [19:0] asked, logic serial, logic [3:0] shift,
                                     logic two, logic [19:0] written);
    logic [19:0] mask;
    mask = (20'd1 << shift) - 20'd1;
    return !serial || (asked & mask) != 0 || ((asked >> shift) << two) == written;
  endfunction

  logic               acc_ask, a_ask, b_ask, acc_ask_ready, a_ask_ready, b_ask_ready;
  logic               acc_valid, acc_ready, a_valid, a_ready, b_valid, b_ready;
  logic [N-1:0][31:0] acc_row;
  logic [N-1:0][7:0]  a_row, b_row;
  logic               acc_rsp_q;
  logic [2:0]         unused_src_user;

  // An ACT asks for its first ACC row in the cycle it starts. It may start
  // while the matrix unit's oldest command still writes its rows (the
  // scoreboard lets it follow that command, docs/controller.md): a row that
  // command has yet to write is asked for once it is readable.
  logic                start_acc, acc_unwritten;
  logic [AccAddrW-1:0] acc_addr, mmc_off;
  assign start_acc     = start && ins.op == OpAct;
  assign acc_addr      = start_acc ? AccAddrW'(ins.a) : AccAddrW'(src_a_q) + AccAddrW'(ask_acc_q);
  assign mmc_off       = acc_addr - mmc_fill_lo_i;
  // (Compared only for a row to ask for, so that a simulator's model does
  // not redo it at every row the matrix unit writes.)
  always_comb begin
    acc_ask       = start_acc || ((state_q == StAct || state_q == StRaw) && ask_acc_q != in_total_q);
    acc_unwritten = 1'b0;
    if (acc_ask && mmc_fill_i)
      acc_unwritten = !({1'b0, mmc_off} < mmc_fill_rows_i) && {1'b0, mmc_off} < mmc_fill_total_i;
    acc_ask = acc_ask && !acc_unwritten;
  end
  assign a_ask   = state_q == StVop && ask_a_q != in_total_q &&
                   serial_ok(ask_a_q, serial_q, (pool_q || vbf16_q) ? group_shift : 4'd0, vbf16_q, written_q);
  assign b_ask   = state_q == StVop && !pool_q && ask_b_q != in_total_q &&
                   serial_ok(ask_b_q, serial_q, vbf16_q ? group_shift : 4'd0, vbf16_q, written_q);

  mem_rd_stream #(
    .AddrW      (AccAddrW),
    .DataW      (N * 32),
    .UserW      (1),
    .FallThrough(1'b1)  // an ACT's first row a cycle sooner: ACTs back to back leave no gap
  ) u_acc_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(acc_ask),
    .addr_ready_o(acc_ask_ready),
    .addr_i      (acc_addr),
    .addr_user_i (1'b0),
    .req_valid_o (acc_rd_en_o),
    .req_ready_i (1'b1),
    .req_addr_o  (acc_rd_addr_o),
    .rsp_valid_i (acc_rsp_q),
    .rsp_data_i  (acc_rd_data_i),
    .data_valid_o(acc_valid),
    .data_ready_i(acc_ready),
    .data_o      (acc_row),
    .data_user_o (unused_src_user[0])
  );
  `FF(acc_rsp_q, acc_rd_en_o && !flush_i, 1'b0)

  mem_rd_stream #(
    .AddrW(UbAddrW),
    .DataW(N * 8),
    .UserW(1)
  ) u_a_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(a_ask),
    .addr_ready_o(a_ask_ready),
    .addr_i      (UbAddrW'(src_a_q) + UbAddrW'(ask_a_q)),
    .addr_user_i (1'b0),
    .req_valid_o (ub_rd_req_valid_o[0]),
    .req_ready_i (ub_rd_req_ready_i[0]),
    .req_addr_o  (ub_rd_req_addr_o[0]),
    .rsp_valid_i (ub_rd_rsp_valid_i[0]),
    .rsp_data_i  (ub_rd_rsp_data_i[0]),
    .data_valid_o(a_valid),
    .data_ready_i(a_ready),
    .data_o      (a_row),
    .data_user_o (unused_src_user[1])
  );

  mem_rd_stream #(
    .AddrW(UbAddrW),
    .DataW(N * 8),
    .UserW(1)
  ) u_b_rd (
    .clk_i,
    .rst_ni,
    .clear_i     (flush_i),
    .addr_valid_i(b_ask),
    .addr_ready_o(b_ask_ready),
    .addr_i      (UbAddrW'(src_b_q) + UbAddrW'(ask_b_q)),
    .addr_user_i (1'b0),
    .req_valid_o (ub_rd_req_valid_o[1]),
    .req_ready_i (ub_rd_req_ready_i[1]),
    .req_addr_o  (ub_rd_req_addr_o[1]),
    .rsp_valid_i (ub_rd_rsp_valid_i[1]),
    .rsp_data_i  (ub_rd_rsp_data_i[1]),
    .data_valid_o(b_valid),
    .data_ready_i(b_ready),
    .data_o      (b_row),
    .data_user_o (unused_src_user[2])
  );

  // ---- into the datapaths ----
  logic vop_in_valid;
  assign vop_in_valid = state_q == StVop && a_valid && (pool_q || b_valid);

  always_comb begin
    in_fire   = 1'b0;
    acc_ready = 1'b0;
    a_ready   = 1'b0;
    b_ready   = 1'b0;
    unique case (state_q)
      StAct: begin
        acc_ready = f32_q ? f32_in_ready : act_in_ready;
        in_fire   = acc_valid && acc_ready;
      end
      StRaw: begin
        // The ACC row leaves once its last part is written.
        acc_ready = ub_wr_ready_i && quarter_q == last_part_q;
        in_fire   = acc_valid && acc_ready;
      end
      StVop: begin
        in_fire = vop_in_valid && (vbf16_q ? vb_in_ready : vop_in_ready);
        a_ready = in_fire;
        b_ready = in_fire && !pool_q;
      end
      default: ;
    endcase
  end

  // One UB write per cycle, from whichever path the command uses.
  always_comb begin
    ub_wr_valid_o = 1'b0;
    ub_wr_data_o  = '0;
    unique case (state_q)
      StAct: begin
        if (f32_q) begin
          // F32 RAW: quarter q is lanes q*N/4 .. of the fp32 row (as RAW);
          // F32: half h is bf16 lanes h*N/2 .. (a wide row).
          ub_wr_valid_o = f32_out_valid;
          ub_wr_data_o  = raw_q ? f32_out_row[(quarter_q * N / 4) +: N / 4]
                                : f32_out_bf16[(quarter_q[0] * N / 2) +: N / 2];
        end else begin
          ub_wr_valid_o = act_out_valid;
          ub_wr_data_o  = act_out_row;
        end
      end
      StVop: begin
        ub_wr_valid_o = vbf16_q ? vb_out_valid : vop_out_valid;
        ub_wr_data_o  = vbf16_q ? vb_out_row : vop_out_row;
      end
      StRaw: begin
        // Byte q*N + l of the little-endian int32 row is lane l of UB row q.
        ub_wr_valid_o = acc_valid;
        ub_wr_data_o  = acc_row[(quarter_q * N / 4) +: N / 4];
      end
      default: ;
    endcase
  end
  assign out_write    = ub_wr_valid_o && ub_wr_ready_i;
  assign ub_wr_addr_o = wr_addr_q;

  // Every command that writes the UB writes its rows in address order, one
  // at a time, so the rows it has yet to write are [next, end) (a WHM may
  // follow it: docs/controller.md). Both are registers, so that the WHM's
  // comparisons follow flops directly; the rows lie inside the UB (checked
  // at issue), so end is at most UbRows.
  assign fill_o      = state_q != StIdle;
  assign fill_next_o = wr_addr_q;
  assign fill_end_o  = wr_end_q;
  assign last_write   = out_write && (written_q + 20'd1 == out_total_q);
  assign done_o       = last_write || cfg_wr;

  always_comb begin
    state_d   = state_q;
    ask_acc_d = ask_acc_q + 20'(acc_ask && acc_ask_ready);
    ask_a_d   = ask_a_q + 20'(a_ask && a_ask_ready);
    ask_b_d   = ask_b_q + 20'(b_ask && b_ask_ready);
    sent_d    = sent_q + 20'(in_fire);
    written_d = written_q + 20'(out_write);
    quarter_d = quarter_q;
    // ACT RAW and F32: the parts of a result row (up to 4 UB rows, or 2
    // without RAW), as many as the command's lanes need.
    if ((state_q == StRaw || (state_q == StAct && f32_q)) && out_write)
      quarter_d = quarter_q == last_part_q ? 2'd0 : quarter_q + 2'd1;
    if (last_write) state_d = StIdle;
    if (start) begin
      ask_acc_d = 20'(acc_ask && acc_ask_ready);
      ask_a_d   = '0;
      ask_b_d   = '0;
      sent_d    = '0;
      written_d = '0;
      quarter_d = '0;
      unique case (ins.op)
        OpAct:   state_d = ins.flags[FlagActRaw] && !start_f32 ? StRaw : StAct;
        OpVop:   state_d = StVop;
        default: state_d = StIdle;  // CFG completes at once
      endcase
    end
    if (flush_i) state_d = StIdle;
  end

  logic        start_raw, start_pool;
  logic [2:0]  start_vop;
  logic [3:0]  start_shift;
  assign start_raw   = ins.flags[FlagActRaw];
  assign start_f32   = HasBf16 && ins.op == OpAct && ins.flags[FlagActF32];
  assign start_vop   = ins.flags[FlagVopOpLsb +: 3];
  assign start_shift = ins.flags[FlagVopShiftLsb +: 4];
  assign start_pool  = ins.op == OpVop && !vop_binary(vop_e'(start_vop));

  // Serial mode: the destination overlaps a source range, other than starting
  // on the same row (then every row is read before it is overwritten).
  function automatic logic overlaps(logic [19:0] x, logic [19:0] x_len,
                                    logic [19:0] y, logic [19:0] y_len);
    return (x < y + y_len) && (y < x + x_len);
  endfunction

  // UB rows per operand: a VOP BF16 row is two.
  logic        start_serial, start_vbf16;
  logic [19:0] rows_a, rows_bc;
  assign start_vbf16  = HasBf16 && ins.op == OpVop && ins.flags[FlagVopBf16];
  assign rows_bc      = 20'(ins.count) << start_vbf16;
  assign rows_a       = start_pool ? rows_bc << start_shift : rows_bc;
  assign start_serial = ins.op == OpVop && (
      (ins.c[15:0] != ins.a &&
       overlaps(20'(ins.c[15:0]), rows_bc, 20'(ins.a), rows_a)) ||
      (!start_pool && ins.c[15:0] != ins.b &&
       overlaps(20'(ins.c[15:0]), rows_bc, 20'(ins.b), rows_bc)));

  `FF(state_q, state_d, StIdle)
  `FF(ask_acc_q, ask_acc_d, '0)
  `FF(ask_a_q, ask_a_d, '0)
  `FF(ask_b_q, ask_b_d, '0)
  `FF(sent_q, sent_d, '0)
  `FF(written_q, written_d, '0)
  `FF(quarter_q, quarter_d, '0)
  `FFLNR(src_a_q, ins.a, start)
  `FFLNR(src_b_q, ins.b, start)
  // The next UB row to write, and the end of the command's rows.
  assign start_dst = UbAddrW'(ins.op == OpVop ? ins.c[15:0] : ins.b);
  `FF(wr_addr_q, start ? start_dst : wr_addr_q + UbAddrW'(out_write), '0)
  `FFLNR(wr_end_q, {1'b0, start_dst} + (UbAddrW + 1)'(start_total), start)
  `FFLNR(bias_en_q, ins.flags[FlagActBias], start)
  `FFLNR(func_q, act_func_e'(ins.flags[FlagActFuncLsb +: 2]), start)
  `FFLNR(vop_q, vop_e'(start_vop), start)
  `FFLNR(shift_q, start_shift, start)
  `FFLNR(pool_q, start_pool, start)
  `FFLNR(serial_q, start_serial, start)
  `FFLNR(f32_q, start_f32, start)
  `FFLNR(raw_q, start_raw, start)
  `FFLNR(vbf16_q, start_vbf16, start)
  // UB rows written: per ACC row of an ACT RAW (int32 or fp32) up to 4, of
  // an ACT F32 up to 2 (those that hold its lanes), per VOP BF16 row 2.
  assign start_parts = core_pkg::act_ub_rows(start_raw, start_f32, ins.c[15:0], N);
  `FFLNR(last_part_q, 2'(start_parts - 3'd1), start)
  assign start_total = ins.op == OpAct ? 20'(core_pkg::times_parts(ins.count, start_parts)) :
                       start_vbf16 ? 20'(ins.count) << 1 : 20'(ins.count);
  `FFLNR(out_total_q, start_total, start)
  `FFLNR(in_total_q, ins.op == OpVop ? rows_a : 20'(ins.count), start)

  // ---------------------------------------------------------------------------
  // Datapaths
  // ---------------------------------------------------------------------------
  vpu_act_row #(
    .N(N)
  ) u_act (
    .clk_i,
    .rst_ni,
    .clear_i        (flush_i),
    .lut_ready_o    (lut_ready),
    .lut_wr_en_i    (lut_wr),
    .lut_wr_idx_i   (8'(cfg_idx - CfgLutBase)),
    .lut_wr_data_i  (cfg_val[7:0]),
    .in_valid_i     (state_q == StAct && !f32_q && acc_valid),
    .in_ready_o     (act_in_ready),
    .in_acc_i       (acc_row),
    .in_bias_i      (bias_q),
    .in_bias_en_i   (bias_en_q),
    .in_multiplier_i(ch_mult_q),
    .in_exponent_i  (ch_exp_q),
    .in_zero_point_i(qzp_q),
    .in_qmin_i      (qmin_q),
    .in_qmax_i      (qmax_q),
    .in_relu6_max_i (relu6_q),
    .in_func_i      (func_q),
    .in_user_i      (1'b0),
    .out_valid_o    (act_out_valid),
    .out_ready_i    (state_q == StAct && !f32_q && ub_wr_ready_i),
    .out_row_o      (act_out_row),
    .out_user_o     (unused_act_user)
  );

  // ---- ACT F32 (bf16 and both configurations) ----
  if (HasBf16) begin : gen_f32
    logic [31:0] scale_q, relu6_f32_q, fmin_q, fmax_q, lo, hi;
    logic        f32_part_last;
    `FFL(scale_q, cfg_val, cfg_wr && cfg_idx == CfgScale, 32'h3F80_0000)         // 1.0
    `FFL(relu6_f32_q, cfg_val, cfg_wr && cfg_idx == CfgRelu6F32, 32'h40C0_0000)  // 6.0
    `FFL(fmin_q, cfg_val, cfg_wr && cfg_idx == CfgFmin, 32'hFF80_0000)           // -inf
    `FFL(fmax_q, cfg_val, cfg_wr && cfg_idx == CfgFmax, 32'h7F80_0000)           // +inf

    // The clamp after the function: ReLU and ReLU6 raise FMIN to +0, ReLU6
    // lowers FMAX to RELU6_F32.
    assign lo = (func_q == ActRelu || func_q == ActRelu6) ? fp_pkg::fp32_max(fmin_q, 32'd0) : fmin_q;
    assign hi = func_q == ActRelu6 ? fp_pkg::fp32_min(fmax_q, relu6_f32_q) : fmax_q;
    assign f32_part_last = quarter_q == last_part_q;

    vpu_act_f32_row #(
      .N(N)
    ) u_act_f32 (
      .clk_i,
      .rst_ni,
      .clear_i    (flush_i),
      .in_valid_i (state_q == StAct && f32_q && acc_valid),
      .in_ready_o (f32_in_ready),
      .in_acc_i   (acc_row),
      .bias_i     (bias_q),
      .bias_en_i  (bias_en_q),
      .scale_i    (scale_q),
      .lo_i       (lo),
      .hi_i       (hi),
      .out_valid_o(f32_out_valid),
      .out_ready_i(state_q == StAct && f32_q && ub_wr_ready_i && f32_part_last),
      .out_row_o  (f32_out_row),
      .out_bf16_o (f32_out_bf16)
    );
  end else begin : gen_no_f32
    assign f32_in_ready  = 1'b0;
    assign f32_out_valid = 1'b0;
    assign f32_out_row   = '0;
    assign f32_out_bf16  = '0;
    logic unused_f32;
    assign unused_f32 = raw_q;
  end

  assign group_first = !(pool_q || vbf16_q) || ((16'(sent_q) & vop_group_mask) == 16'd0);
  assign group_last  = !(pool_q || vbf16_q) || ((16'(sent_q) & vop_group_mask) == vop_group_mask);

  vpu_vop_row #(
    .N(N)
  ) u_vop (
    .clk_i,
    .rst_ni,
    .clear_i    (flush_i),
    .in_valid_i (vop_in_valid && !vbf16_q),
    .in_ready_o (vop_in_ready),
    .in_a_i     (a_row),
    .in_b_i     (b_row),
    .in_op_i    (vop_q),
    .in_shift_i (shift_q),
    .in_first_i (group_first),
    .in_last_i  (group_last),
    .in_user_i  (1'b0),
    .out_valid_o(vop_out_valid),
    .out_ready_i(state_q == StVop && !vbf16_q && ub_wr_ready_i),
    .out_row_o  (vop_out_row),
    .out_user_o (unused_vop_user)
  );

  if (HasBf16) begin : gen_vop_bf16
    vpu_vop_bf16_row #(
      .N(N)
    ) u_vop_bf16 (
      .clk_i,
      .rst_ni,
      .clear_i    (flush_i),
      .in_valid_i (vop_in_valid && vbf16_q),
      .in_ready_o (vb_in_ready),
      .in_a_i     (a_row),
      .in_b_i     (b_row),
      .in_op_i    (vop_q),
      .in_shift_i (shift_q),
      .in_first_i (group_first),
      .in_last_i  (group_last),
      .out_valid_o(vb_out_valid),
      .out_ready_i(state_q == StVop && vbf16_q && ub_wr_ready_i),
      .out_row_o  (vb_out_row)
    );
  end else begin : gen_no_vop_bf16
    assign vb_in_ready  = 1'b0;
    assign vb_out_valid = 1'b0;
    assign vb_out_row   = '0;
  end

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.pc, ins.c[63:32], src_a_q, src_b_q};

  `ASSERT_IF(VpuCmdIsVpu, cmd_valid_i, ins.op inside {OpAct, OpVop, OpCfg})

endmodule
