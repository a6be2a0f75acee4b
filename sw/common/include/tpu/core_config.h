// SPDX-License-Identifier: Apache-2.0
// What the GEMM planner and the reference model need to know of a core: its
// array size and memory sizes. tpu::core_config() makes one from a named
// configuration (tpu/config.h); the driver makes one from what the device
// reports (DeviceInfo).
#pragma once

namespace tpu {

struct CoreConfig {
  int n = 16;  // MXU array size: bytes per UB row, lanes per ACC row
  int ub_rows = 4096;
  int acc_rows = 1024;
  int imem_depth = 1024;
  int wgt_fifo_tiles = 16;  // an RW may leave up to wgt_fifo_tiles + 2 tiles unretired
};

}  // namespace tpu
