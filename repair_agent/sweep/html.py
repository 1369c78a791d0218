"""`DIR/summary.html`: a sweep's typed summary (records.py) as a self-contained page: the
success-against-budget chart (chart.py), the cells with their band and intervals, the comparisons,
and a relative link to each run's report.html. It renders through the same autoescaping
environment as the run's page (repair_agent/reports/html_page.py); a summary.json from an older sweep
reads through the same models, its missing figures left out, so it loses those, not the page."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from verifier.files import atomic_write

from ..reports.html_page import template
from . import statistics as stats
from .chart import sweep_plot
from .records import Cell, RunRow, SweepSummary


class CellRow(BaseModel):
    """A cell with what the page prints about it."""

    cell: Cell
    unmeasured: bool      # no rate, or in an unmeasured success comparison
    resolution: str
    intervals: dict[str, str]
    correctness: str | None


class ComparisonRow(BaseModel):
    comparison: stats.Comparison
    paired: str
    reason: str


class RunLink(BaseModel):
    run: RunRow
    href: str | None
    has_report: bool


def _run_href(run_dir: str | None, out_dir: Path) -> tuple[str | None, bool]:
    """A relative, percent-encoded link to the run's report.html (never a scheme such as javascript:)."""
    if not run_dir:
        return None, False
    path = Path(run_dir)
    if not path.is_absolute() and (out_dir / path).exists():
        path = out_dir / path
    target = path.resolve() / "report.html"
    return quote(os.path.relpath(target, out_dir.resolve())), target.is_file()


def render_sweep_html(summary: SweepSummary, out_dir: Path) -> Path:
    """Write DIR/summary.html from a sweep's summary; returns its path."""
    out_dir = Path(out_dir)
    # Only success comparisons mark a cell of the success plot; a comparison names its cells as
    # Cell.name does, within its scenario group.
    unmeasured = {(c.scenario_group, name) for c in summary.comparisons
                  if c.verdict == "unmeasured" and c.metric == "success_rate" for name in (c.a, c.b)}
    cells = [CellRow(cell=c, unmeasured=c.success_rate is None or not c.n or (c.scenario_group, c.name) in unmeasured,
                     resolution=stats.fmt_resolution(c.resolution),
                     intervals={m: stats.fmt_interval(i) for m, i in c.intervals.items()},
                     correctness=stats.fmt_correctness(c.correctness) if c.correctness is not None else None)
             for c in summary.cells]
    comparisons = [ComparisonRow(comparison=c, paired=stats.fmt_paired(c.paired), reason=stats.fmt_reason(c))
                   for c in summary.comparisons]
    runs = [RunLink(run=r, href=href, has_report=exists)
            for r in summary.runs for href, exists in [_run_href(r.run_dir, out_dir)]]
    explanation = summary.explanation
    html = template("sweep.html.j2").render(
        s=summary, cells=cells, comparisons=comparisons, runs=runs,
        plot=sweep_plot([(row.cell, row.unmeasured) for row in cells]), fmt=_fmt, models_note=stats.MODELS_NOTE,
        model_cells=[row.cell for row in cells if row.cell.model is not None],
        # **term** pieces are bolded by the template (odd pieces), each piece autoescaped as text.
        explanation=explanation.split("**") if explanation else None,
        no_band_note=stats.NO_BAND_NOTE if any(row.cell.one_seed for row in cells) else None,
        rate_metrics=[("success_rate", "success"), ("correct_rate", "correct"),
                      ("evidence_complete_rate", "evidence complete")])
    path = out_dir / "summary.html"
    atomic_write(path, html)
    return path


def _fmt(value: Any, digits: int = 2) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return "—" if value is None else str(value)
    return str(int(number)) if number.is_integer() and digits == 0 else f"{number:.{digits}f}"
