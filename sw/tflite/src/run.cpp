// SPDX-License-Identifier: Apache-2.0
// The executor of `tpu infer`: a lowered network run layer by layer, the
// GEMMs on the device, the rest on the host (tflite_run.h, docs/tflite.md).
#include "tpu/tflite_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tpu/host_size.h"
#include "tpu/quant.h"

namespace tpu::tflite {
namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t.empty() ? "a scalar" : t;
}

// A value's shape with `batch` samples (dimension 0 is the batch).
std::vector<int64_t> batched(const Value& v, int64_t batch) {
  std::vector<int64_t> s(v.shape.begin(), v.shape.end());
  if (!s.empty()) s[0] = batch;
  return s;
}

int64_t product(const std::vector<int64_t>& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

// The requantization of a GEMM layer as the driver takes it.
std::vector<LaneScale> lane_scales(const Layer& l) {
  std::vector<LaneScale> s(size_t(l.n));
  for (size_t o = 0; o < s.size(); ++o) s[o] = {l.rq.multiplier[o], l.rq.shift[o]};
  return s;
}

QuantParams out_params(const Layer& l) {
  QuantParams q;
  q.zero_point = l.rq.zero_point;
  q.qmin = l.rq.act_min;
  q.qmax = l.rq.act_max;
  return q;
}

// The patches of an NHWC input, one row per output pixel (b, oy, ox), one
// column per tap and input channel ((ky*KW + kx)*C + c, the layers' weight
// rows); taps outside the input hold `pad` (the input zero point, which
// the folded bias cancels).
MatrixI8 patches(const HostTensor& x, const Layer& l, int oh, int ow) {
  const int nb = int(x.shape[0]), h = int(x.shape[1]), w = int(x.shape[2]), c = int(x.shape[3]);
  MatrixI8 p(nb * oh * ow, l.kh * l.kw * c);
  const int8_t pad = int8_t(l.input_zero_point);
  for (int b = 0; b < nb; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        int8_t* row = &p.at((b * oh + oy) * ow + ox, 0);
        for (int ky = 0; ky < l.kh; ++ky)
          for (int kx = 0; kx < l.kw; ++kx) {
            const int iy = oy * l.stride_h - l.pad_top + ky, ix = ox * l.stride_w - l.pad_left + kx;
            int8_t* tap = row + (ky * l.kw + kx) * c;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) {
              std::fill_n(tap, c, pad);
            } else {
              std::copy_n(&x.i8[((size_t(b) * h + iy) * w + ix) * c], c, tap);
            }
          }
      }
  return p;
}

// The layer's weights as the GEMM's K x N matrix. A depthwise filter
// (KH*KW x OC) becomes the block-diagonal KH*KW*C x OC matrix whose column
// o holds its taps in the rows of input channel o / depth_multiplier:
// the other rows are zero, so the GEMM's sums are the depthwise sums.
MatrixI8 gemm_weights(const Layer& l, int in_channels) {
  if (l.kind != LayerKind::kDepthwiseConv2d) {
    MatrixI8 w(l.k, l.n);
    std::copy(l.w.begin(), l.w.end(), w.data.begin());
    return w;
  }
  MatrixI8 w(l.k * in_channels, l.n);
  for (int t = 0; t < l.k; ++t)
    for (int o = 0; o < l.n; ++o) w.at(t * in_channels + o / l.depth_multiplier, o) = l.w[size_t(t) * l.n + o];
  return w;
}

HostTensor gemm_layer(Device& dev, const Layer& l, const HostTensor& x, const std::vector<int64_t>& out_shape,
                      OpStats* stats) {
  MatrixI8 a;
  int in_channels = 0;
  if (l.kind == LayerKind::kFullyConnected) {
    a = MatrixI8(int(x.elements() / l.k), l.k);
    std::copy(x.i8.begin(), x.i8.end(), a.data.begin());
  } else {
    in_channels = int(x.shape[3]);
    a = patches(x, l, int(out_shape[1]), int(out_shape[2]));
  }
  OpStats s;
  const MatrixI8 y = dense(dev, a, gemm_weights(l, in_channels), l.bias_folded, lane_scales(l), out_params(l),
                           quant::Act::kNone, &s);
  if (l.kind == LayerKind::kDepthwiseConv2d) s.macs = uint64_t(a.rows) * uint64_t(l.k) * uint64_t(l.n);
  if (stats) *stats += s;
  HostTensor out;
  out.shape = out_shape;
  out.i8 = y.data;
  if (int64_t(out.i8.size()) != product(out_shape)) {
    throw Error("infer: op " + std::to_string(l.op_index) + " " + l.op + " gave " + std::to_string(out.i8.size()) +
                " values for an output of shape " + shape_text(out_shape));
  }
  return out;
}

// MAX_POOL_2D and AVERAGE_POOL_2D as TFLite's reference kernels: windows
// skip padded taps, the average divides by the taps inside the input
// (rounding half away from zero, C division).
HostTensor pool_layer(const Layer& l, const HostTensor& x, const std::vector<int64_t>& out_shape) {
  const int nb = int(x.shape[0]), h = int(x.shape[1]), w = int(x.shape[2]), c = int(x.shape[3]);
  const int oh = int(out_shape[1]), ow = int(out_shape[2]);
  HostTensor out;
  out.shape = out_shape;
  out.i8.resize(size_t(product(out_shape)));
  for (int b = 0; b < nb; ++b)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox)
        for (int ch = 0; ch < c; ++ch) {
          int32_t best = -128, sum = 0, count = 0;
          for (int ky = 0; ky < l.kh; ++ky)
            for (int kx = 0; kx < l.kw; ++kx) {
              const int iy = oy * l.stride_h - l.pad_top + ky, ix = ox * l.stride_w - l.pad_left + kx;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              const int32_t v = x.i8[((size_t(b) * h + iy) * w + ix) * c + ch];
              best = std::max(best, v);
              sum += v;
              ++count;
            }
          int32_t v = best;
          if (l.kind == LayerKind::kAveragePool2d) {
            // A window with no tap inside the input cannot occur with
            // TFLite's padding rules; it averages to 0 rather than divide by 0.
            v = count == 0 ? 0 : (sum > 0 ? sum + count / 2 : sum - count / 2) / count;
          }
          out.i8[((size_t(b) * oh + oy) * ow + ox) * c + ch] = int8_t(std::clamp(v, l.rq.act_min, l.rq.act_max));
        }
  return out;
}

// ADD as TFLite's int8 reference kernel: both inputs shifted left 20 bits
// and rescaled to a common scale, added, rescaled to the output.
HostTensor add_layer(const Layer& l, const HostTensor& a, const HostTensor& b) {
  const AddParams& p = l.add;
  HostTensor out;
  out.shape = a.shape;
  out.i8.resize(a.i8.size());
  for (size_t i = 0; i < a.i8.size(); ++i) {
    const int32_t sa = (int32_t{a.i8[i]} + p.in1_offset) * (int32_t{1} << p.left_shift);
    const int32_t sb = (int32_t{b.i8[i]} + p.in2_offset) * (int32_t{1} << p.left_shift);
    const int32_t ra = quant::multiply_by_quantized_multiplier(sa, p.in1_multiplier, p.in1_shift);
    const int32_t rb = quant::multiply_by_quantized_multiplier(sb, p.in2_multiplier, p.in2_shift);
    const int32_t raw = quant::multiply_by_quantized_multiplier(ra + rb, p.out_multiplier, p.out_shift) + p.out_offset;
    out.i8[i] = int8_t(std::clamp(raw, p.act_min, p.act_max));
  }
  return out;
}

HostTensor host_layer(const Layer& l, const std::vector<const HostTensor*>& in,
                      const std::vector<int64_t>& out_shape) {
  const HostTensor& x = *in[0];
  HostTensor out;
  out.shape = out_shape;
  switch (l.kind) {
    case LayerKind::kMaxPool2d:
    case LayerKind::kAveragePool2d: return pool_layer(l, x, out_shape);
    case LayerKind::kAdd: return add_layer(l, x, *in[1]);
    case LayerKind::kReshape:
      out.type = x.type;
      out.i8 = x.i8;
      out.f32 = x.f32;
      break;
    case LayerKind::kRequantize:
      out.i8.resize(x.i8.size());
      for (size_t i = 0; i < x.i8.size(); ++i) {
        const int32_t v = quant::multiply_by_quantized_multiplier(int32_t{x.i8[i]} - l.input_zero_point,
                                                                  l.rq.multiplier[0], l.rq.shift[0]);
        out.i8[i] = quant::sat8(int64_t{v} + l.rq.zero_point);
      }
      break;
    case LayerKind::kQuantize:
      // TFLite's AffineQuantize: round(x / scale) in float, half away from zero.
      out.i8.resize(x.f32.size());
      for (size_t i = 0; i < x.f32.size(); ++i) {
        // NaN has no int8 value; it becomes the zero point (the real 0).
        const float q = std::round(x.f32[i] / l.scale);
        out.i8[i] = std::isnan(q)      ? int8_t(quant::sat8(l.zero_point))
                    : q >= 256.0f      ? int8_t(127)
                    : q <= -256.0f     ? int8_t(-128)
                                       : quant::sat8(int64_t(q) + l.zero_point);
      }
      break;
    case LayerKind::kDequantize:
      out.type = TensorType::kFloat32;
      out.f32.resize(x.i8.size());
      for (size_t i = 0; i < x.i8.size(); ++i)
        out.f32[i] = float(double(l.scale) * double(int32_t{x.i8[i]} - l.zero_point));
      break;
    default: throw Error("infer: op " + std::to_string(l.op_index) + " " + l.op + " is not a host layer");
  }
  return out;
}

}  // namespace

int64_t HostTensor::elements() const { return product(shape); }

bool runs_on_tpu(LayerKind k) {
  return k == LayerKind::kFullyConnected || k == LayerKind::kConv2d || k == LayerKind::kDepthwiseConv2d;
}

void check_single_io(const Network& net, const std::string& name) {
  if (net.inputs.size() != 1 || net.outputs.size() != 1) {
    throw Error(name + ": the model has " + std::to_string(net.inputs.size()) + " inputs and " +
                std::to_string(net.outputs.size()) + " outputs; tpu infer runs models with one of each");
  }
  const int64_t batch = net.values[size_t(net.inputs[0])].shape.empty() ? -1 : net.values[size_t(net.inputs[0])].shape[0];
  for (const Layer& l : net.layers) {
    const Value& v = net.values[size_t(l.output)];
    if (v.shape.empty() || v.shape[0] != batch) {
      throw Error(name + ": op " + std::to_string(l.op_index) + " " + l.op + " gives '" + v.name + "' of shape " +
                  shape_text(std::vector<int64_t>(v.shape.begin(), v.shape.end())) +
                  ", whose first dimension is not the batch (" + std::to_string(batch) +
                  "); tpu infer needs dimension 0 to be the batch throughout");
    }
  }
}

void check_input(const Network& net, const HostTensor& x, const std::string& what) {
  const Value& in = net.values[size_t(net.inputs[0])];
  if (x.type != in.type) {
    std::string hint;
    if (in.type == TensorType::kInt8 && x.type == TensorType::kFloat32) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " (quantize it: round(x / %.9g) %c %d, clamped to int8)", double(in.scale),
                    in.zero_point < 0 ? '-' : '+', std::abs(in.zero_point));
      hint = buf;
    }
    throw Error(what + " is " + type_name(x.type) + " but the model's input '" + in.name + "' is " +
                type_name(in.type) + hint);
  }
  std::vector<int64_t> want = batched(in, x.shape.empty() ? 0 : x.shape[0]);
  if (x.shape.size() != want.size() || !std::equal(x.shape.begin() + 1, x.shape.end(), want.begin() + 1) ||
      x.shape.empty() || x.shape[0] < 1) {
    std::vector<int64_t> sample(want.begin() + (want.empty() ? 0 : 1), want.end());
    throw Error(what + " has shape " + shape_text(x.shape) + " but the model's input '" + in.name + "' takes " +
                "samples of shape " + shape_text(sample) + ": give (samples, " +
                [&] {
                  std::string t;
                  for (size_t i = 0; i < sample.size(); ++i) t += (i ? ", " : "") + std::to_string(sample[i]);
                  return t;
                }() +
                ")");
  }
}

// Every array the batch makes, sized before the first layer runs: the
// model's shapes times the batch can be more than the memory holds.
void check_sizes(const Network& net, int64_t batch) {
  for (const Layer& l : net.layers) {
    const Value& v = net.values[size_t(l.output)];
    const std::vector<int64_t> shape = batched(v, batch);
    const std::string what =
        "infer: op " + std::to_string(l.op_index) + " " + l.op + " for " + std::to_string(batch) + " samples";
    checked_bytes(what + ": its output '" + v.name + "'", shape, v.type == TensorType::kFloat32 ? 4 : 1,
                  type_name(v.type).c_str());
    if (runs_on_tpu(l.kind) && l.kind != LayerKind::kFullyConnected && shape.size() == 4) {
      const auto& in = net.values[size_t(l.inputs[0])].shape;
      const int64_t taps = int64_t(l.kh) * l.kw * (in.size() == 4 ? int64_t(in[3]) : 1);
      checked_bytes(what + ": its im2col patches", {shape[0] * shape[1] * shape[2], taps}, 1, "int8");
    }
  }
}

HostTensor run(Device& dev, const Network& net, const HostTensor& x, RunStats* stats) {
  check_input(net, x, "the input");
  const int64_t batch = x.shape[0];
  check_sizes(net, batch);
  std::vector<HostTensor> data(net.values.size());
  std::vector<bool> have(net.values.size(), false);
  data[size_t(net.inputs[0])] = x;
  have[size_t(net.inputs[0])] = true;
  if (stats) {
    stats->layers.resize(net.layers.size());
    stats->total.n = dev.info().n;
  }
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    std::vector<const HostTensor*> in;
    for (int v : l.inputs) {
      if (!have[size_t(v)]) {
        throw Error("infer: op " + std::to_string(l.op_index) + " " + l.op + " reads '" + net.values[size_t(v)].name +
                    "' before any layer computes it");
      }
      in.push_back(&data[size_t(v)]);
    }
    const std::vector<int64_t> out_shape = batched(net.values[size_t(l.output)], batch);
    OpStats s;
    s.n = dev.info().n;
    HostTensor y = runs_on_tpu(l.kind) ? gemm_layer(dev, l, *in[0], out_shape, &s) : host_layer(l, in, out_shape);
    if (y.elements() != int64_t(y.type == TensorType::kFloat32 ? y.f32.size() : y.i8.size())) {
      throw Error("infer: op " + std::to_string(l.op_index) + " " + l.op + " gave a result of the wrong size");
    }
    data[size_t(l.output)] = std::move(y);
    have[size_t(l.output)] = true;
    if (stats) {
      stats->layers[i] += s;
      stats->total += s;
    }
  }
  if (!have[size_t(net.outputs[0])]) throw Error("infer: no layer computes the model's output");
  return std::move(data[size_t(net.outputs[0])]);
}

}  // namespace tpu::tflite
