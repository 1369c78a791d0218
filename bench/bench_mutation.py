"""What the mutation analysis costs the user: the whole `repair-agent run SCENARIO --chooser search`
command (a fresh process, import to exit, warm image) with the analysis and without it (the same
chooser as a plug-in that does not ask for it), in interleaved pairs; the median per-pair ratio
and the analysis's own time from the journal. Ratios, not seconds: these machines are noisy.

    .venv/bin/python bench/bench_mutation.py [--scenario discount-bug] [--repeat 5] [--sandbox docker] [--no-warm-up]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = str(ROOT / ".venv/bin/repair-agent")


def once(scenario: str, chooser: str, runs: Path, sandbox: str) -> tuple[float, float | None]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "bench")}
    t0 = time.perf_counter()
    subprocess.run([EXE, "run", scenario, "--chooser", chooser, "--sandbox", sandbox, "--runs-dir", str(runs)], env=env,
                   capture_output=True, check=False)
    wall = time.perf_counter() - t0
    run_dir = max(runs.iterdir(), key=lambda p: p.stat().st_mtime)
    for line in (run_dir / "journal.jsonl").read_text().splitlines():
        if '"mutation": {' in line:
            at = line.index('"mutation": ') + len('"mutation": ')
            return wall, json.JSONDecoder().raw_decode(line[at:])[0]["duration_s"]
    return wall, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", default="discount-bug")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sandbox", choices=["docker", "local"], default="docker")
    ap.add_argument("--no-warm-up", action="store_true", help="no warm-up run first (a smoke run: cold figures)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp)
        if not a.no_warm_up:
            once(a.scenario, "search", runs, a.sandbox)   # warm: image, caches
        pairs, analysis = [], []
        for i in range(a.repeat):
            order = ["search", "search_without_mutation:Search"][:: 1 if i % 2 == 0 else -1]
            t = {}
            for c in order:
                t[c], dur = once(a.scenario, c, runs, a.sandbox)
                if dur is not None:
                    analysis.append(dur)
            pairs.append(t["search"] / t["search_without_mutation:Search"])
            print(f"pair {i + 1}: with {t['search']:.2f}s, without {t['search_without_mutation:Search']:.2f}s")
    print(f"{a.scenario}: with / without the mutation analysis, median of {len(pairs)} interleaved pairs: "
          f"{statistics.median(pairs):.3f}x; the analysis itself: median {statistics.median(analysis):.2f}s")


if __name__ == "__main__":
    sys.exit(main())
