// SPDX-License-Identifier: Apache-2.0
// The .tflite reader and the lowering (docs/tflite.md) on the models
// scripts/tflite_models.py writes (TPU_TFLITE_MODELS: their directory,
// with manifest.json), and on corrupted bytes.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tpu/npy.h"
#include "tpu/tflite.h"
#include "tpu/tflite_lower.h"

namespace tfl = tpu::tflite;

namespace {

std::string models_dir() {
  const char* d = std::getenv("TPU_TFLITE_MODELS");
  return d ? d : "build/tflite";
}

std::string model_path(const std::string& name) { return models_dir() + "/" + name + ".tflite"; }

std::vector<uint8_t> bytes_of(const std::string& name) {
  return tpu::npy::read_file(model_path(name), tfl::kMaxModelBytes, "a model");
}

nlohmann::json manifest() {
  std::ifstream f(models_dir() + "/manifest.json");
  if (!f) {
    ADD_FAILURE() << models_dir() << "/manifest.json is missing: run scripts/tflite_models.py (CTest fixture tflite.models)";
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(f);
}

tfl::Network lowered(const std::string& name) {
  const tfl::Model m = tfl::load(model_path(name));
  return tfl::lower(m, name);
}

std::vector<std::string> kinds(const tfl::Network& n) {
  std::vector<std::string> k;
  for (const tfl::Layer& l : n.layers) k.push_back(tfl::kind_name(l.kind));
  return k;
}

const tfl::Tensor& tensor_named(const tfl::Model& m, const std::string& prefix) {
  for (const tfl::Tensor& t : m.subgraphs[0].tensors)
    if (t.name.rfind(prefix, 0) == 0) return t;
  throw std::runtime_error("no tensor " + prefix);
}

// ---- reader ----

TEST(TfliteReader, ReadsEveryGeneratedModel) {
  const nlohmann::json man = manifest();
  ASSERT_GE(man.size(), 20u);
  for (const auto& [name, entry] : man.items()) {
    if (entry["kind"] == "corrupt") continue;
    SCOPED_TRACE(name);
    const tfl::Model m = tfl::load(model_path(name));
    EXPECT_EQ(m.version, 3u);
    ASSERT_EQ(m.subgraphs.size(), 1u);
    EXPECT_FALSE(m.subgraphs[0].operators.empty());
    EXPECT_FALSE(m.subgraphs[0].inputs.empty());
  }
}

TEST(TfliteReader, FullyConnectedModel) {
  const tfl::Model m = tfl::load(model_path("fc_per_tensor"));
  const tfl::Subgraph& g = m.subgraphs[0];
  EXPECT_EQ(g.name, "main");
  ASSERT_EQ(g.operators.size(), 2u);
  const tfl::Operator& fc = g.operators[0];
  EXPECT_EQ(fc.code, tfl::op::kFullyConnected);
  EXPECT_EQ(tfl::builtin_name(fc.code), "FULLY_CONNECTED");
  EXPECT_EQ(fc.options.type, tfl::opt::kFullyConnected);
  EXPECT_EQ(fc.options.activation, tfl::Activation::kRelu);
  EXPECT_EQ(g.operators[1].options.activation, tfl::Activation::kNone);
  ASSERT_EQ(fc.inputs.size(), 3u);
  const tfl::Tensor& x = g.tensors[size_t(fc.inputs[0])];
  EXPECT_EQ(x.type, tfl::TensorType::kInt8);
  EXPECT_EQ(x.shape, (std::vector<int32_t>{4, 24}));
  ASSERT_TRUE(x.q.per_tensor());
  EXPECT_FLOAT_EQ(x.q.scale[0], 0.04f);
  EXPECT_EQ(x.q.zero_point[0], -9);
  EXPECT_TRUE(x.data.empty());
  const tfl::Tensor& w = g.tensors[size_t(fc.inputs[1])];
  EXPECT_EQ(w.shape, (std::vector<int32_t>{16, 24}));
  EXPECT_EQ(w.data.size(), 16u * 24u);
  const tfl::Tensor& b = g.tensors[size_t(fc.inputs[2])];
  EXPECT_EQ(b.type, tfl::TensorType::kInt32);
  EXPECT_EQ(b.data.size(), 16u * 4u);
  EXPECT_EQ(g.inputs, (std::vector<int32_t>{fc.inputs[0]}));
}

TEST(TfliteReader, ConvolutionOptionsAndPerAxisQuantization) {
  const tfl::Model m = tfl::load(model_path("small_cnn"));
  const tfl::Subgraph& g = m.subgraphs[0];
  const tfl::Operator& conv = g.operators[0];
  EXPECT_EQ(conv.code, tfl::op::kConv2d);
  EXPECT_EQ(conv.options.padding, tfl::Padding::kSame);
  EXPECT_EQ(conv.options.stride_h, 1);
  EXPECT_EQ(conv.options.dilation_w, 1);
  const tfl::Tensor& cw = g.tensors[size_t(conv.inputs[1])];
  EXPECT_EQ(cw.q.scale.size(), 4u);
  EXPECT_EQ(cw.q.quantized_dimension, 0);
  const tfl::Operator& dw = g.operators[1];
  EXPECT_EQ(dw.code, tfl::op::kDepthwiseConv2d);
  EXPECT_EQ(dw.options.depth_multiplier, 1);
  EXPECT_EQ(dw.options.activation, tfl::Activation::kRelu6);
  EXPECT_EQ(g.tensors[size_t(dw.inputs[1])].q.quantized_dimension, 3);
  const tfl::Operator& pool = g.operators[2];
  EXPECT_EQ(pool.code, tfl::op::kMaxPool2d);
  EXPECT_EQ(pool.options.filter_h, 2);
  EXPECT_EQ(pool.options.stride_w, 2);
  EXPECT_EQ(pool.options.padding, tfl::Padding::kValid);
  EXPECT_EQ(g.operators[3].code, tfl::op::kShape);
  EXPECT_EQ(g.operators[4].code, tfl::op::kStridedSlice);
  EXPECT_EQ(g.operators[4].options.shrink_axis_mask, 1);
  EXPECT_EQ(g.operators[5].code, tfl::op::kPack);
  EXPECT_EQ(g.operators[5].options.values_count, 2);
  EXPECT_EQ(g.operators[6].code, tfl::op::kReshape);
}

TEST(TfliteReader, DeprecatedAndExtendedBuiltinCodes) {
  const tfl::Model old = tfl::load(model_path("requantize_old_codes"));
  ASSERT_EQ(old.operator_codes.size(), 2u);
  EXPECT_EQ(old.operator_codes[0].deprecated_builtin_code, tfl::op::kQuantize);
  EXPECT_EQ(old.operator_codes[0].builtin_code, 0);  // absent: the field's default
  EXPECT_EQ(old.subgraphs[0].operators[0].code, tfl::op::kQuantize);
  EXPECT_EQ(old.subgraphs[0].operators[1].code, tfl::op::kFullyConnected);
  const tfl::Model ext = tfl::load(model_path("err_extended_code"));
  EXPECT_EQ(ext.operator_codes[0].deprecated_builtin_code, tfl::op::kPlaceholderForGreaterOpCodes);
  EXPECT_EQ(ext.operator_codes[0].builtin_code, 128);
  EXPECT_EQ(ext.subgraphs[0].operators[0].code, 128);
}

TEST(TfliteReader, ReshapeNewShape) {
  const tfl::Model m = tfl::load(model_path("reshape_new_shape"));
  const tfl::Operator& r = m.subgraphs[0].operators[0];
  EXPECT_EQ(r.code, tfl::op::kReshape);
  EXPECT_TRUE(r.options.has_new_shape);
  EXPECT_EQ(r.options.new_shape, (std::vector<int32_t>{-1, 12}));
}

// Files that break the format (scripts/tflite_models.py, kind "corrupt"):
// bad tensor, operator-code and buffer indices, data of the wrong size, and
// a small file whose subgraphs vector names one subgraph 30000 times.
TEST(TfliteReader, CorruptFilesAreOneFormatError) {
  const nlohmann::json man = manifest();
  int corrupt = 0;
  for (const auto& [name, entry] : man.items()) {
    if (entry["kind"] != "corrupt") continue;
    ++corrupt;
    SCOPED_TRACE(name);
    try {
      tfl::load(model_path(name));
      ADD_FAILURE() << "read without an error";
    } catch (const tfl::FormatError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find(": not a valid .tflite model: "), std::string::npos) << what;
      for (const auto& word : entry["contains"]) {
        EXPECT_NE(what.find(word.get<std::string>()), std::string::npos) << what << " lacks " << word;
      }
    }
  }
  EXPECT_GE(corrupt, 5);
}

TEST(TfliteReader, EveryTruncationIsOneFormatError) {
  const std::vector<uint8_t> full = bytes_of("fc_no_bias_relu6");
  for (size_t n = 0; n < full.size(); ++n) {
    const std::span<const uint8_t> prefix(full.data(), n);
    try {
      tfl::parse(prefix, "cut.tflite");
      ADD_FAILURE() << "a prefix of " << n << " of " << full.size() << " bytes was accepted";
    } catch (const tfl::FormatError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("cut.tflite: not a valid .tflite model: ", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(TfliteReader, HandCorruptedHeaders) {
  std::vector<uint8_t> b = bytes_of("fc_per_tensor");
  const auto message = [](const std::vector<uint8_t>& bytes) {
    try {
      tfl::parse(bytes, "m.tflite");
    } catch (const tfl::FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::vector<uint8_t> c = b;
  c[4] = 'X';
  EXPECT_NE(message(c).find("file identifier"), std::string::npos) << message(c);
  c = b;
  const uint32_t far = uint32_t(b.size()) + 100;
  std::memcpy(c.data(), &far, 4);
  EXPECT_NE(message(c).find("past the end of the file"), std::string::npos) << message(c);
  // The root table's vtable offset pointing before the file.
  c = b;
  uint32_t root;
  std::memcpy(&root, b.data(), 4);
  const int32_t soff = int32_t(root) + 1000;
  std::memcpy(c.data() + root, &soff, 4);
  EXPECT_NE(message(c).find("vtable offset points outside the file"), std::string::npos) << message(c);
  EXPECT_NE(message({}).find("too few for a FlatBuffer"), std::string::npos);
}

// Every single byte changed: the reader and the lowering end in their own
// errors or succeed; nothing else (sw/fuzz does this with sanitizers).
TEST(TfliteReader, EveryByteFlipEndsInAnErrorOrAModel) {
  const std::vector<uint8_t> full = bytes_of("small_cnn");
  int rejected = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    std::vector<uint8_t> c = full;
    c[i] ^= 0xA5;
    try {
      const tfl::Model m = tfl::parse(c, "flip.tflite");
      tfl::lower(m, "flip.tflite");
    } catch (const tfl::FormatError&) {
      ++rejected;
    } catch (const tfl::LowerError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, int(full.size() / 10));
}

// ---- lowering ----

TEST(TfliteLower, LayersOfEachModel) {
  EXPECT_EQ(kinds(lowered("fc_per_tensor")), (std::vector<std::string>{"fc", "fc"}));
  EXPECT_EQ(kinds(lowered("small_cnn")),
            (std::vector<std::string>{"conv2d", "depthwise", "maxpool", "reshape", "fc"}));
  EXPECT_EQ(kinds(lowered("float_edges")), (std::vector<std::string>{"quantize", "fc", "dequantize"}));
  EXPECT_EQ(kinds(lowered("requantize_old_codes")), (std::vector<std::string>{"requantize", "fc"}));
  EXPECT_EQ(kinds(lowered("pools")), (std::vector<std::string>{"maxpool", "avgpool"}));
  EXPECT_EQ(kinds(lowered("residual_add")), (std::vector<std::string>{"conv2d", "add"}));
  EXPECT_EQ(kinds(lowered("reshape_new_shape")), (std::vector<std::string>{"reshape", "fc"}));
  const tfl::Network cnn = lowered("small_cnn");
  EXPECT_EQ(cnn.values[size_t(cnn.layers[3].output)].shape, (std::vector<int32_t>{1, 64}));
  EXPECT_EQ(cnn.layers[4].k, 64);
}

TEST(TfliteLower, SamePaddingPutsTheExtraRowBottomRight) {
  const auto pads = [](const tfl::Layer& l) {
    return std::vector<int>{l.pad_top, l.pad_bottom, l.pad_left, l.pad_right};
  };
  EXPECT_EQ(pads(lowered("conv_same_s1").layers[0]), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(pads(lowered("conv_same_s2_asym").layers[0]), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(pads(lowered("conv_same_k2").layers[0]), (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(pads(lowered("conv_valid_s2").layers[0]), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(pads(lowered("pools").layers[1]), (std::vector<int>{0, 1, 0, 1}));
  const tfl::Layer s2 = lowered("conv_same_s2_asym").layers[0];
  EXPECT_EQ(s2.stride_h, 2);
  EXPECT_EQ(s2.k, 3 * 3 * 4);
  EXPECT_EQ(s2.n, 5);
}

// Weights in the driver's layout and bias' = bias - zp_in * sum_k W, from
// the file's own layout.
TEST(TfliteLower, WeightLayoutAndZeroPointFolding) {
  {
    const tfl::Model m = tfl::load(model_path("fc_per_tensor"));
    const tfl::Layer l = tfl::lower(m, "fc").layers[0];
    const tfl::Tensor& w = m.subgraphs[0].tensors[size_t(m.subgraphs[0].operators[0].inputs[1])];
    const tfl::Tensor& b = m.subgraphs[0].tensors[size_t(m.subgraphs[0].operators[0].inputs[2])];
    ASSERT_EQ(l.k, 24);
    ASSERT_EQ(l.n, 16);
    EXPECT_EQ(l.input_zero_point, -9);
    for (int o = 0; o < l.n; ++o) {
      int64_t sum = 0;
      for (int k = 0; k < l.k; ++k) {
        const int8_t v = int8_t(w.data[size_t(o * l.k + k)]);
        EXPECT_EQ(l.w[size_t(k * l.n + o)], v);
        sum += v;
      }
      int32_t bias;
      std::memcpy(&bias, b.data.data() + 4 * o, 4);
      EXPECT_EQ(l.bias[size_t(o)], bias);
      EXPECT_EQ(l.bias_folded[size_t(o)], bias + 9 * sum);
    }
  }
  {
    const tfl::Model m = tfl::load(model_path("conv_same_s2_asym"));
    const tfl::Layer l = tfl::lower(m, "conv").layers[0];
    const tfl::Tensor& w = m.subgraphs[0].tensors[size_t(m.subgraphs[0].operators[0].inputs[1])];
    const int oc = 5, kh = 3, kw = 3, ic = 4;
    for (int o = 0; o < oc; ++o) {
      int64_t sum = 0;
      for (int y = 0; y < kh; ++y)
        for (int x = 0; x < kw; ++x)
          for (int c = 0; c < ic; ++c) {
            const int8_t v = int8_t(w.data[size_t(((o * kh + y) * kw + x) * ic + c)]);
            EXPECT_EQ(l.w[size_t(((y * kw + x) * ic + c) * oc + o)], v);
            sum += v;
          }
      EXPECT_EQ(l.bias_folded[size_t(o)], l.bias[size_t(o)] - 13 * sum);
    }
  }
  {
    const tfl::Layer l = lowered("fc_no_bias_relu6").layers[0];
    for (int o = 0; o < l.n; ++o) {
      int64_t sum = 0;
      for (int k = 0; k < l.k; ++k) sum += l.w[size_t(k * l.n + o)];
      EXPECT_EQ(l.bias[size_t(o)], 0);
      EXPECT_EQ(l.bias_folded[size_t(o)], -11 * sum);
    }
  }
}

TEST(TfliteLower, QuantizeMultiplierAsTflite) {
  const auto qm = [](double r) {
    int32_t m, s;
    tfl::quantize_multiplier(r, &m, &s);
    return std::pair<int32_t, int32_t>(m, s);
  };
  EXPECT_EQ(qm(0.5), std::make_pair(int32_t{1} << 30, 0));
  EXPECT_EQ(qm(0.25), std::make_pair(int32_t{1} << 30, -1));
  EXPECT_EQ(qm(1.0), std::make_pair(int32_t{1} << 30, 1));
  EXPECT_EQ(qm(0.75), std::make_pair(int32_t{1610612736}, 0));
  EXPECT_EQ(qm(0.0), std::make_pair(0, 0));
  EXPECT_EQ(qm(1e-10), std::make_pair(0, 0));  // below 2^-31: flushed to zero
  // A mantissa that rounds up to 2^31 is renormalized.
  EXPECT_EQ(qm(0.99999999999), std::make_pair(int32_t{1} << 30, 1));
}

TEST(TfliteLower, PerChannelRequantAndActivationRange) {
  const tfl::Model m = tfl::load(model_path("conv_same_s1"));
  const tfl::Layer l = tfl::lower(m, "conv").layers[0];
  const tfl::Subgraph& g = m.subgraphs[0];
  const tfl::Tensor& w = g.tensors[size_t(g.operators[0].inputs[1])];
  ASSERT_EQ(l.rq.multiplier.size(), 6u);
  for (size_t o = 0; o < 6; ++o) {
    const double real = double(0.05f) * double(w.q.scale[o]) / double(0.1f);
    const double got = double(l.rq.multiplier[o]) * std::ldexp(1.0, l.rq.shift[o] - 31);
    EXPECT_NEAR(got / real, 1.0, 1e-9) << o;
    EXPECT_GE(l.rq.multiplier[o], 1 << 30);
  }
  EXPECT_NE(l.rq.multiplier[0], l.rq.multiplier[1]);
  EXPECT_EQ(l.rq.zero_point, 4);
  EXPECT_EQ(l.rq.act_min, 4);  // RELU: the zero point
  EXPECT_EQ(l.rq.act_max, 127);
  const tfl::Layer r6 = lowered("fc_no_bias_relu6").layers[0];
  EXPECT_EQ(r6.rq.act_min, -20);
  EXPECT_EQ(r6.rq.act_max, -20 + 120);  // 6 / 0.05
  const tfl::Layer add = lowered("residual_add").layers[1];
  EXPECT_EQ(add.add.left_shift, 20);
  EXPECT_EQ(add.add.in1_offset, 5);
  EXPECT_EQ(add.add.in2_offset, -3);
  EXPECT_EQ(add.add.out_offset, -2);
  EXPECT_EQ(add.add.act_min, -2);
}

TEST(TfliteLower, EveryErrorModelIsOneLineNamingTheOp) {
  const nlohmann::json man = manifest();
  int errors = 0;
  for (const auto& [name, entry] : man.items()) {
    if (entry["kind"] != "error") continue;
    ++errors;
    SCOPED_TRACE(name);
    const tfl::Model m = tfl::load(model_path(name));
    try {
      tfl::lower(m, name + ".tflite");
      ADD_FAILURE() << "lowered without an error";
    } catch (const tfl::LowerError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.rfind(name + ".tflite: ", 0), 0u) << what;
      for (const auto& word : entry["contains"]) {
        EXPECT_NE(what.find(word.get<std::string>()), std::string::npos) << what << " lacks " << word;
      }
    }
  }
  EXPECT_GE(errors, 10);
}

TEST(TfliteLower, DescribeNamesEveryLayer) {
  const std::string text = tfl::describe(lowered("small_cnn"));
  EXPECT_NE(text.find("5 layers"), std::string::npos) << text;
  EXPECT_NE(text.find("conv2d (op 0 CONV_2D)"), std::string::npos) << text;
  EXPECT_NE(text.find("reshape (op 6 RESHAPE)"), std::string::npos) << text;
  EXPECT_NE(text.find("per channel"), std::string::npos) << text;
}

}  // namespace
