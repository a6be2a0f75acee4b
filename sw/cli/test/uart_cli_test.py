#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `tpu` tool over uart: against the board simulation (CTest cli.tpu.uart).

    python3 uart_cli_test.py --tpu build/bin/tpu --board-sim build/bin/tpu-board-sim --workdir DIR

Starts tpu-board-sim (the device behind the UART bridge, its serial port on
a pty), runs `tpu info` and `tpu matmul` on it and checks the results
exactly against numpy; then the same on a line that flips, drops,
duplicates and stalls bytes, where `tpu info` must show retransmissions;
then cuts the line (SIGUSR1) in the middle of a matmul, which must end in
one clear error line within the timeout, mends it and runs again.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

# Several tiles of tiny's 4×4 array with partial ones at each edge; the
# driver's uart tests (uart_test.cpp) run 64³ over the same line.
SHAPES = [(1, 1, 1), (7, 13, 5), (20, 36, 14)]


class Board:
    def __init__(self, board_sim, *args):
        self.proc = subprocess.Popen([board_sim, "--config", "tiny", "--div", "4", *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("uart:"):
            raise SystemExit(f"tpu-board-sim printed {line!r}, not a uart: URI; "
                             f"stderr: {self.proc.stderr.read()}")
        self.uri = line

    def cut(self):
        self.proc.send_signal(signal.SIGUSR1)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()


def tpu(args, device, *cmd, timeout=600):
    return subprocess.run([args.tpu, "--device", device, *cmd], capture_output=True, text=True,
                          timeout=timeout)


def check_matmuls(args, device, rng, tag):
    for m, k, n in SHAPES:
        a = rng.integers(-128, 128, size=(m, k), dtype=np.int8)
        b = rng.integers(-128, 128, size=(k, n), dtype=np.int8)
        pa, pb, pc = (os.path.join(args.workdir, f"{tag}_{m}x{k}x{n}_{x}.npy") for x in "abc")
        np.save(pa, a)
        np.save(pb, b)
        r = tpu(args, device, "matmul", "--a", pa, "--b", pb, "--out", pc)
        if r.returncode != 0:
            raise AssertionError(f"{tag} matmul {m}x{k}x{n} failed: {r.stderr.strip()}")
        c = np.load(pc)
        want = a.astype(np.int32) @ b.astype(np.int32)
        if c.dtype != np.int32 or not np.array_equal(c, want):
            raise AssertionError(f"{tag} matmul {m}x{k}x{n}: result differs from numpy")
        print(f"PASS {tag} matmul {m}x{k}x{n}", flush=True)


def counters(info_text):
    m = re.search(r"link, host side .* (\d+) retransmitted", info_text)
    d = re.search(r"link, device side\s+(\d+) retransmitted; (\d+) CRC errors", info_text)
    if not m or not d:
        raise AssertionError(f"tpu info shows no link counters:\n{info_text}")
    return int(m.group(1)), int(d.group(1)), int(d.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tpu", required=True)
    ap.add_argument("--board-sim", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rng = np.random.default_rng(5)

    # A clean line.
    board = Board(args.board_sim)
    r = tpu(args, board.uri, "info")
    assert r.returncode == 0, r.stderr
    assert "configuration       tiny" in r.stdout, r.stdout
    print("PASS info", flush=True)
    check_matmuls(args, board.uri, rng, "clean")
    board.close()

    # A faulty line: the same results, and the counters show the repairs.
    board = Board(args.board_sim, "--bit-error", "1e-3", "--drop", "5e-4", "--dup", "5e-4",
                  "--stall", "2e-3", "--seed", "2")
    check_matmuls(args, board.uri, rng, "faulty")
    r = tpu(args, board.uri, "info")
    assert r.returncode == 0, r.stderr
    host_retx, dev_retx, dev_crc = counters(r.stdout)
    assert host_retx + dev_retx > 0, f"no retransmission on a faulty line:\n{r.stdout}"
    print(f"PASS faulty line counters (host retransmits {host_retx}, device retransmits "
          f"{dev_retx}, device CRC errors {dev_crc})", flush=True)
    stats = board.close().strip()
    faults = re.search(r"(\d+) flipped, (\d+) dropped, (\d+) duplicated", stats)
    assert faults and sum(map(int, faults.groups())) > 0, f"the line injected no fault: {stats}"
    print("  " + stats, flush=True)

    # A cut line: one clear error within the timeout; then the device works again.
    board = Board(args.board_sim)
    a = rng.integers(-128, 128, size=(64, 64), dtype=np.int8)
    pa, pc = os.path.join(args.workdir, "cut_a.npy"), os.path.join(args.workdir, "cut_c.npy")
    np.save(pa, a)
    proc = subprocess.Popen([args.tpu, "--device", board.uri + "?timeout=1000", "matmul", "--a", pa,
                             "--b", pa, "--out", pc], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(0.5)
    board.cut()
    start = time.monotonic()
    _, err = proc.communicate(timeout=60)
    waited = time.monotonic() - start
    lines = [l for l in err.splitlines() if l.strip()]
    assert proc.returncode not in (0, None) and proc.returncode > 0, proc.returncode
    assert len(lines) == 1 and "has not answered for 1000 ms" in lines[0], err
    assert not os.path.exists(pc), "a failed matmul left its output"
    assert waited < 10, waited
    print(f"PASS cut line: '{lines[0][:90]}...' after {waited:.1f} s", flush=True)
    board.cut()  # mended
    check_matmuls(args, board.uri, rng, "reconnected")
    board.close()
    print("passed", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except AssertionError as e:
        print(f"FAIL {e}", flush=True)
        sys.exit(1)
