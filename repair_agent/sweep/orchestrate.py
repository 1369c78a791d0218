"""A whole sweep: the jobs still to run (results.jsonl is the resume state), an executor, and the
summary written from the results (summary.json, summary.md, summary.html)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from pydantic import BaseModel

from verifier.files import atomic_write

from ..untrusted.redaction import redact
from .executors import run_local, run_ray
from .jobs import (RESULTS, RETRIED_ON_RESUME, SUMMARY_JSON, SUMMARY_MD, ResultsWriter, SweepJob, SweepResult,
                   load_results)
from .markdown import render_markdown
from .progress import Progress
from .records import SweepCostLimit, SweepSummary
from .summary import summarize


class SweepOutcome(BaseModel):
    out_dir: str
    total: int
    skipped: int
    ran: int
    interrupted: bool
    summary: SweepSummary


def sweep(jobs: list[SweepJob], out_dir: Path, *, workers: int | None = None, executor: str = "local",
          group_by: str = "all", command: str | None = None, progress_stream=None,
          max_cost: float | None = None) -> SweepOutcome:
    """`max_cost`: no run starts once the finished runs' cost (this sweep's, resumed sessions' too)
    reaches it; runs in progress finish."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / RESULTS
    for stop_file in {j.stop_file for j in jobs if j.stop_file}:  # left by an interrupted sweep
        Path(stop_file).unlink(missing_ok=True)
    # Later lines win: a retried key's new line supersedes its old one.
    finished = {r.key: r for r in load_results(results_path)}
    # Runs the endpoint failed are tried again too: their outcome says nothing about the model.
    todo = [j for j in jobs if j.key not in finished or finished[j.key].status in RETRIED_ON_RESUME
            or finished[j.key].infrastructure_failure]
    wanted = {j.key for j in jobs}
    workers = max(1, workers or os.cpu_count() or 1)
    progress = Progress(len(jobs), len(jobs) - len(todo), progress_stream)
    writer = ResultsWriter(results_path)
    ran = 0

    def on_result(job: SweepJob, result: SweepResult) -> None:
        nonlocal ran
        writer.append(result)
        finished[result.key] = result
        ran += 1
        progress.advance(result)

    def may_start() -> bool:
        return max_cost is None or _cost_limit(finished, wanted, max_cost).spent < max_cost

    # `kill` (SIGTERM: a CI timeout, a service manager) stops a sweep like Ctrl-C does.
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if not todo:
            interrupted = False
        elif executor == "ray":
            interrupted = run_ray(todo, workers, on_result, may_start if max_cost is not None else None)
        else:
            interrupted = run_local(todo, workers, on_result, may_start if max_cost is not None else None)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        progress.close()
        writer.close()
    results = [r for k, r in finished.items() if k in wanted]
    limit = None if max_cost is None else _cost_limit(finished, wanted, max_cost)
    summary = write_summary(results, out_dir, group_by=group_by, command=command, cost_limit=limit)
    return SweepOutcome(out_dir=str(out_dir.resolve()), total=len(jobs), skipped=len(jobs) - len(todo), ran=ran,
                        interrupted=interrupted, summary=summary)


def _cost_limit(finished: dict[tuple, SweepResult], wanted: set, max_cost: float) -> SweepCostLimit:
    """What the sweep's finished runs cost (an endpoint failure's run, run again, counts once: its
    latest line), and how many of its runs have no result."""
    results = [r for k, r in finished.items() if k in wanted]
    known = [r.cost for r in results if r.cost is not None]
    unknown = sum(1 for r in results if r.cost is None and r.model and r.tokens is None)
    return SweepCostLimit(max_cost=max_cost, spent=round(sum(known), 6), unknown_cost_runs=unknown,
                          not_started=len(wanted) - len(results))


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def write_summary(results: list[SweepResult], out_dir: Path, *, group_by: str = "all",
                  command: str | None = None, cost_limit: SweepCostLimit | None = None) -> SweepSummary:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    results = sorted(results, key=lambda r: r.key)
    summary = summarize(results, group_by=group_by)
    summary.command, summary.cost_limit = command, cost_limit
    atomic_write(out_dir / SUMMARY_JSON, redact(summary.to_json()))  # read back with SweepSummary.read
    atomic_write(out_dir / SUMMARY_MD, redact(render_markdown(summary, command)))
    # summary.html: the same figures, the success-against-budget chart, each run's report linked.
    from .html import render_sweep_html

    render_sweep_html(summary, out_dir)
    return summary
