// SPDX-License-Identifier: Apache-2.0
// The board simulation: the UART bridge (rtl/link/uart_bridge.sv) wired to
// the device (tpu_top) as tpu_uart_top wires them, with its serial port on a
// pseudo-terminal, so that the uart: transport opens the pty's path exactly
// as it opens /dev/ttyUSB0. A line model between the pty and the serial pins
// sends and receives bytes at the bridge's bit time and injects faults: bit
// flips, dropped and duplicated bytes, stalls, and a cut line.
//
// The simulation runs in its own thread from construction to destruction;
// while the line and the device are idle it waits for the host between
// short bursts of cycles instead of spinning a core (docs/fpga.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace tpu::board {

// Per byte, in each direction.
struct LineFaults {
  double bit_error = 0;  // one random bit of the byte flipped
  double drop = 0;       // the byte is lost
  double dup = 0;        // the byte arrives twice
  double stall = 0;      // the line stays idle for 1..64 byte times before the byte
};

struct LineCounters {
  uint64_t to_device = 0, to_host = 0;  // bytes that crossed the line
  uint64_t flipped = 0, dropped = 0, duplicated = 0, stalls = 0;
  uint64_t cut = 0;                     // bytes lost while the line was cut
};

struct BoardOptions {
  std::string config = "tiny";
  unsigned div = 10;          // clock cycles per bit (3 Mbaud at 30 MHz)
  uint64_t seed = 1;
  LineFaults faults;
  // Settle both models to their fixed point in every cycle as well, and count
  // the cycles in which that changes what crosses between them (a test of
  // the one-evaluation cycle's assumptions; about 3x slower).
  bool check_wiring = false;
  // Skip the device's evaluation while it rests: its whole state came out
  // of a cycle unchanged, and its inputs stay as they were (docs/fpga.md).
  bool park_resting_device = true;
  // Evaluate a parked device all the same, and count the cycles in which
  // that changed its state (a test of parking's premise).
  bool check_parking = false;
};

struct WiringCheck {
  uint64_t checked_cycles = 0;
  uint64_t miswired_cycles = 0;  // the one-evaluation cycle would have read another value
};

struct ParkingStats {
  uint64_t parked_cycles = 0;     // cycles whose device evaluation was skipped
  uint64_t checked_cycles = 0;    // parked cycles evaluated anyway (check_parking)
  uint64_t changed_cycles = 0;    // of those, cycles that changed the device's state
};

class BoardSim {
 public:
  // Starts the simulation; throws tpu::Error for a configuration this build
  // has no device model of.
  static std::unique_ptr<BoardSim> start(const BoardOptions& options);
  virtual ~BoardSim() = default;

  // The pty's path (/dev/pts/N): open it as uart:<path>.
  virtual const std::string& pty() const = 0;
  virtual void set_faults(const LineFaults& f) = 0;
  virtual void set_cut(bool cut) = 0;  // every byte lost in both directions
  virtual LineCounters counters() const = 0;
  virtual uint64_t cycles() const = 0;
  virtual WiringCheck wiring_check() const = 0;
  virtual ParkingStats parking() const = 0;
  // Set once an RTL assertion of the device or the bridge failed: the cycle
  // by which it did. That is a bug in the models, and the board stopped
  // there (the line goes silent); the simulator printed each failure.
  virtual std::optional<uint64_t> assertion_failure_cycle() const = 0;
};

// The configurations this build can simulate on the board.
std::string board_configs();

}  // namespace tpu::board
