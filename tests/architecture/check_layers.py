#!/usr/bin/env python3
"""The architecture, checked: the layer table of docs/architecture.md against the build and the
sources.

    python3 tests/architecture/check_layers.py REPO      # exit 0 when the picture is true
    python3 tests/architecture/check_layers.py --self-test

The table ("## Layers" in docs/architecture.md) has one row per layer: its name in backticks in
the first column and, in the last column, the layers it may use directly in backticks (or "—";
"every layer" for the CLI).
The checks:
  1. every folder of src/ is a row, and every row a folder;
  2. the build (CMakeLists.txt: accel_layer(NAME DEPS ...)) declares exactly the table's edges
     for each layer (an edge the table does not allow fails; so does an allowed edge the build
     lacks: the table must say what the build does);
  3. every #include "LAYER/..." in src/L (and "k8s/..." of the generated gRPC code, layer proto)
     names L itself or a layer L reaches through the table (its transitive uses): no layer reaches
     around or above another;
  4. the table has no cycle.
Each problem is printed with the file and line to fix; exit 1 when there is one, 2 for bad input.
"""

import os
import re
import shutil
import sys
import tempfile

TABLE_HEADING = "## Layers"


def parse_table(doc_path):
    """{layer: set(direct uses)} from the table under TABLE_HEADING, and the line of each row."""
    rows, lines_of = {}, {}
    with open(doc_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == TABLE_HEADING)
    except StopIteration:
        raise SystemExit(f"check_layers: {doc_path}: no '{TABLE_HEADING}' heading with the layer table")
    in_table = False
    for n, line in enumerate(lines[start + 1:], start + 2):
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if in_table:
                break
            continue
        in_table = True
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        name = re.fullmatch(r"`([a-z0-9_]+)`", cells[0])
        if not name:
            continue  # the header and separator rows
        uses = set(re.findall(r"`([a-z0-9_]+)`", cells[-1]))
        if "every layer" in cells[-1]:
            uses = {"*"}  # resolved below, once every row is known
        rows[name.group(1)] = uses
        lines_of[name.group(1)] = n
    if not rows:
        raise SystemExit(f"check_layers: {doc_path}: the table under '{TABLE_HEADING}' has no layer rows")
    for name, uses in rows.items():
        if uses == {"*"}:
            rows[name] = set(rows) - {name}
    return rows, lines_of


def parse_build(cmake_path):
    """{layer: (set(accel_* deps), line)} from accel_layer(NAME DEPS ...) calls."""
    with open(cmake_path, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"accel_layer\(\s*([a-z0-9_]+)\s+DEPS\s+([^)]*)\)", text):
        deps = set(re.findall(r"\baccel_([a-z0-9_]+)\b", m.group(2)))
        out[m.group(1)] = (deps, text.count("\n", 0, m.start()) + 1)
    return out


def closure(table, layer):
    seen, todo = set(), list(table.get(layer, ()))
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        todo.extend(table.get(x, ()))
    return seen


def check(repo):
    problems = []
    doc = os.path.join(repo, "docs", "architecture.md")
    table, table_line = parse_table(doc)
    build = parse_build(os.path.join(repo, "CMakeLists.txt"))
    src = os.path.join(repo, "src")
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    pseudo = {"proto"}  # the generated gRPC code: a build target, not a folder of src/

    for d in sorted(folders - set(table)):
        problems.append(f"src/{d}/: a layer the table in docs/architecture.md does not list (add a row)")
    for layer in sorted(set(table) - folders - pseudo):
        problems.append(f"docs/architecture.md:{table_line[layer]}: `{layer}` has no folder src/{layer}/")

    for layer, (deps, line) in sorted(build.items()):
        allowed = table.get(layer)
        if allowed is None:
            continue  # reported above (every accel_layer has a folder)
        for dep in sorted(deps - allowed):
            problems.append(f"CMakeLists.txt:{line}: accel_{layer} links accel_{dep}, an edge the layer table does "
                            f"not allow (docs/architecture.md:{table_line[layer]}: fix the code or the table)")
        for dep in sorted(allowed - deps - pseudo):
            problems.append(f"docs/architecture.md:{table_line[layer]}: `{layer}` may use `{dep}`, but the build "
                            f"(CMakeLists.txt:{line}) does not link accel_{dep}: the table must say what the build does")
    for layer in sorted(folders - set(build) - {"cli"}):
        if layer in table:
            problems.append(f"CMakeLists.txt: no accel_layer({layer} DEPS ...) for src/{layer}/")

    for layer in table:
        if layer in closure(table, layer):
            problems.append(f"docs/architecture.md:{table_line[layer]}: `{layer}` uses itself through the table: a cycle")

    include = re.compile(r'^\s*#\s*include\s+"([a-z0-9_]+)/')
    for layer in sorted(folders & set(table)):
        reach = closure(table, layer) | {layer}
        for name in sorted(os.listdir(os.path.join(src, layer))):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(src, layer, name)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = include.match(line)
                    if not m:
                        continue
                    target = "proto" if m.group(1) == "k8s" else m.group(1)
                    if target not in folders and target not in pseudo:
                        continue  # not a layer (a system or third-party header in quotes)
                    if target not in reach:
                        problems.append(f"src/{layer}/{name}:{n}: includes {m.group(1)}/..., but `{layer}` does not "
                                        f"use `{target}` (docs/architecture.md:{table_line[layer]})")
    return problems


def self_test():
    """The checker catches a forbidden include and a forbidden build edge, and passes a clean tree."""
    root = tempfile.mkdtemp(prefix="accel-layers-")
    try:
        def write(rel, text):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        write("docs/architecture.md", "# x\n\n## Layers\n\n| layer | is | may use |\n|---|---|---|\n"
              "| `common` | glue | — |\n| `topology` | model | `common` |\n| `placement` | engine | `topology` |\n")
        write("CMakeLists.txt", "accel_layer(common DEPS nlohmann_json::nlohmann_json)\n"
              "accel_layer(topology DEPS accel_common)\naccel_layer(placement DEPS accel_topology)\n")
        write("src/common/a.h", '#include <string>\n')
        write("src/topology/b.h", '#include "common/a.h"\n')
        write("src/placement/c.cc", '#include "topology/b.h"\n#include "common/a.h"\n')
        clean = check(root)
        assert clean == [], clean
        write("src/topology/d.cc", '#include "placement/c.h"\n')
        bad = check(root)
        assert len(bad) == 1 and "src/topology/d.cc:1" in bad[0], bad
        os.remove(os.path.join(root, "src/topology/d.cc"))
        write("CMakeLists.txt", "accel_layer(common DEPS nlohmann_json::nlohmann_json)\n"
              "accel_layer(topology DEPS accel_common accel_placement)\naccel_layer(placement DEPS accel_topology)\n")
        bad = check(root)
        assert any("accel_topology links accel_placement" in p for p in bad), bad
        assert any("a cycle" not in p for p in bad)
        print("check_layers: self-test passed (a clean tree passes; a forbidden include and a forbidden edge fail)")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print("usage: check_layers.py REPO | --self-test", file=sys.stderr)
        return 2
    problems = check(argv[1])
    for p in problems:
        print("check_layers: " + p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the layer table is in docs/architecture.md", file=sys.stderr)
        return 1
    print("check_layers: every layer, build edge and include follows docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
