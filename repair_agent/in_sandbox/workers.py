"""The mutation analysis's mutants shared among processes (mutants.py), inside the sandbox.

A mutant's cost is its run of the failing target tests, one process at a time; the analysis has a
fixed time, so on a sandbox with two CPUs half its mutants went unrun on a large module. After the
one pytest session is collected and the conditions are traced, `Pool.split` forks: each process takes
every n-th mutant of each line, runs them in its copy of the session, and a child sends what it found
to the parent as one JSON text through a pipe (`send`), which the parent reads by a deadline
(`gather`); a child still running then is killed and its mutants count as lost.

The standard library only, Python 3.9 and later; nothing runs at import.
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
from typing import Any, Dict, List, Optional, Tuple


def available_cpus() -> int:
    """The CPUs this process may use: its affinity, and a container's CPU quota (cgroup v2, else v1)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    for path, parse in (("/sys/fs/cgroup/cpu.max", lambda t: t.split()),
                        ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", lambda t: [t.strip(), _v1_period()])):
        try:
            with open(path, encoding="ascii") as fh:
                quota, period = parse(fh.read())
        except (OSError, ValueError):
            continue
        if quota not in ("max", "-1") and int(period) > 0:
            n = min(n, max(1, int(quota) // int(period)))
        break
    return max(1, n)


def _v1_period() -> str:
    with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as fh:
        return fh.read().strip()


class Pool:
    """This process and the children it forked for one analysis."""

    def __init__(self) -> None:
        self.index = 0                      # this process's share: 0 is the parent
        self.count = 1                      # processes in all
        self.children: List[Tuple[int, int]] = []   # (pid, the read end of its pipe), in the parent
        self.out_fd: Optional[int] = None   # the write end to the parent, in a child

    @property
    def is_child(self) -> bool:
        return self.out_fd is not None

    def split(self, n: int) -> int:
        """Fork n - 1 children; returns this process's share (0 in the parent). Where fork is missing or
        fails, the parent keeps every share (count 1): a child already forked counted on n, so it is ended."""
        self.count = 1   # again for each split: the children of an earlier one have ended
        if n < 2 or not hasattr(os, "fork"):
            return 0
        for k in range(1, n):
            try:
                read_fd, write_fd = os.pipe()
            except OSError:
                self._end_children()
                break
            try:
                pid = os.fork()
            except OSError:
                os.close(read_fd)
                os.close(write_fd)
                self._end_children()
                break
            if pid == 0:
                os.close(read_fd)
                for _, fd in self.children:
                    os.close(fd)
                self.children, self.out_fd, self.index, self.count = [], write_fd, k, n
                return k
            os.close(write_fd)
            self.children.append((pid, read_fd))
        self.count = len(self.children) + 1
        return 0

    def _end_children(self) -> None:
        for pid, fd in self.children:
            os.close(fd)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
        self.children = []

    def send(self, payload: Dict[str, Any]) -> None:
        """In a child: hand `payload` to the parent and end this process at once (no pytest teardown,
        no exit handler: they are the parent's)."""
        assert self.out_fd is not None
        data = json.dumps(payload).encode("utf-8")
        try:
            while data:
                data = data[os.write(self.out_fd, data):]
        finally:
            os._exit(0)

    def gather(self, deadline: float) -> List[Optional[Dict[str, Any]]]:
        """In the parent: each child's payload, None for one that sent nothing readable by `deadline`
        (time.monotonic), which is then killed."""
        out: List[Optional[Dict[str, Any]]] = []
        for pid, fd in self.children:
            chunks: List[bytes] = []
            done = False
            while not done:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                chunk = os.read(fd, 1 << 16)
                chunks.append(chunk)
                done = not chunk
            os.close(fd)
            if not done:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            os.waitpid(pid, 0)
            try:
                out.append(json.loads(b"".join(chunks).decode("utf-8")) if done else None)
            except ValueError:
                out.append(None)
        self.children = []
        return out
