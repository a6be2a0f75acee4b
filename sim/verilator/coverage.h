// SPDX-License-Identifier: Apache-2.0
// Coverage data of a Verilated model, in a coverage build only (make
// coverage: models verilated with --coverage and VM_COVERAGE=1, see
// cmake/verilate.cmake). Elsewhere write_coverage() does nothing.
//
// Each VerilatedContext keeps the counters of the models made in it, and a
// process may make many (one per test, per device opened), so the data is
// written whenever a context is done with, while its models still exist:
// $TPU_COVERAGE_DIR/<pid>_<n>.dat (default: the working directory), n
// counting the writes of the process. scripts/coverage_report.py merges the
// files with verilator_coverage.
#pragma once

#include <verilated.h>

#if defined(VM_COVERAGE) && VM_COVERAGE
#include <unistd.h>
#include <verilated_cov.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#endif

namespace tb {

inline void write_coverage([[maybe_unused]] VerilatedContext& ctx) {
#if defined(VM_COVERAGE) && VM_COVERAGE
  static std::atomic<unsigned> writes{0};
  const char* env = std::getenv("TPU_COVERAGE_DIR");
  const std::filesystem::path dir = (env != nullptr && *env != '\0') ? env : ".";
  std::filesystem::create_directories(dir);
  const std::string name = std::to_string(::getpid()) + "_" + std::to_string(writes++) + ".dat";
  ctx.coveragep()->write((dir / name).c_str());
#endif
}

}  // namespace tb
