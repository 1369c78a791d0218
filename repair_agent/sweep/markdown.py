"""summary.md: a sweep's figures and comparisons as Markdown tables."""
from __future__ import annotations

from . import statistics as stats
from .records import SweepSummary
from .summary import EXPLANATION, METRIC_DIGITS

_fmt, _signed = stats.fmt_number, stats.fmt_signed


def render_markdown(summary: SweepSummary, command: str | None = None, cost_comparisons: bool = True) -> str:
    """summary.md; without `cost_comparisons` (the terminal) only success, correct and evidence are compared."""
    lines = ["# Sweep summary", ""]
    if command:
        lines += ["```", command, "```", ""]
    lines += [EXPLANATION, ""]
    if any(c.one_seed for c in summary.cells):
        lines += [f"**{stats.NO_BAND_NOTE}**", ""]
    groups = sorted({c.scenario_group for c in summary.cells})
    for g in groups:
        cells = [c for c in summary.cells if c.scenario_group == g]
        if summary.group_by != "all":
            lines += [f"## {summary.group_by}: {g}", ""]
        lines += ["Rates with their 95% interval over scenarios in parentheses.", "",
                  "| chooser | budget | runs | 1 scenario | success | band | correct | evidence complete | repaired | "
                  "handoffs ok | median steps | median tokens | median wall s | exits |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for c in cells:
            exits = ", ".join(f"{k} {v}" for k, v in c.exits.items())
            handoffs = f"{c.handoffs_correct}/{c.handoff_runs}" + (
                f" ({c.forced_green} forced green)" if c.forced_green else "")
            rates = {m: f"{_fmt(v)} ({stats.fmt_interval(c.intervals.get(m))})" if (v := c.figure(m)) is not None
                     else "—" for m in stats.RATE_METRICS}
            lines.append(f"| {c.chooser} | {c.budget} | {c.n} | {stats.fmt_resolution(c.resolution)} | "
                         f"{rates['success_rate']} | {_fmt(c.band)} | {rates['correct_rate']} | "
                         f"{rates['evidence_complete_rate']} | {c.repaired}/{c.repair_runs} | {handoffs} | "
                         f"{_fmt(c.median_steps, 1)} | {_fmt(c.median_tokens, 0)} | "
                         f"{_fmt(c.median_wall_s, 2)} | {exits} |")
        lines.append("")
        lines += ["Green runs by their held-out checks:", ""]
        lines += [f"- {c.name}: {stats.fmt_correctness(c.correctness)}" for c in cells] + [""]
        for title, metrics in (("Success, correct and evidence", stats.RATE_METRICS),
                               ("Cost", ("median_steps", "median_tokens", "median_wall_s"))):
            comps = [x for x in summary.comparisons if x.scenario_group == g and x.metric in metrics]
            if not comps or title == "Cost" and not cost_comparisons:
                continue
            lines += [f"{title}: neighbouring budgets of one chooser, and choosers at one budget. The paired test "
                      "counts the shared scenarios where b is higher and where it is lower than a.", "",
                      "| comparison | metric | a | b | b − a | band | paired test | verdict |",
                      "|---|---|---:|---:|---:|---:|---|---|"]
            for x in comps:
                digits = METRIC_DIGITS.get(x.metric, 4)
                scale = stats.in_scenarios(x.difference, x.paired.resolution if x.paired else None)
                delta = _signed(x.difference, digits)
                if scale and x.metric in stats.RATE_METRICS:
                    delta += f" ({scale})"
                lines.append(f"| {x.a} → {x.b} | {x.metric} | {_fmt(x.a_value, digits)} | {_fmt(x.b_value, digits)} "
                             f"| {delta} | {_fmt(x.band, digits)} | {stats.fmt_paired(x.paired)} | "
                             f"{stats.fmt_verdict(x)} |")
            lines.append("")
    lines += render_models(summary)
    if (limit := summary.cost_limit) is not None:
        lines += ["## Cost limit (--max-cost)", "",
                  f"Spent {_fmt(limit.spent, 6)} of {_fmt(limit.max_cost, 6)} (the models files' prices)"
                  + (f"; {limit.unknown_cost_runs} run(s) of unknown cost (no usage reported) not counted"
                     if limit.unknown_cost_runs else "") + ".", ""]
        if limit.not_started:
            lines += [f"**The limit was reached: {limit.not_started} run(s) were not started.** Run the same command "
                      "into the same directory with a larger --max-cost to run them." if limit.reached else
                      f"{limit.not_started} run(s) have no result yet (interrupted): run the same command again.", ""]
    if summary.infrastructure_failures:
        lines += ["## Infrastructure failures (not counted)", "",
                  "The model endpoint failed after its retries: these runs are in no success rate; running the same "
                  "sweep into the same directory runs exactly these again.", ""]
        lines += [x.line() for x in summary.infrastructure_failures] + [""]
    if summary.chooser_errors:
        lines += ["## Chooser errors (counted as failed runs)", "",
                  "The chooser raised an exception: a bug in the chooser, not a finding about the repair. Each "
                  "run's journal keeps the traceback (its stop line's `extra.traceback`).", ""]
        lines += [x.line() for x in summary.chooser_errors] + [""]
    if summary.broken:
        lines += ["## Broken scenarios (no run happened)", ""]
        lines += [f"- `{b.scenario}`: {b.detail}" for b in summary.broken] + [""]
    if summary.never_started:
        lines += ["## Scenarios whose runs stopped before the first step (dependency_failure)", ""]
        lines += [f"- `{b.scenario}`: {b.detail[:300]}" for b in summary.never_started] + [""]
    lines += ["The success-against-budget chart (each cell's band and 95% interval) is in summary.html.", ""]
    return "\n".join(lines)


def render_models(summary: SweepSummary) -> list[str]:
    """One row per model (chooser) and budget: success, evidence, tokens, money and time."""
    from ..reports.report import describe_model

    cells = [c for c in summary.cells if c.model]
    if not cells:
        return []
    grouped = summary.group_by != "all"
    lines = ["## Models", "", f"- {stats.MODELS_NOTE}", "",
             ("| group " if grouped else "") + "| chooser | model | budget | runs | success | band | evidence complete | "
             "prompt tokens | completion tokens | cost | median step s | requests | infra failures |",
             ("|---" if grouped else "") + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        lines.append((f"| {c.scenario_group} " if grouped else "")
                     + f"| {c.chooser} | {describe_model(c.model)} | {c.budget} | {c.n} | "
                     f"{_fmt(c.success_rate)} | {_fmt(c.band)} | {_fmt(c.evidence_complete_rate)} | "
                     f"{_fmt(c.prompt_tokens, 0)} | {_fmt(c.completion_tokens, 0)} | "
                     f"{_fmt(c.cost, 4)} | {_fmt(c.median_step_latency_s, 3)} | {c.requests} | "
                     f"{c.infrastructure_failures} |")
    return lines + [""]
