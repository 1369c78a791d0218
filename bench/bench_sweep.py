"""Sweep wall time at 1 and 2 workers on the same sweep, and the speed-up (target >= 1.7x on 2
cores). Also: what a run costs when each one is a fresh `repair-agent run --json` subprocess
instead of a call in a long-lived pool worker (the execution model the sweep uses).

    .venv/bin/python bench/bench_sweep.py [--runs 4] [--pairs 2] [--skip-subprocess] [--no-warm-up]

Pairs are interleaved (1 worker, 2 workers, 2 workers, 1 worker, ...) so a change in the
machine's load hits both sides; ratios of medians are printed, since such machines are noisy.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.sweep import Selection, plan_jobs, select_scenarios, sweep  # noqa: E402


def jobs_for(selection: Selection, runs: int, runs_dir: Path):
    # `runs` seeds of the baseline on discount-bug at budget 8: identical work per run.
    return plan_jobs(selection, ["baseline"], [8], runs, runs_dir)


def timed_sweep(selection: Selection, runs: int, workers: int, busy: list | None = None) -> float:
    """Elapsed seconds; appends to `busy` the occupancy Σ(run wall) / (workers × elapsed): near 1
    means the sweep keeps every worker busy, so a speed-up below 2x is the machine, not the sweep."""
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        out = Path(tmp) / "sweep"
        jobs = jobs_for(selection, runs, out / "runs")
        with open("/dev/null", "w") as quiet:
            start = time.perf_counter()
            outcome = sweep(jobs, out, workers=workers, progress_stream=quiet)
            elapsed = time.perf_counter() - start
        rows = outcome.summary.runs
        assert outcome.ran == runs and all(r.status == "awaiting_release_confirmation" for r in rows), rows
        if busy is not None:
            busy.append(sum(r.wall_s or 0.0 for r in rows) / (workers * elapsed))
        return elapsed


def timed_subprocesses(runs: int) -> float:
    """The alternative execution model: one `repair-agent run` interpreter per run (sequential)."""
    with tempfile.TemporaryDirectory(prefix="bench-sweep-sub-") as tmp:
        start = time.perf_counter()
        for _ in range(runs):
            proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--json",
                                   "--max-steps", "8", "--runs-dir", str(Path(tmp) / "runs")],
                                  capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
        return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=4, help="runs per sweep (default 4)")
    p.add_argument("--pairs", type=int, default=2, help="interleaved pairs of (1 worker, 2 workers) (default 2)")
    p.add_argument("--skip-subprocess", action="store_true", help="skip the subprocess-per-run comparison")
    p.add_argument("--no-warm-up", action="store_true", help="no warm-up sweep first (a smoke run: cold figures)")
    args = p.parse_args()
    selection = select_scenarios(["discount-bug"])
    if not args.no_warm_up:
        timed_sweep(selection, 1, 1)  # warm: image check, pristine-suite cache, imports
    one, two, sub, pool_one = [], [], [], []
    busy = {1: [], 2: []}
    for i in range(args.pairs):
        order = (1, 2) if i % 2 == 0 else (2, 1)
        for workers in order:
            (one if workers == 1 else two).append(timed_sweep(selection, args.runs, workers, busy[workers]))
        if not args.skip_subprocess:
            sub.append(timed_subprocesses(args.runs))
            pool_one.append(one[-1])
    m1, m2 = statistics.median(one), statistics.median(two)
    print(f"sweep of {args.runs} runs (discount-bug, baseline, budget 8), {args.pairs} interleaved pair(s)")
    print(f"  1 worker : median {m1:6.2f}s  {[round(x, 2) for x in one]}")
    print(f"  2 workers: median {m2:6.2f}s  {[round(x, 2) for x in two]}")
    print(f"  speed-up 1 -> 2 workers: {m1 / m2:.2f}x   (target >= 1.7x on 2 cores)")
    print(f"  occupancy (Σ run wall / workers × elapsed): 1 worker {statistics.median(busy[1]):.2f}, "
          f"2 workers {statistics.median(busy[2]):.2f}")
    with open("/proc/loadavg") as f:
        print(f"  load average at the end: {f.read().split()[0]} on {os.cpu_count()} cores (others' work slows both sides)")
    if sub:
        ms, mp = statistics.median(sub), statistics.median(pool_one)
        print(f"  {args.runs} runs as `repair-agent run` subprocesses, one at a time: median {ms:6.2f}s "
              f"= {ms / mp:.2f}x the 1-worker pool ({(ms - mp) / args.runs:+.2f}s per run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
