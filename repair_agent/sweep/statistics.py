"""The sampling side of a sweep's figures: what would change on other scenarios like these.

The run-to-run band (summary.py) says how much a figure moves when only the seed changes. It says
nothing about the scenarios: a sweep runs one sample of N scenarios, and a chooser that repairs
22 of these 28 could repair 17 or 25 of the next 28. Two things here measure that:

- a 95% **Wilson interval per cell** for every rate, computed over scenarios, not over runs. The
  seeds of one scenario are not independent draws (a deterministic chooser repeats itself), so
  each scenario contributes one value: the share of its seeds that met the figure. A value in
  [0, 1] with mean p varies at most as much as a 0/1 outcome with mean p, so Wilson's
  p(1 − p)/N is an upper bound on the true sampling variance of that mean: never narrower
  than the scenarios allow. Unlike a percentile bootstrap it keeps a width at 0/N and N/N
  (a bootstrap of 28 successes out of 28 is the single point 1.0) and needs no random numbers.
- an **exact two-sided sign test** per comparison of two cells on the same scenarios (McNemar's
  exact test when each scenario's outcome is 0 or 1). Each shared scenario whose value differs
  between the two cells counts as b-higher or b-lower; the test asks how often a split at least
  this lopsided arises when neither cell is better (a fair coin per differing scenario). It is
  exact at the small counts sweeps produce, where a bootstrap of the paired difference is too
  sure of itself (5 of 28 scenarios better and none worse: a bootstrap interval excludes zero,
  yet 5 of 5 fair coins land the same way once in 16 tries).

A difference is a finding only when it clears both the band and the paired test; `judge` says
which of the two it failed otherwise. Every rate is printed with its resolution, 1/N: one
scenario's weight, the smallest step any rate of the cell can take per scenario.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Iterable, Literal

from pydantic import BaseModel

from .jobs import SweepResult

Z95 = 1.959963984540054          # the two-sided 95% normal quantile
ALPHA = 0.05                     # a paired test clears when p < ALPHA
EPS = 1e-9
GREEN = "awaiting_release_confirmation"
NO_BAND_NOTE = ("One seed per cell: no run-to-run band exists, so no difference can be told from run-to-run noise and "
                "every comparison reads unmeasured. Run with --seeds 2 or more (the default is 3).")

# The run-level values behind each figure; rates are 0/1 per run, costs are numbers.
RATE_METRICS = ("success_rate", "correct_rate", "evidence_complete_rate")
Correctness = Literal["correct", "plausible", "unchecked"]


def _success(run: SweepResult) -> float:
    return float(run.correct)   # results.jsonl's `correct`: status == expected outcome


def _evidence(run: SweepResult) -> float:
    return float(bool((run.rubric or {}).get("complete")))


def is_correct(run: SweepResult) -> bool:
    """Succeeded, and the success holds beyond the visible tests: a green whose held-out checks
    pass, or the expected hand-off (no patch, so nothing to check) on a scenario that wants one."""
    if not run.correct:
        return False
    return run.status != GREEN or run.correctness == "correct"


def _unrecorded(run: SweepResult) -> bool:
    return run.status == GREEN and run.correctness not in ("correct", "plausible", "unchecked")


RUN_VALUE: dict[str, Callable[[SweepResult], float | None]] = {
    "success_rate": _success,
    "correct_rate": lambda r: None if _unrecorded(r) else float(is_correct(r)),
    "evidence_complete_rate": _evidence,
    "median_steps": lambda r: r.steps,
    "median_tokens": lambda r: r.tokens,
    "median_wall_s": lambda r: r.wall_s,
}


# ------------------------------------------------------------------------------- the models
class Interval(BaseModel):
    low: float
    high: float
    level: float = 0.95
    method: str = "wilson over scenarios"


class Resolution(BaseModel):
    """One scenario's weight in a rate of the cell."""
    scenarios: int
    one_scenario: float


class CorrectnessCounts(BaseModel):
    """The green runs of a cell by what their held-out checks said."""
    green: int = 0
    correct: int = 0          # held-out checks pass
    plausible: int = 0        # visible tests pass, held-out checks fail
    unchecked: int = 0        # the scenario has no held-out checks
    unrecorded: int = 0       # a results line from before correctness was recorded


class CellStatistics(BaseModel):
    """The sampling figures of one cell (stored in the cell's entry of summary.json)."""
    resolution: Resolution | None = None
    intervals: dict[str, Interval] = {}
    correctness: CorrectnessCounts | None = None
    # scenario -> metric -> the scenario's value (rates: the share of its seeds; costs: the
    # median over its seeds); what the paired test compares.
    per_scenario: dict[str, dict[str, float | None]] = {}


class PairedTest(BaseModel):
    method: str = "exact two-sided sign test over shared scenarios"
    scenarios: int            # scenarios both cells ran
    b_higher: int             # scenarios where b's value is higher than a's
    b_lower: int
    p_value: float | None     # None: nothing to test (no shared scenario or no per-scenario values)
    alpha: float = ALPHA
    clears: bool              # p < alpha, in the direction of the difference
    resolution: float | None = None   # 1/scenarios


class Comparison(BaseModel):
    """Two cells of one scenario group, one metric: b − a against the band and the paired test."""
    scenario_group: str = "all"
    axis: str | None = None           # "budget" (neighbouring budgets) or "chooser" (one budget)
    a: str
    b: str
    metric: str
    a_value: float | None = None
    b_value: float | None = None
    difference: float | None = None
    band: float | None = None         # the wider of the two cells' bands; None: one seed, no band
    paired: PairedTest | None = None
    verdict: str                      # up | down | unmeasured
    # What it failed: "figure" (a cell has no value for the metric), "band", "sampling".
    unmeasured_by: list[Literal["figure", "band", "sampling"]] = []


# ----------------------------------------------------------------------------- the numbers
def wilson(p: float, n: int, z: float = Z95) -> Interval | None:
    """The Wilson score interval of a proportion `p` observed on `n` units."""
    if n <= 0 or p is None:
        return None
    p = min(max(p, 0.0), 1.0)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return Interval(low=round(max(0.0, centre - half), 6), high=round(min(1.0, centre + half), 6))


def sign_test(higher: int, lower: int) -> float:
    """Exact two-sided p of a split `higher`:`lower` when each side is equally likely."""
    n = higher + lower
    if n == 0:
        return 1.0
    k = min(higher, lower)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def per_scenario(runs: Iterable[SweepResult]) -> dict[str, dict[str, float | None]]:
    """scenario -> metric -> value over its seeds: the mean for a rate, the median for a cost."""
    by_scenario: dict[str, list[SweepResult]] = {}
    for run in runs:
        by_scenario.setdefault(run.scenario, []).append(run)
    out = {}
    for scenario, runs_of in sorted(by_scenario.items()):
        values = {}
        for metric, value_of in RUN_VALUE.items():
            xs = [v for v in (value_of(r) for r in runs_of) if v is not None]
            if not xs:
                values[metric] = None
            elif metric in RATE_METRICS:
                values[metric] = round(sum(xs) / len(xs), 6)
            else:
                values[metric] = statistics.median(xs)
        out[scenario] = values
    return out


def correctness_counts(runs: Iterable[SweepResult]) -> CorrectnessCounts:
    counts = CorrectnessCounts()
    for run in runs:
        if run.status != GREEN:
            continue
        counts.green += 1
        label = run.correctness   # None on lines written before it was recorded
        if label in ("correct", "plausible", "unchecked"):
            setattr(counts, label, getattr(counts, label) + 1)
        else:
            counts.unrecorded += 1
    return counts


def correct_rate(runs: list[SweepResult]) -> float | None:
    """The share of runs that are correct; None when a green run has no correctness record
    (a figure counting it either way would claim what was never checked)."""
    if not runs or correctness_counts(runs).unrecorded:
        return None
    return sum(is_correct(r) for r in runs) / len(runs)


def cell_statistics(runs: list[SweepResult], rates: dict[str, float | None]) -> CellStatistics:
    """Resolution, per-rate Wilson intervals over scenarios, correctness counts, per-scenario values.

    `rates`: the cell's own figures; a rate that is None (not computable) gets no interval."""
    scenarios = per_scenario(runs)
    n = len(scenarios)
    intervals = {}
    for metric in RATE_METRICS:
        if rates.get(metric) is None:
            continue
        values = [v[metric] for v in scenarios.values() if v[metric] is not None]
        interval = wilson(sum(values) / len(values), len(values)) if values else None
        if interval is not None:
            intervals[metric] = interval
    return CellStatistics(resolution=Resolution(scenarios=n, one_scenario=round(1 / n, 6)) if n else None,
                          intervals=intervals, correctness=correctness_counts(runs), per_scenario=scenarios)


def scenario_moves(a: dict[str, dict[str, float | None]], b: dict[str, dict[str, float | None]],
                   metric: str) -> tuple[list[str], list[str], int]:
    """Of the scenarios both ran with a value for `metric`: those where b is higher than a, those
    where it is lower, and how many were compared."""
    higher: list[str] = []
    lower: list[str] = []
    tested = 0
    for scenario in sorted(set(a) & set(b)):
        x, y = a[scenario].get(metric), b[scenario].get(metric)
        if x is None or y is None:
            continue
        tested += 1
        if y > x + EPS:
            higher.append(scenario)
        elif y < x - EPS:
            lower.append(scenario)
    return higher, lower, tested


def paired_test(a: dict[str, dict[str, float | None]], b: dict[str, dict[str, float | None]], metric: str,
                difference: float | None) -> PairedTest:
    """The sign test of b against a over the scenarios both ran, for one metric."""
    higher_names, lower_names, tested = scenario_moves(a, b, metric)
    higher, lower = len(higher_names), len(lower_names)
    if not tested:
        return PairedTest(scenarios=0, b_higher=0, b_lower=0, p_value=None, clears=False)
    p = sign_test(higher, lower)
    agrees = difference is not None and (difference > EPS and higher > lower or difference < -EPS and lower > higher)
    return PairedTest(scenarios=tested, b_higher=higher, b_lower=lower, p_value=round(p, 6),
                      clears=p < ALPHA and agrees, resolution=round(1 / tested, 6))


def judge(*, scenario_group: str, axis: str | None, a: str, b: str, metric: str, a_value: float | None,
          b_value: float | None, band_check: dict[str, Any], a_scenarios: dict, b_scenarios: dict) -> Comparison:
    """One comparison. `band_check` is the band verdict (sweep.verdict): difference, band, verdict.

    `up`/`down` only when both the band and the paired test are cleared; otherwise `unmeasured`
    with the failed checks named. No band (one seed) fails the band check."""
    difference = band_check["difference"]
    failed: list[Literal["figure", "band", "sampling"]] = []
    paired = None
    if a_value is None or b_value is None:
        failed.append("figure")
    else:
        paired = paired_test(a_scenarios, b_scenarios, metric, difference)
        if band_check["verdict"] == "unmeasured":
            failed.append("band")
        if not paired.clears:
            failed.append("sampling")
    label = "unmeasured" if failed else band_check["verdict"]
    return Comparison(scenario_group=scenario_group, axis=axis, a=a, b=b, metric=metric, a_value=a_value,
                      b_value=b_value, difference=difference, band=band_check["band"], paired=paired, verdict=label,
                      unmeasured_by=failed)


# ------------------------------------------------------------------------------ the words
def fmt_number(v: float | None, digits: int = 4) -> str:
    return "—" if v is None else f"{float(v):.{digits}f}"


def fmt_signed(v: float | None, digits: int = 4) -> str:
    return "—" if v is None else f"{v:+.{digits}f}"


def fmt_interval(interval: Interval | None, digits: int = 2) -> str:
    return "—" if interval is None else f"{interval.low:.{digits}f}–{interval.high:.{digits}f}"


def fmt_resolution(resolution: Resolution | None) -> str:
    return "—" if resolution is None else f"1/{resolution.scenarios} = {resolution.one_scenario:.3f}"


def fmt_paired(paired: PairedTest | None) -> str:
    if paired is None:
        return "—"
    if paired.p_value is None:
        return "no shared scenarios"
    p = "p < 0.001" if paired.p_value < 0.001 else f"p = {paired.p_value:.3f}"
    return f"{paired.b_higher} higher, {paired.b_lower} lower of {paired.scenarios}; {p}"


def fmt_reason(comparison: Comparison) -> str:
    """What an `unmeasured` comparison failed, in words; "" for a finding."""
    if comparison.verdict != "unmeasured":
        return ""
    if "figure" in comparison.unmeasured_by:
        return "a cell has no figure"
    reasons = []
    if "band" in comparison.unmeasured_by:
        reasons.append("no band: one seed" if comparison.band is None else "inside the band")
    paired = comparison.paired
    if "sampling" in comparison.unmeasured_by:
        if paired is not None and paired.p_value is not None and paired.p_value < paired.alpha:
            reasons.append("the scenarios disagree with the difference")  # e.g. equal medians, most scenarios higher
        else:
            reasons.append("not clear of sampling")
    return "; ".join(reasons)


def fmt_verdict(comparison: Comparison) -> str:
    """`up`, `down`, or `unmeasured (…)` naming what it failed."""
    reason = fmt_reason(comparison)
    return f"{comparison.verdict} ({reason})" if reason else comparison.verdict


def fmt_correctness(counts: CorrectnessCounts | None) -> str:
    if counts is None or not counts.green:
        return "no green runs"
    if counts.unrecorded == counts.green:
        return f"{counts.green} green; correctness not recorded"
    text = (f"{counts.green} green: {counts.correct} correct, {counts.plausible} plausible only, "
            f"{counts.unchecked} unchecked")
    return text + (f", {counts.unrecorded} not recorded" if counts.unrecorded else "")


def in_scenarios(difference: float | None, resolution: float | None) -> str:
    """A difference in units of one scenario: +0.0536 at 1/28 is +1.5 scenarios."""
    if difference is None or not resolution:
        return ""
    return f"{difference / resolution:+.1f} scenarios"


MODELS_NOTE = ("tokens and cost are totals over the cell's runs (cost in the models file's price unit, — when "
               "unpriced; tokens — when an endpoint reported no usage); step latency is the median over runs of "
               "each run's median chooser step, retries and re-asks included; runs the endpoint failed are not "
               "in `runs` or the success rate")
