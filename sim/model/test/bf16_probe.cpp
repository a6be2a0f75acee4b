// SPDX-License-Identifier: Apache-2.0
// The bf16 numerics and the reference model's bf16 GEMM behind a pipe, so
// that bf16_numpy_test.py can compare them with numpy. Raw little-endian
// words in on stdin, out on stdout:
//
//   bf16_probe op fp32_mul|fp32_add|fp32_max|fp32_min|bf16_mul
//       in: pairs of uint32 (bf16_mul: the low 16 bits of each); out: uint32
//   bf16_probe op fp32_to_bf16
//       in: uint32; out: uint32 holding the bf16 bits
//   bf16_probe gemm <n> <datapath: bf16|both> <output: f32|bf16>
//                   [<func: none|relu|relu6> <scale> <relu6> <fmin> <fmax> <bias: 0|1>]
//       in: int32 m, k, j, then A (m x k) and W (k x j) as uint16 bf16 bits,
//       row-major, then with bias = 1 j fp32 biases as uint32; out: C
//       (m x j) as uint32 fp32 bits (bf16 results widened), computed by the
//       model running the programs of bf16_gemm::build. The optional
//       arguments are ACT F32's (fp32 bits in hexadecimal for the registers).
//   bf16_probe reference <n>
//       the same input; out: bf16_gemm::reference
//
// Exit status 0 on success, 1 (and one line on stderr) on a bad request.
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "bf16_gemm.h"
#include "tpu/bf16.h"
#include "tpu_model.h"

namespace {

using namespace tpu;
namespace gemm = tpu::model::bf16_gemm;

std::vector<uint8_t> read_stdin() {
  std::freopen(nullptr, "rb", stdin);
  return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
}

uint32_t word32(const std::vector<uint8_t>& in, size_t i) {
  return uint32_t(in[4 * i]) | uint32_t(in[4 * i + 1]) << 8 | uint32_t(in[4 * i + 2]) << 16 |
         uint32_t(in[4 * i + 3]) << 24;
}

void write_words(const std::vector<uint32_t>& out) {
  std::freopen(nullptr, "wb", stdout);
  std::fwrite(out.data(), sizeof(uint32_t), out.size(), stdout);  // little-endian hosts only
}

int op(const std::string& name) {
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() % 4) throw std::invalid_argument("input is not whole uint32 words");
  const size_t words = in.size() / 4;
  std::vector<uint32_t> out;
  if (name == "fp32_to_bf16") {
    for (size_t i = 0; i < words; ++i) out.push_back(fp32_to_bf16(word32(in, i)));
  } else {
    if (words % 2) throw std::invalid_argument("input is not whole pairs");
    for (size_t i = 0; i < words; i += 2) {
      const uint32_t a = word32(in, i), b = word32(in, i + 1);
      if (name == "fp32_mul") out.push_back(fp32_mul(a, b));
      else if (name == "fp32_add") out.push_back(fp32_add(a, b));
      else if (name == "fp32_max") out.push_back(fp32_max(a, b));
      else if (name == "fp32_min") out.push_back(fp32_min(a, b));
      else if (name == "bf16_mul") out.push_back(bf16_mul(bf16(a), bf16(b)));
      else throw std::invalid_argument("unknown op '" + name + "'");
    }
  }
  write_words(out);
  return 0;
}

struct Operands {
  gemm::MatrixBf16 a, w;
  std::vector<fp32> bias;
};

Operands read_operands(bool with_bias = false) {
  const std::vector<uint8_t> in = read_stdin();
  if (in.size() < 12) throw std::invalid_argument("missing m, k, j");
  const int m = int(word32(in, 0)), k = int(word32(in, 1)), j = int(word32(in, 2));
  const size_t operands = 12 + 2 * (size_t(m) * k + size_t(k) * j);
  if (m < 1 || k < 1 || j < 1 || in.size() != operands + (with_bias ? 4 * size_t(j) : 0))
    throw std::invalid_argument("bad shape or input size");
  Operands ops{gemm::MatrixBf16(m, k), gemm::MatrixBf16(k, j), {}};
  size_t at = 12;
  for (bf16& v : ops.a.data) v = bf16(in[at] | in[at + 1] << 8), at += 2;
  for (bf16& v : ops.w.data) v = bf16(in[at] | in[at + 1] << 8), at += 2;
  if (with_bias)
    for (int c = 0; c < j; ++c) ops.bias.push_back(word32(in, operands / 4 + size_t(c)));
  return ops;
}

int run_gemm(int n, const std::string& datapath, const std::string& output,
             const std::vector<std::string>& act) {
  CoreConfig core{.n = n};
  if (datapath == "bf16") core.datapath = Datapath::kBf16;
  else if (datapath == "both") core.datapath = Datapath::kBoth;
  else throw std::invalid_argument("datapath must be bf16 or both");
  if (output != "f32" && output != "bf16") throw std::invalid_argument("output must be f32 or bf16");
  gemm::Epilogue epilogue;
  bool with_bias = false;
  if (!act.empty()) {
    if (act.size() != 6) throw std::invalid_argument("ACT takes func scale relu6 fmin fmax bias");
    if (act[0] == "relu") epilogue.func = isa::Act::kRelu;
    else if (act[0] == "relu6") epilogue.func = isa::Act::kRelu6;
    else if (act[0] != "none") throw std::invalid_argument("func must be none, relu or relu6");
    epilogue.scale = fp32(std::stoul(act[1], nullptr, 16));
    epilogue.relu6 = fp32(std::stoul(act[2], nullptr, 16));
    epilogue.fmin = fp32(std::stoul(act[3], nullptr, 16));
    epilogue.fmax = fp32(std::stoul(act[4], nullptr, 16));
    with_bias = act[5] == "1";
  }
  Operands ops = read_operands(with_bias);
  epilogue.bias = std::move(ops.bias);
  model::TpuModel model(core);
  HostMemory mem;
  const gemm::Programs p = gemm::build(mem, ops.a, ops.w, core,
                                       output == "f32" ? gemm::Output::kRawF32 : gemm::Output::kBf16,
                                       epilogue);
  for (const std::vector<isa::Instr>& program : p.programs) {
    model.load_program(0, program);
    const model::RunResult r = model.run(0, mem);
    if (r.err != isa::ErrCode::kOk)
      throw std::runtime_error("the model stopped with " + std::string(isa::err_name(r.err)));
  }
  write_words(gemm::read_result(mem, p).data);
  return 0;
}

int run_reference(int n) {
  const Operands ops = read_operands();
  write_words(gemm::reference(ops.a, ops.w, n).data);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 2 && args[0] == "op") return op(args[1]);
    if ((args.size() == 4 || args.size() == 10) && args[0] == "gemm")
      return run_gemm(std::stoi(args[1]), args[2], args[3], {args.begin() + 4, args.end()});
    if (args.size() == 2 && args[0] == "reference") return run_reference(std::stoi(args[1]));
    throw std::invalid_argument(
        "usage: bf16_probe op <name> | gemm <n> <bf16|both> <f32|bf16> [<func> <scale> <relu6> "
        "<fmin> <fmax> <0|1>] | reference <n>");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bf16_probe: %s\n", e.what());
    return 1;
  }
}
