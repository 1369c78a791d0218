"""How long writing report.html costs next to the run it reports. Ratios, not seconds: noisy machines.

    .venv/bin/python bench/bench_html.py [--repeat 5] [--sandbox docker]

Interleaved pairs: a whole discount-bug run in Docker (baseline chooser), then report.html written
again for that run in a fresh interpreter that has loaded what a run loads (repair_agent.lifecycle.run), timed
from before `import repair_agent.reports.html_report` (jinja2's import and the template compile included:
what a CLI run pays once) to the file on disk; and, in that interpreter, a second, warm render.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.choosers import BaselineChooser  # noqa: E402
from repair_agent.lifecycle.run import execute_run  # noqa: E402
from repair_agent.sandbox.image import ensure_sandbox_image  # noqa: E402
from repair_agent.scenarios.scenario import resolve  # noqa: E402

COLD_RENDER = """
import json, sys, time
from pathlib import Path
import repair_agent.lifecycle.run  # loaded by every run before it writes its report: not the report's cost
t0 = time.perf_counter()
from repair_agent.reports.html_report import write_run_html
write_run_html(Path(sys.argv[1]))
cold = time.perf_counter() - t0
t1 = time.perf_counter()
write_run_html(Path(sys.argv[1]))
print(json.dumps({"cold_s": cold, "warm_s": time.perf_counter() - t1}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sandbox", choices=["docker", "local"], default="docker",
                        help="where the reported runs run (local: no container, a shorter run to compare with)")
    args = parser.parse_args()
    client = docker.from_env() if args.sandbox == "docker" else None
    if client is not None:
        ensure_sandbox_image(client)
    scenario = resolve("discount-bug")
    runs, cold, warm = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-html-") as tmp:
        for i in range(args.repeat):
            record = execute_run(scenario, BaselineChooser(scenario.baseline), runs_dir=Path(tmp) / "runs",
                                 client=client, backend=args.sandbox)
            done = subprocess.run([sys.executable, "-c", COLD_RENDER, record.run_dir], capture_output=True, text=True,
                                  cwd=ROOT, check=True)
            t = json.loads(done.stdout)
            runs.append(record.wall_s)
            cold.append(t["cold_s"])
            warm.append(t["warm_s"])
            print(f"pair {i + 1}: run {record.wall_s:.2f}s  report.html cold {t['cold_s'] * 1000:.1f}ms "
                  f"warm {t['warm_s'] * 1000:.1f}ms", flush=True)
    run = statistics.median(runs)
    print(f"median run {run:.2f}s; report.html cold {statistics.median(cold) * 1000:.1f}ms "
          f"(ratio {statistics.median(c / r for c, r in zip(cold, runs)):.4f}), "
          f"warm {statistics.median(warm) * 1000:.2f}ms (ratio {statistics.median(w / r for w, r in zip(warm, runs)):.5f})")


if __name__ == "__main__":
    main()
