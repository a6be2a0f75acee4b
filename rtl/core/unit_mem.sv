// Memory unit: executes RHM (host -> UB) and WHM (UB -> host), one command at
// a time, with as many row requests in flight as the memory port accepts.
//
// Row i of a command moves between UB row a+i and host address c + i*b.
// done_o pulses when a command has completely finished: every RHM row is in
// the UB, every WHM row is acknowledged. A response with the error bit set
// pulses fault_o with the command's pc; the unit then issues nothing more,
// writes nothing more, and waits for the core to flush it.
`include "tpu_macros.svh"

module unit_mem #(
  parameter int unsigned N      = tpu_pkg::ArrayN,
  parameter int unsigned UbRows = 4096,
  parameter int unsigned PcW    = 10,
  localparam int unsigned UbAddrW = $clog2(UbRows)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,
  input  logic                       flush_i,
  // ---- commands ----
  input  logic                       cmd_valid_i,
  output logic                       cmd_ready_o,
  input  tpu_isa_pkg::instr_t        cmd_i,
  input  logic [PcW-1:0]             cmd_pc_i,
  output logic                       done_o,
  output logic                       fault_o,
  output logic [PcW-1:0]             fault_pc_o,
  output logic                       waiting_o,   // responses outstanding
  // ---- memory port ----
  output logic                       req_valid_o,
  input  logic                       req_ready_i,
  output logic                       req_write_o,
  output logic [63:0]                req_addr_o,
  output logic [N-1:0][7:0]          req_wdata_o,
  input  logic                       rsp_valid_i,
  output logic                       rsp_ready_o,
  input  logic [N-1:0][7:0]          rsp_rdata_i,
  input  logic                       rsp_err_i,
  // ---- unified buffer ----
  output logic [UbAddrW-1:0]         ub_rd_addr_o,
  input  logic [N-1:0][7:0]          ub_rd_data_i,
  output logic                       ub_wr_en_o,
  output logic [UbAddrW-1:0]         ub_wr_addr_o,
  output logic [N-1:0][7:0]          ub_wr_data_o
);

  logic                active_q, active_d;
  logic                write_q;         // WHM
  logic                faulted_q, faulted_d;
  logic [15:0]         count_q, sent_q, sent_d, recv_q, recv_d;
  logic [UbAddrW-1:0]  ub_base_q;
  logic [63:0]         addr_q, addr_d, stride_q;
  logic [PcW-1:0]      pc_q;
  logic                start, req_fire, rsp_fire, finished;

  assign cmd_ready_o = !active_q;
  assign start       = cmd_valid_i && cmd_ready_o;

  assign req_valid_o  = active_q && !faulted_q && (sent_q != count_q);
  assign req_write_o  = write_q;
  assign req_addr_o   = addr_q;
  assign ub_rd_addr_o = ub_base_q + UbAddrW'(sent_q);
  assign req_wdata_o  = ub_rd_data_i;
  assign req_fire     = req_valid_o && req_ready_i;

  assign rsp_ready_o  = 1'b1;  // a response always has somewhere to go
  assign rsp_fire     = rsp_valid_i && rsp_ready_o;
  assign ub_wr_en_o   = rsp_fire && !write_q && !rsp_err_i && !faulted_q;
  assign ub_wr_addr_o = ub_base_q + UbAddrW'(recv_q);
  assign ub_wr_data_o = rsp_rdata_i;

  assign finished   = active_q && !faulted_q && (recv_d == count_q);
  assign done_o     = finished;
  assign fault_o    = rsp_fire && rsp_err_i && !faulted_q;
  assign fault_pc_o = pc_q;
  assign waiting_o  = active_q && (sent_q != recv_q);

  always_comb begin
    sent_d    = sent_q + 16'(req_fire);
    recv_d    = recv_q + 16'(rsp_fire);
    addr_d    = req_fire ? addr_q + stride_q : addr_q;
    faulted_d = faulted_q || fault_o;
    active_d  = active_q && !finished;
    if (start) begin
      active_d  = 1'b1;
      sent_d    = '0;
      recv_d    = '0;
      addr_d    = cmd_i.c;
      faulted_d = 1'b0;
    end
    if (flush_i) begin
      active_d  = 1'b0;
      faulted_d = 1'b0;
    end
  end

  `FF(active_q, active_d, 1'b0)
  `FF(faulted_q, faulted_d, 1'b0)
  `FF(sent_q, sent_d, '0)
  `FF(recv_q, recv_d, '0)
  `FFNR(addr_q, addr_d)
  `FFLNR(write_q, cmd_i.op == tpu_isa_pkg::OpWhm, start)
  `FFLNR(count_q, cmd_i.count, start)
  `FFLNR(ub_base_q, cmd_i.a[UbAddrW-1:0], start)
  `FFLNR(stride_q, 64'(cmd_i.b), start)
  `FFLNR(pc_q, cmd_pc_i, start)

  logic unused_cmd;
  assign unused_cmd = ^{cmd_i.flags, cmd_i.a};

  `ASSERT(MemCmdIsRhmOrWhm, cmd_valid_i |-> (cmd_i.op == tpu_isa_pkg::OpRhm) ||
                                            (cmd_i.op == tpu_isa_pkg::OpWhm))

endmodule
