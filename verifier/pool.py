"""Fresh verification containers, made before they are needed.

Every check still runs in its own container that no command ever ran in before, over its own
copy of the pristine tree, and that container is removed after the one check. The pool only
moves *when* the container is created and started and the tree is copied: in the background,
while the agent's sandbox starts or the chooser thinks, instead of on the check's critical path.

A pooled check is handed out at most once. Before it is handed out it is asked again whether it
is still what it was made as (same image, same pristine tree hash, same spec, not idle too long,
nothing run in it); if not, it is discarded, never used.
"""
from __future__ import annotations

import atexit
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict


class PoolKey(BaseModel):
    """What a pooled check was made for. A check is only ever used under the same key."""

    model_config = ConfigDict(frozen=True)

    environment_id: str  # docker:<image id> or local:<python version>
    pristine_tree_sha256: str
    setup_sha256: str  # spec, oracle, guard, limits and uid: everything the mounts and commands depend on


class FreshCheck:
    """One check's directory (pristine copy + output dir) and its started, unused runner."""

    def __init__(self, work: Path, key: PoolKey, runner, started_at: str = "", layout: Any = None):
        self.work, self.key, self.runner, self.started_at = work, key, runner, started_at
        self.layout = layout  # the check's paths and names (checkenv.CheckLayout)
        self.made_at = time.monotonic()

    @property
    def tree(self) -> Path:
        return self.work / "tree"

    @property
    def out(self) -> Path:
        return self.work / "out"

    def destroy(self) -> None:
        self.runner.close()


class CheckPool:
    """Makes fresh checks ahead of time with `make`, one at a time on one background thread.

    `fill()` has `size` ready (a diff's first checks, its target tests and its suite, usually come
    back to back); after a check only one is kept ready, so a run that ends after its last check
    leaves at most one unused. Replacements are made while the verifier is quiet — no check
    running, none finished in the last `idle_s` (the chooser is thinking) — so they never compete
    with a running check for the CPU, and a run that ends right after its last check leaves nothing
    half-made to wait for. One thread,
    one creation at a time: on a small machine parallel creations only slow down the agent's own
    sandbox start. `problem(check)` says why a ready check may not be used (None: it may).
    `take()` never returns a check twice, never one with a problem, and makes one on the spot
    when none is ready or coming. `close()` waits for all background work and leaves nothing.
    """

    def __init__(self, make: Callable[[], FreshCheck], problem: Callable[[FreshCheck], str | None], *,
                 size: int = 2, idle_s: float = 0.25, max_idle_s: float = 300.0):
        self._make, self._problem = make, problem
        self.size, self.idle_s, self.max_idle_s = size, idle_s, max_idle_s
        self._running_checks = 0
        self._quiet_since = float("-inf")
        self._cond = threading.Condition()
        self._ready: deque[FreshCheck] = deque()
        self._target = 0
        self._making = False
        self._filler: threading.Thread | None = None
        self._removers: set[threading.Thread] = set()
        self._closed = False
        self.discarded: list[str] = []  # why pooled checks were thrown away (for the record and tests)
        self.background_failures: list[str] = []
        # A caller that forgets close() must still not leave containers behind at exit.
        atexit.register(self.close)

    # -- background work ----------------------------------------------------------------------
    def fill(self, target: int | None = None) -> None:
        """Have `target` (default and at most: `size`) checks ready; the filler thread makes the missing ones."""
        with self._cond:
            self._target = self.size if target is None else min(target, self.size)
            if self._closed or self._filler is not None or len(self._ready) >= self._target:
                return
            self._filler = threading.Thread(target=self._fill_loop, name="verifier-pool-filler", daemon=True)
            self._filler.start()

    def _fill_loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and len(self._ready) < self._target and not self._quiet():
                    self._cond.wait(max(0.01, self._quiet_since + self.idle_s - time.monotonic()))
                if self._closed or len(self._ready) >= self._target:
                    self._filler = None
                    self._cond.notify_all()
                    return
                self._making = True
            try:
                check = self._make()
            except Exception as exc:  # the engine or the disk: the check that needs one makes it itself
                with self._cond:
                    self._making, self._filler = False, None
                    self.background_failures.append(f"{type(exc).__name__}: {exc}")
                    self._cond.notify_all()
                return
            with self._cond:
                self._making = False
                closed = self._closed
                if not closed:
                    self._ready.append(check)
                self._cond.notify_all()
            if closed:
                check.destroy()  # closed while it was being made

    def _quiet(self) -> bool:
        return not self._running_checks and time.monotonic() - self._quiet_since >= self.idle_s

    def retire(self, check: FreshCheck) -> None:
        """A check that was used: its container is removed in the background, and its
        replacement is made once the verifier is quiet."""
        with self._cond:
            self._running_checks -= 1
            self._quiet_since = time.monotonic()
            self._cond.notify_all()
        self._remove_later(check)
        self.fill(1)

    def _remove_later(self, check: FreshCheck) -> None:
        thread = threading.Thread(target=self._remove, args=(check,), name="verifier-pool-remover", daemon=True)
        with self._cond:
            self._removers.add(thread)
        thread.start()

    def _remove(self, check: FreshCheck) -> None:
        try:
            check.destroy()
        finally:
            with self._cond:
                self._removers.discard(threading.current_thread())
                self._cond.notify_all()

    # -- the check's side -----------------------------------------------------------------------
    def take(self) -> FreshCheck:
        """A fresh check for exactly one use; give it back with retire()."""
        while True:
            with self._cond:
                if self._closed:
                    raise RuntimeError("the verifier's check pool is closed")
                while not self._ready and self._making:
                    self._cond.wait()  # one is on its way: sooner than starting another
                check = self._ready.popleft() if self._ready else None
            if check is None:
                check = self._make()  # nothing ready or coming: make it here, its failure is this check's
            elif reason := self._why_unusable(check):
                self.discarded.append(reason)
                self._remove_later(check)
                continue
            with self._cond:
                self._running_checks += 1
            return check

    def _why_unusable(self, check: FreshCheck) -> str | None:
        idle = time.monotonic() - check.made_at
        if idle > self.max_idle_s:
            return f"idle for {idle:.0f}s (more than {self.max_idle_s:g}s)"
        return self._problem(check)

    @property
    def ready(self) -> int:
        with self._cond:
            return len(self._ready)

    def wait_ready(self, count: int, timeout_s: float = 60.0) -> bool:
        """Wait until `count` checks are ready (tests and benchmarks use it)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._ready) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._filler is None:
                    return len(self._ready) >= count
                self._cond.wait(left)
            return True

    def close(self) -> None:
        """Remove every ready check, wait for all background work, and take no more."""
        with self._cond:
            self._closed = True
            leftovers = list(self._ready)
            self._ready.clear()
        for check in leftovers:
            self._remove_later(check)  # in parallel: each removal waits on the engine
        while True:
            with self._cond:
                busy = [t for t in (self._filler, *self._removers)
                        if t is not None and t is not threading.current_thread()]
            if not busy:
                break
            for t in busy:
                t.join()
        atexit.unregister(self.close)
