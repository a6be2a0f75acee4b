// SPDX-License-Identifier: Apache-2.0
// Lowering of the main subgraph to TPU layers (tflite_lower.h, docs/tflite.md).
#include "tpu/tflite_lower.h"

#include "tpu/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace tpu::tflite {

const char* kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::kQuantize: return "quantize";
    case LayerKind::kDequantize: return "dequantize";
    case LayerKind::kRequantize: return "requantize";
    case LayerKind::kFullyConnected: return "fc";
    case LayerKind::kConv2d: return "conv2d";
    case LayerKind::kDepthwiseConv2d: return "depthwise";
    case LayerKind::kMaxPool2d: return "maxpool";
    case LayerKind::kAveragePool2d: return "avgpool";
    case LayerKind::kAdd: return "add";
    case LayerKind::kReshape: return "reshape";
  }
  return "?";
}

void quantize_multiplier(double real, int32_t* multiplier, int32_t* shift) {
  // The driver's own (tpu/quant.h), which the VPU's per-lane registers take.
  const quant::LaneScale s = quant::quantize_multiplier(real);
  *multiplier = s.multiplier;
  *shift = s.exponent;
}

namespace {

std::string shape_text(const std::vector<int32_t>& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

// A constant integer tensor (a shape computation's value).
struct Const {
  std::vector<int64_t> v;
  std::vector<int32_t> shape;
};

// Activation tensors larger than this are refused (their sizes stay in int).
constexpr int64_t kMaxElements = int64_t{1} << 30;
constexpr int kMaxWindow = 1 << 12;  // kernel and pooling windows, per side

class Lowering {
 public:
  Lowering(const Model& m, const std::string& name) : m_(m), name_(name) {}

  Network run() {
    if (m_.subgraphs.empty()) throw LowerError(name_ + ": the model has no subgraph");
    const Subgraph& g = m_.subgraphs[0];
    g_ = &g;
    value_of_.assign(g.tensors.size(), -1);
    for (int32_t t : g.inputs) {
      const Tensor& x = g.tensors[size_t(t)];
      if (x.type != TensorType::kInt8 && x.type != TensorType::kFloat32) {
        throw LowerError(name_ + ": input tensor '" + x.name + "' is " + type_name(x.type) +
                         "; the TPU runs full-int8 models (int8 inputs, or float32 inputs through a QUANTIZE)");
      }
      net_.inputs.push_back(new_value(t));
    }
    for (size_t i = 0; i < g.operators.size(); ++i) {
      op_index_ = int(i);
      lower_op(g.operators[i]);
    }
    op_index_ = -1;
    for (int32_t t : g.outputs) {
      if (value_of_[size_t(t)] < 0) {
        throw LowerError(name_ + ": output tensor '" + g.tensors[size_t(t)].name +
                         "' is not computed by any operator the TPU runs");
      }
      net_.outputs.push_back(value_of_[size_t(t)]);
    }
    if (net_.inputs.empty() || net_.outputs.empty()) {
      throw LowerError(name_ + ": the main subgraph has no " + (net_.inputs.empty() ? "inputs" : "outputs"));
    }
    return std::move(net_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    if (op_index_ < 0 || !cur_) throw LowerError(name_ + ": " + what);
    throw LowerError(name_ + ": op " + std::to_string(op_index_) + " " + builtin_name(cur_->code) + ": " + what);
  }

  const Tensor& tensor(int32_t t) const { return g_->tensors[size_t(t)]; }
  std::string tname(int32_t t) const { return "'" + tensor(t).name + "'"; }

  int new_value(int32_t t) {
    const Tensor& x = tensor(t);
    Value v;
    v.tensor = t;
    v.name = x.name;
    v.shape = x.shape;
    v.type = x.type;
    for (int32_t d : x.shape) {
      if (d < 0) fail("tensor " + tname(t) + " has a dynamic shape (" + shape_text(x.shape) + "); the TPU needs static shapes");
    }
    if (x.elements() > kMaxElements) {
      fail("tensor " + tname(t) + " (" + shape_text(x.shape) + ") has more than " + std::to_string(kMaxElements) + " elements");
    }
    if (x.type == TensorType::kInt8) {
      if (x.q.has_details || !x.q.per_tensor()) {
        fail("tensor " + tname(t) + " is not quantized per tensor (" + std::to_string(x.q.scale.size()) +
             " scales); activations need one scale and one zero point");
      }
      v.scale = x.q.scale[0];
      v.zero_point = int32_t(x.q.zero_point[0]);
      if (!(v.scale > 0) || !std::isfinite(v.scale)) fail("tensor " + tname(t) + " has scale " + std::to_string(v.scale));
      if (v.zero_point < -128 || v.zero_point > 127) {
        fail("tensor " + tname(t) + " has zero point " + std::to_string(v.zero_point) + ", outside int8");
      }
    }
    net_.values.push_back(std::move(v));
    value_of_[size_t(t)] = int(net_.values.size() - 1);
    return value_of_[size_t(t)];
  }

  // The number of inputs and outputs the operator must have.
  void arity(size_t lo, size_t hi, size_t outs) const {
    const Operator& o = *cur_;
    if (o.inputs.size() < lo || o.inputs.size() > hi) {
      fail("has " + std::to_string(o.inputs.size()) + " inputs; expected " + std::to_string(lo) +
           (hi != lo ? ".." + std::to_string(hi) : ""));
    }
    if (o.outputs.size() != outs) {
      fail("has " + std::to_string(o.outputs.size()) + " outputs; expected " + std::to_string(outs));
    }
  }

  void expect_options(std::initializer_list<uint8_t> allowed) const {
    for (uint8_t a : allowed)
      if (cur_->options.type == a) return;
    std::string names;
    for (uint8_t a : allowed) names += (names.empty() ? "" : " or ") + options_name(a);
    fail("unknown builtin options: " + options_name(cur_->options.type) + " (expected " + names + ")");
  }

  // An int8 activation input (computed by an earlier layer or a model input).
  int act_input(size_t j) const {
    const int32_t t = cur_->inputs[j];
    if (t < 0) fail("input " + std::to_string(j) + " is omitted");
    const int v = value_of_[size_t(t)];
    if (v < 0) {
      if (!tensor(t).data.empty() || consts_.count(t)) {
        fail("input " + tname(t) + " is a constant; this operator takes a computed tensor there");
      }
      fail("input " + tname(t) + " is not computed by an earlier operator the TPU runs");
    }
    const Value& x = net_.values[size_t(v)];
    if (x.type == TensorType::kFloat32) {
      fail("input " + tname(t) + " is a float32 tensor; the TPU runs full-int8 models (a float input "
           "needs a QUANTIZE to int8 first)");
    }
    if (x.type != TensorType::kInt8) {
      fail("input " + tname(t) + " is " + type_name(x.type) + "; only int8 activations are supported "
           "(not a full-int8 model)");
    }
    return v;
  }

  // The output tensor as a new int8 (or `type`) value.
  int act_output(TensorType type = TensorType::kInt8) {
    const int32_t t = cur_->outputs[0];
    if (value_of_[size_t(t)] >= 0 || !tensor(t).data.empty()) fail("output " + tname(t) + " is written twice");
    if (tensor(t).type != type) {
      fail("output " + tname(t) + " is " + type_name(tensor(t).type) + "; expected " + type_name(type) +
           (type == TensorType::kInt8 ? " (not a full-int8 model)" : ""));
    }
    return new_value(t);
  }

  // Constant weights: int8, symmetric (zero points 0), per tensor or per
  // channel along `channel_dim`; returns the scales per channel.
  std::vector<float> weight_scales(int32_t t, int channel_dim, int channels) const {
    const Tensor& w = tensor(t);
    if (w.data.empty()) fail("weights " + tname(t) + " are not a constant tensor");
    if (w.type != TensorType::kInt8) {
      fail("weights " + tname(t) + " are " + type_name(w.type) + "; the TPU takes int8 weights (not a full-int8 model)");
    }
    if (w.sparse) fail("weights " + tname(t) + " are sparse; dense weights only");
    if (w.q.has_details || w.q.scale.empty()) fail("weights " + tname(t) + " have no affine quantization");
    for (int64_t z : w.q.zero_point) {
      if (z != 0) fail("weights " + tname(t) + " have zero point " + std::to_string(z) + "; int8 weights must be symmetric (zero point 0)");
    }
    std::vector<float> s;
    if (w.q.scale.size() == 1) {
      s.assign(size_t(channels), w.q.scale[0]);
    } else {
      if (w.q.quantized_dimension != channel_dim || w.q.scale.size() != size_t(channels)) {
        fail("weights " + tname(t) + " have " + std::to_string(w.q.scale.size()) + " scales along dimension " +
             std::to_string(w.q.quantized_dimension) + "; expected 1 or one per output channel (" +
             std::to_string(channels) + ") along dimension " + std::to_string(channel_dim));
      }
      s = w.q.scale;
    }
    for (float x : s)
      if (!(x > 0) || !std::isfinite(x)) fail("weights " + tname(t) + " have scale " + std::to_string(x));
    return s;
  }

  // The bias: int32, n entries, or zeros when the input is omitted.
  std::vector<int32_t> bias(size_t j, int n) const {
    if (cur_->inputs.size() <= j || cur_->inputs[j] < 0) return std::vector<int32_t>(size_t(n), 0);
    const int32_t t = cur_->inputs[j];
    const Tensor& b = tensor(t);
    if (b.data.empty()) fail("bias " + tname(t) + " is not a constant tensor");
    if (b.type != TensorType::kInt32) {
      fail("bias " + tname(t) + " is " + type_name(b.type) + "; int8 layers take an int32 bias (not a full-int8 model)");
    }
    if (b.elements() != n) {
      fail("bias " + tname(t) + " has " + std::to_string(b.elements()) + " entries for " + std::to_string(n) + " outputs");
    }
    std::vector<int32_t> out(static_cast<size_t>(n));
    std::memcpy(out.data(), b.data.data(), size_t(n) * 4);
    return out;
  }

  // CalculateActivationRangeQuantized for an int8 output.
  void activation_range(Activation a, const Value& out, int32_t* lo, int32_t* hi) const {
    const auto q = [&](float f) {
      const double r = double(out.zero_point) + double(std::round(f / out.scale));
      return int32_t(std::clamp(r, -1e9, 1e9));
    };
    *lo = -128;
    *hi = 127;
    switch (a) {
      case Activation::kNone: break;
      case Activation::kRelu: *lo = std::max(*lo, q(0.0f)); break;
      case Activation::kRelu6: *lo = std::max(*lo, q(0.0f)); *hi = std::min(*hi, q(6.0f)); break;
      case Activation::kReluN1To1: *lo = std::max(*lo, q(-1.0f)); *hi = std::min(*hi, q(1.0f)); break;
      default: fail("fused activation " + activation_name(a) + " is not supported (NONE, RELU, RELU6, RELU_N1_TO_1 are)");
    }
  }

  void check_shape(const Value& out, const std::vector<int32_t>& want) const {
    if (out.shape != want) {
      fail("wrong shapes: output '" + out.name + "' is " + shape_text(out.shape) + " but the inputs give " + shape_text(want));
    }
  }

  void requant(Layer& l, const Value& in, const Value& out, const std::vector<float>& wscale) {
    l.rq.multiplier.resize(wscale.size());
    l.rq.shift.resize(wscale.size());
    for (size_t o = 0; o < wscale.size(); ++o) {
      const double real = double(in.scale) * double(wscale[o]) / double(out.scale);
      multiplier(real, &l.rq.multiplier[o], &l.rq.shift[o]);
    }
    l.rq.zero_point = out.zero_point;
    activation_range(cur_->options.activation, out, &l.rq.act_min, &l.rq.act_max);
  }

  // quantize_multiplier for a scale ratio the kernels can apply.
  void multiplier(double real, int32_t* m, int32_t* shift) const {
    if (!std::isfinite(real) || real < 0) fail("a rescale factor is " + std::to_string(real));
    quantize_multiplier(real, m, shift);
    if (*shift > 30) fail("a rescale factor of " + std::to_string(real) + " is too large");
  }

  void fold_bias(Layer& l) {
    l.bias_folded.resize(size_t(l.n));
    for (int o = 0; o < l.n; ++o) {
      int64_t sum = 0;
      for (int k = 0; k < l.k; ++k) sum += l.w[size_t(k) * size_t(l.n) + size_t(o)];
      const int64_t folded = int64_t(l.bias[size_t(o)]) - int64_t(l.input_zero_point) * sum;
      if (folded < std::numeric_limits<int32_t>::min() || folded > std::numeric_limits<int32_t>::max()) {
        fail("the folded bias of channel " + std::to_string(o) + " (" + std::to_string(folded) + ") does not fit int32");
      }
      l.bias_folded[size_t(o)] = int32_t(folded);
    }
  }

  // Output size and padding of a window over one spatial axis (TFLite's
  // ComputeOutSize and ComputePaddingWithOffset, dilation 1).
  void window(int64_t in, int64_t k, int64_t stride, Padding p, int* out, int* before, int* after) const {
    int64_t o = 0;
    if (p == Padding::kSame) {
      o = (in + stride - 1) / stride;
    } else if (p == Padding::kValid) {
      o = in >= k ? (in - k + stride) / stride : 0;
    } else {
      fail("padding " + std::to_string(int(p)) + " is neither SAME nor VALID");
    }
    if (o <= 0) fail("wrong shapes: a " + std::to_string(k) + "-wide window does not fit an input of " + std::to_string(in));
    const int64_t total = std::max<int64_t>(0, (o - 1) * stride + k - in);
    if (total > in + k) fail("padding of " + std::to_string(total) + " is too large");
    *out = int(o);
    *before = int(total / 2);
    *after = int(total - total / 2);
  }

  void spatial(Layer& l, const Value& in, int kh, int kw) {
    const Options& o = cur_->options;
    if (o.dilation_h != 1 || o.dilation_w != 1) {
      fail("dilation " + std::to_string(o.dilation_h) + "x" + std::to_string(o.dilation_w) + " is not supported (only 1)");
    }
    if (o.stride_h < 1 || o.stride_w < 1) {
      fail("strides " + std::to_string(o.stride_h) + "x" + std::to_string(o.stride_w) + " must be at least 1");
    }
    if (kh < 1 || kw < 1 || kh > kMaxWindow || kw > kMaxWindow) {
      fail("a " + std::to_string(kh) + "x" + std::to_string(kw) + " window is not supported (1.." + std::to_string(kMaxWindow) + " per side)");
    }
    if (in.shape.size() != 4) fail("wrong shapes: input '" + in.name + "' is " + shape_text(in.shape) + "; expected NHWC");
    l.kh = kh;
    l.kw = kw;
    l.stride_h = o.stride_h;
    l.stride_w = o.stride_w;
    l.padding = o.padding;
    int oh = 0, ow = 0;
    window(in.shape[1], kh, o.stride_h, o.padding, &oh, &l.pad_top, &l.pad_bottom);
    window(in.shape[2], kw, o.stride_w, o.padding, &ow, &l.pad_left, &l.pad_right);
    out_hw_ = {oh, ow};
  }

  // ---- the operators ----

  void lower_op(const Operator& o) {
    cur_ = &o;
    if (o.code == op::kCustom) {
      const std::string& c = m_.operator_codes[o.opcode_index].custom_code;
      fail("custom operator '" + c + "' is not supported");
    }
    switch (o.code) {
      case op::kFullyConnected: return fully_connected();
      case op::kConv2d: return conv2d();
      case op::kDepthwiseConv2d: return depthwise();
      case op::kMaxPool2d: return pool(LayerKind::kMaxPool2d);
      case op::kAveragePool2d: return pool(LayerKind::kAveragePool2d);
      case op::kAdd: return add();
      case op::kReshape: return reshape();
      case op::kQuantize: return quantize();
      case op::kDequantize: return dequantize();
      case op::kShape: return shape();
      case op::kStridedSlice: return strided_slice();
      case op::kPack: return pack();
      default:
        fail("not supported on the TPU (supported: FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, "
             "AVERAGE_POOL_2D, ADD, RESHAPE, QUANTIZE, DEQUANTIZE, and SHAPE/STRIDED_SLICE/PACK on constants)");
    }
  }

  Layer begin(LayerKind kind) const {
    Layer l;
    l.kind = kind;
    l.op_index = op_index_;
    l.op = builtin_name(cur_->code);
    return l;
  }

  void fully_connected() {
    arity(2, 3, 1);
    expect_options({opt::kNone, opt::kFullyConnected});
    if (cur_->options.weights_format != 0) fail("shuffled weights (weights_format " + std::to_string(cur_->options.weights_format) + ") are not supported");
    Layer l = begin(LayerKind::kFullyConnected);
    const int in = act_input(0);
    const int32_t wt = cur_->inputs[1];
    if (wt < 0) fail("the weights are omitted");
    const Tensor& w = tensor(wt);
    if (w.shape.size() != 2 || w.shape[0] < 1 || w.shape[1] < 1) {
      fail("wrong shapes: weights " + tname(wt) + " are " + shape_text(w.shape) + "; expected outputs x inputs");
    }
    l.n = w.shape[0];
    l.k = w.shape[1];
    const std::vector<float> ws = weight_scales(wt, 0, l.n);
    const Value& x = net_.values[size_t(in)];
    int64_t elems = 1;
    for (int32_t d : x.shape) elems *= d;
    if (elems % l.k != 0) {
      fail("wrong shapes: input '" + x.name + "' (" + shape_text(x.shape) + ") is not a whole number of rows of " + std::to_string(l.k));
    }
    std::vector<int32_t> want;
    if (cur_->options.keep_num_dims) {
      want = x.shape;
      if (want.empty() || want.back() != l.k) fail("wrong shapes: keep_num_dims needs the input's last dimension to be " + std::to_string(l.k));
      want.back() = l.n;
    } else {
      want = {int32_t(elems / l.k), l.n};
    }
    l.bias = bias(2, l.n);
    const int out = act_output();
    check_shape(net_.values[size_t(out)], want);
    l.w.resize(size_t(l.k) * size_t(l.n));
    const auto* src = reinterpret_cast<const int8_t*>(w.data.data());
    for (int o = 0; o < l.n; ++o)
      for (int k = 0; k < l.k; ++k) l.w[size_t(k) * size_t(l.n) + size_t(o)] = src[size_t(o) * size_t(l.k) + size_t(k)];
    add_weighted(std::move(l), in, out, ws);
  }

  // The end of every layer with weights: the input zero point folded into
  // the bias, the per-channel requantization, the layer added.
  void add_weighted(Layer l, int in, int out, const std::vector<float>& ws) {
    l.input_zero_point = net_.values[size_t(in)].zero_point;
    fold_bias(l);
    requant(l, net_.values[size_t(in)], net_.values[size_t(out)], ws);
    l.inputs = {in};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  void conv2d() {
    arity(2, 3, 1);
    expect_options({opt::kConv2d});
    Layer l = begin(LayerKind::kConv2d);
    const int in = act_input(0);
    const int32_t wt = cur_->inputs[1];
    if (wt < 0) fail("the filter is omitted");
    const Tensor& w = tensor(wt);
    if (w.shape.size() != 4 || w.elements() <= 0) {
      fail("wrong shapes: filter " + tname(wt) + " is " + shape_text(w.shape) + "; expected OC x KH x KW x IC");
    }
    const int oc = w.shape[0], kh = w.shape[1], kw = w.shape[2], ic = w.shape[3];
    const std::vector<float> ws = weight_scales(wt, 0, oc);
    spatial(l, net_.values[size_t(in)], kh, kw);
    const std::vector<int32_t> xs = net_.values[size_t(in)].shape;
    if (xs[3] != ic) {
      fail("wrong shapes: input '" + net_.values[size_t(in)].name + "' has " + std::to_string(xs[3]) +
           " channels but the filter takes " + std::to_string(ic) + " (grouped convolution is not supported)");
    }
    l.bias = bias(2, oc);
    const int out = act_output();
    check_shape(net_.values[size_t(out)], {xs[0], out_hw_[0], out_hw_[1], oc});
    l.k = kh * kw * ic;
    l.n = oc;
    l.w.resize(size_t(l.k) * size_t(l.n));
    const auto* src = reinterpret_cast<const int8_t*>(w.data.data());
    for (int o = 0; o < oc; ++o)
      for (int y = 0; y < kh; ++y)
        for (int x = 0; x < kw; ++x)
          for (int c = 0; c < ic; ++c) {
            const size_t row = (size_t(y) * size_t(kw) + size_t(x)) * size_t(ic) + size_t(c);
            l.w[row * size_t(oc) + size_t(o)] = src[((size_t(o) * size_t(kh) + size_t(y)) * size_t(kw) + size_t(x)) * size_t(ic) + size_t(c)];
          }
    add_weighted(std::move(l), in, out, ws);
  }

  void depthwise() {
    arity(2, 3, 1);
    expect_options({opt::kDepthwiseConv2d});
    Layer l = begin(LayerKind::kDepthwiseConv2d);
    const int in = act_input(0);
    const int32_t wt = cur_->inputs[1];
    if (wt < 0) fail("the filter is omitted");
    const Tensor& w = tensor(wt);
    if (w.shape.size() != 4 || w.shape[0] != 1 || w.elements() <= 0) {
      fail("wrong shapes: filter " + tname(wt) + " is " + shape_text(w.shape) + "; expected 1 x KH x KW x OC");
    }
    const int kh = w.shape[1], kw = w.shape[2], oc = w.shape[3];
    const std::vector<float> ws = weight_scales(wt, 3, oc);
    spatial(l, net_.values[size_t(in)], kh, kw);
    const std::vector<int32_t> xs = net_.values[size_t(in)].shape;
    const int dm = cur_->options.depth_multiplier;
    if (dm < 1 || int64_t(xs[3]) * dm != oc) {
      fail("wrong shapes: depth_multiplier " + std::to_string(dm) + " times the input's " + std::to_string(xs[3]) +
           " channels is not the filter's " + std::to_string(oc) + " output channels");
    }
    l.depth_multiplier = dm;
    l.bias = bias(2, oc);
    const int out = act_output();
    check_shape(net_.values[size_t(out)], {xs[0], out_hw_[0], out_hw_[1], oc});
    l.k = kh * kw;
    l.n = oc;
    const auto* src = reinterpret_cast<const int8_t*>(w.data.data());
    l.w.assign(src, src + size_t(l.k) * size_t(l.n));  // already (ky*KW + kx) x OC
    add_weighted(std::move(l), in, out, ws);
  }

  void pool(LayerKind kind) {
    arity(1, 1, 1);
    expect_options({opt::kPool2d});
    Layer l = begin(kind);
    const int in = act_input(0);
    spatial(l, net_.values[size_t(in)], cur_->options.filter_h, cur_->options.filter_w);
    const std::vector<int32_t> xs = net_.values[size_t(in)].shape;
    const int out = act_output();
    const Value& y = net_.values[size_t(out)];
    check_shape(y, {xs[0], out_hw_[0], out_hw_[1], xs[3]});
    const Value& x = net_.values[size_t(in)];
    if (x.scale != y.scale || x.zero_point != y.zero_point) {
      fail("the output's quantization (scale " + std::to_string(y.scale) + ", zero point " + std::to_string(y.zero_point) +
           ") differs from the input's (" + std::to_string(x.scale) + ", " + std::to_string(x.zero_point) + "); pooling does not rescale");
    }
    l.rq.zero_point = y.zero_point;
    activation_range(cur_->options.activation, y, &l.rq.act_min, &l.rq.act_max);
    l.inputs = {in};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  void add() {
    arity(2, 2, 1);
    expect_options({opt::kNone, opt::kAdd});
    Layer l = begin(LayerKind::kAdd);
    const int a = act_input(0), b = act_input(1);
    const int out = act_output();
    const Value &x1 = net_.values[size_t(a)], &x2 = net_.values[size_t(b)], &y = net_.values[size_t(out)];
    if (x1.shape != x2.shape) {
      fail("wrong shapes: the inputs are " + shape_text(x1.shape) + " and " + shape_text(x2.shape) + " (broadcasting is not supported)");
    }
    check_shape(y, x1.shape);
    // As TFLite's Prepare of an int8 ADD (left shift 20).
    AddParams& p = l.add;
    p.left_shift = 20;
    p.in1_offset = -x1.zero_point;
    p.in2_offset = -x2.zero_point;
    p.out_offset = y.zero_point;
    const double twice_max = 2.0 * double(std::max(x1.scale, x2.scale));
    const double r1 = double(x1.scale) / twice_max, r2 = double(x2.scale) / twice_max;
    const double ro = twice_max / (double(1 << p.left_shift) * double(y.scale));
    multiplier(r1, &p.in1_multiplier, &p.in1_shift);
    multiplier(r2, &p.in2_multiplier, &p.in2_shift);
    multiplier(ro, &p.out_multiplier, &p.out_shift);
    if (p.in1_shift > 0 || p.in2_shift > 0 || p.out_shift > 0) {
      fail("the output scale " + std::to_string(y.scale) + " is too small for the inputs' (a rescale above 1)");
    }
    activation_range(cur_->options.activation, y, &p.act_min, &p.act_max);
    l.rq.zero_point = y.zero_point;
    l.rq.act_min = p.act_min;
    l.rq.act_max = p.act_max;
    l.inputs = {a, b};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  void reshape() {
    arity(1, 2, 1);
    expect_options({opt::kNone, opt::kReshape});
    Layer l = begin(LayerKind::kReshape);
    const int in = act_input(0);
    std::vector<int64_t> want;
    if (cur_->inputs.size() == 2 && cur_->inputs[1] >= 0) {
      const std::optional<Const> c = constant(cur_->inputs[1]);
      if (!c) fail("the new shape " + tname(cur_->inputs[1]) + " is computed at run time; only constant shapes are supported");
      want = c->v;
    } else if (cur_->options.has_new_shape) {
      want.assign(cur_->options.new_shape.begin(), cur_->options.new_shape.end());
    }
    const Value x = net_.values[size_t(in)];  // a copy: act_output() grows values
    int64_t elems = 1;
    for (int32_t d : x.shape) elems *= d;
    const int out = act_output();
    const Value& y = net_.values[size_t(out)];
    if (!want.empty()) {  // resolve one -1 and compare with the output tensor
      int64_t known = 1;
      int unknown = -1;
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] == -1 && unknown < 0) unknown = int(i);
        else if (want[i] < 0 || want[i] > kMaxElements) fail("the new shape has dimension " + std::to_string(want[i]));
        else if ((known *= want[i]) > kMaxElements) fail("the new shape holds more than " + std::to_string(kMaxElements) + " elements");
      }
      if (unknown >= 0 && known > 0) want[size_t(unknown)] = elems / known;
      std::vector<int32_t> w32(want.begin(), want.end());
      check_shape(y, w32);
    }
    int64_t out_elems = 1;
    for (int32_t d : y.shape) out_elems *= d;
    if (out_elems != elems) {
      fail("wrong shapes: " + shape_text(x.shape) + " cannot be reshaped to " + shape_text(y.shape));
    }
    if (x.scale != y.scale || x.zero_point != y.zero_point) fail("the output's quantization differs from the input's");
    l.inputs = {in};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  void quantize() {
    arity(1, 1, 1);
    expect_options({opt::kNone, opt::kQuantize});
    const int32_t t = cur_->inputs[0];
    const int v = t >= 0 ? value_of_[size_t(t)] : -1;
    if (v >= 0 && net_.values[size_t(v)].type == TensorType::kFloat32) {
      // float32 -> int8 on the host, only right at a model input
      bool model_input = false;
      for (int i : net_.inputs) model_input |= i == v;
      if (!model_input) fail("quantizes the float tensor " + tname(t) + " in the middle of the model; only at an input");
      Layer l = begin(LayerKind::kQuantize);
      const int out = act_output();
      check_shape(net_.values[size_t(out)], net_.values[size_t(v)].shape);
      l.scale = net_.values[size_t(out)].scale;
      l.zero_point = net_.values[size_t(out)].zero_point;
      l.inputs = {v};
      l.output = out;
      net_.layers.push_back(std::move(l));
      return;
    }
    Layer l = begin(LayerKind::kRequantize);
    const int in = act_input(0);
    const int out = act_output();
    const Value &x = net_.values[size_t(in)], &y = net_.values[size_t(out)];
    check_shape(y, x.shape);
    l.rq.multiplier.resize(1);
    l.rq.shift.resize(1);
    multiplier(double(x.scale) / double(y.scale), &l.rq.multiplier[0], &l.rq.shift[0]);
    l.rq.zero_point = y.zero_point;
    l.input_zero_point = x.zero_point;
    l.inputs = {in};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  void dequantize() {
    arity(1, 1, 1);
    expect_options({opt::kNone, opt::kDequantize});
    Layer l = begin(LayerKind::kDequantize);
    const int in = act_input(0);
    const int out = act_output(TensorType::kFloat32);
    bool model_output = false;
    for (int32_t t : g_->outputs) model_output |= t == cur_->outputs[0];
    if (!model_output) fail("dequantizes in the middle of the model; only at an output");
    check_shape(net_.values[size_t(out)], net_.values[size_t(in)].shape);
    l.scale = net_.values[size_t(in)].scale;
    l.zero_point = net_.values[size_t(in)].zero_point;
    l.inputs = {in};
    l.output = out;
    net_.layers.push_back(std::move(l));
  }

  // ---- constant folding of shape computations ----

  // A constant integer tensor: folded earlier, or int32/int64 data in the file.
  std::optional<Const> constant(int32_t t) const {
    if (t < 0) return std::nullopt;
    if (auto it = consts_.find(t); it != consts_.end()) return it->second;
    const Tensor& x = tensor(t);
    if (x.data.empty() || value_of_[size_t(t)] >= 0) return std::nullopt;
    Const c;
    c.shape = x.shape;
    const int64_t n = x.elements();
    if (x.type == TensorType::kInt32) {
      for (int64_t i = 0; i < n; ++i) {
        int32_t v;
        std::memcpy(&v, x.data.data() + 4 * i, 4);
        c.v.push_back(v);
      }
    } else if (x.type == TensorType::kInt64) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, x.data.data() + 8 * i, 8);
        c.v.push_back(v);
      }
    } else {
      return std::nullopt;
    }
    return c;
  }

  Const need_constant(size_t j) const {
    if (cur_->inputs.size() <= j || cur_->inputs[j] < 0) fail("input " + std::to_string(j) + " is omitted");
    const std::optional<Const> c = constant(cur_->inputs[j]);
    if (!c) {
      fail("input " + tname(cur_->inputs[j]) + " is not a constant integer tensor; shape operators are folded "
           "at load time and take constants only");
    }
    return *c;
  }

  void set_constant(Const c) {
    const int32_t t = cur_->outputs[0];
    const Tensor& x = tensor(t);
    if (x.type != TensorType::kInt32 && x.type != TensorType::kInt64) {
      fail("output " + tname(t) + " is " + type_name(x.type) + "; expected int32");
    }
    if (x.has_shape && x.shape != c.shape) {
      fail("wrong shapes: output " + tname(t) + " is " + shape_text(x.shape) + " but folding gives " + shape_text(c.shape));
    }
    consts_[t] = std::move(c);
  }

  void shape() {
    arity(1, 1, 1);
    expect_options({opt::kNone, opt::kShape});
    const int32_t t = cur_->inputs[0];
    if (t < 0) fail("input 0 is omitted");
    const std::vector<int32_t> s = value_of_[size_t(t)] >= 0 ? net_.values[size_t(value_of_[size_t(t)])].shape : tensor(t).shape;
    Const c;
    for (int32_t d : s) {
      if (d < 0) fail("the shape of " + tname(t) + " is dynamic (" + shape_text(s) + ")");
      c.v.push_back(d);
    }
    c.shape = {int32_t(s.size())};
    set_constant(std::move(c));
  }

  void strided_slice() {
    arity(4, 4, 1);
    expect_options({opt::kNone, opt::kStridedSlice});
    const Options& o = cur_->options;
    const Const in = need_constant(0), b = need_constant(1), e = need_constant(2), s = need_constant(3);
    if (in.shape.size() != 1) fail("folds 1-D tensors only; input is " + shape_text(in.shape));
    if (b.v.size() != 1 || e.v.size() != 1 || s.v.size() != 1) fail("begin, end and strides must have one entry for a 1-D input");
    if (o.ellipsis_mask || o.new_axis_mask || o.offset) fail("ellipsis, new-axis masks and offset are not supported when folding");
    const int64_t n = int64_t(in.v.size()), st = s.v[0];
    if (st == 0) fail("stride 0");
    int64_t lo = b.v[0], hi = e.v[0];
    const auto clampi = [](int64_t v, int64_t a, int64_t z) { return std::min(std::max(v, a), z); };
    if (o.begin_mask & 1) lo = st > 0 ? 0 : n - 1;
    else lo = st > 0 ? clampi(lo < 0 ? lo + n : lo, 0, n) : clampi(lo < 0 ? lo + n : lo, -1, n - 1);
    Const c;
    if (o.shrink_axis_mask & 1) {
      int64_t i = b.v[0] < 0 ? b.v[0] + n : b.v[0];
      if (i < 0 || i >= n) fail("index " + std::to_string(b.v[0]) + " is outside a " + std::to_string(n) + "-entry vector");
      c.v = {in.v[size_t(i)]};
      set_constant(std::move(c));
      return;
    }
    if (o.end_mask & 1) hi = st > 0 ? n : -1;
    else hi = st > 0 ? clampi(hi < 0 ? hi + n : hi, 0, n) : clampi(hi < 0 ? hi + n : hi, -1, n - 1);
    for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) c.v.push_back(in.v[size_t(i)]);
    c.shape = {int32_t(c.v.size())};
    set_constant(std::move(c));
  }

  void pack() {
    if (cur_->inputs.empty()) fail("has no inputs");
    arity(1, cur_->inputs.size(), 1);
    expect_options({opt::kPack});
    if (cur_->options.axis != 0) fail("folds along axis 0 only (axis " + std::to_string(cur_->options.axis) + ")");
    Const c;
    for (size_t j = 0; j < cur_->inputs.size(); ++j) {
      const Const x = need_constant(j);
      if (!x.shape.empty() && !(x.shape.size() == 1 && x.shape[0] == 1)) fail("folds scalars only; input " + std::to_string(j) + " is " + shape_text(x.shape));
      c.v.push_back(x.v.at(0));
    }
    c.shape = {int32_t(c.v.size())};
    set_constant(std::move(c));
  }

  const Model& m_;
  std::string name_;
  const Subgraph* g_ = nullptr;
  const Operator* cur_ = nullptr;
  int op_index_ = -1;
  std::vector<int> value_of_;
  std::map<int32_t, Const> consts_;
  std::array<int, 2> out_hw_{};
  Network net_;
};

std::string quant_text(const Value& v) {
  if (v.type != TensorType::kInt8) return type_name(v.type);
  char buf[96];
  std::snprintf(buf, sizeof buf, "int8 (scale %.9g, zp %d)", double(v.scale), v.zero_point);
  return buf;
}

}  // namespace

Network lower(const Model& m, const std::string& name) { return Lowering(m, name).run(); }

std::string describe(const Network& net) {
  std::ostringstream s;
  const auto val = [&](int i) { return "'" + net.values[size_t(i)].name + "' " + shape_text(net.values[size_t(i)].shape); };
  for (int i : net.inputs) s << "input  " << val(i) << " " << quant_text(net.values[size_t(i)]) << "\n";
  for (int i : net.outputs) s << "output " << val(i) << " " << quant_text(net.values[size_t(i)]) << "\n";
  s << net.layers.size() << " layers:\n";
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    s << "  " << i << ": " << kind_name(l.kind) << " (op " << l.op_index << " " << l.op << ") ";
    for (size_t j = 0; j < l.inputs.size(); ++j) s << (j ? " + " : "") << val(l.inputs[j]);
    s << " -> " << val(l.output);
    switch (l.kind) {
      case LayerKind::kFullyConnected:
      case LayerKind::kConv2d:
      case LayerKind::kDepthwiseConv2d: {
        s << "; K=" << l.k << " N=" << l.n;
        if (l.kind != LayerKind::kFullyConnected) {
          s << ", " << l.kh << "x" << l.kw << " stride " << l.stride_h << "x" << l.stride_w << " "
            << (l.padding == Padding::kSame ? "SAME" : "VALID") << " pad t" << l.pad_top << " b" << l.pad_bottom
            << " l" << l.pad_left << " r" << l.pad_right;
          if (l.kind == LayerKind::kDepthwiseConv2d) s << " depth_multiplier " << l.depth_multiplier;
        }
        bool per_channel = false;
        for (size_t o = 1; o < l.rq.multiplier.size(); ++o)
          per_channel |= l.rq.multiplier[o] != l.rq.multiplier[0] || l.rq.shift[o] != l.rq.shift[0];
        if (!l.rq.multiplier.empty()) {
          s << ", requant " << (per_channel ? "per channel" : "per tensor") << " M0=" << l.rq.multiplier[0]
            << " shift=" << l.rq.shift[0] << (per_channel ? " (channel 0)" : "");
        }
        s << ", zp in " << l.input_zero_point << " out " << l.rq.zero_point << ", clamp [" << l.rq.act_min
          << ", " << l.rq.act_max << "]";
        break;
      }
      case LayerKind::kMaxPool2d:
      case LayerKind::kAveragePool2d:
        s << "; " << l.kh << "x" << l.kw << " stride " << l.stride_h << "x" << l.stride_w << " "
          << (l.padding == Padding::kSame ? "SAME" : "VALID") << " pad t" << l.pad_top << " b" << l.pad_bottom
          << " l" << l.pad_left << " r" << l.pad_right << ", clamp [" << l.rq.act_min << ", " << l.rq.act_max << "]";
        break;
      case LayerKind::kAdd:
        s << "; M0 " << l.add.in1_multiplier << "/" << l.add.in2_multiplier << "/" << l.add.out_multiplier
          << " shift " << l.add.in1_shift << "/" << l.add.in2_shift << "/" << l.add.out_shift << ", clamp ["
          << l.add.act_min << ", " << l.add.act_max << "]";
        break;
      case LayerKind::kRequantize:
        s << "; M0=" << l.rq.multiplier[0] << " shift=" << l.rq.shift[0] << ", zp in " << l.input_zero_point
          << " out " << l.rq.zero_point;
        break;
      case LayerKind::kQuantize:
      case LayerKind::kDequantize: {
        char buf[64];
        std::snprintf(buf, sizeof buf, "; scale %.9g zp %d", double(l.scale), l.zero_point);
        s << buf;
        break;
      }
      case LayerKind::kReshape: break;
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace tpu::tflite
