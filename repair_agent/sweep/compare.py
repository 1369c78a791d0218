"""Two sweeps compared cell by cell: before and after a change to a chooser, a model, a prompt or
the scenarios' environment, on the same scenarios.

A cell of one sweep is compared with the cell of the same scenario group, chooser and budget in
the other, by the same rule as the comparisons inside a sweep (statistics.judge): a difference is
`up` or `down` only when it is wider than both cells' run-to-run bands AND a paired sign test over
the scenarios both ran agrees; otherwise `unmeasured`, naming the check it failed. The scenarios
whose value moved are listed by name, so a reader can look at the runs behind the numbers.

Both figures, and so `b − a`, are taken over the scenarios both sweeps ran in the cell: a cell's
own rate over a different set of scenarios would mix a change of the set into the difference.
The scenarios one sweep ran and the other did not are counted and named, left out. (The band is
still each cell's own, over its seeds.)
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from . import statistics as stats
from .records import Cell, SweepSummary
from .summary import METRIC_DIGITS, verdict

COMPARED = stats.RATE_METRICS


class ScenarioMoves(BaseModel):
    """For one metric: the shared scenarios where the second sweep's value is higher, and lower."""

    metric: str
    higher: list[str] = []
    lower: list[str] = []


class CellPair(BaseModel):
    scenario_group: str
    chooser: str
    budget: int
    comparisons: list[stats.Comparison]
    moves: list[ScenarioMoves]
    shared: int = 0              # scenarios both sweeps ran in this cell: the figures are over these
    only_in_a: list[str] = []   # scenarios the first sweep ran in this cell and the second did not (left out)
    only_in_b: list[str] = []


class SweepComparison(BaseModel):
    a: str
    b: str
    pairs: list[CellPair]
    cells_only_in_a: list[str] = []   # "group: chooser@budget"
    cells_only_in_b: list[str] = []


def read_summary(path: Path) -> SweepSummary:
    """A sweep's summary.json, given the file or the sweep's output directory."""
    path = Path(path)
    return SweepSummary.read(path / "summary.json" if path.is_dir() else path)


def compare_sweeps(a: SweepSummary, b: SweepSummary, *, a_label: str = "a", b_label: str = "b") -> SweepComparison:
    def key(c: Cell) -> tuple[str, str, int]:
        return c.scenario_group, c.chooser, c.budget

    def described(k: tuple[str, str, int]) -> str:
        return f"{k[0]}: {k[1]}@{k[2]}"

    cells_a, cells_b = {key(c): c for c in a.cells}, {key(c): c for c in b.cells}
    pairs = []
    for k in sorted(cells_a.keys() & cells_b.keys()):
        x, y = cells_a[k], cells_b[k]
        shared = sorted(x.per_scenario.keys() & y.per_scenario.keys())
        comparisons, moves = [], []
        for metric in COMPARED:
            x_value, y_value = _over(x, shared, metric), _over(y, shared, metric)
            if x_value is None and y_value is None:
                continue
            comparisons.append(stats.judge(
                scenario_group=k[0], axis=None, a=f"{a_label}:{x.name}", b=f"{b_label}:{y.name}", metric=metric,
                a_value=x_value, b_value=y_value,
                band_check=verdict(x_value, y_value, x.bands.get(metric), y.bands.get(metric)),
                a_scenarios=x.per_scenario, b_scenarios=y.per_scenario))
            moves.append(_moves(x, y, metric))
        pairs.append(CellPair(scenario_group=k[0], chooser=k[1], budget=k[2], comparisons=comparisons, moves=moves,
                              shared=len(shared), only_in_a=sorted(x.per_scenario.keys() - y.per_scenario.keys()),
                              only_in_b=sorted(y.per_scenario.keys() - x.per_scenario.keys())))
    return SweepComparison(a=a_label, b=b_label, pairs=pairs,
                           cells_only_in_a=[described(k) for k in sorted(cells_a.keys() - cells_b.keys())],
                           cells_only_in_b=[described(k) for k in sorted(cells_b.keys() - cells_a.keys())])


def _over(cell: Cell, scenarios: list[str], metric: str) -> float | None:
    """A rate over the given scenarios: the mean of their per-scenario rates (each over its seeds)."""
    values = [v for s in scenarios if (v := cell.per_scenario[s].get(metric)) is not None]
    return round(sum(values) / len(values), 6) if values else None


def _moves(x: Cell, y: Cell, metric: str) -> ScenarioMoves:
    higher, lower, _ = stats.scenario_moves(x.per_scenario, y.per_scenario, metric)
    return ScenarioMoves(metric=metric, higher=higher, lower=lower)


def render_comparison(comparison: SweepComparison) -> str:
    """The comparison as Markdown: one table row per cell and metric, then the scenarios that moved."""
    lines = [f"# {comparison.a} → {comparison.b}", "",
             "Each row compares the same scenario group, chooser and budget in the two sweeps. A difference reads "
             "**up** or **down** only when it is wider than both cells' run-to-run bands and the scenarios where "
             f"{comparison.b} did better outnumber those where it did worse by more than chance explains (an exact "
             "sign test, p < 0.05); otherwise **unmeasured**, naming the check it failed.", "",
             "Both figures are over the scenarios both sweeps ran in the cell (`shared`); a scenario only one ran "
             "is left out, and named below.", "",
             f"| cell | shared | metric | {comparison.a} | {comparison.b} | b − a | band | paired test | verdict |",
             "|---|---:|---|---:|---:|---:|---:|---|---|"]
    for pair in comparison.pairs:
        for x in pair.comparisons:
            digits = METRIC_DIGITS.get(x.metric, 4)
            scale = stats.in_scenarios(x.difference, x.paired.resolution if x.paired else None)
            lines.append(f"| {pair.scenario_group}: {pair.chooser}@{pair.budget} | {pair.shared} | {x.metric} | "
                         f"{stats.fmt_number(x.a_value, digits)} | {stats.fmt_number(x.b_value, digits)} | {stats.fmt_signed(x.difference, digits)}"
                         f"{f' ({scale})' if scale else ''} | {stats.fmt_number(x.band, digits)} | {stats.fmt_paired(x.paired)} "
                         f"| {stats.fmt_verdict(x)} |")
    lines.append("")
    for pair in comparison.pairs:
        moved = [m for m in pair.moves if m.higher or m.lower]
        if moved or pair.only_in_a or pair.only_in_b:
            lines += [f"{pair.scenario_group}: {pair.chooser}@{pair.budget}:", ""]
            for m in moved:
                lines.append(f"- {m.metric}: higher in {comparison.b}: {', '.join(m.higher) or 'none'}; "
                             f"lower: {', '.join(m.lower) or 'none'}")
            if pair.only_in_a:
                lines.append(f"- left out, only in {comparison.a} ({len(pair.only_in_a)}): {', '.join(pair.only_in_a)}")
            if pair.only_in_b:
                lines.append(f"- left out, only in {comparison.b} ({len(pair.only_in_b)}): {', '.join(pair.only_in_b)}")
            lines.append("")
    if comparison.cells_only_in_a or comparison.cells_only_in_b:
        lines.append(f"Cells in one sweep only: {comparison.a}: {', '.join(comparison.cells_only_in_a) or 'none'}; "
                     f"{comparison.b}: {', '.join(comparison.cells_only_in_b) or 'none'}")
        lines.append("")
    if not comparison.pairs:
        lines += ["The two sweeps share no cell (scenario group, chooser and budget).", ""]
    return "\n".join(lines)
