// SPDX-License-Identifier: Apache-2.0
// tpu: the command-line tool for the TPU (docs/cli.md).
//
//   tpu [--config NAME | --device URI] [--timeout CYCLES] [--seed N] <command> ...
//
// Every failure is one line on stderr, "tpu: error: <message>", and exit
// status 1; a mistake in the command line exits 2. Output files are written
// only after the work succeeded, all of them or none (outputs.h).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli_common.h"

namespace {

using namespace tpu::cli;

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// One line of printable text, whatever the message holds (a file name with
// a newline or an escape sequence in it is shown escaped).
std::string one_line(const std::string& message) {
  std::string s = printable(message);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "unknown error" : s;
}

int fail(int code, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "tpu: error: %s\n", one_line(message).c_str());
  return code;
}

// An unsigned option checked as text before it is converted, so that a
// negative number, one that overflows its type and one out of range all
// end in "--NAME: VALUE is out of range; it takes LO..HI".
template <class T>
CLI::Option* add_number(CLI::App* app, const std::string& name, T* var, const std::string& help,
                        uint64_t lo, uint64_t hi) {
  const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
  return app->add_option_function<std::string>(
      name,
      [var, name, lo, hi, range](const std::string& text) {
        uint64_t v = 0;
        if (!parse_u64(text, &v)) {
          const std::string digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? text.substr(1) : text;
          const bool numeric = !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
          if (!numeric) {
            throw UsageError(name + ": '" + text + "' is not a number; it takes " + range);
          }
          throw UsageError(name + ": " + text + " is out of range; it takes " + range);
        }
        if (v < lo || v > hi) throw UsageError(name + ": " + text + " is out of range; it takes " + range);
        *var = T(v);
      },
      help + " (" + range + ")");
}

// The subcommand a failed parse did not find: the first word that is not an
// option or a global option's value, when it names no command.
std::string unknown_command(const CLI::App& app, int argc, char** argv) {
  static const char* const kValued[] = {"--config", "--transport", "--device", "--timeout", "--seed"};
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  std::sort(names.begin(), names.end());
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) list += (i ? ", " : "") + names[i];
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") break;
    if (!a.empty() && a[0] == '-') {
      for (const char* v : kValued)
        if (a == v) ++i;  // its value follows
      continue;
    }
    if (std::find(names.begin(), names.end(), a) != names.end()) return "";
    return "unknown command '" + a + "'; the commands are " + list + " (run 'tpu --help')";
  }
  return "no command given; the commands are " + list + " (run 'tpu --help')";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tpu: run matrix work and programs on the TPU (simulated or real); docs/cli.md"};
  app.name("tpu");
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand
  app.set_version_flag("--version", "tpu 0.1");

  Global g;
  app.add_option("--config", g.config, "named configuration: " + tpu::config_names())
      ->capture_default_str();
  app.add_option("--transport", g.transport,
                 "sim (the RTL, cycle-accurate), model (the reference model, fast) or sc (the RTL in "
                 "SystemC); uart needs --device uart:/dev/ttyUSB0")
      ->capture_default_str();
  app.add_option("--device", g.device,
                 "device URI, e.g. sim:?config=tiny&latency=100 (overrides --transport and --config)");
  add_number(&app, "--timeout", &g.timeout,
             "device cycles each command may take, default " + std::to_string(g.timeout), 1,
             kMaxTimeoutCycles);
  add_number(&app, "--seed", &g.seed, "seed of the random matrices (bench, perf), default 1", 0,
             UINT64_MAX);

  int code = 0;
  auto* info = app.add_subcommand("info", "print what the device is and what it has");
  info->callback([&] { code = cmd_info(g); });

  MatmulArgs mm;
  auto* matmul = app.add_subcommand("matmul", "C = A*B: int8 A (MxK) and B (KxN) to int32 C (MxN), "
                                               "or with --dtype bf16 bf16 operands to float32 C");
  matmul->add_option("--a", mm.a, "A.npy, int8, M x K (--dtype bf16: float32, or uint16 with --raw-bf16)")
      ->required();
  matmul->add_option("--b", mm.b, "B.npy, int8, K x N (--dtype bf16: float32, or uint16 with --raw-bf16)")
      ->required();
  matmul->add_option("--out", mm.out, "where to write C, int32 M x N .npy (--dtype bf16: float32)")->required();
  matmul->add_option("--dtype", mm.dtype,
                     "int8 (default), or bf16: the device's bf16 datapath, float32 inputs rounded to bf16 "
                     "(nearest even)")
      ->check(CLI::IsMember({"int8", "bf16"}));
  matmul->add_flag("--raw-bf16", mm.raw_bf16, "with --dtype bf16: A and B are uint16 arrays of bf16 bits");
  matmul->add_option("--stats-json", mm.stats_json, "write cycles, utilization and counters here");
  matmul->callback([&] { code = cmd_matmul(g, mm); });

  RunArgs run;
  auto* runc = app.add_subcommand("run", "run a program (assembly text, or .bin) on the device");
  runc->add_option("program", run.program, "PROGRAM.asm, or PROGRAM.bin (16 bytes per instruction)")
      ->required();
  // One value per occurrence; occurrences add up.
  runc->add_option("--load", run.loads, "ADDR=FILE: put the file's bytes at host address ADDR first")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  runc->add_option("--dump", run.dumps, "ADDR:LEN=FILE: save LEN bytes from ADDR afterwards")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  runc->add_option("--stats-json", run.stats_json, "write status, cycles and counters here");
  runc->callback([&] { code = cmd_run(g, run); });

  AsmArgs as;
  auto* asmc = app.add_subcommand("asm", "assemble a program to binary (16 bytes per instruction)");
  asmc->add_option("input", as.in, "IN.asm")->required();
  asmc->add_option("-o,--out", as.out, "OUT.bin")->required();
  asmc->callback([&] { code = cmd_asm(as); });

  AsmArgs dis;
  auto* disc = app.add_subcommand("disasm", "disassemble a binary program to text");
  disc->add_option("input", dis.in, "IN.bin")->required();
  disc->add_option("-o,--out", dis.out, "write the text here instead of stdout");
  disc->callback([&] { code = cmd_disasm(dis); });

  GemmArgs bench_args, perf_args;
  for (auto [name, help, args] :
       {std::tuple{"bench", "random GEMM: check it against the CPU and measure the simulator",
                   &bench_args},
        std::tuple{"perf", "random GEMM: where the cycles go (performance counters)", &perf_args}}) {
    auto* sub = app.add_subcommand(name, help);
    add_number(sub, "--m", &args->m, "rows of A", 1, kMaxDim)->required();
    add_number(sub, "--k", &args->k, "columns of A, rows of B", 1, kMaxDim)->required();
    add_number(sub, "--n", &args->n, "columns of B", 1, kMaxDim)->required();
    sub->add_option("--json", args->json, "write the statistics here");
    sub->add_option("--dtype", args->dtype,
                    "int8 (default): int8 operands, int32 results; bf16: bf16 operands (normal random values "
                    "rounded to bf16), fp32 results, on a device with a bf16 datapath")
        ->check(CLI::IsMember({"int8", "bf16"}));
  }
  auto* benchc = app.get_subcommand("bench");
  auto* stream = add_number(benchc, "--stream", &bench_args.stream,
                            "run this many independent MxKxN products as one stream of commands", 1,
                            kMaxStream);
  add_number(benchc, "--depth", &bench_args.depth,
             "with --stream: commands in flight, default as many as the device holds", 1, kMaxStream)
      ->needs(stream);
  benchc->callback([&] {
    if (bench_args.stream > 0 && bench_args.dtype != "int8") throw UsageError("--stream runs int8 products only; drop --dtype bf16");
    code = cmd_bench(g, bench_args);
  });
  app.get_subcommand("perf")->callback([&] { code = cmd_perf(g, perf_args); });

  MlpArgs mlp;
  auto* mlpc = app.add_subcommand("mlp", "run a quantized multi-layer perceptron on int8 samples");
  mlpc->add_option("--model", mlp.model, "MODEL.json: layers with weights, bias, quantization")->required();
  mlpc->add_option("--x", mlp.x, "X.npy, int8, samples x inputs")->required();
  mlpc->add_option("--out", mlp.out, "where to write the int8 logits, samples x outputs")->required();
  add_number(mlpc, "--batch", &mlp.batch, "samples per run, default 1024", 1, kMaxDim);
  add_number(mlpc, "--step", &mlp.step, "samples per device step when the layers are chained, default: the driver's choice",
             1, kMaxDim);
  mlpc->add_flag("--per-layer", mlp.per_layer, "run each layer as its own command(s) instead of chaining them");
  mlpc->add_option("--stats-json", mlp.stats_json, "write cycles, utilization and counters here");
  mlpc->callback([&] { code = cmd_mlp(g, mlp); });

  TfliteInfoArgs tfl;
  auto* tflc = app.add_subcommand("tflite-info", "read a .tflite model and print the TPU layers it lowers to");
  tflc->add_option("model", tfl.model, "MODEL.tflite, a full-int8 TensorFlow Lite model")->required();
  tflc->add_option("--json", tfl.json, "write the lowered layers (weights, biases, requantization) here");
  tflc->callback([&] { code = cmd_tflite_info(tfl); });

  InferArgs inf;
  auto* infc = app.add_subcommand("infer", "run a full-int8 .tflite model on a batch of samples");
  infc->add_option("--model", inf.model, "MODEL.tflite, a full-int8 TensorFlow Lite model")->required();
  infc->add_option("--x", inf.x, "X.npy: samples x the model's input shape, int8 (float32 for a float input)")
      ->required();
  infc->add_option("--out", inf.out, "where to write the outputs, samples x the model's output shape")->required();
  add_number(infc, "--batch", &inf.batch, "samples per run, default 64", 1, kMaxDim);
  infc->add_option("--stats-json", inf.stats_json, "write cycles, utilization and per-layer cycles here");
  infc->callback([&] { code = cmd_infer(g, inf); });

  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (app.get_subcommands().empty()) {
      const std::string unknown = unknown_command(app, argc, argv);
      if (!unknown.empty()) return fail(kExitUsage, unknown);
    }
    std::string hint = "run 'tpu --help'";
    for (const CLI::App* sub : app.get_subcommands()) hint = "run 'tpu " + sub->get_name() + " --help'";
    return fail(kExitUsage, std::string(e.what()) + " (" + hint + ")");
  } catch (const UsageError& e) {
    return fail(kExitUsage, e.what());
  } catch (const std::bad_alloc&) {
    return fail(kExitError, "out of memory");
  } catch (const std::exception& e) {
    return fail(kExitError, e.what());
  } catch (...) {
    return fail(kExitError, "unexpected failure");
  }
  // What was printed must have reached stdout (a full disk, a closed pipe).
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    const int err = errno;
    return fail(kExitError, std::string("cannot write to standard output: ") +
                                (err ? std::strerror(err) : "a write failed"));
  }
  return code;
}
