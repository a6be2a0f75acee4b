// SPDX-License-Identifier: Apache-2.0
#include "outputs.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli_common.h"

namespace tpu::cli {
namespace {

// The temporary files that exist right now, for the signal handlers: a fixed
// table of malloc'ed paths, changed only while the signals are blocked.
constexpr int kSlots = 4096;
char* volatile g_temps[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

void on_signal(int sig) {
  const int saved = errno;
  for (int i = 0; i < kSlots; ++i) {
    if (char* p = g_temps[i]) ::unlink(p);
  }
  errno = saved;
  // Die of the signal as if there were no handler (the exit status says so).
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns (the signal is blocked in it)
}

// Blocks the three signals for its lifetime.
class SignalBlock {
 public:
  SignalBlock() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : kSignals) sigaddset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalBlock() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t old_;
};

// Call with the signals blocked.
int track(const std::string& path) {
  for (int i = 0; i < kSlots; ++i) {
    if (!g_temps[i]) {
      char* p = ::strdup(path.c_str());
      if (!p) throw std::bad_alloc();
      g_temps[i] = p;
      return i;
    }
  }
  throw Error("too many output files at once (at most " + std::to_string(kSlots) + ")");
}

void untrack(int slot) {
  if (slot < 0) return;
  char* p = g_temps[slot];
  g_temps[slot] = nullptr;
  std::free(p);
}

std::string errno_text(int e) { return std::strerror(e); }

std::string parent_of(const std::string& target) {
  const size_t slash = target.find_last_of('/');
  return slash == 0 ? "/" : target.substr(0, slash);
}

std::string name_of(const std::string& target) { return target.substr(target.find_last_of('/') + 1); }

// The absolute path with ".", ".." and symbolic links resolved, a link to a
// file that does not exist yet included: two spellings of one file give the
// same string, and an output named through a link is written where the link
// points (the link stays).
std::string resolve(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) throw Error(path + ": cannot write: " + ec.message());
  for (int hops = 0;; ++hops) {
    fs::path r = fs::weakly_canonical(p, ec);
    p = ec ? p.lexically_normal() : r;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) break;
    if (hops == 40) throw Error(path + ": cannot write: too many levels of symbolic links");
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw Error(path + ": cannot write: " + ec.message());
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  std::string s = p.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

void install_signal_handlers() {
  static bool done = false;
  if (done) return;
  done = true;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : kSignals) sigaddset(&sa.sa_mask, s);
  for (int s : kSignals) {
    struct sigaction old {};
    // A signal ignored by whoever started us (nohup) stays ignored.
    if (::sigaction(s, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(s, &sa, nullptr);
  }
}

Outputs::Outputs() { install_signal_handlers(); }

Outputs::~Outputs() {
  SignalBlock block;
  for (Entry& e : entries_) {
    if (!e.temp.empty()) ::unlink(e.temp.c_str());
    untrack(e.slot);
  }
}

void Outputs::add(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  const std::string what = path + ": cannot write";
  if (path.back() == '/') {
    throw Error(what + ": the path ends in '/' (a directory); give a file name");
  }
  Entry e{option, path, resolve(path), "", -1};
  for (const Entry& o : entries_) {
    if (o.target == e.target) {
      throw UsageError(o.option + " and " + option + " name the same file (" +
                       (o.path == path ? path : o.path + " and " + path) +
                       (e.target == path ? std::string() : ", that is " + e.target) +
                       "); give each output its own file");
    }
  }
  struct stat st {};
  if (::lstat(e.target.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      throw Error(what + ": it is " + npy::file_kind(st.st_mode) +
                  ", not a regular file; outputs are written as regular files (into a temporary "
                  "file that is then renamed), so name a file");
    }
  }
  const std::string dir = parent_of(e.target), name = name_of(e.target);
  if (::stat(dir.c_str(), &st) != 0) {
    throw Error(what + ": the directory " + dir + (errno == ENOENT ? " does not exist" : ": " + errno_text(errno)));
  }
  if (!S_ISDIR(st.st_mode)) throw Error(what + ": " + dir + " is not a directory");
  long name_max = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  if (name_max <= 0) name_max = NAME_MAX;
  if (name.size() > size_t(name_max)) {
    throw Error(what + ": the file name is " + std::to_string(name.size()) + " bytes, more than the " +
                std::to_string(name_max) + " the file system allows");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    throw Error(what + ": the directory " + dir + ": " + errno_text(errno));
  }
  entries_.push_back(std::move(e));
}

Outputs::Entry& Outputs::find(const std::string& path) {
  for (Entry& e : entries_)
    if (e.path == path) return e;
  throw Error(path + ": internal error: the output was not registered");
}

void Outputs::stage(const std::string& path, std::span<const uint8_t> bytes) {
  Entry& e = find(path);
  if (!e.temp.empty()) throw Error(path + ": internal error: the output is written twice");
  std::string tmpl = npy::temp_template(e.target);
  int fd;
  {
    SignalBlock block;
    fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw Error(path + ": cannot write: " + errno_text(errno));
    e.slot = track(tmpl);
    e.temp = tmpl;
  }
  const auto fail = [&](int err) {
    ::close(fd);
    SignalBlock block;
    ::unlink(e.temp.c_str());
    untrack(e.slot);
    e.slot = -1;
    e.temp.clear();
    throw Error(path + ": cannot write: " + errno_text(err));
  };
  if (const int err = npy::fill_temp(fd, bytes)) fail(err);
  if (::close(fd) != 0) {
    fd = -1;
    const int err = errno;
    SignalBlock block;
    ::unlink(e.temp.c_str());
    untrack(e.slot);
    e.slot = -1;
    e.temp.clear();
    throw Error(path + ": cannot write: " + errno_text(err));
  }
}

void Outputs::stage_json(const std::string& path, const nlohmann::json& j) {
  // File names in the JSON may hold bytes that are not UTF-8: replaced, not fatal.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  stage(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void Outputs::commit() {
  // Test aid (sw/cli/test/cli_test.py, signals_remove_staged_files): hold the
  // staged files this many milliseconds (at most 60000) before the renames,
  // so that a test can signal the tool while they exist.
  if (const char* hold = std::getenv("TPU_TEST_HOLD_STAGED_MS")) {
    const long ms = std::min(std::strtol(hold, nullptr, 10), 60000L);
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  SignalBlock block;  // no signal between the renames: all of them, or none
  struct Done {
    Entry* e;
    std::string backup;  // a second name of the file it replaced, "" if none
  };
  std::vector<Done> done;
  const auto undo = [&] {
    for (auto it = done.rbegin(); it != done.rend(); ++it) {
      if (it->backup.empty()) ::unlink(it->e->target.c_str());
      else ::rename(it->backup.c_str(), it->e->target.c_str());
    }
  };
  for (Entry& e : entries_) {
    if (e.temp.empty()) continue;
    // Keep the file being replaced under a second name until all renames
    // succeeded, to put it back otherwise.
    std::string backup;
    struct stat st {};
    if (::lstat(e.target.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      for (int attempt = 0; attempt < 100 && backup.empty(); ++attempt) {
        std::string name = npy::temp_template(e.target);
        const int fd = ::mkstemp(name.data());
        if (fd < 0) break;
        ::close(fd);
        ::unlink(name.c_str());
        if (::link(e.target.c_str(), name.c_str()) == 0) backup = name;
        else if (errno != EEXIST) break;  // no hard links here: no undo for this one
      }
    }
    if (::rename(e.temp.c_str(), e.target.c_str()) != 0) {
      const int err = errno;
      if (!backup.empty()) ::unlink(backup.c_str());
      undo();
      for (const Done& d : done)
        if (!d.backup.empty()) ::unlink(d.backup.c_str());
      throw Error(e.path + ": cannot write: " + errno_text(err) + "; no output was written");
    }
    untrack(e.slot);  // it is the output now: a signal must not remove it
    e.slot = -1;
    e.temp.clear();
    done.push_back({&e, backup});
  }
  for (const Done& d : done)
    if (!d.backup.empty()) ::unlink(d.backup.c_str());
}

}  // namespace tpu::cli
