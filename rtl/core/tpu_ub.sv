// SPDX-License-Identifier: Apache-2.0
// Unified buffer: Rows rows of N int8 lanes, in Banks banks of simple
// dual-port RAM (one read and one write per bank per cycle).
//
// With Parts = 1 row r lives in bank r % Banks. With Parts > 1 the rows are
// cut into Parts equal parts by their top address bits, and each part has
// Banks / Parts banks of its own (row r in bank r % (Banks / Parts) of its
// part): units that work in different parts never meet at a bank. The bf16
// configurations use 4 parts of 2 banks: an MMC BF16 reads two rows a cycle,
// and a stream of results to the host that shared its banks lost about one
// cycle in three however rows were interleaved, because the two streams
// move at different speeds; the planner puts a bf16 GEMM's results in parts
// of their own (docs/decisions.md).
//
// Every unit has its own read or write port; each bank grants one read and
// one write per cycle, round-robin among the ports that ask for it, and a
// refused port asks again (valid/ready, the request held until taken).
// Units that stream consecutive rows fall into step after one refusal and
// then run at one row per cycle each. Read data comes back on rd_rsp_*
// exactly one cycle after the grant; a write lands at the edge that grants
// it. The controller never lets two units write the
// same row or read a row another unit is writing (docs/controller.md), so a
// row is never read and written in the same cycle. docs/decisions.md tells
// why banks rather than a multi-ported array.
`include "tpu_macros.svh"

module tpu_ub #(
  parameter int unsigned N       = tpu_pkg::ArrayN,        // lanes per row
  parameter int unsigned Rows    = tpu_pkg::Cfg.ub_rows,   // rows
  parameter int unsigned Banks   = 4,
  parameter int unsigned Parts   = 1,                      // parts by the top address bits (a power of two)
  parameter int unsigned RdPorts = 4,
  parameter int unsigned WrPorts = 2,
  parameter int unsigned RdFirst = 0,   // read ports (a mask) that win a bank over the others
  localparam int unsigned AddrW  = $clog2(Rows)
) (
  input  logic                                clk_i,
  input  logic                                rst_ni,
  // ---- reads ----
  input  logic [RdPorts-1:0]                  rd_req_valid_i,
  output logic [RdPorts-1:0]                  rd_req_ready_o,
  input  logic [RdPorts-1:0][AddrW-1:0]       rd_req_addr_i,
  output logic [RdPorts-1:0]                  rd_rsp_valid_o,
  output logic [RdPorts-1:0][N-1:0][7:0]      rd_rsp_data_o,
  // ---- writes ----
  input  logic [WrPorts-1:0]                  wr_valid_i,
  output logic [WrPorts-1:0]                  wr_ready_o,
  input  logic [WrPorts-1:0][AddrW-1:0]       wr_addr_i,
  input  logic [WrPorts-1:0][N-1:0][7:0]      wr_data_i
);

  localparam int unsigned BankW  = $clog2(Banks);
  localparam int unsigned PartW  = $clog2(Parts);
  localparam int unsigned PartW1 = PartW > 0 ? PartW : 1;   // (a legal slice when Parts = 1)
  localparam int unsigned LowW   = $clog2(Banks / Parts);   // row bits that pick the bank in a part
  localparam int unsigned LineW  = AddrW - BankW;           // row bits within a bank
  localparam int unsigned RdSelW = RdPorts > 1 ? $clog2(RdPorts) : 1;
  localparam int unsigned WrSelW = WrPorts > 1 ? $clog2(WrPorts) : 1;

  if (Banks < 2 || (1 << BankW) != Banks || Rows % Banks != 0) begin : gen_bad_banks
    $error("tpu_ub: Banks must be a power of two >= 2 that divides Rows");
  end
  if (Parts != 1 && ((1 << PartW) != Parts || Banks < 2 * Parts || (1 << AddrW) != Rows)) begin : gen_bad_parts
    $error("tpu_ub: Parts must be 1, or a power of two with two banks or more each and Rows a power of two");
  end

  // The bank of a row, and its line in the bank (each uses some of its bits).
  // verilator lint_off UNUSEDSIGNAL
  function automatic logic [BankW-1:0] bank_of(logic [AddrW-1:0] addr);
    if (Parts > 1) bank_of = BankW'({addr[AddrW-1-:PartW1], addr[LowW-1:0]});
    else bank_of = BankW'(addr[LowW-1:0]);
  endfunction
  function automatic logic [LineW-1:0] line_of(logic [AddrW-1:0] addr);
    if (Parts > 1) line_of = LineW'(addr[AddrW-1-PartW:LowW]);
    else line_of = LineW'(addr[AddrW-1:LowW]);
  endfunction
  // verilator lint_on UNUSEDSIGNAL

  // v wrapped into 0 .. n-1, for 0 <= v < 2n: one subtraction (a modulo by
  // five read ports would be a divider per bank).
  function automatic int wrap(int v, int n);
    return v >= n ? v - n : v;
  endfunction
  // Round-robin choice among the ports in `want`, starting at `first`.
  function automatic logic [RdSelW-1:0] pick_rd(logic [RdPorts-1:0] want, logic [RdSelW-1:0] first);
    pick_rd = first;
    for (int i = RdPorts - 1; i >= 0; i--) begin
      if (want[wrap(int'(first) + i, RdPorts)]) pick_rd = RdSelW'(wrap(int'(first) + i, RdPorts));
    end
  endfunction
  function automatic logic [WrSelW-1:0] pick_wr(logic [WrPorts-1:0] want, logic [WrSelW-1:0] first);
    pick_wr = first;
    for (int i = WrPorts - 1; i >= 0; i--) begin
      if (want[wrap(int'(first) + i, WrPorts)]) pick_wr = WrSelW'(wrap(int'(first) + i, WrPorts));
    end
  endfunction

  logic [Banks-1:0][RdPorts-1:0] rd_gnt;
  logic [Banks-1:0][WrPorts-1:0] wr_gnt;
  logic [Banks-1:0]              rd_any_q;
  logic [Banks-1:0][RdSelW-1:0]  rd_sel_q;
  logic [Banks-1:0][N-1:0][7:0]  bank_data;

  for (genvar b = 0; b < Banks; b++) begin : gen_bank
    logic [RdPorts-1:0] rd_want, rd_want_first;
    logic [WrPorts-1:0] wr_want;
    logic [RdSelW-1:0]  rd_sel, rd_first_q;
    logic [WrSelW-1:0]  wr_sel, wr_first_q;
    logic               rd_any, wr_any;

    for (genvar p = 0; p < RdPorts; p++) begin : gen_rd_want
      assign rd_want[p] = rd_req_valid_i[p] && bank_of(rd_req_addr_i[p]) == BankW'(b);
    end
    for (genvar p = 0; p < WrPorts; p++) begin : gen_wr_want
      assign wr_want[p] = wr_valid_i[p] && bank_of(wr_addr_i[p]) == BankW'(b);
    end

    assign rd_any = |rd_want;
    assign wr_any = |wr_want;
    assign rd_want_first = rd_want & RdPorts'(RdFirst);
    assign rd_sel = pick_rd(rd_want_first != '0 ? rd_want_first : rd_want, rd_first_q);
    assign wr_sel = pick_wr(wr_want, wr_first_q);

    always_comb begin
      rd_gnt[b] = '0;
      wr_gnt[b] = '0;
      if (rd_any) rd_gnt[b][rd_sel] = 1'b1;
      if (wr_any) wr_gnt[b][wr_sel] = 1'b1;
    end

    // The winner goes last next time.
    `FFL(rd_first_q, RdSelW'(wrap(int'(rd_sel) + 1, RdPorts)), rd_any, '0)
    `FFL(wr_first_q, WrSelW'(wrap(int'(wr_sel) + 1, WrPorts)), wr_any, '0)
    `FF(rd_any_q[b], rd_any, 1'b0)
    `FFLNR(rd_sel_q[b], rd_sel, rd_any)

    ram_1r1w #(
      .Width(N * 8),
      .Depth(Rows / Banks)
    ) u_ram (
      .clk_i,
      .wr_en_i  (wr_any),
      .wr_addr_i(line_of(wr_addr_i[wr_sel])),
      .wr_data_i(wr_data_i[wr_sel]),
      .rd_en_i  (rd_any),
      .rd_addr_i(line_of(rd_req_addr_i[rd_sel])),
      .rd_data_o(bank_data[b])
    );
  end

  // Grants to ports; each port asks one bank, so at most one grant each.
  always_comb begin
    rd_req_ready_o = '0;
    wr_ready_o     = '0;
    for (int b = 0; b < Banks; b++) begin
      rd_req_ready_o |= rd_gnt[b];
      wr_ready_o     |= wr_gnt[b];
    end
  end

  // Answers: the bank that granted a port last cycle sends it its row.
  always_comb begin
    rd_rsp_valid_o = '0;
    rd_rsp_data_o  = '0;
    for (int b = 0; b < Banks; b++) begin
      if (rd_any_q[b]) begin
        rd_rsp_valid_o[rd_sel_q[b]] = 1'b1;
        rd_rsp_data_o[rd_sel_q[b]]  = bank_data[b];
      end
    end
  end

endmodule
