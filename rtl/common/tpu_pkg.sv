// Every parameter of the TPU in one place.
//
// A named configuration is selected at build time with CONFIG=<name>, which
// defines TPU_CONFIG_<NAME>. Modules take their defaults from here; the array
// size can still be overridden per instance with the N parameter.
package tpu_pkg;

  // MXU datapaths. Only the int8 datapath exists so far; bf16 plugs in behind
  // the same MAC interface (see mxu_mac.sv).
  typedef enum logic [1:0] {
    DatapathInt8 = 2'd0,
    DatapathBf16 = 2'd1,
    DatapathBoth = 2'd2
  } datapath_e;

  // ---- Named configurations ------------------------------------------------
// WgtFifoTiles is sized so the weight FIFO covers the host link's read
  // latency (about 500 cycles) while the MXU consumes one tile per pass of
  // rows; see docs/decisions.md.
`ifdef TPU_CONFIG_TINY
  localparam int unsigned ArrayN       = 4;
  localparam int unsigned WgtFifoTiles = 4;
  localparam string       ConfigName   = "tiny";
`elsif TPU_CONFIG_SMALL
  localparam int unsigned ArrayN       = 8;
  localparam int unsigned WgtFifoTiles = 8;
  localparam string       ConfigName   = "small";
`elsif TPU_CONFIG_WIDE
  localparam int unsigned ArrayN       = 32;
  localparam int unsigned WgtFifoTiles = 16;
  localparam string       ConfigName   = "wide";
`else
  localparam int unsigned ArrayN       = 16;
  localparam int unsigned WgtFifoTiles = 16;
  localparam string       ConfigName   = "default";
`endif
  localparam datapath_e   MxuDatapath = DatapathInt8;

  // ---- Numeric formats -----------------------------------------------------
  localparam int unsigned Int8W = 8;   // int8 operands
  localparam int unsigned AccW  = 32;  // int32 partial sums and accumulators

endpackage
