"""A pytest plugin for mutants.py: each test's outcome and, when asked, the lines it ran.

Loaded with `-p mutants_trace` (mutant_runs.run_pytest copies it alone into a directory on
PYTHONPATH). MUTANTS_OUT names the JSON file it writes at the end of the session; MUTANTS_TRACE,
when set, is a JSON list of absolute source paths whose executed lines are recorded per test (setup,
call and teardown), so a mutant of a line needs to run only the tests that executed it. Standard
library and pytest only.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from typing import Any, Iterator

import pytest

_FILES = frozenset(json.loads(os.environ.get("MUTANTS_TRACE") or "[]"))
_lines: set[tuple[str, int]] = set()
_results: dict[str, dict[str, Any]] = {}
COLLECTION = "::collection"


def _local(frame, event, arg):  # type: ignore[no-untyped-def]
    if event == "line":
        _lines.add((frame.f_code.co_filename, frame.f_lineno))
    return _local


def _global(frame, event, arg):  # type: ignore[no-untyped-def]
    # Only frames of the traced files get a local tracer: everything else runs untraced.
    if frame.f_code.co_filename in _FILES:
        _lines.add((frame.f_code.co_filename, frame.f_lineno))
        return _local
    return None


@contextlib.contextmanager
def _traced(threads: bool) -> Iterator[None]:
    """The lines run inside the block, in `_lines` (cleared first); the tracer is always removed."""
    _lines.clear()
    if _FILES:
        if threads:
            threading.settrace(_global)
        sys.settrace(_global)
    try:
        yield
    finally:
        if _FILES:
            sys.settrace(None)
            if threads:
                threading.settrace(None)  # type: ignore[arg-type]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # type: ignore[no-untyped-def]
    with _traced(threads=True):
        yield
    entry = _results.setdefault(item.nodeid, {"outcome": "passed"})
    if _FILES:
        entry["lines"] = sorted(_lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):  # type: ignore[no-untyped-def]
    # What runs while the test modules are imported (module-level code calling the library)
    # affects every test: recorded under a key of its own.
    with _traced(threads=False):
        yield
    if _FILES:
        _results[COLLECTION] = {"outcome": "collection", "lines": sorted(_lines)}


def pytest_runtest_logreport(report):  # type: ignore[no-untyped-def]
    entry = _results.setdefault(report.nodeid, {"outcome": "passed"})
    if report.failed:
        if entry["outcome"] != "failed":  # the first failing phase tells what went wrong
            entry["outcome"] = "failed"
            entry["longrepr"] = report.longreprtext[-6000:]
            crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
            entry["crash"] = getattr(crash, "message", "") or ""
    elif report.skipped and entry["outcome"] == "passed":
        entry["outcome"] = "skipped"


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    out = os.environ.get("MUTANTS_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(_results, f)
