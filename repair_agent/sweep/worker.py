"""One sweep run inside a worker (a process of the local pool, or a Ray task), and the signals that
stop it: a stopped run still ends like a Ctrl-C'd `repair-agent run`, its containers removed."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ..scenarios.scenario import ManifestError, load_manifest
from .jobs import INTERRUPTED_DETAIL, SCENARIO_ERROR, SWEEP_ERROR, Interrupted, SweepJob, SweepResult


def run_job(job: SweepJob) -> SweepResult | Interrupted:
    """Load the scenario and the chooser, run it through execute_run, describe the outcome.

    Top level and self-contained: a process pool or a Ray worker calls it (the job and its result
    are pickled across). Interrupted when the run was cut by Ctrl-C: such a run is not finished,
    and a resumed sweep runs it again."""
    base = dict(scenario=job.scenario, chooser=job.chooser, budget=job.budget, seed=job.seed, worker=os.getpid())
    if job.manifest is None:
        return SweepResult(**base, kind="broken", status=SCENARIO_ERROR, detail=job.manifest_error or "",
                           finished_at=_now())
    if _STOP is not None and _STOP.is_set() or job.stop_file and Path(job.stop_file).exists():
        return Interrupted()
    global _RUNNING
    _RUNNING = True
    marker = _mark_active(job)
    watcher = _StopWatcher(Path(job.stop_file)) if _STOP is None and job.stop_file else None
    try:
        return _run(job, base)
    except KeyboardInterrupt:
        return Interrupted()
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


def _run(job: SweepJob, base: dict) -> SweepResult | Interrupted:
    from verifier.rubric import rubric_from_journal

    from ..choosers import load_chooser
    from ..lifecycle.run import execute_run

    t0 = time.monotonic()
    try:
        scenario = load_manifest(Path(job.manifest))
    except ManifestError as exc:
        return SweepResult(**base, kind="broken", status=SCENARIO_ERROR, detail=str(exc), finished_at=_now())
    meta = dict(kind=scenario.kind, tags=list(scenario.tags), expected=scenario.expected)
    try:
        chooser = load_chooser(job.chooser, scenario, seed=job.seed, models_file=job.models_file)
        # The spec is journaled so that `repair-agent resume RUN` can load the same chooser again.
        record = execute_run(scenario, chooser, backend=job.sandbox, runs_dir=Path(job.runs_dir),
                             max_steps=job.budget, chooser_spec=job.chooser, max_cost=job.max_cost)
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a bug or an unloadable plug-in: reported, the sweep goes on
        return SweepResult(**base, **meta, status=SWEEP_ERROR, detail=f"{type(exc).__name__}: {exc}",
                           wall_s=round(time.monotonic() - t0, 3), finished_at=_now())
    if record.detail == INTERRUPTED_DETAIL:
        return Interrupted()
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
                       rubric=rubric_from_journal(journal).model_dump(), finished_at=_now())


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
