// SPDX-License-Identifier: Apache-2.0
// tpu tflite-info: a .tflite model read and lowered to TPU layers, printed
// (docs/tflite.md, docs/cli.md). It needs no device.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "outputs.h"
#include "tpu/tflite.h"
#include "tpu/tflite_lower.h"

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

}  // namespace

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
