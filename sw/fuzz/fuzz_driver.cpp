// SPDX-License-Identifier: Apache-2.0
// A deterministic mutation fuzzer around LLVMFuzzerTestOneInput, for
// compilers without libFuzzer (-fsanitize=fuzzer). It takes the same flags
// that matter here:
//
//   fuzz_parsers [-max_total_time=SECONDS] [-runs=N] [-seed=N] CORPUS_DIR_OR_FILE...
//
// Every corpus file runs once, then mutations of them (bit flips, random and
// "interesting" bytes, tokens of the formats, inserted, deleted, repeated
// and spliced ranges) until the time or the run count is used up. There is
// no coverage feedback; the same seed gives the same inputs. An exception
// that escapes the target is a finding: the input is saved as
// crash-<run>.bin and the exit status is 1 (a crash or a sanitizer report
// ends the process by itself).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

const char* const kTokens[] = {
    "\x93NUMPY", "\x01\x00", "\x02\x00", "{'descr': '", "|i1", "<i4", "<f4", "'fortran_order': ",
    "True", "False", "'shape': (", ",)", "), }", "9223372036854775807", "18446744073709551616",
    "{\"layers\": [", "{\"w\": \"w.npy\"", "\"bias\": \"b.npy\"", "\"multiplier\": ", "\"shift\": ",
    "\"act\": \"relu6\"", "\"qmin\": -128", "\"qmax\": 127", "\"relu6_max\": ", "missing", "]}",
    "rhm ub=0 rows=4 host=0x1000 stride=16\n", "rw host=0x2000 tiles=2 stride=16\n",
    "loop n=2 body=1\n", "mmc ub=0 acc=0 rows=8 acc pop\n", "act acc=0 ub=64 rows=8 func=relu bias\n",
    "vop poolmax a=64 dst=80 rows=4 shift=1\n", "cfg QMULT 0x40000000\n", ".word 0xff 0x1\n",
    "halt\n", "sync mem|mmc\n", "irq\n", "# c\n", "0x", "-", "=", "\n", "\"", "[", "{", "}",
    "4294967296", "-2147483649", "1e400"};
const uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x0a, 0x20, 0x22, 0x27, 0x30, 0x39, 0x5c};

Bytes read_all(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  Bytes mutate(Bytes b, const std::vector<Bytes>& corpus) {
    const int steps = 1 + int(below(4));
    for (int s = 0; s < steps; ++s) {
      switch (below(9)) {
        case 0:  // flip a bit
          if (!b.empty()) b[below(b.size())] ^= uint8_t(1u << below(8));
          break;
        case 1:  // a random byte
          if (!b.empty()) b[below(b.size())] = uint8_t(below(256));
          break;
        case 2:  // an interesting byte
          if (!b.empty()) b[below(b.size())] = kInteresting[below(sizeof kInteresting)];
          break;
        case 3: {  // insert a token
          const char* t = kTokens[below(std::size(kTokens))];
          b.insert(b.begin() + std::ptrdiff_t(below(b.size() + 1)), t, t + std::strlen(t));
          break;
        }
        case 4: {  // delete a range
          if (b.size() < 2) break;
          const size_t at = below(b.size()), n = 1 + below(std::min<size_t>(b.size() - at, 16));
          b.erase(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
          break;
        }
        case 5: {  // repeat a range
          if (b.empty() || b.size() > 4096) break;
          const size_t at = below(b.size()), n = 1 + below(std::min<size_t>(b.size() - at, 32));
          const Bytes piece(b.begin() + std::ptrdiff_t(at), b.begin() + std::ptrdiff_t(at + n));
          b.insert(b.begin() + std::ptrdiff_t(at), piece.begin(), piece.end());
          break;
        }
        case 6: {  // splice in a piece of another input
          const Bytes& o = corpus[below(corpus.size())];
          if (o.size() < 2) break;
          const size_t at = 1 + below(o.size() - 1), n = 1 + below(o.size() - at);
          b.insert(b.begin() + std::ptrdiff_t(below(b.size() + 1)), o.begin() + std::ptrdiff_t(at),
                   o.begin() + std::ptrdiff_t(at + n));
          break;
        }
        case 7:  // truncate
          if (b.size() > 1) b.resize(1 + below(b.size() - 1));
          break;
        default:  // a digit run into a big number
          if (!b.empty()) {
            const std::string big = std::to_string(rng_());
            b.insert(b.begin() + std::ptrdiff_t(below(b.size() + 1)), big.begin(), big.end());
          }
          break;
      }
    }
    if (b.size() > 65536) b.resize(65536);
    return b;
  }

 private:
  std::mt19937_64 rng_;
};

bool run_one(const Bytes& input, uint64_t run) {
  try {
    LLVMFuzzerTestOneInput(input.data(), input.size());
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: run %llu: uncaught exception: %s\n", static_cast<unsigned long long>(run),
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "fuzz: run %llu: uncaught exception of unknown type\n",
                 static_cast<unsigned long long>(run));
  }
  const std::string name = "crash-" + std::to_string(run) + ".bin";
  std::ofstream(name, std::ios::binary).write(reinterpret_cast<const char*>(input.data()),
                                              std::streamsize(input.size()));
  std::fprintf(stderr, "fuzz: the input is in %s\n", name.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  double max_time = 10;
  uint64_t max_runs = UINT64_MAX, seed = 1;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("-max_total_time=", 0) == 0) max_time = std::stod(a.substr(16));
    else if (a.rfind("-runs=", 0) == 0) max_runs = std::stoull(a.substr(6));
    else if (a.rfind("-seed=", 0) == 0) seed = std::stoull(a.substr(6));
    else if (!a.empty() && a[0] == '-') std::fprintf(stderr, "fuzz: ignoring %s\n", a.c_str());
    else if (std::filesystem::is_directory(a)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(a))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());  // the same order every time
      for (const auto& f : files) corpus.push_back(read_all(f));
    } else {
      corpus.push_back(read_all(a));
    }
  }
  for (uint8_t k = 0; k < 4; ++k) corpus.push_back(Bytes{k});  // each parser, empty input
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  uint64_t runs = 0;
  for (const Bytes& b : corpus) {
    if (!run_one(b, runs++)) return 1;
  }
  Mutator m(seed);
  while (runs < max_runs && elapsed() < max_time) {
    const Bytes input = m.mutate(corpus[m.below(corpus.size())], corpus);
    if (!run_one(input, runs++)) return 1;
  }
  std::printf("fuzz: %llu runs in %.1f s (seed %llu, %zu corpus inputs), no finding\n",
              static_cast<unsigned long long>(runs), elapsed(), static_cast<unsigned long long>(seed),
              corpus.size());
  return 0;
}
