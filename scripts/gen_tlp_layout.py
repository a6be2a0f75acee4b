#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the C++ bit layouts of the host-interface packed structs.

  gen_tlp_layout.py           write sim/host/tlp_layout.h (rtl/host/tlp_pkg.sv)
                              and sim/host/dma_layout.h (rtl/host/dma_pkg.sv)
  gen_tlp_layout.py --check   exit 1 if a committed header differs from its generation

Each `typedef struct packed` of a package becomes a C++ namespace with the
struct's width (kBits) and, per member, a Field {lsb, width}: the first member
is at the MSB, the last at bit 0, as in SystemVerilog and in the vector
Verilator exposes for a struct port. Member widths may use the package's
localparams (which may name another package's, `pkg::Name`, for a package
listed in IMPORTS), `logic [h:l]` ranges (several packed dimensions
multiply), enum typedefs and earlier struct typedefs.
"""

import ast
import operator
import re
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated_files  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# (SV package, C++ header, C++ namespace, what the header is for)
PACKAGES = [
    ("rtl/host/tlp_pkg.sv", "sim/host/tlp_layout.h", "tpu::tlp_layout",
     "the TLP-lite stream beats and the link configuration"),
    ("rtl/host/dma_pkg.sv", "sim/host/dma_layout.h", "tpu::dma_layout",
     "the DMA engine's client channel payloads"),
]

# The packages whose localparams a package's expressions may name (pkg::Name).
IMPORTS = {"rtl/host/dma_pkg.sv": ["rtl/host/host_if_pkg.sv"]}

CPP_KEYWORDS = {
    "alignas", "alignof", "and", "auto", "bool", "break", "case", "catch", "char", "class",
    "const", "continue", "default", "delete", "do", "double", "else", "enum", "explicit",
    "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int",
    "long", "mutable", "namespace", "new", "not", "operator", "or", "private", "protected",
    "public", "register", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
    "unsigned", "using", "virtual", "void", "volatile", "while", "xor",
}


class LayoutError(Exception):
    pass


# ---- SystemVerilog subset ---------------------------------------------------------------


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


_SIZED = re.compile(r"\d*'[sS]?([dDhHbBoO])([0-9a-fA-F_]+)")
_BASES = {"d": 10, "h": 16, "b": 2, "o": 8}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def evaluate(expr: str, params: Dict[str, int]) -> int:
    """An integer constant expression: literals, localparams, + - * / % << >>."""
    py = _SIZED.sub(lambda m: str(int(m.group(2).replace("_", ""), _BASES[m.group(1).lower()])),
                    expr.strip())
    py = re.sub(r"\b(\w+)::(\w+)\b", r"\1__\2", py)  # pkg::Name, as imported
    py = re.sub(r"(?<![/])/(?![/])", "//", py)

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in params:
                raise LayoutError(f"unknown name {node.id!r} in {expr!r}")
            return params[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise LayoutError(f"unsupported expression {expr!r}")

    try:
        tree = ast.parse(py, mode="eval")
    except SyntaxError as e:
        raise LayoutError(f"cannot parse expression {expr!r}") from e
    return ev(tree)


def packed_width(dims: str, params: Dict[str, int]) -> int:
    """Bits of a run of packed dimensions such as `[7:0]` or `[3:0][7:0]` (1 if none)."""
    width = 1
    for hi, lo in re.findall(r"\[([^:\]]+):([^\]]+)\]", dims):
        width *= abs(evaluate(hi, params) - evaluate(lo, params)) + 1
    if re.sub(r"\[[^\]]*\]", "", dims).strip():
        raise LayoutError(f"unsupported dimensions {dims!r}")
    return width


class Package:
    def __init__(self, path: Path, imports: List["Package"] = ()):
        self.path = path
        text = strip_comments(path.read_text())
        m = re.search(r"\bpackage\s+(\w+)\s*;(.*?)\bendpackage\b", text, flags=re.S)
        if not m:
            raise LayoutError(f"{path}: no package")
        self.name = m.group(1)
        self.params: Dict[str, int] = {f"{p.name}__{k}": v for p in imports
                                       for k, v in p.params.items()}
        self.types: Dict[str, int] = {}  # typedef name -> bits
        self.structs: List[Tuple[str, List[Tuple[str, int]]]] = []
        body = re.sub(r"\bfunction\b.*?\bendfunction\b", " ", m.group(2), flags=re.S)
        # Statements in source order, so a typedef may use the ones before it.
        for stmt in re.finditer(r"(?:typedef\s+(?:struct|enum)\b[^{]*\{.*?\}[^;]*|[^;{}]+);",
                                body, flags=re.S):
            self._statement(" ".join(stmt.group(0).split()))

    def _type_width(self, ty: str) -> int:
        m = re.fullmatch(r"(logic|bit|reg)\s*(signed\s*|unsigned\s*)?((?:\[[^\]]*\]\s*)*)", ty)
        if m:
            return packed_width(m.group(3), self.params)
        m = re.fullmatch(r"(?:(\w+)::)?(\w+)\s*((?:\[[^\]]*\]\s*)*)", ty)
        if m and (m.group(1) in (None, self.name)) and m.group(2) in self.types:
            return self.types[m.group(2)] * packed_width(m.group(3), self.params)
        raise LayoutError(f"{self.path}: unsupported type {ty!r}")

    def _statement(self, s: str) -> None:
        m = re.fullmatch(r"(?:localparam|parameter)\s+(?:int\s+unsigned\s+|int\s+|integer\s+)?"
                         r"(\w+)\s*=\s*(.+);", s)
        if m:
            self.params[m.group(1)] = evaluate(m.group(2), self.params)
            return
        m = re.fullmatch(r"typedef\s+enum\s+(.*?)\s*\{.*\}\s*(\w+)\s*;", s)
        if m:
            # An enum without a base type is an int.
            self.types[m.group(2)] = self._type_width(m.group(1)) if m.group(1) else 32
            return
        m = re.fullmatch(r"typedef\s+struct\s+packed\s*\{(.*)\}\s*(\w+)\s*;", s)
        if m:
            fields: List[Tuple[str, int]] = []
            for decl in filter(None, (d.strip() for d in m.group(1).split(";"))):
                dm = re.fullmatch(r"(.*?)\s*(\w+(?:\s*,\s*\w+)*)", decl)
                if not dm or not dm.group(1):
                    raise LayoutError(f"{self.path}: cannot parse member {decl!r}")
                width = self._type_width(dm.group(1))
                fields += [(n.strip(), width) for n in dm.group(2).split(",")]
            self.types[m.group(2)] = sum(w for _, w in fields)
            self.structs.append((m.group(2), fields))
            return
        m = re.fullmatch(r"typedef\s+(.+?)\s+(\w+)\s*;", s)
        if m:
            self.types[m.group(2)] = self._type_width(m.group(1))


# ---- C++ header --------------------------------------------------------------------------


def layout(fields: List[Tuple[str, int]]) -> List[Tuple[str, int, int]]:
    """(name, lsb, width), first member at the MSB."""
    out, lsb = [], sum(w for _, w in fields)
    for name, width in fields:
        lsb -= width
        out.append((name, lsb, width))
    return out


def generate(pkg: Package, src: str, namespace: str, what: str) -> str:
    if not pkg.structs:
        raise LayoutError(f"{src}: no packed structs")
    lines = [
        "// SPDX-License-Identifier: Apache-2.0",
        f"// Bit layout of the packed structs of {src}:",
        f"// {what}.",
        "// GENERATED by scripts/gen_tlp_layout.py -- do not edit.",
        "//",
        "// A packed struct is one vector, first member at the MSB; Verilator exposes",
        "// a struct port as that vector (an integer up to 64 bits, VlWide above).",
        "// Member m of struct s occupies bits [s::m.lsb + s::m.width - 1 : s::m.lsb].",
        "#pragma once",
        "",
        f"namespace {namespace} {{",
        "",
        "struct Field {",
        "  unsigned lsb;",
        "  unsigned width;",
        "};",
    ]
    for name, fields in pkg.structs:
        bits = sum(w for _, w in fields)
        rows = layout(fields)
        for field, _, _ in rows:
            if field in CPP_KEYWORDS:
                raise LayoutError(f"{src}: member {name}.{field} is a C++ keyword")
        width = max(len(f) for f, _, _ in rows)
        lines += ["", f"// {pkg.name}::{name}", f"namespace {name} {{",
                  f"inline constexpr unsigned kBits = {bits};"]
        lines += [f"inline constexpr Field {f:<{width}} = {{{lsb}, {w}}};"
                  for f, lsb, w in rows]
        lines.append(f"}}  // namespace {name}")
    lines += ["", f"}}  // namespace {namespace}"]
    return "\n".join(lines) + "\n"


# ---- Main -------------------------------------------------------------------------------


def outputs() -> dict:
    files = {}
    for src, dst, namespace, what in PACKAGES:
        imports = [Package(ROOT / i) for i in IMPORTS.get(src, [])]
        files[ROOT / dst] = generate(Package(ROOT / src, imports), src, namespace, what)
    return files


def main() -> int:
    try:
        return generated_files.main("gen_tlp_layout", "rtl/host/{tlp,dma}_pkg.sv", __doc__,
                                    outputs, ROOT)
    except LayoutError as e:
        print(f"gen_tlp_layout: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
