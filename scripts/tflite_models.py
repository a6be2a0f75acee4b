#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes small full-int8 .tflite test models without TensorFlow (docs/tflite.md).

    .venv-tflite/bin/python scripts/tflite_models.py --out build/tflite [--no-reference]

Each model is built directly as a FlatBuffer with the `flatbuffers` package
(the field ids of TFLite's public schema, written out here; no generated
code). Valid models are loaded by the tflite-runtime interpreter with its
reference kernels (OpResolverType.BUILTIN_REF), which proves the file is
well formed, and run on random inputs; the inputs and TFLite's outputs are
saved beside the model:

    <out>/<name>.tflite   <out>/<name>.x.npy   <out>/<name>.y.npy

The error models (names starting with err_) are written only: each holds
one thing the TPU's lowering must refuse; the corrupt ones (bad_*,
shared_subgraph_blowup) break the file format itself and the reader must
refuse them. <out>/manifest.json lists every model, its kind (valid, error
or corrupt) and, for the last two, the words the message must contain. Runs in the virtual environment `make setup` creates
(.venv-tflite: tflite-runtime 2.14.0 needs numpy < 2).
"""

import argparse
import json
import os
import sys

import flatbuffers
import numpy as np

# ---- schema facts: enum values and field ids of TFLite's schema ----
FLOAT32, INT32, UINT8, INT64, INT16, INT8 = 0, 2, 3, 4, 7, 9
ADD, AVERAGE_POOL_2D, CONV_2D, DEPTHWISE_CONV_2D, DEQUANTIZE = 0, 1, 3, 4, 6
FULLY_CONNECTED, MAX_POOL_2D, RESHAPE, SOFTMAX, STRIDED_SLICE = 9, 17, 22, 25, 45
SHAPE, PACK, QUANTIZE, CUMSUM = 77, 83, 114, 128
OPT_CONV, OPT_DW, OPT_POOL, OPT_FC, OPT_ADD, OPT_RESHAPE, OPT_SOFTMAX = 1, 2, 5, 8, 11, 17, 9
OPT_STRIDED_SLICE, OPT_SHAPE, OPT_PACK, OPT_QUANTIZE, OPT_DEQUANTIZE = 32, 55, 59, 89, 38
SAME, VALID = 0, 1
NONE, RELU, RELU6 = 0, 1, 3
NP_TYPE = {FLOAT32: np.float32, INT32: np.int32, UINT8: np.uint8, INT64: np.int64, INT16: np.int16,
           INT8: np.int8}


class Model:
    """One subgraph, its tensors, buffers and operators; serialize() gives the file."""

    def __init__(self, description="tpu test model"):
        self.description = description
        self.tensors = []  # dicts
        self.buffers = [b""]  # buffer 0 is the empty one
        self.codes = []  # (code, deprecated_only)
        self.ops = []
        self.inputs, self.outputs = [], []
        self.subgraph_copies = 1  # the subgraphs vector names the one subgraph this often

    def tensor(self, name, shape, ttype, data=None, scale=None, zero_point=None, qdim=0):
        buf = 0
        if data is not None:
            arr = np.asarray(data, dtype=NP_TYPE[ttype])
            assert list(arr.shape) == list(shape), (name, arr.shape, shape)
            self.buffers.append(arr.tobytes())
            buf = len(self.buffers) - 1
        q = None
        if scale is not None:
            scale = np.atleast_1d(np.asarray(scale, dtype=np.float32))
            zp = np.zeros(scale.shape, np.int64) if zero_point is None else np.atleast_1d(
                np.asarray(zero_point, dtype=np.int64))
            q = (scale, zp, qdim)
        self.tensors.append(dict(name=name, shape=list(shape), type=ttype, buffer=buf, q=q))
        return len(self.tensors) - 1

    def raw_buffer(self, data):
        """A buffer of exactly these bytes (for files that break the format)."""
        self.buffers.append(bytes(data))
        return len(self.buffers) - 1

    def op(self, code, inputs, outputs, opt_type=0, opt=None, deprecated_only=False):
        key = (code, deprecated_only)
        if key not in self.codes:
            self.codes.append(key)
        self.ops.append(dict(code=self.codes.index(key), inputs=inputs, outputs=outputs,
                             opt_type=opt_type, opt=opt or []))

    # -- serialization --
    def serialize(self):
        b = flatbuffers.Builder(4096)
        b.ForceDefaults(True)  # every field given is written, defaults too

        def vec_i32(vals):
            b.StartVector(4, len(vals), 4)
            for v in reversed(vals):
                b.PrependInt32(int(v))
            return b.EndVector()

        def vec_of(kind, vals, elem=4):
            b.StartVector(elem, len(vals), elem)
            for v in reversed(vals):
                getattr(b, "Prepend" + kind)(v)
            return b.EndVector()

        def vec_bytes(data):  # aligned to 16 like the converter's buffers
            b.StartVector(1, len(data), 16)
            b.head = b.head - len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            return b.EndVector()

        def offsets(offs):
            b.StartVector(4, len(offs), 4)
            for o in reversed(offs):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        # Buffer: data 0
        buf_offs = []
        for data in self.buffers:
            d = vec_bytes(data) if data else None
            b.StartObject(3)
            if d is not None:
                b.PrependUOffsetTRelativeSlot(0, d, 0)
            buf_offs.append(b.EndObject())

        # Tensor: shape 0, type 1, buffer 2, name 3, quantization 4
        ten_offs = []
        for t in self.tensors:
            name = b.CreateString(t["name"])
            shape = vec_i32(t["shape"])
            q = None
            if t["q"] is not None:
                scale, zp, qdim = t["q"]
                s = vec_of("Float32", [float(x) for x in scale])
                z = vec_of("Int64", [int(x) for x in zp], 8)
                # QuantizationParameters: scale 2, zero_point 3, quantized_dimension 6
                b.StartObject(7)
                b.PrependUOffsetTRelativeSlot(2, s, 0)
                b.PrependUOffsetTRelativeSlot(3, z, 0)
                b.PrependInt32Slot(6, qdim, 0)
                q = b.EndObject()
            b.StartObject(10)
            b.PrependUOffsetTRelativeSlot(0, shape, 0)
            b.PrependInt8Slot(1, t["type"], 0)
            b.PrependUint32Slot(2, t["buffer"], 0)
            b.PrependUOffsetTRelativeSlot(3, name, 0)
            if q is not None:
                b.PrependUOffsetTRelativeSlot(4, q, 0)
            ten_offs.append(b.EndObject())

        # Operator: opcode_index 0, inputs 1, outputs 2, options type 3, options 4
        op_offs = []
        for o in self.ops:
            ins, outs = vec_i32(o["inputs"]), vec_i32(o["outputs"])
            opt = None
            if o["opt_type"]:
                pre = []  # vectors first (ReshapeOptions.new_shape)
                for f in o["opt"]:
                    if f[1] == "vec_i32":
                        pre.append((f[0], vec_i32(f[2])))
                b.StartObject(12)
                for slot, kind, val in o["opt"]:
                    if kind == "vec_i32":
                        continue
                    getattr(b, "Prepend" + kind + "Slot")(slot, val, 0)
                for slot, off in pre:
                    b.PrependUOffsetTRelativeSlot(slot, off, 0)
                opt = b.EndObject()
            b.StartObject(13)
            b.PrependUint32Slot(0, o["code"], 0xFFFFFFFF)
            b.PrependUOffsetTRelativeSlot(1, ins, 0)
            b.PrependUOffsetTRelativeSlot(2, outs, 0)
            if opt is not None:
                b.PrependUint8Slot(3, o["opt_type"], 0)
                b.PrependUOffsetTRelativeSlot(4, opt, 0)
            op_offs.append(b.EndObject())

        tensors, ops = offsets(ten_offs), offsets(op_offs)
        ins, outs = vec_i32(self.inputs), vec_i32(self.outputs)
        gname = b.CreateString("main")
        # SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4
        b.StartObject(5)
        b.PrependUOffsetTRelativeSlot(0, tensors, 0)
        b.PrependUOffsetTRelativeSlot(1, ins, 0)
        b.PrependUOffsetTRelativeSlot(2, outs, 0)
        b.PrependUOffsetTRelativeSlot(3, ops, 0)
        b.PrependUOffsetTRelativeSlot(4, gname, 0)
        subgraph = b.EndObject()

        # OperatorCode: deprecated_builtin_code 0, version 2, builtin_code 3
        code_offs = []
        for code, deprecated_only in self.codes:
            b.StartObject(4)
            b.PrependInt8Slot(0, min(code, 127), -1)
            b.PrependInt32Slot(2, 1, 0)
            if not deprecated_only:
                b.PrependInt32Slot(3, code, -1)
            code_offs.append(b.EndObject())

        codes, subgraphs, buffers = offsets(code_offs), offsets([subgraph] * self.subgraph_copies), offsets(buf_offs)
        desc = b.CreateString(self.description)
        # Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4
        b.StartObject(8)
        b.PrependUint32Slot(0, 3, 0)
        b.PrependUOffsetTRelativeSlot(1, codes, 0)
        b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
        b.PrependUOffsetTRelativeSlot(3, desc, 0)
        b.PrependUOffsetTRelativeSlot(4, buffers, 0)
        root = b.EndObject()
        b.Finish(root, file_identifier=b"TFL3")
        return bytes(b.Output())


# ---- options as (slot, Prepend kind, value) ----
def conv_opt(padding, stride, act=NONE, dilation=1):
    return [(0, "Int8", padding), (1, "Int32", stride), (2, "Int32", stride), (3, "Int8", act),
            (4, "Int32", dilation), (5, "Int32", dilation)]


def dw_opt(padding, stride, dm, act=NONE):
    return [(0, "Int8", padding), (1, "Int32", stride), (2, "Int32", stride), (3, "Int32", dm),
            (4, "Int8", act), (5, "Int32", 1), (6, "Int32", 1)]


def pool_opt(padding, stride, k, act=NONE):
    return [(0, "Int8", padding), (1, "Int32", stride), (2, "Int32", stride), (3, "Int32", k),
            (4, "Int32", k), (5, "Int8", act)]


def fc_opt(act=NONE):
    return [(0, "Int8", act), (1, "Int8", 0), (2, "Bool", False)]


# ---- layer helpers on int8 tensors ----
class Net:
    def __init__(self, rng, description):
        self.m = Model(description)
        self.rng = rng
        self.n = 0

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def act(self, base, shape, scale, zp, ttype=INT8):
        return self.m.tensor(self.name(base), shape, ttype, scale=scale, zero_point=zp)

    def qparams(self, t):
        scale, zp, _ = self.m.tensors[t]["q"]
        return float(scale[0]), int(zp[0])

    def weights(self, shape, channels, qdim, per_channel):
        w = self.rng.integers(-127, 128, size=shape).astype(np.int8)
        if per_channel:
            scale = self.rng.uniform(0.002, 0.02, size=channels).astype(np.float32)
        else:
            scale = np.float32(self.rng.uniform(0.002, 0.02))
        return w, scale

    def bias(self, in_t, wscale, n):
        s_in, _ = self.qparams(in_t)
        bscale = (np.float32(s_in) * np.broadcast_to(np.asarray(wscale, np.float32), (n,))).astype(np.float32)
        data = self.rng.integers(-3000, 3000, size=n).astype(np.int32)
        per = np.ndim(wscale) > 0
        return self.m.tensor(self.name("bias"), [n], INT32, data, scale=bscale if per else bscale[0],
                             zero_point=np.zeros(n if per else 1, np.int64))

    def fc(self, x, n, out_scale, out_zp, act=NONE, per_channel=False, bias=True, wtype=INT8):
        k = self.m.tensors[x]["shape"][-1]
        batch = int(np.prod(self.m.tensors[x]["shape"])) // k
        w, ws = self.weights([n, k], n, 0, per_channel)
        wt = self.m.tensor(self.name("fc_w"), [n, k], wtype, w, scale=ws,
                           zero_point=np.zeros(np.size(ws), np.int64), qdim=0)
        ins = [x, wt, self.bias(x, ws, n) if bias else -1]
        y = self.act("fc", [batch, n], out_scale, out_zp)
        self.m.op(FULLY_CONNECTED, ins, [y], OPT_FC, fc_opt(act))
        return y

    def conv(self, x, oc, k, stride, padding, out_scale, out_zp, act=NONE, per_channel=True, dilation=1):
        nb, h, w_, c = self.m.tensors[x]["shape"]
        oh, ow = out_size(h, k, stride, padding), out_size(w_, k, stride, padding)
        w, ws = self.weights([oc, k, k, c], oc, 0, per_channel)
        wt = self.m.tensor(self.name("conv_w"), [oc, k, k, c], INT8, w, scale=ws,
                           zero_point=np.zeros(np.size(ws), np.int64), qdim=0)
        y = self.act("conv", [nb, oh, ow, oc], out_scale, out_zp)
        self.m.op(CONV_2D, [x, wt, self.bias(x, ws, oc)], [y], OPT_CONV, conv_opt(padding, stride, act, dilation))
        return y

    def depthwise(self, x, dm, k, stride, padding, out_scale, out_zp, act=NONE, per_channel=True):
        nb, h, w_, c = self.m.tensors[x]["shape"]
        oc = c * dm
        oh, ow = out_size(h, k, stride, padding), out_size(w_, k, stride, padding)
        w, ws = self.weights([1, k, k, oc], oc, 3, per_channel)
        wt = self.m.tensor(self.name("dw_w"), [1, k, k, oc], INT8, w, scale=ws,
                           zero_point=np.zeros(np.size(ws), np.int64), qdim=3)
        y = self.act("dw", [nb, oh, ow, oc], out_scale, out_zp)
        self.m.op(DEPTHWISE_CONV_2D, [x, wt, self.bias(x, ws, oc)], [y], OPT_DW, dw_opt(padding, stride, dm, act))
        return y

    def pool(self, code, x, k, stride, padding, act=NONE):
        nb, h, w_, c = self.m.tensors[x]["shape"]
        s, zp = self.qparams(x)
        y = self.act("pool", [nb, out_size(h, k, stride, padding), out_size(w_, k, stride, padding), c], s, zp)
        self.m.op(code, [x], [y], OPT_POOL, pool_opt(padding, stride, k, act))
        return y

    def add(self, a, b_, out_scale, out_zp, act=NONE):
        y = self.act("add", self.m.tensors[a]["shape"], out_scale, out_zp)
        self.m.op(ADD, [a, b_], [y], OPT_ADD, [(0, "Int8", act)])
        return y

    def flatten(self, x):
        """The converter's Flatten: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE."""
        shape = self.m.tensors[x]["shape"]
        m = self.m
        shp = m.tensor(self.name("shape"), [len(shape)], INT32)
        m.op(SHAPE, [x], [shp], OPT_SHAPE, [(0, "Int8", INT32)])
        begin = m.tensor(self.name("begin"), [1], INT32, [0])
        end = m.tensor(self.name("end"), [1], INT32, [1])
        strides = m.tensor(self.name("strides"), [1], INT32, [1])
        batch = m.tensor(self.name("batch"), [], INT32)
        m.op(STRIDED_SLICE, [shp, begin, end, strides], [batch], OPT_STRIDED_SLICE,
             [(0, "Int32", 0), (1, "Int32", 0), (2, "Int32", 0), (3, "Int32", 0), (4, "Int32", 1)])
        minus1 = m.tensor(self.name("minus1"), [], INT32, np.array(-1, np.int32))
        packed = m.tensor(self.name("packed"), [2], INT32)
        m.op(PACK, [batch, minus1], [packed], OPT_PACK, [(0, "Int32", 2), (1, "Int32", 0)])
        s, zp = self.qparams(x)
        y = self.act("flat", [shape[0], int(np.prod(shape[1:]))], s, zp)
        m.op(RESHAPE, [x, packed], [y], OPT_RESHAPE, [])
        return y


def out_size(n, k, stride, padding):
    return (n + stride - 1) // stride if padding == SAME else (n - k + stride) // stride


# ---- the models: name -> function(rng) returning Model (valid ones) ----
VALID_MODELS = {}
ERROR_MODELS = {}


def valid(fn):
    VALID_MODELS[fn.__name__] = fn
    return fn


def error(*words):
    def wrap(fn):
        ERROR_MODELS[fn.__name__] = (fn, list(words))
        return fn
    return wrap


def start(rng, shape, scale=0.05, zp=-7, description=None, ttype=INT8):
    net = Net(rng, description or "tpu test model")
    x = net.act("x", shape, scale, zp, ttype)
    net.m.inputs = [x]
    return net, x


@valid
def fc_per_tensor(rng):
    net, x = start(rng, [4, 24], 0.04, -9)
    h = net.fc(x, 16, 0.08, 5, act=RELU)
    y = net.fc(h, 10, 0.12, -3)
    net.m.outputs = [y]
    return net.m


@valid
def fc_per_channel(rng):
    net, x = start(rng, [2, 30], 0.05, 4)
    y = net.fc(x, 12, 0.1, -6, per_channel=True)
    net.m.outputs = [y]
    return net.m


@valid
def fc_no_bias_relu6(rng):
    net, x = start(rng, [3, 17], 0.03, 11)
    y = net.fc(x, 9, 0.05, -20, act=RELU6, bias=False)
    net.m.outputs = [y]
    return net.m


@valid
def conv_same_s1(rng):
    net, x = start(rng, [1, 8, 8, 3], 0.05, -7)
    y = net.conv(x, 6, 3, 1, SAME, 0.1, 4, act=RELU)
    net.m.outputs = [y]
    return net.m


@valid
def conv_same_s2_asym(rng):
    # 8 -> 4 with a 3x3 kernel at stride 2: one row/column of padding, at the bottom/right.
    net, x = start(rng, [1, 8, 8, 4], 0.05, 13)
    y = net.conv(x, 5, 3, 2, SAME, 0.09, -6)
    net.m.outputs = [y]
    return net.m


@valid
def conv_same_k2(rng):
    # An even kernel at stride 1: padding 0 before, 1 after.
    net, x = start(rng, [1, 6, 7, 2], 0.06, -100)
    y = net.conv(x, 3, 2, 1, SAME, 0.07, 2, per_channel=False)
    net.m.outputs = [y]
    return net.m


@valid
def conv_valid_s2(rng):
    net, x = start(rng, [1, 9, 9, 3], 0.05, 0)
    y = net.conv(x, 4, 3, 2, VALID, 0.1, -1, per_channel=False, act=RELU6)
    net.m.outputs = [y]
    return net.m


@valid
def depthwise_same(rng):
    net, x = start(rng, [1, 7, 7, 4], 0.05, -3)
    y = net.depthwise(x, 2, 3, 1, SAME, 0.06, 7, act=RELU)
    net.m.outputs = [y]
    return net.m


@valid
def depthwise_valid_s2(rng):
    net, x = start(rng, [1, 9, 8, 3], 0.04, 20)
    y = net.depthwise(x, 1, 3, 2, VALID, 0.05, -8, per_channel=False)
    net.m.outputs = [y]
    return net.m


@valid
def pools(rng):
    net, x = start(rng, [1, 8, 8, 3], 0.05, -7)
    a = net.pool(MAX_POOL_2D, x, 2, 2, VALID)
    y = net.pool(AVERAGE_POOL_2D, a, 3, 2, SAME)  # 4 -> 2, padded taps not counted
    net.m.outputs = [y]
    return net.m


@valid
def residual_add(rng):
    net, x = start(rng, [1, 6, 6, 4], 0.05, -5)
    c = net.conv(x, 4, 3, 1, SAME, 0.07, 3)
    y = net.add(x, c, 0.09, -2, act=RELU)
    net.m.outputs = [y]
    return net.m


@valid
def small_cnn(rng):
    # conv -> depthwise -> max pool -> Flatten (SHAPE, STRIDED_SLICE, PACK, RESHAPE) -> fc
    net, x = start(rng, [1, 8, 8, 1], 0.02, -128)
    c = net.conv(x, 4, 3, 1, SAME, 0.04, -128, act=RELU)
    d = net.depthwise(c, 1, 3, 1, SAME, 0.05, -128, act=RELU6)
    p = net.pool(MAX_POOL_2D, d, 2, 2, VALID)
    f = net.flatten(p)
    y = net.fc(f, 10, 0.1, 3)
    net.m.outputs = [y]
    return net.m


@valid
def reshape_new_shape(rng):
    # RESHAPE with only ReshapeOptions.new_shape (no shape input), then fc.
    net, x = start(rng, [2, 3, 4], 0.05, 1)
    s, zp = net.qparams(x)
    r = net.act("r", [2, 12], s, zp)
    net.m.op(RESHAPE, [x], [r], OPT_RESHAPE, [(0, "vec_i32", [-1, 12])])
    y = net.fc(r, 5, 0.1, 0)
    net.m.outputs = [y]
    return net.m


@valid
def float_edges(rng):
    # float32 in -> QUANTIZE -> fc -> DEQUANTIZE -> float32 out
    net = Net(rng, "float edges")
    m = net.m
    xf = m.tensor("x_float", [2, 12], FLOAT32)
    xq = net.act("xq", [2, 12], 0.05, 3)
    m.op(QUANTIZE, [xf], [xq], OPT_QUANTIZE, [])
    h = net.fc(xq, 6, 0.1, -4)
    yf = m.tensor("y_float", [2, 6], FLOAT32)
    m.op(DEQUANTIZE, [h], [yf], OPT_DEQUANTIZE, [])
    m.inputs, m.outputs = [xf], [yf]
    return m


@valid
def requantize_old_codes(rng):
    # int8 -> int8 QUANTIZE (a rescale); operator codes only in the deprecated field.
    net, x = start(rng, [1, 20], 0.05, -3)
    h = net.act("rq", [1, 20], 0.03, 9)
    net.m.op(QUANTIZE, [x], [h], OPT_QUANTIZE, [], deprecated_only=True)
    w, ws = net.weights([7, 20], 7, 0, False)
    wt = net.m.tensor("fc_w", [7, 20], INT8, w, scale=ws)
    y = net.act("fc", [1, 7], 0.1, 2)
    net.m.op(FULLY_CONNECTED, [h, wt, net.bias(h, ws, 7)], [y], OPT_FC, fc_opt(), deprecated_only=True)
    net.m.outputs = [y]
    return net.m


# ---- error models: each one thing the lowering refuses ----
@error("op 1 SOFTMAX", "not supported")
def err_unsupported_op(rng):
    net, x = start(rng, [1, 8], 0.05, 0)
    h = net.fc(x, 4, 0.1, 0)
    y = net.act("sm", [1, 4], 1.0 / 256, -128)
    net.m.op(SOFTMAX, [h], [y], OPT_SOFTMAX, [(0, "Float32", 1.0)])
    net.m.outputs = [y]
    return net.m


@error("op 0 BUILTIN_128", "not supported")
def err_extended_code(rng):
    # An operator only the extended builtin_code field can name (CUMSUM, 128).
    net, x = start(rng, [1, 8], 0.05, 0)
    axis = net.m.tensor("axis", [], INT32, np.array(0, np.int32))
    y = net.act("cs", [1, 8], 0.05, 0)
    net.m.op(CUMSUM, [x, axis], [y])
    net.m.outputs = [y]
    return net.m


@error("op 0 FULLY_CONNECTED", "float32")
def err_float_model(rng):
    m = Model("float model")
    x = m.tensor("x", [1, 8], FLOAT32)
    w = m.tensor("w", [4, 8], FLOAT32, rng.standard_normal((4, 8)))
    y = m.tensor("y", [1, 4], FLOAT32)
    m.op(FULLY_CONNECTED, [x, w, -1], [y], OPT_FC, fc_opt())
    m.inputs, m.outputs = [x], [y]
    return m


@error("op 0 FULLY_CONNECTED", "input 'x' is a float32 tensor")
def err_float_input(rng):
    # A dynamic-range model: float activations, int8 weights.
    m = Model("dynamic range")
    x = m.tensor("x", [1, 8], FLOAT32)
    w = m.tensor("w", [4, 8], INT8, rng.integers(-127, 128, (4, 8)), scale=0.01, zero_point=0)
    y = m.tensor("y", [1, 4], FLOAT32)
    m.op(FULLY_CONNECTED, [x, w, -1], [y], OPT_FC, fc_opt())
    m.inputs, m.outputs = [x], [y]
    return m


@error("input tensor 'x_1' is int16")
def err_int16(rng):
    net, x = start(rng, [1, 8], 0.001, 0, ttype=INT16)
    w, ws = net.weights([4, 8], 4, 0, False)
    wt = net.m.tensor("w", [4, 8], INT8, w, scale=ws)
    y = net.act("y", [1, 4], 0.001, 0, INT16)
    net.m.op(FULLY_CONNECTED, [x, wt, -1], [y], OPT_FC, fc_opt())
    net.m.outputs = [y]
    return net.m


@error("op 0 FULLY_CONNECTED", "uint8")
def err_uint8(rng):
    # uint8 weights behind an int8 input
    net, x = start(rng, [1, 8], 0.05, 0)
    wt = net.m.tensor("w", [4, 8], UINT8, rng.integers(0, 256, (4, 8)), scale=0.01, zero_point=128)
    y = net.act("y", [1, 4], 0.1, 0)
    net.m.op(FULLY_CONNECTED, [x, wt, -1], [y], OPT_FC, fc_opt())
    net.m.outputs = [y]
    return net.m


@error("op 0 CONV_2D", "dilation 2x2")
def err_dilation(rng):
    net, x = start(rng, [1, 8, 8, 2], 0.05, 0)
    y = net.conv(x, 3, 3, 1, SAME, 0.1, 0, dilation=2)
    net.m.outputs = [y]
    return net.m


@error("op 0 CONV_2D", "unknown builtin options", "Pool2DOptions")
def err_unknown_options(rng):
    net, x = start(rng, [1, 8, 8, 2], 0.05, 0)
    y = net.conv(x, 3, 3, 1, SAME, 0.1, 0)
    op = net.m.ops[0]
    op["opt_type"], op["opt"] = OPT_POOL, pool_opt(SAME, 1, 3)
    net.m.outputs = [y]
    return net.m


@error("op 0 FULLY_CONNECTED", "wrong shapes", "1x5", "1x4")
def err_wrong_shapes(rng):
    net, x = start(rng, [1, 8], 0.05, 0)
    y = net.fc(x, 4, 0.1, 0)
    net.m.tensors[y]["shape"] = [1, 5]
    net.m.outputs = [y]
    return net.m


@error("op 0 ADD", "broadcasting")
def err_add_broadcast(rng):
    net = Net(rng, "broadcast")
    a = net.act("a", [1, 4, 4, 2], 0.05, 0)
    b_ = net.act("b", [1, 1, 1, 2], 0.05, 0)
    y = net.add(a, b_, 0.1, 0)
    net.m.inputs, net.m.outputs = [a, b_], [y]
    return net.m


# ---- files that break the format: the reader refuses them (FormatError) ----
CORRUPT_MODELS = {}


def corrupt(*words):
    def wrap(fn):
        CORRUPT_MODELS[fn.__name__] = (fn, list(words))
        return fn
    return wrap


@corrupt("operator 0 (FULLY_CONNECTED) inputs names tensor 99", "has 3 tensors")
def bad_tensor_index(rng):
    m = fc_no_bias_relu6(rng)
    m.ops[0]["inputs"][0] = 99
    return m


@corrupt("operator 0 has opcode_index 7", "1 operator codes")
def bad_opcode_index(rng):
    m = fc_no_bias_relu6(rng)
    m.ops[0]["code"] = 7
    return m


@corrupt("uses buffer 40", "buffers")
def bad_buffer_index(rng):
    m = fc_no_bias_relu6(rng)
    m.tensors[1]["buffer"] = 40
    return m


@corrupt("has 12 bytes of data but its shape holds 153 int8 elements")
def bad_data_size(rng):
    m = fc_no_bias_relu6(rng)
    m.tensors[1]["buffer"] = m.raw_buffer(range(12))
    return m


@corrupt("refer to more data than it can hold")
def shared_subgraph_blowup(rng):
    # 30000 entries of the subgraphs vector name one subgraph of 400 tensors:
    # a small file whose tables, read as a tree, hold 12 million tensors.
    m = Model("blow-up")
    xs = [m.tensor(f"t{i}", [1, 2, 3, 4], INT8, scale=0.1, zero_point=0) for i in range(400)]
    m.inputs, m.outputs = [xs[0]], [xs[1]]
    m.op(ADD, [xs[0], xs[0]], [xs[1]], OPT_ADD, [(0, "Int8", NONE)])
    m.subgraph_copies = 30000
    return m


def write_npy(path, arr):
    with open(path, "wb") as f:
        np.save(f, arr)


def reference(model_bytes, rng, interpreter, samples=8):
    """Random inputs and the reference kernels' outputs (one input and
    output): the model run until at least `samples` samples are done, the
    runs stacked along dimension 0 (the batch), so x holds more samples
    than the model's own batch size, as `tpu infer` takes them."""
    it = interpreter(model_content=model_bytes)
    it.allocate_tensors()
    (inp,), (out,) = it.get_input_details(), it.get_output_details()
    xs, ys = [], []
    while sum(len(x) for x in xs) < samples:
        if inp["dtype"] == np.float32:
            x = rng.uniform(-6, 6, size=inp["shape"]).astype(np.float32)
        else:
            x = rng.integers(-128, 128, size=inp["shape"]).astype(np.int8)
        it.set_tensor(inp["index"], x)
        it.invoke()
        xs.append(x)
        ys.append(it.get_tensor(out["index"]).copy())
    return np.concatenate(xs), np.concatenate(ys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory to write the models to")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-reference", action="store_true",
                    help="write the models only (no tflite-runtime needed)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    interpreter = None
    if not args.no_reference:
        try:
            from tflite_runtime.interpreter import Interpreter, OpResolverType
        except ImportError as e:
            sys.exit(f"tflite_models.py: {e}; run it in the venv `make setup` makes (.venv-tflite), "
                     "or pass --no-reference")

        def interpreter(model_content):
            return Interpreter(model_content=model_content,
                               experimental_op_resolver_type=OpResolverType.BUILTIN_REF)

    manifest = {}
    for i, (name, fn) in enumerate(VALID_MODELS.items()):
        rng = np.random.default_rng(args.seed * 1000 + i)
        data = fn(rng).serialize()
        with open(os.path.join(args.out, name + ".tflite"), "wb") as f:
            f.write(data)
        entry = {"kind": "valid"}
        if interpreter:
            x, y = reference(data, rng, interpreter)
            write_npy(os.path.join(args.out, name + ".x.npy"), x)
            write_npy(os.path.join(args.out, name + ".y.npy"), y)
            entry.update(x=list(x.shape), y=list(y.shape), dtype=str(y.dtype))
        manifest[name] = entry
    for i, (name, (fn, words)) in enumerate(ERROR_MODELS.items()):
        rng = np.random.default_rng(args.seed * 1000 + 500 + i)
        with open(os.path.join(args.out, name + ".tflite"), "wb") as f:
            f.write(fn(rng).serialize())
        manifest[name] = {"kind": "error", "contains": words}
    for i, (name, (fn, words)) in enumerate(CORRUPT_MODELS.items()):
        rng = np.random.default_rng(args.seed * 1000 + 800 + i)
        with open(os.path.join(args.out, name + ".tflite"), "wb") as f:
            f.write(fn(rng).serialize())
        manifest[name] = {"kind": "corrupt", "contains": words}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    print(f"tflite_models.py: {len(VALID_MODELS)} models"
          f"{' with TFLite reference outputs' if interpreter else ''}, {len(ERROR_MODELS)} error models, "
          f"{len(CORRUPT_MODELS)} corrupt files in {args.out}")


if __name__ == "__main__":
    main()
