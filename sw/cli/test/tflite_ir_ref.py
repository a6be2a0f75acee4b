# SPDX-License-Identifier: Apache-2.0
"""Runs the lowered layers of `tpu tflite-info --json` in numpy, exactly
(docs/tflite.md): the integer arithmetic the TPU's executor must do, with
the weights in the driver's layout, the input zero point folded into the
biases and padded taps holding the input zero point. cli_test.py compares
its outputs with TFLite's reference kernels bit for bit, which checks every
parameter the lowering computed.

    run(network_json, x) -> the network's output array

x holds any number of samples along dimension 0 (the batch), not only the
model's own batch size.
"""

import numpy as np

INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def srdhm(a, b):
    """Saturating rounding doubling high multiply (gemmlowp)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    q = ab + nudge
    res = np.where(q >= 0, q >> 31, -((-q) >> 31))  # division truncating toward zero
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, res)


def rdbp(x, e):
    """Rounding divide by 2^e, ties away from zero."""
    x, e = np.asarray(x, np.int64), np.asarray(e, np.int64)
    mask = (np.int64(1) << e) - 1
    rem = x & mask
    thr = (mask >> 1) + (x < 0)
    return (x >> e) + (rem > thr)


def mbqm(x, m, shift):
    """TFLite's MultiplyByQuantizedMultiplier (shift > 0: left)."""
    shift = np.asarray(shift, np.int64)
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    return rdbp(srdhm(np.asarray(x, np.int64) << left, m), right)


def requant(acc, layer):
    y = mbqm(acc, np.array(layer["multiplier"]), np.array(layer["shift"])) + layer["zero_point"]
    return np.clip(y, layer["act_min"], layer["act_max"]).astype(np.int8)


def pad(x, layer, value):
    t, b, l, r = layer["pad"]
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)


def windows(xp, layer, oh, ow):
    """(n, oh, ow, kh, kw, c) views of the padded input."""
    kh, kw = layer["kh"], layer["kw"]
    sh, sw = layer["stride"]
    n, _, _, c = xp.shape
    out = np.empty((n, oh, ow, kh, kw, c), xp.dtype)
    for y in range(oh):
        for x in range(ow):
            out[:, y, x] = xp[:, y * sh:y * sh + kh, x * sw:x * sw + kw, :]
    return out


def run(net, x):
    values = net["values"]
    data = {net["inputs"][0]: x}
    for layer in net["layers"]:
        kind = layer["kind"]
        ins = [data[i] for i in layer["inputs"]]
        out_v = values[layer["output"]]
        shape = [x.shape[0]] + out_v["shape"][1:]  # dimension 0 is the batch, any size
        a = ins[0]
        if kind == "fc":
            w = np.array(layer["w"], np.int64).reshape(layer["k"], layer["n"])
            acc = a.astype(np.int64).reshape(-1, layer["k"]) @ w + np.array(layer["bias_folded"], np.int64)
            y = requant(acc, layer).reshape(shape)
        elif kind == "conv2d":
            xp = pad(a.astype(np.int64), layer, layer["input_zero_point"])
            patches = windows(xp, layer, shape[1], shape[2]).reshape(shape[0] * shape[1] * shape[2], -1)
            w = np.array(layer["w"], np.int64).reshape(layer["k"], layer["n"])
            y = requant(patches @ w + np.array(layer["bias_folded"], np.int64), layer).reshape(shape)
        elif kind == "depthwise":
            xp = pad(a.astype(np.int64), layer, layer["input_zero_point"])
            win = windows(xp, layer, shape[1], shape[2])  # n, oh, ow, kh, kw, c
            dm = layer["depth_multiplier"]
            win = np.repeat(win, dm, axis=5)  # channel o reads input channel o // dm
            w = np.array(layer["w"], np.int64).reshape(layer["kh"], layer["kw"], layer["n"])
            acc = (win * w).sum(axis=(3, 4)) + np.array(layer["bias_folded"], np.int64)
            y = requant(acc, layer)
        elif kind in ("maxpool", "avgpool"):
            xp = pad(a.astype(np.int64), layer, -1000)  # padded taps never count
            win = windows(xp, layer, shape[1], shape[2])
            valid = win != -1000
            if kind == "maxpool":
                acc = np.where(valid, win, -1000).max(axis=(3, 4))
            else:
                s = np.where(valid, win, 0).sum(axis=(3, 4))
                cnt = valid.sum(axis=(3, 4))
                num = np.where(s > 0, s + cnt // 2, s - cnt // 2)
                acc = np.sign(num) * (np.abs(num) // cnt)  # C division, truncating
            y = np.clip(acc, layer["act_min"], layer["act_max"]).astype(np.int8)
        elif kind == "add":
            p = layer["add"]
            a1 = (ins[0].astype(np.int64) + p["in1_offset"]) << p["left_shift"]
            a2 = (ins[1].astype(np.int64) + p["in2_offset"]) << p["left_shift"]
            s1 = rdbp(srdhm(a1, p["in1_multiplier"]), -p["in1_shift"])
            s2 = rdbp(srdhm(a2, p["in2_multiplier"]), -p["in2_shift"])
            raw = rdbp(srdhm(s1 + s2, p["out_multiplier"]), -p["out_shift"]) + p["out_offset"]
            y = np.clip(raw, p["act_min"], p["act_max"]).astype(np.int8)
        elif kind == "reshape":
            y = a.reshape(shape)
        elif kind == "requantize":
            acc = a.astype(np.int64) - layer["input_zero_point"]
            y = np.clip(mbqm(acc, layer["multiplier"][0], layer["shift"][0]) + layer["zero_point"],
                        -128, 127).astype(np.int8)
        elif kind == "quantize":
            v = a.astype(np.float32) / np.float32(layer["scale"])
            r = np.sign(v) * np.floor(np.abs(v) + np.float32(0.5))  # round half away from zero
            y = np.clip(r.astype(np.int64) + layer["zero_point"], -128, 127).astype(np.int8)
        elif kind == "dequantize":
            y = (np.float64(np.float32(layer["scale"])) * (a.astype(np.int64) - layer["zero_point"])).astype(np.float32)
        else:
            raise ValueError(f"unknown layer kind {kind}")
        data[layer["output"]] = y
    return data[net["outputs"][0]]
