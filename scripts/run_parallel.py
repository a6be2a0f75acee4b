#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs independent commands in parallel (cmake/verilate.cmake, scripts/lint.sh).

usage: run_parallel.py [--show-output] <jobs> <file>

<file> holds the commands, one argument per line and a blank line after
each. Prints the indices of the commands that succeeded, one per line. A
command's output is dropped, or with --show-output written to stderr, each
command's whole output together, in the order of the file.
"""
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def main() -> int:
    args = sys.argv[1:]
    show = args[0] == "--show-output"
    if show:
        args = args[1:]
    jobs = max(1, int(args[0]))
    with open(args[1]) as f:
        commands = [block.split("\n") for block in f.read().split("\n\n") if block.strip()]

    def run(cmd):
        out = subprocess.PIPE if show else subprocess.DEVNULL
        return subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(run, commands))
    for i, r in enumerate(results):
        if show and r.stdout:
            sys.stderr.write(r.stdout)
        if r.returncode == 0:
            print(i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
