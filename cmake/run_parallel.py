#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs commands in parallel for cmake/verilate.cmake.

usage: run_parallel.py <jobs> <file>

<file> holds the commands, one argument per line and a blank line after
each. Prints the indices of the commands that succeeded, one per line. The
output of a failed command is dropped: CMake runs it again and reports it.
"""
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor


def main() -> int:
    jobs = max(1, int(sys.argv[1]))
    with open(sys.argv[2]) as f:
        commands = [block.split("\n") for block in f.read().split("\n\n") if block.strip()]

    def run(cmd):
        return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(run, commands))
    for i, r in enumerate(results):
        if r.returncode == 0:
            print(i)
    return 0


if __name__ == "__main__":
    sys.exit(main())
