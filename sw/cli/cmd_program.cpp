// SPDX-License-Identifier: Apache-2.0
// The program subcommands: run, asm and disasm (docs/cli.md).
#include <cstdio>
#include <string>

#include "cli_common.h"
#include "outputs.h"

namespace tpu::cli {
namespace {

using nlohmann::json;

constexpr size_t kInstrBytes = 16;
constexpr uint64_t kMaxDump = kMaxLoadBytes;  // 256 MiB: held in memory at once

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string text_of(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }

std::vector<isa::Instr> assemble_file(const std::string& path) {
  try {
    return isa::assemble(text_of(npy::read_file(path, kMaxProgramBytes, "a program file")));
  } catch (const isa::AsmError& e) {
    throw Error(path + ": " + e.what());  // "line <n>: <problem>"
  }
}

// 16 bytes per instruction: w0 then w1, each little-endian.
std::vector<uint8_t> to_binary(const std::vector<isa::Instr>& program) {
  std::vector<uint8_t> out;
  out.reserve(program.size() * kInstrBytes);
  for (const isa::Instr& in : program) {
    for (uint64_t w : in.encode()) {
      for (int i = 0; i < 8; ++i) out.push_back(uint8_t(w >> (8 * i)));
    }
  }
  return out;
}

std::vector<isa::Instr> binary_file(const std::string& path) {
  const std::vector<uint8_t> bytes = npy::read_file(path, kMaxProgramBytes, "a program file");
  if (bytes.size() % kInstrBytes != 0) {
    throw Error(path + ": " + std::to_string(bytes.size()) +
                " bytes is not a whole number of instructions (16 bytes each); is it a "
                "program written by `tpu asm`?");
  }
  std::vector<isa::Instr> program;
  for (size_t at = 0; at < bytes.size(); at += kInstrBytes) {
    uint64_t w[2] = {0, 0};
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 8; ++i) w[k] |= uint64_t(bytes[at + size_t(8 * k + i)]) << (8 * i);
    program.push_back(isa::decode(w[0], w[1]));
  }
  return program;
}

// A program file: raw binary when it ends in .bin, assembly text otherwise.
std::vector<isa::Instr> program_file(const std::string& path) {
  return ends_with(path, ".bin") ? binary_file(path) : assemble_file(path);
}

// --load ADDR=FILE and --dump ADDR:LEN=FILE.
struct Region {
  uint64_t addr = 0, len = 0;
  std::string file, spec;
  std::vector<uint8_t> data;  // --load only
};

Region parse_region(const std::string& option, const std::string& spec, bool with_len) {
  const char* form = with_len ? "ADDR:LEN=FILE" : "ADDR=FILE";
  const size_t eq = spec.find('=');
  const std::string usage = option + " " + spec + ": expected " + form + " (numbers decimal or 0x hex)";
  if (eq == std::string::npos || eq + 1 == spec.size()) throw UsageError(usage);
  Region r;
  r.spec = spec;
  r.file = spec.substr(eq + 1);
  const std::string where = spec.substr(0, eq);
  if (with_len) {
    const size_t colon = where.find(':');
    if (colon == std::string::npos || !parse_u64(where.substr(0, colon), &r.addr) ||
        !parse_u64(where.substr(colon + 1), &r.len)) {
      throw UsageError(usage);
    }
  } else if (!parse_u64(where, &r.addr)) {
    throw UsageError(usage);
  }
  if (r.len > kMaxDump) {
    throw UsageError(option + " " + spec + ": " + hex(r.len) + " bytes is more than the " +
                     hex(kMaxDump) + " one dump may hold; split it");
  }
  return r;
}

// Raw addresses stay below the driver's allocations (rings, programs).
void check_region(const std::string& option, const Region& r, uint64_t limit) {
  if (r.addr >= limit || r.len > limit - r.addr) {
    throw Error(option + " " + r.spec + ": bytes " + hex(r.addr) + ".." +
                (r.addr + r.len < r.addr ? std::string("past 2^64") : hex(r.addr + r.len)) +
                " reach the driver's DMA region at " + hex(limit) +
                "; raw addresses must stay below it (see `tpu info`)");
  }
}

}  // namespace

// ---- run ------------------------------------------------------------------------------

int cmd_run(const Global& g, const RunArgs& args) {
  // Everything that can be checked without the device first.
  std::vector<Region> loads, dumps;
  for (const std::string& s : args.loads) loads.push_back(parse_region("--load", s, false));
  for (const std::string& s : args.dumps) dumps.push_back(parse_region("--dump", s, true));
  if (loads.size() + dumps.size() > kMaxWindows) {
    throw UsageError("run: " + std::to_string(loads.size() + dumps.size()) +
                     " --load/--dump regions; a program may be granted at most " +
                     std::to_string(kMaxWindows) + " (each region is one DMA window); merge "
                     "adjacent regions");
  }
  Outputs out;
  for (const Region& r : dumps) out.add("--dump", r.file);
  out.add("--stats-json", args.stats_json);
  const std::vector<isa::Instr> program = program_file(args.program);
  if (program.empty()) throw Error(args.program + ": the program has no instructions");
  for (Region& r : loads) {
    r.data = npy::read_file(r.file, kMaxLoadBytes, "a --load file");
    r.len = r.data.size();
  }

  Device dev = g.open();
  Transport& t = dev.transport();
  for (const Region& r : loads) check_region("--load", r, t.dma_base());
  for (const Region& r : dumps) check_region("--dump", r, t.dma_base());
  for (const Region& r : loads) t.dma_write(r.addr, r.data);

  // The program may read the --load regions and write the --dump regions,
  // and reach no other host memory (docs/cli.md).
  std::vector<Window> windows;
  for (const Region& r : loads)
    if (r.len) windows.push_back({r.addr, r.len, kWindowRead});
  for (const Region& r : dumps)
    if (r.len) windows.push_back({r.addr, r.len, kWindowWrite});

  const uint64_t before = dev.cycles();
  Completion c;
  try {
    c = dev.run(program, windows, g.timeout);  // DeviceError, TimeoutError
  } catch (const DeviceError& e) {
    if (!e.fault().outside_windows) throw;
    // Say it in the tool's terms: which regions the program had.
    std::string granted;
    for (const Window& w : windows)
      granted += std::string(granted.empty() ? "" : ", ") + (w.access == kWindowRead ? "read " : "write ") +
                 hex(w.base) + ".." + hex(w.base + (w.len - 1));
    throw DeviceError("the program failed at instruction " + std::to_string(e.err_pc()) + ": " +
                          status_text(e.status()) + "; its " + (e.fault().write ? "write to " : "read from ") +
                          hex(e.fault().addr) + " is outside the host memory it was granted (" +
                          (granted.empty() ? "none" : granted) +
                          "); `tpu run` lets a program read only its --load regions and write only "
                          "its --dump regions. Nothing was dumped",
                      e.status(), e.err_pc(), e.fault());
  }
  const uint64_t device_cycles = dev.cycles() - before;
  const PerfCounters k = dev.counters();

  for (Region& r : dumps) {
    r.data.resize(r.len);
    t.dma_read(r.addr, r.data);
  }
  for (const Region& r : dumps) out.stage(r.file, r.data);
  if (!args.stats_json.empty()) {
    out.stage_json(args.stats_json, {{"config", dev.info().config.empty() ? "custom" : dev.info().config},
                                 {"device", dev.info().name},
                                 {"program", args.program},
                                 {"instructions", program.size()},
                                 {"status", c.status},
                                 {"status_text", status_text(c.status)},
                                 {"err_pc", c.err_pc},
                                 {"core_cycles", c.cycles},
                                 {"cycles", device_cycles},
                                 {"counters", counters_json(k)}});
  }
  out.commit();

  std::printf("run %s on %s: %zu instructions\n", printable(args.program).c_str(), dev.info().name.c_str(),
              program.size());
  std::printf("  status       %s\n", status_text(c.status).c_str());
  std::printf("  err_pc       %u\n", c.err_pc);
  std::printf("  core cycles  %u (device cycles from submission to completion: %llu)\n", c.cycles,
              static_cast<unsigned long long>(device_cycles));
  const std::pair<const char*, uint64_t> rows[] = {
      {"cycles", k.cycles},       {"mxu_busy", k.mxu_busy},   {"useful_macs", k.useful_macs},
      {"wgt_stall", k.wgt_stall}, {"wgt_shift", k.wgt_shift}, {"dep_stall", k.dep_stall},
      {"mem_stall", k.mem_stall}};
  for (const auto& [name, value] : rows) {
    std::printf("  %-12s %llu\n", name, static_cast<unsigned long long>(value));
  }
  for (const Region& r : dumps) {
    std::printf("  dumped %llu bytes from %s to %s\n", static_cast<unsigned long long>(r.len),
                hex(r.addr).c_str(), printable(r.file).c_str());
  }
  return 0;
}

// ---- asm and disasm ---------------------------------------------------------------------

int cmd_asm(const AsmArgs& args) {
  Outputs out;
  out.add("-o", args.out);
  const std::vector<isa::Instr> program = assemble_file(args.in);
  out.stage(args.out, to_binary(program));
  out.commit();
  std::printf("asm: %zu instructions (%zu bytes) from %s to %s\n", program.size(),
              program.size() * kInstrBytes, printable(args.in).c_str(), printable(args.out).c_str());
  return 0;
}

int cmd_disasm(const AsmArgs& args) {
  Outputs out;
  out.add("-o", args.out);
  const std::string text = isa::disassemble(binary_file(args.in));
  if (args.out.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);  // errors: checked at exit (tpu.cpp)
  } else {
    out.stage(args.out, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
    out.commit();
  }
  return 0;
}

}  // namespace tpu::cli
