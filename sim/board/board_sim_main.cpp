// SPDX-License-Identifier: Apache-2.0
// tpu-board-sim: the simulated ULX3S board (docs/link.md) on a pseudo-terminal.
// Prints the device URI to open (uart:/dev/pts/N) and runs until stdin
// closes or it is interrupted; then prints what the line model did.
// SIGUSR1 cuts the line (every byte lost both ways); the next SIGUSR1 mends it.
//
//   tpu-board-sim --config tiny [--div 10] [--bit-error 1e-4] [--drop P] [--dup P] [--stall P]
#include <csignal>
#include <cstdio>
#include <iostream>
#include <poll.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "board_sim.h"
#include "tpu/error.h"

namespace {
volatile std::sig_atomic_t g_stop = 0, g_cut = 0;
void on_signal(int) { g_stop = 1; }
void on_cut(int) { g_cut = !g_cut; }
}  // namespace

int main(int argc, char** argv) {
  CLI::App app("The simulated board: the TPU behind the UART bridge, its serial port on a pty");
  tpu::board::BoardOptions o;
  app.add_option("--config", o.config, "device configuration (" + tpu::board::board_configs() + ")");
  app.add_option("--div", o.div, "clock cycles per serial bit (10: 3 Mbaud at 30 MHz)")->check(CLI::Range(4u, 65535u));
  app.add_option("--seed", o.seed, "seed of the line model's faults");
  app.add_option("--bit-error", o.faults.bit_error, "probability per byte of one flipped bit")->check(CLI::Range(0.0, 1.0));
  app.add_option("--drop", o.faults.drop, "probability per byte that it is lost")->check(CLI::Range(0.0, 1.0));
  app.add_option("--dup", o.faults.dup, "probability per byte that it arrives twice")->check(CLI::Range(0.0, 1.0));
  app.add_option("--stall", o.faults.stall, "probability per byte of a pause of 1..64 byte times")->check(CLI::Range(0.0, 1.0));
  bool no_parking = false;
  app.add_flag("--no-parking", no_parking, "evaluate the device in every cycle, also while it rests");
  CLI11_PARSE(app, argc, argv);
  o.park_resting_device = !no_parking;
  try {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGUSR1, on_cut);
    auto board = tpu::board::BoardSim::start(o);
    std::printf("uart:%s\n", board->pty().c_str());
    std::fflush(stdout);
    // Runs until stdin reaches its end (the parent closed it), a signal, or
    // a failed RTL assertion, which stops the board (it said so).
    while (!g_stop && !board->assertion_failure_cycle()) {
      board->set_cut(g_cut);
      pollfd p{0, POLLIN, 0};
      if (::poll(&p, 1, 200) > 0) {
        char c;
        if (::read(0, &c, 1) <= 0) break;
      }
    }
    const tpu::board::LineCounters c = board->counters();
    std::fprintf(stderr,
                 "tpu-board-sim: %llu cycles (%llu with the device parked); line: %llu bytes to the "
                 "device, %llu to the host; %llu flipped, %llu dropped, %llu duplicated, %llu stalls\n",
                 (unsigned long long)board->cycles(), (unsigned long long)board->parking().parked_cycles,
                 (unsigned long long)c.to_device,
                 (unsigned long long)c.to_host, (unsigned long long)c.flipped, (unsigned long long)c.dropped,
                 (unsigned long long)c.duplicated, (unsigned long long)c.stalls);
    if (board->assertion_failure_cycle()) return 1;
  } catch (const tpu::Error& e) {
    std::fprintf(stderr, "tpu-board-sim: %s\n", e.what());
    return 1;
  }
  return 0;
}
