// SPDX-License-Identifier: Apache-2.0
// DMA engine: the client channel payloads, error codes, tag states and the
// request-splitting arithmetic shared by the dma_* blocks. See docs/dma.md.
package dma_pkg;

  // Why a DMA transfer ended (rd_done_t.err), and the error classes the
  // device reports in ERR_CAUSE: the engine's, and core_dma_bridge's for a
  // request outside the running command's windows (no DMA is issued for it).
  typedef enum logic [2:0] {
    ErrNone         = 3'd0,  // all data delivered
    ErrUr           = 3'd1,  // a completion had status UR
    ErrCa           = 3'd2,  // a completion had status CA
    ErrPoisoned     = 3'd3,  // a completion was poisoned (its data is never delivered)
    ErrTimeout      = 3'd4,  // a sub-request was not completed in time
    ErrBusMasterOff = 3'd5,  // bus mastering is disabled: a sub-request could not be issued
    ErrWindowRead   = 3'd6,  // an RHM or RW outside the windows that grant reads
    ErrWindowWrite  = 3'd7   // a WHM outside the windows that grant writes
  } err_e;

  // ---- DMA windows (docs/host_interface.md, "DMA windows") -----------------
  // The host memory the running command's program may reach: cmd_proc loads
  // them from the command's window list, core_dma_bridge checks every core
  // request against them. Bounds are inclusive so a window may end at 2^64-1.
  localparam int unsigned MaxWindows = host_if_pkg::MaxWindows;

  typedef struct packed {
    logic        valid;
    logic        rd;     // RHM and RW may read it
    logic        wr;     // WHM may write it
    logic [63:0] base;
    logic [63:0] last;   // base + length - 1
  } window_t;

  localparam int unsigned OffW = 21;  // transfer byte offsets and lengths, 0 .. 2^20

  // ---- Client channels ----------------------------------------------------
  // Each channel is valid/ready plus one of these payloads per transfer (ports
  // <chan>_i / <chan>_o, <chan>_valid_*, <chan>_ready_*). Data beats carry
  // the transfer's bytes packed from byte 0 (byte i in data[8i+7:8i]).

  // rd_req: a read descriptor.
  typedef struct packed {
    logic [63:0] addr;  // host byte address, any alignment
    logic [31:0] len;   // bytes, 0 .. 2^20
  } rd_req_t;

  // rd_data: a beat of read data. keep is all ones except on the last beat (a
  // low mask; 0 on the terminating beat of a failed transfer).
  typedef struct packed {
    logic [127:0] data;
    logic [15:0]  keep;
    logic         last;  // last beat of the transfer
  } rd_data_t;

  // rd_done: the status of a read descriptor, in descriptor order.
  typedef struct packed {
    err_e        err;
    logic [63:0] err_addr;  // start address of the failing sub-request; 0 when OK
  } rd_done_t;

  // wr_req: a write descriptor.
  typedef struct packed {
    logic [63:0] addr;  // host byte address, any alignment
    logic [31:0] len;   // bytes, 0 .. 2^20
  } wr_req_t;

  // wr_data: a beat of write data, ceil(len / 16) per descriptor. keep must be
  // all ones except on the last beat (the low len mod 16 bytes).
  typedef struct packed {
    logic [127:0] data;
    logic [15:0]  keep;
    logic         last;  // last beat of the transfer
  } wr_data_t;

  // wr_done: the status of a write descriptor, once its last beat left rq.
  typedef struct packed {
    logic err;  // the writes were (partly) dropped: bus mastering was off
  } wr_done_t;

  // ---- A client's channels as bundles --------------------------------------
  // The read and the write channel of one client, each as what the client
  // drives (_m2s) and what it gets back (_s2m), valid and ready beside the
  // payloads above: the command processor's parts pass them whole.
  typedef struct packed {
    logic     req_valid;
    rd_req_t  req;
    logic     data_ready;
    logic     done_ready;
  } rd_m2s_t;

  typedef struct packed {
    logic     req_ready;
    logic     data_valid;
    rd_data_t data;
    logic     done_valid;
    rd_done_t done;
  } rd_s2m_t;

  typedef struct packed {
    logic     req_valid;
    wr_req_t  req;
    logic     data_valid;
    wr_data_t data;
    logic     done_ready;
  } wr_m2s_t;

  typedef struct packed {
    logic     req_ready;
    logic     data_ready;
    logic     done_valid;
    wr_done_t done;
  } wr_s2m_t;

  // A request size from the link configuration as the engine uses it: the
  // largest power of two not above `size`, clamped to 128 .. cap (cap itself
  // a power of two in 128 .. 4096).
  function automatic logic [12:0] pow2_size(logic [12:0] size, logic [12:0] cap);
    logic [12:0] r;
    r = 13'd128;
    for (int unsigned b = 8; b <= 12; b++) begin
      if (size >= 13'(1 << b)) r = 13'(1 << b);
    end
    return (r > cap) ? cap : r;
  endfunction

  // Bytes of the next sub-request starting at address addr (its low 12 bits)
  // with rem bytes left: up to
  // the next multiple of `size` (a power of two dividing 4096, so a
  // sub-request never crosses a 4 KiB boundary), at most rem.
  function automatic logic [12:0] sub_len(logic [11:0] addr, logic [OffW-1:0] rem,
                                          logic [12:0] size);
    logic [12:0] room;
    room = size - ({1'b0, addr} & (size - 13'd1));
    return (OffW'(room) < rem) ? room : rem[12:0];
  endfunction

  // Byte mask with the low n bytes set, n = 0 .. 16.
  function automatic logic [15:0] low_bytes(logic [4:0] n);
    return (n >= 5'd16) ? 16'hffff : 16'((17'd1 << n) - 17'd1);
  endfunction

endpackage
