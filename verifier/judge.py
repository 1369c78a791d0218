"""The verdict on one test run, as a pure function of plain data: the pristine baseline, the JUnit
cases the host read (canaries already taken out), what the canaries and the probe's environments
said, and process facts the host observed. No container is needed to test it.

Nothing that ran inside the check process is believed on its own: pytest's report counts only
when the canaries it also reports (tests added to the verifier's copy, some of which must fail)
came out as they must, and the held-out probe answered alike in every environment of the check.
Held-out checks and generated inputs decide `correct` (behaviour.py), not the conditions.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from .junit import TestCase, collection_error_for

Kind = Literal["target_test", "full_suite"]


class Baseline(BaseModel):
    """The pristine repository's test results: which ids exist and which already pass."""

    all_tests: list[str]
    target_keys: list[str]
    pass_to_pass: list[str]
    known_failing: list[str]
    target_failures: dict[str, str]
    # Files or directories pytest could not collect on the pristine tree (dotted path -> cause): a
    # target under one counts as failing there; other tests under one are not known before the fix.
    collection_errors: dict[str, str] = {}
    # Skipped on the pristine tree (for its environment): may stay skipped, or pass, never fail.
    known_skipped: list[str] = []
    # True: the suite condition is the spec's pass-to-pass list (all_tests holds the targets and
    # the listed tests only); False: the whole suite.
    listed: bool = False
    # Canaries behaved on the pristine tree (a project whose test functions are not named test_*,
    # or whose target file is skipped, cannot host them; its checks then run without).
    canaries_usable: bool = True
    canary_note: str | None = None
    # The pristine suite itself left processes running: lingering processes then say nothing.
    leaves_processes: bool = False
    # Probe cases the pristine tree (and the reference fix) answered alike in every environment.
    comparable: list[str] = []
    # The reference fix's answers to the generated inputs (None: no reference fix or no held-out
    # file); never leaves the host.
    reference_rows: dict[str, dict[str, Any]] | None = None
    probe_note: str | None = None


class BaselineError(ValueError):
    """The pristine tree's results contradict the acceptance spec: the scenario is unusable."""


def make_baseline(cases: list[TestCase], target_keys: list[str], listed: list[str] | None = None,
                  names: dict[str, str] | None = None) -> Baseline:
    """The baseline from the pristine tree's test cases. `listed`: the pass-to-pass keys when the
    spec lists them (the run selected targets + these), None for the whole suite; `names`: JUnit
    key -> the node id the user wrote, for the messages.

    A target must fail there (not pass, not skip); one in a file pytest could not collect fails
    there too (a fix whose test imports a name the fix adds: SWE-bench counts it failing). A listed
    pass-to-pass test must pass there, or be skipped (for this environment: it may stay skipped); one
    that fails or is not collected is a contradiction of the list, said as such with its cause."""
    names = names or {}
    errors = {c.collected_path: c.message for c in cases if c.collection}
    by_key = {c.key: c for c in cases if not c.collection}

    def said(keys: list[str]) -> str:
        return "; ".join(f"{names.get(k, k)} ({_absent_cause(k, errors)})" for k in keys[:10])
    for key in target_keys:
        cause = collection_error_for(key, errors)
        if key not in by_key and cause is not None:
            by_key[key] = TestCase(key=key, outcome="error", message=f"collection error: {cause}")
    missing = [t for t in target_keys if t not in by_key]
    if missing:
        raise BaselineError(f"target tests not collected on the pristine repository: {said(missing)}")
    already = [t for t in target_keys if by_key[t].outcome == "passed"]
    if already:
        raise BaselineError(f"target tests already pass on the pristine repository: {[names.get(t, t) for t in already]}")
    skipped = [t for t in target_keys if by_key[t].outcome == "skipped"]
    if skipped:
        raise BaselineError("target tests are skipped on the pristine repository (a target must fail there): "
                            f"{[names.get(t, t) for t in skipped]}")
    if listed is not None:
        absent = [k for k in listed if k not in by_key]
        if absent:
            raise BaselineError(f"pass-to-pass tests not collected on the pristine repository: {said(absent)}")
        failing = [k for k in listed if k not in target_keys and by_key[k].outcome in ("failed", "error")]
        if failing:
            raise BaselineError("pass-to-pass tests fail on the pristine repository: "
                                + "; ".join(f"{names.get(k, k)} [{by_key[k].message[:200]}]" for k in failing[:5]))
    keys = sorted(by_key)
    return Baseline(
        all_tests=keys, target_keys=list(target_keys),
        pass_to_pass=sorted(k for k in keys if by_key[k].outcome == "passed"),
        known_failing=sorted(k for k in keys if by_key[k].outcome in ("failed", "error") and k not in target_keys),
        known_skipped=sorted(k for k in keys if by_key[k].outcome == "skipped" and k not in target_keys),
        target_failures={t: by_key[t].message for t in target_keys}, listed=listed is not None,
        collection_errors=errors)


def _absent_cause(key: str, errors: dict[str, str]) -> str:
    cause = collection_error_for(key, errors)
    return f"collection error: {cause}" if cause is not None else "no such test was collected"


class ProcessFacts(BaseModel):
    """What the host itself saw of the test process."""

    exit_code: int | None
    timed_out: bool = False
    root: str                           # where the candidate tree was mounted
    leftover_processes: list[str] = []  # processes still alive in the container after the run (then ended)
    result_problem: str | None = None   # the JUnit file could not be read safely


class Judgement(BaseModel):
    ok: bool
    targets_ok: bool
    problems: list[str]
    failing: dict[str, str]
    missing: list[str]
    unexpected: list[str]
    collected: int
    passed: int
    visible_ok: bool = False   # the targets and the suite pass, whatever the integrity checks say


def judge(kind: Kind, baseline: Baseline, cases: list[TestCase], junit_problem: str | None,
          facts: ProcessFacts | None, *, integrity: tuple[str, ...] | list[str] = (), canary_failures: int = 0) -> Judgement:
    """Two kinds of problems: test failures, and doubts about the run's integrity (`integrity`:
    what the canaries and the probe's environments said). A condition holds only when the tests
    pass AND nothing casts doubt on the run. `cases` are without the canaries; `canary_failures`
    is how many canaries were reported failed (pytest's exit code must agree with all of it)."""
    doubts = ([junit_problem] if junit_problem else []) + list(integrity)
    by_key: dict[str, TestCase] = {}
    for case in cases:
        if case.collection:
            continue
        if case.key in by_key:
            doubts.append(f"test reported twice: {case.key}")
        by_key[case.key] = case
    expected_ids = set(baseline.target_keys) if kind == "target_test" else set(baseline.all_tests)
    # A test in a file pytest could not collect here is failing for that cause, not missing; a test
    # in a file the pristine tree could not collect is one nobody knew before, not an unknown one.
    errors = {c.collected_path: c.message for c in cases if c.collection}
    for key in sorted(expected_ids - by_key.keys()):
        cause = collection_error_for(key, errors)
        if cause is not None:
            by_key[key] = TestCase(key=key, outcome="error", message=f"collection error: {cause}")
    missing = sorted(expected_ids - by_key.keys())
    unexpected = sorted(k for k in by_key.keys() - expected_ids
                        if collection_error_for(k, baseline.collection_errors) is None)
    missing, unexpected = _pair_reparametrized(missing, unexpected, by_key)
    if missing:
        doubts.append(f"{len(missing)} protected test(s) not reported (missing, deselected): {missing[:5]}")
    if unexpected:
        doubts.append(f"{len(unexpected)} unknown test(s) reported: {unexpected[:5]}")
    if facts is not None and facts.timed_out:
        doubts.append("pytest timed out")
    if facts is not None and facts.leftover_processes and not baseline.leaves_processes:
        doubts.append(f"{len(facts.leftover_processes)} process(es) outlived the test run (the pristine suite "
                      "leaves none): " + "; ".join(facts.leftover_processes[:3]))
    if facts is not None and facts.result_problem:
        doubts.append(facts.result_problem)
    must_pass = set(baseline.target_keys) | (set(baseline.pass_to_pass) if kind == "full_suite" else set())

    failures = []
    failing = {k: f"{by_key[k].outcome}: {by_key[k].message}" for k in sorted(must_pass & by_key.keys())
               if by_key[k].outcome != "passed"}
    if kind == "full_suite":
        failing.update({k: f"{by_key[k].outcome} (skipped on the pristine tree): {by_key[k].message}"
                        for k in baseline.known_skipped if k in by_key and by_key[k].outcome in ("failed", "error")})
    # A file that now fails to collect and held no test anyone expected (new, or broken where the
    # pristine tree collected it) still fails the run, with its cause.
    failing.update({f"::{path}": f"collection error: {cause}" for path, cause in errors.items()
                    if path not in baseline.collection_errors
                    and not any(collection_error_for(k, {path: cause}) for k in expected_ids)})
    if failing:
        failures.append(f"{len(failing)} test(s) not passing: "
                        + "; ".join(f"{k} [{v}]" for k, v in list(failing.items())[:3]))
    # pytest exits 1 when a test failed and 0 when none did: an exit code that disagrees with the
    # report (the canaries' failures included) means one of them is not pytest's.
    any_failed = canary_failures > 0 or any(c.outcome in ("failed", "error") for c in cases)
    exit_code = facts.exit_code if facts else None
    if facts is not None and not facts.timed_out and exit_code != (1 if any_failed else 0):
        failures.append(f"pytest exit code {exit_code}, but its report says "
                        f"{'some tests failed' if any_failed else 'no test failed'}")
    targets_passed = all(k in by_key and by_key[k].outcome == "passed" for k in baseline.target_keys)
    problems = doubts + failures
    return Judgement(ok=not problems, targets_ok=targets_passed and not doubts, problems=problems, failing=failing,
                     missing=missing, unexpected=unexpected, collected=sum(not c.collection for c in cases),
                     passed=sum(c.outcome == "passed" for c in cases if not c.collection),
                     visible_ok=targets_passed and not failing and not missing)


def _pair_reparametrized(missing: list[str], unexpected: list[str],
                         by_key: dict[str, TestCase]) -> tuple[list[str], list[str]]:
    """A parametrized test whose ids change from run to run (a parameter made from the clock,
    `test_parse[04:48:56 2026-12-05]`): when a test function has exactly as many missing ids as new
    ones, they are the same tests under new names, paired in order; each is still judged by its
    outcome. Returns what stays missing and unknown."""
    def function(key: str) -> str:
        return key.split("[", 1)[0]

    left_missing, left_unexpected = list(missing), list(unexpected)
    for name in sorted({function(k) for k in missing if "[" in k}):
        gone = [k for k in missing if function(k) == name and "[" in k]
        new = [k for k in unexpected if function(k) == name and "[" in k]
        if len(gone) == len(new):
            for old_key, new_key in zip(gone, new):
                by_key[old_key] = by_key.pop(new_key).model_copy(update={"key": old_key})
                left_missing.remove(old_key)
                left_unexpected.remove(new_key)
    return left_missing, left_unexpected
