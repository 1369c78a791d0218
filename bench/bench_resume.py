"""Resume overhead: how long a resume takes to be ready for its first step, as a ratio to a fresh
run's start. Ratios of interleaved pairs, not seconds: these machines are noisy.

    .venv/bin/python bench/bench_resume.py [--repeat 5] [--sandbox docker|local]

"Ready for the first step" is the moment the chooser is first asked. A fresh run's start covers
the image lookup, the workspace, the verifier's pristine snapshot (its test-id baseline cached, as
after the first run on a machine) and the sandbox container. A resume's start adds reading and
verifying the journal, removing nothing (its run ended cleanly), rebuilding the workspace from
the pristine tree plus the journaled patch, and re-earning the verdicts that satisfied a
condition on the current diff. Two checkpoints: after the patch (nothing to re-earn) and after
the target test and the full suite (the full suite decides both test conditions, so one
verifier container re-earns them).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.choosers import BaselineChooser  # noqa: E402
from repair_agent.lifecycle.resume import resume_run  # noqa: E402
from repair_agent.lifecycle.run import execute_run  # noqa: E402
from repair_agent.scenarios.scenario import resolve  # noqa: E402

FIRST_CALL: dict[str, float] = {}


class FirstCallTimer:
    """Notes when it is first asked, then stops the run."""

    name = "first-call-timer"

    def choose(self, view):
        FIRST_CALL.setdefault("t", time.perf_counter())
        return {"tool": "stop", "reason": "benchmark: only the start is measured"}


def make_timer():
    return FirstCallTimer()


def timed(start_fn) -> float:
    timer_module = sys.modules.get("bench_resume") or sys.modules[__name__]
    timer_module.FIRST_CALL.clear()
    t0 = time.perf_counter()
    start_fn()
    return timer_module.FIRST_CALL["t"] - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sandbox", choices=["docker", "local"], default="docker")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_resume  # noqa: F401  (the module the resumed runs load the timer from)

    scenario = resolve("discount-bug")
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs"

        def fresh():
            execute_run(scenario, bench_resume.make_timer(), backend=args.sandbox, runs_dir=runs,
                        chooser_spec="bench_resume:make_timer")

        def stopped_after(steps: int) -> Path:
            rec = execute_run(scenario, BaselineChooser(scenario.baseline), backend=args.sandbox,
                              runs_dir=runs, max_steps=steps, chooser_spec="baseline")
            return Path(rec.run_dir)

        fresh()  # warm: image lookup and the cached baseline of test ids
        rows = []
        for _ in range(args.repeat):
            after_patch, after_checks = stopped_after(3), stopped_after(5)
            f = timed(fresh)
            r3 = timed(lambda: resume_run(after_patch, chooser_spec="bench_resume:make_timer", extra_steps=1,
                                          runs_dir=runs))
            r5 = timed(lambda: resume_run(after_checks, chooser_spec="bench_resume:make_timer", extra_steps=1,
                                          runs_dir=runs))
            rows.append((f, r3, r5))
            print(f"fresh start {f:.3f}s   resume after patch {r3:.3f}s ({r3 / f:.2f}x)   "
                  f"resume after checks {r5:.3f}s ({r5 / f:.2f}x)", flush=True)
    med = statistics.median
    print(f"\n{args.sandbox}, median of {args.repeat} interleaved runs:")
    print(f"  fresh run start                      {med(r[0] for r in rows):.3f}s")
    print(f"  resume start, after the patch        {med(r[1] / r[0] for r in rows):.2f}x a fresh start")
    print(f"  resume start, full suite re-earned   {med(r[2] / r[0] for r in rows):.2f}x a fresh start")


if __name__ == "__main__":
    main()
