"""Run in an environment's build container after its install commands: every package directory of
the tree (at /workspace or /workspace/src) must import from /workspace. One that imports from
anywhere else was installed as a copy, and a candidate's patch would never run. Prints the import
roots (`ra-roots: [...]`) the image records.

Standard library only: it runs on whatever Python the environment has."""
from __future__ import annotations

import importlib.util
import json
import os
import sys


def main() -> int:
    root = "/workspace"
    found: list[str] = []
    names: set[str] = set()
    for base in (root, os.path.join(root, "src")):
        if not os.path.isdir(base):
            continue
        for entry in os.listdir(base):
            path = os.path.join(base, entry)
            if os.path.isfile(os.path.join(path, "__init__.py")) and entry.isidentifier():
                names.add(entry)
    names -= {"tests", "test", "testing", "docs", "benchmark", "benchmarks"}
    copies: list[str] = []
    for name in sorted(names):
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            continue
        if spec is None:
            continue
        where = (list(spec.submodule_search_locations or []) or [spec.origin or ""])[0]
        if where and not os.path.realpath(where).startswith(root + "/"):
            copies.append(f"{name} -> {where}")
        elif where:
            found.append(where)
    if copies:
        print("ra-error: installed as a copy, not from /workspace (use an editable install, pip install -e .): "
              + "; ".join(copies))
        return 3
    roots = sorted({os.path.relpath(os.path.dirname(os.path.realpath(w)), root) for w in found})
    print("ra-roots: " + json.dumps(roots))
    print("ra-step: import check ok:", ", ".join(sorted(names)) or "no package directories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
