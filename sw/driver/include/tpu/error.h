// SPDX-License-Identifier: Apache-2.0
// The driver's exceptions. Every message says what happened and what to do
// about it, so a tool can print what() as its one line of error output.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tpu/text.h"

namespace tpu {

// Base class: bad arguments, unusable files, a device that cannot be opened.
// The message is kept printable (tpu/text.h): bytes quoted from a file, a NUL
// among them, arrive escaped and whole in what().
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable(message)) {}
  explicit Error(const char* message) : Error(std::string(message)) {}
};

// A command ended with a non-zero status in its completion entry: a program
// error (ISA error code 1..11), a malformed command or a fault while fetching
// the program. The device has recovered and takes the next command.
// Where a MEM_FAULT was, as far as the device's error registers say.
struct HostFault {
  bool outside_windows = false;  // the access was outside the command's DMA windows
  bool write = false;            // ... and was a write (WHM); else a read (RHM, RW)
  uint64_t addr = 0;             // its first host address (ERR_ADDR)
};

class DeviceError : public Error {
 public:
  using Fault = HostFault;
  DeviceError(const std::string& message, uint16_t status, uint32_t err_pc, Fault fault = {})
      : Error(message), status_(status), err_pc_(err_pc), fault_(fault) {}
  uint16_t status() const { return status_; }  // completion status (docs/host_interface.md)
  uint32_t err_pc() const { return err_pc_; }  // index of the faulting instruction
  const Fault& fault() const { return fault_; }

 private:
  uint16_t status_;
  uint32_t err_pc_;
  Fault fault_;
};

// wait() ran out of time before the command completed. The device was soft
// reset, so it is idle and usable again; the command's results are lost.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// The completion ring or the interrupts said something no device following
// the protocol (docs/host_interface.md) can say: a completion entry for a
// command that was never submitted, that already completed or that is not
// the oldest one queued; a completion entry where no command is left to
// complete; interrupt after interrupt with no completion entry. Host memory
// or the device is broken; the driver soft-reset the device (queued commands
// are dropped), so it is idle and usable again.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

}  // namespace tpu
