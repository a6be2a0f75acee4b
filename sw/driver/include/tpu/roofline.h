// SPDX-License-Identifier: Apache-2.0
// A roofline for the GEMMs of the operators (ops.h): a lower bound on the
// device cycles an OpStats could have taken, and which resource sets it.
//
//   bound = max(mxu, link read, link write) + fixed
//     mxu         OpStats::array_cycles: the MXU takes at most one row a cycle
//     link read   ceil(read_bytes / link read bandwidth): the packed A and W
//                 images cross the link at least once
//     link write  ceil(write_bytes / link write bandwidth): the packed C image
//     fixed       command_latency() + (commands - 1) x queued_command_latency():
//                 what the first command costs before and after its work
//                 (submission, program fetch, completion, interrupt) and what
//                 each further one queued behind it adds (the device fetches
//                 it while the one before runs), both measured on the device
//                 with programs that only halt
// The three streaming terms may overlap (the GEMM programs overlap DMA and
// compute), so the bound takes their maximum; the fixed cost does not.
// docs/driver.md ("Roofline") has the details and the limits of the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "tpu/device.h"
#include "tpu/ops.h"

namespace tpu {

struct Roofline {
  uint64_t mxu_cycles = 0;    // rows the MXU must take (OpStats::array_cycles)
  uint64_t read_cycles = 0;   // OpStats::read_bytes at the link's read bandwidth
  uint64_t write_cycles = 0;  // OpStats::write_bytes at the link's write bandwidth
  uint64_t fixed_cycles = 0;  // the first command's fixed cost + each further one's

  // max(mxu, read, write) + fixed.
  uint64_t bound() const;
  // Which streaming term is the largest: "MXU", "link read" or "link write"
  // (the first of them in that order on a tie).
  const char* limit() const;
  // bound() / cycles: the fraction of the bound a run of `cycles` achieved
  // (at most 1 when the bound holds); 0 when cycles is 0.
  double fraction(uint64_t cycles) const;
};

// The roofline of s on a link of the given bandwidths (bytes per device
// cycle, > 0) when the first command costs command_cycles and each further
// one queued_cycles (by default command_cycles too: commands one at a time).
// Throws tpu::Error for a bandwidth that is not > 0.
Roofline roofline(const OpStats& s, double link_read_bytes_per_cycle,
                  double link_write_bytes_per_cycle, uint64_t command_cycles,
                  std::optional<uint64_t> queued_cycles = std::nullopt);

// The roofline on the named configuration `config` (DeviceInfo::config, the
// one the device's CAPS match): its link_bytes_per_cycle each way (tpu/config.h).
// nullopt when config names no configuration (a custom device: its link is unknown).
std::optional<Roofline> roofline(const OpStats& s, std::string_view config, uint64_t command_cycles,
                                 std::optional<uint64_t> queued_cycles = std::nullopt);

// The fixed cost of one command, measured: the device cycles (Device::cycles)
// that running a program of a single HALT takes, from before its submission
// to after its completion has been read; the program touches no host memory.
// Runs one command on the device (its counters restart, as with any command).
uint64_t command_latency(Device& dev);

// The fixed cost of a command queued behind another, measured: 1 + k
// commands submitted together, each running a program of a few thousand
// cycles, take what the first alone takes plus k x (the program's own
// cycles + this) (k = 8); the device fetches each next command while the
// one in front runs. Runs 1 + 9 commands on the device.
uint64_t queued_command_latency(Device& dev);

}  // namespace tpu
