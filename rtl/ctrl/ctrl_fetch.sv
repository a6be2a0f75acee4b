// SPDX-License-Identifier: Apache-2.0
// Controller fetch: runs ahead of decode through the instruction memory and
// the LOOP back edges, into a small queue of fetched words.
//
// The instruction memory reads synchronously and its address comes straight
// from a flop (fpc_q): neither the issue decision nor the word just read is
// on the path to it. A read is made when the queue has room for it counting
// the reads still in flight, so the queue never overflows; Depth 3 keeps one
// instruction per cycle flowing.
//
// Loops: once decode has taken a LOOP (loop_i), fetch restarts after it with
// that loop's body and count. Words fetched after the LOOP before decode saw
// it are dropped (one LOOP costs a few cycles, its iterations none). From
// then on the back edge is taken at fetch: after the body's last word, fetch
// goes back to the body's first while iterations are left. Each word carries
// whether it lies inside the loop body (decode applies the loop offsets only
// there, and a LOOP inside is an error) and whether it ends an iteration that
// is followed by another (decode steps the offsets after it).
//
// Words past a HALT or an error are fetched and never issued; run_i low
// empties everything.
//
// A program may start before all of it is in the instruction memory
// (filling_i): fetch then reads only the first words_i words and waits at
// the next. When the rest will never come (fill_fault_i), it hands decode
// that word with opcode 0, which is illegal, so the program ends with an
// error at that pc (the command processor reports FETCH_FAULT).
`include "tpu_macros.svh"

module ctrl_fetch #(
  parameter int unsigned ImemDepth = 512,
  parameter int unsigned Depth     = 3,   // queued words, at least 2
  localparam int unsigned PcW      = $clog2(ImemDepth)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 run_i,         // program running
  input  logic                 start_i,       // (not running) load start_pc_i
  input  logic [31:0]          start_pc_i,
  // ---- the program still arriving ----
  input  logic                 filling_i,     // only words [0, words_i) are in the memory
  input  logic [PcW:0]         words_i,
  input  logic                 fill_fault_i,  // ... and the rest never will be
  // ---- instruction memory ----
  output logic [PcW-1:0]       imem_rd_addr_o,
  input  tpu_isa_pkg::instr_t  imem_rd_data_i, // the word at last cycle's address
  // ---- decode took a LOOP ----
  input  logic                 loop_i,
  input  logic [31:0]          loop_pc_i,     // the LOOP's pc
  input  logic [15:0]          loop_body_i,   // body length (instructions)
  input  logic [15:0]          loop_count_i,  // iterations
  // ---- fetched words, in program order ----
  output logic                 valid_o,
  input  logic                 ready_i,
  output tpu_isa_pkg::instr_t  word_o,
  output logic [31:0]          pc_o,
  output logic                 in_loop_o,     // inside a loop body
  output logic                 back_edge_o    // last of an iteration, another follows
);

  localparam int unsigned CntW = $clog2(Depth + 1);

  typedef struct packed {
    tpu_isa_pkg::instr_t word;
    logic [31:0]         pc;
    logic                in_loop;
    logic                back_edge;
  } entry_t;

  // ---------------------------------------------------------------------------
  // Fetch pc and loop sequencing
  // ---------------------------------------------------------------------------
  logic [31:0] fpc_q;                       // next pc to read
  logic        loop_q;                      // fpc_q lies inside a loop body
  logic [31:0] loop_first_q, loop_last_q;   // the body, inclusive
  logic [15:0] loop_left_q;                 // iterations after the current one

  logic        req_q;                       // a read was made last cycle
  logic [31:0] req_pc_q;
  logic        req_in_loop_q, req_back_q;
  logic        req_missing_q;               // the word read is not in the memory

  logic        word_here, word_missing;

  logic [CntW-1:0] count;
  logic            req, at_last, back;

  // Room for one more word, counting the read in flight (not the pop: the
  // read must not wait for the issue decision).
  assign word_here    = !filling_i || (fpc_q[31:PcW+1] == '0 && fpc_q[PcW:0] < words_i);
  assign word_missing = !word_here && fill_fault_i;
  assign req     = run_i && !loop_i && (word_here || word_missing) &&
                   ({1'b0, count} + (CntW + 1)'(req_q) < (CntW + 1)'(Depth));
  assign at_last = loop_q && (fpc_q == loop_last_q);
  assign back    = at_last && (loop_left_q != 0);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      fpc_q         <= '0;
      loop_q        <= 1'b0;
      loop_first_q  <= '0;
      loop_last_q   <= '0;
      loop_left_q   <= '0;
      req_q         <= 1'b0;
      req_pc_q      <= '0;
      req_in_loop_q <= 1'b0;
      req_back_q    <= 1'b0;
      req_missing_q <= 1'b0;
    end else if (!run_i) begin
      req_q <= 1'b0;
      if (start_i) begin
        fpc_q  <= start_pc_i;
        loop_q <= 1'b0;
      end
    end else if (loop_i) begin
      // The read made now belongs to the old sequence: dropped.
      req_q        <= 1'b0;
      fpc_q        <= loop_pc_i + 32'd1;
      loop_q       <= 1'b1;
      loop_first_q <= loop_pc_i + 32'd1;
      loop_last_q  <= loop_pc_i + 32'(loop_body_i);
      loop_left_q  <= loop_count_i - 16'd1;
    end else begin
      req_q <= req;
      if (req) begin
        req_pc_q      <= fpc_q;
        req_in_loop_q <= loop_q;
        req_back_q    <= back;
        req_missing_q <= word_missing;
        if (back) begin
          fpc_q       <= loop_first_q;
          loop_left_q <= loop_left_q - 16'd1;
        end else begin
          fpc_q <= fpc_q + 32'd1;
          if (at_last) loop_q <= 1'b0;
        end
      end
    end
  end

  assign imem_rd_addr_o = fpc_q[PcW-1:0];

  // ---------------------------------------------------------------------------
  // Queue of fetched words
  // ---------------------------------------------------------------------------
  entry_t push_entry, head;
  logic   queue_ready;   // always, by the read condition (NoOverflow)

  always_comb begin
    push_entry = '{word: imem_rd_data_i, pc: req_pc_q, in_loop: req_in_loop_q, back_edge: req_back_q};
    if (req_missing_q) push_entry.word.op = '0;  // not in the memory: illegal
  end

  stream_fifo #(
    .Width($bits(entry_t)),
    .Depth(Depth)
  ) u_queue (
    .clk_i,
    .rst_ni,
    .clear_i(!run_i || loop_i),
    .valid_i(req_q),
    .ready_o(queue_ready),
    .data_i (push_entry),
    .valid_o,
    .ready_i,
    .data_o (head),
    .count_o(count)
  );

  assign word_o      = head.word;
  assign pc_o        = head.pc;
  assign in_loop_o   = head.in_loop;
  assign back_edge_o = head.back_edge;

  `ASSERT(NoOverflow, req_q && run_i && !loop_i -> queue_ready)

endmodule
