"""The sweep's one chart: success rate against budget, one series per (scenario group, chooser),
each cell's band as a bar and its 95% interval as capped lines. Computed here as plain geometry;
summary.html draws it as inline SVG (sweep.html.j2)."""
from __future__ import annotations

from typing import Any

from . import statistics as stats
from .records import Cell

SERIES_HUES = [210, 20, 130, 280, 50, 340, 170, 90]


def sweep_plot(cells: list[tuple[Cell, bool]], width: int = 720, height: int = 300) -> dict[str, Any] | None:
    """Success rate against budget, one series per (scenario group, chooser), the band as an error bar.

    `cells`: each cell with whether the page marks it unmeasured (an open circle)."""
    usable = [(c, unmeasured) for c, unmeasured in cells if c.success_rate is not None]
    if not usable:
        return None
    left, right, top, bottom = 52, width - 180, 16, height - 40
    budgets = sorted({c.budget for c, _ in usable})
    slot = {b: i for i, b in enumerate(budgets)}  # budgets are usually a doubling ladder: equal spacing reads best

    def x(b: int, nudge: float = 0.0) -> float:
        return round(left + (right - left) * (slot[b] + 0.5) / len(budgets) + nudge, 1)

    def y(rate: float) -> float:
        return round(bottom - (bottom - top) * min(max(rate, 0.0), 1.0), 1)

    series: dict[tuple[str, str], list[tuple[Cell, bool]]] = {}
    for c, unmeasured in usable:
        series.setdefault((c.scenario_group, c.chooser), []).append((c, unmeasured))
    out = []
    for index, ((group, chooser), members) in enumerate(sorted(series.items())):
        nudge = (index - (len(series) - 1) / 2) * 10  # series at one budget side by side, not on top of each other
        points = []
        for c, unmeasured in sorted(members, key=lambda member: member[0].budget):
            b, rate, band = c.budget, c.success_rate or 0.0, c.band or 0.0
            interval = c.intervals.get("success_rate")
            points.append({"x": x(b, nudge), "y": y(rate), "lo": y(rate - band), "hi": y(rate + band),
                           "ci_lo": y(interval.low) if interval else None,
                           "ci_hi": y(interval.high) if interval else None,
                           "unmeasured": unmeasured,
                           "label": f"{group} / {chooser} @ {b}: {rate:.2f} ± {band:.2f} (n={c.n})"
                                    + (f", 95% interval {stats.fmt_interval(interval)}" if interval else "")})
        out.append({"name": f"{group} / {chooser}", "hue": SERIES_HUES[index % len(SERIES_HUES)], "points": points,
                    "line": " ".join(f"{p['x']},{p['y']}" for p in points)})
    return {"width": width, "height": height, "left": left, "right": right, "top": top, "bottom": bottom,
            "series": out, "x_ticks": [(x(b), b) for b in budgets],
            "y_ticks": [(y(v / 4), f"{v * 25}%") for v in range(5)]}
