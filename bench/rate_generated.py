"""Rate a search sweep over a generated set (bench/mutants.py) by its answer key: a green run is
*exact* when its diff undoes the mutant (the same lines removed and added as the mutant's fix diff,
whitespace aside), *other* when it is green some other way. A generated set has no behaviour
checks, so this is its only correct-versus-plausible signal; an *other* run may still be right.

    .venv/bin/python bench/mutants.py --per-project 3 --seed 11 --out /tmp/gen11
    repair-agent sweep --scenarios-dir /tmp/gen11 --scenarios tag:corpus:mutants --chooser search \\
        --budgets 12 --seeds 1 --out /tmp/sweep-a
    .venv/bin/python bench/rate_generated.py --sets /tmp/gen11 --sweeps /tmp/sweep-a [/tmp/sweep-b]

With two sweeps it also lists every scenario whose rating differs. It prints one line per sweep,
`SWEEP: exact E, other O, not green N of T`. A tuning distribution: never quote it as a measure of
generalization.
"""
from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from unidiff import PatchSet

from repair_agent.sweep.jobs import SweepResult

GREEN = "awaiting_release_confirmation"


def changed_lines(diff_text: str) -> tuple[list[str], list[str]]:
    """The lines a diff removes and adds, without whitespace, sorted: two diffs that make the same
    change compare equal however their hunks are cut."""
    removed, added = [], []
    for patched in PatchSet(diff_text):
        for hunk in patched:
            for line in hunk:
                text = re.sub(r"\s+", "", line.value)
                if text and line.is_removed:
                    removed.append(text)
                elif text and line.is_added:
                    added.append(text)
    return sorted(removed), sorted(added)


def rating(result: SweepResult, sets: list[Path]) -> str:
    if result.status != GREEN:
        return "not green"
    fix = next((f for f in (s / "bugs" / f"{result.scenario}.fix.diff" for s in sets) if f.is_file()), None)
    candidate = Path(result.run_dir or "") / "candidate.diff"
    if fix is None or not candidate.is_file():
        raise SystemExit(f"{result.scenario}: no fix diff in --sets or no candidate.diff in its run")
    return "exact" if changed_lines(candidate.read_text()) == changed_lines(fix.read_text()) else "other"


def ratings(sweep: Path, sets: list[Path]) -> dict[str, str]:
    lines = (sweep / "results.jsonl").read_text().splitlines()
    return {r.scenario: rating(r, sets) for r in (SweepResult.model_validate_json(x) for x in lines if x.strip())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=Path, nargs="+", required=True, help="generated sets (bench/mutants.py --out)")
    ap.add_argument("--sweeps", type=Path, nargs="+", required=True, help="one or two sweep output directories")
    args = ap.parse_args()
    rated = [ratings(s, args.sets) for s in args.sweeps]
    if len(rated) == 2:
        for name in sorted(rated[0].keys() | rated[1].keys()):
            if rated[0].get(name) != rated[1].get(name):
                print(f"{name}: {rated[0].get(name, '-')} -> {rated[1].get(name, '-')}")
    for sweep, r in zip(args.sweeps, rated):
        c = Counter(r.values())
        print(f"{sweep}: exact {c['exact']}, other {c['other']}, not green {c['not green']} of {len(r)}")


if __name__ == "__main__":
    main()
