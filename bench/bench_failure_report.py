"""What a failing test costs the mutation analysis per run, by pytest's traceback style: the default
(`auto`, which reads the source of every frame) against `--tb=line` (what the analysis's session uses:
the crash message it keeps is the same), on a test failing under a deep stack; the two styles'
runs interleaved in one pytest session each, median per-run times and their ratio.

    .venv/bin/python bench/bench_failure_report.py [--depth 25] [--runs 200]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

LIB = '''\
def deep(n, x):
    if n == 0:
        raise ValueError("day is out of range for month %d" % x)
    return deep(n - 1, x) + n
'''

TEST = '''\
from lib import deep


def test_deep():
    assert deep(DEPTH, 3) == 4
'''

RUN = '''\
import contextlib, io, statistics, sys, time
import pytest


class Loop:
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        from _pytest.runner import runtestprotocol
        item, times = session.items[0], []
        for _ in range(int(sys.argv[2])):
            t0 = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                reports = runtestprotocol(item, log=False, nextitem=None)
            times.append(time.perf_counter() - t0)
        crash = next(r for r in reports if r.failed).longrepr.reprcrash.message
        print("RESULT", statistics.median(times), crash.splitlines()[0])
        return True


pytest.main(["-q", "-p", "no:cacheprovider", "--tb=" + sys.argv[1], "test_deep.py"], plugins=[Loop()])
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=25)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "lib.py").write_text(LIB)
        (root / "test_deep.py").write_text(TEST.replace("DEPTH", str(a.depth)))
        (root / "run.py").write_text(RUN)

        def once(style: str) -> tuple[float, str]:
            out = subprocess.run([sys.executable, "run.py", style, str(a.runs)], cwd=root, capture_output=True, text=True).stdout
            line = next(x for x in out.splitlines() if x.startswith("RESULT"))
            _, seconds, message = line.split(" ", 2)
            return float(seconds), message

        ratios, messages = [], set()
        for i in range(a.pairs):
            order = ("auto", "line") if i % 2 == 0 else ("line", "auto")
            got = {style: once(style) for style in order}
            ratios.append(got["auto"][0] / got["line"][0])
            messages |= {got["auto"][1], got["line"][1]}
            print(f"pair {i + 1}: auto {1000 * got['auto'][0]:.2f} ms, line {1000 * got['line'][0]:.2f} ms per failing run")
        ratios.sort()
        print(f"a failing test {a.depth} frames deep: auto / line, median of {a.pairs} interleaved pairs "
              f"{ratios[len(ratios) // 2]:.1f}x; crash messages alike: {len(messages) == 1}")


if __name__ == "__main__":
    main()
