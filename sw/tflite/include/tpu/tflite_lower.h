// SPDX-License-Identifier: Apache-2.0
// Lowering of a full-int8 .tflite model to TPU layers (docs/tflite.md): the
// intermediate form the executor of `tpu infer` consumes.
//
// lower() walks the main subgraph in operator order, folds the shape-only
// operators (SHAPE, STRIDED_SLICE, PACK on constants, as the converter emits
// them around a Flatten), checks every operator against what the TPU runs
// and produces one Layer per remaining operator with its int8 parameters:
// weights laid out for the driver's GEMMs, int32 biases with the input zero
// point folded in, TFLite's per-channel requantization (multiplier and
// shift exactly as its reference kernels compute them), padding, strides,
// pooling windows, ADD's rescaling. Anything it cannot map is one LowerError,
// one line that names the operator and its index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpu/tflite.h"

namespace tpu::tflite {

class LowerError : public Error {
 public:
  using Error::Error;
};

enum class LayerKind {
  kQuantize,        // float32 -> int8 at an input (on the host)
  kDequantize,      // int8 -> float32 at an output (on the host)
  kRequantize,      // int8 -> int8 with another scale/zero point (QUANTIZE between int8 tensors)
  kFullyConnected,  // GEMM
  kConv2d,          // im2col GEMM
  kDepthwiseConv2d,
  kMaxPool2d,
  kAveragePool2d,
  kAdd,             // element-wise, both inputs rescaled
  kReshape,         // no data movement (NHWC order kept)
};
const char* kind_name(LayerKind k);

// An activation between layers: a tensor of the main subgraph.
struct Value {
  int32_t tensor = -1;          // index in the subgraph
  std::string name;
  std::vector<int32_t> shape;   // static; dimension 0 is the batch
  TensorType type = TensorType::kInt8;
  float scale = 0;              // per-tensor quantization
  int32_t zero_point = 0;
};

// TFLite's MultiplyByQuantizedMultiplier per output channel:
//   out = clamp(zero_point + RDBP(SRDHM(x * 2^max(shift,0), multiplier), max(-shift,0)),
//               act_min, act_max)
// shift > 0 is a left shift (TFLite's sign convention), 0 < multiplier < 2^31
// (or 0 for a scale of 0). One entry per output channel (per-tensor
// weights repeat their one value).
struct Requant {
  std::vector<int32_t> multiplier;
  std::vector<int32_t> shift;
  int32_t zero_point = 0;
  int32_t act_min = -128, act_max = 127;  // the fused activation folded into the clamp
};

// ADD of two int8 tensors as TFLite's reference kernel computes it:
//   a' = RDBP(SRDHM((a + in1_offset) << left_shift, in1_multiplier), -in1_shift)
//   b' likewise, out = clamp(out_offset + RDBP(SRDHM(a' + b', out_multiplier), -out_shift), act_min, act_max)
// (the shifts are <= 0: right shifts).
struct AddParams {
  int32_t left_shift = 20;
  int32_t in1_offset = 0, in1_multiplier = 0, in1_shift = 0;
  int32_t in2_offset = 0, in2_multiplier = 0, in2_shift = 0;
  int32_t out_offset = 0, out_multiplier = 0, out_shift = 0;
  int32_t act_min = -128, act_max = 127;
};

struct Layer {
  LayerKind kind = LayerKind::kReshape;
  int op_index = -1;        // the operator's index in the main subgraph
  std::string op;           // its builtin name
  std::vector<int> inputs;  // indices into Network::values (activations only)
  int output = -1;

  // FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D: out[o] = requant(sum_k W[k][o] * x[k] + bias_folded[o])
  // with x the raw int8 input (padded taps hold the input zero point).
  int k = 0;                 // inputs per output (FC: depth; conv: KH*KW*C; depthwise: KH*KW)
  int n = 0;                 // outputs (channels)
  std::vector<int8_t> w;     // k x n, row-major (w[k * n + o]); conv rows are (ky*KW + kx)*C + c
                             // (the driver's im2col order), depthwise rows ky*KW + kx
  std::vector<int32_t> bias;         // n: the model's bias (zeros when it has none)
  std::vector<int32_t> bias_folded;  // n: bias[o] - zp_in * sum_k W[k][o]
  int32_t input_zero_point = 0;
  Requant rq;                // also kRequantize (one channel)

  // CONV_2D, DEPTHWISE_CONV_2D, MAX_POOL_2D, AVERAGE_POOL_2D
  int kh = 0, kw = 0;        // kernel or pooling window
  int stride_h = 1, stride_w = 1;
  Padding padding = Padding::kValid;
  int pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;  // SAME: the extra row/column goes bottom/right
  int depth_multiplier = 1;  // DEPTHWISE_CONV_2D: output channel o reads input channel o / depth_multiplier

  AddParams add;             // ADD

  // QUANTIZE (float -> int8), DEQUANTIZE (int8 -> float): the int8 side's quantization
  float scale = 0;
  int32_t zero_point = 0;
};

struct Network {
  std::vector<Value> values;
  std::vector<Layer> layers;
  std::vector<int> inputs, outputs;  // indices into values: the subgraph's inputs and outputs
};

// The main subgraph of `m` lowered; `name` (the file) starts every message.
Network lower(const Model& m, const std::string& name);

// TFLite's QuantizeMultiplier: m * 2^shift == real (m Q31, shift > 0 left).
void quantize_multiplier(double real, int32_t* multiplier, int32_t* shift);

// A human-readable listing, one line per layer, for `tpu tflite-info`.
std::string describe(const Network& net);

}  // namespace tpu::tflite
