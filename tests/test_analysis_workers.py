"""The processes the mutation analysis shares its mutants among (in_sandbox/workers.py), forked for real."""
from __future__ import annotations

import os
import time

from repair_agent.in_sandbox.workers import Pool, available_cpus


def test_a_child_sends_its_share_and_a_late_one_is_killed_and_counted_as_lost():
    pool = Pool()
    k = pool.split(3)
    if pool.is_child:
        if k == 2:
            time.sleep(60)   # never sends: the parent must not wait for it past its deadline
        pool.send({"share": k, "pid": os.getpid()})
    assert k == 0 and pool.count == 3 and len(pool.children) == 2
    pids = [pid for pid, _ in pool.children]
    started = time.monotonic()
    got = pool.gather(time.monotonic() + 2.0)
    assert time.monotonic() - started < 10
    assert got[0] == {"share": 1, "pid": pids[0]} and got[1] is None
    for pid in pids:   # both reaped: the late one was killed, not left running
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive
    assert pool.children == []


def test_one_process_forks_nothing():
    pool = Pool()
    assert pool.split(1) == 0 and pool.count == 1 and not pool.children and not pool.is_child
    assert pool.gather(time.monotonic()) == []
    assert 1 <= available_cpus() <= (os.cpu_count() or 1)


def test_a_fork_that_fails_after_the_first_leaves_one_process_with_every_share(monkeypatch):
    # The first child was told it is one of three; when the second fork fails, that count is wrong for
    # it: it is ended, and the parent runs every share itself.
    real_fork, calls = os.fork, []

    def fork():
        calls.append(1)
        if len(calls) > 1:
            raise OSError("no more processes")
        return real_fork()

    monkeypatch.setattr(os, "fork", fork)
    pool = Pool()
    k = pool.split(3)
    if pool.is_child:
        time.sleep(60)   # never sends: the parent ends it
        pool.send({"share": k})
    assert k == 0 and pool.count == 1 and pool.children == [] and not pool.is_child
    assert pool.gather(time.monotonic()) == []


def test_a_second_split_after_the_first_ended_counts_its_own_processes():
    # The analysis's wider rounds split again once the first round's children have sent and ended: a
    # round of one process must count one, not the two of the round before (it would take half its mutants).
    pool = Pool()
    k = pool.split(2)
    if pool.is_child:
        pool.send({"share": k})
    assert pool.count == 2 and pool.gather(time.monotonic() + 10.0) == [{"share": 1}]
    assert pool.split(1) == 0 and pool.count == 1 and not pool.children
