"""Spectrum-based fault localization for the target-test observation (agent side only).

Next to the verifier's run of the target tests, the sandbox runs the target tests and a fixed number
of other tests (of the target tests' files; of the rest of the suite when those hold almost none) once
more under `sys.settrace`, recording which lines of the repository each test executes. A line
executed by the failing target tests and by few passing tests is suspicious (Ochiai:
ef / sqrt(F * (ef + ep))). The result is a typed part of the observation that any chooser can read.

The traced run is in_sandbox/spectrum.py, a real module whose source text the sandbox runs as
`python -B -c PROGRAM ARGS_JSON` (standard library and pytest only); this module builds its
settings and reads its result line. Ochiai exists once, as in_sandbox.spectrum.ochiai.

It is a hint, never a verdict: it runs in the agent's sandbox on a copy of the working tree, the
verifier never sees it, and no condition depends on it. Whatever goes wrong here (a timeout, a
crash, a tree too large to copy) ends as an empty localization with a note, not as a failed step.
"""
from __future__ import annotations

import json
import time

from pydantic import BaseModel, ConfigDict

from verifier.spec import glob_regex, glob_match

from .. import in_sandbox
from . import mutation
from .goal_examples import goal_examples
from ..in_sandbox import spectrum
from .mutation import MutationAnalysis

TOP_N = 40
TIMEOUT_S = 60.0
# With the mutation analysis the sandbox process runs longer: the analysis tries every edit of the
# operator table on the suspicious lines (time, not steps), after the spectrum's own TIMEOUT_S share.
MUTATION_TIMEOUT_S = 120.0
# Passing tests traced besides the targets: enough to tell the lines apart, few enough to keep the
# traced run short (a fixed number, not a time, so the result is reproducible; the time limit only
# cuts a pathological run short, and says so). They come from the target tests' own files, which run
# the same functions. Only when those files hold almost no other test does the rest of the suite
# fill up: with no passing test to compare with, every line the failing tests run would look equally
# suspicious (borrowing more widely than that changed no repair and reordered some).
MAX_OTHER_TESTS = 60
MIN_NEAR_TESTS = 3
MAX_POOL = 2000   # pass-to-pass ids sent to the traced run at most
MARKER = spectrum.MARKER

# What the sandbox runs as `python -B -c PROGRAM ARGS_JSON`: in_sandbox/spectrum.py (the traced run,
# on a copy of the working tree) and, when a chooser asks for it, in_sandbox/mutants.py after it.
SPECTRUM_PROGRAM = in_sandbox.program(("spectrum",), "spectrum.main(sys.argv[1])")
MUTATION_PROGRAM = in_sandbox.program(("spectrum", "statement_edits", "swaps", "condition_edits", "scope_edits", "guard_edits",
                                      "probe_edits", "default_edits", "clone_edits", "order_edits", "transform_edits", "effect_edits",
                                      "branch_edits", "operators", "behaviour", "examples", "workers", "mutants"),
                                     "mutants.main(spectrum.main(sys.argv[1]), spectrum.ochiai, operators)")


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
    """Score every line the failing tests execute (in_sandbox/spectrum.ochiai, which the mutation
    analysis ranks by too). `spectra`: test id -> lines it executed."""
    passing = {t for t, o in outcomes.items() if o == "passed" and t not in failing}
    scored = spectrum.ochiai(spectra, failing, passing, lambda path: bool(glob_match(path, writable)))
    return ([SuspiciousLine(path=path, line=line, score=score, failed=f, passed=p) for path, line, score, f, p in scored],
            len(failing), len(passing))


def localize(sandbox, targets: tuple[str, ...], writable: tuple[str, ...], *, suite: tuple[str, ...] = (),
             timeout_s: float = TIMEOUT_S, top_n: int = TOP_N, mutate: bool = False, goal: str = "") -> Localization:
    """Run the target tests and other tests of the suite under the tracer in `sandbox`; never
    raises. `suite`: the suite's pass-to-pass node ids when it names them (empty: the whole suite,
    as pytest collects it). `mutate`: then run the mutation analysis (mutation.py; in_sandbox/mutants.py) too,
    with `goal`'s examples (goal_examples.py)."""
    started = time.monotonic()
    files = sorted({t.split("::", 1)[0] for t in targets})
    python = sandbox.python
    # The targets' files, then the suite: the files the pass-to-pass list names, or pytest's own
    # collection (no path given) when the whole suite is the suite.
    if len(suite) > MAX_POOL:   # an even sample keeps the command line short on a huge list
        suite = tuple(suite[int(k * len(suite) / MAX_POOL)] for k in range(MAX_POOL))
    suite_paths = list(dict.fromkeys(files + [t.split("::", 1)[0] for t in suite])) if suite else []
    args = {"targets": list(targets), "files": files, "suite_paths": suite_paths, "pool": list(suite), "copy_limit": 16 * 1024 * 1024,
            "max_others": MAX_OTHER_TESTS, "min_near": MIN_NEAR_TESTS, "budget_s": max(1.0, timeout_s * 0.4)}
    program = SPECTRUM_PROGRAM
    if mutate:
        timeout_s = max(timeout_s, MUTATION_TIMEOUT_S)
        args["mutation"] = mutation.mutation_args([glob_regex(w).pattern for w in writable], timeout_s * 0.85,
                                                  goal_examples(goal))
        program = MUTATION_PROGRAM
    try:
        res = sandbox.run([python, "-B", "-c", in_sandbox.packed(program), json.dumps(args)], timeout_s=timeout_s,
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
    failing = {t for t, o in outcomes.items() if o == "failed" and spectrum.is_target(t, targets)}
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
    """The mutation analysis printed after the spectrum, or why there is none. The program prints a
    snapshot of its result every few seconds and the whole result at its end: a process that was
    stopped early still leaves its last readable snapshot, which is used, with a note."""
    at = text.rfind(mutation.MARKER)
    if at < 0:
        return None, (f"the mutation analysis timed out after {timeout_s:g}s" if timed_out
                      else "the mutation analysis gave no result")
    error = ""
    while at >= 0:
        try:
            found = MutationAnalysis.model_validate_json(text[at + len(mutation.MARKER):].strip().splitlines()[0])
        except (ValueError, IndexError) as exc:   # a line cut off where the process stopped: the one before
            error = error or str(exc)[:200]
            at = text.rfind(mutation.MARKER, 0, at)
            continue
        if found.finished:
            return found, None
        return found, (f"the mutation analysis stopped early ({'timed out' if timed_out else 'ended'}): "
                       f"its last snapshot, {found.tried} mutant(s) run, is used")
    return None, f"unreadable mutation analysis: {error}"
