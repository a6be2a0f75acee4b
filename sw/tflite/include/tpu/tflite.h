// SPDX-License-Identifier: Apache-2.0
// A reader of TensorFlow Lite model files (.tflite), plain C++ (docs/tflite.md).
//
// A .tflite file is a FlatBuffer whose root table is the Model of TFLite's
// public schema. This reader walks the FlatBuffer itself (no generated code,
// no FlatBuffers library): every offset, vtable, vector length and string
// is checked against the file's bounds before it is followed, so a corrupt
// or truncated file ends in one tflite::FormatError naming the file and
// what was wrong, never a crash or undefined behaviour. It copies what it
// reads into the value types below; the bytes can go away afterwards.
//
// What it reads: tensors (name, shape, type, buffer data, per-tensor or
// per-axis quantization), operator codes (the deprecated 8-bit and the
// extended 32-bit builtin code), operators with their inputs, outputs and
// the builtin options of the operators the TPU lowers (tflite_lower.h),
// the subgraphs' inputs and outputs. Other options are kept as their union
// type only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tpu/error.h"

namespace tpu::tflite {

// A file that is not a well-formed .tflite model: truncated, an offset or a
// length past the end, a table whose vtable is malformed, an index to a
// tensor or buffer that does not exist.
class FormatError : public Error {
 public:
  using Error::Error;
};

// TensorType of the schema (the values are the file's).
enum class TensorType : int8_t {
  kFloat32 = 0, kFloat16 = 1, kInt32 = 2, kUint8 = 3, kInt64 = 4, kString = 5, kBool = 6,
  kInt16 = 7, kComplex64 = 8, kInt8 = 9, kFloat64 = 10, kComplex128 = 11, kUint64 = 12,
  kResource = 13, kVariant = 14, kUint32 = 15, kUint16 = 16, kInt4 = 17,
};
// "int8", "float32", ...; "type 42" for a value the schema does not name.
std::string type_name(TensorType t);
// Bytes per element, 0 for the types without a fixed size (string, int4, ...).
int type_size(TensorType t);

// BuiltinOperator codes of the operators this project names (the schema's values).
namespace op {
constexpr int32_t kAdd = 0, kAveragePool2d = 1, kConv2d = 3, kDepthwiseConv2d = 4, kDequantize = 6,
                  kFullyConnected = 9, kMaxPool2d = 17, kReshape = 22, kStridedSlice = 45,
                  kShape = 77, kPack = 83, kQuantize = 114, kPlaceholderForGreaterOpCodes = 127,
                  kCustom = 32;
}  // namespace op
// "CONV_2D", ...; "BUILTIN_<n>" for a code this reader has no name for.
std::string builtin_name(int32_t code);

// BuiltinOptions union types of the options read here.
namespace opt {
constexpr uint8_t kNone = 0, kConv2d = 1, kDepthwiseConv2d = 2, kPool2d = 5, kFullyConnected = 8,
                  kAdd = 11, kReshape = 17, kStridedSlice = 32, kDequantize = 38, kShape = 55,
                  kPack = 59, kQuantize = 89;
}  // namespace opt
// "Conv2DOptions", ...; "options type <n>" for the others.
std::string options_name(uint8_t type);

enum class Padding : int8_t { kSame = 0, kValid = 1 };
// ActivationFunctionType: NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT.
enum class Activation : int8_t { kNone = 0, kRelu = 1, kReluN1To1 = 2, kRelu6 = 3, kTanh = 4, kSignBit = 5 };
std::string activation_name(Activation a);

// The builtin options of one operator. `type` is the union type found in
// the file (opt::kNone when it has none); the fields are filled for the
// types in opt:: and keep the schema's defaults otherwise.
struct Options {
  uint8_t type = opt::kNone;
  // Conv2D, DepthwiseConv2D, Pool2D
  Padding padding = Padding::kSame;
  int32_t stride_w = 0, stride_h = 0;
  int32_t dilation_w = 1, dilation_h = 1;  // Conv2D, DepthwiseConv2D
  int32_t depth_multiplier = 0;            // DepthwiseConv2D
  int32_t filter_w = 0, filter_h = 0;      // Pool2D
  Activation activation = Activation::kNone;  // Conv, Depthwise, Pool, FullyConnected, Add
  // FullyConnected
  int8_t weights_format = 0;  // 0 DEFAULT, 1 SHUFFLED4x16INT8
  bool keep_num_dims = false;
  bool asymmetric_quantize_inputs = false;
  // Reshape
  bool has_new_shape = false;
  std::vector<int32_t> new_shape;
  // StridedSlice
  int32_t begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_axis_mask = 0;
  bool offset = false;
  // Pack
  int32_t values_count = 0, axis = 0;
  // Shape
  TensorType out_type = TensorType::kInt32;
};

// Affine quantization: real = scale * (q - zero_point). Per tensor when
// scale has one entry, per axis (quantized_dimension) when it has one per
// slice of that axis.
struct Quantization {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int32_t quantized_dimension = 0;
  bool has_details = false;  // a custom quantization (details union): not affine
  bool empty() const { return scale.empty() && zero_point.empty(); }
  bool per_tensor() const { return scale.size() == 1 && zero_point.size() == 1; }
};

struct Tensor {
  std::string name;
  std::vector<int32_t> shape;  // -1 marks a dynamic dimension
  bool has_shape = false;      // the file gave a shape vector
  TensorType type = TensorType::kFloat32;
  uint32_t buffer = 0;         // index into the model's buffers; 0 is the empty buffer
  std::vector<uint8_t> data;   // the buffer's bytes: a constant tensor; empty otherwise
  Quantization q;
  bool is_variable = false;
  bool sparse = false;         // has sparsity parameters (not supported downstream)
  int64_t elements() const;    // product of shape; -1 when a dimension is negative or it overflows
};

struct OperatorCode {
  int8_t deprecated_builtin_code = 0;
  int32_t builtin_code = 0;  // the extended field (0 in files from before it existed)
  std::string custom_code;
  int32_t version = 1;
  // The code in effect: the larger of the two fields, as TFLite reads them
  // (the deprecated field saturates at 127, PLACEHOLDER_FOR_GREATER_OP_CODES).
  int32_t code() const;
};

struct Operator {
  uint32_t opcode_index = 0;
  int32_t code = 0;  // the OperatorCode's code(), filled by the reader
  std::vector<int32_t> inputs, outputs;  // tensor indices; -1 is an omitted optional input
  Options options;
  bool has_custom_options = false;
};

struct Subgraph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<int32_t> inputs, outputs;
  std::vector<Operator> operators;
};

struct Model {
  uint32_t version = 0;  // the schema version (3 for every current file)
  std::string description;
  std::vector<OperatorCode> operator_codes;
  std::vector<Subgraph> subgraphs;  // [0] is the main subgraph
};

// Limits of what the reader takes: the file size, and the memory it fills
// (tables at 256 bytes each, vectors and data at their size, counted each
// time they are read): at most kMemoryPerByte per byte of file plus
// kMemorySlack. A FlatBuffer is a graph, so a small file whose tables name
// one large table over and over would otherwise make it allocate without
// bound. A real model's weights count about twice (read, then copied).
constexpr uint64_t kMaxModelBytes = uint64_t{256} << 20;  // 256 MiB
constexpr uint64_t kMemoryPerByte = 16;
constexpr uint64_t kMemorySlack = uint64_t{1} << 20;  // 1 MiB

// The model in `bytes`; `name` (the file's path) starts every message.
// Throws FormatError for anything malformed.
Model parse(std::span<const uint8_t> bytes, const std::string& name);
// The file read (a regular file of at most kMaxModelBytes) and parsed;
// tpu::Error when it cannot be read.
Model load(const std::string& path);

}  // namespace tpu::tflite
