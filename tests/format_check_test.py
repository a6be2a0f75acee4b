#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/check_format.py catches what it is for: in a scratch folder with
the repository's .editorconfig and .clang-format, a file with each kind of
problem fails the check naming the file, and the same files once fixed pass."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(sys.argv[1]).resolve()
CHECK = ROOT / "scripts" / "check_format.py"

BAD = {
    "trailing.txt": "a line \nthe next\n",
    "no_newline.txt": "no newline at the end",
    "tab.py": "def f():\n\treturn 1\n",
    "crlf.sh": "echo a\r\necho b\r\n",
    "layout.cpp": "int   f( int x ){return x;}\n",
}
GOOD = {
    "trailing.txt": "a line\nthe next\n",
    "no_newline.txt": "no newline at the end\n",
    "tab.py": "def f():\n    return 1\n",
    "crlf.sh": "echo a\necho b\n",
    "layout.cpp": "int f(int x) { return x; }\n",
}


def run(folder, names):
    return subprocess.run([sys.executable, str(CHECK), "--files", *names], cwd=folder,
                          capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        for name in (".editorconfig", ".clang-format"):
            shutil.copy(ROOT / name, folder / name)
        failures = []
        for name, text in BAD.items():
            (folder / name).write_bytes(text.encode())
            r = run(folder, [name])
            if r.returncode != 1 or not r.stdout.startswith(name + ":"):
                failures.append(f"{name} with a problem: exit {r.returncode}, output {r.stdout!r}")
            (folder / name).write_bytes(GOOD[name].encode())
            r = run(folder, [name])
            if r.returncode != 0:
                failures.append(f"{name} fixed: exit {r.returncode}, output {r.stdout!r}")
        for f in failures:
            print("format_check_test:", f)
        if failures:
            return 1
        print(f"format_check_test: {len(BAD)} kinds of problem caught, and passed once fixed")
        return 0


if __name__ == "__main__":
    sys.exit(main())
