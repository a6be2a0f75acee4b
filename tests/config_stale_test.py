#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""One table value changed: the check catches every stale file, and
regenerating carries the value into the RTL package, the C++ table and the
docs. Runs on a copy of the generator and its outputs in a temporary folder.

    config_stale_test.py <source dir>
"""
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUTPUTS = ["rtl/common/tpu_pkg.sv", "rtl/common/tpu_cfg_check.sv", "sw/common/include/tpu/config.h", "cmake/configs.cmake",
           "docs/configurations.md"]


def main() -> int:
    src = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(src / "scripts", root / "scripts")
        for out in OUTPUTS:
            (root / out).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / out, root / out)
        gen = [sys.executable, str(root / "scripts/gen_config.py")]

        first = subprocess.run(gen + ["--check"], capture_output=True, text=True)
        if first.returncode != 0:
            print("the copied files are not current to begin with:\n" + first.stderr)
            return 1

        table = root / "scripts/config_table.py"
        text = table.read_text()
        changed = re.sub(r'(name="tiny".*?ub_rows=)256', r"\g<1>512", text, count=1, flags=re.S)
        if changed == text:
            print("could not find tiny's ub_rows=256 in config_table.py")
            return 1
        table.write_text(changed)

        stale = subprocess.run(gen + ["--check"], capture_output=True, text=True)
        failures = []
        if stale.returncode != 1:
            failures.append(f"--check exited {stale.returncode} on a stale tree, not 1")
        for out in ["rtl/common/tpu_pkg.sv", "sw/common/include/tpu/config.h", "docs/configurations.md"]:
            if out not in stale.stderr:
                failures.append(f"--check did not name {out}:\n{stale.stderr}")

        subprocess.run(gen, check=True, capture_output=True)
        pkg = (root / "rtl/common/tpu_pkg.sv").read_text()
        tiny_sv = pkg[pkg.index("TPU_CONFIG_TINY"):pkg.index("`elsif")]
        if "ub_rows:              512" not in tiny_sv:
            failures.append("tpu_pkg.sv: tiny's ub_rows is not 512 after regenerating")
        cpp = (root / "sw/common/include/tpu/config.h").read_text()
        tiny_cpp = cpp[cpp.index('.name = "tiny"'):cpp.index('.name = "small"')]
        if ".ub_rows = 512" not in tiny_cpp:
            failures.append("config.h: tiny's ub_rows is not 512 after regenerating")
        if "| `ub_rows` | 512 |" not in (root / "docs/configurations.md").read_text():
            failures.append("configurations.md: tiny's ub_rows is not 512 after regenerating")
        if subprocess.run(gen + ["--check"], capture_output=True).returncode != 0:
            failures.append("--check still fails after regenerating")

        bad = text.replace("array_n=4,", "array_n=6,", 1)
        table.write_text(bad)
        refused = subprocess.run(gen, capture_output=True, text=True)
        if refused.returncode == 0 or "array_n = 6 must be a power of two" not in refused.stderr:
            failures.append(f"an illegal array_n was not refused: {refused.stderr}")

    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print("config.stale_file_is_caught: a stale package, header and doc are caught; "
              "regenerating carries the value; an illegal value is refused")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
