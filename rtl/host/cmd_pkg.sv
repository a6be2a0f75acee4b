// SPDX-License-Identifier: Apache-2.0
// Command processor (cmd_proc): the command slot between its prefetch and
// its execute side.
package cmd_pkg;

  // Bits of a window table index.
  localparam int unsigned WinW = $clog2(dma_pkg::MaxWindows);

  // Bits of a program word's index as the prefetch counts the words it
  // writes: up to the instruction memory's depth (a direct program) or the
  // prefetch buffer's.
  function automatic int unsigned words_w(int unsigned imem_depth, int unsigned pf_depth);
    return $clog2(imem_depth > pf_depth ? imem_depth : pf_depth) + 1;
  endfunction

  // The next command: its submission entry and what its prefetch found
  // (cmd_prefetch fills it; cmd_copy copies its program in; cmd_execute takes
  // it and reports what was found, in command order).
  typedef struct packed {
    host_if_pkg::sq_entry_t entry;
    logic [15:0]            head;      // SQ_HEAD after its entry
    logic                   efault;    // the entry could not be read: halt the ring
    logic                   bad;       // malformed entry
    logic                   win_bad;   // malformed window list
    logic                   fault;     // the list or the program could not be read
    logic                   too_long;  // the program is not in the buffer
    logic                   direct;    // windows and program went straight to the core
    dma_pkg::err_e          fclass;    // the DMA fault to report (efault, fault, or a
    logic [63:0]            faddr;     // fault on a direct program's rest), its address
  } slot_t;

endpackage
