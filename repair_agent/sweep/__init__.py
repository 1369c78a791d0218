"""`repair-agent sweep`: every (scenario × chooser × budget × seed) through the normal run path.

Each run is an ordinary `execute_run` (its own run dir, journal and report under DIR/runs/),
executed by a pool of worker processes (or Ray tasks). The sweep adds four things on top:
  results.jsonl   one fsynced line per finished run; the file is the resume state
  summary.json    per-cell figures with their run-to-run band, sampling intervals and resolution,
                  and paired comparisons
  summary.md      the same as tables; a difference that is not clear of both reads `unmeasured`


The band: a cell's figure is computed separately for each seed; the band is the range
(max − min) of those per-seed figures. The sampling side (a 95% interval per rate over
scenarios, a paired sign test per comparison) is in statistics.py. A difference between two
cells is a finding only when it is larger than the wider of their two bands AND the paired test
clears; otherwise it is printed `unmeasured`, with what it failed. With one seed there is no
band, and every difference is `unmeasured`.

The parts, one file each: jobs.py (jobs, results.jsonl, scenario selection), worker.py (one run in
a worker, and its signals), executors.py (local pool, Ray), statistics.py (intervals, paired tests),
summary.py (cells, bands, comparisons), compare.py (two sweeps, cell by cell), records.py (summary.json's shape: the typed
summary every renderer takes), markdown.py (summary.md), html.py (summary.html, with the
success-against-budget chart), progress.py, orchestrate.py.
"""
from __future__ import annotations

from .executors import run_local, run_ray
from .jobs import (RESULTS, SCENARIO_ERROR, SUMMARY_JSON, SUMMARY_MD, SWEEP_ERROR, ResultsWriter, Selection,
                   SweepJob, SweepResult, load_results, plan_jobs, select_scenarios)
from .markdown import render_markdown
from .orchestrate import SweepOutcome, sweep, write_summary
from .records import Cell, SweepSummary
from .summary import band, compare_cells, summarize, verdict
from .worker import run_job

__all__ = ["Cell", "RESULTS", "SCENARIO_ERROR", "SUMMARY_JSON", "SUMMARY_MD", "SWEEP_ERROR", "ResultsWriter",
           "Selection", "SweepJob", "SweepOutcome", "SweepResult", "SweepSummary", "band", "compare_cells",
           "load_results", "plan_jobs", "render_markdown", "run_job", "run_local",
           "run_ray", "select_scenarios", "summarize", "sweep", "verdict", "write_summary"]
