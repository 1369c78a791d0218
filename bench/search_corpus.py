"""What the search chooser repairs: every scenario of the corpus, one run each, at one budget.

    .venv/bin/python bench/search_corpus.py [--budget 12] [--seed 0] [--sandbox local|docker] [--only NAME ...]
    .venv/bin/python bench/search_corpus.py --scenarios-dir /tmp/mutants --tag corpus:mutants [--chooser baseline]

Each run goes through the normal run path (controller, verifier, journal, report). A scenario
counts as solved when the run ends the way its manifest expects: `awaiting_release_confirmation`
for a repairable bug, `handoff_requested` for one that cannot be fixed inside the writable scope.
`repair-agent sweep` is the tool for budgets × seeds × choosers with run-to-run bands; this is
the quick per-scenario table the issue note quotes.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.choosers import load_chooser  # noqa: E402
from repair_agent.lifecycle.run import execute_run  # noqa: E402
from repair_agent.scenarios.scenario import discover  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sandbox", choices=["local", "docker"], default="local")
    p.add_argument("--only", nargs="*", help="scenario names (default: all)")
    p.add_argument("--scenarios-dir", action="append", default=[], type=Path,
                   help="also read the manifests in this directory (repeatable), as `repair-agent --scenarios-dir`")
    p.add_argument("--tag", action="append", default=[], help="only the scenarios with every one of these tags")
    p.add_argument("--chooser", default="search", help="the chooser to run (default: search)")
    p.add_argument("--runs-dir", help="where runs go (default: a temporary directory)")
    p.add_argument("--json", help="also write the rows to this file")
    args = p.parse_args()
    scenarios, errors = discover(args.scenarios_dir)
    for e in errors:
        print(f"skipping an unusable manifest: {e}", file=sys.stderr)
    names = args.only or sorted(n for n, s in scenarios.items() if set(args.tag) <= set(s.tags))
    runs_dir = Path(args.runs_dir or tempfile.mkdtemp(prefix="search-corpus-"))
    rows = []
    print(f"{'scenario':<30} {'kind':<20} {'expected':<9} {'status':<31} {'steps':>5}  ok")
    for name in names:
        s = scenarios[name]
        t0 = time.monotonic()
        rec = execute_run(s, load_chooser(args.chooser, s, seed=args.seed), backend=args.sandbox,
                          runs_dir=runs_dir, max_steps=args.budget)
        ok = rec.status.value == s.expected
        rows.append({"scenario": name, "kind": s.kind, "expected": s.expected, "status": rec.status.value,
                     "steps": rec.steps_used, "ok": ok, "wall_s": round(time.monotonic() - t0, 2),
                     "run_dir": rec.run_dir})
        expected = "handoff" if s.expected == "handoff_requested" else "repair"
        print(f"{name:<30} {s.kind:<20} {expected:<9} {rec.status.value:<31} {rec.steps_used:>5}  "
              f"{'yes' if ok else 'NO'}", flush=True)
    repairable = [r for r in rows if r["expected"] == "awaiting_release_confirmation"]
    print(f"\nsolved {sum(r['ok'] for r in rows)}/{len(rows)} at budget {args.budget}, seed {args.seed} "
          f"(repaired {sum(r['ok'] for r in repairable)}/{len(repairable)} repairable; "
          f"handed off {sum(r['ok'] for r in rows if r not in repairable)}/{len(rows) - len(repairable)} unfixable)")
    print(f"runs in {runs_dir}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
