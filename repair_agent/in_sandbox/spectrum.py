"""The traced pytest run of spectrum-based localization (localization.py), inside the sandbox.

`main` copies the working tree to a temporary directory (so nothing a test writes, and no cache,
can end up in the agent's diff), runs the target tests and a fixed number of other tests under
`sys.settrace`, recording which lines of the repository each test executes, and prints one line:
MARKER followed by JSON {"outcomes", "tests", "exit", "cut"}. It returns the run (SpectrumRun) for
the mutation analysis (mutants.py), which may run next in the same process.

The standard library and pytest only, Python 3.9 and later; nothing runs at import (the host imports
`ochiai`, `select_tests` and the other pure functions).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, TypeVar

MARKER = "@@ra-spectrum@@"
NOT_COPIED = (".git", "__pycache__", ".pytest_cache")

Line = Tuple[str, int]                    # (repository-relative path, line number)
Scored = Tuple[str, int, float, int, int]  # (path, line, Ochiai score, failing tests, passing tests)
T = TypeVar("T")


def ochiai(spectra: Mapping[str, Iterable[Line]], failing: Collection[str], passing: Collection[str],
           in_scope: Callable[[str], bool]) -> List[Scored]:
    """Every line a failing test executes and `in_scope` admits, scored ef / sqrt(F * (ef + ep)) (ef, ep:
    failing and passing tests that execute it; F: failing tests), most suspicious first (ties: more
    failing, fewer passing, then path and line). `spectra`: test id -> lines it executed; a test in
    neither `failing` nor `passing` counts on neither side. The one implementation: the host's
    localization.ochiai and the mutation analysis's choice of lines both call it."""
    ef: dict[Line, int] = {}
    ep: dict[Line, int] = {}
    for test, lines in spectra.items():
        counts = ef if test in failing else ep if test in passing else None
        if counts is None:
            continue
        for path, line in lines:
            key = (path, int(line))
            counts[key] = counts.get(key, 0) + 1
    total_failed = max(1, len(failing))
    scored = []
    for (path, line), f in ef.items():
        if not in_scope(path):
            continue
        p = ep.get((path, line), 0)
        scored.append((path, line, round(f / math.sqrt(total_failed * (f + p)), 4), f, p))
    scored.sort(key=lambda s: (-s[2], -s[3], s[4], s[0], s[1]))
    return scored


def is_target(nodeid: str, targets: Iterable[str]) -> bool:
    """A target test, or one of its parameters."""
    return any(nodeid == t or nodeid.startswith(t + "[") for t in targets)


def spread(tests: List[T], n: int) -> List[T]:
    """At most `n` of `tests`, evenly spread, in their order."""
    if len(tests) <= n:
        return tests
    if n <= 0:
        return []
    step = len(tests) / n
    return [tests[int(k * step)] for k in range(n)]


def select_tests(items: Sequence[T], nodeid: Callable[[T], str], targets: Sequence[str], files: Collection[str],
                 pool: Collection[str], max_others: int, min_near: int) -> List[T]:
    """What the traced run runs of the collected `items`: the targets, then at most `max_others`
    other tests of their `files`, evenly spread; the rest of the suite (only what `pool` names when
    it names anything) only when those are fewer than `min_near`."""
    targeted = [i for i in items if is_target(nodeid(i), targets)]
    others = [i for i in items if not is_target(nodeid(i), targets) and (not pool or nodeid(i) in pool)]
    near = [i for i in others if nodeid(i).split("::", 1)[0] in files]
    far = [i for i in others if nodeid(i).split("::", 1)[0] not in files]
    near = spread(near, max_others)
    return targeted + near + (spread(far, max_others - len(near)) if len(near) < min_near else [])


def written_tests(path: str) -> int:
    """Test functions a file defines as written (before pytest expands parameters)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return sum(1 for ln in fh if ln.lstrip().startswith(("def test", "async def test")))
    except OSError:
        return 0


def repo_path(filename: str, roots: Sequence[str]) -> Optional[str]:
    """`filename` (a code object's) relative to the first of `roots` (each ending in a separator)
    holding it, when it is the repository's own code: None for tests, conftest.py, installed
    packages, code outside the roots and code compiled from a string."""
    path = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
    for base in roots:
        if path.startswith(base):
            p = path[len(base):].replace(os.sep, "/")
            name = p.rsplit("/", 1)[-1]
            if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
                    or "site-packages/" in p or p.startswith(("tests/", "test/")) or "/tests/" in p):
                return p
            return None
    return None


def crash_frames(tb: Any, roots: Sequence[str]) -> List[Line]:
    """The lines of the repository's own code on a traceback, innermost first: where an exception
    was raised or passed through (`key1 = key(seqs)` calling a test's `lambda x: -x`)."""
    frames = []
    while tb is not None:
        path = repo_path(tb.tb_frame.f_code.co_filename, roots)
        if path:
            frames.append((path, tb.tb_lineno))
        tb = tb.tb_next
    return frames[::-1]


def make_tracer(roots: Sequence[str], current: List[Any]) -> Callable[..., Any]:
    """A `sys.settrace` function adding (path, line) of every line of the repository's own code
    that runs to the set `current[0]`. Closures, not methods: the local tracer runs for every line."""
    wanted: dict[str, Any] = {}   # code file name -> its repository path, or False

    def rel(filename: str) -> Any:
        r = wanted.get(filename)
        if r is None:
            r = wanted[filename] = repo_path(filename, roots) or False
        return r

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            current[0].add((wanted[frame.f_code.co_filename], frame.f_lineno))
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if rel(frame.f_code.co_filename):
            return local
        return None

    return tracer


def tree_size(src: str) -> int:
    """Bytes of the files under `src`, outside NOT_COPIED."""
    size = 0
    for d, dirs, files in os.walk(src):
        dirs[:] = [x for x in dirs if x not in NOT_COPIED]
        size += sum(os.path.getsize(os.path.join(d, f)) for f in files if os.path.isfile(os.path.join(d, f)))
    return size


@dataclass
class SpectrumRun:
    """What the traced run leaves to the mutation analysis that may follow it in the process."""

    args: dict[str, Any]      # the settings the host sent (localization.localize)
    root: str                 # where the tests ran: the copy, or the working tree when too large to copy
    roots: Tuple[str, ...]    # root and the working tree, each with a trailing separator
    deadline: float           # time.monotonic() after which no other test starts
    outcomes: dict[str, str] = field(default_factory=dict)   # test id -> "passed" or "failed"
    hits: dict[str, Set[Line]] = field(default_factory=dict)  # test id -> lines of the repository it ran
    cut: List[str] = field(default_factory=list)              # tests not run: out of time
    crash: List[Line] = field(default_factory=list)           # the repository's frames of the failing targets' tracebacks

    def is_target(self, nodeid: str) -> bool:
        return is_target(nodeid, self.args["targets"])


def _plugins(run: SpectrumRun, tracer: Callable[..., Any], current: List[Any]) -> List[object]:
    import pytest

    args = run.args
    pool = set(args["pool"])

    class Select:
        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, session: Any, config: Any, items: List[Any]) -> None:
            # This count of collected tests decides; the count of written ones in main only spares
            # the collection of a whole suite when the targets' files plainly hold enough.
            items[:] = select_tests(items, lambda i: i.nodeid, args["targets"], args["files"], pool,
                                    args["max_others"], args["min_near"])

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Optional[bool]:
            if time.monotonic() > run.deadline and not run.is_target(item.nodeid):
                run.cut.append(item.nodeid)
                return True   # not run: the traced run has used its time
            return None

    class Spectrum:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Any:
            current[0] = run.hits.setdefault(item.nodeid, set())
            sys.settrace(tracer)
            try:
                yield
            finally:
                sys.settrace(None)
                current[0] = None

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item: Any, call: Any) -> Any:
            if call.excinfo is not None and run.is_target(item.nodeid):
                run.crash += [f for f in crash_frames(call.excinfo.tb, run.roots) if f not in run.crash]
            yield

        def pytest_runtest_logreport(self, report: Any) -> None:
            if report.failed:
                run.outcomes[report.nodeid] = "failed"
            elif report.when == "call" and report.passed:
                run.outcomes.setdefault(report.nodeid, "passed")

    return [Select(), Spectrum()]


def main(args_json: str) -> SpectrumRun:
    """The traced run in the current directory (the working tree); prints its result line."""
    args = json.loads(args_json)
    src = os.path.realpath(os.getcwd())
    root = src
    if tree_size(src) <= args["copy_limit"]:
        root = os.path.join(tempfile.mkdtemp(prefix="ra-spectrum-"), "tree")
        shutil.copytree(src, root, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
        os.chdir(root)
    # Plugins load as installed (an environment's pytest-mock gives the tests their `mocker`), as in the verifier.
    os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    import pytest   # only now: imported from the copy's directory, as the tests' modules will be

    roots = tuple(dict.fromkeys([root + os.sep, src + os.sep]))
    run = SpectrumRun(args=args, root=root, roots=roots, deadline=time.monotonic() + args["budget_s"])
    current: List[Any] = [None]
    tracer = make_tracer(roots, current)
    # Collect the rest of the suite only when the targets' files may hold too few other tests (counted
    # as written, before pytest expands parameters; select_tests decides on what was collected):
    # collecting a whole suite costs time.
    paths = args["files"]
    if sum(written_tests(f) for f in args["files"]) - len(args["targets"]) < args["min_near"]:
        paths = args["suite_paths"]   # empty: the whole suite, as pytest collects it
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "console_output_style=classic", f"--rootdir={root}",
                        "--continue-on-collection-errors", "--maxfail=0", *paths],
                       plugins=_plugins(run, tracer, current))
    out = {"outcomes": run.outcomes, "tests": {t: sorted(h) for t, h in run.hits.items() if h}, "exit": int(code),
           "cut": len(run.cut)}
    sys.stdout.write("\n" + MARKER + json.dumps(out) + "\n")
    sys.stdout.flush()
    return run
