# SPDX-License-Identifier: Apache-2.0
"""What the demos share: their error type and running the `tpu` tool."""

import json
import os
import subprocess

import numpy as np


class DemoError(Exception):
    """A failure with a one-line explanation for the user."""


def short(arg):
    """A path under the current directory, relative; anything else as it is."""
    arg = str(arg)
    rel = os.path.relpath(arg) if os.path.isabs(arg) else arg
    return arg if rel.startswith("..") else rel


def run_tool(cmd, what, out_path, stats_path):
    """Runs the tool command `cmd` (subcommand `what`), echoing it and its
    progress; returns the .npy it wrote at out_path and the statistics JSON
    at stats_path. Both are removed first, so a stale file is never read."""
    for p in (out_path, stats_path):
        p.unlink(missing_ok=True)
    print("$ " + " ".join(short(c) for c in cmd), flush=True)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1)
    except OSError as e:
        raise DemoError(f"cannot run {cmd[0]}: {e.strerror} (build it with `make build`)")
    for line in proc.stdout:                  # progress, as the tool prints it
        print("  " + line.rstrip("\n"), flush=True)
    if proc.wait() != 0:
        raise DemoError(f"`tpu {what}` failed with exit status {proc.returncode}")
    try:
        y = np.load(out_path)
        stats = json.loads(stats_path.read_text())
    except (OSError, ValueError) as e:
        raise DemoError(f"`tpu {what}` succeeded but its outputs cannot be read: {e}")
    return y, stats
