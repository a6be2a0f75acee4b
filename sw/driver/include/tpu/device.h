// SPDX-License-Identifier: Apache-2.0
// The TPU host driver: open a device, move data through host buffers, submit
// programs and wait for their completions. docs/driver.md has a complete
// example.
//
//   auto dev = tpu::Device::open("sim:?config=default");
//   tpu::Buffer in = dev.alloc(4096), out = dev.alloc(4096);
//   in.write(bytes);
//   // submit + wait; throws on error. The program may read `in` and write
//   // `out` and nothing else (DMA windows, docs/driver.md).
//   tpu::Completion c = dev.run(program, {in.read_only(), out.write_only()});
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tpu/isa.h"
#include "tpu/error.h"
#include "tpu/queue.h"
#include "tpu/transport.h"

namespace tpu {

// What the device reports about itself (ID, VERSION, CAPS registers).
struct DeviceInfo {
  std::string name;         // the transport's name
  std::string config;       // the named configuration (tpu/config.h) the CAPS match; "" if none
  uint32_t id = 0;          // 0x54505531 ("TPU1")
  int version_major = 0, version_minor = 0, version_patch = 0;
  int n = 0;                // the MXU is n x n
  bool int8 = false, bf16 = false;
  int ub_rows = 0, acc_rows = 0, imem_depth = 0, wgt_fifo_tiles = 0, dma_tags = 0;
};

// Performance counters of the core (docs/registers.md), summed over commands.
struct PerfCounters {
  uint64_t cycles = 0;       // cycles the core was busy
  uint64_t mxu_busy = 0;     // cycles the MXU took a row
  uint64_t useful_macs = 0;  // N*N per row the MXU took
  uint64_t wgt_stall = 0, wgt_shift = 0, dep_stall = 0, mem_stall = 0;

  PerfCounters& operator+=(const PerfCounters& o);
};

// The completion entry of one command.
struct Completion {
  uint16_t id = 0;
  uint16_t status = kStatusOk;
  uint32_t err_pc = 0;   // faulting instruction when status != 0
  uint32_t cycles = 0;   // core cycles the command took
  bool ok() const { return status == kStatusOk; }
};

// "NO_WEIGHTS (an MMC with no weight tile loaded)" for status 10, and so on.
std::string status_text(uint16_t status);

class Device;
namespace detail {
struct DeviceState;  // the transport and the host-memory allocator, shared with buffers
}

// A block of host memory the device reaches by DMA. Freed when destroyed
// (it keeps the device's transport alive until then).
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  uint64_t addr() const { return addr_; }  // device address of byte 0
  size_t size() const { return size_; }

  // Byte ranges; throws tpu::Error past the end.
  void write(std::span<const uint8_t> data, size_t offset = 0);
  void read(std::span<uint8_t> out, size_t offset = 0) const;
  std::vector<uint8_t> read(size_t offset, size_t len) const;

  // DMA windows over the whole buffer, for Device::submit and run: what a
  // command's program may do here. read_only: RHM and RW may read it;
  // write_only: WHM may write it; read_write: both.
  Window read_only() const { return window(0, size_, kWindowRead); }
  Window write_only() const { return window(0, size_, kWindowWrite); }
  Window read_write() const { return window(0, size_, kWindowReadWrite); }
  // A window over bytes [offset, offset + len) of the buffer with access
  // kWindowRead, kWindowWrite or kWindowReadWrite. Throws tpu::Error when the
  // range is empty or runs past the end.
  Window window(size_t offset, size_t len, uint8_t access) const;

 private:
  friend class Device;
  Buffer(std::shared_ptr<detail::DeviceState> state, uint64_t addr, size_t size)
      : state_(std::move(state)), addr_(addr), size_(size) {}
  void release();
  std::shared_ptr<detail::DeviceState> state_;
  uint64_t addr_ = 0;
  size_t size_ = 0;
};

// A submitted command, to wait for.
struct Command {
  uint16_t id = 0;
};

// What a command does to the core's performance counters when it starts:
// clear them (each command's own), or keep adding to them (the counters of
// several commands in a row, read after the last).
enum class CounterMode { kRestart, kKeep };

class Device {
 public:
  // Default time limit of wait(): generous for any program the tools build.
  static constexpr uint64_t kDefaultTimeoutCycles = 200'000'000;
  // Interrupts in a row with no new completion entry before wait() gives up
  // with a ProtocolError. A correct device sends one MSI per completion, after
  // the entry; at most one of them can find its entry already consumed.
  static constexpr int kMaxSpuriousInterrupts = 64;
  // Time limit of wait() and run() when they are given 0 (the default), and
  // so of every program the operators run. Device clock cycles.
  void set_timeout(uint64_t cycles) { timeout_ = cycles ? cycles : kDefaultTimeoutCycles; }
  uint64_t timeout() const { return timeout_; }

  // Opens a device by URI; the scheme picks a registered transport
  // (tpu/transport.h). The project's transports:
  //   sim:?config=default   the Verilated device in-process (RTL, cycle-accurate)
  //   sim:?config=tiny&latency=100&seed=7&waves=out.fst
  //   model:?config=default the reference model behind the same registers and
  //                         rings (functional, fast; cycles are estimates)
  // Throws tpu::Error for an unknown scheme, configuration or key, or when no
  // TPU answers.
  static Device open(const std::string& uri);
  // Takes over a transport (for transports defined outside the driver).
  explicit Device(std::unique_ptr<Transport> transport);

  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;
  ~Device();

  const DeviceInfo& info() const { return info_; }
  Transport& transport();

  // Host memory for the device (64-byte aligned).
  Buffer alloc(size_t bytes);

  // Copies the program and its DMA windows into the driver's memory and
  // queues it. The program reaches host memory only inside the windows
  // (docs/host_interface.md, "DMA windows"): an RHM, WHM or RW whose span is
  // not inside one window of its direction ends it with MEM_FAULT before
  // moving anything. With no windows it cannot touch host memory at all.
  // Throws tpu::Error when the program is empty or longer than the
  // instruction memory, when there are more than kMaxWindows windows, and
  // for a window that is empty, runs past 2^64 - 1, has no valid access, or
  // covers the driver's own memory (its rings and the program buffers of
  // every command) or device-visible memory that no buffer holds.
  Command submit(const std::vector<isa::Instr>& program, std::span<const Window> windows,
                 CounterMode counters = CounterMode::kRestart);
  Command submit(const std::vector<isa::Instr>& program, std::initializer_list<Window> windows) {
    return submit(program, std::span<const Window>(windows.begin(), windows.size()));
  }
  Command submit(const std::vector<isa::Instr>& program) {
    return submit(program, std::span<const Window>());
  }
  // Waits for the command's completion entry. Returns it whatever its status
  // (see Completion::ok()); throws TimeoutError after timeout_cycles device
  // cycles (0: timeout()), after resetting the device. Throws ProtocolError
  // (after resetting the device) when the completion ring holds an entry no
  // correct device could have written there (an id never issued or already
  // completed, out of order, or more completions than commands queued), or
  // when kMaxSpuriousInterrupts interrupts in a row bring no completion.
  Completion wait(Command cmd, uint64_t timeout_cycles = 0);
  // Commands the device can hold queued at once (submitted, not yet waited
  // for): the submission ring's entries less one. submit() throws beyond it.
  size_t max_in_flight() const { return sq_size_ - 1; }
  // Commands submitted and not yet completed (whose completion entry the
  // driver has not consumed yet).
  size_t in_flight() const { return order_.size(); }
  // Throws the DeviceError run() throws for a completion that is not OK;
  // does nothing for an OK one. The error registers it reads (for a
  // MEM_FAULT's address) say the latest fault, so with several commands in
  // flight they may belong to a later command.
  void check(const Completion& c);
  // submit + wait; throws DeviceError when the status is not OK. For a
  // MEM_FAULT its message names the host address and direction, and says
  // when the address was outside the command's windows.
  Completion run(const std::vector<isa::Instr>& program, std::span<const Window> windows,
                 uint64_t timeout_cycles = 0);
  Completion run(const std::vector<isa::Instr>& program, std::initializer_list<Window> windows,
                 uint64_t timeout_cycles = 0) {
    return run(program, std::span<const Window>(windows.begin(), windows.size()), timeout_cycles);
  }
  // A program that touches no host memory (it is granted none).
  Completion run(const std::vector<isa::Instr>& program, uint64_t timeout_cycles = 0) {
    return run(program, std::span<const Window>(), timeout_cycles);
  }

  // The core's counters for the last command (they restart with each command
  // but one submitted with CounterMode::kKeep, which adds to them).
  PerfCounters counters();
  // Device clock cycles since open.
  uint64_t cycles() const;

  // Soft reset: the device drops queued commands and comes back idle.
  void reset();

 private:
  void setup_rings();
  // Throws tpu::Error for windows submit() refuses.
  void check_windows(std::span<const Window> windows) const;
  // The DeviceError of a failed command.
  DeviceError failure(const Completion& c);
  // Resets the device and throws ProtocolError(message + what was done).
  [[noreturn]] void protocol_error(const std::string& message);
  // Checks a completion entry found at CQ slot `slot` against the commands
  // queued, then records it.
  void accept_completion(const CqEntry& e, uint32_t slot);
  std::shared_ptr<detail::DeviceState> state_;
  DeviceInfo info_;
  Buffer sq_, cq_;
  // The program and window list of each queued command, a slot of
  // slot_bytes_ each: memory no window may cover, so no program can reach
  // another command's program or windows, even one queued after it.
  Buffer cmd_mem_;
  size_t slot_bytes_ = 0;
  std::vector<uint32_t> free_slots_;
  uint32_t sq_size_ = 0, cq_size_ = 0, sq_tail_ = 0, cq_head_ = 0;
  bool phase_ = true;
  uint16_t next_id_ = 1;
  uint64_t timeout_ = kDefaultTimeoutCycles;
  std::map<uint16_t, uint32_t> in_flight_;      // cmd_mem_ slots of queued commands
  std::deque<uint16_t> order_;                  // ids of queued commands, oldest first
  std::deque<uint16_t> recent_;                 // ids that completed lately, newest last
  std::map<uint16_t, Completion> completed_;    // completions not waited for yet
};

}  // namespace tpu
