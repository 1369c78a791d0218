"""A whole sweep: the jobs still to run (results.jsonl is the resume state), an executor, and the
summary written from the results (summary.json, summary.md, summary.html)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from pydantic import BaseModel

from verifier.files import atomic_write

from ..redaction import redact
from .executors import run_local, run_ray
from .jobs import RESULTS, RETRIED_ON_RESUME, SUMMARY_JSON, SUMMARY_MD, ResultsWriter, SweepJob, load_results, result_key
from .markdown import render_markdown
from .progress import Progress
from .records import SweepSummary
from .summary import summarize


class SweepOutcome(BaseModel):
    out_dir: str
    total: int
    skipped: int
    ran: int
    interrupted: bool
    summary: SweepSummary


def sweep(jobs: list[SweepJob], out_dir: Path, *, workers: int | None = None, executor: str = "local",
          group_by: str = "all", command: str | None = None, progress_stream=None) -> SweepOutcome:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / RESULTS
    for stop_file in {j.stop_file for j in jobs if j.stop_file}:  # left by an interrupted sweep
        Path(stop_file).unlink(missing_ok=True)
    # Later lines win: a retried key's new line supersedes its old one.
    finished = {result_key(r): r for r in load_results(results_path)}
    # Runs the endpoint failed are tried again too: their outcome says nothing about the model.
    todo = [j for j in jobs if j.key not in finished or finished[j.key]["status"] in RETRIED_ON_RESUME
            or finished[j.key].get("infrastructure_failure")]
    wanted = {j.key for j in jobs}
    workers = max(1, workers or os.cpu_count() or 1)
    progress = Progress(len(jobs), len(jobs) - len(todo), progress_stream)
    writer = ResultsWriter(results_path)
    ran = 0

    def on_result(job: dict, result: dict) -> None:
        nonlocal ran
        writer.append(result)
        finished[result_key(result)] = result
        ran += 1
        progress.advance(result)

    # `kill` (SIGTERM: a CI timeout, a service manager) stops a sweep like Ctrl-C does.
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if not todo:
            interrupted = False
        elif executor == "ray":
            interrupted = run_ray(todo, workers, on_result)
        else:
            interrupted = run_local(todo, workers, on_result)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        progress.close()
        writer.close()
    results = [r for k, r in finished.items() if k in wanted]
    summary = write_summary(results, out_dir, group_by=group_by, command=command)
    return SweepOutcome(out_dir=str(out_dir.resolve()), total=len(jobs), skipped=len(jobs) - len(todo), ran=ran,
                        interrupted=interrupted, summary=summary)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def write_summary(results: list[dict], out_dir: Path, *, group_by: str = "all",
                  command: str | None = None) -> SweepSummary:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    results = sorted(results, key=result_key)
    summary = summarize(results, group_by=group_by)
    summary.command = command
    atomic_write(out_dir / SUMMARY_JSON, redact(summary.to_json()))  # read back with SweepSummary.read
    atomic_write(out_dir / SUMMARY_MD, redact(render_markdown(summary, command)))
    # summary.html: the same figures, the success-against-budget chart, each run's report linked.
    from ..html_report import render_sweep_html

    render_sweep_html(summary, out_dir)
    return summary
