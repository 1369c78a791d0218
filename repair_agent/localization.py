"""Spectrum-based fault localization for the target-test observation (agent side only).

Next to the verifier's run of the target tests, the sandbox runs the target tests and a fixed number
of other tests (of the target tests' files; of the rest of the suite when those hold almost none) once
more under `sys.settrace`, recording which lines of the repository each test executes. A line
executed by the failing target tests and by few passing tests is suspicious (Ochiai:
ef / sqrt(F * (ef + ep))). The result is a typed part of the observation that any chooser can read.

It is a hint, never a verdict: it runs in the agent's sandbox on a copy of the working tree, the
verifier never sees it, and no condition depends on it. Whatever goes wrong here (a timeout, a
crash, a tree too large to copy) ends as an empty localization with a note, not as a failed step.
"""
from __future__ import annotations

import json
import math
import sys
import time

from pydantic import BaseModel, ConfigDict

from verifier.spec import _glob_regex, glob_match

from . import mutation
from .mutation import MutationAnalysis
from .mutation_script import SCRIPT as MUTATION_SCRIPT

TOP_N = 40
TIMEOUT_S = 60.0
# Passing tests traced besides the targets: enough to tell the lines apart, few enough to keep the
# traced run short (a fixed number, not a time, so the result is reproducible; the time limit only
# cuts a pathological run short, and says so). They come from the target tests' own files, which run
# the same functions. Only when those files hold almost no other test does the rest of the suite
# fill up: with no passing test to compare with, every line the failing tests run would look equally
# suspicious (borrowing more widely than that changed no repair and reordered some).
MAX_OTHER_TESTS = 60
MIN_NEAR_TESTS = 3
MAX_POOL = 2000   # pass-to-pass ids sent to the traced run at most
MARKER = "@@ra-spectrum@@"

# Runs inside the sandbox as `python -B -c SCRIPT ARGS_JSON`: the standard library and pytest only.
# The working tree is copied to a temporary directory first, so nothing a test writes (and no
# cache) can end up in the agent's diff.
SCRIPT = r'''
import json, os, shutil, sys, tempfile, time
args = json.loads(sys.argv[1])
src = os.path.realpath(os.getcwd())
size = 0
for d, dirs, files in os.walk(src):
    dirs[:] = [x for x in dirs if x not in (".git", "__pycache__", ".pytest_cache")]
    size += sum(os.path.getsize(os.path.join(d, f)) for f in files if os.path.isfile(os.path.join(d, f)))
root = src
if size <= args["copy_limit"]:
    root = os.path.join(tempfile.mkdtemp(prefix="ra-spectrum-"), "tree")
    shutil.copytree(src, root, symlinks=True, ignore=shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache"))
    os.chdir(root)
# Plugins load as installed (an environment's pytest-mock gives the tests their `mocker`), as in the verifier.
os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
import pytest
roots = tuple(dict.fromkeys([root + os.sep, src + os.sep]))
wanted, hits, outcomes = {}, {}, {}
current = [None]

def rel(filename):
    r = wanted.get(filename)
    if r is None:
        r = False
        path = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
        for base in roots:
            if path.startswith(base):
                p = path[len(base):].replace(os.sep, "/")
                name = p.rsplit("/", 1)[-1]
                if not (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
                        or "site-packages/" in p or p.startswith(("tests/", "test/")) or "/tests/" in p):
                    r = p
                break
        wanted[filename] = r
    return r

def local(frame, event, arg):
    if event == "line":
        current[0].add((wanted[frame.f_code.co_filename], frame.f_lineno))
    return local

def tracer(frame, event, arg):
    if rel(frame.f_code.co_filename):
        return local
    return None

deadline = time.monotonic() + args["budget_s"]
cut = []

def is_target(nodeid):
    return any(nodeid == t or nodeid.startswith(t + "[") for t in args["targets"])

pool = set(args["pool"])

def spread(tests, n):
    if len(tests) <= n:
        return tests
    if n <= 0:
        return []
    step = len(tests) / n
    return [tests[int(k * step)] for k in range(n)]

class Select:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        # the targets, then at most `max_others` other tests of their files, evenly spread; the rest
        # of the suite (the pass-to-pass list when the suite has one) only when those are too few.
        # This count of collected tests decides; the count of written ones below only spares the
        # collection of a whole suite when the targets' files plainly hold enough.
        targets = [i for i in items if is_target(i.nodeid)]
        others = [i for i in items if not is_target(i.nodeid) and (not pool or i.nodeid in pool)]
        near = [i for i in others if i.nodeid.split("::", 1)[0] in args["files"]]
        far = [i for i in others if i.nodeid.split("::", 1)[0] not in args["files"]]
        near = spread(near, args["max_others"])
        items[:] = targets + near + (spread(far, args["max_others"] - len(near)) if len(near) < args["min_near"] else [])

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if time.monotonic() > deadline and not is_target(item.nodeid):
            cut.append(item.nodeid)
            return True   # not run: the traced run has used its time
        return None

class Spectrum:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        current[0] = hits.setdefault(item.nodeid, set())
        sys.settrace(tracer)
        try:
            yield
        finally:
            sys.settrace(None)
            current[0] = None

    def pytest_runtest_logreport(self, report):
        if report.failed:
            outcomes[report.nodeid] = "failed"
        elif report.when == "call" and report.passed:
            outcomes.setdefault(report.nodeid, "passed")

def written_tests(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return sum(1 for ln in fh if ln.lstrip().startswith(("def test", "async def test")))
    except OSError:
        return 0

# Collect the rest of the suite only when the targets' files may hold too few other tests (counted
# as written, before pytest expands parameters; Select decides on what was collected): collecting a
# whole suite costs time.
paths = args["files"]
if sum(written_tests(f) for f in args["files"]) - len(args["targets"]) < args["min_near"]:
    paths = args["suite_paths"]   # empty: the whole suite, as pytest collects it
code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", "console_output_style=classic", f"--rootdir={root}",
                    "--continue-on-collection-errors", "--maxfail=0", *paths], plugins=[Select(), Spectrum()])
out = {"outcomes": outcomes, "tests": {t: sorted(h) for t, h in hits.items() if h}, "exit": int(code), "cut": len(cut)}
sys.stdout.write("\n@@ra-spectrum@@" + json.dumps(out) + "\n")
sys.stdout.flush()
'''


class SuspiciousLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int
    score: float   # Ochiai, 0..1
    failed: int    # failing target tests that execute the line
    passed: int    # passing tests that execute it


class Localization(BaseModel):
    """Lines of the writable scope executed by the failing target tests, most suspicious first."""

    model_config = ConfigDict(frozen=True)

    method: str = "ochiai"
    failing_tests: int = 0
    passing_tests: int = 0
    lines: tuple[SuspiciousLine, ...] = ()
    scored_lines: int = 0     # lines of the writable scope the failing tests ran (the list keeps the top ones)
    duration_s: float = 0.0
    note: str | None = None   # why the list is empty or partial
    mutation: MutationAnalysis | None = None   # when the chooser asked for it

    def render(self, limit: int = 10) -> str:
        head = (f"spectrum localization ({self.method}): {self.failing_tests} failing target test(s), "
                f"{self.passing_tests} passing test(s)")
        body = [f"  {s.path}:{s.line}  score {s.score:.2f}  (run by {s.failed} failing, {s.passed} passing)"
                for s in self.lines[:limit]]
        tail = [self.mutation.render()] if self.mutation is not None else []
        return "\n".join([head + (f"; {self.note}" if self.note else ""), *body, *tail])


def ochiai(spectra: dict[str, list[tuple[str, int]]], outcomes: dict[str, str], failing: set[str],
           writable: tuple[str, ...]) -> tuple[list[SuspiciousLine], int, int]:
    """Score every line the failing tests execute. `spectra`: test id -> lines it executed."""
    passing = {t for t, o in outcomes.items() if o == "passed" and t not in failing}
    ef: dict[tuple[str, int], int] = {}
    ep: dict[tuple[str, int], int] = {}
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
        if not glob_match(path, writable):
            continue
        p = ep.get((path, line), 0)
        scored.append(SuspiciousLine(path=path, line=line, score=round(f / math.sqrt(total_failed * (f + p)), 4),
                                     failed=f, passed=p))
    scored.sort(key=lambda s: (-s.score, -s.failed, s.passed, s.path, s.line))
    return scored, len(failing), len(passing)


def _is_target(nodeid: str, targets: tuple[str, ...]) -> bool:
    return any(nodeid == t or nodeid.startswith(t + "[") for t in targets)


def localize(sandbox, targets: tuple[str, ...], writable: tuple[str, ...], *, suite: tuple[str, ...] = (),
             timeout_s: float = TIMEOUT_S, top_n: int = TOP_N, mutate: bool = False) -> Localization:
    """Run the target tests and other tests of the suite under the tracer in `sandbox`; never
    raises. `suite`: the suite's pass-to-pass node ids when it names them (empty: the whole suite,
    as pytest collects it). `mutate`: then run the mutation analysis (mutation.py) too."""
    started = time.monotonic()
    files = sorted({t.split("::", 1)[0] for t in targets})
    python = "python3" if sandbox.kind == "docker" else sys.executable
    # The targets' files, then the suite: the files the pass-to-pass list names, or pytest's own
    # collection (no path given) when the whole suite is the suite.
    if len(suite) > MAX_POOL:   # an even sample keeps the command line short on a huge list
        suite = tuple(suite[int(k * len(suite) / MAX_POOL)] for k in range(MAX_POOL))
    suite_paths = list(dict.fromkeys(files + [t.split("::", 1)[0] for t in suite])) if suite else []
    args = {"targets": list(targets), "files": files, "suite_paths": suite_paths, "pool": list(suite), "copy_limit": 16 * 1024 * 1024,
            "max_others": MAX_OTHER_TESTS, "min_near": MIN_NEAR_TESTS, "budget_s": max(1.0, timeout_s * 0.4)}
    script = SCRIPT
    if mutate:
        args["mutation"] = mutation.mutation_args([_glob_regex(w).pattern for w in writable], timeout_s * 0.85)
        script += MUTATION_SCRIPT
    try:
        res = sandbox.run([python, "-B", "-c", script, json.dumps(args)], timeout_s=timeout_s,
                          output_cap=8 * 1024 * 1024)
    except Exception as exc:  # the hint is lost, the step is not
        return Localization(note=f"not run: {type(exc).__name__}: {str(exc)[:200]}",
                            duration_s=round(time.monotonic() - started, 3))
    elapsed = round(time.monotonic() - started, 3)
    text = res.stdout.text
    at = text.rfind(MARKER)
    if res.timed_out and at < 0:
        return Localization(note=f"the traced run timed out after {timeout_s:g}s", duration_s=elapsed)
    if at < 0 or res.stdout.truncated:
        return Localization(note=f"the traced run gave no result (exit {res.exit_code}): "
                                 f"{(res.stderr.text or text)[-300:]}", duration_s=elapsed)
    try:
        data = json.loads(text[at + len(MARKER):].strip().splitlines()[0])
        outcomes: dict[str, str] = data["outcomes"]
        spectra = {t: [(p, int(n)) for p, n in lines] for t, lines in data["tests"].items()}
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        return Localization(note=f"unreadable traced result: {exc}", duration_s=elapsed)
    failing = {t for t, o in outcomes.items() if o == "failed" and _is_target(t, targets)}
    if not failing:
        return Localization(note="no target test failed in the traced run", duration_s=elapsed,
                            passing_tests=sum(o == "passed" for o in outcomes.values()))
    lines, nf, np_ = ochiai(spectra, outcomes, failing, writable)
    note = None if lines else "the failing tests executed no line of the writable scope"
    if data.get("cut"):
        note = f"{data['cut']} test(s) not run: the traced run used its time" + (f"; {note}" if note else "")
    analysis = None
    if mutate:
        analysis, why = _mutation_result(text, res.timed_out, timeout_s)
        if why:
            note = f"{note}; {why}" if note else why
    return Localization(failing_tests=nf, passing_tests=np_, lines=tuple(lines[:top_n]), scored_lines=len(lines),
                        duration_s=elapsed, note=note, mutation=analysis)


def _mutation_result(text: str, timed_out: bool, timeout_s: float) -> tuple[MutationAnalysis | None, str | None]:
    """The mutation analysis printed after the spectrum, or why there is none."""
    at = text.rfind(mutation.MARKER)
    if at < 0:
        return None, (f"the mutation analysis timed out after {timeout_s:g}s" if timed_out
                      else "the mutation analysis gave no result")
    try:
        return MutationAnalysis.model_validate_json(text[at + len(mutation.MARKER):].strip().splitlines()[0]), None
    except (ValueError, IndexError) as exc:
        return None, f"unreadable mutation analysis: {str(exc)[:200]}"
