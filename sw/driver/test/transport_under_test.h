// SPDX-License-Identifier: Apache-2.0
// The driver's tests run once per transport (sw/driver/CMakeLists.txt): the
// environment variable TPU_TEST_TRANSPORT names it, sim (default), model or
// uart. For uart, each configuration's device is a board simulation in this
// process (sim/board/) whose pty the uart: transport opens; the line model
// injects the faults TPU_TEST_LINE_FAULTS gives ("bit_error=1e-4,drop=1e-4,
// dup=1e-4,stall=1e-3").
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "board_sim.h"
#include "tpu/isa.h"

namespace tpu_test {

inline std::string transport() {
  const char* t = std::getenv("TPU_TEST_TRANSPORT");
  return t && *t ? t : "sim";
}

inline tpu::board::LineFaults line_faults() {
  tpu::board::LineFaults f;
  const char* env = std::getenv("TPU_TEST_LINE_FAULTS");
  std::stringstream items(env ? env : "");
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = item.substr(0, eq);
    const double v = std::stod(item.substr(eq + 1));
    if (key == "bit_error") f.bit_error = v;
    else if (key == "drop") f.drop = v;
    else if (key == "dup") f.dup = v;
    else if (key == "stall") f.stall = v;
  }
  return f;
}

// The board simulation of a configuration, started on first use.
inline tpu::board::BoardSim& board(const std::string& config) {
  static std::map<std::string, std::unique_ptr<tpu::board::BoardSim>> boards;
  auto& b = boards[config];
  if (!b) {
    tpu::board::BoardOptions o;
    o.config = config;
    o.div = 4;  // the fastest line the bridge takes: the simulation's speed limits the tests
    o.faults = line_faults();
    b = tpu::board::BoardSim::start(o);
  }
  return *b;
}

// A device URI on the transport under test; sim_options (latency, seed) only
// exist on the simulator and are dropped for the others.
inline std::string uri(const std::string& config, const std::string& sim_options = "") {
  if (transport() == "uart") return "uart:" + board(config).pty();
  std::string u = transport() + ":?config=" + config;
  if (transport() == "sim" && !sim_options.empty()) u += "&" + sim_options;
  return u;
}

// A program that outlasts anything a test does while it runs: 64 loops of
// 65,535 IRQs, about 4.2 million device cycles (129 instructions, within
// every configuration's instruction memory). Over a faulty serial line a
// single driver transaction can take tens of thousands of device cycles, and
// on a busy machine the board simulation can run a million cycles while the
// host thread waits for a core, so "long" has to be long there.
inline std::vector<tpu::isa::Instr> long_program() {
  std::vector<tpu::isa::Instr> prog;
  for (int i = 0; i < 64; ++i) {
    prog.push_back(tpu::isa::loop(65535, 1));
    prog.push_back(tpu::isa::irq());
  }
  prog.push_back(tpu::isa::halt());
  return prog;
}

}  // namespace tpu_test
