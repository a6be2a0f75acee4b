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

  // Whether an RHM or WHM (host stride b, WIDE flag) goes to the memory port
  // as one burst request: its host rows follow each other (a stride of one
  // row: n bytes, 2n for a wide row). Otherwise it is one request per row.
  function automatic logic mem_burst(logic [15:0] stride, logic wide, int unsigned n);
    return stride == (wide ? 16'(2 * n) : 16'(n));
  endfunction

endpackage
