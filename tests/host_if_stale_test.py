#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One host-interface table value changed: the check catches every stale
file, and regenerating carries the value into the RTL package, the C++
header and the doc's tables. A table whose fields overlap is refused. Runs
on a copy of the generator and its outputs in a temporary folder.

    host_if_stale_test.py <source dir>
"""
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUTPUTS = ["rtl/host/host_if_pkg.sv", "sw/common/include/tpu/host_if.h", "docs/host_interface.md"]


def main() -> int:
    src = Path(sys.argv[1])
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(src / "scripts", root / "scripts")
        for out in OUTPUTS:
            (root / out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / out, root / out)
        gen = [sys.executable, str(root / "scripts/gen_host_if.py")]

        first = subprocess.run(gen + ["--check"], capture_output=True, text=True)
        if first.returncode != 0:
            print("the copied files are not current to begin with:\n" + first.stderr)
            return 1

        table = root / "scripts/host_if_table.py"
        text = table.read_text()
        changed = re.sub(r"^MAX_WINDOWS = 8\b", "MAX_WINDOWS = 6", text, count=1, flags=re.M)
        if changed == text:
            print("could not find MAX_WINDOWS = 8 in host_if_table.py")
            return 1
        table.write_text(changed)

        stale = subprocess.run(gen + ["--check"], capture_output=True, text=True)
        if stale.returncode != 1:
            failures.append(f"--check exited {stale.returncode} on a stale tree, not 1")
        for out in OUTPUTS:
            if out not in stale.stderr:
                failures.append(f"--check did not name {out}:\n{stale.stderr}")

        subprocess.run(gen, check=True, capture_output=True)
        if not re.search(r"MaxWindows\s+= 6;", (root / OUTPUTS[0]).read_text()):
            failures.append("host_if_pkg.sv: MaxWindows is not 6 after regenerating")
        if not re.search(r"kMaxWindows\s+= 6;", (root / OUTPUTS[1]).read_text()):
            failures.append("host_if.h: kMaxWindows is not 6 after regenerating")
        doc = (root / OUTPUTS[2]).read_text()
        if "| 24 | window count, 0 .. 6 |" not in doc:
            failures.append("host_interface.md: the window count is not 0 .. 6 after regenerating")
        if "## Rings and commands" not in doc:
            failures.append("host_interface.md: regenerating lost the hand-written text")
        if subprocess.run(gen + ["--check"], capture_output=True).returncode != 0:
            failures.append("--check still fails after regenerating")

        overlap = text.replace('Field("id", 16, 16, "command id, returned', 'Field("id", 12, 16, "command id, returned', 1)
        if overlap == text:
            failures.append("could not find the submission entry's id field in host_if_table.py")
        table.write_text(overlap)
        refused = subprocess.run(gen, capture_output=True, text=True)
        if refused.returncode == 0 or "sq_entry.id: starts at bit 12, expected 16" not in refused.stderr:
            failures.append(f"an overlapping field was not refused: {refused.stderr}")

    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("host_if.stale_file_is_caught: a stale package, header and doc are caught; "
              "regenerating carries the value; an overlapping field is refused")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
