// SPDX-License-Identifier: Apache-2.0
// tpu tflite-info: a .tflite model read and lowered to TPU layers, printed
// (docs/tflite.md, docs/cli.md). It needs no device.
// tpu infer: the model run on the device over a batch of samples.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "outputs.h"
#include "tpu/tflite.h"
#include "tpu/tflite_lower.h"
#include "tpu/tflite_run.h"

namespace tpu::cli {
namespace {

using nlohmann::json;
namespace tfl = tpu::tflite;

// The whole lowered network, weights included: what an executor needs.
json network_json(const tfl::Network& net) {
  json values = json::array();
  for (const tfl::Value& v : net.values) {
    values.push_back({{"tensor", v.tensor}, {"name", v.name}, {"shape", v.shape},
                      {"type", tfl::type_name(v.type)}, {"scale", v.scale}, {"zero_point", v.zero_point}});
  }
  json layers = json::array();
  for (const tfl::Layer& l : net.layers) {
    json j = {{"kind", tfl::kind_name(l.kind)}, {"op_index", l.op_index}, {"op", l.op},
              {"inputs", l.inputs}, {"output", l.output}};
    switch (l.kind) {
      case tfl::LayerKind::kFullyConnected:
      case tfl::LayerKind::kConv2d:
      case tfl::LayerKind::kDepthwiseConv2d:
        j["k"] = l.k;
        j["n"] = l.n;
        j["w"] = l.w;
        j["bias"] = l.bias;
        j["bias_folded"] = l.bias_folded;
        j["input_zero_point"] = l.input_zero_point;
        [[fallthrough]];
      case tfl::LayerKind::kRequantize:
        j["multiplier"] = l.rq.multiplier;
        j["shift"] = l.rq.shift;
        j["input_zero_point"] = l.input_zero_point;
        [[fallthrough]];
      case tfl::LayerKind::kMaxPool2d:
      case tfl::LayerKind::kAveragePool2d:
        j["zero_point"] = l.rq.zero_point;
        j["act_min"] = l.rq.act_min;
        j["act_max"] = l.rq.act_max;
        break;
      case tfl::LayerKind::kAdd:
        j["add"] = {{"left_shift", l.add.left_shift},     {"in1_offset", l.add.in1_offset},
                    {"in1_multiplier", l.add.in1_multiplier}, {"in1_shift", l.add.in1_shift},
                    {"in2_offset", l.add.in2_offset},     {"in2_multiplier", l.add.in2_multiplier},
                    {"in2_shift", l.add.in2_shift},       {"out_offset", l.add.out_offset},
                    {"out_multiplier", l.add.out_multiplier}, {"out_shift", l.add.out_shift},
                    {"act_min", l.add.act_min},           {"act_max", l.add.act_max}};
        break;
      case tfl::LayerKind::kQuantize:
      case tfl::LayerKind::kDequantize:
        j["scale"] = l.scale;
        j["zero_point"] = l.zero_point;
        break;
      case tfl::LayerKind::kReshape: break;
    }
    if (l.kind == tfl::LayerKind::kConv2d || l.kind == tfl::LayerKind::kDepthwiseConv2d ||
        l.kind == tfl::LayerKind::kMaxPool2d || l.kind == tfl::LayerKind::kAveragePool2d) {
      j["kh"] = l.kh;
      j["kw"] = l.kw;
      j["stride"] = {l.stride_h, l.stride_w};
      j["padding"] = l.padding == tfl::Padding::kSame ? "SAME" : "VALID";
      j["pad"] = {l.pad_top, l.pad_bottom, l.pad_left, l.pad_right};
      if (l.kind == tfl::LayerKind::kDepthwiseConv2d) j["depth_multiplier"] = l.depth_multiplier;
    }
    layers.push_back(std::move(j));
  }
  return {{"values", values}, {"layers", layers}, {"inputs", net.inputs}, {"outputs", net.outputs}};
}

// X.npy as the executor's tensor: int8, or float32 for a model whose input
// is float (a QUANTIZE at its edge). Other dtypes are refused by check_input.
tfl::HostTensor to_host(const npy::Array& a) {
  tfl::HostTensor t;
  t.shape = a.shape;
  switch (a.dtype) {
    case npy::Dtype::kInt8: t.i8 = npy::values<int8_t>(a); break;
    case npy::Dtype::kFloat32:
      t.type = tfl::TensorType::kFloat32;
      t.f32 = npy::values<float>(a);
      break;
    case npy::Dtype::kUint8: t.type = tfl::TensorType::kUint8; break;
    case npy::Dtype::kInt32: t.type = tfl::TensorType::kInt32; break;
    case npy::Dtype::kUint16: t.type = tfl::TensorType::kUint16; break;
  }
  return t;
}

// Samples [first, first + count) of x.
tfl::HostTensor slice(const tfl::HostTensor& x, int64_t first, int64_t count) {
  tfl::HostTensor t;
  t.type = x.type;
  t.shape = x.shape;
  t.shape[0] = count;
  const int64_t per = x.shape[0] == 0 ? 0 : x.elements() / x.shape[0];
  if (x.type == tfl::TensorType::kFloat32) {
    t.f32.assign(x.f32.begin() + first * per, x.f32.begin() + (first + count) * per);
  } else {
    t.i8.assign(x.i8.begin() + first * per, x.i8.begin() + (first + count) * per);
  }
  return t;
}

void append(tfl::HostTensor* all, const tfl::HostTensor& part) {
  if (all->shape.empty()) {
    *all = part;
    return;
  }
  all->shape[0] += part.shape[0];
  all->i8.insert(all->i8.end(), part.i8.begin(), part.i8.end());
  all->f32.insert(all->f32.end(), part.f32.begin(), part.f32.end());
}

npy::Array to_npy(const tfl::HostTensor& t) {
  if (t.type == tfl::TensorType::kFloat32) return npy::make(npy::Dtype::kFloat32, t.shape, t.f32.data());
  return npy::make(npy::Dtype::kInt8, t.shape, t.i8.data());
}

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * v);
  return buf;
}

}  // namespace

int cmd_infer(const Global& g, const InferArgs& args) {
  Outputs out;
  out.add("--out", args.out);
  out.add("--stats-json", args.stats_json);
  const tfl::Model model = tfl::load(args.model);
  const tfl::Network net = tfl::lower(model, args.model);
  tfl::check_single_io(net, args.model);
  const tfl::HostTensor x = to_host(npy::load(args.x));
  tfl::check_input(net, x, args.x);

  Device dev = g.open();
  const int64_t samples = x.shape[0];
  tfl::HostTensor y;
  tfl::RunStats stats;
  for (int64_t first = 0; first < samples; first += args.batch) {
    const int64_t count = std::min<int64_t>(args.batch, samples - first);
    tfl::RunStats s;
    append(&y, tfl::run(dev, net, slice(x, first, count), &s));
    if (stats.layers.empty()) stats.layers.resize(s.layers.size());
    for (size_t i = 0; i < s.layers.size(); ++i) stats.layers[i] += s.layers[i];
    stats.total += s.total;
    std::printf("infer: %lld/%lld samples, %llu cycles\n", static_cast<long long>(first + count),
                static_cast<long long>(samples), static_cast<unsigned long long>(stats.total.cycles));
    std::fflush(stdout);
  }
  stats.total.n = dev.info().n;

  out.stage(args.out, npy_bytes(to_npy(y)));
  json layers = json::array();
  std::string table;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const tfl::Layer& l = net.layers[i];
    OpStats s = stats.layers[i];
    s.n = dev.info().n;
    const bool tpu = tfl::runs_on_tpu(l.kind);
    layers.push_back({{"index", i}, {"op_index", l.op_index}, {"op", l.op}, {"kind", tfl::kind_name(l.kind)},
                      {"where", tpu ? "tpu" : "host"}, {"cycles", s.cycles}, {"commands", s.commands},
                      {"macs", s.macs}, {"utilization", s.utilization()},
                      {"array_utilization", s.array_utilization()}});
    char line[160];
    if (tpu) {
      std::snprintf(line, sizeof line, "  %2zu %-10s op %-3d %-18s tpu  %10llu cycles  %s of the MXU\n", i,
                    tfl::kind_name(l.kind), l.op_index, l.op.c_str(), static_cast<unsigned long long>(s.cycles),
                    percent(s.utilization()).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %2zu %-10s op %-3d %-18s host\n", i, tfl::kind_name(l.kind), l.op_index,
                    l.op.c_str());
    }
    table += line;
  }
  if (!args.stats_json.empty()) {
    json j = stats_json(g, dev, stats.total);
    j["model"] = args.model;
    j["samples"] = samples;
    j["batch"] = args.batch;
    j["cycles_per_sample"] = double(stats.total.cycles) / double(samples);
    j["layers"] = layers;
    out.stage_json(args.stats_json, j);
  }
  out.commit();
  std::printf("%sinfer: %llu cycles (%.1f per sample), %s of the MXU, %llu commands\n", table.c_str(),
              static_cast<unsigned long long>(stats.total.cycles), double(stats.total.cycles) / double(samples),
              percent(stats.total.utilization()).c_str(), static_cast<unsigned long long>(stats.total.commands));
  std::printf("infer: wrote %s (%s %s)\n", printable(args.out).c_str(),
              y.type == tfl::TensorType::kFloat32 ? "float32" : "int8", [&] {
                std::string t;
                for (size_t i = 0; i < y.shape.size(); ++i) t += (i ? "x" : "") + std::to_string(y.shape[i]);
                return t;
              }().c_str());
  return 0;
}

int cmd_tflite_info(const TfliteInfoArgs& args) {
  Outputs out;
  out.add("--json", args.json);
  const tfl::Model model = tfl::load(args.model);
  const tfl::Network net = tfl::lower(model, args.model);
  if (!args.json.empty()) {
    out.stage_json(args.json, network_json(net));
    out.commit();
  }
  std::printf("%s: %zu operators, %zu tensors in the main subgraph\n%s", printable(args.model).c_str(),
              model.subgraphs[0].operators.size(), model.subgraphs[0].tensors.size(),
              tfl::describe(net).c_str());
  return 0;
}

}  // namespace tpu::cli
