"""What compiling a mutant costs: its whole module (as the mutation analysis did) against only the
outermost def around the mutated line (in_sandbox/mutants.py: def_source), on large real modules, in
interleaved pairs; the median per-pair ratio, and the mutants a 30 s analysis could compile at each pace.

    .venv/bin/python bench/bench_compile.py [--mutants 40] [--modules typing textwrap ...]
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repair_agent.in_sandbox import mutants, operators  # noqa: E402


def mutated_sources(text: str, count: int) -> list[tuple[str, int, str, int, int, str | None]]:
    """Up to `count` one-line mutants of lines inside defs, spread over the module."""
    lines = operators.source_lines(text)
    defs = mutants.functions_of(text)[1]
    outer = [d for d in defs if not any(o[1] < d[1] and d[2] <= o[2] for o in defs)]
    headers = mutants.def_context(text).headers
    out = []
    for name, start, last, first in outer[:: max(1, len(outer) // count)]:
        for n in range(start + 1, last + 1):
            edits = operators.line_mutations(lines[n - 1])
            new = list(lines)
            for _, _, text_new in edits:
                new[n - 1] = text_new + "\n"
                try:
                    compile("".join(new), "m.py", "exec", dont_inherit=True)
                except SyntaxError:
                    continue   # a garbled edit: the analysis counts it and runs nothing
                out.append(("".join(new), n, name, first, last, headers.get(first)))
                break
            else:
                continue
            break
    return out[:count]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", type=int, default=40)
    ap.add_argument("--modules", nargs="*", default=["typing", "_pytest.python", "argparse", "textwrap"])
    a = ap.parse_args()
    for modname in a.modules:
        path = inspect.getsourcefile(importlib.import_module(modname))
        text = Path(path).read_text(encoding="utf-8")
        _, flags, imports = mutants.def_context(text)
        cases = mutated_sources(text, a.mutants)
        ratios, whole_s, apart_s = [], [], []
        for i, (src, line, name, first, last, header) in enumerate(cases):
            def whole() -> float:
                t0 = time.perf_counter()
                compile(src, path, "exec", dont_inherit=True)
                return time.perf_counter() - t0

            def apart() -> float:
                t0 = time.perf_counter()
                compile(mutants.def_source(operators.source_lines(src), first, last, header, imports), path, "exec",
                        flags=flags, dont_inherit=True)
                return time.perf_counter() - t0
            w, p = (whole(), apart()) if i % 2 == 0 else tuple(reversed((apart(), whole())))
            whole_s.append(w)
            apart_s.append(p)
            ratios.append(w / p)
        print(f"{modname} ({len(text.splitlines())} lines, {len(cases)} mutants): whole / apart, median of interleaved "
              f"pairs {statistics.median(ratios):.1f}x; median {1000 * statistics.median(whole_s):.1f} ms whole, "
              f"{1000 * statistics.median(apart_s):.2f} ms apart: {30 / statistics.median(whole_s):.0f} vs "
              f"{30 / statistics.median(apart_s):.0f} compiles in 30 s")


if __name__ == "__main__":
    main()
