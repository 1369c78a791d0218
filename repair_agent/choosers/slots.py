"""A counting semaphore across processes: at most N requests in flight to one named model,
whichever sweep worker (process or thread) sends them.

N lock files; a request holds one with flock for as long as it is in flight. flock locks belong
to an open file description, so two threads of one process exclude each other as two processes
do, and a process that dies releases its slot with its descriptors.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Iterator

LOCK_DIR_ENV = "REPAIR_AGENT_LOCK_DIR"


def default_lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "repair-agent-locks")


class SlotTimeout(TimeoutError):
    pass


class EndpointSlots:
    def __init__(self, key: str, limit: int, lock_dir: Path | None = None):
        if limit < 1:
            raise ValueError("limit must be at least 1")
        safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)[:60]
        digest = hashlib.sha256(key.encode()).hexdigest()[:10]
        self.dir = Path(lock_dir or default_lock_dir()) / f"{safe}-{digest}"
        self.limit = limit
        self.paths = [self.dir / f"slot-{i}.lock" for i in range(limit)]

    @contextlib.contextmanager
    def hold(self, deadline: float | None = None) -> Iterator[float]:
        """Hold one slot; yields the seconds spent waiting for it. Raises SlotTimeout when no slot
        frees up before `deadline` (time.monotonic())."""
        self.dir.mkdir(parents=True, exist_ok=True)
        started, pause = time.monotonic(), 0.005
        while True:
            for path in self.paths:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield time.monotonic() - started
                finally:
                    os.close(fd)  # releases the lock
                return
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise SlotTimeout(f"all {self.limit} request slot(s) stayed busy for {now - started:.1f}s")
            # A bounded poll: flock has no timed wait, and a slot frees when a request returns.
            time.sleep(min(pause, max(0.0, deadline - now)) if deadline is not None else pause)
            pause = min(pause * 2, 0.1)
