// SPDX-License-Identifier: Apache-2.0
// The .tflite reader (tflite.h): a bounds-checked walk over the FlatBuffer.
//
// FlatBuffer layout facts used here (little-endian throughout):
//   - byte 0: uint32 offset of the root table; bytes 4..7 may hold the file
//     identifier ("TFL3").
//   - a table starts with an int32 soffset: its vtable is at table - soffset.
//     The vtable is uint16 words: its own size in bytes, the table's inline
//     size, then one offset per field id (0: the field is absent and takes
//     its default), relative to the table's start.
//   - a field that refers to a table, vector or string holds a uint32
//     offset relative to the field's own position.
//   - a vector (and a string) is a uint32 element count followed by the
//     elements; a string's bytes are followed by a NUL, not counted.
//   - a union is two fields: its type (uint8, id n) and its value (an offset
//     to a table, id n + 1).
// Field ids of the TFLite schema are the ones named at each read below.
#include "tpu/tflite.h"

#include <bit>
#include <cstring>
#include <limits>

#include "tpu/npy.h"

namespace tpu::tflite {

static_assert(std::endian::native == std::endian::little, "the reader assumes a little-endian host");

namespace {

class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, const std::string& name)
      : b_(bytes), name_(name), budget_(kMemoryPerByte * bytes.size() + kMemorySlack) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(name_ + ": not a valid .tflite model: " + what);
  }

  uint64_t size() const { return b_.size(); }

  template <class T>
  T scalar(uint64_t pos, const std::string& what) const {
    if (pos > b_.size() || b_.size() - pos < sizeof(T)) {
      fail(what + " at byte " + std::to_string(pos) + " is past the end of the file (" +
           std::to_string(b_.size()) + " bytes)");
    }
    T v;
    std::memcpy(&v, b_.data() + pos, sizeof(T));
    return v;
  }

  // Materializing n bytes of what the file holds costs n from the budget;
  // a table costs kTableCost (the structure it becomes, with its strings
  // and vectors).
  static constexpr uint64_t kTableCost = 256;
  void spend(uint64_t n, const std::string& what) {
    if (n > budget_) fail(what + ": the file's tables refer to more data than it can hold (a loop or a corrupt offset)");
    budget_ -= n;
  }

  struct Table {
    uint64_t pos = 0;  // 0: no table (an absent field)
    uint64_t vt = 0;
    uint16_t vt_size = 0;
    uint16_t size = 0;
    std::string what;
    explicit operator bool() const { return pos != 0; }
  };

  Table table_at(uint64_t pos, const std::string& what) {
    spend(kTableCost, what);
    Table t;
    t.what = what;
    const int32_t soff = scalar<int32_t>(pos, what);
    const int64_t vt = int64_t(pos) - int64_t(soff);
    if (vt < 0 || uint64_t(vt) >= b_.size()) {
      fail(what + " at byte " + std::to_string(pos) + ": its vtable offset points outside the file");
    }
    t.pos = pos;
    t.vt = uint64_t(vt);
    t.vt_size = scalar<uint16_t>(t.vt, what + "'s vtable");
    t.size = scalar<uint16_t>(t.vt + 2, what + "'s vtable");
    if (t.vt_size < 4 || t.vt_size % 2 != 0 || t.vt + t.vt_size > b_.size()) {
      fail(what + " at byte " + std::to_string(pos) + ": its vtable (at byte " + std::to_string(t.vt) +
           ") has a bad size " + std::to_string(t.vt_size));
    }
    if (t.size < 4 || pos + t.size > b_.size()) {
      fail(what + " at byte " + std::to_string(pos) + ": its size " + std::to_string(t.size) +
           " runs past the end of the file");
    }
    return t;
  }

  // The offset of field `id` inside the table, 0 when absent; checks that
  // `width` bytes of it lie inside the table.
  uint16_t field_offset(const Table& t, int id, unsigned width, const char* field) const {
    const uint64_t slot = 4 + 2 * uint64_t(id);
    if (slot + 2 > t.vt_size) return 0;
    const uint16_t off = scalar<uint16_t>(t.vt + slot, t.what);
    if (off == 0) return 0;
    if (off < 4 || uint64_t(off) + width > t.size) {
      fail(t.what + ": field '" + field + "' at offset " + std::to_string(off) +
           " lies outside the table (" + std::to_string(t.size) + " bytes)");
    }
    return off;
  }

  template <class T>
  T field(const Table& t, int id, T def, const char* name) const {
    const uint16_t off = field_offset(t, id, sizeof(T), name);
    return off ? scalar<T>(t.pos + off, t.what + "." + name) : def;
  }

  // Where the object field `id` refers to, 0 when the field is absent.
  uint64_t ref(const Table& t, int id, const char* name) const {
    const uint16_t off = field_offset(t, id, 4, name);
    if (!off) return 0;
    const uint64_t at = t.pos + off;
    const uint64_t target = at + scalar<uint32_t>(at, t.what + "." + name);
    if (target >= b_.size()) {
      fail(t.what + "." + name + " points to byte " + std::to_string(target) +
           ", past the end of the file (" + std::to_string(b_.size()) + " bytes)");
    }
    return target;
  }

  Table child(const Table& t, int id, const char* name) {
    const uint64_t at = ref(t, id, name);
    return at ? table_at(at, t.what + "." + name) : Table{};
  }

  struct Vec {
    uint64_t start = 0;  // of the first element
    uint32_t len = 0;
  };

  Vec vec_at(uint64_t at, unsigned elem, const std::string& what) {
    Vec v;
    v.len = scalar<uint32_t>(at, what + "'s length");
    v.start = at + 4;
    if (uint64_t(v.len) * elem > b_.size() - std::min<uint64_t>(v.start, b_.size())) {
      fail(what + " at byte " + std::to_string(at) + " has " + std::to_string(v.len) +
           " elements of " + std::to_string(elem) + " bytes, past the end of the file");
    }
    spend(uint64_t(v.len) * elem, what);
    return v;
  }

  Vec vec(const Table& t, int id, unsigned elem, const char* name) {
    const uint64_t at = ref(t, id, name);
    return at ? vec_at(at, elem, t.what + "." + name) : Vec{};
  }

  template <class T>
  std::vector<T> scalars(const Table& t, int id, const char* name) {
    const Vec v = vec(t, id, sizeof(T), name);
    std::vector<T> out(v.len);
    if (v.len) std::memcpy(out.data(), b_.data() + v.start, size_t(v.len) * sizeof(T));
    return out;
  }

  std::vector<uint8_t> bytes(const Table& t, int id, const char* name) { return scalars<uint8_t>(t, id, name); }

  std::string str(const Table& t, int id, const char* name) {
    const std::vector<uint8_t> v = bytes(t, id, name);
    return std::string(v.begin(), v.end());
  }

  // The table element i of a vector of tables.
  Table elem(const Vec& v, uint32_t i, const std::string& what) {
    const uint64_t at = v.start + 4 * uint64_t(i);
    return table_at(at + scalar<uint32_t>(at, what), what);
  }

  std::span<const uint8_t> range(uint64_t offset, uint64_t len, const std::string& what) const {
    if (offset > b_.size() || len > b_.size() - offset) {
      fail(what + ": bytes " + std::to_string(offset) + "+" + std::to_string(len) +
           " lie outside the file (" + std::to_string(b_.size()) + " bytes)");
    }
    return b_.subspan(size_t(offset), size_t(len));
  }

 private:
  std::span<const uint8_t> b_;
  std::string name_;
  uint64_t budget_;
};

using Table = Reader::Table;

Quantization read_quantization(Reader& r, const Table& q) {
  // QuantizationParameters: min 0, max 1, scale 2, zero_point 3,
  // details_type 4, details 5, quantized_dimension 6.
  Quantization out;
  out.scale = r.scalars<float>(q, 2, "scale");
  out.zero_point = r.scalars<int64_t>(q, 3, "zero_point");
  out.has_details = r.field<uint8_t>(q, 4, 0, "details_type") != 0;
  out.quantized_dimension = r.field<int32_t>(q, 6, 0, "quantized_dimension");
  return out;
}

Options read_options(Reader& r, const Table& op, const std::string& where) {
  // Operator: builtin_options_type 3, builtin_options 4.
  Options o;
  o.type = r.field<uint8_t>(op, 3, opt::kNone, "builtin_options_type");
  if (o.type == opt::kNone) return o;
  const Table t = r.child(op, 4, "builtin_options");
  if (!t) r.fail(where + ": builtin_options_type is " + std::to_string(o.type) + " but the options are missing");
  switch (o.type) {
    case opt::kConv2d:  // padding 0, stride_w 1, stride_h 2, activation 3, dilation_w 4, dilation_h 5
      o.padding = Padding(r.field<int8_t>(t, 0, 0, "padding"));
      o.stride_w = r.field<int32_t>(t, 1, 0, "stride_w");
      o.stride_h = r.field<int32_t>(t, 2, 0, "stride_h");
      o.activation = Activation(r.field<int8_t>(t, 3, 0, "fused_activation_function"));
      o.dilation_w = r.field<int32_t>(t, 4, 1, "dilation_w_factor");
      o.dilation_h = r.field<int32_t>(t, 5, 1, "dilation_h_factor");
      break;
    case opt::kDepthwiseConv2d:  // padding 0, stride_w 1, stride_h 2, depth_multiplier 3,
                                 // activation 4, dilation_w 5, dilation_h 6
      o.padding = Padding(r.field<int8_t>(t, 0, 0, "padding"));
      o.stride_w = r.field<int32_t>(t, 1, 0, "stride_w");
      o.stride_h = r.field<int32_t>(t, 2, 0, "stride_h");
      o.depth_multiplier = r.field<int32_t>(t, 3, 0, "depth_multiplier");
      o.activation = Activation(r.field<int8_t>(t, 4, 0, "fused_activation_function"));
      o.dilation_w = r.field<int32_t>(t, 5, 1, "dilation_w_factor");
      o.dilation_h = r.field<int32_t>(t, 6, 1, "dilation_h_factor");
      break;
    case opt::kPool2d:  // padding 0, stride_w 1, stride_h 2, filter_width 3, filter_height 4, activation 5
      o.padding = Padding(r.field<int8_t>(t, 0, 0, "padding"));
      o.stride_w = r.field<int32_t>(t, 1, 0, "stride_w");
      o.stride_h = r.field<int32_t>(t, 2, 0, "stride_h");
      o.filter_w = r.field<int32_t>(t, 3, 0, "filter_width");
      o.filter_h = r.field<int32_t>(t, 4, 0, "filter_height");
      o.activation = Activation(r.field<int8_t>(t, 5, 0, "fused_activation_function"));
      break;
    case opt::kFullyConnected:  // activation 0, weights_format 1, keep_num_dims 2, asymmetric_quantize_inputs 3
      o.activation = Activation(r.field<int8_t>(t, 0, 0, "fused_activation_function"));
      o.weights_format = r.field<int8_t>(t, 1, 0, "weights_format");
      o.keep_num_dims = r.field<uint8_t>(t, 2, 0, "keep_num_dims") != 0;
      o.asymmetric_quantize_inputs = r.field<uint8_t>(t, 3, 0, "asymmetric_quantize_inputs") != 0;
      break;
    case opt::kAdd:  // activation 0
      o.activation = Activation(r.field<int8_t>(t, 0, 0, "fused_activation_function"));
      break;
    case opt::kReshape:  // new_shape 0
      o.has_new_shape = r.ref(t, 0, "new_shape") != 0;
      o.new_shape = r.scalars<int32_t>(t, 0, "new_shape");
      break;
    case opt::kStridedSlice:  // begin 0, end 1, ellipsis 2, new_axis 3, shrink_axis 4, offset 5
      o.begin_mask = r.field<int32_t>(t, 0, 0, "begin_mask");
      o.end_mask = r.field<int32_t>(t, 1, 0, "end_mask");
      o.ellipsis_mask = r.field<int32_t>(t, 2, 0, "ellipsis_mask");
      o.new_axis_mask = r.field<int32_t>(t, 3, 0, "new_axis_mask");
      o.shrink_axis_mask = r.field<int32_t>(t, 4, 0, "shrink_axis_mask");
      o.offset = r.field<uint8_t>(t, 5, 0, "offset") != 0;
      break;
    case opt::kPack:  // values_count 0, axis 1
      o.values_count = r.field<int32_t>(t, 0, 0, "values_count");
      o.axis = r.field<int32_t>(t, 1, 0, "axis");
      break;
    case opt::kShape:  // out_type 0
      o.out_type = TensorType(r.field<int8_t>(t, 0, int8_t(TensorType::kInt32), "out_type"));
      break;
    default:  // kept as its type only (also Quantize/Dequantize, which have no fields)
      break;
  }
  return o;
}

}  // namespace

std::string type_name(TensorType t) {
  static const char* const kNames[] = {"float32", "float16", "int32",  "uint8",      "int64",   "string",
                                       "bool",    "int16",   "complex64", "int8",    "float64", "complex128",
                                       "uint64",  "resource", "variant", "uint32",   "uint16",  "int4"};
  const int i = int(t);
  if (i >= 0 && i < int(std::size(kNames))) return kNames[i];
  return "type " + std::to_string(i);
}

int type_size(TensorType t) {
  switch (t) {
    case TensorType::kInt8: case TensorType::kUint8: case TensorType::kBool: return 1;
    case TensorType::kInt16: case TensorType::kUint16: case TensorType::kFloat16: return 2;
    case TensorType::kInt32: case TensorType::kUint32: case TensorType::kFloat32: return 4;
    case TensorType::kInt64: case TensorType::kUint64: case TensorType::kFloat64:
    case TensorType::kComplex64: return 8;
    case TensorType::kComplex128: return 16;
    default: return 0;
  }
}

std::string builtin_name(int32_t code) {
  switch (code) {
    case op::kAdd: return "ADD";
    case op::kAveragePool2d: return "AVERAGE_POOL_2D";
    case 2: return "CONCATENATION";
    case op::kConv2d: return "CONV_2D";
    case op::kDepthwiseConv2d: return "DEPTHWISE_CONV_2D";
    case op::kDequantize: return "DEQUANTIZE";
    case op::kFullyConnected: return "FULLY_CONNECTED";
    case 14: return "LOGISTIC";
    case op::kMaxPool2d: return "MAX_POOL_2D";
    case 18: return "MUL";
    case 19: return "RELU";
    case 21: return "RELU6";
    case op::kReshape: return "RESHAPE";
    case 25: return "SOFTMAX";
    case 28: return "TANH";
    case op::kCustom: return "CUSTOM";
    case 34: return "PAD";
    case 39: return "TRANSPOSE";
    case 40: return "MEAN";
    case 41: return "SUB";
    case 43: return "SQUEEZE";
    case op::kStridedSlice: return "STRIDED_SLICE";
    case 53: return "CAST";
    case 67: return "TRANSPOSE_CONV";
    case 70: return "EXPAND_DIMS";
    case op::kShape: return "SHAPE";
    case op::kPack: return "PACK";
    case op::kQuantize: return "QUANTIZE";
    case 117: return "HARD_SWISH";
    case 126: return "BATCH_MATMUL";
    case op::kPlaceholderForGreaterOpCodes: return "PLACEHOLDER_FOR_GREATER_OP_CODES";
    default: return "BUILTIN_" + std::to_string(code);
  }
}

std::string options_name(uint8_t type) {
  switch (type) {
    case opt::kNone: return "no options";
    case opt::kConv2d: return "Conv2DOptions";
    case opt::kDepthwiseConv2d: return "DepthwiseConv2DOptions";
    case opt::kPool2d: return "Pool2DOptions";
    case opt::kFullyConnected: return "FullyConnectedOptions";
    case opt::kAdd: return "AddOptions";
    case opt::kReshape: return "ReshapeOptions";
    case opt::kStridedSlice: return "StridedSliceOptions";
    case opt::kDequantize: return "DequantizeOptions";
    case opt::kShape: return "ShapeOptions";
    case opt::kPack: return "PackOptions";
    case opt::kQuantize: return "QuantizeOptions";
    default: return "options type " + std::to_string(type);
  }
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "NONE";
    case Activation::kRelu: return "RELU";
    case Activation::kReluN1To1: return "RELU_N1_TO_1";
    case Activation::kRelu6: return "RELU6";
    case Activation::kTanh: return "TANH";
    case Activation::kSignBit: return "SIGN_BIT";
  }
  return "activation " + std::to_string(int(a));
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int32_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

int32_t OperatorCode::code() const { return std::max<int32_t>(deprecated_builtin_code, builtin_code); }

Model parse(std::span<const uint8_t> bytes, const std::string& name) {
  Reader r(bytes, name);
  if (bytes.size() < 8) r.fail("the file has " + std::to_string(bytes.size()) + " bytes, too few for a FlatBuffer");
  if (std::memcmp(bytes.data() + 4, "TFL3", 4) != 0) {
    r.fail("the file identifier (bytes 4..7) is not \"TFL3\"");
  }
  const Table root = r.table_at(r.scalar<uint32_t>(0, "the root offset"), "Model");

  // Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4.
  Model m;
  m.version = r.field<uint32_t>(root, 0, 0, "version");
  if (m.version != 3) r.fail("schema version " + std::to_string(m.version) + "; this reader knows version 3");
  m.description = r.str(root, 3, "description");

  // OperatorCode: deprecated_builtin_code 0, custom_code 1, version 2, builtin_code 3.
  const Reader::Vec codes = r.vec(root, 1, 4, "operator_codes");
  for (uint32_t i = 0; i < codes.len; ++i) {
    const Table t = r.elem(codes, i, "operator_codes[" + std::to_string(i) + "]");
    OperatorCode c;
    c.deprecated_builtin_code = r.field<int8_t>(t, 0, 0, "deprecated_builtin_code");
    c.custom_code = r.str(t, 1, "custom_code");
    c.version = r.field<int32_t>(t, 2, 1, "version");
    c.builtin_code = r.field<int32_t>(t, 3, 0, "builtin_code");
    m.operator_codes.push_back(std::move(c));
  }

  // Buffer: data 0, offset 1, size 2 (offset/size: data outside the
  // FlatBuffer, at that offset from the file's start, in files > 2 GiB).
  const Reader::Vec buffers = r.vec(root, 4, 4, "buffers");
  auto buffer_bytes = [&](uint32_t index, const std::string& where) -> std::span<const uint8_t> {
    if (index == 0 && buffers.len == 0) return {};
    if (index >= buffers.len) {
      r.fail(where + " uses buffer " + std::to_string(index) + " but the model has " +
             std::to_string(buffers.len) + " buffers");
    }
    const Table b = r.elem(buffers, index, "buffers[" + std::to_string(index) + "]");
    const uint64_t offset = r.field<uint64_t>(b, 1, 0, "offset");
    const uint64_t size = r.field<uint64_t>(b, 2, 0, "size");
    if (offset > 1) return r.range(offset, size, b.what);
    const Reader::Vec v = r.vec(b, 0, 1, "data");
    return r.range(v.start, v.len, b.what + ".data");
  };

  // SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4.
  const Reader::Vec subgraphs = r.vec(root, 2, 4, "subgraphs");
  if (subgraphs.len == 0) r.fail("the model has no subgraph");
  for (uint32_t s = 0; s < subgraphs.len; ++s) {
    const std::string sw = "subgraph " + std::to_string(s);
    const Table g = r.elem(subgraphs, s, sw);
    Subgraph sg;
    sg.name = r.str(g, 4, "name");

    // Tensor: shape 0, type 1, buffer 2, name 3, quantization 4, is_variable 5, sparsity 6.
    const Reader::Vec tensors = r.vec(g, 0, 4, "tensors");
    for (uint32_t i = 0; i < tensors.len; ++i) {
      const std::string tw = sw + " tensor " + std::to_string(i);
      const Table t = r.elem(tensors, i, tw);
      Tensor x;
      x.has_shape = r.ref(t, 0, "shape") != 0;
      x.shape = r.scalars<int32_t>(t, 0, "shape");
      x.type = TensorType(r.field<int8_t>(t, 1, 0, "type"));
      x.buffer = r.field<uint32_t>(t, 2, 0, "buffer");
      x.name = r.str(t, 3, "name");
      const Table q = r.child(t, 4, "quantization");
      if (q) x.q = read_quantization(r, q);
      x.is_variable = r.field<uint8_t>(t, 5, 0, "is_variable") != 0;
      x.sparse = r.ref(t, 6, "sparsity") != 0;
      const std::string what = tw + " ('" + x.name + "')";
      const std::span<const uint8_t> data = buffer_bytes(x.buffer, what);
      if (!data.empty()) {
        const int64_t n = x.elements();
        const int size = type_size(x.type);
        if (size > 0 && !x.sparse &&
            (n < 0 || uint64_t(n) > data.size() / uint64_t(size) || uint64_t(n) * uint64_t(size) != data.size())) {
          r.fail(what + " has " + std::to_string(data.size()) + " bytes of data but its shape holds " +
                 (n < 0 ? std::string("an unknown number of") : std::to_string(n)) + " " +
                 type_name(x.type) + " elements");
        }
        r.spend(data.size(), what);
        x.data.assign(data.begin(), data.end());
      }
      if (!x.q.zero_point.empty() && x.q.zero_point.size() != x.q.scale.size()) {
        r.fail(what + " has " + std::to_string(x.q.scale.size()) + " quantization scales but " +
               std::to_string(x.q.zero_point.size()) + " zero points");
      }
      sg.tensors.push_back(std::move(x));
    }
    const auto check_tensor = [&](int32_t index, bool optional, const std::string& where) {
      if ((optional && index == -1) || (index >= 0 && uint32_t(index) < tensors.len)) return;
      r.fail(where + " names tensor " + std::to_string(index) + " but " + sw + " has " +
             std::to_string(tensors.len) + " tensors");
    };
    sg.inputs = r.scalars<int32_t>(g, 1, "inputs");
    sg.outputs = r.scalars<int32_t>(g, 2, "outputs");
    for (int32_t i : sg.inputs) check_tensor(i, false, sw + " inputs");
    for (int32_t i : sg.outputs) check_tensor(i, false, sw + " outputs");

    // Operator: opcode_index 0, inputs 1, outputs 2, builtin options 3/4, custom_options 5.
    const Reader::Vec ops = r.vec(g, 3, 4, "operators");
    for (uint32_t i = 0; i < ops.len; ++i) {
      const std::string ow = sw + " operator " + std::to_string(i);
      const Table t = r.elem(ops, i, ow);
      Operator o;
      o.opcode_index = r.field<uint32_t>(t, 0, 0, "opcode_index");
      if (o.opcode_index >= m.operator_codes.size()) {
        r.fail(ow + " has opcode_index " + std::to_string(o.opcode_index) + " but the model has " +
               std::to_string(m.operator_codes.size()) + " operator codes");
      }
      o.code = m.operator_codes[o.opcode_index].code();
      o.inputs = r.scalars<int32_t>(t, 1, "inputs");
      o.outputs = r.scalars<int32_t>(t, 2, "outputs");
      for (int32_t x : o.inputs) check_tensor(x, true, ow + " (" + builtin_name(o.code) + ") inputs");
      for (int32_t x : o.outputs) check_tensor(x, false, ow + " (" + builtin_name(o.code) + ") outputs");
      o.options = read_options(r, t, ow);
      o.has_custom_options = r.ref(t, 5, "custom_options") != 0;
      sg.operators.push_back(std::move(o));
    }
    m.subgraphs.push_back(std::move(sg));
  }
  return m;
}

Model load(const std::string& path) {
  const std::vector<uint8_t> bytes = npy::read_file(path, kMaxModelBytes, "a .tflite model");
  return parse(bytes, path);
}

}  // namespace tpu::tflite
