// SPDX-License-Identifier: Apache-2.0
// The driver's tests run once per transport (sw/driver/CMakeLists.txt): the
// environment variable TPU_TEST_TRANSPORT names it, sim (default) or model.
#pragma once

#include <cstdlib>
#include <string>

namespace tpu_test {

inline std::string transport() {
  const char* t = std::getenv("TPU_TEST_TRANSPORT");
  return t && *t ? t : "sim";
}

// A device URI on the transport under test; sim_options (latency, seed) only
// exist on the simulator and are dropped for the others.
inline std::string uri(const std::string& config, const std::string& sim_options = "") {
  std::string u = transport() + ":?config=" + config;
  if (transport() == "sim" && !sim_options.empty()) u += "&" + sim_options;
  return u;
}

}  // namespace tpu_test
