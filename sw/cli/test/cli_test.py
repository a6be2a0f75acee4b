#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `tpu` tool end to end, against numpy (CTest cli.tpu.sim, cli.tpu.model, cli.tpu.sc).

    python3 cli_test.py --tpu build/bin/tpu --transport sim --workdir build/cli_test [-k NAME]

Every case runs on the transport given (--transport puts it before every
command), so the same cases hold on the RTL (sim) and on the reference model
(model).

Each case prints one line, PASS or FAIL with the reason; the exit status is
1 when any case failed. Results are checked exactly against numpy; every
failure of the tool must be a non-zero exit (not a signal), exactly one
non-empty line on stderr, and no output file left behind.
"""

import argparse
import json
import os
import random
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
import traceback

import numpy as np

TPU = None
TRANSPORT = "sim"
WORK = None
TFLITE_MODELS = None  # --tflite-models: scripts/tflite_models.py's output
CASES = []
INT32_MIN = -(2 ** 31)
INT32_MAX = 2 ** 31 - 1


def case(fn):
    CASES.append(fn)
    return fn


class Failure(Exception):
    pass


def check(cond, message):
    if not cond:
        raise Failure(message)


def path(name):
    return os.path.join(WORK, name)


def command(args):
    args = [str(a) for a in args]
    chosen = "--transport" in args or "--device" in args
    return [TPU] + ([] if chosen else ["--transport", TRANSPORT]) + args


def tpu(*args, timeout=120, **kw):
    """Runs the tool; returns the CompletedProcess (text output). kw: cwd,
    env, stdout, preexec_fn of subprocess.run."""
    if "stdout" in kw:
        return subprocess.run(command(args), stderr=subprocess.PIPE, text=True, timeout=timeout, **kw)
    return subprocess.run(command(args), capture_output=True, text=True, timeout=timeout, **kw)


def describe(p):
    return (f"`{' '.join(os.path.basename(a) if a == TPU else a for a in p.args)}` exited "
            f"{p.returncode}\nstdout: {(p.stdout or '')[-2000:]}\nstderr: {p.stderr[-2000:]}")


def ok(*args, **kw):
    p = tpu(*args, **kw)
    check(p.returncode == 0, describe(p))
    check(p.stderr == "", "stderr not empty on success:\n" + describe(p))
    return p


def fails(*args, code=1, outputs=(), contains=(), **kw):
    """Runs a command that must fail cleanly; outputs must not exist afterwards."""
    for o in outputs:
        if os.path.exists(o):
            os.remove(o)
    p = tpu(*args, **kw)
    line = one_error_line(p, code, contains)
    for o in outputs:
        check(not os.path.lexists(o), f"{o} exists after a failure")
    check_no_temporaries()
    return line


def one_error_line(p, code, contains=()):
    """p failed cleanly: exit `code`, not a signal, one 'tpu: error:' line."""
    check(p.returncode >= 0, f"killed by signal {-p.returncode}:\n" + describe(p))
    check(p.returncode == code, f"expected exit {code}:\n" + describe(p))
    lines = p.stderr.splitlines()
    check(len(lines) == 1 and p.stderr.endswith("\n"),
          f"expected one line on stderr, got {len(lines)}:\n" + describe(p))
    check(lines[0].startswith("tpu: error: ") and len(lines[0]) > len("tpu: error: ") + 5,
          "stderr line is not 'tpu: error: <message>': " + lines[0])
    check(lines[0].isprintable(), f"stderr line has unprintable characters: {lines[0]!r}")
    for c in contains:
        check(c in lines[0], f"stderr lacks {c!r}: {lines[0]}")
    return lines[0]


def check_no_temporaries(directory=None):
    leftovers = [f for f in os.listdir(directory or WORK) if ".tmp." in f]
    check(not leftovers, f"temporary files left behind: {leftovers}")


def ceil_div(a, b):
    return -(-a // b)


def gemm_figures(m, k, n, array, out_bytes=4):
    """What an M x K x N GEMM on an array x array MXU must do, from the shape
    alone: the MACs of the math and of the padded tiles, the array rows, and
    the packed images' bytes (tpu/plan/gemm.h: A by K blocks, W by tiles, C by
    column tiles of out_bytes per element, the last tile's rows only the
    UB rows of `array` bytes that hold its lanes). For the transposed product
    C^T = W^T x A^T the planner may choose instead, gemm_figures(n, k, m)."""
    kb, ct = ceil_div(k, array), ceil_div(n, array)
    last_lanes = n - (ct - 1) * array
    last_row = ceil_div(last_lanes * out_bytes, array) * array  # bytes of a result row of the last tile
    return {"macs": m * k * n, "padded_macs": m * kb * array * ct * array,
            "array_cycles": m * kb * ct,
            "read_bytes": m * kb * array + kb * ct * array * array,
            "write_bytes": (ct - 1) * m * array * out_bytes + m * last_row}


def planned_figures(s, m, k, n, array):
    """gemm_figures of the orientation the statistics show (the device's array
    rows tell them apart when the padding differs)."""
    f, t = gemm_figures(m, k, n, array), gemm_figures(n, k, m, array)
    return t if s["array_cycles"] == t["array_cycles"] and s["array_cycles"] != f["array_cycles"] else f


def check_utilizations(s, m, k, n, array):
    """The two utilizations and the roofline's inputs in a statistics object."""
    f = planned_figures(s, m, k, n, array)
    peak = s["cycles"] * array * array
    check(s["macs"] == f["macs"], f"macs {s['macs']} != {f['macs']}")
    check(s["useful_macs"] == f["padded_macs"], f"useful_macs {s['useful_macs']} != {f['padded_macs']}")
    check(abs(s["utilization"] - f["macs"] / peak) < 1e-12,
          f"utilization {s['utilization']} != M*K*N / (cycles*n*n) = {f['macs'] / peak}")
    check(abs(s["array_utilization"] - f["padded_macs"] / peak) < 1e-12,
          f"array_utilization {s['array_utilization']} != {f['padded_macs'] / peak}")
    check(0 < s["utilization"] <= s["array_utilization"] <= 1,
          f"utilization {s['utilization']}, array_utilization {s['array_utilization']}")
    for key in ("array_cycles", "read_bytes", "write_bytes"):
        check(s[key] == f[key], f"{key} {s[key]} != {f[key]}")


# The default configuration's link, each way (scripts/config_table.py).
LINK_BYTES_PER_CYCLE = 16


def check_roofline(s, m, k, n, array=16):
    """The roofline object of bench/perf JSON, recomputed from the shape."""
    r = s["roofline"]
    check(isinstance(r, dict), f"roofline is {r!r}")
    for key in ("mxu_cycles", "read_cycles", "write_cycles", "fixed_cycles", "command_cycles",
                "queued_command_cycles", "bound_cycles", "limit", "fraction"):
        check(key in r, f"roofline lacks {key!r}: {r}")
    f = planned_figures(s, m, k, n, array)
    terms = {"MXU": f["array_cycles"],
             "link read": ceil_div(f["read_bytes"], LINK_BYTES_PER_CYCLE),
             "link write": ceil_div(f["write_bytes"], LINK_BYTES_PER_CYCLE)}
    check([r["mxu_cycles"], r["read_cycles"], r["write_cycles"]] == list(terms.values()),
          f"roofline terms {r}, expected {terms}")
    check(r["command_cycles"] > 0 and 0 <= r["queued_command_cycles"] <= r["command_cycles"], str(r))
    if TRANSPORT in ("sim", "sc"):  # the device fetches a queued command while the one in front runs
        check(0 < r["queued_command_cycles"] < r["command_cycles"] // 4, str(r))
    check(r["fixed_cycles"] == r["command_cycles"] + (s["commands"] - 1) * r["queued_command_cycles"], str(r))
    check(r["bound_cycles"] == max(terms.values()) + r["fixed_cycles"], str(r))
    check(r["limit"] == max(terms, key=terms.get), f"limit {r['limit']!r}, terms {terms}")
    check(abs(r["fraction"] - r["bound_cycles"] / s["cycles"]) < 1e-12,
          f"fraction {r['fraction']} != bound / cycles = {r['bound_cycles'] / s['cycles']}")
    check(r["fraction"] > 0, str(r))
    if TRANSPORT in ("sim", "sc"):  # the RTL, cycle-accurate: the bound is a lower bound
        check(r["fraction"] <= 1, f"the bound {r['bound_cycles']} exceeds the {s['cycles']} cycles")


def rand_i8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int64).astype(np.int8)


# ---- info, asm, disasm ----------------------------------------------------------

@case
def info():
    p = ok("info")
    for s in ("0x54505531", "TPU1", "16x16", "int8", "unified buffer", "DMA tags"):
        check(s in p.stdout, f"info lacks {s!r}:\n{p.stdout}")
    check("configuration       default" in p.stdout, "info lacks the configuration:\n" + p.stdout)
    p = ok("--config", "tiny", "info")
    check("4x4" in p.stdout and "configuration       tiny" in p.stdout, "tiny is not 4x4:\n" + p.stdout)
    fails("--config", "nosuch", "info", contains=["tiny, small, default, wide"])
    fails("--transport", "pcie", "info", contains=["unknown transport 'pcie'", "model:", "sim:"])


PROGRAM = """\
# every instruction once
rhm ub=0 rows=8 host=0x1000 stride=16
cfg QMULT 0x40000000
cfg BIAS+3 -5
rw host=0x2000 tiles=2 stride=16
loop n=2 body=1 ub_inc=8
mmc ub=0 acc=16 rows=8 acc pop
act acc=16 ub=64 rows=8 func=relu bias
vop poolmax a=64 dst=80 rows=4 shift=1
whm ub=80 rows=4 host=0x3000 stride=16
sync mem|mmc
irq
.word 0xff 0x1
halt
"""


@case
def asm_disasm_round_trip():
    src, bin1, bin2, txt = path("p.asm"), path("p.bin"), path("p2.bin"), path("p.txt")
    with open(src, "w") as f:
        f.write(PROGRAM)
    ok("asm", src, "-o", bin1)
    data = open(bin1, "rb").read()
    check(len(data) == 13 * 16, f"{len(data)} bytes for 13 instructions")
    # HALT is opcode 0x0B in the low byte of w0, little-endian.
    check(data[-16] == 0x0B and not any(data[-15:]), "last instruction is not HALT")
    p = ok("disasm", bin1)
    lines = p.stdout.splitlines()
    check(len(lines) == 13, f"disasm printed {len(lines)} lines:\n{p.stdout}")
    check(lines[0].startswith("rhm") and lines[-1] == "halt", p.stdout)
    ok("disasm", bin1, "-o", txt)
    check(open(txt).read() == p.stdout, "disasm -o differs from stdout")
    ok("asm", txt, "-o", bin2)
    check(open(bin2, "rb").read() == data, "asm(disasm(x)) != x")


@case
def asm_errors():
    src, out = path("bad.asm"), path("bad.bin")
    with open(src, "w") as f:
        f.write("halt\n# comment\nmmc ub=0 acc=0 rows=1 bogus\n")
    fails("asm", src, "-o", out, outputs=[out], contains=[src + ": line 3: "])
    fails("asm", path("missing.asm"), "-o", out, outputs=[out], contains=["missing.asm"])
    with open(path("odd.bin"), "wb") as f:
        f.write(b"\x0b" + bytes(16))
    fails("disasm", path("odd.bin"), contains=["17 bytes"])
    fails("asm", src, code=2)  # no -o


# ---- matmul against numpy -------------------------------------------------------

def matmul_case(m, k, n, seed, config="default", array=16):
    rng = np.random.default_rng(seed)
    a, b = rand_i8(rng, (m, k)), rand_i8(rng, (k, n))
    pa, pb, pc, ps = path("A.npy"), path("B.npy"), path("C.npy"), path("stats.json")
    np.save(pa, a)
    np.save(pb, b)
    for f in (pc, ps):
        if os.path.exists(f):
            os.remove(f)
    p = ok("--config", config, "matmul", "--a", pa, "--b", pb, "--out", pc, "--stats-json", ps)
    check(len(p.stdout.splitlines()) == 1, "summary is not one line:\n" + p.stdout)
    c = np.load(pc)
    check(c.dtype == np.int32 and c.shape == (m, n), f"C is {c.dtype} {c.shape}")
    ref = a.astype(np.int32) @ b.astype(np.int32)
    if not np.array_equal(c, ref):
        bad = np.argwhere(c != ref)
        i, j = bad[0]
        raise Failure(f"{len(bad)} elements differ; C[{i},{j}] = {c[i, j]}, numpy {ref[i, j]}")
    s = json.load(open(ps))
    for key in ("cycles", "useful_macs", "utilization", "array_utilization", "macs", "commands",
                "instructions", "n", "config", "shape", "counters", "array_cycles", "read_bytes",
                "write_bytes"):
        check(key in s, f"stats lack {key!r}: {s}")
    for key in ("cycles", "mxu_busy", "useful_macs", "wgt_stall", "wgt_shift", "dep_stall",
                "mem_stall"):
        check(key in s["counters"], f"counters lack {key!r}: {s['counters']}")
    check(s["shape"] == {"m": m, "k": k, "n": n}, f"shape {s['shape']}")
    check(s["config"] == config and s["n"] == array, f"config {s['config']}, n {s['n']}")
    check(s["cycles"] > 0 and s["commands"] >= 1 and s["instructions"] >= 1, str(s))
    check_utilizations(s, m, k, n, array)
    check("roofline" not in s, "matmul's statistics have a roofline (bench and perf only)")
    check(s["counters"]["cycles"] > 0, "counters.cycles is 0")


@case
def matmul_1x1x1():
    matmul_case(1, 1, 1, 1)


@case
def matmul_every_configuration():
    """Each named configuration the transport has; the simulator has the ones
    the build made (make test: tiny and default; make regress CONFIGS=...)."""
    sizes = {"tiny": 4, "small": 8, "default": 16, "wide": 32}
    ran = []
    for config, array in sizes.items():
        p = tpu("--config", config, "info")
        if p.returncode != 0 and "is not built into this simulator" in p.stderr:
            continue
        check(p.returncode == 0, describe(p))
        matmul_case(100, 300, 70, 11, config=config, array=array)
        ran.append(config)
    check("tiny" in ran and "default" in ran, f"ran only on {ran}")
    if TRANSPORT == "model":
        check(len(ran) == len(sizes), f"the model has every configuration; ran on {ran}")
    print(f"  matmul 100x300x70 exact on {', '.join(ran)}")


@case
def matmul_7x13x5():
    matmul_case(7, 13, 5, 2)


@case
def matmul_7x13x5_tiny():
    matmul_case(7, 13, 5, 12, config="tiny", array=4)


@case
def matmul_100x300x70():
    matmul_case(100, 300, 70, 3)


@case
def matmul_256x256x256():
    matmul_case(256, 256, 256, 4)


@case
def matmul_extremes():
    # -128 * -128 summed over K: the largest products, no overflow of int32.
    a = np.full((3, 40), -128, np.int8)
    b = np.full((40, 2), -128, np.int8)
    np.save(path("A.npy"), a)
    np.save(path("B.npy"), b)
    ok("matmul", "--a", path("A.npy"), "--b", path("B.npy"), "--out", path("C.npy"))
    check(np.array_equal(np.load(path("C.npy")), a.astype(np.int32) @ b.astype(np.int32)),
          "wrong extremes")


@case
def matmul_empty_dimensions():
    for (m, k, n) in ((0, 5, 3), (3, 0, 4)):
        np.save(path("A.npy"), np.zeros((m, k), np.int8))
        np.save(path("B.npy"), np.zeros((k, n), np.int8))
        ok("matmul", "--a", path("A.npy"), "--b", path("B.npy"), "--out", path("C.npy"))
        c = np.load(path("C.npy"))
        check(c.dtype == np.int32 and c.shape == (m, n) and not c.any(), f"C is {c.dtype} {c.shape}")


# ---- matmul failures ----------------------------------------------------------------

def bad_matmul(a, b, code=1, contains=(), extra=()):
    out, stats = path("out.npy"), path("out.json")
    return fails(*extra, "matmul", "--a", a, "--b", b, "--out", out, "--stats-json", stats,
                 code=code, outputs=[out, stats], contains=contains)


@case
def rejects_inner_dimension_mismatch():
    rng = np.random.default_rng(5)
    np.save(path("A.npy"), rand_i8(rng, (7, 13)))
    np.save(path("B.npy"), rand_i8(rng, (12, 5)))
    line = bad_matmul(path("A.npy"), path("B.npy"))
    check(line == "tpu: error: inner dimensions differ: A is 7x13 but B is 12x5 "
                  "(A's columns must equal B's rows)", line)


@case
def rejects_wrong_dtypes():
    rng = np.random.default_rng(6)
    np.save(path("B.npy"), rand_i8(rng, (4, 4)))
    np.save(path("F.npy"), rng.standard_normal((4, 4)))
    bad_matmul(path("F.npy"), path("B.npy"),
               contains=[path("F.npy") + ": dtype float64 is not supported", "astype(np.int8)"])
    np.save(path("S.npy"), rand_i8(rng, (4, 4)).astype(np.int16))
    bad_matmul(path("S.npy"), path("B.npy"), contains=["dtype int16 is not supported"])
    np.save(path("I.npy"), rand_i8(rng, (4, 4)).astype(np.int32))
    bad_matmul(path("B.npy"), path("I.npy"), contains=["dtype int32 where int8 is needed"])
    np.save(path("V.npy"), rand_i8(rng, (4,)))
    bad_matmul(path("V.npy"), path("B.npy"), contains=["1-d", "2-d array is needed"])
    np.save(path("T.npy"), np.asfortranarray(rand_i8(rng, (4, 4))))
    bad_matmul(path("T.npy"), path("B.npy"), contains=["Fortran"])


@case
def rejects_missing_and_corrupt_files():
    rng = np.random.default_rng(7)
    np.save(path("B.npy"), rand_i8(rng, (4, 4)))
    bad_matmul(path("nosuch.npy"), path("B.npy"),
               contains=[path("nosuch.npy") + ": cannot open: No such file or directory"])
    with open(path("R.npy"), "wb") as f:
        f.write(rng.integers(0, 256, 300, dtype=np.uint8).tobytes())
    bad_matmul(path("R.npy"), path("B.npy"), contains=[path("R.npy") + ": not a .npy file"])
    whole = open(path("B.npy"), "rb").read()
    with open(path("short.npy"), "wb") as f:
        f.write(whole[:-3])
    bad_matmul(path("B.npy"), path("short.npy"), contains=[path("short.npy") + ": truncated"])
    with open(path("hdr.npy"), "wb") as f:
        f.write(whole.replace(b"'shape'", b"'shap'"))
    bad_matmul(path("hdr.npy"), path("B.npy"), contains=["malformed header"])


@case
def rejects_results_too_large_for_memory():
    # Two files of 128 bytes whose product would be 2^31 - 1 squared int32.
    big = 2147483647
    np.save(path("Wide.npy"), np.zeros((big, 0), np.int8))
    np.save(path("Tall.npy"), np.zeros((0, big), np.int8))
    bad_matmul(path("Wide.npy"), path("Tall.npy"),
               contains=["the result C, 2147483647x2147483647 int32 (16 EiB), is larger than this machine's memory"])
    np.save(path("WideF.npy"), np.zeros((big, 0), np.float32))
    np.save(path("TallF.npy"), np.zeros((0, big), np.float32))
    out = path("out.npy")
    fails("--config", "tiny_bf16", "matmul", "--dtype", "bf16", "--a", path("WideF.npy"), "--b", path("TallF.npy"),
          "--out", out, outputs=[out], contains=["the result C, 2147483647x2147483647 float32 (16 EiB), is larger"])


@case
def error_messages_keep_every_byte():
    # A dtype string holding a NUL byte: the whole string, escaped, and the
    # hint after it reach the message.
    header = b"{'descr': '\xff\xfe\x00zz', 'fortran_order': False, 'shape': (2, 2), }"
    header += b" " * ((64 - (10 + len(header) + 1) % 64) % 64) + b"\n"
    with open(path("nul.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + bytes(4))
    np.save(path("B.npy"), np.zeros((2, 2), np.int8))
    bad_matmul(path("nul.npy"), path("B.npy"),
               contains=["dtype '\\xff\\xfe\\x00zz' is not supported; the TPU takes int8 matrices"])


@case
def rejects_usage_errors():
    np.save(path("B.npy"), np.zeros((2, 2), np.int8))
    fails("matmul", "--a", path("B.npy"), "--out", path("out.npy"), code=2,
          outputs=[path("out.npy")], contains=["--b"])
    fails("frobnicate", code=2)
    fails(code=2)  # no subcommand
    fails("bench", "--m", "0", "--k", "1", "--n", "1", code=2)
    fails("--timeout", "-5", "info", code=2)


@case
def device_timeout():
    rng = np.random.default_rng(8)
    np.save(path("A.npy"), rand_i8(rng, (256, 256)))
    np.save(path("B.npy"), rand_i8(rng, (256, 256)))
    # The tool's --timeout is the device's limit for every command, the
    # operators' included: 256^3 takes ~80k cycles.
    out = path("out.npy")
    if os.path.exists(out):
        os.remove(out)
    bad_matmul(path("A.npy"), path("B.npy"), extra=["--timeout", "2000"], contains=["2000"])


# ---- matmul --dtype bf16 against numpy ----------------------------------------------
#
# The reference is the numpy reimplementation of docs/numerics.md that
# bf16_numpy_test.py checks against the model bit for bit (the order of
# additions: K blocks of N rows, each summed from +0 down a column, the blocks
# added in order); fp32_to_bf16 rounds the float32 inputs as the tool does.

_BF16 = None


def bf16_numerics():
    global _BF16
    if _BF16 is None:
        import importlib.util
        here = os.path.dirname(os.path.abspath(__file__))
        src = os.path.join(here, "..", "..", "..", "sim", "model", "test", "bf16_numpy_test.py")
        spec = importlib.util.spec_from_file_location("bf16_numpy", src)
        _BF16 = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_BF16)
    return _BF16


BF16_CONFIG, BF16_ARRAY = "tiny_bf16", 4  # the bf16 configuration every transport builds


def bf16_reference(a_bits, b_bits, n=BF16_ARRAY):
    """C (float32) of bf16 bits A (M x K) and B (K x N) on an n x n array."""
    f = bf16_numerics()
    m, k = a_bits.shape
    kp = max(1, ceil_div(k, n)) * n
    a = np.zeros((m, kp), np.float32)
    w = np.zeros((kp, b_bits.shape[1]), np.float32)
    a[:, :k] = f.bf16_to_f32(a_bits)
    w[:k, :] = f.bf16_to_f32(b_bits)
    return f.mxu_matmul(a, w, n)


def rand_f32_special(rng, shape, every=4):
    """N(0, 1) float32 with, one in `every`, special values: zeros, subnormals,
    the smallest normal, max float32 (rounds to bf16 inf), infinities, NaN,
    values whose products overflow or flush."""
    special = np.array([0.0, -0.0, 1e-40, -1e-45, 2.0 ** -126, 3.4e38, np.inf, -np.inf, np.nan,
                        1e30, -1e30, 1e-30, 2.0 ** -70], np.float32)
    x = rng.standard_normal(shape).astype(np.float32)
    pick = rng.integers(0, every, shape) == 0
    x[pick] = special[rng.integers(0, len(special), shape)][pick]
    return x


def bf16_matmul_case(a, b, raw=False, config=BF16_CONFIG, array=BF16_ARRAY):
    """Runs tpu matmul --dtype bf16 on a, b (float32, or uint16 bits with raw)
    and checks C bit for bit; returns the statistics."""
    f = bf16_numerics()
    pa, pb, pc, ps = path("A.npy"), path("B.npy"), path("C.npy"), path("stats.json")
    np.save(pa, a)
    np.save(pb, b)
    for o in (pc, ps):
        if os.path.exists(o):
            os.remove(o)
    p = ok("--config", config, "matmul", "--dtype", "bf16", *(["--raw-bf16"] if raw else []),
           "--a", pa, "--b", pb, "--out", pc, "--stats-json", ps)
    check(len(p.stdout.splitlines()) == 1 and "float32" in p.stdout, "summary:\n" + p.stdout)
    c = np.load(pc)
    m, n = a.shape[0], b.shape[1]
    check(c.dtype == np.float32 and c.shape == (m, n), f"C is {c.dtype} {c.shape}")
    a_bits = a if raw else f.fp32_to_bf16(a)
    b_bits = b if raw else f.fp32_to_bf16(b)
    ref = bf16_reference(a_bits, b_bits, array)
    got, want = c.view(np.uint32), ref.view(np.uint32)
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        i, j = bad[0]
        raise Failure(f"{len(bad)} elements differ; C[{i},{j}] = {got[i, j]:#010x}, "
                      f"reference {want[i, j]:#010x}")
    s = json.load(open(ps))
    check(s["dtype"] == "bf16" and s["shape"] == {"m": m, "k": a.shape[1], "n": n}, str(s))
    check(s["config"] == config and s["n"] == array, f"config {s['config']}, n {s['n']}")
    check(s["cycles"] > 0 and s["commands"] >= 1 and s["macs"] == m * a.shape[1] * n, str(s))
    return s


@case
def matmul_bf16_float32_inputs_exact():
    rng = np.random.default_rng(21)
    for (m, k, n) in ((1, 1, 1), (7, 13, 5), (33, 50, 21), (5, 4, 8)):
        bf16_matmul_case(rand_f32_special(rng, (m, k)), rand_f32_special(rng, (k, n), every=6))


@case
def matmul_bf16_raw_bits_exact():
    rng = np.random.default_rng(22)
    f = bf16_numerics()
    a = f.fp32_to_bf16(rand_f32_special(rng, (9, 23)))
    b = f.fp32_to_bf16(rand_f32_special(rng, (23, 6)))
    a[0, :3] = [0x0001, 0x807F, 0x7F81]  # subnormals (read as zero), a signalling NaN
    bf16_matmul_case(a, b, raw=True)
    # float32 inputs equal to bf16 values give the same C as their bits.
    ok("--config", BF16_CONFIG, "matmul", "--dtype", "bf16", "--raw-bf16", "--a", path("A.npy"),
       "--b", path("B.npy"), "--out", path("C_raw.npy"))
    np.save(path("Af.npy"), f.bf16_to_f32(a))
    np.save(path("Bf.npy"), f.bf16_to_f32(b))
    ok("--config", BF16_CONFIG, "matmul", "--dtype", "bf16", "--a", path("Af.npy"), "--b", path("Bf.npy"),
       "--out", path("C_f32.npy"))
    check(np.array_equal(np.load(path("C_raw.npy")).view(np.uint32), np.load(path("C_f32.npy")).view(np.uint32)),
          "float32 inputs and their bf16 bits give different results")


@case
def matmul_bf16_long_k_and_nan():
    rng = np.random.default_rng(23)
    a = rng.standard_normal((3, 1001)).astype(np.float32)
    b = rng.standard_normal((1001, 5)).astype(np.float32)
    a[1, 500] = np.nan
    s = bf16_matmul_case(a, b)
    c = np.load(path("C.npy"))
    check(np.all(np.isnan(c[1])) and not np.any(np.isnan(c[[0, 2]])), "NaN did not stay in its row")
    check(np.all(c[1].view(np.uint32) == 0x7FC00000), "NaN is not the canonical 0x7FC00000")
    check(s["commands"] >= 1, str(s))


@case
def matmul_bf16_within_the_bound_of_numpy_float32():
    """docs/numerics.md: |C_tpu - C_f32| <= K 2^-23 (1 + e) S + (2K - 1) 2^-126 (1 + e)."""
    rng = np.random.default_rng(24)
    f = bf16_numerics()
    m, k, n = 16, 300, 12
    a = f.bf16_to_f32(f.fp32_to_bf16(rng.standard_normal((m, k)).astype(np.float32)))
    b = f.bf16_to_f32(f.fp32_to_bf16(rng.standard_normal((k, n)).astype(np.float32)))
    bf16_matmul_case(a, b)
    c = np.load(path("C.npy")).astype(np.float64)
    c_f32 = (a @ b).astype(np.float64)
    s = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    eps = 1 / (1 - (k - 1) * 2.0 ** -24) - 1
    bound = k * 2.0 ** -23 * (1 + eps) * s + (2 * k - 1) * 2.0 ** -126 * (1 + eps)
    err = np.abs(c - c_f32)
    check(np.all(err <= bound), f"max error {np.max(err - bound):.3g} above the bound")


@case
def matmul_bf16_empty_dimensions():
    for (m, k, n) in ((0, 5, 3), (3, 0, 4)):
        np.save(path("A.npy"), np.zeros((m, k), np.float32))
        np.save(path("B.npy"), np.zeros((k, n), np.float32))
        ok("--config", BF16_CONFIG, "matmul", "--dtype", "bf16", "--a", path("A.npy"), "--b", path("B.npy"),
           "--out", path("C.npy"))
        c = np.load(path("C.npy"))
        check(c.dtype == np.float32 and c.shape == (m, n) and not np.signbit(c).any() and not c.any(),
              f"C is {c.dtype} {c.shape}")


def bad_bf16_matmul(a, b, code=1, contains=(), extra=(), config=BF16_CONFIG):
    out, stats = path("out.npy"), path("out.json")
    return fails("--config", config, "matmul", "--dtype", "bf16", *extra, "--a", a, "--b", b, "--out", out,
                 "--stats-json", stats, code=code, outputs=[out, stats], contains=contains)


@case
def matmul_bf16_rejects_bad_inputs():
    rng = np.random.default_rng(25)
    np.save(path("F.npy"), rng.standard_normal((4, 4)).astype(np.float32))
    np.save(path("U.npy"), rng.integers(0, 0x8000, (4, 4)).astype(np.uint16))
    np.save(path("I8.npy"), rand_i8(rng, (4, 4)))
    np.save(path("F64.npy"), rng.standard_normal((4, 4)))
    np.save(path("F3.npy"), rng.standard_normal((3, 3)).astype(np.float32))
    np.save(path("V.npy"), rng.standard_normal(4).astype(np.float32))
    bad_bf16_matmul(path("I8.npy"), path("F.npy"),
                    contains=[path("I8.npy") + ": dtype int8 is not a bf16 operand", "float32"])
    bad_bf16_matmul(path("F.npy"), path("F64.npy"),
                    contains=[path("F64.npy") + ": dtype float64 is not supported"])
    line = bad_bf16_matmul(path("F.npy"), path("U.npy"))
    check(line == f"tpu: error: A and B differ in dtype: {path('F.npy')} is float32 but {path('U.npy')} is "
                  "uint16; give both as float32 (rounded to bf16)", line)
    bad_bf16_matmul(path("U.npy"), path("F.npy"), extra=["--raw-bf16"], contains=["differ in dtype"])
    bad_bf16_matmul(path("F.npy"), path("F.npy"), extra=["--raw-bf16"],
                    contains=["float32 with --raw-bf16", "uint16"])
    bad_bf16_matmul(path("U.npy"), path("U.npy"), contains=["uint16 is taken only as bf16 bits, with --raw-bf16"])
    bad_bf16_matmul(path("V.npy"), path("F.npy"), contains=["2-d"])
    line = bad_bf16_matmul(path("F.npy"), path("F3.npy"))
    check(line == "tpu: error: inner dimensions differ: A is 4x4 but B is 3x3 (A's columns must equal B's rows)",
          line)
    # An int8-only device.
    bad_bf16_matmul(path("F.npy"), path("F.npy"), config="tiny", contains=["no bf16 datapath"])
    # Usage: --raw-bf16 without --dtype bf16, an unknown dtype.
    out = path("out.npy")
    fails("matmul", "--raw-bf16", "--a", path("I8.npy"), "--b", path("I8.npy"), "--out", out, code=2,
          outputs=[out], contains=["--raw-bf16 needs --dtype bf16"])
    fails("matmul", "--dtype", "fp8", "--a", path("F.npy"), "--b", path("F.npy"), "--out", out, code=2,
          outputs=[out], contains=["--dtype"])


# ---- run ---------------------------------------------------------------------------

@case
def run_timeout():
    src, dump = path("long.asm"), path("long.bin")
    zeros = path("zeros64k.bin")
    with open(src, "w") as f:  # hundreds of millions of rows: far beyond the limit
        f.write("loop n=65535 body=1\nrhm ub=0 rows=4096 host=0x0 stride=16\nhalt\n")
    with open(zeros, "wb") as f:  # the rows it reads, granted by --load
        f.write(bytes(4096 * 16))
    fails("--timeout", "5000", "run", src, "--load", f"0x0={zeros}", "--dump", f"0x0:16={dump}",
          outputs=[dump], contains=["5000"])


@case
def run_copies_through_the_unified_buffer():
    src, data, dump, stats = path("copy.asm"), path("in.bin"), path("dump.bin"), path("run.json")
    with open(src, "w") as f:
        f.write("rhm ub=0 rows=4 host=0x1000 stride=16\n"
                "whm ub=0 rows=4 host=0x2000 stride=16\n"
                "halt\n")
    payload = bytes(range(64))
    with open(data, "wb") as f:
        f.write(payload)
    p = ok("run", src, "--load", f"0x1000={data}", "--dump", f"0x2000:64={dump}",
           "--stats-json", stats)
    check("OK" in p.stdout and "mem_stall" in p.stdout, p.stdout)
    check(open(dump, "rb").read() == payload, "dumped bytes differ from the loaded ones")
    s = json.load(open(stats))
    check(s["status"] == 0 and s["instructions"] == 3 and "counters" in s, str(s))
    # The same program as a binary.
    ok("asm", src, "-o", path("copy.bin"))
    os.remove(dump)
    ok("run", path("copy.bin"), "--load", f"4096={data}", "--dump", f"0x2000:0x40={dump}")
    check(open(dump, "rb").read() == payload, "binary program: dumped bytes differ")


@case
def run_grants_exactly_the_named_regions():
    """--load regions may be read, --dump regions written, nothing else."""
    src, data, dump = path("grant.asm"), path("grant_in.bin"), path("grant_out.bin")
    payload = bytes(range(100, 164))
    with open(data, "wb") as f:
        f.write(payload)
    regions = ["--load", f"0x1000={data}", "--dump", f"0x2000:64={dump}"]

    def program(text):
        with open(src, "w") as f:
            f.write(text + "halt\n")

    # Inside: strided rows, the whole of both regions.
    program("rhm ub=0 rows=2 host=0x1000 stride=48\nwhm ub=0 rows=2 host=0x2000 stride=48\n")
    ok("run", src, *regions)
    got = open(dump, "rb").read()
    check(got[:16] == payload[:16] and got[48:] == payload[48:], "strided copy differs")
    # One region loaded and dumped: read and written in place.
    program("rhm ub=0 rows=4 host=0x1000 stride=16\nwhm ub=0 rows=4 host=0x1000 stride=16\n")
    ok("run", src, "--load", f"0x1000={data}", "--dump", f"0x1000:64={dump}")
    check(open(dump, "rb").read() == payload, "in-place copy differs")

    # A WHM that ends 16 bytes past the --dump region: MEM_FAULT, no output.
    program("rhm ub=0 rows=4 host=0x1000 stride=16\nwhm ub=0 rows=4 host=0x2010 stride=16\n")
    fails("run", src, *regions, outputs=[dump],
          contains=["instruction 1: MEM_FAULT", "its write to 0x2010 is outside the host memory it was "
                    "granted (read 0x1000..0x103f, write 0x2000..0x203f)", "--dump regions",
                    "Nothing was dumped"])
    # Reading the --dump region, or past the --load region.
    program("rhm ub=0 rows=1 host=0x2000 stride=16\n")
    fails("run", src, *regions, outputs=[dump], contains=["instruction 0: MEM_FAULT", "read from 0x2000"])
    program("irq\nrhm ub=0 rows=4 host=0x1001 stride=16\n")
    fails("run", src, *regions, outputs=[dump], contains=["instruction 1: MEM_FAULT", "read from 0x1001"])
    # Writing the --load region.
    program("whm ub=0 rows=1 host=0x1000 stride=16\n")
    fails("run", src, *regions, outputs=[dump], contains=["write to 0x1000"])
    # With no regions a program reaches no host memory; without memory it runs.
    program("rhm ub=0 rows=1 host=0x1000 stride=16\n")
    fails("run", src, contains=["read from 0x1000", "granted (none)"])
    program("irq\n")
    ok("run", src)
    # Each region is a window; a command takes at most 8.
    many = [a for i in range(9) for a in ("--dump", f"{hex(0x3000 + 64 * i)}:64={path(f'm{i}.bin')}")]
    fails("run", src, *many, code=2, contains=["9 --load/--dump regions", "at most 8"],
          outputs=[path(f"m{i}.bin") for i in range(9)])


@case
def run_program_error():
    src, dump = path("fault.asm"), path("fault.bin")
    with open(src, "w") as f:
        f.write("cfg QMULT 0x40000000\nmmc ub=0 acc=0 rows=1\nhalt\n")
    fails("run", src, "--dump", f"0x0:16={dump}", outputs=[dump], contains=["NO_WEIGHTS"])
    # The device recovers: the next command on a fresh device is fine anyway,
    # and an error program in assembly is reported with its line.
    with open(src, "w") as f:
        f.write("halt\nnonsense\n")
    fails("run", src, contains=[src + ": line 2: "])


@case
def run_rejects_bad_regions():
    src, data = path("h.asm"), path("in.bin")
    with open(src, "w") as f:
        f.write("halt\n")
    with open(data, "wb") as f:
        f.write(bytes(32))
    fails("run", src, "--load", f"0xffffffffffffff00={data}", contains=["DMA region"])
    # `info` says where the driver's region starts; a dump reaching across it is refused.
    line = [l for l in ok("info").stdout.splitlines() if l.startswith("raw host memory")][0]
    base = int(line.split()[5], 16)
    fails("run", src, "--dump", f"{hex(base - 16)}:32=" + path("d.bin"),
          outputs=[path("d.bin")], contains=["DMA region", hex(base)])
    fails("run", src, "--load", "nonsense", code=2, contains=["ADDR=FILE"])
    fails("run", src, "--dump", "0x10=" + path("d.bin"), code=2, contains=["ADDR:LEN=FILE"])
    fails("run", src, "--dump", "0x0:0x20000000=" + path("d.bin"), code=2, contains=["split it"])
    fails("run", src, "--load", f"0x0={path('missing.bin')}", contains=["missing.bin"])


# ---- bench, perf ------------------------------------------------------------------

@case
def bench_and_perf():
    js = path("bench.json")
    p = ok("--seed", "3", "bench", "--m", "20", "--k", "40", "--n", "30", "--json", js)
    for word in ("cycles", "utilization", "array utilization", "roofline bound", "link read",
                 "link write", "fixed", "achieved"):
        check(word in p.stdout, f"bench lacks {word!r}:\n{p.stdout}")
    s = json.load(open(js))
    check(s["exact"] is True and s["sim_cycles_per_second"] > 0 and s["wall_seconds"] > 0, str(s))
    check(s["shape"] == {"m": 20, "k": 40, "n": 30}, str(s))
    check_utilizations(s, 20, 40, 30, 16)
    check_roofline(s, 20, 40, 30)
    # perf: an MXU-bound and a write-bound shape (int32 C: 64 bytes per array row, 4 cycles).
    for m, k, n in ((33, 100, 40), (40, 17, 200)):
        p = ok("perf", "--m", m, "--k", k, "--n", n, "--json", js)
        for word in ("mxu_busy", "wgt_stall", "wgt_shift", "dep_stall", "mem_stall", "useful MACs",
                     "utilization", "array utilization", "roofline bound", "achieved"):
            check(word in p.stdout, f"perf lacks {word!r}:\n{p.stdout}")
        s = json.load(open(js))
        check_utilizations(s, m, k, n, 16)
        check_roofline(s, m, k, n)
        expect = "MXU" if k > 48 else "link write"
        check(s["roofline"]["limit"] == expect, f"{m}x{k}x{n}: limit {s['roofline']['limit']!r}")
        check(f"limit: {expect}" in p.stdout, p.stdout)


@case
def bench_bf16():
    """bench --dtype bf16: bf16 operands, fp32 results, exact against the order of additions."""
    js = path("bench_bf16.json")
    p = ok("--config", BF16_CONFIG, "--seed", "4", "bench", "--m", "21", "--k", "37", "--n", "10",
           "--dtype", "bf16", "--json", js)
    check("bf16 on" in p.stdout and "yes (matches the CPU reference)" in p.stdout, p.stdout)
    s = json.load(open(js))
    check(s["exact"] is True and s["dtype"] == "bf16" and s["shape"] == {"m": 21, "k": 37, "n": 10}, str(s))
    check(s["macs"] == 21 * 37 * 10 and s["cycles"] > 0, str(s))
    fails("bench", "--m", "3", "--k", "3", "--n", "3", "--dtype", "bf16",
          contains=["no bf16 datapath", "tiny_bf16"])  # the default configuration is int8 only
    fails("bench", "--m", "3", "--k", "3", "--n", "3", "--dtype", "fp8", code=2, contains=["--dtype"])
    fails("--config", BF16_CONFIG, "bench", "--m", "3", "--k", "3", "--n", "3", "--dtype", "bf16",
          "--stream", "2", code=2, contains=["--stream runs int8 products only"])


@case
def bench_stream():
    """bench --stream: independent products fused into fewer commands, every one exact."""
    js = path("stream.json")
    for depth in ([], ["--depth", "1"], ["--depth", "3"]):
        p = ok("--seed", "5", "bench", "--m", "20", "--k", "33", "--n", "17", "--stream", "6", *depth,
               "--json", js)
        for word in ("cycles", "per product", "utilization", "exact", "yes"):
            check(word in p.stdout, f"bench --stream lacks {word!r}:\n{p.stdout}")
        s = json.load(open(js))
        st = s["stream"]
        check(s["exact"] is True and st["products"] == 6 and 1 <= s["commands"] < 6, str(s))
        check("products a command" in p.stdout, f"bench --stream does not say the products were fused:\n{p.stdout}")
        check(st["depth"] == (int(depth[1]) if depth else 63), str(st))
        check(abs(st["cycles_per_product"] - s["cycles"] / 6) < 1e-6, str(s))
        check(s["macs"] == 6 * 20 * 33 * 17, str(s))
        check(abs(s["utilization"] - s["macs"] / (s["cycles"] * 256)) < 1e-9, str(s))
    fails("bench", "--m", "3", "--k", "3", "--n", "3", "--depth", "2", code=2, contains=["--stream"])
    fails("bench", "--m", "3", "--k", "3", "--n", "3", "--stream", "0", code=2,
          contains=["--stream: 0 is out of range; it takes 1..100000"])


# ---- mlp -------------------------------------------------------------------------

def act_lane(acc, bias, layer):
    """quant.h's act_lane on int64 numpy arrays."""
    x = np.clip(acc + bias, INT32_MIN, INT32_MAX)
    m = np.int64(layer["multiplier"])
    ab = x * m
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    t = ab + nudge
    high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # division truncating toward zero
    if layer["multiplier"] == INT32_MIN:
        high = np.where(x == INT32_MIN, INT32_MAX, high)
    s = layer["shift"]
    mask = (1 << s) - 1
    rem = high & mask
    threshold = (mask >> 1) + (high < 0)
    scaled = layer.get("zero_point", 0) + (high >> s) + (rem > threshold)
    lo, hi = layer.get("qmin", -128), layer.get("qmax", 127)
    if layer["act"] in ("relu", "relu6"):
        lo = max(lo, layer.get("zero_point", 0))
    if layer["act"] == "relu6":
        hi = min(hi, layer.get("relu6_max", 127))
    return np.minimum(np.maximum(scaled, lo), hi).astype(np.int8)


def write_model(name, shapes, rng):
    layers = []
    for i, (fan_in, fan_out) in enumerate(shapes):
        w, b = f"{name}_w{i}.npy", f"{name}_b{i}.npy"
        np.save(path(w), rand_i8(rng, (fan_in, fan_out)))
        np.save(path(b), rng.integers(-2000, 2000, fan_out).astype(np.int32))
        layers.append({"w": w, "bias": b, "multiplier": 1518500250, "shift": 8 + i,
                       "zero_point": -3, "qmin": -128, "qmax": 127,
                       "act": "relu" if i + 1 < len(shapes) else "none"})
    with open(path(name + ".json"), "w") as f:
        json.dump({"layers": layers}, f)
    return layers


@case
def mlp_runs_in_batches():
    rng = np.random.default_rng(9)
    layers = write_model("net", [(24, 20), (20, 7)], rng)
    x = rand_i8(rng, (50, 24))
    np.save(path("X.npy"), x)
    out, stats = path("logits.npy"), path("mlp.json")
    p = ok("mlp", "--model", path("net.json"), "--x", path("X.npy"), "--out", out, "--batch", "16",
           "--stats-json", stats)
    progress = [l for l in p.stdout.splitlines() if "samples," in l]
    check(len(progress) == 4 and progress[-1].startswith("mlp: 50/50 samples, "), p.stdout)
    # Each run of 16 samples chains both layers in one command.
    check(p.stdout.startswith("mlp: layers chained on the device, 1 command per run: 1 step of 16 samples\n"),
          p.stdout)
    y = np.load(out)
    check(y.dtype == np.int8 and y.shape == (50, 7), f"logits are {y.dtype} {y.shape}")
    h = x
    for i, layer in enumerate(layers):
        w = np.load(path(layer["w"])).astype(np.int64)
        b = np.load(path(layer["bias"])).astype(np.int64)
        h = act_lane(h.astype(np.int64) @ w, b, layer)
    check(np.array_equal(y, h), f"{np.count_nonzero(y != h)} logits differ from numpy")
    s = json.load(open(stats))
    check(s["samples"] == 50 and s["cycles"] > 0 and s["commands"] == 4, str(s))
    plan = s["plan"]
    check(plan["chained"] and plan["reason"] == "" and plan["step"] == 16 and plan["steps"] == 1
          and plan["commands_per_run"] == 1, str(plan))
    # One run of all samples, the device looping over steps of 8 (7 steps:
    # a LOOP of 3 x 2); and layer by layer: the same logits.
    p = ok("mlp", "--model", path("net.json"), "--x", path("X.npy"), "--out", out, "--step", "8",
           "--stats-json", stats)
    check("1 command per run: 7 steps of 8 samples in a device loop of 3 x 2\n" in p.stdout, p.stdout)
    check(np.array_equal(np.load(out), h), "logits differ with --step 8")
    s = json.load(open(stats))
    check(s["commands"] == 1 and s["plan"]["loop_iterations"] == 3, str(s))
    p = ok("mlp", "--model", path("net.json"), "--x", path("X.npy"), "--out", out, "--per-layer",
           "--stats-json", stats)
    check(p.stdout.startswith("mlp: layer by layer: layer by layer on request\n"), p.stdout)
    check(np.array_equal(np.load(out), h), "logits differ with --per-layer")
    s = json.load(open(stats))
    check(s["commands"] == 2 and not s["plan"]["chained"], str(s))
    # A step larger than the unified buffer holds (512 samples of 8 rows)
    # runs layer by layer, and says why.
    x = rand_i8(rng, (600, 24))
    np.save(path("X600.npy"), x)
    p = ok("mlp", "--model", path("net.json"), "--x", path("X600.npy"), "--out", out, "--step", "600")
    check("mlp: layer by layer: a step of 600 samples does not fit (at most 512: " in p.stdout, p.stdout)
    h = x
    for i, layer in enumerate(layers):
        w = np.load(path(layer["w"])).astype(np.int64)
        b = np.load(path(layer["bias"])).astype(np.int64)
        h = act_lane(h.astype(np.int64) @ w, b, layer)
    check(np.array_equal(np.load(out), h), "logits differ with --step 600")


@case
def mlp_rejects_shape_mismatches():
    rng = np.random.default_rng(10)
    write_model("bad", [(24, 20), (19, 7)], rng)
    np.save(path("X.npy"), rand_i8(rng, (10, 24)))
    out = path("logits.npy")
    fails("mlp", "--model", path("bad.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["layer 1", "takes 19 inputs", "gives 20 outputs"])
    write_model("good", [(24, 20), (20, 7)], rng)
    np.save(path("X2.npy"), rand_i8(rng, (10, 23)))
    fails("mlp", "--model", path("good.json"), "--x", path("X2.npy"), "--out", out,
          outputs=[out], contains=["10x23", "takes 24 inputs"])
    np.save(path("good_b1.npy"), np.zeros(6, np.int32))
    fails("mlp", "--model", path("good.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["has 6 entries", "7 outputs"])
    with open(path("junk.json"), "w") as f:
        f.write('{"layers": [')
    fails("mlp", "--model", path("junk.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=["not valid JSON"])
    with open(path("typo.json"), "w") as f:
        json.dump({"layers": [{"w": "good_w0.npy", "multipler": 5, "shift": 1}]}, f)
    fails("mlp", "--model", path("typo.json"), "--x", path("X.npy"), "--out", out,
          outputs=[out], contains=['unknown key "multipler"'])


# ---- Guarantees (docs/cli.md, "Guarantees") ------------------------------------

def fresh(*names):
    """Paths in WORK with nothing at them."""
    out = []
    for n in names:
        p = path(n)
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.remove(p)
        out.append(p)
    return out


def small_inputs(name="g", m=5, k=6, n=7, seed=20):
    rng = np.random.default_rng(seed)
    a, b = rand_i8(rng, (m, k)), rand_i8(rng, (k, n))
    pa, pb = path(name + "_A.npy"), path(name + "_B.npy")
    np.save(pa, a)
    np.save(pb, b)
    return pa, pb, a.astype(np.int32) @ b.astype(np.int32)


def default_signals():
    """In the child: SIGINT, SIGTERM and SIGHUP do what they do by default
    (a shell or CI may have ignored one, and the tool keeps an ignored one
    ignored)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


@case
def outputs_naming_one_file_twice_are_refused_before_any_work():
    # The inputs do not exist: reading them would fail with exit 1, so exit 2
    # about the outputs shows that nothing was done before the check.
    missing = path("no_such_input.npy")
    same, = fresh("same.npy")
    for spelling in ("./same.npy", "sub/../same.npy", same):
        os.makedirs(path("sub"), exist_ok=True)
        fails("matmul", "--a", missing, "--b", missing, "--out", "same.npy", "--stats-json", spelling,
              code=2, outputs=[same], contains=["--out and --stats-json name the same file",
                                               "give each output its own file"], cwd=WORK)
    # Through a symbolic link, also one to a file that does not exist yet.
    link, = fresh("link.npy")
    os.symlink("same.npy", link)
    fails("matmul", "--a", missing, "--b", missing, "--out", same, "--stats-json", link,
          code=2, outputs=[same], contains=["name the same file", same])
    fails("mlp", "--model", missing, "--x", missing, "--out", link, "--stats-json", "same.npy",
          code=2, outputs=[same], contains=["name the same file"], cwd=WORK)
    src, = fresh("halt.asm")
    with open(src, "w") as f:
        f.write("halt\n")
    d, = fresh("d.bin")
    fails("run", src, "--dump", f"0x0:16={d}", "--dump", "0x10:16=./d.bin", code=2, outputs=[d],
          contains=["--dump and --dump name the same file"], cwd=WORK)
    fails("run", src, "--dump", f"0x0:16={d}", "--stats-json", d, code=2, outputs=[d],
          contains=["--dump and --stats-json name the same file"])
    # A link as an output is written through: the link stays, its target is the file.
    pa, pb, ref = small_inputs()
    os.remove(link)
    os.symlink("target.npy", link)
    target, = fresh("target.npy")
    ok("--config", "tiny", "matmul", "--a", pa, "--b", pb, "--out", link)
    check(os.path.islink(link) and os.readlink(link) == "target.npy", "the link was replaced")
    check(np.array_equal(np.load(target), ref), "the link's target does not hold C")
    check_no_temporaries()


@case
def outputs_must_be_regular_files():
    pa, pb, _ = small_inputs()
    stats, = fresh("reg_stats.json")
    for dev in ("/dev/null", "/dev/full"):
        fails("matmul", "--a", pa, "--b", pb, "--out", dev, "--stats-json", stats, outputs=[stats],
              contains=[dev + ": cannot write: it is a character device, not a regular file"])
        check(stat.S_ISCHR(os.stat(dev).st_mode), f"{dev} is no longer a device")
    fifo, = fresh("out.fifo")
    os.mkfifo(fifo)
    # Opening a FIFO to write would block until a reader came: refused
    # without opening it (timeout: the test fails rather than hang).
    fails("matmul", "--a", pa, "--b", pb, "--out", path("x.npy"), "--stats-json", fifo,
          outputs=[path("x.npy")], contains=[fifo + ": cannot write: it is a FIFO"], timeout=30)
    check(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced")
    dirpath, = fresh("outdir")
    os.mkdir(dirpath)
    fails("matmul", "--a", pa, "--b", pb, "--out", dirpath, contains=[dirpath + ": cannot write: it is a directory"])
    fails("matmul", "--a", pa, "--b", pb, "--out", path("nodir") + "/", contains=["ends in '/'"])
    fails("matmul", "--a", pa, "--b", pb, "--out", path("nodir/c.npy"),
          contains=["the directory " + path("nodir") + " does not exist"])
    fails("asm", pa, "-o", "/dev/null", contains=["character device"])
    check(os.path.isdir(dirpath) and not os.listdir(dirpath), "the directory changed")


@case
def outputs_with_the_longest_names_work():
    pa, pb, ref = small_inputs()
    c = path("c" * 255)
    s = path("s" * 250 + ".json")
    fresh(os.path.basename(c), os.path.basename(s))
    ok("--config", "tiny", "matmul", "--a", pa, "--b", pb, "--out", c, "--stats-json", s)
    check(np.array_equal(np.load(c), ref), "C with a 255-byte name is wrong")
    check(json.load(open(s))["shape"] == {"m": 5, "k": 6, "n": 7}, "stats with a long name are wrong")
    check_no_temporaries()
    too_long = path("c" * 256)
    fails("matmul", "--a", pa, "--b", pb, "--out", too_long,
          contains=["the file name is 256 bytes, more than the 255 the file system allows"])
    os.remove(c)
    os.remove(s)


@case
def outputs_all_or_nothing_when_the_last_rename_fails():
    """A directory appears where --stats-json goes while the tool computes:
    its rename fails after --out's succeeded, so --out's previous file must
    come back. On the simulator (tiny), so the work takes long enough."""
    keep, stats = fresh("keep.npy", "late_dir")
    old = b"the previous file, which must survive"
    rng = np.random.default_rng(21)
    for size in (48, 64, 96, 128):
        a, b = rand_i8(rng, (size, size)), rand_i8(rng, (size, size))
        np.save(path("L_A.npy"), a)
        np.save(path("L_B.npy"), b)
        with open(keep, "wb") as f:
            f.write(old)
        fresh("late_dir")
        p = subprocess.Popen(command(["--transport", "sim", "--config", "tiny", "matmul", "--a",
                                      path("L_A.npy"), "--b", path("L_B.npy"), "--out", keep,
                                      "--stats-json", stats]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.25)
        try:
            os.mkdir(stats)
        except FileExistsError:  # the tool finished and wrote it: a bigger product
            p.communicate(timeout=600)
            continue
        out, err = p.communicate(timeout=600)
        done = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if p.returncode == 0:
            continue  # finished before the directory appeared: a bigger product
        line = one_error_line(done, 1, [stats + ": cannot write: "])
        if "no output was written" not in line:
            continue  # refused before the work (a slow start): try again
        check(open(keep, "rb").read() == old, "--out was not restored after the failed rename")
        check(os.path.isdir(stats) and not os.listdir(stats), "the directory changed")
        check_no_temporaries()
        os.rmdir(stats)
        return
    raise Failure("the tool always finished before the directory appeared")


def signal_outcome(p, sig, outputs, check_complete):
    """After a signal: died of it (or finished first), and the outputs are
    all complete or all absent, with no temporary file."""
    out, err = p.communicate(timeout=600)
    check(p.returncode in (0, -sig), f"exit {p.returncode} after signal {sig}; stderr: {err}")
    present = [os.path.exists(o) for o in outputs]
    check(all(present) or not any(present),
          f"signal {sig}: some outputs exist and some do not: {dict(zip(outputs, present))}")
    if all(present):
        check_complete()
    check_no_temporaries()
    return p.returncode == 0, all(present)


@case
def signals_at_random_times_leave_no_partial_output():
    """SIGINT, SIGTERM and SIGHUP at random moments of a matmul on the
    simulator (tiny), within the time the same matmul takes unsignalled:
    either both outputs are complete, or neither exists, and no temporary
    file is left."""
    rng = np.random.default_rng(22)
    a, b = rand_i8(rng, (64, 72)), rand_i8(rng, (72, 64))
    np.save(path("S_A.npy"), a)
    np.save(path("S_B.npy"), b)
    ref = a.astype(np.int32) @ b.astype(np.int32)
    out, stats = path("S_C.npy"), path("S_stats.json")

    def complete():
        check(np.array_equal(np.load(out), ref), "C is not the product")
        check(json.load(open(stats))["shape"] == {"m": 64, "k": 72, "n": 64}, "bad stats")

    args = ["--transport", "sim", "--config", "tiny", "matmul", "--a", path("S_A.npy"),
            "--b", path("S_B.npy"), "--out", out, "--stats-json", stats]
    # One run without a signal: how long the product takes on this machine,
    # so that the signals fall inside the run rather than after it.
    fresh("S_C.npy", "S_stats.json")
    start = time.monotonic()
    ok(*args)
    duration = time.monotonic() - start
    complete()
    delays = random.Random(23)
    killed = 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        fresh("S_C.npy", "S_stats.json")
        p = subprocess.Popen(command(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=default_signals)
        delay = delays.uniform(0.02, max(0.05, 0.9 * duration))
        time.sleep(delay)
        p.send_signal(sig)
        finished, _ = signal_outcome(p, sig, [out, stats], complete)
        killed += not finished
        print(f"  {signal.Signals(sig).name} after {delay:.2f} s: "
              f"{'finished first' if finished else 'killed'}")
    check(killed > 0, "the tool finished before every signal: the product is too small to test")


@case
def signals_remove_staged_files():
    """The signal arrives while the temporary files exist (the test aid
    TPU_TEST_HOLD_STAGED_MS holds them before the renames): the handler must
    remove them, and the process dies of the signal."""
    pa, pb, _ = small_inputs()
    env = dict(os.environ, TPU_TEST_HOLD_STAGED_MS="30000")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        out, stats = fresh("H_C.npy", "H_stats.json")
        p = subprocess.Popen(command(["--config", "tiny", "matmul", "--a", pa, "--b", pb, "--out", out,
                                      "--stats-json", stats]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=default_signals)
        try:
            deadline = time.monotonic() + 60
            while len([f for f in os.listdir(WORK) if ".tmp." in f]) < 2:
                check(p.poll() is None, "the tool ended before staging its outputs")
                check(time.monotonic() < deadline, "no temporary files appeared")
                time.sleep(0.01)
            p.send_signal(sig)
            p.communicate(timeout=60)
            check(p.returncode == -sig, f"exit {p.returncode}, not death by signal {sig}")
            check(not os.path.exists(out) and not os.path.exists(stats), "an output appeared")
            check_no_temporaries()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for f in os.listdir(WORK):  # so that a failure here fails no other case
                if ".tmp." in f:
                    os.remove(path(f))


@case
def stdout_write_errors_fail():
    with open("/dev/full", "w") as full:
        p = tpu("--config", "tiny", "info", stdout=full)
    one_error_line(p, 1, ["cannot write to standard output: No space left on device"])
    src, binf = path("full.asm"), path("full.bin")
    with open(src, "w") as f:
        f.write("irq\n" * 300 + "halt\n")
    ok("asm", src, "-o", binf)
    with open("/dev/full", "w") as full:
        p = tpu("disasm", binf, stdout=full)
    one_error_line(p, 1, ["cannot write to standard output"])


def sparse_file(name, size, head=b""):
    p = path(name)
    with open(p, "wb") as f:
        f.write(head)
        f.truncate(size)
    return p


def limit_memory(gib):
    def apply():
        default_signals()
        resource.setrlimit(resource.RLIMIT_AS, (gib << 30, gib << 30))
    return apply


def npy_header(shape, descr="|i1"):
    h = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


@case
def inputs_that_are_not_regular_files_are_refused_without_blocking():
    pa, pb, _ = small_inputs()
    out, = fresh("in_out.npy")
    fifo, = fresh("in.fifo")
    os.mkfifo(fifo)
    model, x = path("net.json"), path("X.npy")
    write_model("net", [(24, 20), (20, 7)], np.random.default_rng(24))
    np.save(x, np.zeros((3, 24), np.int8))
    src, = fresh("in_halt.asm")
    with open(src, "w") as f:
        f.write("halt\n")
    for bad, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device"),
                      (WORK, "a directory")):
        what = "it is a directory" if kind == "a directory" else f"it is {kind}, not a regular file"
        msg = [bad + ": cannot read: " + what]
        fails("matmul", "--a", bad, "--b", pb, "--out", out, outputs=[out], contains=msg, timeout=30)
        fails("matmul", "--a", pa, "--b", bad, "--out", out, outputs=[out], contains=msg, timeout=30)
        fails("mlp", "--model", bad, "--x", x, "--out", out, outputs=[out], contains=msg, timeout=30)
        fails("mlp", "--model", model, "--x", bad, "--out", out, outputs=[out], contains=msg, timeout=30)
        fails("run", bad, contains=msg, timeout=30)
        fails("asm", bad, "-o", out, outputs=[out], contains=msg, timeout=30)
        fails("disasm", bad, contains=msg, timeout=30)
        fails("run", src, "--load", f"0x0={bad}", contains=msg, timeout=30)
    check(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO changed")
    os.remove(fifo)


@case
def inputs_past_their_limits_are_refused_before_reading():
    """Sparse files: big on paper, nothing on disk. The tool runs with 1 GiB
    of address space, so reading any of them whole would fail differently."""
    pa, pb, _ = small_inputs()
    out, = fresh("lim_out.npy")
    lim = limit_memory(1)
    big = sparse_file("big.npy", (4 << 30) + 1, npy_header(((4 << 30) + 1 - 128,)))
    fails("matmul", "--a", big, "--b", pb, "--out", out, outputs=[out], preexec_fn=lim,
          contains=[big + ": cannot read: it is 4294967297 bytes, more than the 4294967296 bytes "
                          "(4 GiB) a .npy file may have"])
    # Under the limit, but the header does not account for the bytes: refused
    # from the header and the size alone.
    odd = sparse_file("odd.npy", 3 << 30, npy_header((2, 3)))
    fails("matmul", "--a", odd, "--b", pb, "--out", out, outputs=[out], preexec_fn=lim,
          contains=[odd + ": " + str((3 << 30) - 128 - 6) + " bytes after the data of a 2x3 int8 array"])
    short = sparse_file("short_hdr.npy", 1 << 20, npy_header((1 << 20, 1 << 20)))
    fails("matmul", "--a", short, "--b", pb, "--out", out, outputs=[out], preexec_fn=lim,
          contains=[short + ": truncated: the header promises a 1048576x1048576 int8 array"])
    for name, limit, what, argv in (
            ("big.json", 16 << 20, "an MLP model file", lambda p: ["mlp", "--model", p, "--x", pa, "--out", out]),
            ("big.asm", 16 << 20, "a program file", lambda p: ["asm", p, "-o", out]),
            ("big.bin", 16 << 20, "a program file", lambda p: ["run", p]),
            ("big_load.bin", 256 << 20, "a --load file", lambda p: ["run", path("in_halt.asm"), "--load", f"0x0={p}"])):
        with open(path("in_halt.asm"), "w") as f:
            f.write("halt\n")
        p = sparse_file(name, limit + 1)
        fails(*argv(p), preexec_fn=lim, outputs=[out],
              contains=[f"{p}: cannot read: it is {limit + 1} bytes, more than the {limit} bytes ("
                        f"{limit >> 20} MiB) {what} may have"])
        os.remove(p)
    for p in (big, odd, short):
        os.remove(p)


@case
def model_numbers_past_json_range_name_the_file():
    """Found by the fuzz target: a number JSON cannot hold (1E99999) was an
    error without the file's name."""
    model, = fresh("overflow.json")
    with open(model, "w") as f:
        f.write('{"layers": [{"w": "w.npy", "multiplier": 1E99999, "shift": 1}]}')
    out, = fresh("ov_out.npy")
    fails("mlp", "--model", model, "--x", path("X.npy"), "--out", out, outputs=[out],
          contains=[model + ": not valid JSON: ", "number overflow"])


@case
def numbers_out_of_range_name_the_range():
    u64 = "0..18446744073709551615"
    fails("--seed", "-1", "info", code=2, contains=["--seed: -1 is out of range; it takes " + u64])
    fails("--seed", "18446744073709551616", "info", code=2, contains=["out of range", u64])
    fails("--seed", "abc", "info", code=2, contains=["--seed: 'abc' is not a number; it takes " + u64])
    t = "it takes 1..1000000000000"
    for v in ("0", "-5", "1000000000001", "99999999999999999999999"):
        fails("--timeout", v, "info", code=2, contains=[f"--timeout: {v} is out of range; {t}"])
    for opt in ("--m", "--k", "--n"):
        args = {"--m": "3", "--k": "3", "--n": "3"}
        for v in ("99999999999", "-1", "0", "1048577"):
            args[opt] = v
            fails("bench", *[x for kv in args.items() for x in kv], code=2,
                  contains=[f"{opt}: {v} is out of range; it takes 1..1048576"])
    for v in ("0", "99999999999", "-3"):
        for opt in ("--batch", "--step"):
            fails("mlp", "--model", "m.json", "--x", "x.npy", "--out", "o.npy", opt, v, code=2,
                  contains=[f"{opt}: {v} is out of range; it takes 1..1048576"])
    # The bounds themselves are accepted.
    ok("--timeout", "1000000000000", "--config", "tiny", "info")
    ok("--seed", "18446744073709551615", "--config", "tiny", "bench", "--m", "3", "--k", "2", "--n", "1")


@case
def unknown_commands_are_named():
    commands = "asm, bench, disasm, infer, info, matmul, mlp, perf, run, tflite-info"
    fails("frobnicate", code=2, contains=[f"unknown command 'frobnicate'; the commands are {commands}"])
    fails("--config", "tiny", "--timeout", "5", "frobnicate", "--x", code=2,
          contains=["unknown command 'frobnicate'"])
    fails("--config", "tiny", code=2, contains=["no command given; the commands are " + commands])


@case
def waveform_paths_must_be_writable():
    check(not os.path.exists("/nonexistent"), "/nonexistent exists on this machine")
    fails("--device", "sim:?config=tiny&waves=/nonexistent/x.fst", "info",
          contains=["waves=/nonexistent/x.fst: the directory /nonexistent does not exist"])
    check(not os.path.exists("/nonexistent"), "the tool created /nonexistent")
    fails("--device", f"sim:?config=tiny&waves={WORK}", "info", contains=["not a regular file"])
    fails("--device", "sim:?config=tiny&waves=/dev/null", "info", contains=["not a regular file"])
    waves, = fresh("w.fst")
    # The one line on stderr says how to view the file with the device's layout.
    p = tpu("--device", f"sim:?config=tiny&waves={waves}", "info")
    check(p.returncode == 0, describe(p))
    check(p.stderr.count("\n") == 1 and f"waves in {waves}; view with: " in p.stderr
          and "gtkwave " in p.stderr and p.stderr.rstrip().endswith("tb/host/device.gtkw"), describe(p))
    check(os.path.getsize(waves) > 0, "no waveform written")
    os.remove(waves)
    # A bare file name lands in the working directory.
    p = tpu("--device", "sim:?config=tiny&waves=bare.fst", "info", cwd=WORK)
    check(p.returncode == 0 and os.path.getsize(os.path.join(WORK, "bare.fst")) > 0, describe(p))
    os.remove(os.path.join(WORK, "bare.fst"))


@case
def unprintable_bytes_in_messages_are_escaped():
    _, pb, _ = small_inputs()
    name = path("evil\x1b[31m\nname\x07.npy")
    line = fails("matmul", "--a", name, "--b", pb, "--out", path("e.npy"),
                 contains=["evil\\x1b[31m\\nname\\x07.npy: cannot open: No such file or directory"])
    check("\x1b" not in line, line)
    raw = os.fsdecode(os.fsencode(path("bad")) + b"\xff\xfe.npy")  # not UTF-8
    fails("matmul", "--a", raw, "--b", pb, "--out", path("e.npy"), contains=["bad\\xff\\xfe.npy: cannot open"])
    ok_name = path("späť.npy")  # UTF-8 stays as it is
    fails("matmul", "--a", ok_name, "--b", pb, "--out", path("e.npy"), contains=["späť.npy: cannot open"])
    fails("frob\x1bnicate", code=2, contains=["unknown command 'frob\\x1bnicate'"])


# ---- tflite-info (docs/tflite.md): needs --tflite-models ----

def tflite_manifest():
    check(TFLITE_MODELS is not None, "--tflite-models not given")
    with open(os.path.join(TFLITE_MODELS, "manifest.json")) as f:
        return json.load(f)


def tflite_model(name):
    return os.path.join(TFLITE_MODELS, name + ".tflite")


@case
def tflite_info_lowers_every_valid_model():
    man = tflite_manifest()
    names = [n for n, e in man.items() if e["kind"] == "valid"]
    check(len(names) >= 12, f"only {len(names)} valid models")
    for name in names:
        j = path(name + ".json")
        p = ok("tflite-info", tflite_model(name), "--json", j)
        net = json.load(open(j))
        check(f"{len(net['layers'])} layers:" in p.stdout, p.stdout)
        for i, layer in enumerate(net["layers"]):
            check(f"  {i}: {layer['kind']} (op {layer['op_index']} {layer['op']})" in p.stdout, p.stdout)
    p = ok("tflite-info", tflite_model("small_cnn"))
    for word in ("conv2d (op 0 CONV_2D)", "depthwise (op 1 DEPTHWISE_CONV_2D)", "maxpool (op 2 MAX_POOL_2D)",
                 "reshape (op 6 RESHAPE)", "fc (op 7 FULLY_CONNECTED)", "pad t1 b1 l1 r1", "per channel"):
        check(word in p.stdout, f"{word!r} not in:\n{p.stdout}")


@case
def tflite_lowered_layers_match_the_tflite_reference_bit_for_bit():
    # The lowered layers run in numpy (tflite_ir_ref.py: folded biases,
    # padding with the input zero point, per-channel requantization) against
    # TFLite's reference kernels' outputs saved by scripts/tflite_models.py.
    import tflite_ir_ref
    man = tflite_manifest()
    checked = 0
    for name, entry in man.items():
        if entry["kind"] != "valid":
            continue
        j = path(name + ".json")
        ok("tflite-info", tflite_model(name), "--json", j)
        net = json.load(open(j))
        x = np.load(os.path.join(TFLITE_MODELS, name + ".x.npy"))
        want = np.load(os.path.join(TFLITE_MODELS, name + ".y.npy"))
        got = tflite_ir_ref.run(net, x)
        check(got.dtype == want.dtype and got.shape == want.shape,
              f"{name}: {got.dtype}{got.shape} vs TFLite's {want.dtype}{want.shape}")
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        check(bad.size == 0, f"{name}: {bad.size} of {want.size} outputs differ from TFLite's, first at "
              f"{bad[:5].tolist()}: {got.reshape(-1)[bad[:5]].tolist()} vs {want.reshape(-1)[bad[:5]].tolist()}")
        # a model whose outputs all saturate would check little
        check(np.unique(want).size > 3, f"{name}: TFLite's outputs take {np.unique(want).size} values only")
        checked += 1
    check(checked >= 12, f"only {checked} models checked")


@case
def tflite_info_errors_are_one_line_naming_the_op():
    man = tflite_manifest()
    errors = [(n, e) for n, e in man.items() if e["kind"] in ("error", "corrupt")]
    check(len(errors) >= 15, f"only {len(errors)} error models and corrupt files")
    for name, entry in errors:
        j = path("e.json")
        fails("tflite-info", tflite_model(name), "--json", j, outputs=[j],
              contains=[tflite_model(name) + ": "] + entry["contains"])


@case
def tflite_info_rejects_corrupt_and_missing_files():
    with open(tflite_model("small_cnn"), "rb") as f:
        data = f.read()
    cut = path("cut.tflite")
    for n in (0, 7, 100, len(data) // 2, len(data) - 1):
        with open(cut, "wb") as f:
            f.write(data[:n])
        fails("tflite-info", cut, contains=["cut.tflite: not a valid .tflite model: "])
    bad = bytearray(data)
    bad[4:8] = b"NOPE"
    with open(cut, "wb") as f:
        f.write(bad)
    fails("tflite-info", cut, contains=['file identifier (bytes 4..7) is not "TFL3"'])
    fails("tflite-info", path("missing.tflite"), contains=["missing.tflite: cannot open"])
    fails("tflite-info", WORK, contains=["it is a directory"])
    fails("tflite-info", code=2, contains=["model is required"])



# ---- infer (docs/tflite.md): the models run on the device ----

def infer_ok(name, out, stats=None, batch=None, x=None):
    args = ["infer", "--model", tflite_model(name), "--x", x or os.path.join(TFLITE_MODELS, name + ".x.npy"),
            "--out", out]
    if stats:
        args += ["--stats-json", stats]
    if batch:
        args += ["--batch", batch]
    return ok(*args, timeout=600)


@case
def tflite_infer_equals_the_tflite_reference_on_every_model():
    # Every valid test model through `tpu infer`, value by value against
    # TFLite's reference kernels (tflite-runtime's BUILTIN_REF resolver).
    man = tflite_manifest()
    checked = 0
    for name, entry in man.items():
        if entry["kind"] != "valid":
            continue
        y, s, j = path(name + ".y.npy"), path(name + ".stats.json"), path(name + ".json")
        p = infer_ok(name, y, stats=s)
        want = np.load(os.path.join(TFLITE_MODELS, name + ".y.npy"))
        got = np.load(y)
        check(got.dtype == want.dtype and got.shape == want.shape,
              f"{name}: {got.dtype}{got.shape} vs TFLite's {want.dtype}{want.shape}")
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        check(bad.size == 0, f"{name}: {bad.size} of {want.size} outputs differ from TFLite's, first at "
              f"{bad[:5].tolist()}: {got.reshape(-1)[bad[:5]].tolist()} vs {want.reshape(-1)[bad[:5]].tolist()}")
        check(np.unique(want).size > 3, f"{name}: TFLite's outputs take {np.unique(want).size} values only")
        # The statistics: one entry per lowered layer, device cycles only
        # for the layers on the TPU, and they add up to the total.
        ok("tflite-info", tflite_model(name), "--json", j)
        net = json.load(open(j))
        st = json.load(open(s))
        check(len(st["layers"]) == len(net["layers"]), f"{name}: {len(st['layers'])} layer stats")
        gemm = {"fc", "conv2d", "depthwise"}
        for ls, layer in zip(st["layers"], net["layers"]):
            check(ls["kind"] == layer["kind"] and ls["op_index"] == layer["op_index"], f"{name}: {ls}")
            on_tpu = layer["kind"] in gemm
            check(ls["where"] == ("tpu" if on_tpu else "host"), f"{name}: {ls}")
            check((ls["cycles"] > 0 and ls["commands"] > 0 and 0 < ls["utilization"] <= 1) if on_tpu
                  else (ls["cycles"] == 0 and ls["commands"] == 0), f"{name}: {ls}")
            check(f" op {layer['op_index']:<3d} {layer['op']:<18s} {ls['where']}" in p.stdout,
                  f"{name}: layer {ls} not in the table:\n{p.stdout}")
        check(st["cycles"] == sum(ls["cycles"] for ls in st["layers"]), f"{name}: {st['cycles']} cycles in all")
        check(st["samples"] == want.shape[0] and st["cycles_per_sample"] == st["cycles"] / st["samples"],
              f"{name}: {st}")
        checked += 1
    check(checked >= 12, f"only {checked} models checked")


@case
def tflite_infer_batches_give_the_same_outputs():
    # Split into batches of 1 and of 2, the outputs are the same bytes.
    for name in ("small_cnn", "residual_add", "fc_per_channel"):
        whole, ones, twos = path("w.npy"), path("o.npy"), path("t.npy")
        infer_ok(name, whole)
        p = infer_ok(name, ones, batch=1)
        infer_ok(name, twos, batch=2)
        n = np.load(whole).shape[0]
        check(n >= 2, f"{name}: {n} samples")
        check(f"infer: {n}/{n} samples" in p.stdout and "infer: 1/" in p.stdout, p.stdout)
        for other in (ones, twos):
            check(open(whole, "rb").read() == open(other, "rb").read(), f"{name}: {other} differs")


@case
def tflite_infer_errors_are_one_line_and_leave_nothing():
    man = tflite_manifest()
    y, s = path("e.y.npy"), path("e.stats.json")
    x = os.path.join(TFLITE_MODELS, "small_cnn.x.npy")
    for name, entry in man.items():
        if entry["kind"] in ("error", "corrupt"):
            fails("infer", "--model", tflite_model(name), "--x", x, "--out", y, "--stats-json", s,
                  outputs=[y, s], contains=[tflite_model(name) + ": "] + entry["contains"])
    xs = np.load(x)
    model = tflite_model("small_cnn")
    sample = ", ".join(str(d) for d in xs.shape[1:])
    bad = path("bad.npy")
    # float input for an int8 model: what to do about it
    np.save(bad, xs.astype(np.float32))
    fails("infer", "--model", model, "--x", bad, "--out", y, "--stats-json", s, outputs=[y, s],
          contains=["bad.npy is float32 but the model's input", "is int8 (quantize it: round(x / "])
    np.save(bad, xs.astype(np.int32))
    fails("infer", "--model", model, "--x", bad, "--out", y, outputs=[y], contains=["bad.npy is int32"])
    # int8 input for a model whose input is float32
    fails("infer", "--model", tflite_model("float_edges"), "--x", x, "--out", y, outputs=[y],
          contains=["small_cnn.x.npy is int8 but the model's input", "is float32"])
    # wrong shapes: a sample of another size, no batch dimension, no samples
    for arr in (xs[:, :-1], xs[0], xs[:0], xs.reshape(xs.shape[0], -1)):
        np.save(bad, arr)
        fails("infer", "--model", model, "--x", bad, "--out", y, outputs=[y],
              contains=["bad.npy has shape ", f"takes samples of shape", f"give (samples, {sample})"])
    fails("infer", "--model", model, "--x", path("missing.npy"), "--out", y, outputs=[y],
          contains=["missing.npy: cannot open"])
    fails("infer", "--model", path("missing.tflite"), "--x", x, "--out", y, outputs=[y],
          contains=["missing.tflite: cannot open"])
    fails("infer", "--model", model, "--x", x, "--out", y, "--batch", "0", code=2, outputs=[y])
    fails("infer", "--model", model, "--x", x, code=2, contains=["--out is required"])
    # the output into a directory that does not exist: nothing written
    fails("infer", "--model", model, "--x", x, "--out", path("nodir/y.npy"), outputs=[path("nodir/y.npy")])

def main():
    global TPU, TRANSPORT, WORK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpu", required=True, help="the tpu binary")
    ap.add_argument("--transport", default="sim", help="sim, model or sc (default sim)")
    ap.add_argument("--workdir", required=True, help="scratch directory (recreated)")
    ap.add_argument("-k", default="", help="run only cases whose name contains this")
    ap.add_argument("--tflite-models", help="scripts/tflite_models.py's output directory: runs the "
                    "tflite-info cases (without it they are left out)")
    args = ap.parse_args()
    global TFLITE_MODELS
    TFLITE_MODELS = os.path.abspath(args.tflite_models) if args.tflite_models else None
    TPU = os.path.abspath(args.tpu)
    TRANSPORT = args.transport
    WORK = os.path.abspath(args.workdir)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)

    failed = 0
    start = time.monotonic()
    for fn in CASES:
        if args.k not in fn.__name__:
            continue
        if fn.__name__.startswith("tflite_") and TFLITE_MODELS is None:
            continue
        t0 = time.monotonic()
        try:
            fn()
            print(f"PASS {fn.__name__} ({time.monotonic() - t0:.1f} s)", flush=True)
        except Failure as e:
            failed += 1
            print(f"FAIL {fn.__name__}: {e}", flush=True)
        except Exception:  # a bug in the test or a hang: still one case
            failed += 1
            print(f"FAIL {fn.__name__}: {traceback.format_exc()}", flush=True)
    print(f"{'FAILED' if failed else 'passed'}: {failed} failing case(s), "
          f"{time.monotonic() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
