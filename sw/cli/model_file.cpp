// SPDX-License-Identifier: Apache-2.0
#include "model_file.h"

#include <climits>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_common.h"

namespace tpu::cli {
namespace {

using nlohmann::json;

int64_t int_field(const json& layer, const std::string& where, const char* key, int64_t lo,
                  int64_t hi, const int64_t* fallback) {
  if (!layer.contains(key)) {
    if (fallback) return *fallback;
    throw Error(where + ": \"" + key + "\" is missing");
  }
  const json& v = layer.at(key);
  if (!v.is_number_integer()) throw Error(where + ": \"" + key + "\" must be an integer");
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (x < lo || x > hi) {
    throw Error(where + ": \"" + key + "\" is " + v.dump() + "; it must be in " +
                std::to_string(lo) + ".." + std::to_string(hi));
  }
  return x;
}

}  // namespace

std::vector<LayerSource> parse_model(const std::string& path, std::span<const uint8_t> bytes,
                                     const ArrayLoader& load) {
  json doc;
  try {
    doc = json::parse(bytes.begin(), bytes.end());
  } catch (const json::exception& e) {  // parse_error; out_of_range for 1E999999
    throw Error(path + ": not valid JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("layers") || !doc["layers"].is_array() ||
      doc["layers"].empty()) {
    throw Error(path + ": expected an object with a non-empty \"layers\" array, like "
                "{\"layers\": [{\"w\": \"w0.npy\", \"bias\": \"b0.npy\", \"multiplier\": 1073741824, "
                "\"shift\": 7, \"zero_point\": 0, \"act\": \"relu\"}]}");
  }
  const std::filesystem::path base = std::filesystem::path(path).parent_path();
  auto resolve = [&](const std::string& f) {
    const std::filesystem::path p(f);
    return (p.is_absolute() || base.empty() ? p : base / p).string();
  };

  static const std::set<std::string> kKeys = {"w",    "bias", "multiplier", "shift",    "zero_point",
                                              "qmin", "qmax", "act",        "relu6_max"};
  std::vector<LayerSource> layers;
  const json& list = doc["layers"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = path + ": layer " + std::to_string(i);
    const json& l = list[i];
    if (!l.is_object()) throw Error(where + ": expected an object");
    for (const auto& [key, value] : l.items()) {
      if (!kKeys.count(key)) {
        throw Error(where + ": unknown key \"" + key +
                    "\" (known: w, bias, multiplier, shift, zero_point, qmin, qmax, act, relu6_max)");
      }
    }
    if (!l.contains("w") || !l["w"].is_string()) {
      throw Error(where + ": \"w\" must name the weights' .npy file");
    }
    LayerSource src;
    DenseLayer& d = src.layer;
    src.w_path = resolve(l["w"].get<std::string>());
    const npy::Array w = load(src.w_path, npy::Dtype::kInt8, 2);
    d.w = to_matrix_i8(w, src.w_path);

    if (l.contains("bias")) {
      if (!l["bias"].is_string()) throw Error(where + ": \"bias\" must name a .npy file");
      const std::string bias_path = resolve(l["bias"].get<std::string>());
      const npy::Array b = load(bias_path, npy::Dtype::kInt32, 1);
      if (b.shape[0] != d.w.cols) {
        throw Error(where + ": the bias " + bias_path + " has " + std::to_string(b.shape[0]) +
                    " entries but the layer has " + std::to_string(d.w.cols) + " outputs (" +
                    src.w_path + " is " + dims(d.w.rows, d.w.cols) + ")");
      }
      d.bias = npy::values<int32_t>(b);
    } else {
      d.bias.assign(size_t(d.w.cols), 0);
    }

    const int64_t qmin_default = -128, qmax_default = 127, zero = 0;
    d.q.multiplier = int32_t(int_field(l, where, "multiplier", INT32_MIN, INT32_MAX, nullptr));
    d.q.shift = int32_t(int_field(l, where, "shift", 0, 31, nullptr));
    d.q.zero_point = int32_t(int_field(l, where, "zero_point", -128, 127, &zero));
    d.q.qmin = int32_t(int_field(l, where, "qmin", -128, 127, &qmin_default));
    d.q.qmax = int32_t(int_field(l, where, "qmax", -128, 127, &qmax_default));
    d.q.relu6_max = int32_t(int_field(l, where, "relu6_max", -128, 127, &qmax_default));
    if (d.q.qmin > d.q.qmax) {
      throw Error(where + ": qmin " + std::to_string(d.q.qmin) + " is above qmax " +
                  std::to_string(d.q.qmax));
    }
    const std::string act = l.contains("act") && l["act"].is_string() ? l["act"].get<std::string>()
                            : l.contains("act")                       ? std::string("?")
                                                                      : std::string("none");
    if (act == "none") d.act = Activation::kNone;
    else if (act == "relu") d.act = Activation::kRelu;
    else if (act == "relu6") d.act = Activation::kRelu6;
    else throw Error(where + ": \"act\" is " + l["act"].dump() + "; use \"none\", \"relu\" or \"relu6\"");

    if (!layers.empty()) {
      const LayerSource& prev = layers.back();
      if (prev.layer.w.cols != d.w.rows) {
        throw Error(where + ": its weights " + src.w_path + " are " + dims(d.w.rows, d.w.cols) +
                    ", so it takes " + std::to_string(d.w.rows) + " inputs, but layer " +
                    std::to_string(i - 1) + " gives " + std::to_string(prev.layer.w.cols) +
                    " outputs (" + prev.w_path + " is " +
                    dims(prev.layer.w.rows, prev.layer.w.cols) + ")");
      }
    }
    layers.push_back(std::move(src));
  }
  return layers;
}

std::vector<LayerSource> load_model(const std::string& path) {
  const std::vector<uint8_t> bytes = npy::read_file(path, kMaxModelBytes, "an MLP model file");
  return parse_model(path, bytes, [](const std::string& p, npy::Dtype dtype, int ndim) {
    return ndim == 2 ? npy::load_matrix(p, dtype) : npy::load_vector(p, dtype);
  });
}

}  // namespace tpu::cli
