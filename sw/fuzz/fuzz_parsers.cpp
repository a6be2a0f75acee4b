// SPDX-License-Identifier: Apache-2.0
// Fuzz target for the parsers of what `tpu` reads (docs/cli.md, "Guarantees"):
// the .npy reader, the MLP model file reader, the assembler and the .tflite
// reader with its lowering (docs/tflite.md). libFuzzer's
// entry point; fuzz_driver.cpp runs it without libFuzzer.
//
// The first byte picks the parser, the rest is the file:
//   0  a .npy file           npy::parse; an array read back after encode is the same
//   1  an MLP model (JSON)   parse_model with made-up arrays; layers chain
//   2  assembly text         isa::assemble; assemble(disassemble(p)) == p
//   3  a binary program      16-byte instructions; disassemble then assemble gives the bytes back
//   4  a .tflite model       tflite::parse, then tflite::lower; the layers' sizes agree
// A rejection must be the parser's own error (tpu::Error, isa::AsmError,
// tflite::FormatError, tflite::LowerError);
// any other exception, a crash, a sanitizer report or a broken invariant is
// a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "model_file.h"
#include "tpu/isa.h"
#include "tpu/npy.h"
#include "tpu/tflite.h"
#include "tpu/tflite_lower.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_parsers: invariant broken: %s\n", what);
    std::abort();
  }
}

void fuzz_npy(std::span<const uint8_t> in) {
  tpu::npy::Array a;
  try {
    a = tpu::npy::parse("fuzz.npy", in);
  } catch (const tpu::Error&) {
    return;
  }
  require(a.elements() >= 0, "elements() of an accepted array");
  const size_t item = a.dtype == tpu::npy::Dtype::kInt32 || a.dtype == tpu::npy::Dtype::kFloat32 ? 4
                      : a.dtype == tpu::npy::Dtype::kUint16                                       ? 2
                                                                                                  : 1;
  require(a.data.size() == size_t(a.elements()) * item, "data size is elements x item size");
  const std::vector<uint8_t> again = tpu::npy::encode(a);
  const tpu::npy::Array b = tpu::npy::parse("again.npy", again);
  require(b.dtype == a.dtype && b.shape == a.shape && b.data == a.data, "encode then parse round trip");
}

// Arrays for the names a model uses: the name decides the shape, so layers
// chain or not; a name with "missing" in it is a file that cannot be read.
tpu::npy::Array made_up(const std::string& path, tpu::npy::Dtype dtype, int ndim) {
  if (path.find("missing") != std::string::npos) throw tpu::Error(path + ": cannot open: No such file");
  uint32_t h = 2166136261u;
  for (unsigned char c : path) h = (h ^ c) * 16777619u;
  const int64_t rows = 1 + h % 6, cols = 1 + (h >> 8) % 6;
  if (ndim == 2) return tpu::npy::make(dtype, {rows, cols}, nullptr);
  return tpu::npy::make(dtype, {cols}, nullptr);
}

void fuzz_model(std::span<const uint8_t> in) {
  std::vector<tpu::cli::LayerSource> layers;
  try {
    layers = tpu::cli::parse_model("fuzz/model.json", in, made_up);
  } catch (const tpu::Error&) {
    return;
  }
  require(!layers.empty(), "a model has layers");
  for (size_t i = 0; i < layers.size(); ++i) {
    const tpu::DenseLayer& l = layers[i].layer;
    require(l.bias.size() == size_t(l.w.cols), "one bias per output");
    require(l.q.shift >= 0 && l.q.shift <= 31, "shift in 0..31");
    require(l.q.qmin <= l.q.qmax, "qmin <= qmax");
    if (i) require(layers[i - 1].layer.w.cols == l.w.rows, "layers chain");
  }
}

void same_program(const std::vector<tpu::isa::Instr>& a, const std::vector<tpu::isa::Instr>& b,
                  const char* what) {
  require(a.size() == b.size(), what);
  for (size_t i = 0; i < a.size(); ++i) require(a[i].encode() == b[i].encode(), what);
}

void fuzz_asm(std::span<const uint8_t> in) {
  const std::string text(in.begin(), in.end());
  std::vector<tpu::isa::Instr> program;
  try {
    program = tpu::isa::assemble(text);
  } catch (const tpu::isa::AsmError&) {
    return;
  }
  same_program(tpu::isa::assemble(tpu::isa::disassemble(program)), program,
               "assemble(disassemble(assemble(text))) == assemble(text)");
}

void fuzz_bin(std::span<const uint8_t> in) {
  std::vector<tpu::isa::Instr> program;
  for (size_t at = 0; at + 16 <= in.size(); at += 16) {
    uint64_t w[2] = {0, 0};
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < 8; ++i) w[k] |= uint64_t(in[at + size_t(8 * k + i)]) << (8 * i);
    program.push_back(tpu::isa::decode(w[0], w[1]));
    const auto e = program.back().encode();
    require(e[0] == w[0] && e[1] == w[1], "decode then encode gives the words back");
  }
  same_program(tpu::isa::assemble(tpu::isa::disassemble(program)), program,
               "asm(disasm(binary)) gives the same bytes");
}

void fuzz_tflite(std::span<const uint8_t> in) {
  namespace tfl = tpu::tflite;
  tfl::Model m;
  try {
    m = tfl::parse(in, "fuzz.tflite");
  } catch (const tfl::FormatError&) {
    return;
  }
  require(!m.subgraphs.empty(), "a model has a subgraph");
  for (const tfl::Subgraph& g : m.subgraphs)
    for (const tfl::Operator& op : g.operators) require(op.opcode_index < m.operator_codes.size(), "opcode index in range");
  tfl::Network net;
  try {
    net = tfl::lower(m, "fuzz.tflite");
  } catch (const tfl::LowerError&) {
    return;
  }
  require(!net.inputs.empty() && !net.outputs.empty(), "a network has inputs and outputs");
  for (const tfl::Layer& l : net.layers) {
    require(l.output >= 0 && size_t(l.output) < net.values.size(), "layer output in range");
    for (int i : l.inputs) require(i >= 0 && size_t(i) < net.values.size(), "layer input in range");
    if (l.kind == tfl::LayerKind::kFullyConnected || l.kind == tfl::LayerKind::kConv2d ||
        l.kind == tfl::LayerKind::kDepthwiseConv2d) {
      require(l.w.size() == size_t(l.k) * size_t(l.n), "weights are k x n");
      require(l.bias_folded.size() == size_t(l.n) && l.rq.multiplier.size() == size_t(l.n), "one bias and multiplier per channel");
    }
  }
  (void)tfl::describe(net);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0] % 5) {
    case 0: fuzz_npy(in); break;
    case 1: fuzz_model(in); break;
    case 2: fuzz_asm(in); break;
    case 3: fuzz_bin(in); break;
    default: fuzz_tflite(in); break;
  }
  return 0;
}
