// SPDX-License-Identifier: Apache-2.0
// Compute core: the command the controller hands to an execution unit.
// See docs/controller.md.
package core_pkg;

  // Bits of an instruction index in a command. Instruction memory holds at
  // most 2^16 instructions (CAPS2.imem_depth is 16 bits); a core with fewer
  // leaves the upper bits 0.
  localparam int unsigned CmdPcW = 16;

  // A command on its way from the controller through a unit's queue to the
  // unit: the instruction as issued (the LOOP offsets already added to its
  // row and host address fields) and its index, which the unit reports with
  // a memory fault.
  typedef struct packed {
    logic [CmdPcW-1:0]   pc;
    tpu_isa_pkg::instr_t ins;
  } unit_cmd_t;

  // An RHM or WHM as the memory unit hands it to its read or write side:
  // the command and its host span [first, last] (see mem_burst_t).
  typedef struct packed {
    unit_cmd_t   cmd;
    logic [63:0] first;
    logic [64:0] last;
  } mem_cmd_t;

  // The memory port (core_mem_port.svh) moves bursts of rows. Bits of a
  // burst's row count:
  localparam int unsigned MemRowsW = 24;

  // A burst: `rows` rows of N bytes at host address addr, read or written.
  // first and last are the host span of the instruction it belongs to, which
  // the device checks against the command's DMA windows (core_dma_bridge);
  // last has a 65th bit for a span that wraps past 2^64 - 1.
  typedef struct packed {
    logic                write;
    logic [63:0]         addr;
    logic [MemRowsW-1:0] rows;
    logic [63:0]         first;
    logic [64:0]         last;
  } mem_burst_t;

  // Whether an RHM or WHM (host stride b, WIDE flag) goes to the memory port
  // as one burst request: its host rows follow each other (a stride of one
  // row: n bytes, 2n for a wide row). Otherwise it is one request per row.
  function automatic logic mem_burst(logic [15:0] stride, logic wide, int unsigned n);
    return stride == (wide ? 16'(2 * n) : 16'(n));
  endfunction

  // UB rows an ACT writes per ACC row (docs/isa.md, ACT): of the result's
  // parts (RAW int32 or fp32 4, F32 bf16 2, else 1; n / parts lanes each)
  // those that hold lanes 0 .. lanes-1 (lanes 0 = n), 1 to 4. lanes > n is
  // BAD_FLAGS (the controller's check) and gives the part count.
  function automatic logic [2:0] act_ub_rows(logic raw, logic f32, logic [15:0] lanes,
                                             int unsigned n);
    logic all;  // (constant thresholds: n is a parameter)
    all = lanes == 16'd0;
    if (raw) return (all || lanes > 16'(3 * n / 4)) ? 3'd4 : lanes > 16'(n / 2) ? 3'd3 :
                    lanes > 16'(n / 4) ? 3'd2 : 3'd1;
    if (f32) return (all || lanes > 16'(n / 2)) ? 3'd2 : 3'd1;
    return 3'd1;
  endfunction

  // An instruction's count times parts 1 to 4 (act_ub_rows), as shifts and
  // one add.
  function automatic logic [17:0] times_parts(logic [15:0] count, logic [2:0] parts);
    unique case (parts)
      3'd2:    return {1'b0, count, 1'b0};
      3'd3:    return {1'b0, count, 1'b0} + 18'(count);
      3'd4:    return {count, 2'b0};
      default: return 18'(count);
    endcase
  endfunction

endpackage
