// SPDX-License-Identifier: Apache-2.0
// The executor of `tpu infer` (docs/tflite.md): runs a lowered network
// (tflite_lower.h) on a device, a batch of samples at a time.
//
// The GEMM layers run on the TPU through the driver's dense(): FULLY
// CONNECTED directly, CONV_2D as an im2col GEMM (the host lays out the
// patches, padded taps holding the input zero point), DEPTHWISE_CONV_2D as
// the same GEMM with a block-diagonal filter (each output channel's taps
// only in the rows of its input channel). Each requantizes per output
// channel in the VPU. Pooling, ADD, RESHAPE and the QUANTIZE/DEQUANTIZE at
// the edges run on the host, in the integer arithmetic of TFLite's
// reference kernels (tflite_ir_ref.py is the same in numpy).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tpu/device.h"
#include "tpu/ops.h"
#include "tpu/tflite_lower.h"

namespace tpu::tflite {

// An activation on the host, batch first. int8 (i8) or float32 (f32: a
// model's float input before QUANTIZE, or its output after DEQUANTIZE).
struct HostTensor {
  TensorType type = TensorType::kInt8;
  std::vector<int64_t> shape;
  std::vector<int8_t> i8;
  std::vector<float> f32;
  int64_t elements() const;
};

// Where a layer runs: the GEMM layers on the TPU, the others on the host.
bool runs_on_tpu(LayerKind k);

// What running cost, per layer (indices of Network::layers). Host layers
// have zero device statistics. OpStats::macs counts the model's own
// multiply-accumulates (a depthwise layer's block-diagonal zeros are not
// counted), so utilization() is the model's.
struct RunStats {
  std::vector<OpStats> layers;
  OpStats total;
};

// The model's single input and output: a network with more is refused
// (tpu::Error naming `name`, the model file).
void check_single_io(const Network& net, const std::string& name);

// Checks x against the network's input: its type, and its shape, the model
// input's with any count of samples first (dimension 0 is the batch: the
// model's own batch size is not a limit). `what` names x in the message.
void check_input(const Network& net, const HostTensor& x, const std::string& what);

// Runs the network on `dev` over all samples of x at once (callers split a
// large input into batches); returns the network's output, batch first.
// `stats`, when given, gets each layer's cost added.
HostTensor run(Device& dev, const Network& net, const HostTensor& x, RunStats* stats = nullptr);

}  // namespace tpu::tflite
