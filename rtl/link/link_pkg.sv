// SPDX-License-Identifier: Apache-2.0
// The serial host link (docs/link.md): frame bytes, frame kinds, message
// types, sizes and the frame CRC. Shared by rtl/link/*; the host side of the
// same format is sw/common/include/tpu/link.h.
package link_pkg;

  // ---- frames ----
  localparam logic [7:0] Flag      = 8'h7E;  // starts and ends every frame
  localparam logic [7:0] Escape    = 8'h7D;  // next byte is XOR EscapeXor
  localparam logic [7:0] EscapeXor = 8'h20;

  localparam int unsigned HeaderBytes = 9;    // kind, seq, ack, time (4), len (2)
  localparam int unsigned CrcBytes    = 2;
  localparam int unsigned MaxPayload  = 267;  // the largest message: a 256-byte DMA write
  localparam int unsigned Window      = 4;    // unacknowledged DATA frames per direction

  // kind byte: bits 1:0 the type, bit 2 ping, bits 7:3 reserved (zero)
  typedef enum logic [1:0] {
    KindData    = 2'd0,
    KindAck     = 2'd1,
    KindSync    = 2'd2,
    KindSyncAck = 2'd3
  } kind_e;
  localparam int unsigned PingBit = 2;

  // ---- messages: the first byte of a DATA frame's payload ----
  localparam logic [7:0] MsgMmioWrite  = 8'h01;  // host -> device, 11 bytes
  localparam logic [7:0] MsgMmioRead   = 8'h02;  // host -> device, 7 bytes
  localparam logic [7:0] MsgReadCpl    = 8'h03;  // host -> device, 7 + n bytes
  localparam logic [7:0] MsgCntReq     = 8'h04;  // host -> device, 1 byte
  localparam logic [7:0] MsgMmioCpl    = 8'h81;  // device -> host, 7 bytes
  localparam logic [7:0] MsgDmaRead    = 8'h82;  // device -> host, 12 bytes
  localparam logic [7:0] MsgDmaWrite   = 8'h83;  // device -> host, 11 + n bytes
  localparam logic [7:0] MsgCounters   = 8'h84;  // device -> host, 13 bytes

  // ---- the bridge's counters, in the order of the 0x84 message ----
  localparam int unsigned NumCounters   = 6;
  localparam int unsigned CntCrcErrors  = 0;
  localparam int unsigned CntBadFrames  = 1;
  localparam int unsigned CntDuplicates = 2;
  localparam int unsigned CntNoRoom     = 3;
  localparam int unsigned CntRetransmit = 4;
  localparam int unsigned CntBadMsgs    = 5;

  // CRC-16/CCITT-FALSE, one byte: polynomial 0x1021, MSB first, no reflection,
  // no final XOR (start with 16'hFFFF). Running it over a frame's body
  // including the CRC (sent high byte first) leaves 0 when the CRC matches.
  function automatic logic [15:0] crc16_byte(logic [15:0] crc, logic [7:0] b);
    logic [15:0] c;
    c = crc ^ {b, 8'h00};
    for (int i = 0; i < 8; i++) c = c[15] ? ((c << 1) ^ 16'h1021) : (c << 1);
    return c;
  endfunction

endpackage
