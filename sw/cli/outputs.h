// SPDX-License-Identifier: Apache-2.0
// The files one `tpu` command writes, all or none (docs/cli.md, "Guarantees").
//
//   Outputs out;
//   out.add("--out", args.out);            // before any work: refused early
//   out.add("--stats-json", args.stats);
//   ... the work ...
//   out.stage(args.out, bytes);            // a temporary file next to each
//   out.stage_json(args.stats, j);
//   out.commit();                          // renamed into place together
//
// A command that fails before commit() leaves none of its outputs: the
// destructor removes the temporary files, and so do SIGINT, SIGTERM and
// SIGHUP (the handlers remove them, then the signal kills the process as
// usual).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpu::cli {

class Outputs {
 public:
  Outputs();
  ~Outputs();
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;

  // Registers an output; an empty path is ignored (an optional output not
  // asked for). Throws UsageError when another output names the same file
  // (after resolving ".", ".." and symbolic links), tpu::Error when the path
  // is an existing file that is not a regular file (a directory, a FIFO, a
  // device), its directory does not exist or its name is longer than the
  // file system allows.
  void add(const std::string& option, const std::string& path);

  // Writes an output's bytes to a temporary file in its directory.
  void stage(const std::string& path, std::span<const uint8_t> bytes);
  void stage_json(const std::string& path, const nlohmann::json& j);

  // Renames every staged file onto its output. When one rename fails, the
  // ones done are undone (the previous files come back), and it throws.
  void commit();

 private:
  struct Entry {
    std::string option, path;  // as given
    std::string target;        // resolved: where the file goes
    std::string temp;          // staged file; "" before stage()
    int slot = -1;             // its place in the signal handlers' list
  };
  Entry& find(const std::string& path);
  std::vector<Entry> entries_;
};

// Installs the SIGINT/SIGTERM/SIGHUP handlers that remove the temporary
// files of every Outputs (once per process; Outputs() calls it).
void install_signal_handlers();

}  // namespace tpu::cli
