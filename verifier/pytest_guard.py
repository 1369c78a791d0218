"""A pytest plugin the verifier loads with `-p` before any candidate code is imported.

It runs INSIDE the test process (stdlib + pytest only; nothing else of the verifier is
importable there) and reports, on a private duplicate of the original stderr taken at import
time, so records leave the process as they happen and cannot be rewritten afterwards:
  - each test's raw call outcome, seen from an innermost wrapper before any report exists;
  - the source file of every registered pytest hook implementation, after collection and at
    the end, so a hook registered by candidate code is visible.
Code under test shares this process and could still interfere; this raises the bar, it is not
a proof. See the README's limits.
"""
import json
import os

import pytest

MARKER = "\x1eRA-GUARD "
_fd = os.dup(2)  # before pytest's fd-level capture replaces fd 2


def _emit(**record):
    os.write(_fd, (MARKER + json.dumps(record, sort_keys=True) + "\n").encode())


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item):
    outcome = yield
    excinfo = outcome.excinfo
    _emit(kind="call", nodeid=item.nodeid, raised=None if excinfo is None else excinfo[0].__name__)


def _hook_files(config):
    files = set()
    hooks = config.pluginmanager.hook
    for name in dir(hooks):
        caller = getattr(hooks, name, None)
        if name.startswith("_") or not hasattr(caller, "get_hookimpls"):
            continue
        for impl in caller.get_hookimpls():
            code = getattr(impl.function, "__code__", None)
            files.add(code.co_filename if code is not None else repr(impl.function))
    return sorted(files)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    _emit(kind="hooks", when="collected", files=_hook_files(session.config))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    _emit(kind="hooks", when="finished", files=_hook_files(session.config))
    _emit(kind="finished", exitstatus=int(exitstatus))
