// SPDX-License-Identifier: Apache-2.0
// What the planners and the reference model need to know of a core: its
// array size, memory sizes, MXU datapath and host link timing.
// tpu::core_config() makes one from a named configuration (tpu/config.h);
// the driver makes one from what the device reports (DeviceInfo).
#pragma once

namespace tpu {

// The MXU's arithmetic (docs/numerics.md): int8 x int8 -> int32, bf16 x bf16
// -> fp32, or both with a per-instruction format bit. The SV package's
// datapath_e has the same three values; the named configurations
// (scripts/config_table.py) select one, and the reference model implements
// all three.
enum class Datapath { kInt8, kBf16, kBoth };

// The instructions of the bf16 forms (docs/isa.md) exist in this datapath.
constexpr bool has_bf16(Datapath d) { return d != Datapath::kInt8; }
// The int8 forms (an int8 weight tile, an int8 MMC) exist in this datapath.
constexpr bool has_int8(Datapath d) { return d != Datapath::kBf16; }

// The unified buffer's parts (rtl/core/tpu_ub.sv, docs/decisions.md): a core
// with the bf16 datapath splits its UB into 4 equal parts of 2 banks each by
// the top row-address bits; rows in different parts never share a bank. An
// int8 core's UB is one part of 4 interleaved banks.
constexpr int ub_parts(Datapath d) { return has_bf16(d) ? 4 : 1; }

struct CoreConfig {
  int n = 16;  // MXU array size: bytes per UB row, lanes per ACC row
  int ub_rows = 4096;
  int acc_rows = 1024;
  int imem_depth = 1024;
  int wgt_fifo_tiles = 16;  // an RW may leave up to wgt_fifo_tiles + 2 tiles unretired
  Datapath datapath = Datapath::kInt8;
  // The host link as the planners' cost models see it: cycles from a read
  // request to its first data, and bytes a cycle each way. A device does not
  // report them; these defaults are the default configuration's
  // (scripts/config_table.py; config.h checks that they agree).
  int link_latency = 500;
  int link_bytes_per_cycle = 16;
};

}  // namespace tpu
