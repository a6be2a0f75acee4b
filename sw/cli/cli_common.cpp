// SPDX-License-Identifier: Apache-2.0
#include "cli_common.h"

#include <climits>
#include <cstdio>
#include <cstring>

namespace tpu::cli {

std::string Global::uri() const {
  return device.empty() ? transport + ":?config=" + config : device;
}

Device Global::open() const {
  Device dev = Device::open(uri());
  dev.set_timeout(timeout);  // every command, including the operators'
  return dev;
}


std::vector<uint8_t> npy_bytes(const npy::Array& a) { return npy::encode(a); }

bool parse_u64(const std::string& text, uint64_t* out) {
  if (text.empty() || text[0] == '-' || text[0] == '+' || text[0] == ' ') return false;
  const bool is_hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string digits = is_hex ? text.substr(2) : text;
  if (digits.empty()) return false;
  uint64_t v = 0;
  const uint64_t base = is_hex ? 16 : 10;
  for (char c : digits) {
    uint64_t d;
    if (c >= '0' && c <= '9') d = uint64_t(c - '0');
    else if (is_hex && c >= 'a' && c <= 'f') d = uint64_t(c - 'a' + 10);
    else if (is_hex && c >= 'A' && c <= 'F') d = uint64_t(c - 'A' + 10);
    else return false;
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  *out = v;
  return true;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string dims(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

MatrixI8 to_matrix_i8(const npy::Array& a, const std::string& path) {
  if (a.shape.size() != 2 || a.dtype != npy::Dtype::kInt8) {
    throw Error(path + ": expected a 2-d int8 array");
  }
  if (a.shape[0] > INT_MAX || a.shape[1] > INT_MAX) {
    throw Error(path + ": " + std::to_string(a.shape[0]) + "x" + std::to_string(a.shape[1]) +
                " is too large");
  }
  MatrixI8 m(int(a.shape[0]), int(a.shape[1]));
  if (!m.data.empty()) std::memcpy(m.data.data(), a.data.data(), m.data.size());
  return m;
}

npy::Array to_npy(const MatrixI8& m) {
  return npy::make(npy::Dtype::kInt8, {m.rows, m.cols}, m.data.data());
}

npy::Array to_npy(const MatrixI32& m) {
  return npy::make(npy::Dtype::kInt32, {m.rows, m.cols}, m.data.data());
}

nlohmann::json counters_json(const PerfCounters& c) {
  return {{"cycles", c.cycles},       {"mxu_busy", c.mxu_busy},   {"useful_macs", c.useful_macs},
          {"wgt_stall", c.wgt_stall}, {"wgt_shift", c.wgt_shift}, {"dep_stall", c.dep_stall},
          {"mem_stall", c.mem_stall}};
}

nlohmann::json stats_json(const Global& /*g*/, const Device& dev, const OpStats& s) {
  return {{"config", dev.info().config.empty() ? "custom" : dev.info().config},
          {"device", dev.info().name},
          {"n", s.n},
          {"cycles", s.cycles},
          {"commands", s.commands},
          {"instructions", s.instructions},
          {"macs", s.macs},
          {"useful_macs", s.counters.useful_macs},
          {"utilization", s.utilization()},
          {"array_utilization", s.array_utilization()},
          {"array_cycles", s.array_cycles},
          {"read_bytes", s.read_bytes},
          {"write_bytes", s.write_bytes},
          {"counters", counters_json(s.counters)}};
}

}  // namespace tpu::cli
