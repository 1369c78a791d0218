"""Fit the search chooser's weight table (repair_agent/choosers/search/weights.json) on replays,
and report the held-out sets' counts with it.

    .venv/bin/python bench/fit_search.py --tune OBS_DIR [OBS_DIR ...] --report HELDOUT_DIR [...] [--write]

Each OBS_DIR is a sweep directory (its runs/ are used) or a run directory, of any chooser on
scenarios with a reference fix (bench/observe.py's one-step sweeps are the cheapest). Runs are
grouped into corpora by their manifest's directory (sandbox_repos/dev, dev2, real, mutants...).

1. Every tuning run is replayed with the committed table (search_replay.simulate), keeping the
   candidates of the first proposal with their base scores and features.
2. Coordinate search: each weight of the table is moved by -2, -1, +1 or +2 and the move is kept
   when it raises the objective on the tuning runs: how many right candidates rank within --reach
   (plus a little for a better rank), minus --penalty times the distance from the committed table
   (the fit stays near the priors people set: a fit to generated bugs alone once cost hand-written
   sets several repairs).
3. Full replays of every corpus with the fitted table. The fit is kept (--write) only when the
   tuning replays reach more right candidates in all and no tuning corpus reaches fewer.

The --report corpora (the held-out sets) are replayed and counted, never fitted on, and only
their counts are printed: no scenario of theirs is named.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from search_replay import replay  # noqa: E402

from repair_agent.choosers.search import weights as table  # noqa: E402
from repair_agent.choosers.search.weights import Weights  # noqa: E402

WEIGHTS_FILE = ROOT / "repair_agent" / "choosers" / "search" / "weights.json"
STEPS = (-2.0, -1.0, 1.0, 2.0)


def run_dirs(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(d for d in (p / "runs").iterdir() if d.is_dir()) if (p / "runs").is_dir() else [p]
    return out


def corpus_of(run: Path) -> str:
    first = (run / "journal.jsonl").read_text().splitlines()[0]
    return Path(json.loads(first)["manifest"]).parent.name


def replay_all(runs: list[Path], budget: int, seed: int) -> list[tuple[str, dict]]:
    rows = []
    for run in runs:
        try:
            row = replay(run, budget, seed, 0)
        except Exception as exc:   # a run the replay cannot read counts as not reached, and says why
            print(f"  a replay failed: {type(exc).__name__}: {str(exc)[:120]}", file=sys.stderr)
            row = None
        if row is not None:
            rows.append((corpus_of(run), row))
    return rows


def counts(rows: list[tuple[str, dict]]) -> dict[str, tuple[int, int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for corpus, row in rows:
        out[corpus][0] += row["outcome"] == "right candidate tried"
        out[corpus][1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def flat(w: Weights) -> dict[str, float]:
    """The table as named parameters, a copy the fit may change."""
    return dict(w.flat)


def unflat(params: dict[str, float], like: Weights) -> Weights:
    prior = {k.split(":", 1)[1]: v for k, v in params.items() if k.startswith("prior:")}
    hint: dict[str, dict[str, float]] = defaultdict(dict)
    for k, v in params.items():
        if k.startswith("hint:"):
            _, h, f = k.split(":", 2)
            hint[h][f] = v
    rule = {k: v for k, v in params.items() if ":" not in k}
    return Weights.model_validate({"prior": prior, "hint": dict(hint), "rule": rule, "max_clean": like.max_clean,
                                   "min_inert_tries": like.min_inert_tries})


def objective(params: dict[str, float], scenarios: list[list[dict]], start: dict[str, float], reach: int,
              penalty: float) -> float:
    """Right candidates within `reach` (ties count half), a little for each better rank, minus the
    distance from the committed table."""
    got = 0.0
    for cands in scenarios:
        scores = [c["base"] + sum(v * params.get(name, 0.0) for name, v in c["features"].items()) for c in cands]
        right = max(s for s, c in zip(scores, cands) if c["right"])
        above = sum(s > right for s in scores)
        ties = sum(s == right for s in scores) - 1
        rank = 1 + above + ties / 2
        got += (rank <= reach) + 0.1 / rank
    return got - penalty * sum(abs(params[k] - start[k]) for k in params)


def fit(scenarios: list[list[dict]], start: dict[str, float], reach: int, penalty: float, rounds: int,
        seed: int) -> dict[str, float]:
    used = {name for cands in scenarios for c in cands for name in c["features"]}
    names = sorted(k for k in start if k in used)   # a weight no tuning candidate has cannot be told
    params = dict(start)
    best = objective(params, scenarios, start, reach, penalty)
    rng = random.Random(seed)
    for _ in range(rounds):
        moved = False
        rng.shuffle(names)
        for name in names:
            for step in STEPS:
                trial = {**params, name: params[name] + step}
                value = objective(trial, scenarios, start, reach, penalty)
                if value > best + 1e-9:
                    params, best, moved = trial, value, True
        if not moved:
            break
    return params


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tune", nargs="+", required=True)
    p.add_argument("--report", nargs="*", default=[])
    p.add_argument("--budget", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reach", type=int, default=3, help="a right candidate ranked this high counts as reached")
    p.add_argument("--penalty", type=float, default=0.05, help="per point of distance from the committed table")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--write", action="store_true", help="write the fitted table to weights.json when it is kept")
    args = p.parse_args()
    tune, report = run_dirs(args.tune), run_dirs(args.report)
    committed = table.WEIGHTS
    rows = replay_all(tune, args.budget, args.seed)
    held = replay_all(report, args.budget, args.seed)
    before, held_before = counts(rows), counts(held)
    scenarios = [r["candidates"] for _, r in rows if any(c["right"] for c in r["candidates"])]
    print(f"tuning: {len(rows)} runs, {len(scenarios)} with the right candidate among those ranked")
    start = flat(committed)
    params = fit(scenarios, start, args.reach, args.penalty, args.rounds, args.seed)
    changed = {k: (start[k], v) for k, v in params.items() if v != start[k]}
    for k, (a, b) in sorted(changed.items()):
        print(f"  {k}: {a:g} -> {b:g}")
    fitted = unflat(params, committed)
    table.activate(fitted)
    try:
        after, held_after = counts(replay_all(tune, args.budget, args.seed)), counts(replay_all(report, args.budget, args.seed))
    finally:
        table.activate(None)
    print("replay, right candidate reached (committed table -> fitted):")
    for name, tag in ((before, after), (held_before, held_after)):
        for corpus in name:
            (a, n), (b, _) = name[corpus], tag.get(corpus, (0, 0))
            print(f"  {corpus:<10} {a}/{n} -> {b}/{n}")
    gained = sum(v[0] for v in after.values()) > sum(v[0] for v in before.values())
    kept = gained and all(after.get(c, (0, 0))[0] >= v[0] for c, v in before.items())
    print("fit kept" if kept else "fit not kept (the tuning replays reach no more, or a tuning corpus lost a scenario)")
    if kept and args.write:
        WEIGHTS_FILE.write_text(fitted.to_json())
        print(f"written: {WEIGHTS_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
