#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file carries the project's licence as an SPDX line.

  spdx.py           add the line where it is missing (after a shebang)
  spdx.py --check   list the files without it; exit 1 if any
"""
import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSE = "Apache-2.0"
TAG = "SPDX-License-Identifier: " + LICENSE

# Comment leader by file name ending; files of other kinds (data, prose,
# GTKWave layouts) are not checked.
LEADERS = {".sv": "//", ".svh": "//", ".vlt": "//", ".rdl": "//", ".cpp": "//", ".h": "//",
           ".py": "#", ".sh": "#", ".cmake": "#", "CMakeLists.txt": "#", "Makefile": "#",
           ".ci/run": "#"}


def leader(path: str):
    for end, lead in LEADERS.items():
        if path.endswith(end):
            return lead
    return None


def sources():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return [f for f in files if leader(f) and (ROOT / f).is_file()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    missing = []
    for f in sources():
        path = ROOT / f
        text = path.read_text()
        if TAG in "\n".join(text.splitlines()[:3]):
            continue
        missing.append(f)
        if not args.check:
            line = f"{leader(f)} {TAG}\n"
            if text.startswith("#!"):
                first, _, rest = text.partition("\n")
                path.write_text(first + "\n" + line + rest)
            else:
                path.write_text(line + text)
    if args.check:
        for f in missing:
            print(f"spdx: {f} has no '{TAG}' line in its first three lines (run scripts/spdx.py)")
        if not missing:
            print(f"spdx: {len(sources())} source files carry {TAG}")
        return 1 if missing else 0
    for f in missing:
        print(f"spdx: added to {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
