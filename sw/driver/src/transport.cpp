// SPDX-License-Identifier: Apache-2.0
#include "tpu/transport.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tpu/error.h"

namespace tpu {
namespace {

// A function-local static: transports register from static initializers in
// other translation units, whose order is unspecified.
std::vector<TransportScheme>& registry() {
  static std::vector<TransportScheme> schemes;
  return schemes;
}

std::string known_schemes() {
  std::string s;
  for (const TransportScheme& t : transport_schemes()) s += (s.empty() ? "" : ", ") + t.usage;
  return s;
}

}  // namespace

bool register_transport(TransportScheme scheme) {
  auto& r = registry();
  const bool known = std::any_of(r.begin(), r.end(),
                                 [&](const TransportScheme& t) { return t.scheme == scheme.scheme; });
  if (!known) r.push_back(std::move(scheme));
  return true;
}

std::vector<TransportScheme> transport_schemes() {
  std::vector<TransportScheme> out = registry();
  std::sort(out.begin(), out.end(),
            [](const TransportScheme& a, const TransportScheme& b) { return a.scheme < b.scheme; });
  return out;
}

DeviceUri parse_device_uri(const std::string& uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string::npos || colon == 0)
    throw Error("device URI '" + uri + "' has no scheme; write it as scheme:?key=value, e.g. " +
                (registry().empty() ? std::string("sim:?config=default") : known_schemes()));
  DeviceUri u;
  u.text = uri;
  u.scheme = uri.substr(0, colon);
  const size_t mark = uri.find('?', colon + 1);
  u.path = uri.substr(colon + 1, (mark == std::string::npos ? uri.size() : mark) - colon - 1);
  const std::string rest = mark == std::string::npos ? "" : uri.substr(mark + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    const size_t amp = std::min(rest.find('&', pos), rest.size());
    const std::string item = rest.substr(pos, amp - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("device URI '" + uri + "': '" + item + "' is not key=value");
    if (!u.query.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
      throw Error("device URI '" + uri + "': '" + item.substr(0, eq) + "' is given twice");
    pos = amp + 1;
  }
  return u;
}

std::unique_ptr<Transport> open_transport(const std::string& uri) {
  const size_t colon = uri.find(':');
  const std::string scheme = uri.substr(0, colon);
  const auto& r = registry();
  const auto it = std::find_if(r.begin(), r.end(), [&](const TransportScheme& t) { return t.scheme == scheme; });
  if (it != r.end()) return it->open(parse_device_uri(uri));
  if (colon == std::string::npos || colon == 0) parse_device_uri(uri);  // throws: no scheme
  if (r.empty())
    throw Error("device URI '" + uri + "': this program has no transports linked in "
                "(link tpu_transport_sim or tpu_transport_model)");
  throw Error("device URI '" + uri + "': unknown transport '" + scheme + "'; the transports are " +
              known_schemes());
}

Error unmapped_register(const std::string& transport, uint32_t offset) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "%x", offset);
  return Error("register read at BAR0 offset 0x" + std::string(hex) +
               " was answered Unsupported Request: the offset is not mapped on " + transport);
}

Error rtl_assertions_failed(const std::string& transport, uint64_t cycle) {
  return Error(transport + ": the device's RTL assertions failed, the first by device cycle " +
               std::to_string(cycle) +
               " (the simulator printed each above). This is a bug in the device model, not in "
               "the host's use of it; the simulated device is no longer usable. Please report it "
               "with the command that ran into it");
}

uint64_t query_number(const std::string& what, const std::string& key, const std::string& value) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 0);
  if (value.empty() || *end != '\0' || value[0] == '-' || value[0] == '+' || value[0] == ' ')
    throw Error(what + ": " + key + "=" + value + " is not a non-negative number");
  return v;
}

}  // namespace tpu
