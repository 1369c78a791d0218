"""What one scope check costs, today against an older revision of verifier/scope.py.

    .venv/bin/python bench/bench_scope.py --against REV [--calls 300] [--rounds 6]

Both versions check the discount-bug reference fix in the same interpreter, in interleaved rounds
(old, new, old, new ...) so a machine busy with other work slows both alike; the medians of all
calls of each are printed, and their difference: what every apply_patch, run_target_test,
run_full_suite and check_diff now pays on top. Twice: the fix as proposed (a traditional diff),
and with the `diff --git` line the sandbox's own diff has (git is then asked twice, at once).
"""
from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.scenarios.scenario import resolve  # noqa: E402
from verifier import scope as current  # noqa: E402


def load_old(rev: str):
    source = subprocess.run(["git", "show", f"{rev}:verifier/scope.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    # Loaded as a module of the `verifier` package so its relative imports resolve.
    path = Path(tempfile.mkdtemp()) / "scope_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("verifier._scope_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations through it
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="git revision of the older verifier/scope.py")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    scenario = resolve("discount-bug")
    fix = scenario.reference_fix.read_text()
    path = fix.split("\n", 1)[0].removeprefix("--- a/")
    versions = {"old": load_old(args.against), "new": current}
    for label, diff in (("as proposed", fix), ("with a diff --git line", f"diff --git a/{path} b/{path}\n{fix}")):
        for name, module in versions.items():
            assert module.check_scope(diff, scenario.spec).ok, name
        times: dict[str, list[float]] = {name: [] for name in versions}
        per_round = max(1, args.calls // args.rounds)
        for _ in range(args.rounds):
            for name, module in versions.items():
                for _ in range(per_round):
                    t0 = time.perf_counter()
                    module.check_scope(diff, scenario.spec)
                    times[name].append(time.perf_counter() - t0)
        old, new = (statistics.median(times[n]) * 1000 for n in ("old", "new"))
        print(f"discount-bug fix, {label}:")
        for name in versions:
            ts = sorted(times[name])
            print(f"  {name}: {len(ts)} calls, median {statistics.median(ts) * 1000:.2f} ms, "
                  f"p90 {ts[int(len(ts) * 0.9)] * 1000:.2f} ms")
        print(f"  added per scope check: {new - old:.2f} ms (median)")

if __name__ == "__main__":
    main()
