// SPDX-License-Identifier: Apache-2.0
// How the driver reaches a device. A transport moves 32-bit register accesses
// to BAR0, gives the driver host memory the device can reach by DMA, and lets
// time pass. Transports live outside the driver (sim/transport/: the
// Verilated device, the reference model) and register a URI scheme; a
// program has the schemes of the transport libraries it links.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tpu/error.h"

namespace tpu {

class Transport {
 public:
  virtual ~Transport() = default;

  // What the device is, for messages: "sim:config=default".
  virtual std::string name() const = 0;

  // BAR0 registers (offsets from tpu_regs.h). A read answered with an error
  // (Unsupported Request) throws tpu::Error.
  virtual uint32_t mmio_read(uint32_t offset) = 0;
  virtual void mmio_write(uint32_t offset, uint32_t value) = 0;

  // Host memory the device reaches by DMA, addressed as the device sees it.
  // Buffers live in [dma_base(), dma_base() + dma_size()).
  virtual uint64_t dma_base() const = 0;
  virtual uint64_t dma_size() const = 0;
  virtual void dma_write(uint64_t addr, std::span<const uint8_t> data) = 0;
  virtual void dma_read(uint64_t addr, std::span<uint8_t> out) = 0;

  // Lets the device run until it raises an interrupt (MSI) or max_cycles
  // device clock cycles have passed. Returns the cycles that passed.
  virtual uint64_t wait_interrupt(uint64_t max_cycles) = 0;

  // Device clock cycles since the transport was opened.
  virtual uint64_t cycles() const = 0;
};

// ---- the registry of URI schemes ----------------------------------------------------

// A device URI: scheme:path?key=value&key=value. "sim:?config=tiny&seed=3" has
// no path; a serial transport's "uart:/dev/ttyUSB0?baud=3000000" has one.
using UriQuery = std::map<std::string, std::string>;
struct DeviceUri {
  std::string text;  // as given, for messages
  std::string scheme, path;
  UriQuery query;
};

struct TransportScheme {
  std::string scheme;  // "sim"
  std::string usage;   // "sim:?config=NAME&latency=CYCLES&seed=N&waves=FILE.fst"
  std::string about;   // one line: what the transport is
  // Opens a device; throws tpu::Error for unknown keys or bad values.
  std::function<std::unique_ptr<Transport>(const DeviceUri&)> open;
};

// Adds a scheme (a transport library calls it from a static initializer).
// Returns true; a scheme registered twice keeps its first registration.
bool register_transport(TransportScheme scheme);

// The registered schemes, sorted by name.
std::vector<TransportScheme> transport_schemes();

// Splits "scheme:path?k=v&k2=v2". Throws tpu::Error for a missing scheme, an
// item that is not key=value or a key given twice.
DeviceUri parse_device_uri(const std::string& uri);

// Opens a device URI with its registered scheme; throws tpu::Error naming the
// known schemes for an unknown one.
std::unique_ptr<Transport> open_transport(const std::string& uri);

// The error of a register read answered Unsupported Request (an offset the
// device does not map), for transports to throw.
Error unmapped_register(const std::string& transport, uint32_t offset);

// The error of a simulated device whose RTL assertions failed (a bug in the
// device, not in the host's use of it), for simulator transports to throw.
Error rtl_assertions_failed(const std::string& transport, uint64_t cycle);

// A non-negative integer query value, or tpu::Error "<what>: key=value is not
// a non-negative number".
uint64_t query_number(const std::string& what, const std::string& key, const std::string& value);

}  // namespace tpu
