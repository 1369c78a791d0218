"""The two ways a sweep runs its jobs: a local spawn-context process pool, or Ray tasks."""
from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Callable

from .jobs import SWEEP_ERROR, Interrupted, SweepJob, SweepResult
from .worker import _now, _worker_init, run_job, wait_for_cleanup

OnResult = Callable[[SweepJob, SweepResult], None]
MayStart = Callable[[], bool]             # asked before each further run (a sweep's cost limit)


def run_local(jobs: list[SweepJob], workers: int, on_result: OnResult, may_start: MayStart | None = None) -> bool:
    """A spawn-context process pool; returns True when interrupted (Ctrl-C). With `may_start`, at
    most `workers` runs are handed to the pool at a time, and the next only when it says yes."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init, initargs=(stop,))
    queue = list(jobs)
    futures: dict = {}
    pending: set = set()

    def submit() -> None:
        while queue and (may_start is None or len(pending) < workers and may_start()):
            job = queue.pop(0)
            future = pool.submit(run_job, job)
            futures[future] = job
            pending.add(future)
    try:
        submit()
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                _deliver(f, futures[f], on_result)
            submit()
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
        result = _failed(job, exc)
    if not isinstance(result, Interrupted):
        on_result(job, result)


def _failed(job: SweepJob, exc: BaseException) -> SweepResult:
    return SweepResult(scenario=job.scenario, chooser=job.chooser, budget=job.budget, seed=job.seed,
                       status=SWEEP_ERROR, detail=f"{type(exc).__name__}: {exc}", finished_at=_now())


def _ignore_sigint_while(fn):
    """A second Ctrl-C must not abandon workers that are removing their containers."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return fn()
    finally:
        signal.signal(signal.SIGINT, previous)


def run_ray(jobs: list[SweepJob], workers: int, on_result: OnResult, may_start: MayStart | None = None) -> bool:
    """The same jobs as Ray tasks: a local Ray instance of `workers` CPUs, or the cluster named by
    RAY_ADDRESS. Returns True when interrupted. With `may_start`, `workers` tasks at a time, the next
    only when it says yes."""
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
    queue = list(jobs)
    refs: dict = {}
    pending: list = []

    def submit() -> None:
        while queue and (may_start is None or len(pending) < workers and may_start()):
            job = queue.pop(0)
            ref = remote.remote(job)
            refs[ref] = job
            pending.append(ref)
    try:
        submit()
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                _deliver_ray(ray, ref, refs[ref], on_result)
            submit()
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
        result = _failed(job, exc)
    if not isinstance(result, Interrupted):
        on_result(job, result)
