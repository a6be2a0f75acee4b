// SPDX-License-Identifier: Apache-2.0
// What the uart: transport (docs/link.md) counts, for `tpu info` and tests.
#pragma once

#include <cstdint>
#include <optional>

#include "tpu/link.h"
#include "tpu/transport.h"

namespace tpu {

// The host's side of the serial link since the device was opened.
struct UartCounters {
  uint64_t bytes_sent = 0, bytes_received = 0;
  uint64_t frames_sent = 0;      // DATA frames, retransmissions included
  uint64_t frames_received = 0;  // DATA frames delivered in order
  uint64_t retransmits = 0;      // DATA frames sent again after a timeout
  uint64_t duplicates = 0;       // DATA frames dropped for an unexpected sequence number
  uint64_t crc_errors = 0, bad_frames = 0;
  uint64_t bad_messages = 0;     // frames whose message the host does not know
  uint64_t interrupts = 0;       // MSI writes
  uint64_t stray_writes = 0;     // DMA writes outside host memory, dropped
};

// The counters of a uart: transport; nullopt for any other transport.
std::optional<UartCounters> uart_counters(Transport& t);

// The bridge's own counters, asked over the link; nullopt for other transports.
std::optional<link::DeviceCounters> uart_device_counters(Transport& t);

}  // namespace tpu
