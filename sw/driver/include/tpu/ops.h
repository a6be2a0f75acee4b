// SPDX-License-Identifier: Apache-2.0
// Operators on the TPU: each tiles its operands to the array size (zero
// padding), builds the programs, runs them and returns exact results.
// Programs are scheduled so DMA overlaps compute: A is double-buffered in the
// unified buffer, weight tiles stream ahead through the weight FIFO, and
// results leave through alternating accumulator and UB regions.
//
// int8 arithmetic is the core's: int32 accumulation, then (for the int8
// outputs) bias, requantization and activation exactly as quant.h's act_lane.
// bf16 arithmetic (matmul_bf16) is the core's too: bf16 products exact in
// fp32, fp32 sums in the documented order (docs/numerics.md), bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tpu/bf16.h"
#include "tpu/device.h"
#include "tpu/matrix.h"
#include "tpu/quant.h"

namespace tpu {

// MatrixI8, MatrixI32 and MatrixBf16 (bf16 bits: float_to_bf16 and
// bf16_to_float convert) are tpu/matrix.h's.
using MatrixF32 = Matrix<float>;
using quant::LaneScale;
using quant::QuantParams;
using Activation = quant::Act;

// What an operator cost on the device. Every field sums over the GEMMs an
// operator ran (operator+=); tpu/roofline.h turns them into a lower bound.
struct OpStats {
  uint64_t cycles = 0;        // device cycles from the first submission to the last completion
  uint64_t commands = 0;      // programs run
  uint64_t instructions = 0;  // instructions in those programs
  uint64_t macs = 0;          // multiply-accumulates the math needs (M*K*N)
  uint64_t read_bytes = 0;    // the packed A and W images (GemmPlan::a_bytes + w_bytes):
                              // each crosses the link to the device at least once
  uint64_t write_bytes = 0;   // the packed C image (GemmPlan::c_bytes), written once
  uint64_t array_cycles = 0;  // rows the MXU must take, one a cycle at best:
                              // M * ceil(K/n) * ceil(N/n)
  int n = 0;                  // array size
  PerfCounters counters;      // summed over the commands
  // The fraction of the array's peak (n*n MACs a cycle) spent on the math:
  // macs / (cycles * n * n). Zero padding of partial tiles does not count.
  double utilization() const;
  // The fraction of the peak the array was fed, padding counted:
  // counters.useful_macs / (cycles * n * n) (the device's counter, n*n per
  // row the MXU took). >= utilization(); equal when n divides K and N.
  double array_utilization() const;

  OpStats& operator+=(const OpStats& o);
};

// C = A * B: int8 A (M x K), int8 B (K x N), int32 C (M x N).
MatrixI32 matmul(Device& dev, const MatrixI8& a, const MatrixI8& b, OpStats* stats = nullptr);

// C = A * B in bf16 on a device with a bf16 datapath (DeviceInfo::bf16):
// A (M x K) and B (K x N) as bf16 bits, C (M x N) as fp32. Each element is
// exactly the core's sum (docs/numerics.md, "bf16 through the core"): K
// zero-padded to a multiple of n, each block of n products summed in fp32 from
// +0 down an MXU column, the blocks' sums added in K order; subnormal inputs
// read as zero, tiny results flushed, every NaN the canonical 0x7FC00000. The
// fp32 results are the accumulators' bits (ACT RAW). Throws tpu::Error when
// the device has no bf16 datapath, and for shapes as matmul does.
MatrixF32 matmul_bf16(Device& dev, const MatrixBf16& a, const MatrixBf16& b, OpStats* stats = nullptr);
// The same GEMM with the results rounded to bf16 on the device (ACT F32,
// nearest even; NaN 0x7FC0): half the bytes back, exactly
// fp32_to_bf16(matmul_bf16(...)).
MatrixBf16 matmul_bf16_to_bf16(Device& dev, const MatrixBf16& a, const MatrixBf16& b, OpStats* stats = nullptr);
// A bf16 dense layer y = act(x*W + bias) in fp32: each element is
// vpu_f32::act_lane(s, bias[j]) of matmul_bf16's sum s (docs/isa.md, ACT F32:
// bias added with fp32_add, SCALE 1, ReLU max(y, +0) with NaN kept, ReLU6 also
// min(y, 6)); bias is empty (nothing added, so -0 stays -0) or has N
// entries; act is none, relu or relu6. ACT F32 RAW on the device: the
// reference model has it, the RTL's VPU not yet (docs/numerics.md).
MatrixF32 dense_bf16(Device& dev, const MatrixBf16& x, const MatrixBf16& w, const std::vector<float>& bias,
                     Activation act = Activation::kNone, OpStats* stats = nullptr);

// Independent products C[i] = A[i] * B[i] (int8 x int8 -> int32, any shapes)
// as one stream of commands. Consecutive products that fit are fused into
// batches: one software-pipelined instruction stream (a few programs) whose
// units overlap from one product to the next, the batch's A, W and C images
// in one buffer each (docs/driver.md, "Fused products"); a product that does
// not fit (L too large for the unified buffer in one load) runs alone with
// its own buffers and programs. The commands are submitted in order with up
// to `depth` in flight (0: as many as the device holds,
// Device::max_in_flight()), the oldest waited for whenever the limit is
// reached, so the device goes from one command to the next without a host
// round trip. A batch's buffers are allocated when its first command is
// submitted and freed once its results are read. stats sums the products
// (cycles: from the first submission to the last completion; commands and
// instructions: the fused commands'); its counters are the device's only
// with depth 1, else only counters.cycles (the completions' cycles) is
// filled. When a command fails, no further one is submitted, those queued
// are completed and the first failure is thrown as a DeviceError
// (Device::run's).
std::vector<MatrixI32> matmul_batch(Device& dev, std::span<const MatrixI8> a, std::span<const MatrixI8> b,
                                    OpStats* stats = nullptr, size_t depth = 0);

// Requantized: C[i][j] = act_lane((A*B)[i][j], bias[j], q, act). bias is empty
// (zeros) or has N entries. This is a dense layer y = act(x*W + b).
MatrixI8 dense(Device& dev, const MatrixI8& x, const MatrixI8& w, const std::vector<int32_t>& bias,
               const QuantParams& q, Activation act = Activation::kNone, OpStats* stats = nullptr);
inline MatrixI8 matmul_requant(Device& dev, const MatrixI8& a, const MatrixI8& b,
                               const QuantParams& q, OpStats* stats = nullptr) {
  return dense(dev, a, b, {}, q, Activation::kNone, stats);
}

// Per-channel requantization (TFLite's int8 CONV_2D and FULLY_CONNECTED):
// output column j is scaled by scales[j] (M0 and TFLite's shift: > 0 left,
// <= 0 right; quant::quantize_multiplier makes one from a real scale), so
//   C[i][j] = act_lane((A*B)[i][j], bias[j], scales[j], q, act).
// scales has N entries, each shift in -31..31; q.multiplier and q.shift are
// not used (zero point, clamp and ReLU6 bound come from q).
MatrixI8 dense(Device& dev, const MatrixI8& x, const MatrixI8& w, const std::vector<int32_t>& bias,
               const std::vector<LaneScale>& scales, const QuantParams& q,
               Activation act = Activation::kNone, OpStats* stats = nullptr);
inline MatrixI8 matmul_requant(Device& dev, const MatrixI8& a, const MatrixI8& b,
                               const std::vector<LaneScale>& scales, const QuantParams& q,
                               OpStats* stats = nullptr) {
  return dense(dev, a, b, {}, scales, q, Activation::kNone, stats);
}

// NHWC int8 activations.
struct TensorI8 {
  int n = 0, h = 0, w = 0, c = 0;
  std::vector<int8_t> data;  // n*h*w*c, NHWC order
  TensorI8() = default;
  TensorI8(int n_, int h_, int w_, int c_, int8_t fill = 0)
      : n(n_), h(h_), w(w_), c(c_), data(size_t(n_) * h_ * w_ * c_, fill) {}
  int8_t& at(int b, int y, int x, int ch) { return data[((size_t(b) * h + y) * w + x) * c + ch]; }
  int8_t at(int b, int y, int x, int ch) const { return data[((size_t(b) * h + y) * w + x) * c + ch]; }
};

struct Conv2dParams {
  int kh = 1, kw = 1;          // kernel size
  int stride = 1;
  int pad = 0;                 // rows/columns of padding on every side
  int8_t pad_value = 0;        // the input's zero point
};

// 2-D convolution by im2col: the host lays out the patches as a matrix
// (N*OH*OW x KH*KW*C) and the TPU multiplies it by the weights.
// weights: (KH*KW*C) x OC, row index (ky*KW + kx)*C + c. Output N x OH x OW x OC.
TensorI8 conv2d(Device& dev, const TensorI8& input, const MatrixI8& weights,
                const std::vector<int32_t>& bias, const Conv2dParams& p, const QuantParams& q,
                Activation act = Activation::kNone, OpStats* stats = nullptr);
// Per-channel requantization: output channel oc scaled by scales[oc] (OC
// entries), as dense above.
TensorI8 conv2d(Device& dev, const TensorI8& input, const MatrixI8& weights,
                const std::vector<int32_t>& bias, const Conv2dParams& p,
                const std::vector<LaneScale>& scales, const QuantParams& q,
                Activation act = Activation::kNone, OpStats* stats = nullptr);
// The patch matrix conv2d multiplies (also the CPU reference's input).
MatrixI8 im2col(const TensorI8& input, const Conv2dParams& p);

// A quantized multi-layer perceptron: dense layers with int8 weights, int32
// bias, per-layer requantization and activation, all on the TPU. Each layer's
// int8 output is the next layer's input; the last layer's are the logits.
struct DenseLayer {
  MatrixI8 w;                 // in x out
  std::vector<int32_t> bias;  // out
  QuantParams q;              // requantization to the next layer's input
  Activation act = Activation::kRelu;
};

// How Mlp::run runs a batch. By default it chains the layers on the device
// when the network fits and the planner expects that to be faster
// (docs/driver.md, "Chained MLP").
struct MlpOptions {
  enum class Chain {
    kAuto,    // chained when it fits and (unless step is given) is estimated faster than layer by layer
    kNever,   // layer by layer: one dense() per layer
    kAlways,  // chained; tpu::Error when the network does not fit
  };
  Chain chain = Chain::kAuto;
  int step = 0;      // samples per device step when chained, at most the batch (0: the planner's choice)
  bool loop = true;  // repeat steps with a device LOOP when the program allows it
};

// What Mlp::run does with a batch (Mlp::plan).
struct MlpPlan {
  bool chained = false;
  std::string reason;          // why it runs layer by layer (empty when chained)
  int step = 0;                // chained: samples per step (the last step is padded)
  int steps = 0;               // chained: steps
  int loop_iterations = 0;     // chained: LOOP iterations of two steps each (0: unrolled)
  int commands = 0;            // chained: programs, each one command
  int instructions = 0;        // chained: instructions in them
  int ub_rows = 0;             // chained: unified-buffer rows a step pair uses
  uint64_t chained_estimate = 0;    // the planner's estimates of the cycles (0: not estimated)
  uint64_t per_layer_estimate = 0;
};

class Mlp {
 public:
  explicit Mlp(std::vector<DenseLayer> layers);
  const std::vector<DenseLayer>& layers() const { return layers_; }
  int inputs() const;
  int outputs() const;

  // x: batch x inputs. Returns batch x outputs int8 logits. Chained (one
  // command for the whole batch when its program fits the instruction
  // memory) or layer by layer, as plan() says; the results are the same.
  MatrixI8 run(Device& dev, const MatrixI8& x, OpStats* stats = nullptr, const MlpOptions& options = {}) const;
  // What run() does with `batch` samples on a device like `info`. Throws
  // tpu::Error for kAlways when the network does not chain.
  MlpPlan plan(const DeviceInfo& info, int batch, const MlpOptions& options = {}) const;
  // The same arithmetic on the CPU (quant.h), the int8 reference.
  MatrixI8 run_reference(const MatrixI8& x) const;

 private:
  std::vector<DenseLayer> layers_;
};

}  // namespace tpu
