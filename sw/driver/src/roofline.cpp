// SPDX-License-Identifier: Apache-2.0
#include "tpu/roofline.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tpu/config.h"
#include "tpu/isa.h"

namespace tpu {
namespace {

// Cycles to move `bytes` at `per_cycle` bytes a cycle, rounded up.
uint64_t transfer_cycles(uint64_t bytes, double per_cycle) {
  return uint64_t(std::ceil(double(bytes) / per_cycle));
}

}  // namespace

uint64_t Roofline::bound() const {
  return std::max({mxu_cycles, read_cycles, write_cycles}) + fixed_cycles;
}

const char* Roofline::limit() const {
  if (mxu_cycles >= read_cycles && mxu_cycles >= write_cycles) return "MXU";
  return read_cycles >= write_cycles ? "link read" : "link write";
}

double Roofline::fraction(uint64_t cycles) const {
  return cycles == 0 ? 0.0 : double(bound()) / double(cycles);
}

Roofline roofline(const OpStats& s, double link_read_bytes_per_cycle, double link_write_bytes_per_cycle,
                  uint64_t command_cycles, std::optional<uint64_t> queued_cycles) {
  if (!(link_read_bytes_per_cycle > 0) || !(link_write_bytes_per_cycle > 0))
    throw Error("roofline: the link bandwidths must be > 0 bytes per cycle (got " +
                std::to_string(link_read_bytes_per_cycle) + " read, " +
                std::to_string(link_write_bytes_per_cycle) + " write)");
  Roofline r;
  r.mxu_cycles = s.array_cycles;
  r.read_cycles = transfer_cycles(s.read_bytes, link_read_bytes_per_cycle);
  r.write_cycles = transfer_cycles(s.write_bytes, link_write_bytes_per_cycle);
  const uint64_t queued = queued_cycles.value_or(command_cycles);
  r.fixed_cycles = s.commands == 0 ? 0 : command_cycles + (s.commands - 1) * queued;
  return r;
}

std::optional<Roofline> roofline(const OpStats& s, std::string_view config, uint64_t command_cycles,
                                 std::optional<uint64_t> queued_cycles) {
  const Config* c = find_config(config);
  if (!c) return std::nullopt;
  return roofline(s, c->link_bytes_per_cycle, c->link_bytes_per_cycle, command_cycles, queued_cycles);
}

uint64_t command_latency(Device& dev) {
  const std::vector<isa::Instr> program{isa::halt()};
  const uint64_t start = dev.cycles();
  dev.run(program);
  return dev.cycles() - start;
}

uint64_t queued_command_latency(Device& dev) {
  // Programs long enough (a LOOP of SYNCs, a few thousand cycles) that the
  // device has fetched the next command before the one in front ends: what
  // is left between two of them is the hand-over from one to the next.
  constexpr uint64_t k = 8;
  const std::vector<isa::Instr> program{isa::loop(2000, 1), isa::sync(0), isa::halt()};
  uint64_t start = dev.cycles();
  const Completion alone = dev.run(program);
  const uint64_t first = dev.cycles() - start;
  start = dev.cycles();
  std::vector<Command> queued;
  for (uint64_t i = 0; i <= k; ++i) queued.push_back(dev.submit(program));
  for (const Command& c : queued) dev.check(dev.wait(c));
  const uint64_t each = (dev.cycles() - start - std::min(first, dev.cycles() - start) + k / 2) / k;
  return each > alone.cycles ? each - alone.cycles : 0;
}

}  // namespace tpu
