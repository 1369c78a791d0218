"""A sweep's figures: per cell (scenario group × chooser × budget) its rates, bands and exits, and
the comparisons between neighbouring cells. The band: a cell's figure is computed separately for
each seed, and the band is the range (max − min) of those per-seed figures; the sampling side (a
95% interval per rate, a paired sign test per comparison) is in statistics.py."""
from __future__ import annotations

import itertools
import statistics
from collections import Counter
from typing import Any, Iterable

from . import statistics as stats
from ..loop.stops import StopReason
from .jobs import SCENARIO_ERROR, SweepResult
from .records import Cell, ChooserCrash, InfrastructureFailure, RunRow, ScenarioProblem, SweepSummary

CHOOSER_ERROR = StopReason.CHOOSER_ERROR.value

METRICS = ("success_rate", "correct_rate", "evidence_complete_rate", "median_steps", "median_tokens", "median_wall_s")
METRIC_DIGITS = {"success_rate": 4, "correct_rate": 4, "evidence_complete_rate": 4, "median_steps": 1,
                 "median_tokens": 0, "median_wall_s": 2}
EPS = 1e-9


def band(per_seed: Iterable[float | None]) -> float | None:
    """The run-to-run band of one figure: max − min over its per-seed values. None (no band)
    with fewer than two seeds: a single run says nothing about its own spread."""
    values = [v for v in per_seed if v is not None]
    if len(values) < 2:
        return None
    return max(values) - min(values)


def verdict(a: float | None, b: float | None, band_a: float | None, band_b: float | None) -> dict:
    """The difference b − a between two cells, judged against the wider of their bands.

    Inside the band (|difference| ≤ band) — or with no band at all — it is `unmeasured`, never
    a win; outside, the direction: `up` (b larger) or `down` (b smaller)."""
    if a is None or b is None:
        return {"difference": None, "band": None, "verdict": "unmeasured"}
    difference = b - a
    width = None if band_a is None or band_b is None else max(band_a, band_b)
    if width is None or abs(difference) <= width + EPS:
        label = "unmeasured"
    else:
        label = "up" if difference > 0 else "down"
    return {"difference": round(difference, 6), "band": None if width is None else round(width, 6), "verdict": label}


# --------------------------------------------------------------------------------- summary
def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _median_known(values: list) -> float | None:
    """None when any value is unknown: a median over the runs that happened to report is no median."""
    return None if any(v is None for v in values) else _median(values)


def _sum_known(values: list) -> float | None:
    return None if not values or any(v is None for v in values) else sum(values)


def model_figures(runs: list[SweepResult]) -> dict[str, Any]:
    """What a model cost in a cell: tokens, money and time per step (None where unknown or unpriced)."""
    model = next((r.model for r in runs if r.model), None)
    priced = bool(model) and (model.get("price_per_mtok_in") is not None or model.get("price_per_mtok_out") is not None)
    latencies = [r.median_step_latency_s for r in runs if r.median_step_latency_s is not None]
    return {"model": model,
            "prompt_tokens": _sum_known([r.prompt_tokens for r in runs]),
            "completion_tokens": _sum_known([r.completion_tokens for r in runs]),
            "cost": _sum_known([r.cost for r in runs]) if priced else None,
            # the median over the cell's runs of each run's median step latency
            "median_step_latency_s": _median(latencies),
            "requests": sum(r.requests for r in runs)}


def _figures(runs: list[SweepResult]) -> dict[str, float | None]:
    n = len(runs)
    return {
        "success_rate": sum(r.correct for r in runs) / n if n else None,
        "correct_rate": stats.correct_rate(runs),
        "evidence_complete_rate": sum(bool((r.rubric or {}).get("complete")) for r in runs) / n if n else None,
        "median_steps": _median([r.steps for r in runs]),
        "median_tokens": _median_known([r.tokens for r in runs]),
        "median_wall_s": _median([r.wall_s for r in runs]),
    }


def _groups(run: SweepResult, group_by: str) -> list[str]:
    if group_by == "all":
        return ["all"]
    if group_by == "tag":
        return list(run.tags) or ["(untagged)"]
    return [{"kind": run.kind, "scenario": run.scenario, "expected": run.expected}[group_by]]


def summarize(results: list[SweepResult], group_by: str = "all") -> SweepSummary:
    """Per (scenario group, chooser, budget): figures, bands, exits; comparisons between
    neighbouring budgets of one chooser and between choosers at one budget."""
    # An endpoint failure is not the model's repair failure: out of every denominator, listed apart.
    infrastructure = [r for r in results if r.status != SCENARIO_ERROR and r.infrastructure_failure]
    runnable = [r for r in results if r.status != SCENARIO_ERROR and not r.infrastructure_failure]
    broken = sorted({(r.scenario, r.detail) for r in results if r.status == SCENARIO_ERROR})
    never_started = sorted({(r.scenario, r.detail) for r in runnable
                            if r.status == "dependency_failure" and r.steps == 0})
    cells_runs: dict[tuple[str, str, int], list[SweepResult]] = {}
    for r in runnable:
        for g in _groups(r, group_by):
            cells_runs.setdefault((g, r.chooser, r.budget), []).append(r)
    cells = []
    for (group, chooser, budget), runs in sorted(cells_runs.items()):
        seeds = sorted({r.seed for r in runs})
        per_seed = {s: _figures([r for r in runs if r.seed == s]) for s in seeds}
        figures = _figures(runs)
        repair = [r for r in runs if r.expected == "awaiting_release_confirmation"]
        handoff = [r for r in runs if r.expected == "handoff_requested"]
        rubric_items = {}
        for item in ("target_failed_before_patch", "target_passed_on_final_diff", "full_suite_on_final_diff",
                     "scope_check_on_final_diff"):
            rubric_items[item] = sum(bool((r.rubric or {}).get(item)) for r in runs) / len(runs)
        cells.append(Cell(
            scenario_group=group, chooser=chooser, budget=budget, n=len(runs), seeds=seeds,
            scenarios=len({r.scenario for r in runs}),
            **figures,
            band=band(v["success_rate"] for v in per_seed.values()),
            bands={m: band(v[m] for v in per_seed.values()) for m in METRICS},
            per_seed={str(s): v for s, v in per_seed.items()},
            repaired=sum(r.status == "awaiting_release_confirmation" for r in repair), repair_runs=len(repair),
            handoffs_correct=sum(r.status == "handoff_requested" for r in handoff), handoff_runs=len(handoff),
            forced_green=sum(r.status == "awaiting_release_confirmation" for r in handoff),
            evidence=rubric_items,
            exits=dict(sorted(Counter(r.status for r in runs).items())),
            **dict(stats.cell_statistics(runs, figures)),
            **model_figures(runs),
            infrastructure_failures=sum(1 for r in infrastructure if r.chooser == chooser
                                        and r.budget == budget and group in _groups(r, group_by)),
            chooser_errors=sum(r.status == CHOOSER_ERROR for r in runs),
        ))
    return SweepSummary(
        group_by=group_by, cells=cells, comparisons=compare_cells(cells),
        runs=[RunRow.model_validate(r.model_dump()) for r in results],
        infrastructure_failures=[InfrastructureFailure.model_validate(r.model_dump()) for r in infrastructure],
        chooser_errors=[ChooserCrash.model_validate(r.model_dump()) for r in runnable if r.status == CHOOSER_ERROR],
        broken=[ScenarioProblem(scenario=s, detail=d) for s, d in broken],
        never_started=[ScenarioProblem(scenario=s, detail=d) for s, d in never_started],
        band_definition=BAND_DEFINITION, success_definition=SUCCESS_DEFINITION, explanation=EXPLANATION,
        seeds_per_cell=max((len(c.seeds or ()) for c in cells), default=0))


BAND_DEFINITION = ("band = max − min over seeds of the cell's per-seed figure (the run-to-run spread); a difference "
                   "between two cells is a finding only when |difference| > the wider of their two bands and a paired "
                   "sign test over the shared scenarios gives p < 0.05 in the same direction, otherwise `unmeasured` "
                   "with the check it failed; with one seed there is no band and every difference is `unmeasured`")
SUCCESS_DEFINITION = ("success = the run ended in the scenario's expected outcome: awaiting_release_confirmation for "
                      "a repairable scenario, handoff_requested for one whose target cannot pass inside the writable "
                      "scope (reported separately as `handoffs ok`; a green on such a scenario is `forced green`)")
# The one paragraph a newcomer reads before the tables (summary.md, summary.html); **term** is the
# only markup, so the HTML page can bold the terms without trusting any markup.
EXPLANATION = (
    "Each cell runs every scenario once per seed. **success** is the share of runs that ended the way the scenario "
    "expects: a repair waiting for release, or a hand-off where no repair fits inside the files the agent may change. "
    "**correct** is the share of runs whose success holds beyond the tests the agent could see: a repair that passes "
    "the scenario's held-out checks, or the expected hand-off. A green run that fails those checks is **plausible "
    "only**; one on a scenario without them is **unchecked**. **evidence complete** is the share of runs whose log "
    "shows the target test failing before the fix, and the target test, the whole test suite and the file-scope check "
    "passing on the final fix. The **band** is how far a figure moved between seeds: run-to-run noise. The **95% "
    "interval** is where the figure could lie on other scenarios like these, because these are only a sample. **1 "
    "scenario** is one scenario's weight in a rate (1/N), the smallest step a rate can take. A comparison reads **up** "
    "or **down** only when the difference is wider than the band and the scenarios where one cell did better "
    "outnumber those where it did worse by more than chance explains (an exact sign test, p < 0.05); otherwise it "
    "reads **unmeasured**, naming the check it failed.")


def compare_cells(cells: list[Cell]) -> list[stats.Comparison]:
    by_key = {(c.scenario_group, c.chooser, c.budget): c for c in cells}
    pairs = []
    groups = sorted({c.scenario_group for c in cells})
    for g in groups:
        choosers = sorted({c.chooser for c in cells if c.scenario_group == g})
        for ch in choosers:
            budgets = sorted(c.budget for c in cells if c.scenario_group == g and c.chooser == ch)
            pairs += [(by_key[(g, ch, a)], by_key[(g, ch, b)], "budget") for a, b in zip(budgets, budgets[1:])]
        for budget in sorted({c.budget for c in cells if c.scenario_group == g}):
            here = [by_key[(g, ch, budget)] for ch in choosers if (g, ch, budget) in by_key]
            pairs += [(a, b, "chooser") for a, b in itertools.combinations(here, 2)]
    out = []
    for a, b, axis in pairs:
        for metric in METRICS:
            a_value, b_value = a.figure(metric), b.figure(metric)
            if a_value is None and b_value is None:
                continue  # e.g. `correct` on results written before it was recorded: nothing to compare
            out.append(stats.judge(
                scenario_group=a.scenario_group, axis=axis, a=a.name, b=b.name, metric=metric,
                a_value=a_value, b_value=b_value,
                band_check=verdict(a_value, b_value, a.bands.get(metric), b.bands.get(metric)),
                a_scenarios=a.per_scenario, b_scenarios=b.per_scenario))
    return out
