// SPDX-License-Identifier: Apache-2.0
// TLP-lite: the PCIe-style streams between the host ("root complex") and the
// TPU, one clock, valid/ready on each, one struct per beat.
//
//   cq  host -> device   MMIO request to BAR0 (one beat: a 32-bit read or write)
//   cc  device -> host   MMIO read completion (one beat)
//   rq  device -> host   memory read request (one beat) or posted write
//                        (header repeated on every beat, payload 16 B a beat)
//   rc  host -> device   read completion(s): a read may be answered by several
//                        completions, in address order for that request, and
//                        completions of different tags may interleave by
//                        completion (never inside one)
// Payload bytes are packed from byte 0 of a request's (or completion's) first
// beat, whatever the address alignment; keep marks the valid bytes of a beat.
// Reads and writes share rq, so a read never overtakes an earlier write.
// See docs/host_interface.md.
package tlp_pkg;

  localparam int unsigned DataBytes = 16;  // payload bytes per beat (128 bits)
  localparam int unsigned TagW      = 8;   // read tags; the link model uses 32
  localparam int unsigned LenW      = 13;  // bytes, 0..4096

  typedef enum logic [1:0] {
    CplSc = 2'd0,  // successful completion
    CplUr = 2'd1,  // unsupported request
    CplCa = 2'd2   // completer abort
  } cpl_status_e;

  // cq: MMIO request. addr is the byte offset in BAR0 and must be 4-byte
  // aligned; be selects the bytes of the 32-bit word.
  typedef struct packed {
    logic              write;
    logic [TagW-1:0]   tag;
    logic [63:0]       addr;
    logic [3:0]        be;
    logic [31:0]       data;
  } cq_t;

  // cc: MMIO read completion. UR for an unmapped or malformed read.
  typedef struct packed {
    logic [TagW-1:0]   tag;
    cpl_status_e       status;
    logic [31:0]       data;
  } cc_t;

  // rq: memory request. A read is one beat (write = 0, last = 1); a posted
  // write is ceil(len / 16) beats. len is 1..4096 and a request never crosses
  // a 4 KiB boundary.
  typedef struct packed {
    logic              write;
    logic [TagW-1:0]   tag;        // reads only
    logic [63:0]       addr;
    logic [LenW-1:0]   len;        // bytes
    logic [DataBytes*8-1:0] data;  // write payload
    logic [DataBytes-1:0]   keep;  // valid payload bytes of this beat
    logic              last;       // last beat of the request
  } rq_t;

  // rc: read completion beat. byte_count counts the bytes of the request
  // still to come including this completion (PCIe style); len the payload
  // bytes of this completion. A completion with status other than SC carries
  // no payload (len 0, one beat).
  typedef struct packed {
    logic [TagW-1:0]   tag;
    cpl_status_e       status;
    logic              poisoned;
    logic [LenW-1:0]   byte_count;
    logic [LenW-1:0]   len;
    logic [DataBytes*8-1:0] data;
    logic [DataBytes-1:0]   keep;
    logic              last;       // last beat of this completion
  } rc_t;

  // Link configuration (the config-space sideband), static while DMA runs.
  typedef struct packed {
    logic        bus_master_en;
    logic [12:0] max_payload;      // bytes: 128, 256, 512, ... 4096
    logic [12:0] max_read_req;     // bytes: 128 .. 4096
    logic        msi_en;
    logic [63:0] msi_addr;
    logic [31:0] msi_data;
  } link_cfg_t;

endpackage
