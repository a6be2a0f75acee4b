// SPDX-License-Identifier: Apache-2.0
// The serial link's throughput on the board simulation (make bench): DMA
// payload bytes per second of device time against the line rate, and the
// wall time of a 64^3 matmul over the simulated line.
//
//   uart_link_bench [--config tiny] [--div 10] [--clock-mhz 30]
#include <chrono>
#include <cstdio>
#include <random>

#include <CLI/CLI.hpp>

#include "board_sim.h"
#include "tpu/device.h"
#include "tpu/ops.h"
#include "tpu/ref_matmul.h"
#include "tpu/uart_transport.h"

int main(int argc, char** argv) {
  CLI::App app("Serial link throughput on the board simulation");
  tpu::board::BoardOptions o;
  double clock_mhz = 30;
  int size = 64;
  app.add_option("--config", o.config, "device configuration");
  app.add_option("--div", o.div, "clock cycles per bit (10: 3 Mbaud at 30 MHz)");
  app.add_option("--clock-mhz", clock_mhz, "device clock the cycles are converted with");
  app.add_option("--size", size, "M = K = N of the matmul");
  bool no_parking = false;
  app.add_flag("--no-parking", no_parking, "evaluate the device in every cycle, resting or not");
  CLI11_PARSE(app, argc, argv);
  o.park_resting_device = !no_parking;
  try {
    auto sim = tpu::board::BoardSim::start(o);
    tpu::Device dev = tpu::Device::open("uart:" + sim->pty());
    std::mt19937_64 rng(1);
    tpu::MatrixI8 a(size, size), b(size, size);
    for (auto& v : a.data) v = int8_t(rng());
    for (auto& v : b.data) v = int8_t(rng());
    const auto before = tpu::uart_counters(dev.transport()).value();
    const uint64_t line_before = sim->counters().to_device + sim->counters().to_host;
    const uint64_t c0 = sim->cycles();
    const uint64_t parked0 = sim->parking().parked_cycles;
    const auto t0 = std::chrono::steady_clock::now();
    const tpu::MatrixI32 c = tpu::matmul(dev, a, b);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t cycles = sim->cycles() - c0;
    const uint64_t parked = sim->parking().parked_cycles - parked0;
    const auto after = tpu::uart_counters(dev.transport()).value();
    if (c != tpu::ref::matmul_i8(a, b)) {
      std::fprintf(stderr, "uart_link_bench: the result differs from the reference\n");
      return 1;
    }
    // DMA payload: A and B read by the device, C written back (int32).
    const double payload = double(a.data.size() + b.data.size()) + 4.0 * size * size;
    const double line_bytes = double(sim->counters().to_device + sim->counters().to_host - line_before);
    const double seconds = cycles / (clock_mhz * 1e6);
    const double line_rate = clock_mhz * 1e6 / o.div / 10;  // bytes/s per direction, 8N1
    std::printf("uart link, %s, %u cycles/bit (%.2f Mbaud at %.0f MHz), %dx%dx%d matmul, exact\n",
                o.config.c_str(), o.div, clock_mhz / o.div, clock_mhz, size, size, size);
    std::printf("  device time        %llu cycles = %.3f s at %.0f MHz\n", (unsigned long long)cycles,
                seconds, clock_mhz);
    std::printf("  wall time          %.2f s (simulation: %.0f device cycles/s)\n", wall, cycles / wall);
    std::printf("  device parked      %llu cycles (%.1f %%: not evaluated, resting)\n",
                (unsigned long long)parked, cycles ? 100.0 * parked / cycles : 0.0);
    std::printf("  DMA payload        %.0f bytes: %.0f bytes/s of device time\n", payload, payload / seconds);
    std::printf("  line rate          %.0f bytes/s per direction; payload / line rate = %.1f %%\n",
                line_rate, 100 * payload / seconds / line_rate);
    std::printf("  bytes on the line  %.0f (both directions; framing, acks, register traffic)\n",
                line_bytes);
    std::printf("  frames             %llu sent, %llu received, %llu retransmitted\n",
                (unsigned long long)(after.frames_sent - before.frames_sent),
                (unsigned long long)(after.frames_received - before.frames_received),
                (unsigned long long)(after.retransmits - before.retransmits));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "uart_link_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
