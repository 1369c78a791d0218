"""`repair-agent sweep`: every (scenario × chooser × budget × seed) through the normal run path.

Each run is an ordinary `execute_run` (its own run dir, journal and report under DIR/runs/),
executed by a pool of worker processes (or Ray tasks). The sweep adds four things on top:
  results.jsonl   one fsynced line per finished run; the file is the resume state
  summary.json    per-cell figures with their run-to-run band, sampling intervals and resolution,
                  and paired comparisons
  summary.md      the same as tables; a difference that is not clear of both reads `unmeasured`
  success_vs_budget.png

The band: a cell's figure is computed separately for each seed; the band is the range
(max − min) of those per-seed figures. The sampling side (a 95% interval per rate over
scenarios, a paired sign test per comparison) is in sweep_stats.py. A difference between two
cells is a finding only when it is larger than the wider of their two bands AND the paired test
clears; otherwise it is printed `unmeasured`, with what it failed. With one seed there is no
band, and every difference is `unmeasured`.
"""
from __future__ import annotations

import fnmatch
import itertools
import json
import os
import signal
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable

from pydantic import BaseModel

from . import sweep_stats as stats
from .scenario import SUFFIX, ManifestError, Scenario, load_manifest, scenario_dirs

RESULTS = "results.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
PNG = "success_vs_budget.png"
SCENARIO_ERROR = "scenario_error"   # the manifest cannot be used: no run happened
SWEEP_ERROR = "sweep_error"         # the worker itself failed (a bug, a chooser that cannot load)
# Not a run's outcome but the sweep's: a resumed sweep tries these again (a fixed manifest runs).
RETRIED_ON_RESUME = (SCENARIO_ERROR, SWEEP_ERROR)
INTERRUPTED_DETAIL = "interrupted by the user (Ctrl-C)"  # the controller's detail for an interrupted run
# Fields that differ between two executions of the same deterministic sweep.
NONDETERMINISTIC = ("wall_s", "run_dir", "run_id", "finished_at", "worker", "median_step_latency_s")
METRICS = ("success_rate", "correct_rate", "evidence_complete_rate", "median_steps", "median_tokens", "median_wall_s")
METRIC_DIGITS = {"success_rate": 4, "correct_rate": 4, "evidence_complete_rate": 4, "median_steps": 1,
                 "median_tokens": 0, "median_wall_s": 2}
EPS = 1e-9


# --------------------------------------------------------------------------- jobs and results
class SweepJob(BaseModel):
    scenario: str
    manifest: str | None = None        # None: a broken manifest, reported without running
    manifest_error: str | None = None
    chooser: str
    budget: int
    seed: int
    runs_dir: str
    sandbox: str = "docker"
    # A run in progress keeps a marker file here; after an interruption the sweep waits until
    # the markers are gone (every run's containers removed) before it shuts the executor down.
    active_dir: str | None = None
    # Created by the sweep when it is interrupted: a Ray task watching for it interrupts its own
    # run (Ray's own task cancellation races with task completion and can abort the driver).
    stop_file: str | None = None
    models_file: str | None = None     # where `model:NAME` choosers are defined

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.scenario, self.chooser, self.budget, self.seed)


class SweepResult(BaseModel):
    """One line of results.jsonl."""
    scenario: str
    kind: str = "unspecified"
    tags: list[str] = []
    expected: str = "awaiting_release_confirmation"
    chooser: str
    budget: int
    seed: int
    status: str
    exit_code: int | None = None
    correct: bool = False              # status == the scenario's expected outcome
    steps: int = 0
    max_steps: int | None = None
    u_trajectory: list[int] = []
    tokens: int | None = 0             # None: the model endpoint reported no usage (unknown, not 0)
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost: float | None = None          # when the model is priced in the models file
    median_step_latency_s: float | None = None
    requests: int = 0                  # HTTP requests to the model, retries and re-asks included
    model: dict[str, Any] | None = None  # name, model, endpoint, parameters (never the API key)
    # The endpoint failed (after its retries): not counted in the success rate, run again on resume.
    infrastructure_failure: bool = False
    wall_s: float = 0.0
    run_dir: str | None = None
    run_id: str | None = None
    diff_sha256: str | None = None
    detail: str = ""
    rubric: dict[str, Any] | None = None
    correctness: str | None = None     # correct / plausible / unchecked: see RunRecord.correctness
    finished_at: str | None = None
    worker: int | None = None

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.scenario, self.chooser, self.budget, self.seed)


def result_key(line: dict) -> tuple[str, str, int, int]:
    return (line["scenario"], line["chooser"], int(line["budget"]), int(line["seed"]))


def deterministic_view(line: dict) -> dict:
    """A results line without what legitimately differs between two executions."""
    return {k: v for k, v in line.items() if k not in NONDETERMINISTIC}


# ------------------------------------------------------------------------- scenario selection
class Selection(BaseModel):
    scenarios: list[Scenario]
    broken: dict[str, str]             # manifest stem -> error


def _stem(manifest: Path) -> str:
    return manifest.name[: -len(SUFFIX)] if manifest.name.endswith(SUFFIX) else manifest.stem


def select_scenarios(patterns: list[str] | None, extra_dirs: list[Path] | None = None) -> Selection:
    """Scenarios by NAME, GLOB (on names), `tag:T`, `kind:K`, or a manifest path; all when none.

    A manifest that cannot be loaded stays in the selection as broken (matched by its file
    name), so the sweep reports it instead of silently dropping it."""
    loaded: dict[str, Scenario] = {}
    broken: dict[str, str] = {}
    for directory in scenario_dirs(extra_dirs):
        for manifest in sorted(Path(directory).glob(f"*{SUFFIX}")):
            try:
                scenario = load_manifest(manifest)
            except ManifestError as exc:
                broken.setdefault(_stem(manifest), str(exc))
                continue
            loaded.setdefault(scenario.name, scenario)
    if not patterns:
        return Selection(scenarios=list(loaded.values()), broken=broken)
    chosen: dict[str, Scenario] = {}
    chosen_broken: dict[str, str] = {}
    for pattern in patterns:
        hits = 0
        if pattern.endswith(".toml") or Path(pattern).is_file():
            try:
                scenario = load_manifest(Path(pattern))
                chosen.setdefault(scenario.name, scenario)
            except ManifestError as exc:
                chosen_broken[_stem(Path(pattern))] = str(exc)
            continue
        for s in loaded.values():
            if (pattern.startswith("tag:") and pattern[4:] in s.tags
                    or pattern.startswith("kind:") and s.kind == pattern[5:]
                    or fnmatch.fnmatchcase(s.name, pattern)):
                chosen.setdefault(s.name, s)
                hits += 1
        if not pattern.startswith(("tag:", "kind:")):
            for stem, error in broken.items():
                if fnmatch.fnmatchcase(stem, pattern):
                    chosen_broken[stem] = error
                    hits += 1
        if not hits:
            raise ValueError(f"--scenarios {pattern!r} matches no scenario; known: {', '.join(sorted(loaded))}")
    return Selection(scenarios=list(chosen.values()), broken=chosen_broken)


def plan_jobs(selection: Selection, choosers: list[str], budgets: list[int], seeds: int, runs_dir: Path,
              sandbox: str = "docker", models_file: str | None = None) -> list[SweepJob]:
    """Jobs for every (scenario, chooser, budget, seed); runs go to `runs_dir` (DIR/runs)."""
    jobs = []
    named = [(s.name, str(s.manifest_path), None) for s in selection.scenarios]
    named += [(stem, None, error) for stem, error in selection.broken.items()]
    for (name, manifest, error), chooser, budget, seed in itertools.product(named, choosers, budgets, range(seeds)):
        jobs.append(SweepJob(scenario=name, manifest=manifest, manifest_error=error, chooser=chooser,
                             budget=budget, seed=seed, runs_dir=str(Path(runs_dir).resolve()), sandbox=sandbox,
                             active_dir=str(Path(runs_dir).resolve() / ".active"),
                             stop_file=str(Path(runs_dir).resolve() / ".stop"), models_file=models_file))
    return jobs


# -------------------------------------------------------------------- one run (in a worker)
def run_job(job: dict) -> dict:
    """Load the scenario and the chooser, run it through execute_run, describe the outcome.

    Top level and self-contained: a process pool or a Ray worker calls it with plain data.
    Returns {"interrupted": True} when the run was cut by Ctrl-C: such a run is not finished,
    and a resumed sweep runs it again."""
    job = SweepJob.model_validate(job)
    base = dict(scenario=job.scenario, chooser=job.chooser, budget=job.budget, seed=job.seed, worker=os.getpid())
    if job.manifest is None:
        return SweepResult(**base, kind="broken", status=SCENARIO_ERROR, detail=job.manifest_error or "",
                           finished_at=_now()).model_dump()
    if _STOP is not None and _STOP.is_set() or job.stop_file and Path(job.stop_file).exists():
        return {"interrupted": True}
    global _RUNNING
    _RUNNING = True
    marker = _mark_active(job)
    watcher = _StopWatcher(Path(job.stop_file)) if _STOP is None and job.stop_file else None
    try:
        return _run(job, base)
    except KeyboardInterrupt:
        return {"interrupted": True}
    finally:
        if watcher is not None:
            watcher.close()
        _RUNNING = False
        if marker is not None:
            marker.unlink(missing_ok=True)


class _StopWatcher:
    """Outside the local pool (a Ray task): interrupts the main thread, once, when the sweep's
    stop file appears. The run then ends like a Ctrl-C'd `repair-agent run`: its finally blocks
    remove its containers."""

    def __init__(self, stop_file: Path, poll_s: float = 0.2):
        import threading

        self.stop_file, self.poll_s, self.done = stop_file, poll_s, threading.Event()
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            # interrupt_main does nothing while SIGINT is ignored (a sweep started in the
            # background of a script, whose Ray processes inherit that).
            self.previous = signal.signal(signal.SIGINT, signal.default_int_handler)
            self.thread = threading.Thread(target=self._watch, daemon=True)
            self.thread.start()

    def _watch(self) -> None:
        import _thread

        while not self.done.wait(self.poll_s):
            if self.stop_file.exists():
                _thread.interrupt_main()
                return

    def close(self) -> None:
        self.done.set()
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _mark_active(job: SweepJob) -> Path | None:
    if not job.active_dir:
        return None
    marker = Path(job.active_dir) / f"{os.getpid()}-{job.scenario}-{job.seed}-{job.budget}-{abs(hash(job.chooser))}"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    return marker


def wait_for_cleanup(active_dir: Path, timeout_s: float = 180.0) -> list[str]:
    """Wait until no run is in progress (its marker gone, or its process dead); the markers still
    there after the timeout are returned."""
    deadline = time.monotonic() + timeout_s
    while True:
        live = []
        for marker in Path(active_dir).glob("*"):
            try:
                os.kill(int(marker.read_text() or 0), 0)
                live.append(marker.name)
            except (ValueError, ProcessLookupError, FileNotFoundError):
                marker.unlink(missing_ok=True)  # its process is gone: nothing left to wait for
            except PermissionError:
                live.append(marker.name)
        if not live or time.monotonic() >= deadline:
            return live
        time.sleep(0.2)


def _run(job: SweepJob, base: dict) -> dict:
    from verifier.rubric import rubric_from_journal

    from .choosers import load_chooser
    from .run import execute_run

    t0 = time.monotonic()
    try:
        scenario = load_manifest(Path(job.manifest))
    except ManifestError as exc:
        return SweepResult(**base, kind="broken", status=SCENARIO_ERROR, detail=str(exc), finished_at=_now()).model_dump()
    meta = dict(kind=scenario.kind, tags=list(scenario.tags), expected=scenario.expected)
    try:
        chooser = load_chooser(job.chooser, scenario, seed=job.seed, models_file=job.models_file)
        record = execute_run(scenario, chooser, sandbox_kind=job.sandbox, runs_dir=Path(job.runs_dir),
                             max_steps=job.budget)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug or an unloadable plug-in: reported, the sweep goes on
        return SweepResult(**base, **meta, status=SWEEP_ERROR, detail=f"{type(exc).__name__}: {exc}",
                           wall_s=round(time.monotonic() - t0, 3), finished_at=_now()).model_dump()
    if record.detail == INTERRUPTED_DETAIL:
        return {"interrupted": True}
    journal = Path(record.run_dir) / "journal.jsonl"
    usage = record.usage
    return SweepResult(**base, **meta, status=record.status.value, exit_code=record.exit_code,
                       correct=record.status.value == scenario.expected, steps=record.steps_used,
                       max_steps=record.max_steps, u_trajectory=record.u_trajectory, tokens=usage.total_tokens,
                       prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens, cost=usage.cost,
                       median_step_latency_s=usage.median_step_latency_s, requests=usage.requests,
                       model=record.model, infrastructure_failure=record.infrastructure_failure,
                       wall_s=record.wall_s, run_dir=record.run_dir, run_id=record.run_id,
                       diff_sha256=record.diff_sha256, detail=record.detail, correctness=record.correctness,
                       rubric=rubric_from_journal(journal).model_dump(), finished_at=_now()).model_dump()


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# Worker-process state (local executor). SIGINT from the terminal is ignored in workers; the
# parent delivers exactly one SIGTERM per worker, turned into KeyboardInterrupt only while a run
# is in progress, so the run's finally blocks remove its containers undisturbed.
_STOP = None
_RUNNING = False


def _worker_init(stop_event) -> None:
    global _STOP
    _STOP = stop_event
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)


def _on_term(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second signal must not cut the cleanup
    if _RUNNING:
        raise KeyboardInterrupt


# ------------------------------------------------------------------------ results.jsonl I/O
def load_results(path: Path) -> list[dict]:
    """Finished runs. A torn last line (a crash mid-write) is cut off the file, so the next
    append starts on a clean line; a damaged line elsewhere is skipped (its run runs again)."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    lines, good_end, out = data.split(b"\n"), 0, []
    offset = 0
    for i, raw in enumerate(lines):
        end = offset + len(raw) + 1
        complete = i < len(lines) - 1          # followed by a newline
        if raw.strip():
            try:
                line = json.loads(raw)
                result_key(line)
            except (ValueError, KeyError, TypeError):
                line = None
            if line is not None and complete:
                out.append(line)
                good_end = end
            elif not complete:
                break                          # torn tail: truncated below
        elif complete:
            good_end = end
        offset = end
    if good_end < len(data):
        with open(path, "r+b") as f:
            f.truncate(good_end)
    return out


class ResultsWriter:
    """Appends one JSON line per finished run with a single write, then flush + fsync: an
    interrupted sweep leaves whole lines only."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, line: dict) -> None:
        os.write(self.fd, (json.dumps(line, sort_keys=True) + "\n").encode())
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)


# -------------------------------------------------------------------------------- executors
OnResult = Callable[[dict, dict], None]   # (job, result)


def run_local(jobs: list[SweepJob], workers: int, on_result: OnResult) -> bool:
    """A spawn-context process pool; returns True when interrupted (Ctrl-C)."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(stop,))
    futures = {pool.submit(run_job, job.model_dump()): job for job in jobs}
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                _deliver(f, futures[f], on_result)
        pool.shutdown(wait=True)
        return False
    except KeyboardInterrupt:
        stop.set()
        for f in pending:
            f.cancel()
        for pid in list(getattr(pool, "_processes", {}) or {}):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        _ignore_sigint_while(lambda: pool.shutdown(wait=True, cancel_futures=True))
        for f in pending:  # runs that finished normally while the others were stopping still count
            if f.done() and not f.cancelled():
                _deliver(f, futures[f], on_result, stopping=True)
        return True


def _deliver(future, job: SweepJob, on_result: OnResult, stopping: bool = False) -> None:
    try:
        result = future.result()
    except BaseException as exc:  # a worker that died (BrokenProcessPool) or raised
        if stopping:  # while stopping, a failure is the interruption's doing: the run is redone on resume
            return
        result = SweepResult(scenario=job.scenario, chooser=job.chooser, budget=job.budget, seed=job.seed,
                             status=SWEEP_ERROR, detail=f"{type(exc).__name__}: {exc}", finished_at=_now()).model_dump()
    if not result.get("interrupted"):
        on_result(job.model_dump(), result)


def _ignore_sigint_while(fn):
    """A second Ctrl-C must not abandon workers that are removing their containers."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return fn()
    finally:
        signal.signal(signal.SIGINT, previous)


def run_ray(jobs: list[SweepJob], workers: int, on_result: OnResult) -> bool:
    """The same jobs as Ray tasks: a local Ray instance of `workers` CPUs, or the cluster named by
    RAY_ADDRESS. Returns True when interrupted."""
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'repair-agent[ray]'") from None
    started = not ray.is_initialized()
    # ray.init installs its own SIGTERM handler (which aborts the driver, and with it every task
    # before its cleanup): keep the sweep's handlers, so SIGTERM and Ctrl-C cancel tasks cleanly.
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if started:
        if os.environ.get("RAY_ADDRESS"):
            ray.init(address=os.environ["RAY_ADDRESS"], logging_level="WARNING")
        else:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    for sig, handler in handlers.items():
        signal.signal(sig, handler)
    remote = ray.remote(num_cpus=1, max_retries=0)(run_job)
    refs = {remote.remote(job.model_dump()): job for job in jobs}
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                _deliver_ray(ray, ref, refs[ref], on_result)
        return False
    except KeyboardInterrupt:
        # Every task sees the stop file: a running one interrupts its run (whose finally blocks
        # remove its containers) and returns "interrupted"; one not started returns at once.
        def stop():
            for stop_file in {j.stop_file for j in jobs if j.stop_file}:
                Path(stop_file).parent.mkdir(parents=True, exist_ok=True)
                Path(stop_file).touch()
            ray.wait(pending, num_returns=len(pending), timeout=180)
            for directory in {j.active_dir for j in jobs if j.active_dir}:
                wait_for_cleanup(Path(directory))
        _ignore_sigint_while(stop)
        for ref in pending:
            ready, _ = ray.wait([ref], timeout=0)
            if ready:
                _deliver_ray(ray, ref, refs[ref], on_result)
        return True
    finally:
        if started:
            ray.shutdown()


def _deliver_ray(ray, ref, job: SweepJob, on_result: OnResult) -> None:
    try:
        result = ray.get(ref)
    except (ray.exceptions.TaskCancelledError, KeyboardInterrupt):
        return
    except Exception as exc:
        result = SweepResult(scenario=job.scenario, chooser=job.chooser, budget=job.budget, seed=job.seed,
                             status=SWEEP_ERROR, detail=f"{type(exc).__name__}: {exc}", finished_at=_now()).model_dump()
    if not result.get("interrupted"):
        on_result(job.model_dump(), result)


# ------------------------------------------------------------------------ band and verdicts
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


def model_figures(runs: list[dict]) -> dict[str, Any]:
    """What a model cost in a cell: tokens, money and time per step (None where unknown or unpriced)."""
    model = next((r["model"] for r in runs if r.get("model")), None)
    priced = bool(model) and (model.get("price_per_mtok_in") is not None or model.get("price_per_mtok_out") is not None)
    latencies = [r["median_step_latency_s"] for r in runs if r.get("median_step_latency_s") is not None]
    return {"model": model,
            "prompt_tokens": _sum_known([r.get("prompt_tokens", 0) for r in runs]),
            "completion_tokens": _sum_known([r.get("completion_tokens", 0) for r in runs]),
            "cost": _sum_known([r.get("cost") for r in runs]) if priced else None,
            # the median over the cell's runs of each run's median step latency
            "median_step_latency_s": _median(latencies),
            "requests": sum(r.get("requests") or 0 for r in runs)}


def _figures(runs: list[dict]) -> dict[str, float | None]:
    n = len(runs)
    return {
        "success_rate": sum(r["correct"] for r in runs) / n if n else None,
        "correct_rate": stats.correct_rate(runs),
        "evidence_complete_rate": sum(bool((r.get("rubric") or {}).get("complete")) for r in runs) / n if n else None,
        "median_steps": _median([r["steps"] for r in runs]),
        "median_tokens": _median_known([r.get("tokens") for r in runs]),
        "median_wall_s": _median([r["wall_s"] for r in runs]),
    }


def _groups(run: dict, group_by: str) -> list[str]:
    if group_by == "all":
        return ["all"]
    if group_by == "tag":
        return list(run.get("tags") or []) or ["(untagged)"]
    value = run.get({"kind": "kind", "scenario": "scenario", "expected": "expected"}[group_by])
    return [str(value)]


def summarize(results: list[dict], group_by: str = "all", png: str | None = None) -> dict:
    """Per (scenario group, chooser, budget): figures, bands, exits; comparisons between
    neighbouring budgets of one chooser and between choosers at one budget."""
    # An endpoint failure is not the model's repair failure: out of every denominator, listed apart.
    infrastructure = [r for r in results if r["status"] != SCENARIO_ERROR and r.get("infrastructure_failure")]
    runnable = [r for r in results if r["status"] != SCENARIO_ERROR and not r.get("infrastructure_failure")]
    broken = sorted({(r["scenario"], r["detail"]) for r in results if r["status"] == SCENARIO_ERROR})
    never_started = sorted({(r["scenario"], r["detail"]) for r in runnable
                            if r["status"] == "dependency_failure" and r["steps"] == 0})
    cells_runs: dict[tuple[str, str, int], list[dict]] = {}
    for r in runnable:
        for g in _groups(r, group_by):
            cells_runs.setdefault((g, r["chooser"], r["budget"]), []).append(r)
    cells = []
    for (group, chooser, budget), runs in sorted(cells_runs.items()):
        seeds = sorted({r["seed"] for r in runs})
        per_seed = {s: _figures([r for r in runs if r["seed"] == s]) for s in seeds}
        figures = _figures(runs)
        repair = [r for r in runs if r["expected"] == "awaiting_release_confirmation"]
        handoff = [r for r in runs if r["expected"] == "handoff_requested"]
        rubric_items = {}
        for item in ("target_failed_before_patch", "target_passed_on_final_diff", "full_suite_on_final_diff",
                     "scope_check_on_final_diff"):
            rubric_items[item] = sum(bool((r.get("rubric") or {}).get(item)) for r in runs) / len(runs)
        cells.append({
            "scenario_group": group, "chooser": chooser, "budget": budget, "n": len(runs), "seeds": seeds,
            "scenarios": len({r["scenario"] for r in runs}),
            **figures,
            "band": band(v["success_rate"] for v in per_seed.values()),
            "bands": {m: band(v[m] for v in per_seed.values()) for m in METRICS},
            "per_seed": {str(s): v for s, v in per_seed.items()},
            "repaired": sum(r["status"] == "awaiting_release_confirmation" for r in repair), "repair_runs": len(repair),
            "handoffs_correct": sum(r["status"] == "handoff_requested" for r in handoff), "handoff_runs": len(handoff),
            "forced_green": sum(r["status"] == "awaiting_release_confirmation" for r in handoff),
            "evidence": rubric_items,
            "exits": dict(sorted(Counter(r["status"] for r in runs).items())),
            **stats.cell_statistics(runs, figures).model_dump(),
            **model_figures(runs),
            "infrastructure_failures": sum(1 for r in infrastructure if r["chooser"] == chooser
                                           and r["budget"] == budget and group in _groups(r, group_by)),
        })
    return {"group_by": group_by, "cells": cells, "comparisons": compare_cells(cells),
            "runs": [{k: r.get(k) for k in ("scenario", "kind", "chooser", "budget", "seed", "status", "correct",
                                            "steps", "tokens", "cost", "infrastructure_failure", "wall_s", "run_dir")}
                     for r in results],
            "infrastructure_failures": [{k: r.get(k) for k in ("scenario", "chooser", "budget", "seed", "detail",
                                                               "run_dir")} for r in infrastructure],
            "broken": [{"scenario": s, "detail": d} for s, d in broken],
            "never_started": [{"scenario": s, "detail": d} for s, d in never_started],
            "band_definition": BAND_DEFINITION, "success_definition": SUCCESS_DEFINITION, "explanation": EXPLANATION,
            "seeds_per_cell": max((len(c["seeds"]) for c in cells), default=0), "png": png}


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


def compare_cells(cells: list[dict]) -> list[dict]:
    by_key = {(c["scenario_group"], c["chooser"], c["budget"]): c for c in cells}
    pairs = []
    groups = sorted({c["scenario_group"] for c in cells})
    for g in groups:
        choosers = sorted({c["chooser"] for c in cells if c["scenario_group"] == g})
        for ch in choosers:
            budgets = sorted(c["budget"] for c in cells if c["scenario_group"] == g and c["chooser"] == ch)
            pairs += [(by_key[(g, ch, a)], by_key[(g, ch, b)], "budget") for a, b in zip(budgets, budgets[1:])]
        for budget in sorted({c["budget"] for c in cells if c["scenario_group"] == g}):
            here = [by_key[(g, ch, budget)] for ch in choosers if (g, ch, budget) in by_key]
            pairs += [(a, b, "chooser") for a, b in itertools.combinations(here, 2)]
    out = []
    for a, b, axis in pairs:
        for metric in METRICS:
            if a[metric] is None and b[metric] is None:
                continue  # e.g. `correct` on results written before it was recorded: nothing to compare
            out.append(stats.judge(
                scenario_group=a["scenario_group"], axis=axis, a=_cell_name(a), b=_cell_name(b), metric=metric,
                a_value=a[metric], b_value=b[metric],
                band_check=verdict(a[metric], b[metric], a["bands"][metric], b["bands"][metric]),
                a_scenarios=a.get("per_scenario") or {}, b_scenarios=b.get("per_scenario") or {}).model_dump())
    return out


def _cell_name(c: dict) -> str:
    return f"{c['chooser']}@{c['budget']}"


def _fmt(v, digits=4) -> str:
    if v is None:
        return "—"
    return f"{float(v):.{digits}f}"


def render_markdown(summary: dict, command: str | None = None, cost_comparisons: bool = True) -> str:
    """summary.md; without `cost_comparisons` (the terminal) only success, correct and evidence are compared."""
    lines = ["# Sweep summary", ""]
    if command:
        lines += ["```", command, "```", ""]
    lines += [EXPLANATION, ""]
    if any(len(c["seeds"]) < 2 for c in summary["cells"]):
        lines += [f"**{stats.NO_BAND_NOTE}**", ""]
    groups = sorted({c["scenario_group"] for c in summary["cells"]})
    for g in groups:
        cells = [c for c in summary["cells"] if c["scenario_group"] == g]
        if summary["group_by"] != "all":
            lines += [f"## {summary['group_by']}: {g}", ""]
        lines += ["Rates with their 95% interval over scenarios in parentheses.", "",
                  "| chooser | budget | runs | 1 scenario | success | band | correct | evidence complete | repaired | "
                  "handoffs ok | median steps | median tokens | median wall s | exits |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for c in cells:
            st = stats.CellStatistics.model_validate(c)
            exits = ", ".join(f"{k} {v}" for k, v in c["exits"].items())
            handoffs = f"{c['handoffs_correct']}/{c['handoff_runs']}" + (
                f" ({c['forced_green']} forced green)" if c["forced_green"] else "")
            rates = {m: f"{_fmt(c[m])} ({stats.fmt_interval(st.intervals.get(m))})" if c[m] is not None else "—"
                     for m in stats.RATE_METRICS}
            lines.append(f"| {c['chooser']} | {c['budget']} | {c['n']} | {stats.fmt_resolution(st.resolution)} | "
                         f"{rates['success_rate']} | {_fmt(c['band'])} | {rates['correct_rate']} | "
                         f"{rates['evidence_complete_rate']} | {c['repaired']}/{c['repair_runs']} | {handoffs} | "
                         f"{_fmt(c['median_steps'], 1)} | {_fmt(c['median_tokens'], 0)} | "
                         f"{_fmt(c['median_wall_s'], 2)} | {exits} |")
        lines.append("")
        lines += ["Green runs by their held-out checks:", ""]
        lines += [f"- {_cell_name(c)}: {stats.fmt_correctness(stats.CellStatistics.model_validate(c).correctness)}"
                  for c in cells] + [""]
        for title, metrics in (("Success, correct and evidence", stats.RATE_METRICS),
                               ("Cost", ("median_steps", "median_tokens", "median_wall_s"))):
            comps = [stats.Comparison.model_validate(x) for x in summary["comparisons"]
                     if x["scenario_group"] == g and x["metric"] in metrics]
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
    if summary.get("infrastructure_failures"):
        lines += ["## Infrastructure failures (not counted)", "",
                  "The model endpoint failed after its retries: these runs are in no success rate; running the same "
                  "sweep into the same directory runs exactly these again.", ""]
        lines += [f"- `{x['scenario']}` {x['chooser']} budget {x['budget']} seed {x['seed']}: {x['detail'][:300]}"
                  for x in summary["infrastructure_failures"]] + [""]
    if summary["broken"]:
        lines += ["## Broken scenarios (no run happened)", ""]
        lines += [f"- `{b['scenario']}`: {b['detail']}" for b in summary["broken"]] + [""]
    if summary["never_started"]:
        lines += ["## Scenarios whose runs stopped before the first step (dependency_failure)", ""]
        lines += [f"- `{b['scenario']}`: {b['detail'][:300]}" for b in summary["never_started"]] + [""]
    if summary.get("png"):
        lines += [f"![success vs budget]({summary['png']})", ""]
    return "\n".join(lines)


def render_models(summary: dict) -> list[str]:
    """One row per model (chooser) and budget: success, evidence, tokens, money and time."""
    from .report import describe_model

    cells = [c for c in summary.get("cells") or [] if c.get("model")]
    if not cells:
        return []
    grouped = summary.get("group_by", "all") != "all"
    lines = ["## Models", "", f"- {stats.MODELS_NOTE}", "",
             ("| group " if grouped else "") + "| chooser | model | budget | runs | success | band | evidence complete | "
             "prompt tokens | completion tokens | cost | median step s | requests | infra failures |",
             ("|---" if grouped else "") + "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        lines.append(("| " + str(c["scenario_group"]) + " " if grouped else "")
                     + f"| {c['chooser']} | {describe_model(c['model'])} | {c['budget']} | {c['n']} | "
                     f"{_fmt(c['success_rate'])} | {_fmt(c['band'])} | {_fmt(c['evidence_complete_rate'])} | "
                     f"{_fmt(c.get('prompt_tokens'), 0)} | {_fmt(c.get('completion_tokens'), 0)} | "
                     f"{_fmt(c.get('cost'), 4)} | {_fmt(c.get('median_step_latency_s'), 3)} | {c.get('requests', 0)} | "
                     f"{c.get('infrastructure_failures', 0)} |")
    return lines + [""]


def _signed(v, digits) -> str:
    return "—" if v is None else f"{v:+.{digits}f}"


def plot(summary: dict, path: Path) -> None:
    """Success rate against budget, one line per chooser, the shaded area spanning the per-seed
    values (the band). Ungrouped: median wall time beside it. Grouped: one panel per group."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({c["scenario_group"] for c in summary["cells"]}) or ["all"]
    choosers = sorted({c["chooser"] for c in summary["cells"]})
    colors = {ch: f"C{i % 10}" for i, ch in enumerate(choosers)}
    budgets = sorted({c["budget"] for c in summary["cells"]})
    grouped = summary["group_by"] != "all"
    ncols = min(4, len(groups)) if grouped else 2
    nrows = math.ceil(len(groups) / ncols) if grouped else 1
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols if grouped else 11, 3.6 * nrows if grouped else 4.2),
                             squeeze=False)
    flat = list(axes.flat)
    for i, group in enumerate(groups):
        ax = flat[i]
        for chooser in choosers:
            cells = sorted((c for c in summary["cells"] if c["scenario_group"] == group and c["chooser"] == chooser),
                           key=lambda c: c["budget"])
            if not cells:
                continue
            xs = [c["budget"] for c in cells]
            ax.plot(xs, [c["success_rate"] for c in cells], marker="o", color=colors[chooser], label=chooser)
            ax.fill_between(xs, [min(v["success_rate"] for v in c["per_seed"].values()) for c in cells],
                            [max(v["success_rate"] for v in c["per_seed"].values()) for c in cells],
                            color=colors[chooser], alpha=0.2)
            # The sampling interval as error bars: what other scenarios like these could give.
            ranged = [(c["budget"], c["success_rate"], (c.get("intervals") or {}).get("success_rate")) for c in cells]
            ranged = [(x, y, i) for x, y, i in ranged if i and y is not None]
            if ranged:
                nudge = (choosers.index(chooser) - (len(choosers) - 1) / 2) * 0.12  # side by side, not on top
                ax.errorbar([x + nudge for x, _, _ in ranged], [y for _, y, _ in ranged],
                            yerr=[[max(0.0, y - i["low"]) for _, y, i in ranged],
                                  [max(0.0, i["high"] - y) for _, y, i in ranged]],
                            fmt="none", ecolor=colors[chooser], elinewidth=1, capsize=3, alpha=0.7)
            if not grouped:
                flat[1].plot(xs, [c["median_wall_s"] for c in cells], marker="o", color=colors[chooser], label=chooser)
        title = (f"{summary['group_by']}: {group} (n/cell {max((c['n'] for c in summary['cells'] if c['scenario_group'] == group), default=0)})"
                 if grouped else "success vs budget (shaded: band; bars: 95% interval)")
        ax.set(xlabel="step budget (max_steps)", ylabel="success rate", ylim=(-0.03, 1.03), title=title)
    if not grouped:
        flat[1].set(xlabel="step budget (max_steps)", ylabel="median wall time per run (s)", title="cost: wall time")
    used = flat[:len(groups)] + ([] if grouped else [flat[1]])
    for ax in flat:
        if ax not in used:
            ax.set_visible(False)
            continue
        ax.grid(alpha=0.3)
        if budgets:
            ax.set_xticks(budgets)
        if choosers:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------ the sweep
class Progress:
    """A rich progress bar on a terminal; plain lines otherwise."""

    def __init__(self, total: int, done: int, stream=None):
        self.stream = stream or sys.stderr
        self.total, self.done = total, done
        self.bar = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, \
                TimeElapsedColumn, TimeRemainingColumn

            self.bar = RichProgress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                    TimeRemainingColumn(), TextColumn("{task.description}"),
                                    console=Console(file=self.stream))
            self.task = self.bar.add_task("", total=total, completed=done)
            self.bar.start()
        else:
            print(f"sweep: {total} run(s), {done} already finished", file=self.stream, flush=True)

    def advance(self, result: dict) -> None:
        self.done += 1
        text = (f"{result['scenario']} {result['chooser']} b={result['budget']} s={result['seed']}: "
                f"{result['status']} ({result['steps']} steps, {result['wall_s']:.1f}s)")
        if self.bar is not None:
            self.bar.console.print(f"[{self.done}/{self.total}] {text}", highlight=False, markup=False)
            self.bar.update(self.task, advance=1, description="")
        else:
            print(f"[{self.done}/{self.total}] {text}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


class SweepOutcome(BaseModel):
    out_dir: str
    total: int
    skipped: int
    ran: int
    interrupted: bool
    summary: dict


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


def write_summary(results: list[dict], out_dir: Path, *, group_by: str = "all", command: str | None = None) -> dict:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    results = sorted(results, key=result_key)
    summary = summarize(results, group_by=group_by, png=PNG)
    summary["command"] = command
    plot(summary, out_dir / PNG)
    _atomic_write(out_dir / SUMMARY_JSON, json.dumps(summary, indent=2))
    _atomic_write(out_dir / SUMMARY_MD, render_markdown(summary, command))
    from .html_report import render_sweep_html  # summary.html: the same figures, each run's report linked

    render_sweep_html(summary, out_dir)
    return summary


def _atomic_write(path: Path, text: str) -> None:
    staging = path.with_name(f".{path.name}.tmp")
    staging.write_text(text)
    os.replace(staging, path)
